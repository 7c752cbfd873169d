/* A master-worker farm inside a time-step loop, the master polling: each
 * step the master hands TASKS tasks to the workers (one unasked to each,
 * then the next to whichever returns a result), and while no result is in
 * it polls with MPI_Iprobe(MPI_ANY_SOURCE) and does a slice of its own
 * work between polls, so the number of polls changes from step to step and
 * run to run. A stop message (task -1) ends each worker's step; every rank
 * then makes the step's MPI_Allreduce on MPI_COMM_WORLD. Task sizes vary
 * with the task and the step (1 to 5 x WORK).
 *
 *   step_farm [STEPS=40] [TASKS=20] [WORK=200000]
 *
 * Prints the ranks, steps and a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kTagTask = 1, kTagResult = 2 };

static double compute(long n, double x) {
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

/* Rank 0's step: hand out the tasks, poll for results, stop the workers. */
static double master_step(int size, int tasks, long work, double acc) {
  int next = 0, running = 0, w;
  for (w = 1; w < size && next < tasks; ++w, ++next, ++running)
    MPI_Send(&next, 1, MPI_INT, w, kTagTask, MPI_COMM_WORLD);
  while (running > 0) {
    int flag = 0;
    MPI_Status st;
    double r;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {
      acc = compute(work / 50, acc);
      continue;
    }
    MPI_Recv(&r, 1, MPI_DOUBLE, st.MPI_SOURCE, kTagResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    acc += r * 1e-12;
    --running;
    if (next < tasks) {
      MPI_Send(&next, 1, MPI_INT, st.MPI_SOURCE, kTagTask, MPI_COMM_WORLD);
      ++next, ++running;
    }
  }
  for (w = 1; w < size; ++w) {
    int stop = -1;
    MPI_Send(&stop, 1, MPI_INT, w, kTagTask, MPI_COMM_WORLD);
  }
  return acc;
}

static void worker_step(int step, long work) {
  for (;;) {
    int t;
    double r;
    MPI_Recv(&t, 1, MPI_INT, 0, kTagTask, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (t < 0) return;
    r = compute(work * (1 + (t * 7 + step) % 5), (double)t);
    MPI_Send(&r, 1, MPI_DOUBLE, 0, kTagResult, MPI_COMM_WORLD);
  }
}

int main(int argc, char** argv) {
  int rank, size, s;
  int steps = argc > 1 ? atoi(argv[1]) : 40, tasks = argc > 2 ? atoi(argv[2]) : 20;
  long work = argc > 3 ? atol(argv[3]) : 200000;
  double acc = 0, sum;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "step_farm: needs at least 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (s = 0; s < steps; ++s) {
    if (rank == 0) acc = master_step(size, tasks, work, acc);
    else worker_step(s, work);
    MPI_Allreduce(&acc, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    acc = sum * 0.5;
  }
  if (rank == 0) printf("step_farm: %d ranks, %d steps, checksum %.6f\n", size, steps, acc);
  MPI_Finalize();
  return 0;
}
