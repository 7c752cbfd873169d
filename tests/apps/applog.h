/* Test programs log every MPI call they make, one line per call, to
 * $APPLOG_DIR/rank-N.log: "MPI_Func key=value ...". tests/check_trace.py
 * compares these logs with the tracer's JSON Lines dump. Values are world
 * ranks, counts, byte sizes, and labels the program chooses for its
 * communicators (comm=...) and requests (request=..., completed=...). */
#ifndef APPLOG_H
#define APPLOG_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static FILE* applog_file;

static void applog_open(void) {
  const char* dir = getenv("APPLOG_DIR");
  int rank;
  char path[4096];
  if (!dir) return;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  snprintf(path, sizeof path, "%s/rank-%d.log", dir, rank);
  applog_file = fopen(path, "w");
}

#define LOG(...)                          \
  do {                                    \
    if (applog_file) {                    \
      fprintf(applog_file, __VA_ARGS__);  \
      fputc('\n', applog_file);           \
      fflush(applog_file);                \
    }                                     \
  } while (0)

/* Every test program's start: MPI_Init (logged), its rank and the world size. */
static void app_start(int* argc, char*** argv, int* rank, int* size) {
  MPI_Init(argc, argv);
  applog_open();
  LOG("MPI_Init");
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* The main loop's iteration count: argv[1] if given (the prediction
 * benchmark runs longer versions), else the tests' default. */
static int app_iters(int argc, char** argv, int default_iters) {
  int n = argc > 1 ? atoi(argv[1]) : 0;
  return n > 0 ? n : default_iters;
}

/* argv[i] where given and positive, else default_value. */
static int app_arg(int argc, char** argv, int i, int default_value) {
  int n = argc > i ? atoi(argv[i]) : 0;
  return n > 0 ? n : default_value;
}

/* The calling thread's CPU time in seconds (what a trace with gap clock
 * thread_cpu must find in the gap around a timed computation). */
static double app_cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Simple deterministic "computation" between calls. */
static double busy(int n) {
  double s = 0;
  for (int i = 1; i <= n; ++i) s += 1.0 / ((double)i * i);
  return s;
}
/* A disturbed run (tests/run_runs_test.sh): APP_DISTURB="RANK:ITER:N" makes
 * rank RANK compute busy(N) more in iteration ITER, as when another process
 * takes its core for a while. APP_DISTURB_TRACED does the same in traced
 * runs only (SKELTRACE_DIR set: a tracer that slows the program down,
 * tests/run_compare_untraced_test.sh). Returns what busy() returned (0
 * elsewhere). */
static double app_disturb(int rank, int it) {
  const char* d = getenv("APP_DISTURB");
  if (!d && getenv("SKELTRACE_DIR")) d = getenv("APP_DISTURB_TRACED");
  int r, i, n;
  if (!d || sscanf(d, "%d:%d:%d", &r, &i, &n) != 3 || r != rank || i != it) return 0;
  return busy(n);
}
/* APP_SLEEP_US=N: sleep N microseconds (as a program waiting on a device or
 * a file does); returns the seconds of wall time slept (0: not asked). */
static double app_sleep(void) {
  const char* s = getenv("APP_SLEEP_US");
  long us = s ? atol(s) : 0;
  if (us <= 0 || us >= 1000000) return 0;
  double t0 = MPI_Wtime();
  struct timespec left = {0, us * 1000L};
  while (nanosleep(&left, &left) != 0) {
  }
  return MPI_Wtime() - t0;
}

/* Task t's size in the farm programs' random mode: WORK x a factor in
 * [0.25, 4), skewed to the small ones, the same every run. */
static long app_random_task(int t, long work) {
  unsigned long long x = 0x9E3779B97F4A7C15ull * (unsigned long long)(t + 1);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  double u = (double)(x % 1000000) / 1e6;
  return (long)((double)work * (0.25 + 3.75 * u * u * u));
}
#endif
