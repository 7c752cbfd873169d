/* A master–worker farm over an intercommunicator, as mpi4py.futures and
 * coupled codes build one: rank 0 alone in one group, the other ranks in
 * the other (MPI_Comm_split), joined by MPI_Intercomm_create over
 * MPI_COMM_WORLD. The master broadcasts the set-up to the workers
 * (MPI_Bcast with MPI_ROOT), then hands TASKS tasks, each to whichever
 * worker asks (MPI_Recv from MPI_ANY_SOURCE on the intercommunicator, ranks
 * of the remote group), task k of WORK * (1 + k % 4) terms; a task of -1
 * stops a worker. The workers agree on what they did (MPI_Allreduce over
 * their own group), the two groups meet at an MPI_Barrier of the
 * intercommunicator, then merge it into one intracommunicator
 * (MPI_Intercomm_merge, the master's group first) for an MPI_Allreduce and
 * an MPI_Bcast, and free both. With `thread`, the master runs in a
 * thread of its own while rank 0's main thread waits for it
 * (MPI_THREAD_MULTIPLE), as mpi4py.futures' pool does.
 *
 *   intercomm [TASKS=100] [WORK=200000] [thread]
 *
 * Prints the tasks each worker did on rank 0. Needs 2 ranks or more. Each
 * call is logged (applog.h) with world ranks: the trace names an
 * intercommunicator's peers and roots so (the master is world rank 0, a
 * worker's rank in the remote group is its world rank - 1). */
#include <pthread.h>
#include <string.h>

#include "applog.h"

enum { kTagTask = 1, kTagResult = 2 };

static double compute(long n, double x) {
  for (long i = 0; i < n; ++i) x = x * 0.999999 + 1e-7 * (double)(i & 7);
  return x;
}

static void master(MPI_Comm inter, int workers, int tasks, long work) {
  long setup[2] = {tasks, work};
  MPI_Bcast(setup, 2, MPI_LONG, MPI_ROOT, inter);
  LOG("MPI_Bcast root=0 count=2 comm=inter");
  int next = 0, running = 0;
  for (int w = 0; w < workers; ++w) { /* seed every worker, or stop it */
    int task = next < tasks ? next++ : -1;
    MPI_Send(&task, 1, MPI_INT, w, kTagTask, inter);
    LOG("MPI_Send peer=%d tag=%d count=1 comm=inter", w + 1, kTagTask);
    running += task >= 0;
  }
  double acc = 0;
  while (running > 0) {
    double result;
    MPI_Status st;
    MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, kTagResult, inter, &st);
    LOG("MPI_Recv peer=%d tag=%d count=1 comm=inter any_source", st.MPI_SOURCE + 1, kTagResult);
    acc += result;
    int task = next < tasks ? next++ : -1;
    MPI_Send(&task, 1, MPI_INT, st.MPI_SOURCE, kTagTask, inter);
    LOG("MPI_Send peer=%d tag=%d count=1 comm=inter", st.MPI_SOURCE + 1, kTagTask);
    running -= task < 0;
  }
  printf("intercomm: %d tasks over %d workers, checksum %.6g\n", tasks, workers, acc);
}

static void worker(MPI_Comm inter, MPI_Comm group) {
  long setup[2];
  MPI_Bcast(setup, 2, MPI_LONG, 0, inter);
  LOG("MPI_Bcast root=0 count=2 comm=inter");
  int done = 0;
  double x = 1;
  for (;;) {
    int task;
    MPI_Recv(&task, 1, MPI_INT, 0, kTagTask, inter, MPI_STATUS_IGNORE);
    LOG("MPI_Recv peer=0 tag=%d count=1 comm=inter", kTagTask);
    if (task < 0) break;
    x = compute(setup[1] * (1 + task % 4), 1.0 + task);  /* the same whoever does it: the output is */
    MPI_Send(&x, 1, MPI_DOUBLE, 0, kTagResult, inter);
    LOG("MPI_Send peer=0 tag=%d count=1 comm=inter", kTagResult);
    ++done;
  }
  int all = 0;
  MPI_Allreduce(&done, &all, 1, MPI_INT, MPI_SUM, group);
  LOG("MPI_Allreduce count=1 comm=group");
}

struct master_args {
  MPI_Comm inter;
  int workers, tasks;
  long work;
};

static void* master_thread(void* p) {
  const struct master_args* a = p;
  master(a->inter, a->workers, a->tasks, a->work);
  return NULL;
}

int main(int argc, char** argv) {
  const int threaded = argc > 3 && strcmp(argv[3], "thread") == 0;
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, threaded ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  applog_open();
  LOG("MPI_Init_thread");
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int tasks = argc > 1 ? atoi(argv[1]) : 100;
  const long work = argc > 2 ? atol(argv[2]) : 200000;
  if (size < 2 || tasks < 0 || work < 0 || (threaded && provided < MPI_THREAD_MULTIPLE)) {
    if (rank == 0) fprintf(stderr, "usage: intercomm [TASKS>=0] [WORK>=0] [thread], on 2 ranks or more\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm group, inter;
  char all[4096] = "", workers[4096] = "";
  for (int r = 0, a = 0, w = 0; r < size; ++r) {
    a += snprintf(all + a, sizeof all - (size_t)a, "%s%d", r ? "," : "", r);
    if (r > 0) w += snprintf(workers + w, sizeof workers - (size_t)w, "%s%d", r > 1 ? "," : "", r);
  }
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : 1, rank, &group);
  LOG("MPI_Comm_split comm=world new_comm=group color=%d key=%d members=%s", rank == 0 ? 0 : 1, rank,
      rank == 0 ? "0" : workers);
  /* the local leader is each group's rank 0; the remote leader, the other group's in MPI_COMM_WORLD */
  MPI_Intercomm_create(group, 0, MPI_COMM_WORLD, rank == 0 ? 1 : 0, 77, &inter);
  LOG("MPI_Intercomm_create comm=world new_comm=inter tag=77 members=%s", all);  /* both groups */
  if (rank == 0 && threaded) {
    struct master_args a = {inter, size - 1, tasks, work};
    pthread_t t;
    pthread_create(&t, NULL, master_thread, &a);
    pthread_join(t, NULL);
  } else if (rank == 0) {
    master(inter, size - 1, tasks, work);
  } else
    worker(inter, group);
  MPI_Barrier(inter);
  LOG("MPI_Barrier comm=inter");
  /* both groups as one intracommunicator, the master's group first (the workers pass high = 1) */
  MPI_Comm merged;
  MPI_Intercomm_merge(inter, rank != 0, &merged);
  LOG("MPI_Intercomm_merge comm=inter new_comm=merged members=%s", all);
  double mine = rank, sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, merged);
  LOG("MPI_Allreduce count=1 comm=merged");
  MPI_Bcast(&sum, 1, MPI_DOUBLE, size - 1, merged);  /* from the last worker */
  LOG("MPI_Bcast root=%d count=1 comm=merged", size - 1);
  MPI_Comm_free(&merged);
  LOG("MPI_Comm_free comm=merged");
  MPI_Comm_free(&inter);
  LOG("MPI_Comm_free comm=inter");
  MPI_Comm_free(&group);
  LOG("MPI_Comm_free comm=group");
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
