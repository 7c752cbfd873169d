/* Dynamic master-worker farms (docs/generate.md, "Master-worker farms").
 * skelgen generate pastes this file into a skeleton whose application
 * handed out tasks to whichever worker asked (an MPI_ANY_SOURCE receive
 * answered to its source): the skeleton does the same, so that its workers
 * share the tasks as fast as each of them is on the machine it runs on.
 *
 * The master first sends the workers it seeded in the trace a task
 * unasked, then answers each request with the next kept task (its number in
 * the first 8 bytes) or, when none is left, a stop (-1); a worker computes
 * the task's traced work, sleeps the time the application's worker slept
 * in it (blocked time, if any), and asks again, sending the seconds it
 * spent computing. The application's other tasks are left out (every K-th is kept); the
 * master predicts their time by replaying the whole farm's hand-out, and
 * the kept one's, with what it measured here: each worker's seconds per
 * kernel unit, its round trip (request to answer, less the task), the
 * tasks' sleeps as traced, the
 * master's time per answer, and when each worker first asked. The
 * difference is the left-out tasks' time (skel_farm_extra, added to every
 * rank's prediction). Messages are as long as traced, at least 8 bytes.
 * With SKELGEN_FARM_REPORT set, the master prints one line per farm:
 *   SKELGEN_FARM farm=<k> tasks=<N> kept=<n> measured_s=<s> left_out_s=<s> replayed_all_s=<s>
 *                replayed_kept_s=<s> done=<worker>:<tasks>,...
 * (workers by their rank in the farm's communicator). */

struct skel_farm {
  int index;                                /* the farm's number in the skeleton */
  int master;                               /* its rank in the farm's communicator */
  int workers;                              /* how many */
  const int* worker;                        /* their ranks in the communicator */
  int seeds;                                /* workers sent a first task unasked */
  const int* seed;                          /* their ranks in the communicator, in order */
  const unsigned char* seeded;              /* [world]: whether this rank is one */
  int ask_tag;                              /* the master's receives' (MPI_ANY_TAG or a tag) */
  int request_tag, task_tag, stop_tag;      /* what the workers and the master send with */
  int recv_tag;                             /* the workers' receives' (MPI_ANY_TAG or a tag) */
  int first_ask_bytes, ask_bytes, task_bytes, stop_bytes;
  long tasks;                               /* in the application */
  long kept;                                /* in the skeleton */
  const long* kept_task;                    /* [kept]: the application's task numbers, ascending */
  const double* task_units;                 /* [tasks]: each task's kernel units */
  const double* task_sleep;                 /* [tasks]: the seconds its worker slept in it */
  double master_recv_units, master_answer_units; /* the master's computation per request */
  const double* entry_units;                /* [world]: computation before the farm */
  const double* wait_units;                 /* [world]: a worker's between request and answer */
  int call_recv, call_answer, call_ask, call_wait; /* in skel_calls[] */
};

#define SKEL_FARM_MIN_BYTES 8
static inline int skel_farm_bytes(int traced) { return traced > SKEL_FARM_MIN_BYTES ? traced : SKEL_FARM_MIN_BYTES; }

/* What the master measured of one worker. */
struct skel_farm_worker_stat {
  long current;     /* the task it has, -1: none */
  double sent_at;   /* when that task was sent */
  double first_at;  /* its first request's arrival, from the farm's start */
  double busy_s, units, trip_s;
  long done;
};

/* A binary heap of workers by the time they next ask (the replay). */
static inline void skel_farm_sift(double* at, int* who, int n, int i)
{
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && (at[l] < at[m] || (at[l] == at[m] && who[l] < who[m]))) m = l;
    if (r < n && (at[r] < at[m] || (at[r] == at[m] && who[r] < who[m]))) m = r;
    if (m == i) return;
    {
      double t = at[i];
      int w = who[i];
      at[i] = at[m], who[i] = who[m], at[m] = t, who[m] = w;
    }
    i = m;
  }
}

/* The farm's duration with `n` tasks (kept: the kept ones, else all), the
 * master answering the earliest request first, g seconds per answer. */
