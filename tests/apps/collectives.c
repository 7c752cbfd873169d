/* Collectives on a Comm_split sub-communicator (even / odd world ranks) and
 * on MPI_COMM_WORLD: every blocking collective, MPI_IN_PLACE Allreduce,
 * Alltoallv with uneven counts, Alltoallw, non-blocking collectives, a
 * derived datatype, Comm_dup and Comm_free. Roots are logged as world ranks.
 * argv[1]: how many times the blocking collectives on the sub-communicator
 * run, each time after some computation (default 1). */
#include <string.h>

#include "applog.h"

static void log_counts(char* out, size_t n, const int* c, int k) {
  size_t pos = 0;
  out[0] = 0;
  for (int i = 0; i < k; ++i) pos += snprintf(out + pos, n - pos, "%s%d", i ? "," : "", c[i]);
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);

  MPI_Comm half;
  int color = rank % 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, -rank, &half); /* key reverses the order */
  {
    char m[1024] = "";
    int pos = 0;
    for (int w = size - 1; w >= 0; --w) /* key -rank: highest world rank first */
      if (w % 2 == color) pos += snprintf(m + pos, sizeof m - pos, "%s%d", pos ? "," : "", w);
    LOG("MPI_Comm_split comm=world new_comm=half color=%d key=%d members=%s", color, -rank, m);
  }
  int hr, hs;
  MPI_Comm_rank(half, &hr);
  MPI_Comm_size(half, &hs);
  /* world rank of half-rank 0: the highest world rank with my colour */
  int hroot = -1;
  for (int w = size - 1; w >= 0; --w)
    if (w % 2 == color) { hroot = w; break; }

  double a[64], b[64 * 16];
  int sc[16], rc[16], sd[16], rd[16];
  char line[512], line2[512];
  for (int i = 0; i < 64; ++i) a[i] = rank + i;

  const int iters = app_iters(argc, argv, 1);
  for (int it = 0; it < iters; ++it) {
  a[0] += busy(300000) > 2 ? 1 : 0;
  MPI_Barrier(half);
  LOG("MPI_Barrier comm=half");
  MPI_Bcast(a, 5, MPI_DOUBLE, 0, half);
  LOG("MPI_Bcast root=%d count=5 bytes=40 comm=half", hroot);
  MPI_Reduce(a, b, 3, MPI_DOUBLE, MPI_SUM, 0, half);
  LOG("MPI_Reduce root=%d count=3 bytes=24 comm=half", hroot);
  MPI_Allreduce(MPI_IN_PLACE, a, 4, MPI_DOUBLE, MPI_MAX, half);
  LOG("MPI_Allreduce count=4 bytes=32 comm=half in_place=1");
  MPI_Gather(a, 2, MPI_DOUBLE, b, 2, MPI_DOUBLE, 0, half);
  LOG("MPI_Gather root=%d count=2 bytes=16 comm=half", hroot);
  for (int i = 0; i < hs; ++i) { rc[i] = i + 1; rd[i] = i * 16; }
  MPI_Gatherv(a, hr + 1, MPI_DOUBLE, b, rc, rd, MPI_DOUBLE, 0, half);
  if (hr == 0) { log_counts(line, sizeof line, rc, hs); LOG("MPI_Gatherv root=%d count=%d comm=half counts2=%s", hroot, hr + 1, line); }
  else LOG("MPI_Gatherv root=%d count=%d comm=half", hroot, hr + 1);
  MPI_Scatter(b, 3, MPI_DOUBLE, a, 3, MPI_DOUBLE, 0, half);
  LOG("MPI_Scatter root=%d count=3 bytes=24 comm=half", hroot);
  MPI_Scatterv(b, rc, rd, MPI_DOUBLE, a, hr + 1, MPI_DOUBLE, 0, half);
  if (hr == 0) { log_counts(line, sizeof line, rc, hs); LOG("MPI_Scatterv root=%d comm=half counts=%s count2=%d", hroot, line, hr + 1); }
  else LOG("MPI_Scatterv root=%d comm=half count2=%d", hroot, hr + 1);
  MPI_Allgather(a, 2, MPI_DOUBLE, b, 2, MPI_DOUBLE, half);
  LOG("MPI_Allgather count=2 bytes=16 comm=half");
  MPI_Allgatherv(a, hr + 1, MPI_DOUBLE, b, rc, rd, MPI_DOUBLE, half);
  log_counts(line, sizeof line, rc, hs);
  LOG("MPI_Allgatherv count=%d comm=half counts2=%s", hr + 1, line);
  MPI_Alltoall(a, 1, MPI_DOUBLE, b, 1, MPI_DOUBLE, half);
  LOG("MPI_Alltoall count=1 bytes=8 comm=half");
  MPI_Reduce_scatter_block(a, b, 2, MPI_DOUBLE, MPI_SUM, half);
  LOG("MPI_Reduce_scatter_block count=2 bytes=16 comm=half");
  for (int i = 0; i < hs; ++i) rc[i] = 1 + (i % 2);
  MPI_Reduce_scatter(a, b, rc, MPI_DOUBLE, MPI_SUM, half);
  log_counts(line, sizeof line, rc, hs);
  LOG("MPI_Reduce_scatter comm=half counts2=%s", line);
  MPI_Scan(a, b, 2, MPI_DOUBLE, MPI_SUM, half);
  LOG("MPI_Scan count=2 bytes=16 comm=half");
  MPI_Exscan(a, b, 2, MPI_DOUBLE, MPI_SUM, half);
  LOG("MPI_Exscan count=2 bytes=16 comm=half");
  }

  /* Alltoallv on the world with uneven counts: rank r sends r+j+1 to j. */
  int total = 0, rtotal = 0;
  for (int j = 0; j < size; ++j) {
    sc[j] = rank + j + 1; sd[j] = total; total += sc[j];
    rc[j] = j + rank + 1; rd[j] = rtotal; rtotal += rc[j];
  }
  double* sbuf = calloc(total, sizeof(double));
  double* rbuf = calloc(rtotal, sizeof(double));
  MPI_Alltoallv(sbuf, sc, sd, MPI_DOUBLE, rbuf, rc, rd, MPI_DOUBLE, MPI_COMM_WORLD);
  log_counts(line, sizeof line, sc, size);
  log_counts(line2, sizeof line2, rc, size);
  LOG("MPI_Alltoallv comm=world counts=%s counts2=%s bytes=%d bytes2=%d", line, line2, total * 8, rtotal * 8);
  MPI_Datatype wt[16];
  int wd[16], wcount[16], wbytes = 0;
  for (int j = 0; j < size; ++j) { /* the pair (rank, j) agrees on one type */
    int odd = (j + rank) % 2;
    wt[j] = odd ? MPI_INT : MPI_DOUBLE; wcount[j] = 1; wd[j] = j * 8; wbytes += odd ? 4 : 8;
  }
  MPI_Alltoallw(sbuf, wcount, wd, wt, rbuf, wcount, wd, wt, MPI_COMM_WORLD);
  LOG("MPI_Alltoallw comm=world bytes=%d bytes2=%d", wbytes, wbytes);
  free(sbuf);
  free(rbuf);

  /* Non-blocking collectives completed together. */
  MPI_Request req[4];
  double x = rank, y = 0, z[16];
  MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
  LOG("MPI_Ibarrier comm=world request=ib");
  MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, half, &req[1]);
  LOG("MPI_Iallreduce count=1 bytes=8 comm=half request=iar");
  MPI_Ibcast(z, 2, MPI_DOUBLE, size - 1, MPI_COMM_WORLD, &req[2]);
  LOG("MPI_Ibcast root=%d count=2 bytes=16 comm=world request=ibc", size - 1);
  MPI_Ialltoall(a, 1, MPI_DOUBLE, b, 1, MPI_DOUBLE, MPI_COMM_WORLD, &req[3]);
  LOG("MPI_Ialltoall count=1 bytes=8 comm=world request=ia2a");
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
  LOG("MPI_Waitall completed=ib,iar,ibc,ia2a");

  /* A derived datatype: 3 doubles, broadcast on a duplicate of the world. */
  MPI_Datatype triple;
  MPI_Type_contiguous(3, MPI_DOUBLE, &triple);
  MPI_Type_commit(&triple);
  LOG("MPI_Type_commit");
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  LOG("MPI_Comm_dup comm=world new_comm=dup");
  MPI_Bcast(a, 2, triple, 0, dup);
  LOG("MPI_Bcast root=0 count=2 bytes=48 comm=dup");
  MPI_Type_free(&triple);
  MPI_Comm_free(&dup);
  LOG("MPI_Comm_free comm=dup");
  MPI_Comm_free(&half);
  LOG("MPI_Comm_free comm=half");
  double check = 0;
  MPI_Allreduce(&y, &check, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  LOG("MPI_Allreduce count=1 bytes=8 comm=world");
  if (rank == 0) printf("collectives: checksum %.3f\n", check);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
