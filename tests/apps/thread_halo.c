/* A hybrid program: MPI_THREAD_MULTIPLE, T threads per rank, each thread a
 * 1-D ring halo exchange of its own (tag = thread, its own duplicate of
 * MPI_COMM_WORLD for an MPI_Allreduce every 10 steps), computing between
 * exchanges; thread t computes (1 + t/2) x WORK, so the threads of one rank
 * are uneven. The main thread makes a barrier and an allreduce of its own
 * before and after the threads run.
 *
 *   thread_halo [THREADS=2] [STEPS=100] [WORK=20000]
 *
 * With THREAD_HALO_MODE=serialized in the environment: MPI_THREAD_SERIALIZED,
 * and the threads take turns, one whole step (its exchange, its Allreduce)
 * each, in thread order, computing outside their turn.
 *
 * Each call is logged (applog.h) with its thread: "thread=main" or "thread=w<t>". */
#include <pthread.h>
#include <string.h>

#include "applog.h"

static int g_rank, g_size, g_steps;
static long g_work;
static MPI_Comm g_comm[8];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
/* serialized mode: whose turn it is (turn % threads) */
static int g_serialized, g_threads, g_turn;
static pthread_mutex_t turn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;

static void take_turn(int t) {
  if (!g_serialized) return;
  pthread_mutex_lock(&turn_mu);
  while (g_turn % g_threads != t) pthread_cond_wait(&turn_cv, &turn_mu);
  pthread_mutex_unlock(&turn_mu);
}

static void end_turn(void) {
  if (!g_serialized) return;
  pthread_mutex_lock(&turn_mu);
  ++g_turn;
  pthread_cond_broadcast(&turn_cv);
  pthread_mutex_unlock(&turn_mu);
}
static double g_result[8];  /* per thread: deterministic, whichever ends last */

#define TLOG(...)                   \
  do {                              \
    pthread_mutex_lock(&log_mu);    \
    LOG(__VA_ARGS__);               \
    pthread_mutex_unlock(&log_mu);  \
  } while (0)

static double compute(long n, double seed) {
  double x = seed;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9 * (double)(i & 7);
  return x;
}

static void* worker(void* arg) {
  int t = (int)(long)arg, next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  enum { N = 512 };
  double out[2][N], in[2][N], acc = 0;
  long work = g_work + g_work * t / 2;
  for (int i = 0; i < N; ++i) out[0][i] = out[1][i] = g_rank + t;
  for (int s = 0; s < g_steps; ++s) {
    MPI_Request req[4];
    double sum = 0;
    take_turn(t);
    MPI_Irecv(in[0], N, MPI_DOUBLE, prev, t, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in[1], N, MPI_DOUBLE, next, t, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(out[0], N, MPI_DOUBLE, next, t, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(out[1], N, MPI_DOUBLE, prev, t, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    TLOG("MPI_Irecv thread=w%d peer=%d tag=%d bytes=%d", t, prev, t, (int)(N * sizeof(double)));
    TLOG("MPI_Irecv thread=w%d peer=%d tag=%d bytes=%d", t, next, t, (int)(N * sizeof(double)));
    TLOG("MPI_Isend thread=w%d peer=%d tag=%d bytes=%d", t, next, t, (int)(N * sizeof(double)));
    TLOG("MPI_Isend thread=w%d peer=%d tag=%d bytes=%d", t, prev, t, (int)(N * sizeof(double)));
    TLOG("MPI_Waitall thread=w%d", t);
    if (s % 10 == 9) {
      MPI_Allreduce(&acc, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm[t]);
      TLOG("MPI_Allreduce thread=w%d count=1", t);
    }
    end_turn();
    if (s % 10 == 9) acc = sum / g_size;
    acc += compute(work, in[0][0] + in[1][N - 1]);
  }
  g_result[t] = acc;
  return NULL;
}

int main(int argc, char** argv) {
  int provided, threads = argc > 1 ? atoi(argv[1]) : 2;
  g_steps = argc > 2 ? atoi(argv[2]) : 100;
  g_work = argc > 3 ? atol(argv[3]) : 20000;
  if (threads < 1 || threads > 8 || g_steps < 1 || g_work < 0) {
    fprintf(stderr, "usage: thread_halo [THREADS 1..8] [STEPS] [WORK]\n");
    return 2;
  }
  const char* mode = getenv("THREAD_HALO_MODE");
  g_serialized = mode && strcmp(mode, "serialized") == 0;
  g_threads = threads;
  const int level = g_serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
  MPI_Init_thread(&argc, &argv, level, &provided);
  applog_open();
  LOG("MPI_Init_thread thread=main");
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (provided < level) {
    if (g_rank == 0) fprintf(stderr, "thread_halo: MPI_THREAD_%s not provided\n", g_serialized ? "SERIALIZED" : "MULTIPLE");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int t = 0; t < threads; ++t) {
    MPI_Comm_dup(MPI_COMM_WORLD, &g_comm[t]);
    LOG("MPI_Comm_dup thread=main");
  }
  double x = g_rank, y;
  MPI_Barrier(MPI_COMM_WORLD);
  LOG("MPI_Barrier thread=main");
  pthread_t th[8];
  for (long t = 0; t < threads; ++t) pthread_create(&th[t], NULL, worker, (void*)t);
  for (int t = 0; t < threads; ++t) pthread_join(th[t], NULL);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  LOG("MPI_Allreduce thread=main count=1");
  for (int t = 0; t < threads; ++t) {
    MPI_Comm_free(&g_comm[t]);
    LOG("MPI_Comm_free thread=main");
  }
  double sum = y;
  for (int t = 0; t < threads; ++t) sum += g_result[t];
  if (g_rank == 0) printf("thread_halo: %d threads x %d steps done (%g)\n", threads, g_steps, sum);
  LOG("MPI_Finalize thread=main");
  MPI_Finalize();
  return 0;
}
