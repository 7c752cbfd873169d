/* A hybrid MPI + OpenMP program whose main thread alone calls MPI, though it
 * asks for MPI_THREAD_MULTIPLE (as hybrid codes often do: miniVite, hypre's
 * drivers): STEPS steps, each a parallel loop of WORK terms shared by a team
 * of THREADS OpenMP threads, then, on the main thread, a ring exchange with
 * both neighbours and, every 10th step, an MPI_Allreduce.
 *
 *   omp_team [STEPS=100] [WORK=400000] [THREADS=2]
 *
 * Between two calls the rank computes with its whole team: the calling
 * thread's CPU time is its own share of the work, and less where the team
 * outnumbers the cores it runs on. The skeleton must take the team's time
 * (tests/run_omp_team_test.sh). Each call is logged (applog.h). */
#include <omp.h>

#include "applog.h"

static double team_compute(long work, int threads, double seed) {
  double sum = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : sum)
  for (long i = 0; i < work; ++i) {
    double x = seed + (double)(i & 1023);
    for (int k = 0; k < 16; ++k) x = x * 1.0000001 + 1e-9;
    sum += x;
  }
  return sum;
}

int main(int argc, char** argv) {
  int provided, rank, size;
  const int steps = app_arg(argc, argv, 1, 100), work = app_arg(argc, argv, 2, 400000);
  const int threads = app_arg(argc, argv, 3, 2);
  if (steps < 1 || work < 0 || threads < 1 || threads > 64) {
    fprintf(stderr, "usage: omp_team [STEPS >= 1] [WORK >= 0] [THREADS 1..64]\n");
    return 2;
  }
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  applog_open();
  LOG("MPI_Init_thread");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  double out[64], in[2][64], total = 0;
  for (int s = 0; s < steps; ++s) {
    double x = team_compute(work, threads, in[0][0] * 1e-12 + rank + s);
    for (int i = 0; i < 64; ++i) out[i] = x + i;
    MPI_Request req[4];
    MPI_Irecv(in[0], 64, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in[1], 64, MPI_DOUBLE, next, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(out, 64, MPI_DOUBLE, next, 1, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(out, 64, MPI_DOUBLE, prev, 2, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    LOG("MPI_Irecv peer=%d tag=1 count=64", prev);
    LOG("MPI_Irecv peer=%d tag=2 count=64", next);
    LOG("MPI_Isend peer=%d tag=1 count=64", next);
    LOG("MPI_Isend peer=%d tag=2 count=64", prev);
    LOG("MPI_Waitall count=4");
    if (s % 10 == 9) {
      double sum;
      MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      LOG("MPI_Allreduce count=1");
      total += sum;
    }
  }
  if (rank == 0) printf("omp_team: %d steps of %d terms on %d threads done (%g)\n", steps, work, threads, total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
