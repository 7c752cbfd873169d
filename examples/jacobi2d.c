/* The bundled example: a 2-D Jacobi solver on a Cartesian process grid.
 * Each iteration exchanges halos with the four neighbours (Irecv/Isend/
 * Waitall), relaxes the interior, and every 10 iterations computes the
 * global residual with an Allreduce. A typical SPMD main loop, small enough
 * to run in a second on 2 ranks.
 *   usage: jacobi2d [N] [ITERATIONS]   (local grid N x N, default 200 x 300) */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n = argc > 1 ? atoi(argv[1]) : 200, iters = argc > 2 ? atoi(argv[2]) : 300;
  int rank, size, dims[2] = {0, 0}, periods[2] = {0, 0}, up, down, left, right;
  MPI_Comm grid;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Dims_create(size, 2, dims);
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &grid);
  MPI_Comm_rank(grid, &rank);
  MPI_Cart_shift(grid, 0, 1, &up, &down);
  MPI_Cart_shift(grid, 1, 1, &left, &right);

  int w = n + 2; /* with halo */
  double* u = calloc((size_t)w * w, sizeof(double));
  double* v = calloc((size_t)w * w, sizeof(double));
  double *sendcol = malloc(2 * n * sizeof(double)), *recvcol = malloc(2 * n * sizeof(double));
  if (up == MPI_PROC_NULL)
    for (int j = 0; j < w; ++j) u[j] = v[j] = 1.0; /* hot top edge */
  double residual = 0;
  for (int it = 0; it < iters; ++it) {
    MPI_Request req[8];
    MPI_Status st[8]; /* not MPI_STATUSES_IGNORE: gcc 12 takes it for an 8-element array of size 0 */
    for (int i = 0; i < n; ++i) {
      sendcol[i] = u[(i + 1) * w + 1];
      sendcol[n + i] = u[(i + 1) * w + n];
    }
    MPI_Irecv(&u[1], n, MPI_DOUBLE, up, 0, grid, &req[0]);
    MPI_Irecv(&u[(n + 1) * w + 1], n, MPI_DOUBLE, down, 1, grid, &req[1]);
    MPI_Irecv(recvcol, n, MPI_DOUBLE, left, 2, grid, &req[2]);
    MPI_Irecv(recvcol + n, n, MPI_DOUBLE, right, 3, grid, &req[3]);
    MPI_Isend(&u[w + 1], n, MPI_DOUBLE, up, 1, grid, &req[4]);
    MPI_Isend(&u[n * w + 1], n, MPI_DOUBLE, down, 0, grid, &req[5]);
    MPI_Isend(sendcol, n, MPI_DOUBLE, left, 3, grid, &req[6]);
    MPI_Isend(sendcol + n, n, MPI_DOUBLE, right, 2, grid, &req[7]);
    MPI_Waitall(8, req, st);
    if (left != MPI_PROC_NULL)
      for (int i = 0; i < n; ++i) u[(i + 1) * w] = recvcol[i];
    if (right != MPI_PROC_NULL)
      for (int i = 0; i < n; ++i) u[(i + 1) * w + n + 1] = recvcol[n + i];
    double local = 0;
    for (int i = 1; i <= n; ++i)
      for (int j = 1; j <= n; ++j) {
        double x = 0.25 * (u[(i - 1) * w + j] + u[(i + 1) * w + j] + u[i * w + j - 1] + u[i * w + j + 1]);
        local += (x - u[i * w + j]) * (x - u[i * w + j]);
        v[i * w + j] = x;
      }
    double* t = u;
    u = v;
    v = t;
    if (it % 10 == 9) {
      MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, grid);
      residual = sqrt(residual);
    }
  }
  if (rank == 0) printf("jacobi2d: %d ranks (%dx%d), %dx%d local grid, %d iterations, residual %.6e\n", size, dims[0],
                        dims[1], n, n, iters, residual);
  free(u);
  free(v);
  free(sendcol);
  free(recvcol);
  MPI_Comm_free(&grid);
  MPI_Finalize();
  return 0;
}
