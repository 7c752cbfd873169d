/* A stand-in for an NPB benchmark binary in the npb-scripts test (NPB itself
 * is never part of this repository): a main loop of ITERS iterations, each a
 * partner exchange (Irecv, Send, Wait), some computation and an Allreduce,
 * and NPB's closing lines, printed by rank 0. "Verification = SUCCESSFUL"
 * when the reduced checksum is what the loop must give (UNSUCCESSFUL when
 * built with -DBREAK_VERIFICATION). */
#include <mpi.h>
#include <stdio.h>

#ifndef ITERS
#define ITERS 40
#endif

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int partner = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;
  static double out[4096], in[4096];
  double t0 = MPI_Wtime(), sum = 0;
  for (int it = 0; it < ITERS; ++it) {
    MPI_Request req;
    for (int i = 0; i < 4096; ++i) out[i] = rank + it;
    MPI_Irecv(in, 4096, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, &req);
    MPI_Send(out, 4096, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    volatile double x = 0;
    for (int i = 0; i < 200000; ++i) x += i * 1e-9;
    double mine = partner == MPI_PROC_NULL ? 0 : in[0], total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    sum += total;
  }
  /* each rank receives its partner's rank + it: the sum over ranks with a partner, each iteration */
  double want = 0;
  for (int it = 0; it < ITERS; ++it)
    for (int r = 0; r < size; ++r)
      if ((r ^ 1) < size) want += (r ^ 1) + it;
#ifdef BREAK_VERIFICATION
  want += 1;
#endif
  if (rank == 0) {
    printf(" Iterations      =                   %d\n", ITERS);
    printf(" Time in seconds =                 %8.2f\n", MPI_Wtime() - t0);
    printf(" Verification    =               %s\n", sum == want ? "SUCCESSFUL" : "UNSUCCESSFUL");
  }
  MPI_Finalize();
  return 0;
}
