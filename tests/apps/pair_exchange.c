/* NPB CG's exchange pattern: each exchange is Irecv, Send, Wait with a partner
 * (rank XOR 1; MPI_PROC_NULL for a last odd rank), with no other MPI call
 * between the loop's iterations. The first step has one exchange more than
 * the others, so the fold's loop body starts inside a step (at its sends):
 * the step before the loop must not wait for messages the loop sends. The
 * large exchange (256 KiB) is past every MPI's eager limit. */
#include "applog.h"

enum { BIG = 32768 };

static void exchange(double* out, double* in, int n, int partner, int tag, const char* label) {
  MPI_Request req;
  MPI_Irecv(in, n, MPI_DOUBLE, partner, tag, MPI_COMM_WORLD, &req);
  if (partner == MPI_PROC_NULL)
    LOG("MPI_Irecv peer=null tag=%d count=%d bytes=%d comm=world request=%s", tag, n, n * 8, label);
  else
    LOG("MPI_Irecv peer=%d tag=%d count=%d bytes=%d comm=world request=%s", partner, tag, n, n * 8, label);
  MPI_Send(out, n, MPI_DOUBLE, partner, tag, MPI_COMM_WORLD);
  if (partner == MPI_PROC_NULL) LOG("MPI_Send peer=null tag=%d count=%d bytes=%d comm=world", tag, n, n * 8);
  else LOG("MPI_Send peer=%d tag=%d count=%d bytes=%d comm=world", partner, tag, n, n * 8);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  LOG("MPI_Wait completed=%s", label);
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  int partner = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;
  const int iters = app_iters(argc, argv, 30);
  double* out = malloc(BIG * sizeof(double));
  double* in = malloc(BIG * sizeof(double));
  for (int i = 0; i < BIG; ++i) out[i] = rank + i * 1e-6;
  double acc = 0, norm = 1;
  exchange(&norm, in, 1, partner, 1, "first");  /* the first step's extra exchange */
  for (int it = 0; it < iters; ++it) {
    char label[32];
    snprintf(label, sizeof label, "big%d", it);
    exchange(out, in, BIG, partner, 2, label);
    acc += busy(20000) + in[it % BIG];
    snprintf(label, sizeof label, "small%d", it);
    exchange(&acc, in, 1, partner, 3, label);
  }
  double total = 0;
  MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  LOG("MPI_Reduce root=0 count=1 bytes=8 comm=world");
  if (rank == 0) printf("pair_exchange: checksum %.6f\n", total);
  LOG("MPI_Finalize");
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}
