/* Dynamic master-worker farms (docs/generate.md, "Master-worker farms").
 * skelgen generate pastes this file into a skeleton whose application
 * handed out tasks to whichever worker asked (an MPI_ANY_SOURCE receive
 * answered to its source): the skeleton does the same, so that its workers
 * share the tasks as fast as each of them is on the machine it runs on.
 *
 * The master first sends the workers it seeded in the trace a task
 * unasked (or several: the tasks each then has in flight), then answers
 * each request with the next kept task (its number in the first 8 bytes)
 * or, when none is left, a stop (-1), once (a worker with tasks still in
 * flight sends their results after it, unanswered); a worker computes
 * the task's traced work, sleeps the time the application's worker slept
 * in it (blocked time, if any), and asks again, sending the seconds it
 * spent computing. The application's other tasks are left out (every K-th is kept); the
 * master predicts their time by replaying the whole farm's hand-out, and
 * the kept one's, with what it measured here: each worker's seconds per
 * kernel unit, its round trip (request to answer, less the task), the
 * tasks' sleeps as traced, the
 * master's time per answer, and when each worker first asked. The whole
 * replay, scaled by how the kept one's compares with the kept farm as
 * measured, less that measured time, is the left-out tasks' time
 * (skel_farm_extra, added to every rank's prediction). Messages are as
 * long as traced, at least 8 bytes.
 * The calls are of the application's kind: the master takes requests with
 * MPI_Recv from MPI_ANY_SOURCE, with an MPI_Irecv from MPI_ANY_SOURCE and
 * MPI_Wait each, with one MPI_Irecv per worker and MPI_Waitany (a
 * worker's re-posted after each task; any still posted at the end are
 * cancelled and completed), or by polling: MPI_Iprobe from MPI_ANY_SOURCE,
 * computing the application's slice after each that finds nothing, then
 * MPI_Recv from the rank found (where the application computed between
 * MPI_Test or MPI_Testany calls on its receives, so does the skeleton, in
 * place of MPI_Wait and MPI_Waitany); answers and requests are sent with MPI_Send or
 * MPI_Isend and MPI_Wait, and a worker receives with MPI_Recv or MPI_Irecv
 * and MPI_Wait.
 * With SKELGEN_FARM_REPORT set, the master prints one line per farm:
 *   SKELGEN_FARM farm=<k> tasks=<N> kept=<n> measured_s=<s> left_out_s=<s> replayed_all_s=<s>
 *                replayed_kept_s=<s> done=<worker>:<tasks>,...
 * (workers by their rank in the farm's communicator). */

/* How the master takes requests (farm.h, FarmRecv). */
enum skel_farm_recv { SKEL_FARM_RECV, SKEL_FARM_IRECV_ANY, SKEL_FARM_IRECV_EACH, SKEL_FARM_POLL };

struct skel_farm {
  int index;                                /* the farm's number in the skeleton */
  int master;                               /* its rank in the farm's communicator */
  int workers;                              /* how many */
  const int* worker;                        /* their ranks in the communicator */
  int seeds;                                /* tasks sent unasked */
  const int* seed;                          /* to whom: ranks in the communicator, in order (a worker as often as
                                               it has tasks in flight) */
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
  enum skel_farm_recv recv;                 /* how the master takes requests */
  int answer_isend, ask_isend;              /* answers, requests: MPI_Isend and MPI_Wait (else MPI_Send) */
  int wait_irecv;                           /* a worker's receives: MPI_Irecv and MPI_Wait (else MPI_Recv) */
  double poll_units;                        /* the master's computation after a poll (MPI_Iprobe, MPI_Test*) that found nothing */
  double poll_sleep;                        /* and the seconds it slept after it */
  int wait_polls;                           /* a worker polls for its answer: MPI_Iprobe, then the receive */
  const double* wait_poll_units;            /* [world]: a worker's computation after a poll in vain */
  const double* wait_poll_sleep;            /* [wait_poll_sleeps]: the seconds it slept after its k-th in a wait */
  int wait_poll_sleeps;                     /* (the last entry: the k-th and later) */
};

#define SKEL_FARM_MIN_BYTES 8
static inline int skel_farm_bytes(int traced) { return traced > SKEL_FARM_MIN_BYTES ? traced : SKEL_FARM_MIN_BYTES; }

