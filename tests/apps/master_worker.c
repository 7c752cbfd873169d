/* Master-worker: the master posts one MPI_ANY_SOURCE Irecv per worker and
 * takes results with Waitany (and, in a second round, Waitsome and Test
 * polling); workers Send. The trace must name the rank that actually
 * matched each wildcard receive. argv[1]: the number of rounds (default
 * 3); rounds after the third take results with Waitany again, each after
 * the workers computed longer. */
#include "applog.h"

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  int nw = size - 1;
  double result = 0;
  const int rounds = app_iters(argc, argv, 3);
  for (int round = 0; round < rounds; ++round) {
    const int mode = round < 3 ? round : 0;
    if (rank == 0) {
      MPI_Request req[64];
      double val[64];
      char lab[64][16];
      for (int w = 0; w < nw; ++w) {
        MPI_Irecv(&val[w], 1, MPI_DOUBLE, MPI_ANY_SOURCE, round, MPI_COMM_WORLD, &req[w]);
        snprintf(lab[w], 16, "q%d_%d", round, w);
        LOG("MPI_Irecv tag=%d count=1 bytes=8 comm=world request=%s any_source=1", round, lab[w]);
      }
      int left = nw;
      while (left > 0) {
        if (mode == 0) {
          int idx;
          MPI_Status st;
          MPI_Waitany(nw, req, &idx, &st);
          LOG("MPI_Waitany completed=%s sources=%d", lab[idx], st.MPI_SOURCE);
          result += val[idx];
          --left;
        } else if (mode == 1) {
          int out, idx[64];
          MPI_Status st[64];
          MPI_Waitsome(nw, req, &out, idx, st);
          char line[2048] = "", src[1024] = "";
          int pos = 0, spos = 0;
          for (int k = 0; k < out; ++k) {
            pos += snprintf(line + pos, sizeof line - pos, "%s%s", k ? "," : "", lab[idx[k]]);
            spos += snprintf(src + spos, sizeof src - spos, "%s%d", k ? "," : "", st[k].MPI_SOURCE);
            result += val[idx[k]];
          }
          LOG("MPI_Waitsome completed=%s sources=%s", line, src);
          left -= out;
        } else {
          for (int w = 0; w < nw; ++w) {
            if (req[w] == MPI_REQUEST_NULL) continue;
            int flag;
            MPI_Status st;
            MPI_Test(&req[w], &flag, &st);
            if (flag) {
              LOG("MPI_Test completed=%s sources=%d", lab[w], st.MPI_SOURCE);
              result += val[w];
              --left;
            } else {
              LOG("MPI_Test completed=");
            }
          }
        }
      }
    } else {
      double v = busy(1000 * rank + (round < 3 ? 0 : 200000)) + round;
      MPI_Send(&v, 1, MPI_DOUBLE, 0, round, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1 bytes=8 comm=world", round);
    }
  }
  MPI_Bcast(&result, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  LOG("MPI_Bcast root=0 count=1 bytes=8 comm=world");
  if (rank == 0) printf("master_worker: %d workers, result %.6f\n", nw, result);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
