/* MPI_THREAD_MULTIPLE: two threads per rank exchange messages concurrently
 * (thread t uses tag t). The trace must hold every call (order between the
 * threads is not fixed, so the check is on the multiset of calls). */
#include <pthread.h>

#include "applog.h"

static int g_rank, g_size;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void* worker(void* arg) {
  int t = (int)(long)arg, next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  int v = g_rank, w;
  for (int i = 0; i < 200; ++i) {
    MPI_Sendrecv(&v, 1, MPI_INT, next, t, &w, 1, MPI_INT, prev, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    pthread_mutex_lock(&log_mu);
    LOG("MPI_Sendrecv peer=%d tag=%d count=1 bytes=4 peer2=%d tag2=%d comm=world", next, t, prev, t);
    pthread_mutex_unlock(&log_mu);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  applog_open();
  LOG("MPI_Init_thread");
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (g_rank == 0) printf("threads: MPI_THREAD_MULTIPLE not provided\n");
  } else {
    pthread_t th[2];
    for (long t = 0; t < 2; ++t) pthread_create(&th[t], NULL, worker, (void*)t);
    for (int t = 0; t < 2; ++t) pthread_join(th[t], NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  LOG("MPI_Barrier comm=world");
  if (g_rank == 0) printf("threads: done\n");
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