static double skel_farm_replay(const struct skel_farm* f, int kept, long n, const double* speed, const double* trip,
                               const double* first, double g, double* at, int* who)
{
  double master = 0;
  long next = 0;
  int w, live = f->workers;
  for (w = 0; w < live; ++w) at[w] = first[w], who[w] = w;
  for (w = live / 2; w >= 0; --w) skel_farm_sift(at, who, live, w);
  while (live > 0) {
    double start = at[0] > master ? at[0] : master;
    int k = who[0];
    master = start + g;
    if (next < n) {
      long task = kept ? f->kept_task[next] : next;
      ++next;
      at[0] = master + trip[k] + speed[k] * f->task_units[task] + f->task_sleep[task];
    } else { /* stopped: out of the heap */
      --live;
      at[0] = at[live], who[0] = who[live];
    }
    skel_farm_sift(at, who, live, 0);
  }
  return master;
}

/* The replayed farm's duration with all tasks and with the kept ones (SKELGEN_FARM_REPORT). */
static double skel_farm_replayed[2];

/* The left-out tasks' time: the whole farm replayed less the kept one. */
static double skel_farm_left_out(const struct skel_farm* f, const struct skel_farm_worker_stat* st, double g)
{
  int W = f->workers, w, known = 0, known_speed = 0;
  double *speed, *trip, *first, *at, mean_speed = 0, mean_trip = 0, whole, kept;
  int* who;
  if (f->kept >= f->tasks) return 0;
  speed = (double*)skel_alloc(sizeof(double) * (size_t)W * 4);
  trip = speed + W, first = trip + W, at = first + W;
  who = (int*)skel_alloc(sizeof(int) * (size_t)W);
  for (w = 0; w < W; ++w) {
    const struct skel_farm_worker_stat* s = &st[f->worker[w]];
    first[w] = s->first_at;
    speed[w] = trip[w] = -1;
    if (s->done > 0) trip[w] = s->trip_s / (double)s->done, mean_trip += trip[w], ++known;
    if (s->units > 0) speed[w] = s->busy_s / s->units, mean_speed += speed[w], ++known_speed;
  }
  if (known > 0) mean_trip /= known;
  if (known_speed > 0) mean_speed /= known_speed;
  for (w = 0; w < W; ++w) { /* a worker that did no kept task: as the others */
    if (speed[w] < 0) speed[w] = mean_speed;
    if (trip[w] < 0) trip[w] = mean_trip;
  }
  whole = skel_farm_replay(f, 0, f->tasks, speed, trip, first, g, at, who);
  kept = skel_farm_replay(f, 1, f->kept, speed, trip, first, g, at, who);
  skel_farm_replayed[0] = whole, skel_farm_replayed[1] = kept;
  free(speed);
  free(who);
  return whole > kept ? whole - kept : 0;
}

/* The master's answer to `to`: the next kept task, or a stop when none is left. */
static void skel_farm_answer(const struct skel_farm* f, MPI_Comm comm, int to, struct skel_farm_worker_stat* s,
                             long* next, int* stopped)
{
  long task = -1;
  skel_compute(f->master_answer_units);
  skel_enter(f->call_answer);
  if (*next < f->kept) task = f->kept_task[(*next)++];
  memcpy(skel_sbuf, &task, sizeof task);
  if (task >= 0)
    MPI_Send(skel_sbuf, skel_farm_bytes(f->task_bytes), MPI_BYTE, to, f->task_tag, comm);
  else
    MPI_Send(skel_sbuf, skel_farm_bytes(f->stop_bytes), MPI_BYTE, to, f->stop_tag, comm), ++*stopped;
  s->current = task;
  s->sent_at = MPI_Wtime();
}

