/* Two more shapes of dynamic master-worker farm than farm.c, with task
 * sizes drawn from a skewed random distribution (a fixed seed: the same
 * tasks every run; which worker gets which changes from run to run).
 *
 *   farm2 [TASKS=150] [WORK=20000] [MODE=seeded|probe|chunks|drain|poll|mprobe|mrecv|prefetch] [DEPTH=2]
 *
 * seeded (the matrix-vector farm of the MPI textbooks): the master
 *   broadcasts the parameters, sends each worker its first task unasked
 *   (tag = task + 1), then receives results from MPI_ANY_SOURCE with
 *   MPI_ANY_TAG (tag = the task done) and answers each with the next task,
 *   or a stop (tag 0, no data); workers receive with MPI_ANY_TAG.
 * probe: on a duplicate of MPI_COMM_WORLD, workers ask with a "ready"
 *   message first, then send 64-double results; the master finds each with
 *   MPI_Probe(MPI_ANY_SOURCE) and takes it with MPI_Recv from that rank;
 *   tasks and the stop (task -1) come with one tag, which the workers
 *   receive with. A final MPI_Allreduce on the duplicate.
 * chunks: each answer in two messages, a header (the task and its data's
 *   length) and the task's data (a length that varies with the task); a
 *   stop is a header alone.
 * drain: the master sends each worker its first task unasked, takes
 *   results with MPI_Recv from MPI_ANY_SOURCE and answers each with the
 *   next task while there is one; the last results stay unanswered until
 *   all are in, then every worker gets a stop (task -1).
 * poll: as drain, but the master polls for results with
 *   MPI_Iprobe(MPI_ANY_SOURCE) and does a slice of its own work (WORK / 20)
 *   after each poll that found none, then takes the result with MPI_Recv
 *   from the rank the probe found.
 *
 * mprobe (the pool of mpi4py.futures, on a duplicate of MPI_COMM_WORLD):
 *   the master sends each task with MPI_Issend and frees its request
 *   (MPI_Request_free) once that worker's result is in; it polls with
 *   MPI_Iprobe(MPI_ANY_SOURCE), sleeping between polls that found none
 *   (from 20 us, doubling to 1 ms), takes a result with
 *   MPI_Mprobe(MPI_ANY_SOURCE) and MPI_Mrecv, answers while tasks remain,
 *   then stops every worker with an MPI_Issend each and MPI_Waitall.
 *   Workers poll the same way (MPI_Iprobe from MPI_ANY_SOURCE with
 *   MPI_ANY_TAG), take a task with MPI_Mprobe and MPI_Mrecv, and send the
 *   result with MPI_Issend, polling it with MPI_Test until the master took it.
 *
 * mrecv (mpi4py's pickle API, comm.recv: MPI_Mprobe and MPI_Mrecv): the
 *   master sends each worker its first task unasked, then takes each result
 *   with MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) and MPI_Mrecv and answers
 *   with the next task (tag kTagWork) or a stop (tag kTagStop); workers
 *   take their answers with MPI_Mprobe(0, MPI_ANY_TAG) and MPI_Mrecv and
 *   tell a stop by its tag.
 *
 * prefetch (DEPTH tasks in flight per worker, so that a worker does not
 *   wait for the master's answer): the master sends each worker DEPTH tasks
 *   unasked, takes results with MPI_Recv from MPI_ANY_SOURCE and answers
 *   each with the next task, or, the first time none is left, a stop (task
 *   -1; the worker still has its other task to do, whose result is not
 *   answered); workers keep an MPI_Irecv of their next task posted while
 *   they compute the one they have (MPI_Wait for it), and end at the stop.
 *
 * Each call is logged (applog.h); sources and tags are the ones matched. */
#include <string.h>

#include "applog.h"

enum { kTagWork = 7, kTagHeader = 8, kTagData = 9, kTagAsk = 10, kTagStop = 11 };

static double compute(long n, double seed) {
  double x = seed;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9 * (double)(i & 7);
  return x;
}

/* Task t's size: WORK x a factor in [0.25, 4), skewed to the small ones. */
static long task_size(int t, long work) { return app_random_task(t, work); }

