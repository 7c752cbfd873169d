/* 2-D halo exchange on a Cartesian grid: Irecv/Isend to the four
 * neighbours (MPI_PROC_NULL at the non-periodic edges), Waitall, a row
 * communicator from Cart_sub with an Allreduce on it. usage: halo2d [ITERS]
 * (default 6); APP_DISTURB (applog.h) makes one rank compute longer in one
 * iteration; APP_SLEEP_US=N makes every rank sleep N microseconds before
 * that computation (logged as slept=S,N: S seconds of wall time, from the
 * call to its return, waits for a core after waking included). */
#include "applog.h"

int main(int argc, char** argv) {
  int rank, size, dims[2] = {0, 0}, periods[2] = {0, 0}, remain[2] = {0, 1};
  MPI_Comm cart, row;
  app_start(&argc, &argv, &rank, &size);
  MPI_Dims_create(size, 2, dims);
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  {
    char m[1024] = "";
    for (int r = 0, pos = 0; r < size; ++r) pos += snprintf(m + pos, sizeof m - pos, "%s%d", r ? "," : "", r);
    LOG("MPI_Cart_create comm=world new_comm=cart members=%s", m); /* no reordering: world order */
  }
  int up, down, left, right;
  MPI_Cart_shift(cart, 0, 1, &up, &down);
  MPI_Cart_shift(cart, 1, 1, &left, &right);
  MPI_Cart_sub(cart, remain, &row);
  LOG("MPI_Cart_sub comm=cart new_comm=row");
  enum { N = 32 };
  double field[N * N], halo[4][N];
  for (int i = 0; i < N * N; ++i) field[i] = rank + i * 1e-3;
  int nb[4] = {up, down, left, right};
  double norm = 0;
  const int iters = app_iters(argc, argv, 6);
  for (int it = 0; it < iters; ++it) {
    MPI_Request req[8];
    char lab[8][16];
    for (int d = 0; d < 4; ++d) {
      MPI_Irecv(halo[d], N, MPI_DOUBLE, nb[d], d, cart, &req[d]);
      snprintf(lab[d], 16, "r%d_%d", it, d);
      if (nb[d] == MPI_PROC_NULL) LOG("MPI_Irecv peer=null tag=%d count=%d bytes=%d comm=cart request=%s", d, N, N * 8, lab[d]);
      else LOG("MPI_Irecv peer=%d tag=%d count=%d bytes=%d comm=cart request=%s", nb[d], d, N, N * 8, lab[d]);
    }
    for (int d = 0; d < 4; ++d) {
      int tag = d ^ 1; /* what the neighbour expects: my "down" is its "up" */
      MPI_Isend(&field[d * N], N, MPI_DOUBLE, nb[d], tag, cart, &req[4 + d]);
      snprintf(lab[4 + d], 16, "s%d_%d", it, d);
      if (nb[d] == MPI_PROC_NULL) LOG("MPI_Isend peer=null tag=%d count=%d bytes=%d comm=cart request=%s", tag, N, N * 8, lab[4 + d]);
      else LOG("MPI_Isend peer=%d tag=%d count=%d bytes=%d comm=cart request=%s", nb[d], tag, N, N * 8, lab[4 + d]);
    }
    /* The computation between the last Isend and the Waitall, timed here:
     * the trace's gap before the Waitall must hold it (checked as compute=),
     * and its cpu_gap the CPU time (cpu=) when the tracer measured that. */
    double slept = app_sleep();
    double c0 = MPI_Wtime(), u0 = app_cpu_s();
    norm += busy(1000000 * (1 + it % 3)) + app_disturb(rank, it);
    double compute = MPI_Wtime() - c0, cpu = app_cpu_s() - u0;
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    if (slept > 0)
      LOG("MPI_Waitall completed=%s,%s,%s,%s,%s,%s,%s,%s compute=%.9f cpu=%.9f slept=%.9f,%s", lab[0], lab[1], lab[2],
          lab[3], lab[4], lab[5], lab[6], lab[7], compute, cpu, slept, getenv("APP_SLEEP_US"));
    else
      LOG("MPI_Waitall completed=%s,%s,%s,%s,%s,%s,%s,%s compute=%.9f cpu=%.9f", lab[0], lab[1], lab[2], lab[3], lab[4],
          lab[5], lab[6], lab[7], compute, cpu);
    for (int d = 0; d < 4; ++d)
      if (nb[d] != MPI_PROC_NULL) field[d] += halo[d][0];
    double local = field[0], rowsum;
    MPI_Allreduce(&local, &rowsum, 1, MPI_DOUBLE, MPI_SUM, row);
    LOG("MPI_Allreduce count=1 bytes=8 comm=row");
    norm += rowsum;
  }
  double total;
  MPI_Allreduce(&norm, &total, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  LOG("MPI_Allreduce count=1 bytes=8 comm=world");
  MPI_Comm_free(&row);
  LOG("MPI_Comm_free comm=row");
  MPI_Comm_free(&cart);
  LOG("MPI_Comm_free comm=cart");
  if (rank == 0) printf("halo2d: %dx%d grid, checksum %.6f\n", dims[0], dims[1], total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
