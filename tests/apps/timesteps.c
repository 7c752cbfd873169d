/* A few long time steps, each a computation of its own (a refinement's,
 * a rebuild of neighbour lists: no call in it) and then STAGES stages of a
 * ring halo exchange (Irecv from the predecessor, Isend to the successor, a
 * little computation, Waitall), and a residual Allreduce at the step's end.
 * Fewer time steps than K: the generator cuts the time-step loop to two
 * steps and the stage loops inside the kept steps by what is left of K
 * (tests/run_nested_cut_test.sh).
 * usage: timesteps [STEPS [STAGES [STEP_WORK [STAGE_WORK]]]] (default 4
 * steps, 40 stages, busy(2000000) per step and busy(50000) per stage;
 * tests/data/timesteps_mpich_2 was traced with 4 40 8000000 200000) */
#include "applog.h"

enum { N = 64 };

static int arg(int argc, char** argv, int i, int fallback) {
  int n = argc > i ? atoi(argv[i]) : 0;
  return n > 0 ? n : fallback;
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  const int steps = app_iters(argc, argv, 4), stages = arg(argc, argv, 2, 40), step_work = arg(argc, argv, 3, 2000000);
  const int stage_work = arg(argc, argv, 4, 50000);
  const int succ = (rank + 1) % size, pred = (rank + size - 1) % size;
  double out[N], in[N], acc = 0;
  for (int i = 0; i < N; ++i) out[i] = rank + i;
  for (int step = 0; step < steps; ++step) {
    acc += busy(step_work); /* the step's own computation */
    for (int s = 0; s < stages; ++s) {
      MPI_Request req[2];
      MPI_Irecv(in, N, MPI_DOUBLE, pred, 7, MPI_COMM_WORLD, &req[0]);
      LOG("MPI_Irecv peer=%d tag=7 count=%d bytes=%d comm=world request=r%d_%d", pred, N, N * 8, step, s);
      MPI_Isend(out, N, MPI_DOUBLE, succ, 7, MPI_COMM_WORLD, &req[1]);
      LOG("MPI_Isend peer=%d tag=7 count=%d bytes=%d comm=world request=s%d_%d", succ, N, N * 8, step, s);
      acc += busy(stage_work);
      MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
      LOG("MPI_Waitall completed=r%d_%d,s%d_%d", step, s, step, s);
      out[s % N] += in[(s + 1) % N] * 1e-6;
    }
    double residual = acc, sum;
    MPI_Allreduce(&residual, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    LOG("MPI_Allreduce count=1 bytes=8 comm=world");
    acc = sum * 1e-9;
  }
  if (rank == 0) printf("timesteps: %d steps of %d stages, %.6f\n", steps, stages, acc);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