static void seeded(int rank, int size, int tasks, long work) {
  long params[2] = {tasks, work};
  MPI_Bcast(params, 2, MPI_LONG, 0, MPI_COMM_WORLD);
  LOG("MPI_Bcast root=0 count=2 comm=world");
  if (rank == 0) {
    int next = 0, w;
    for (w = 1; w < size; ++w) {
      int tag = next < tasks ? next + 1 : 0;
      MPI_Send(&next, next < tasks ? 1 : 0, MPI_INT, w, tag, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=%d", w, tag, next < tasks ? 1 : 0);
      if (next < tasks) ++next;
    }
    int running = size - 1 < tasks ? size - 1 : tasks;
    while (running > 0) {
      double result;
      MPI_Status st;
      MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=%d tag=-1 count=1 any_source any_tag", st.MPI_SOURCE);
      int tag = next < tasks ? next + 1 : 0;
      MPI_Send(&next, next < tasks ? 1 : 0, MPI_INT, st.MPI_SOURCE, tag, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=%d", st.MPI_SOURCE, tag, next < tasks ? 1 : 0);
      if (next < tasks) ++next;
      else --running;
    }
  } else {
    for (;;) {
      int task;
      MPI_Status st;
      MPI_Recv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=0 tag=-1 count=1 any_tag");
      if (st.MPI_TAG == 0) break;
      double result = compute(task_size(task, work), task);
      MPI_Send(&result, 1, MPI_DOUBLE, 0, task, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1", task);
    }
  }
}

static void probed(int rank, int size, int tasks, long work) {
  MPI_Comm farm;
  MPI_Comm_dup(MPI_COMM_WORLD, &farm);
  LOG("MPI_Comm_dup comm=world new_comm=farm");
  double local = 0, total = 0;
  if (rank == 0) {
    int next = 0, stopped = 0;
    double results[64];
    while (stopped < size - 1) {
      MPI_Status st;
      int count;
      MPI_Probe(MPI_ANY_SOURCE, kTagWork, farm, &st);
      MPI_Get_count(&st, MPI_DOUBLE, &count);
      LOG("MPI_Probe peer=%d tag=%d comm=farm any_source=1", st.MPI_SOURCE, kTagWork);
      MPI_Recv(results, count, MPI_DOUBLE, st.MPI_SOURCE, kTagWork, farm, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=%d tag=%d count=%d comm=farm", st.MPI_SOURCE, kTagWork, count);
      if (count > 0) local += results[0];
      int task = next < tasks ? next++ : -1;
      stopped += task < 0;
      MPI_Send(&task, 1, MPI_INT, st.MPI_SOURCE, kTagWork, farm);
      LOG("MPI_Send peer=%d tag=%d count=1 comm=farm", st.MPI_SOURCE, kTagWork);
    }
  } else {
    double results[64];
    int count = 1;
    memset(results, 0, sizeof results);
    for (;;) {
      int task;
      MPI_Send(results, count, MPI_DOUBLE, 0, kTagWork, farm);
      LOG("MPI_Send peer=0 tag=%d count=%d comm=farm", kTagWork, count);
      MPI_Recv(&task, 1, MPI_INT, 0, kTagWork, farm, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=0 tag=%d count=1 comm=farm", kTagWork);
      if (task < 0) break;
      results[0] = compute(task_size(task, work), task);
      count = 64;
    }
  }
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, farm);
  LOG("MPI_Allreduce count=1 comm=farm");
  MPI_Comm_free(&farm);
  LOG("MPI_Comm_free comm=farm");
}

static void chunks(int rank, int size, int tasks, long work) {
  static double data[512];
  if (rank == 0) {
    int next = 0, stopped = 0;
    while (stopped < size - 1) {
      double result;
      MPI_Status st;
      MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, kTagAsk, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=%d tag=%d count=1 any_source", st.MPI_SOURCE, kTagAsk);
      int header[2] = {next < tasks ? next : -1, next < tasks ? 64 + (next * 37) % 448 : 0};
      MPI_Send(header, 2, MPI_INT, st.MPI_SOURCE, kTagHeader, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=2", st.MPI_SOURCE, kTagHeader);
      if (header[0] < 0) {
        ++stopped;
        continue;
      }
      MPI_Send(data, header[1], MPI_DOUBLE, st.MPI_SOURCE, kTagData, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=%d", st.MPI_SOURCE, kTagData, header[1]);
      ++next;
    }
  } else {
    double result = 0;
    for (;;) {
      int header[2];
      MPI_Send(&result, 1, MPI_DOUBLE, 0, kTagAsk, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1", kTagAsk);
      MPI_Recv(header, 2, MPI_INT, 0, kTagHeader, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=0 tag=%d count=2", kTagHeader);
      if (header[0] < 0) break;
      MPI_Recv(data, header[1], MPI_DOUBLE, 0, kTagData, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=0 tag=%d count=%d", kTagData, header[1]);
      result = compute(task_size(header[0], work), header[0] + data[0]);
    }
  }
}

/* drain and poll: seeds, answers while tasks remain, then a stop to every worker. */
static void drained(int rank, int size, int tasks, long work, int poll) {
  if (rank == 0) {
    int next = 0, running = 0, w, polls = 0;
    double acc = 0;
    for (w = 1; w < size && next < tasks; ++w, ++next, ++running) {
      MPI_Send(&next, 1, MPI_INT, w, kTagWork, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=1", w, kTagWork);
    }
    while (running > 0) {
      double result;
      MPI_Status st;
      if (poll) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, kTagAsk, MPI_COMM_WORLD, &flag, &st);
        if (!flag) {
          LOG("MPI_Iprobe tag=%d any_source=1 flag=0", kTagAsk);
          acc = compute(work / 20, acc);
          ++polls;
          continue;
        }
        LOG("MPI_Iprobe peer=%d tag=%d any_source=1 flag=1", st.MPI_SOURCE, kTagAsk);
        MPI_Recv(&result, 1, MPI_DOUBLE, st.MPI_SOURCE, kTagAsk, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        LOG("MPI_Recv peer=%d tag=%d count=1", st.MPI_SOURCE, kTagAsk);
      } else {
        MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, kTagAsk, MPI_COMM_WORLD, &st);
        LOG("MPI_Recv peer=%d tag=%d count=1 any_source", st.MPI_SOURCE, kTagAsk);
      }
      acc += result * 1e-12;
      --running;
      if (next < tasks) {
        MPI_Send(&next, 1, MPI_INT, st.MPI_SOURCE, kTagWork, MPI_COMM_WORLD);
        LOG("MPI_Send peer=%d tag=%d count=1", st.MPI_SOURCE, kTagWork);
        ++next, ++running;
      }
    }
    for (w = 1; w < size; ++w) {
      int stop = -1;
      MPI_Send(&stop, 1, MPI_INT, w, kTagWork, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=1", w, kTagWork);
    }
    if (acc < 0) printf("farm2: %d polls\n", polls);  /* keeps the master's work */
  } else {
    for (;;) {
      int task;
      double result;
      MPI_Recv(&task, 1, MPI_INT, 0, kTagWork, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=0 tag=%d count=1", kTagWork);
      if (task < 0) break;
      result = compute(task_size(task, work), task);
      MPI_Send(&result, 1, MPI_DOUBLE, 0, kTagAsk, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1", kTagAsk);
    }
  }
}

/* Sleep between polls that found nothing: 20 us, doubling up to 1 ms. */
static void backoff(int* polls) {
  long us = 20L << (*polls < 6 ? *polls : 6);
  struct timespec left = {0, (us < 1000 ? us : 1000) * 1000L};
  while (nanosleep(&left, &left) != 0) {
  }
  ++*polls;
}

/* Polls until a message matching (source, tag) is there, then takes it with MPI_Mprobe and MPI_Mrecv. */
static void take(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* st) {
  int flag = 0, polls = 0;
  MPI_Message msg;
  for (;;) {
    MPI_Iprobe(source, tag, comm, &flag, st);
    if (flag) break;
    LOG("MPI_Iprobe tag=%d any_source=1 flag=0 comm=farm", tag);
    backoff(&polls);
  }
  LOG("MPI_Iprobe peer=%d tag=%d any_source=1 flag=1 comm=farm", st->MPI_SOURCE, tag);
  MPI_Mprobe(source, tag, comm, &msg, st);
  LOG("MPI_Mprobe peer=%d tag=%d comm=farm", st->MPI_SOURCE, st->MPI_TAG);
  MPI_Mrecv(buf, count, type, &msg, st);
  LOG("MPI_Mrecv peer=%d tag=%d count=%d comm=farm", st->MPI_SOURCE, st->MPI_TAG, count);
}

static void mprobed(int rank, int size, int tasks, long work) {
  MPI_Comm farm;
  MPI_Comm_dup(MPI_COMM_WORLD, &farm);
  LOG("MPI_Comm_dup comm=farm");
  if (rank == 0) {
    MPI_Request* sent = malloc(sizeof(MPI_Request) * (size_t)size);
    int* task = malloc(sizeof(int) * (size_t)size);
    int next = 0, running = 0, w;
    double acc = 0;
    for (w = 1; w < size && next < tasks; ++w, ++next, ++running) {
      task[w] = next;
      MPI_Issend(&task[w], 1, MPI_INT, w, kTagWork, farm, &sent[w]);
      LOG("MPI_Issend peer=%d tag=%d count=1 comm=farm", w, kTagWork);
    }
    while (running > 0) {
      double result;
      MPI_Status st;
      take(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, kTagAsk, farm, &st);
      w = st.MPI_SOURCE;
      MPI_Request_free(&sent[w]);  /* the worker had its task: it sent the result */
      LOG("MPI_Request_free");
      acc += result * 1e-12;
      --running;
      if (next < tasks) {
        task[w] = next++;
        ++running;
        MPI_Issend(&task[w], 1, MPI_INT, w, kTagWork, farm, &sent[w]);
        LOG("MPI_Issend peer=%d tag=%d count=1 comm=farm", w, kTagWork);
      }
    }
    for (w = 1; w < size; ++w) {
      task[w] = -1;
      MPI_Issend(&task[w], 1, MPI_INT, w, kTagWork, farm, &sent[w]);
      LOG("MPI_Issend peer=%d tag=%d count=1 comm=farm", w, kTagWork);
    }
    MPI_Waitall(size - 1, sent + 1, MPI_STATUSES_IGNORE);
    LOG("MPI_Waitall");
    if (acc < 0) printf("farm2: %g\n", acc);
    free(sent);
    free(task);
  } else {
    for (;;) {
      int task, done = 0, polls = 0;
      double result;
      MPI_Status st;
      MPI_Request req;
      take(&task, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, farm, &st);
      if (task < 0) break;
      result = compute(task_size(task, work), task);
      MPI_Issend(&result, 1, MPI_DOUBLE, 0, kTagAsk, farm, &req);
      LOG("MPI_Issend peer=0 tag=%d count=1 comm=farm", kTagAsk);
      for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        LOG("MPI_Test");
        if (done) break;
        backoff(&polls);
      }
    }
  }
  MPI_Comm_free(&farm);
  LOG("MPI_Comm_free comm=farm");
}

static void prefetched(int rank, int size, int tasks, long work, int depth) {
  if (rank == 0) {
    int next = 0, running = 0, d, w;
    char* stopped = calloc((size_t)size, 1);
    double acc = 0, result;
    for (d = 0; d < depth; ++d)
      for (w = 1; w < size && next < tasks; ++w, ++next, ++running) {
        MPI_Send(&next, 1, MPI_INT, w, kTagWork, MPI_COMM_WORLD);
        LOG("MPI_Send peer=%d tag=%d count=1", w, kTagWork);
      }
    while (running > 0) {
      MPI_Status st;
      MPI_Recv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, kTagAsk, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=%d tag=%d count=1 any_source", st.MPI_SOURCE, kTagAsk);
      acc += result * 1e-12;
      --running;
      w = st.MPI_SOURCE;
      if (next >= tasks && stopped[w]) continue;
      int task = next < tasks ? next++ : -1;
      running += task >= 0;
      stopped[w] = task < 0;
      MPI_Send(&task, 1, MPI_INT, w, kTagWork, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=1", w, kTagWork);
    }
    for (w = 1; w < size; ++w) { /* those that had no task */
      int stop = -1;
      if (stopped[w]) continue;
      MPI_Send(&stop, 1, MPI_INT, w, kTagWork, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=1", w, kTagWork);
    }
    if (acc < 0) printf("farm2: %g\n", acc);
    free(stopped);
  } else {
    int task[2], cur = 0;
    MPI_Request req;
    MPI_Irecv(&task[cur], 1, MPI_INT, 0, kTagWork, MPI_COMM_WORLD, &req);
    LOG("MPI_Irecv peer=0 tag=%d count=1", kTagWork);
    for (;;) {
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      LOG("MPI_Wait");
      if (task[cur] < 0) break;
      MPI_Irecv(&task[1 - cur], 1, MPI_INT, 0, kTagWork, MPI_COMM_WORLD, &req);
      LOG("MPI_Irecv peer=0 tag=%d count=1", kTagWork);
      double result = compute(task_size(task[cur], work), task[cur]);
      MPI_Send(&result, 1, MPI_DOUBLE, 0, kTagAsk, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1", kTagAsk);
      cur = 1 - cur;
    }
  }
}

/* MPI_Mprobe and MPI_Mrecv of one message of `count` ints or doubles, as mpi4py's comm.recv takes it. */
static void mrecv(void* buf, int count, MPI_Datatype type, int source, MPI_Status* st) {
  MPI_Message msg;
  MPI_Mprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, st);
  LOG("MPI_Mprobe peer=%d tag=%d%s", st->MPI_SOURCE, st->MPI_TAG, source == MPI_ANY_SOURCE ? " any_source=1" : "");
  MPI_Mrecv(buf, count, type, &msg, st);
  LOG("MPI_Mrecv peer=%d tag=%d count=%d", st->MPI_SOURCE, st->MPI_TAG, count);
}

static void mrecvd(int rank, int size, int tasks, long work) {
  MPI_Status st;
  if (rank == 0) {
    int next = 0, running = 0, w;
    double acc = 0, result;
    for (w = 1; w < size; ++w, ++running) { /* a task each, or a stop where there is none */
      int tag = next < tasks ? kTagWork : kTagStop;
      MPI_Send(&next, 1, MPI_INT, w, tag, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=1", w, tag);
      if (tag == kTagWork) ++next;
      else --running;
    }
    while (running > 0) {
      mrecv(&result, 1, MPI_DOUBLE, MPI_ANY_SOURCE, &st);
      acc += result * 1e-12;
      int tag = next < tasks ? kTagWork : kTagStop;
      MPI_Send(&next, 1, MPI_INT, st.MPI_SOURCE, tag, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=1", st.MPI_SOURCE, tag);
      if (tag == kTagWork) ++next;
      else --running;
    }
    if (acc < 0) printf("farm2: %g\n", acc);
  } else {
    for (;;) {
      int task;
      mrecv(&task, 1, MPI_INT, 0, &st);
      if (st.MPI_TAG == kTagStop) break;
      double result = compute(task_size(task, work), task);
      MPI_Send(&result, 1, MPI_DOUBLE, 0, kTagAsk, MPI_COMM_WORLD);
      LOG("MPI_Send peer=0 tag=%d count=1", kTagAsk);
    }
  }
}

int main(int argc, char** argv) {
  int rank, size;
  int tasks = argc > 1 ? atoi(argv[1]) : 150;
  long work = argc > 2 ? atol(argv[2]) : 20000;
  const char* mode = argc > 3 ? argv[3] : "seeded";
  int depth = argc > 4 ? atoi(argv[4]) : 2;
  if (tasks < 1 || work < 0 || depth < 1 ||
      (strcmp(mode, "seeded") != 0 && strcmp(mode, "probe") != 0 && strcmp(mode, "chunks") != 0 &&
       strcmp(mode, "drain") != 0 && strcmp(mode, "poll") != 0 && strcmp(mode, "mprobe") != 0 &&
       strcmp(mode, "mrecv") != 0 && strcmp(mode, "prefetch") != 0)) {
    fprintf(stderr, "usage: farm2 [TASKS] [WORK] [seeded|probe|chunks|drain|poll|mprobe|mrecv|prefetch] [DEPTH]\n");
    return 2;
  }
  app_start(&argc, &argv, &rank, &size);
  if (strcmp(mode, "seeded") == 0) seeded(rank, size, tasks, work);
  else if (strcmp(mode, "probe") == 0) probed(rank, size, tasks, work);
  else if (strcmp(mode, "chunks") == 0) chunks(rank, size, tasks, work);
  else if (strcmp(mode, "mprobe") == 0) mprobed(rank, size, tasks, work);
  else if (strcmp(mode, "mrecv") == 0) mrecvd(rank, size, tasks, work);
  else if (strcmp(mode, "prefetch") == 0) prefetched(rank, size, tasks, work, depth);
  else drained(rank, size, tasks, work, strcmp(mode, "poll") == 0);
  if (rank == 0) printf("farm2 %s: %d tasks done\n", mode, tasks);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
