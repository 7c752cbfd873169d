/* A hybrid MPI + OpenMP program: MPI_THREAD_MULTIPLE, REGIONS parallel
 * regions of THREADS OpenMP threads; in each, every thread makes its own
 * ring exchange (tag = its OpenMP thread number) for STEPS steps, computing
 * between them; between regions the main thread alone makes an
 * MPI_Allreduce. The OpenMP runtime keeps its threads from one region to the
 * next, so each thread's calls run through every region; OpenMP thread 0 is
 * the main thread.
 *
 *   omp_halo [THREADS=4] [REGIONS=3] [STEPS=40] [WORK=20000]
 *
 * Each call is logged (applog.h) with its thread: "thread=main" (OpenMP
 * thread 0) or "thread=w<t>". */
#include <omp.h>

#include "applog.h"

static double compute(long n, double seed) {
  double x = seed;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9 * (double)(i & 7);
  return x;
}

static void step(int rank, int size, int t, long work, double* acc) {
  enum { N = 256 };
  double out[N], in[2][N];
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Request req[4];
  for (int i = 0; i < N; ++i) out[i] = rank + t + *acc * 1e-12;
  MPI_Irecv(in[0], N, MPI_DOUBLE, prev, t, MPI_COMM_WORLD, &req[0]);
  MPI_Irecv(in[1], N, MPI_DOUBLE, next, t, MPI_COMM_WORLD, &req[1]);
  MPI_Isend(out, N, MPI_DOUBLE, next, t, MPI_COMM_WORLD, &req[2]);
  MPI_Isend(out, N, MPI_DOUBLE, prev, t, MPI_COMM_WORLD, &req[3]);
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
#pragma omp critical(applog)
  {
    char who[16];
    if (t == 0) snprintf(who, sizeof who, "main");
    else snprintf(who, sizeof who, "w%d", t);
    LOG("MPI_Irecv thread=%s peer=%d tag=%d bytes=%d", who, prev, t, (int)sizeof in[0]);
    LOG("MPI_Irecv thread=%s peer=%d tag=%d bytes=%d", who, next, t, (int)sizeof in[1]);
    LOG("MPI_Isend thread=%s peer=%d tag=%d bytes=%d", who, next, t, (int)sizeof out);
    LOG("MPI_Isend thread=%s peer=%d tag=%d bytes=%d", who, prev, t, (int)sizeof out);
    LOG("MPI_Waitall thread=%s", who);
  }
  *acc += compute(work * (2 + t) / 2, in[0][0] + in[1][N - 1]);
}

int main(int argc, char** argv) {
  int provided, rank, size;
  int threads = argc > 1 ? atoi(argv[1]) : 4, regions = argc > 2 ? atoi(argv[2]) : 3;
  int steps = argc > 3 ? atoi(argv[3]) : 40;
  long work = argc > 4 ? atol(argv[4]) : 20000;
  double result[64] = {0}, total = 0;
  if (threads < 1 || threads > 64 || regions < 1 || steps < 1 || work < 0) {
    fprintf(stderr, "usage: omp_halo [THREADS 1..64] [REGIONS] [STEPS] [WORK]\n");
    return 2;
  }
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  applog_open();
  LOG("MPI_Init_thread thread=main");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) fprintf(stderr, "omp_halo: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int r = 0; r < regions; ++r) {
#pragma omp parallel num_threads(threads)
    {
      int t = omp_get_thread_num();
      for (int s = 0; s < steps; ++s) step(rank, size, t, work, &result[t]);
    }
    double mine = 0, sum;
    for (int t = 0; t < threads; ++t) mine += result[t];
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    LOG("MPI_Allreduce thread=main count=1");
    total += sum;
  }
  if (rank == 0) printf("omp_halo: %d threads x %d regions x %d steps done (%g)\n", threads, regions, steps, total);
  LOG("MPI_Finalize thread=main");
  MPI_Finalize();
  return 0;
}