static void skel_farm_master(const struct skel_farm* f, MPI_Comm comm)
{
  struct skel_farm_worker_stat* st;
  int size, stopped = 0, capacity, i;
  long next = 0, answers = 0;
  double t0, waited = 0;
  PMPI_Comm_size(comm, &size);
  st = (struct skel_farm_worker_stat*)skel_alloc(sizeof *st * (size_t)size);
  memset(st, 0, sizeof *st * (size_t)size);
  for (i = 0; i < size; ++i) st[i].current = -1, st[i].first_at = -1;
  capacity = skel_farm_bytes(f->first_ask_bytes > f->ask_bytes ? f->first_ask_bytes : f->ask_bytes);
  t0 = MPI_Wtime();
  for (i = 0; i < f->seeds; ++i, ++answers) {
    if (f->seed[i] < 0 || f->seed[i] >= size) skel_die("a farm worker outside the communicator");
    st[f->seed[i]].first_at = 0;
    skel_farm_answer(f, comm, f->seed[i], &st[f->seed[i]], &next, &stopped);
  }
  while (stopped < f->workers) {
    MPI_Status status;
    double before, now, spent;
    struct skel_farm_worker_stat* s;
    if (answers > 0) skel_compute(f->master_recv_units);
    skel_enter(f->call_recv);
    before = MPI_Wtime();
    MPI_Recv(skel_rbuf, capacity, MPI_BYTE, MPI_ANY_SOURCE, f->ask_tag, comm, &status);
    now = MPI_Wtime();
    waited += now - before;
    if (status.MPI_SOURCE < 0 || status.MPI_SOURCE >= size) skel_die("a farm request from outside the communicator");
    s = &st[status.MPI_SOURCE];
    if (s->current >= 0) { /* the worker's last task done: what it took there */
      memcpy(&spent, skel_rbuf, sizeof spent);
      s->busy_s += spent, s->units += f->task_units[s->current], ++s->done;
      s->trip_s += (now - s->sent_at) - spent - f->task_sleep[s->current];
    } else if (s->first_at < 0) {
      s->first_at = now - t0;
    }
    skel_farm_answer(f, comm, status.MPI_SOURCE, s, &next, &stopped);
    ++answers;
  }
  {
    double measured = MPI_Wtime() - t0, left_out = skel_farm_left_out(f, st, (measured - waited) / (double)answers);
    skel_farm_extra += left_out;
    if (getenv("SKELGEN_FARM_REPORT")) { /* how the tasks went: docs/generate.md */
      printf("SKELGEN_FARM farm=%d tasks=%ld kept=%ld measured_s=%.6f left_out_s=%.6f replayed_all_s=%.6f "
             "replayed_kept_s=%.6f done=",
             f->index, f->tasks, f->kept, measured, left_out, skel_farm_replayed[0], skel_farm_replayed[1]);
      for (i = 0; i < f->workers; ++i) printf("%s%d:%ld", i ? "," : "", f->worker[i], st[f->worker[i]].done);
      printf("\n");
      fflush(stdout);
    }
  }
  free(st);
}

static void skel_farm_worker(const struct skel_farm* f, MPI_Comm comm)
{
  int first = 1, asked = !f->seeded[skel_rank];
  int capacity = skel_farm_bytes(f->task_bytes > f->stop_bytes ? f->task_bytes : f->stop_bytes);
  double spent = 0;
  for (;; asked = 1) {
    MPI_Status status;
    long task;
    double t;
    if (asked) {
      memcpy(skel_sbuf, &spent, sizeof spent);
      skel_enter(f->call_ask);
      MPI_Send(skel_sbuf, skel_farm_bytes(first ? f->first_ask_bytes : f->ask_bytes), MPI_BYTE, f->master,
               f->request_tag, comm);
      first = 0;
      skel_compute(f->wait_units[skel_rank]);
    }
    skel_enter(f->call_wait);
    MPI_Recv(skel_rbuf, capacity, MPI_BYTE, f->master, f->recv_tag, comm, &status);
    memcpy(&task, skel_rbuf, sizeof task);
    if (task < 0 || task >= f->tasks) break;
    t = MPI_Wtime();
    skel_compute(f->task_units[task]);
    spent = MPI_Wtime() - t;
    skel_sleep(f->task_sleep[task]);
  }
}

/* The farm on one rank: the master's part, a worker's, or nothing. */
static void skel_farm_run(const struct skel_farm* f, MPI_Comm comm, int master_here)
{
  skel_compute(f->entry_units[skel_rank]);
  if (master_here) skel_farm_master(f, comm);
  else skel_farm_worker(f, comm);
}
