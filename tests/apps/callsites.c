/* Call sites: exchange() makes one MPI_Allreduce, called from two places in
 * main; a loop makes another Allreduce 3 times. With one frame per call
 * site both exchange() calls are one site; with a deeper stack signature
 * they are two. Checked by tests/check_callsites.py. argv[1]: the loop's
 * iteration count (default 3; the prediction benchmark runs it longer),
 * each with some computation before its Allreduce. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static double exchange(double v) {
  double out;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

__attribute__((noinline)) static double first_caller(double v) { return exchange(v) + 1; }
__attribute__((noinline)) static double second_caller(double v) { return exchange(v) * 2; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double s = first_caller(rank) + second_caller(rank);
  int iters = argc > 1 ? atoi(argv[1]) : 0;
  if (iters <= 0) iters = 3;
  for (int i = 0; i < iters; ++i) {
    double t, w = 0;
    for (int k = 1; k <= 200000; ++k) w += 1.0 / ((double)k * k);
    MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    s = t + i + (w > 2 ? 1 : 0);
  }
  if (rank == 0) printf("callsites: %.1f\n", s);
  MPI_Finalize();
  return 0;
}
