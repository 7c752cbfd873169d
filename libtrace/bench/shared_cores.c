/* The tracer's cost when ranks share cores (run by libtrace/bench/shared_cores.sh):
 * a 2-D halo exchange on a Cartesian grid (Irecv/Isend to four neighbours,
 * computation, Waitall, an Allreduce), ITERS iterations of WORK terms of
 * computation each. Rank 0 prints the slowest rank's loop time, from a
 * barrier after MPI_Init to the end of the last iteration:
 *   loop_s=1.234567
 * usage: shared_cores ITERS WORK */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double compute(int n) {
  double s = 0;
  for (int i = 1; i <= n; ++i) s += 1.0 / ((double)i * i);
  return s;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, dims[2] = {0, 0}, periods[2] = {0, 0};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iters = argc > 1 ? atoi(argv[1]) : 200, work = argc > 2 ? atoi(argv[2]) : 100000;
  MPI_Dims_create(size, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  int nb[4];
  MPI_Cart_shift(cart, 0, 1, &nb[0], &nb[1]);
  MPI_Cart_shift(cart, 1, 1, &nb[2], &nb[3]);
  enum { N = 64 };
  double field[4 * N], halo[4 * N], norm = 0;
  for (int i = 0; i < 4 * N; ++i) field[i] = rank + i;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int it = 0; it < iters; ++it) {
    MPI_Request req[8];
    for (int d = 0; d < 4; ++d) MPI_Irecv(&halo[d * N], N, MPI_DOUBLE, nb[d], d, cart, &req[d]);
    for (int d = 0; d < 4; ++d) MPI_Isend(&field[d * N], N, MPI_DOUBLE, nb[d], d ^ 1, cart, &req[4 + d]);
    norm += compute(work);
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    double sum;
    MPI_Allreduce(&norm, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    norm = sum * 1e-9;
  }
  double mine = MPI_Wtime() - t0, slowest;
  MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("loop_s=%.6f\n", slowest);
  MPI_Comm_free(&cart);
  MPI_Finalize();
  return 0;
}
