/* A dynamic master-worker farm: rank 0 hands out TASKS tasks one at a time
 * to whichever worker asks (MPI_Recv from MPI_ANY_SOURCE, the answer sent
 * to the status's source), then a stop message to each worker. A task's
 * size is WORK (uniform) or, with SKEW > 1, grows linearly from WORK to
 * SKEW x WORK over the tasks; a worker computes its task, then sleeps SLEEP
 * microseconds (a task that waits, as on a device or a file: 0 by default),
 * then asks again with its result. Each rank's share of the tasks differs
 * from run to run.
 *
 *   farm [TASKS=200] [WORK=20000] [SKEW=1] [SLEEP=0]
 *
 * Each call is logged (applog.h); sources are the ones matched. */
#include <time.h>

#include "applog.h"

enum { kTagAsk = 1, kTagTask = 2, kTagStop = 3 };

static double compute(long n, double seed) {
  double x = seed;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9 * (double)(i & 7);
  return x;
}

static long task_size(int task, int tasks, long work, double skew) {
  return (long)(work * (1.0 + (skew - 1.0) * task / (tasks > 1 ? tasks - 1 : 1)));
}

int main(int argc, char** argv) {
  int rank, size;
  int tasks = argc > 1 ? atoi(argv[1]) : 200;
  long work = argc > 2 ? atol(argv[2]) : 20000;
  double skew = argc > 3 ? atof(argv[3]) : 1.0;
  long sleep_us = argc > 4 ? atol(argv[4]) : 0;
  if (tasks < 1 || work < 0 || skew < 1 || sleep_us < 0 || sleep_us >= 1000000) {
    fprintf(stderr, "usage: farm [TASKS] [WORK] [SKEW >= 1] [SLEEP us < 10^6]\n");
    return 2;
  }
  app_start(&argc, &argv, &rank, &size);
  double total = 0;
  if (rank == 0) {
    int next = 0, stopped = 0;
    while (stopped < size - 1) {
      double result;
      MPI_Status st;
      MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, kTagAsk, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=%d tag=%d count=1 any_source", st.MPI_SOURCE, kTagAsk);
      total += result;
      if (next < tasks) {
        MPI_Send(&next, 1, MPI_INT, st.MPI_SOURCE, kTagTask, MPI_COMM_WORLD);
        LOG("MPI_Send peer=%d tag=%d count=1", st.MPI_SOURCE, kTagTask);
        ++next;
      } else {
        MPI_Send(&next, 1, MPI_INT, st.MPI_SOURCE, kTagStop, MPI_COMM_WORLD);
        LOG("MPI_Send peer=%d tag=%d count=1", st.MPI_SOURCE, kTagStop);
        ++stopped;
      }
    }
  } else {
    double result = 0;
    for (;;) {
      int task;
      MPI_Status st;
      MPI_Send(&result, 1, MPI_DOUBLE, 0, kTagAsk, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1", kTagAsk);
      MPI_Recv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=0 tag=-1 count=1 any_tag");
      if (st.MPI_TAG == kTagStop) break;
      result = compute(task_size(task, tasks, work, skew), task);
      if (sleep_us > 0) {
        struct timespec left = {0, sleep_us * 1000L};
        while (nanosleep(&left, &left) != 0) {
        }
      }
    }
  }
  double sum;
  MPI_Reduce(&total, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  LOG("MPI_Reduce root=0 count=1");
  if (rank == 0) printf("farm: %d tasks done\n", tasks);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