/* Tasks a worker may have in flight at most (farm.cpp, kMaxInFlight): the seeds it was sent unasked. */
#define SKEL_FARM_MAX_IN_FLIGHT 16

/* What the master measured of one worker. */
struct skel_farm_worker_stat {
  long task[SKEL_FARM_MAX_IN_FLIGHT];    /* the tasks it has, oldest first from `head` (a ring) */
  double sent_at[SKEL_FARM_MAX_IN_FLIGHT]; /* when each was sent */
  int head, in_flight;
  int stopped;      /* sent its stop */
  double asked_at;  /* its last request's arrival */
  double first_at;  /* its first request's arrival, from the farm's start */
  double busy_s, units, trip_s;
  long done;
};

/* Tasks in flight per worker of the farm's seeds (at least 1: a worker that asks first). */
static int skel_farm_depth(const struct skel_farm* f, int w)
{
  int i, n = 0;
  for (i = 0; i < f->seeds; ++i) n += f->seed[i] == f->worker[w];
  return n > 0 ? n : 1;
}

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

/* The replay's workers: when each is done with the tasks it has, whether it was stopped. */
struct skel_farm_replay_state {
  double* free_at;
  unsigned char* stopped;
};

/* The farm's duration with `n` tasks (kept: the kept ones, else all), the
 * master answering the earliest request first, g seconds per answer. A
 * worker asks first (at `first`) as often as it has tasks in flight (its
 * seeds), then once per task done; it computes its tasks in the order sent,
 * each once it has arrived (a trip after its answer) and the one before it
 * is done. The requests after a worker's stop (its tasks still in flight)
 * are taken, not answered. */
static double skel_farm_replay(const struct skel_farm* f, int kept, long n, const double* speed, const double* trip,
                               const double* first, double g, double* at, int* who, struct skel_farm_replay_state rs)
{
  double master = 0;
  long next = 0;
  int w, d, live = 0;
  for (w = 0; w < f->workers; ++w) {
    rs.free_at[w] = first[w], rs.stopped[w] = 0;
    for (d = skel_farm_depth(f, w); d > 0; --d) at[live] = first[w], who[live++] = w;
  }
  for (w = live / 2; w >= 0; --w) skel_farm_sift(at, who, live, w);
  while (live > 0) {
    double start = at[0] > master ? at[0] : master;
    int k = who[0];
    if (rs.stopped[k]) {
      master = start;
    } else {
      master = start + g;
      rs.stopped[k] = next >= n;
    }
    if (!rs.stopped[k]) {
      long task = kept ? f->kept_task[next] : next;
      double arrives = master + trip[k];
      ++next;
      rs.free_at[k] = (arrives > rs.free_at[k] ? arrives : rs.free_at[k]) + speed[k] * f->task_units[task] +
                      f->task_sleep[task];
      at[0] = rs.free_at[k];
    } else { /* out of the heap */
      --live;
      at[0] = at[live], who[0] = who[live];
    }
    skel_farm_sift(at, who, live, 0);
  }
  return master;
}

/* The replayed farm's duration with all tasks and with the kept ones (SKELGEN_FARM_REPORT). */
static double skel_farm_replayed[2];

/* The left-out tasks' time: the whole farm replayed, less the kept one as
 * measured (skel_farm_scaled_left_out, skel_estimate.h). The replay is a
 * model (each worker's speed and round trip as measured, no contention
 * between them); where it misses the kept farm it ran (ranks sharing
 * cores: a master that polls takes a core's share from the workers it
 * waits for), it misses the whole farm by the same factor. A "Using MPI"
 * matrix-vector farm on 4 Open MPI ranks over 2 cores:
 * replayed kept 0.048-0.050 s for 0.044-0.046 s measured, K = 10 predicted
 * 0.464-0.491 s before, 0.425-0.454 s so, for an application of 0.38-0.41 s
 * (K = 1: 0.42-0.43 s). */
