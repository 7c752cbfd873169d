/* Dynamic master-worker farms built on non-blocking calls (farm.c and
 * farm2.c use blocking ones). Rank 0 hands out TASKS tasks one at a time to
 * whichever worker asks, then a stop to each. A task's size is WORK
 * (uniform) or, with SKEW > 1, grows linearly from WORK to SKEW x WORK over
 * the tasks; SKEW 0 draws it from a skewed random distribution (a fixed
 * seed: the same tasks every run).
 *
 *   farm3 [TASKS=200] [WORK=20000] [SKEW=1] [MODE=wait|waitany|cancel|test|spin]
 *
 * wait: the master posts an MPI_Irecv from MPI_ANY_SOURCE per request and
 *   completes it with MPI_Wait, answering with MPI_Isend + MPI_Wait; a
 *   worker asks with MPI_Isend + MPI_Wait and takes the answer with
 *   MPI_Irecv (MPI_ANY_TAG) + MPI_Wait.
 * waitany: the master posts one MPI_Irecv per worker (from that worker),
 *   takes a request with MPI_Waitany, answers with MPI_Send and posts that
 *   worker's MPI_Irecv again after a task (not after its stop: nothing is
 *   left pending); a worker asks with MPI_Send and takes the answer with
 *   MPI_Irecv + MPI_Wait.
 * test: as wait, but the master polls its MPI_Irecv with MPI_Test and
 *   does a slice of its own work (WORK / 20) after each test that finds
 *   nothing.
 * spin: as test, but the master computes nothing between its tests (it
 *   spins, as an active-message layer does; the tests that find nothing
 *   are not logged: thousands a task).
 * cancel: as waitany, but the master answers with MPI_Isend + MPI_Wait and
 *   posts the worker's MPI_Irecv again after every answer, the stop too;
 *   at the end it cancels them (MPI_Cancel, not traced) and completes them
 *   with MPI_Wait. A worker asks with MPI_Isend + MPI_Wait and takes the
 *   answer with MPI_Recv.
 *
 * Each call is logged (applog.h); sources are the ones matched. */
#include <string.h>

#include "applog.h"

enum { kTagAsk = 11, kTagTask = 12, kTagStop = 13, kMaxWorkers = 256 };
enum Mode { kWait, kWaitany, kCancel, kTest, kSpin };

static double compute(long n, double seed) {
  double x = seed;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9 * (double)(i & 7);
  return x;
}

static long task_size(int t, int tasks, long work, double skew) {
  if (skew > 0) return (long)(work * (1.0 + (skew - 1.0) * t / (tasks > 1 ? tasks - 1 : 1)));
  return app_random_task(t, work);
}

/* Request labels for the log: one per request made. */
static long next_label;
static void label(char* out) { snprintf(out, 16, "r%ld", next_label++); }

/* The master's answer to w: task `next`, or a stop when none is left. */
static void answer(int w, int next, int tasks, int nonblocking) {
  const int tag = next < tasks ? kTagTask : kTagStop;
  if (!nonblocking) {
    MPI_Send(&next, 1, MPI_INT, w, tag, MPI_COMM_WORLD);
    LOG("MPI_Send peer=%d tag=%d count=1", w, tag);
    return;
  }
  MPI_Request r;
  char lab[16];
  label(lab);
  MPI_Isend(&next, 1, MPI_INT, w, tag, MPI_COMM_WORLD, &r);
  LOG("MPI_Isend peer=%d tag=%d count=1 request=%s", w, tag, lab);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  LOG("MPI_Wait completed=%s", lab);
}

/* poll: MPI_Test until the request is in, computing poll_work (none: spinning) after each test that finds none. */
static void master_wait(int size, int tasks, int poll, long poll_work) {
  int next = 0, stopped = 0;
  double acc = 0;
  while (stopped < size - 1) {
    double result;
    MPI_Request r;
    MPI_Status st;
    char lab[16];
    label(lab);
    MPI_Irecv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, kTagAsk, MPI_COMM_WORLD, &r);
    LOG("MPI_Irecv tag=%d count=1 request=%s any_source=1", kTagAsk, lab);
    if (poll) {
      int flag = 0;
      for (MPI_Test(&r, &flag, &st); !flag; MPI_Test(&r, &flag, &st)) {
        if (poll_work == 0) continue;
        LOG("MPI_Test");
        acc = compute(poll_work, acc);
      }
      LOG("MPI_Test completed=%s sources=%d", lab, st.MPI_SOURCE);
    } else {
      MPI_Wait(&r, &st);
      LOG("MPI_Wait completed=%s sources=%d", lab, st.MPI_SOURCE);
    }
    answer(st.MPI_SOURCE, next, tasks, 1);
    if (next < tasks) ++next;
    else ++stopped;
  }
  if (acc < 0) printf("farm3: %g\n", acc); /* keeps the master's work */
}

