/* A pipeline over the ranks in a line (as PRK's Synch_p2p): every sweep,
 * each rank but the first receives row j of its left neighbour's boundary
 * with tag j, computes its own part of row j, and sends it on to the right
 * with tag j, for rows 1 .. ROWS - 1; then the last rank sends the corner
 * value back to rank 0 (tag 888), which starts the next sweep with it. The
 * tags are the inner loop's index, longer than a cycle the fold keeps (64),
 * so they fold only as a rule linear in that loop's iteration. At the end
 * an MPI_Allreduce of a checksum. usage: rows [SWEEPS [ROWS]] (default 20,
 * 100). */
#include "applog.h"

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  const int sweeps = app_iters(argc, argv, 20);
  const int rows = argc > 2 && atoi(argv[2]) > 1 ? atoi(argv[2]) : 100;
  double left = 0, mine = rank, corner = 1;
  for (int it = 0; it < sweeps; ++it) {
    for (int j = 1; j < rows; ++j) {
      if (rank > 0) {
        MPI_Recv(&left, 1, MPI_DOUBLE, rank - 1, j, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        LOG("MPI_Recv peer=%d tag=%d count=1 bytes=8 comm=world", rank - 1, j);
      } else {
        left = corner + j;
      }
      mine = 0.5 * (mine + left) + busy(2000) * 1e-9;
      if (rank < size - 1) {
        MPI_Send(&mine, 1, MPI_DOUBLE, rank + 1, j, MPI_COMM_WORLD);
        LOG("MPI_Send peer=%d tag=%d count=1 bytes=8 comm=world", rank + 1, j);
      }
    }
    if (size > 1 && rank == size - 1) {
      MPI_Send(&mine, 1, MPI_DOUBLE, 0, 888, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=888 count=1 bytes=8 comm=world");
    }
    if (size > 1 && rank == 0) {
      MPI_Recv(&corner, 1, MPI_DOUBLE, size - 1, 888, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=%d tag=888 count=1 bytes=8 comm=world", size - 1);
    }
  }
  double sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  LOG("MPI_Allreduce count=1 bytes=8 comm=world");
  if (rank == 0) printf("rows: %d sweeps of %d rows on %d ranks, sum %.6f\n", sweeps, rows, size, sum);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