static double skel_farm_left_out(const struct skel_farm* f, const struct skel_farm_worker_stat* st, double g,
                                 double measured)
{
  int W = f->workers, w, known = 0, known_speed = 0;
  double *speed, *trip, *first, *at, mean_speed = 0, mean_trip = 0, whole, kept;
  int* who;
  struct skel_farm_replay_state rs;
  const size_t heap = (size_t)W * SKEL_FARM_MAX_IN_FLIGHT;
  if (f->kept >= f->tasks) return 0;
  speed = (double*)skel_alloc(sizeof(double) * ((size_t)W * 4 + heap));
  trip = speed + W, first = trip + W, rs.free_at = first + W, at = rs.free_at + W;
  who = (int*)skel_alloc(sizeof(int) * heap);
  rs.stopped = (unsigned char*)skel_alloc((size_t)W);
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
  whole = skel_farm_replay(f, 0, f->tasks, speed, trip, first, g, at, who, rs);
  kept = skel_farm_replay(f, 1, f->kept, speed, trip, first, g, at, who, rs);
  skel_farm_replayed[0] = whole, skel_farm_replayed[1] = kept;
  free(speed);
  free(who);
  free(rs.stopped);
  return skel_farm_scaled_left_out(whole, kept, measured);
}

/* A message sent with MPI_Send, or MPI_Isend and MPI_Wait. */
static void skel_farm_send(int nonblocking, const void* buf, int bytes, int to, int tag, MPI_Comm comm)
{
  MPI_Request r;
  if (!nonblocking) {
    MPI_Send(buf, bytes, MPI_BYTE, to, tag, comm);
    return;
  }
  MPI_Isend(buf, bytes, MPI_BYTE, to, tag, comm, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
}

/* A message received with MPI_Recv, or MPI_Irecv and MPI_Wait. */
static void skel_farm_recv(int nonblocking, void* buf, int capacity, int from, int tag, MPI_Comm comm,
                           MPI_Status* status)
{
  MPI_Request r;
  if (!nonblocking) {
    MPI_Recv(buf, capacity, MPI_BYTE, from, tag, comm, status);
    return;
  }
  MPI_Irecv(buf, capacity, MPI_BYTE, from, tag, comm, &r);
  MPI_Wait(&r, status);
}

/* The master's receives of requests: one buffer per worker, and with
 * SKEL_FARM_IRECV_EACH one MPI_Irecv per worker (MPI_REQUEST_NULL when
 * not posted). */
struct skel_farm_inbox {
  MPI_Request* posted;
  unsigned char* buf;
  int capacity;
};

static void skel_farm_post(const struct skel_farm* f, MPI_Comm comm, struct skel_farm_inbox* in, int w)
{
  MPI_Irecv(in->buf + (size_t)w * (size_t)in->capacity, in->capacity, MPI_BYTE, f->worker[w], f->ask_tag, comm,
            &in->posted[w]);
}

static void skel_farm_open(const struct skel_farm* f, MPI_Comm comm, struct skel_farm_inbox* in, int capacity)
{
  int w;
  in->capacity = capacity;
  in->buf = (unsigned char*)skel_alloc((size_t)capacity * (size_t)(f->workers + 1));
  in->posted = (MPI_Request*)skel_alloc(sizeof(MPI_Request) * (size_t)f->workers);
  for (w = 0; w < f->workers; ++w) {
    in->posted[w] = MPI_REQUEST_NULL;
    if (f->recv == SKEL_FARM_IRECV_EACH) skel_farm_post(f, comm, in, w);
  }
}

/* Whether the master polled (computed or slept after polls that found nothing), else waited. */
static inline int skel_farm_master_polls(const struct skel_farm* f) { return f->poll_units > 0 || f->poll_sleep > 0; }

/* What the master did after a poll that found nothing: computed, slept. */
static inline void skel_farm_after_poll(const struct skel_farm* f)
{
  skel_compute(f->poll_units);
  if (f->poll_sleep > 0) skel_sleep(f->poll_sleep);
}

/* The next request: its data (the first 8 bytes: the seconds its sender spent on its last task). */
static const unsigned char* skel_farm_take(const struct skel_farm* f, MPI_Comm comm, struct skel_farm_inbox* in,
                                           MPI_Status* status)
{
  int w;
  unsigned char* any = in->buf + (size_t)f->workers * (size_t)in->capacity;
  if (f->recv == SKEL_FARM_POLL) {
    int flag = 0, source, tag;
    for (;;) {
      MPI_Iprobe(MPI_ANY_SOURCE, f->ask_tag, comm, &flag, status);
      if (flag) break;
      skel_farm_after_poll(f);
    }
    source = status->MPI_SOURCE, tag = status->MPI_TAG;
    MPI_Recv(any, in->capacity, MPI_BYTE, source, tag, comm, status);
    return any;
  }
  if (f->recv == SKEL_FARM_IRECV_ANY && skel_farm_master_polls(f)) { /* MPI_Test polling */
    MPI_Request r;
    int flag = 0;
    MPI_Irecv(any, in->capacity, MPI_BYTE, MPI_ANY_SOURCE, f->ask_tag, comm, &r);
    for (MPI_Test(&r, &flag, status); !flag; MPI_Test(&r, &flag, status)) skel_farm_after_poll(f);
    return any;
  }
  if (f->recv != SKEL_FARM_IRECV_EACH) {
    skel_farm_recv(f->recv == SKEL_FARM_IRECV_ANY, any, in->capacity, MPI_ANY_SOURCE, f->ask_tag, comm, status);
    return any;
  }
  if (skel_farm_master_polls(f)) { /* MPI_Testany polling */
    int flag = 0;
    for (MPI_Testany(f->workers, in->posted, &w, &flag, status); !flag;
         MPI_Testany(f->workers, in->posted, &w, &flag, status))
      skel_farm_after_poll(f);
  } else {
    MPI_Waitany(f->workers, in->posted, &w, status);
  }
  if (w == MPI_UNDEFINED) skel_die("a farm's master waits for requests none of its workers can send");
  return in->buf + (size_t)w * (size_t)in->capacity;
}

/* After answering the worker at rank `to`: its receive posted again, unless it was stopped. */
static void skel_farm_repost(const struct skel_farm* f, MPI_Comm comm, struct skel_farm_inbox* in, int to, int stopped)
{
  int w;
  if (f->recv != SKEL_FARM_IRECV_EACH || stopped) return;
  for (w = 0; w < f->workers; ++w)
    if (f->worker[w] == to) skel_farm_post(f, comm, in, w);
}

/* The receives still posted at the end (none where every worker was stopped), cancelled and completed. */
static void skel_farm_close(const struct skel_farm* f, struct skel_farm_inbox* in)
{
  int w;
  for (w = 0; w < f->workers; ++w)
    if (in->posted[w] != MPI_REQUEST_NULL) {
      MPI_Cancel(&in->posted[w]);
      MPI_Wait(&in->posted[w], MPI_STATUS_IGNORE);
    }
  free(in->posted);
  free(in->buf);
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
    skel_farm_send(f->answer_isend, skel_sbuf, skel_farm_bytes(f->task_bytes), to, f->task_tag, comm);
  else
    skel_farm_send(f->answer_isend, skel_sbuf, skel_farm_bytes(f->stop_bytes), to, f->stop_tag, comm), ++*stopped;
  if (task < 0) {
    s->stopped = 1;
    return;
  }
  if (s->in_flight == SKEL_FARM_MAX_IN_FLIGHT) skel_die("a farm worker with more tasks in flight than the trace's");
  {
    const int at = (s->head + s->in_flight++) % SKEL_FARM_MAX_IN_FLIGHT;
    s->task[at] = task;
    s->sent_at[at] = MPI_Wtime();
  }
}

/* A request from worker s, arrived `now`: its oldest task done, `spent`
 * seconds computing it (its data's first 8 bytes). The trip is the time
 * from the task's start (its sending, or the worker's request before, if
 * later: it was computing the task before) to the result, less the task. */
static void skel_farm_task_done(const struct skel_farm* f, struct skel_farm_worker_stat* s, const unsigned char* data,
                                double now)
{
  double spent, start = s->sent_at[s->head];
  const long task = s->task[s->head];
  memcpy(&spent, data, sizeof spent);
  if (s->asked_at > start) start = s->asked_at;
  s->busy_s += spent, s->units += f->task_units[task], ++s->done;
  s->trip_s += (now - start) - spent - f->task_sleep[task];
  s->head = (s->head + 1) % SKEL_FARM_MAX_IN_FLIGHT, --s->in_flight;
}

/* SKELGEN_FARM_REPORT: one line per farm (docs/generate.md). */
static void skel_farm_report(const struct skel_farm* f, const struct skel_farm_worker_stat* st, double measured,
                             double left_out)
{
  int i;
  printf("SKELGEN_FARM farm=%d tasks=%ld kept=%ld measured_s=%.6f left_out_s=%.6f replayed_all_s=%.6f "
         "replayed_kept_s=%.6f done=",
         f->index, f->tasks, f->kept, measured, left_out, skel_farm_replayed[0], skel_farm_replayed[1]);
  for (i = 0; i < f->workers; ++i) printf("%s%d:%ld", i ? "," : "", f->worker[i], st[f->worker[i]].done);
  printf("\n");
  fflush(stdout);
}

/* Whether some worker still has a task (requests after the stops to come). */
static int skel_farm_in_flight(const struct skel_farm* f, const struct skel_farm_worker_stat* st)
{
  int w;
  for (w = 0; w < f->workers; ++w)
    if (st[f->worker[w]].in_flight > 0) return 1;
  return 0;
}

static void skel_farm_master(const struct skel_farm* f, MPI_Comm comm)
{
  struct skel_farm_worker_stat* st;
  struct skel_farm_inbox in;
  int size, stopped = 0, capacity, i;
  long next = 0, answers = 0;
  double t0, waited = 0;
  PMPI_Comm_size(comm, &size);
  st = (struct skel_farm_worker_stat*)skel_alloc(sizeof *st * (size_t)size);
  memset(st, 0, sizeof *st * (size_t)size);
  for (i = 0; i < size; ++i) st[i].first_at = st[i].asked_at = -1;
  capacity = skel_farm_bytes(f->first_ask_bytes > f->ask_bytes ? f->first_ask_bytes : f->ask_bytes);
  skel_farm_open(f, comm, &in, capacity);
  t0 = MPI_Wtime();
  for (i = 0; i < f->seeds; ++i, ++answers) {
    if (f->seed[i] < 0 || f->seed[i] >= size) skel_die("a farm worker outside the communicator");
    st[f->seed[i]].first_at = 0;
    skel_farm_answer(f, comm, f->seed[i], &st[f->seed[i]], &next, &stopped);
  }
  while (stopped < f->workers || skel_farm_in_flight(f, st)) {
    MPI_Status status;
    double before, now;
    const unsigned char* data;
    struct skel_farm_worker_stat* s;
    if (answers > 0) skel_compute(f->master_recv_units);
    skel_enter(f->call_recv);
    before = MPI_Wtime();
    data = skel_farm_take(f, comm, &in, &status);
    now = MPI_Wtime();
    waited += now - before;
    if (status.MPI_SOURCE < 0 || status.MPI_SOURCE >= size) skel_die("a farm request from outside the communicator");
    s = &st[status.MPI_SOURCE];
    if (s->in_flight > 0) skel_farm_task_done(f, s, data, now);
    else if (s->first_at < 0) s->first_at = now - t0;
    s->asked_at = now;
    if (!s->stopped) skel_farm_answer(f, comm, status.MPI_SOURCE, s, &next, &stopped), ++answers;
    skel_farm_repost(f, comm, &in, status.MPI_SOURCE, s->stopped && s->in_flight == 0);
  }
  skel_farm_close(f, &in);
  {
    double measured = MPI_Wtime() - t0;
    double left_out = skel_farm_left_out(f, st, (measured - waited) / (double)answers, measured);
    skel_farm_extra += left_out;
    if (getenv("SKELGEN_FARM_REPORT")) skel_farm_report(f, st, measured, left_out);
  }
  free(st);
}

/* A worker that polled for its answer (f->wait_polls), as the application's: MPI_Iprobe until it is
 * there, computing after each poll in vain and sleeping what the application's workers slept after
 * their k-th in a wait (the last entry for the later ones). */
static void skel_farm_poll_answer(const struct skel_farm* f, MPI_Comm comm, MPI_Status* status)
{
  int flag = 0, k = 0;
  for (;;) {
    MPI_Iprobe(f->master, f->recv_tag, comm, &flag, status);
    if (flag) return;
    skel_compute(f->wait_poll_units[skel_rank]);
    skel_sleep(f->wait_poll_sleep[k]);
    if (k + 1 < f->wait_poll_sleeps) ++k;
  }
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
      skel_farm_send(f->ask_isend, skel_sbuf, skel_farm_bytes(first ? f->first_ask_bytes : f->ask_bytes), f->master,
                     f->request_tag, comm);
      first = 0;
      skel_compute(f->wait_units[skel_rank]);
    }
    skel_enter(f->call_wait);
    if (f->wait_polls) skel_farm_poll_answer(f, comm, &status);
    skel_farm_recv(f->wait_irecv, skel_rbuf, capacity, f->master, f->recv_tag, comm, &status);
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