/* One MPI_Irecv per worker, MPI_Waitany over them; cancel: re-posted after
 * every answer and cancelled at the end, else only after a task. */
static void master_waitany(int size, int tasks, int cancel) {
  int nw = size - 1, next = 0, stopped = 0, w;
  double result[kMaxWorkers];
  MPI_Request req[kMaxWorkers];
  char lab[kMaxWorkers][16];
  for (w = 0; w < nw; ++w) {
    label(lab[w]);
    MPI_Irecv(&result[w], 1, MPI_DOUBLE, w + 1, kTagAsk, MPI_COMM_WORLD, &req[w]);
    LOG("MPI_Irecv peer=%d tag=%d count=1 request=%s", w + 1, kTagAsk, lab[w]);
  }
  while (stopped < nw) {
    int idx;
    MPI_Waitany(nw, req, &idx, MPI_STATUS_IGNORE);
    LOG("MPI_Waitany completed=%s", lab[idx]);
    const int stop = next >= tasks;
    answer(idx + 1, next, tasks, cancel);
    if (stop) ++stopped;
    else ++next;
    if (!stop || cancel) {
      label(lab[idx]);
      MPI_Irecv(&result[idx], 1, MPI_DOUBLE, idx + 1, kTagAsk, MPI_COMM_WORLD, &req[idx]);
      LOG("MPI_Irecv peer=%d tag=%d count=1 request=%s", idx + 1, kTagAsk, lab[idx]);
    }
  }
  if (!cancel) return;
  for (w = 0; w < nw; ++w) {
    MPI_Cancel(&req[w]);
    MPI_Wait(&req[w], MPI_STATUS_IGNORE);
    LOG("MPI_Wait completed=%s", lab[w]);
  }
}

static void worker(int tasks, long work, double skew, enum Mode mode) {
  double result = 0;
  for (;;) {
    int task;
    MPI_Status st;
    MPI_Request r;
    char lab[16];
    if (mode == kWaitany) {
      MPI_Send(&result, 1, MPI_DOUBLE, 0, kTagAsk, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1", kTagAsk);
    } else {
      label(lab);
      MPI_Isend(&result, 1, MPI_DOUBLE, 0, kTagAsk, MPI_COMM_WORLD, &r);
      LOG("MPI_Isend peer=0 tag=%d count=1 request=%s", kTagAsk, lab);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      LOG("MPI_Wait completed=%s", lab);
    }
    if (mode == kCancel) {
      MPI_Recv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=0 tag=-1 count=1 any_tag");
    } else {
      label(lab);
      MPI_Irecv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
      LOG("MPI_Irecv peer=0 tag=-1 count=1 request=%s", lab);
      MPI_Wait(&r, &st);
      LOG("MPI_Wait completed=%s", lab);
    }
    if (st.MPI_TAG == kTagStop) break;
    result = compute(task_size(task, tasks, work, skew), task);
  }
}

int main(int argc, char** argv) {
  int rank, size;
  int tasks = argc > 1 ? atoi(argv[1]) : 200;
  long work = argc > 2 ? atol(argv[2]) : 20000;
  double skew = argc > 3 ? atof(argv[3]) : 1.0;
  const char* name = argc > 4 ? argv[4] : "wait";
  enum Mode mode = strcmp(name, "waitany") == 0 ? kWaitany
                   : strcmp(name, "cancel") == 0 ? kCancel
                   : strcmp(name, "test") == 0   ? kTest
                   : strcmp(name, "spin") == 0   ? kSpin
                                                 : kWait;
  if (tasks < 1 || work < 0 || (skew < 1 && skew != 0) ||
      (mode == kWait && strcmp(name, "wait") != 0)) {
    fprintf(stderr, "usage: farm3 [TASKS] [WORK] [SKEW >= 1, or 0: random] [wait|waitany|cancel|test|spin]\n");
    return 2;
  }
  app_start(&argc, &argv, &rank, &size);
  if (size - 1 > kMaxWorkers) {
    fprintf(stderr, "farm3: at most %d workers\n", kMaxWorkers);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0 && (mode == kWait || mode == kTest || mode == kSpin))
    master_wait(size, tasks, mode != kWait, mode == kTest ? work / 20 : 0);
  else if (rank == 0) master_waitany(size, tasks, mode == kCancel);
  else worker(tasks, work, skew, mode);
  MPI_Barrier(MPI_COMM_WORLD);
  LOG("MPI_Barrier");
  if (rank == 0) printf("farm3 %s: %d tasks done\n", name, tasks);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
