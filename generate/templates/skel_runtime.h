/* The skeleton's fixed runtime: start-up, message buffers, communicator
 * bookkeeping, request slots, compute phases, loop timing and the result
 * line. skelgen generate pastes this file (and skel_kernel.h) into every
 * generated skeleton, so a skeleton is one self-contained C file.
 *
 * The generated part defines, before this text:
 *   SKEL_WORLD_SIZE, SKEL_SCALE, SKEL_NUM_SLOTS, SKEL_NUM_RINGS,
 *   SKEL_NUM_RING_RUNS, skel_ring_runs[][4], SKEL_NUM_COMMS,
 *   SKEL_NUM_CUT_LOOPS, SKEL_MAX_REQS, SKEL_BUF_BYTES, SKEL_BSEND_BYTES,
 *   SKEL_NAME, skel_loop_factor[] (traced iterations / skeleton iterations
 *   of each cut loop), skel_loop_iters[] (skeleton iterations) and
 *   skel_types_setup().
 * Peers, roots and members are ranks of the call's communicator, worked out
 * by the generator from the traced groups.
 *
 * Contract with the tracer: everything the skeleton does for itself (the
 * start and end barrier, the result reduction, group bookkeeping, completing
 * a request that a traced MPI_Test found done) goes through PMPI_ entry
 * points, so that the skeleton run under skelgen's tracer shows exactly the
 * application's calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SKEL_MAYBE_UNUSED (skeleton.c.in): helpers and variables not every skeleton uses. */

/* Threads (SKEL_NUM_THREADS > 1: an MPI_THREAD_MULTIPLE application whose
 * threads made MPI calls): each traced thread's calls run in a thread of
 * their own, skel_tid 0 the first. What each call uses for itself (gathered
 * requests, statuses, flags, the compute kernel's carry) is then per thread
 * (SKEL_TLS); request slots, rings and cut loops are each one thread's. */
#if SKEL_NUM_THREADS > 1
#if defined(SMPI_H)
#error "a skeleton of several threads per rank does not run under SimGrid"
#endif
#define SKEL_TLS __thread
#else
#define SKEL_TLS
#endif
SKEL_MAYBE_UNUSED static SKEL_TLS int skel_tid = 0;

SKEL_MAYBE_UNUSED static int skel_rank = 0;       /* rank in MPI_COMM_WORLD */
SKEL_MAYBE_UNUSED static char* skel_sbuf;         /* send side of every call (SKEL_BUF_BYTES; contents do not matter) */
SKEL_MAYBE_UNUSED static char* skel_rbuf;         /* receive side of every call */
/* Forwarded sends (trace flag forwards: the application sent what its last
 * blocking receive had filled) send from skel_fwd, the buffer the skeleton's
 * last blocking receive filled: skel_rbuf, or skel_xbuf, where a
 * Sendrecv_replace that does not forward (and a forwarding Sendrecv, whose
 * buffers must not overlap) receives, so that no other send reads what a
 * receive has just filled. */
SKEL_MAYBE_UNUSED static char* skel_xbuf;
SKEL_MAYBE_UNUSED static SKEL_TLS char* skel_fwd;
SKEL_MAYBE_UNUSED static SKEL_TLS char* skel_into; /* the receive buffer of the Sendrecv(_replace) being made */
/* Request slots: ring g is skel_req[skel_ring_base(g) ...] with
 * skel_ring_size(g) slots; skel_made[g] requests were made in it so far. */
SKEL_MAYBE_UNUSED static MPI_Request skel_req[SKEL_NUM_SLOTS];
SKEL_MAYBE_UNUSED static long skel_made[SKEL_NUM_RINGS];
/* The rings, as runs of like rings (skel_ring_runs[k]: its first ring, that
 * ring's first slot, slots per ring, pool kind; the run's rings take slots
 * one after another): a program that did not fold has a ring for each
 * call, thousands alike. */
static inline const int* skel_ring_run(int g)
{
  int lo = 0, hi = SKEL_NUM_RING_RUNS - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (skel_ring_runs[mid][0] <= g) lo = mid; else hi = mid - 1;
  }
  return skel_ring_runs[lo];
}
static inline int skel_ring_base(int g)
{
  const int* run = skel_ring_run(g);
  return run[1] + (g - run[0]) * run[2];
}
static inline int skel_ring_size(int g) { return skel_ring_run(g)[2]; }
static inline int skel_ring_pool(int g) { return skel_ring_run(g)[3]; }
SKEL_MAYBE_UNUSED static SKEL_TLS MPI_Request skel_tmp_req[SKEL_MAX_REQS];  /* a completion call's requests, gathered */
SKEL_MAYBE_UNUSED static SKEL_TLS int skel_tmp_slot[SKEL_MAX_REQS];  /* and their slots (-1: none) */
SKEL_MAYBE_UNUSED static SKEL_TLS int skel_tmp_index[SKEL_MAX_REQS];
SKEL_MAYBE_UNUSED static SKEL_TLS MPI_Status skel_statuses[SKEL_MAX_REQS];  /* not MPI_STATUSES_IGNORE: GCC 12 warns on it */
SKEL_MAYBE_UNUSED static MPI_Request skel_null_req;                /* what a traced Test* that found nothing tests */
/* 0 MPI_COMM_WORLD, 1 MPI_COMM_SELF, then the created ones by symbol; the
 * last one takes what ranks outside a new communicator get (MPI_COMM_NULL) */
SKEL_MAYBE_UNUSED static MPI_Comm skel_comm[SKEL_NUM_COMMS + 1];
SKEL_MAYBE_UNUSED static MPI_Group skel_group;
SKEL_MAYBE_UNUSED static int skel_zeros[SKEL_LIST_LEN];            /* counts of ranks that pass none */
SKEL_MAYBE_UNUSED static SKEL_TLS int skel_displs_a[SKEL_LIST_LEN], skel_displs_b[SKEL_LIST_LEN];
SKEL_MAYBE_UNUSED static const int skel_no_slots[1] = {-1};
SKEL_MAYBE_UNUSED static SKEL_TLS int skel_flag, skel_index, skel_outcount;
SKEL_MAYBE_UNUSED static double skel_t0, skel_loop_start[SKEL_NUM_CUT_LOOPS + 1];
/* per cut loop: when its last period ended, its periods' times (skel_estimate.h) */
SKEL_MAYBE_UNUSED static double skel_loop_mark[SKEL_NUM_CUT_LOOPS + 1];
SKEL_MAYBE_UNUSED static double skel_loop_periods[SKEL_NUM_CUT_LOOPS + 1][SKEL_PERIOD_SAMPLES];
SKEL_MAYBE_UNUSED static int skel_loop_nperiods[SKEL_NUM_CUT_LOOPS + 1];
SKEL_MAYBE_UNUSED static double skel_loop_extra[SKEL_NUM_CUT_LOOPS + 1]; /* predicted time of the iterations cut */
SKEL_MAYBE_UNUSED static double skel_farm_extra; /* the left-out tasks' time of the farms this rank was master of */
SKEL_MAYBE_UNUSED static SKEL_TLS double skel_sleep_owed; /* seconds of sleep not slept yet (skel_sleep) */
#ifndef SMPI_H
SKEL_MAYBE_UNUSED static SKEL_TLS double skel_units_owed; /* a fraction of a kernel unit, carried to the next phase */
SKEL_MAYBE_UNUSED static SKEL_TLS volatile double skel_sink;
#endif
#if SKEL_BSEND_BYTES > 0
SKEL_MAYBE_UNUSED static char* skel_bsend_buf;
#endif

static inline void skel_die(const char* what)
{
  fprintf(stderr, "%s: rank %d: %s\n", SKEL_NAME, skel_rank, what);
  PMPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

/* A message buffer, written through like an application's data. Untouched
 * calloc() pages all map the one zero page, and with them the skeleton of
 * tests/apps/pair_exchange (256 KiB messages, MPICH) ran 10-15 % longer
 * than the application: its large sends took 0.16 s where the
 * application's took 0.125 s. 0x3f bytes read as small normal numbers (a double is
 * about 2.4e-4, a float 0.75), so reductions on them stay ordinary arithmetic. */
static inline void* skel_alloc(size_t bytes)
{
  void* p = malloc(bytes > 0 ? bytes : 1);
  if (!p) skel_die("out of memory for the message buffers");
  memset(p, 0x3f, bytes > 0 ? bytes : 1);
  return p;
}

/* A group of world ranks, for MPI_Comm_create / MPI_Comm_create_group. */
static inline MPI_Group skel_group_of(int n, const int* world_ranks)
{
  MPI_Group world, group;
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  PMPI_Group_incl(world, n, world_ranks, &group);
  PMPI_Group_free(&world);
  return group;
}

/* The watchdog (docs/generate.md, "The watchdog"): a thread that looks,
 * once a second, at the call the rank is in. skel_enter() names the call
 * before it is made (an index into skel_calls[]); skel_compute() says the
 * rank is computing. A rank that waits in one call longer than the larger
 * of SKEL_WATCHDOG_S (or $SKELGEN_WATCHDOG_S; 0: no watchdog) and 100
 * times the call's traced duration prints one line naming rank, call, call
 * site and loop, and exits with status 3; the launcher then ends the
 * job. Not under SimGrid, which finds a deadlock itself. */
/* skel_calls[], skel_call_sites[] and skel_call_loops[] are among the generated tables. */
/* Per thread (skel_tid): the call it is in (-1: none), calls entered so
 * far, the iteration of each loop it is in. */
SKEL_MAYBE_UNUSED static int skel_in_calls[SKEL_NUM_THREADS] = {-1};
SKEL_MAYBE_UNUSED static unsigned long skel_call_seqs[SKEL_NUM_THREADS];
SKEL_MAYBE_UNUSED static long skel_iters[SKEL_NUM_THREADS][SKEL_LOOP_DEPTH + 1];
#define skel_iter skel_iters[skel_tid]
static inline void skel_enter(int call)
{
  __atomic_store_n(&skel_in_calls[skel_tid], call, __ATOMIC_RELAXED);
  __atomic_store_n(&skel_call_seqs[skel_tid], skel_call_seqs[skel_tid] + 1, __ATOMIC_RELAXED);
}
#ifndef SMPI_H
static double skel_watchdog_s = SKEL_WATCHDOG_S;
static double skel_now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static void skel_watchdog_report(int tid, int call, double waited, double limit)
{
  const struct skel_call* c = &skel_calls[call];
  char loops[512] = "", node[32] = "";
  int d, used = 0;
  if (c->node >= 0) snprintf(node, sizeof node, " (n%d)", c->node);
  for (d = c->depth - 1; d >= 0 && used < (int)sizeof loops - 64; --d)
    used += snprintf(loops + used, sizeof loops - (size_t)used, "%s loop n%d at iteration %ld",
                     d == c->depth - 1 ? " in" : ",", skel_call_loops[c->loops + d], skel_iters[tid][d]);
  fprintf(stderr, "%s: rank %d: watchdog: no progress for %.0f s in %s%s%s (limit %.0f s, SKELGEN_WATCHDOG_S); "
          "aborting\n", SKEL_NAME, skel_rank, waited, skel_call_sites[c->what], node, loops, limit);
  fflush(stderr);
}
static void* skel_watchdog(void* arg)
{
  unsigned long seen[SKEL_NUM_THREADS] = {0};
  double since[SKEL_NUM_THREADS];
  int t;
  (void)arg;
  for (t = 0; t < SKEL_NUM_THREADS; ++t) since[t] = skel_now();
  for (;;) {
    struct timespec tick = {1, 0};
    nanosleep(&tick, NULL);
    for (t = 0; t < SKEL_NUM_THREADS; ++t) {
      int call = __atomic_load_n(&skel_in_calls[t], __ATOMIC_RELAXED);
      unsigned long seq = __atomic_load_n(&skel_call_seqs[t], __ATOMIC_RELAXED);
      double limit;
      if (call < 0 || seq != seen[t]) {
        seen[t] = seq;
        since[t] = skel_now();
        continue;
      }
      limit = skel_calls[call].traced_s > skel_watchdog_s ? skel_calls[call].traced_s : skel_watchdog_s;
      if (skel_now() - since[t] >= limit) {
        skel_watchdog_report(t, call, skel_now() - since[t], limit);
        _exit(3);
      }
    }
  }
  return NULL;
}
#endif
static inline void skel_watchdog_start(void)
{
#ifndef SMPI_H
  pthread_t t;
  pthread_attr_t attr;
  const char* env = getenv("SKELGEN_WATCHDOG_S");
  if (env && *env) skel_watchdog_s = atof(env);
  if (skel_watchdog_s <= 0) return;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, skel_watchdog, NULL) != 0)
    fprintf(stderr, "%s: rank %d: warning: no watchdog (pthread_create failed)\n", SKEL_NAME, skel_rank);
  pthread_attr_destroy(&attr);
#endif
}

/* A computation phase of `units` reference-kernel units (the traced gap x
 * the traced node's kernel rate). Real MPI: the work itself, so that a
 * faster or slower machine takes proportionally less or more time.
 * SimGrid: the same work as flops for the simulated host. */
static inline void skel_compute(double units)
{
  __atomic_store_n(&skel_in_calls[skel_tid], -1, __ATOMIC_RELAXED); /* computing, not waiting */
  if (units <= 0) return;
#ifdef SMPI_H
  smpi_execute_flops(units * SKEL_KERNEL_FLOPS_PER_UNIT);
#else
  {
    double whole;
    skel_units_owed += units;
    whole = (double)(unsigned long long)skel_units_owed;
    if (whole >= 1) {
      skel_units_owed -= whole;
      skel_sink += skel_kernel_run((unsigned long long)whole, 1.0 + skel_rank * 1e-9);
    }
  }
#endif
}

/* A time the application's thread was blocked in a gap (asleep, waiting for
 * I/O: trace field `blocked`), slept, not computed: a faster machine does
 * not shorten it, and the rank leaves its core to others as the application
 * did. SimGrid: a delay of that many seconds. A sleep costs a system call
 * and the timer's slack (50 us or more), so sleeps are owed until
 * SKEL_SLEEP_MIN_S of them add up, and what a sleep overran (up to that
 * much) is taken off the next: a node whose mean blocked time is 38 ns (one instance in a
 * thousand blocked) had made a skeleton sleep 1000 times and run 40 % long. */
#define SKEL_SLEEP_MIN_S 200e-6
static inline void skel_sleep(double seconds)
{
  __atomic_store_n(&skel_in_calls[skel_tid], -1, __ATOMIC_RELAXED);
  if (seconds <= 0) return;
  skel_sleep_owed += seconds;
  if (skel_sleep_owed < SKEL_SLEEP_MIN_S) return;
#ifdef SMPI_H
  smpi_execute(skel_sleep_owed);
  skel_sleep_owed = 0;
#else
  {
    struct timespec left, t0, t1;
    left.tv_sec = (time_t)skel_sleep_owed;
    left.tv_nsec = (long)((skel_sleep_owed - (double)left.tv_sec) * 1e9);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    skel_sleep_owed -= (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    /* the timer's overrun is paid back, a rank's time without its core is not:
     * a worker stopped mid-sleep would otherwise skip its next sleeps */
    if (skel_sleep_owed < -SKEL_SLEEP_MIN_S) skel_sleep_owed = -SKEL_SLEEP_MIN_S;
  }
#endif
}

/* A receive's count with room for the longer messages the generator's
 * completion check saw sent to it (a sender's count that is a mean). */
static inline int skel_at_least(int count, int room) { return count > room ? count : room; }

/* A computation that drifts through the run (a profile: parts equal parts of
 * the node's instances in the application, each with its factor of the mean
 * gap): the part the application was in at its instance i of n. */
static inline int skel_part(double i, double n, int parts)
{
  int k = (int)(i * parts / n);
  return k < 0 ? 0 : k >= parts ? parts - 1 : k;
}

/* Pools (skel_ring_pool(g)): SKEL_POOL_RECEIVES, rings of persistent
 * receives from MPI_ANY_SOURCE that the program takes by MPI_Testany. The MPI
 * matches each message to the oldest receive started, so the skeleton takes
 * a pool's oldest started request (reference g, below SKEL_NUM_RINGS) and
 * starts the one done longest (reference -2 - g), whichever slot the trace
 * named. Each ring's two queues (0: done, 1: started) hold its slots, oldest
 * first. SKEL_POOL_SENDS, rings of send buffers each found free by
 * MPI_Testany: a take completes whichever pending sends are done
 * (skel_pool_any; reference g waits for one where none is, reference
 * SKEL_NUM_RINGS + g does not), and a new send goes after the pending. */
#define SKEL_POOL_RECEIVES 1
#define SKEL_POOL_SENDS 2
SKEL_MAYBE_UNUSED static int skel_pool_q[2][SKEL_NUM_SLOTS];
SKEL_MAYBE_UNUSED static int skel_pool_head[2][SKEL_NUM_RINGS], skel_pool_len[2][SKEL_NUM_RINGS];
static inline int skel_pool_slot(int g, int started)
{
  if (skel_pool_len[started][g] == 0) return -1;
  return skel_pool_q[started][skel_ring_base(g) + skel_pool_head[started][g]];
}
static inline void skel_pool_push(int g, int started, int slot)
{
  const int size = skel_ring_size(g);
  if (skel_pool_len[started][g] == size) return;
  skel_pool_q[started][skel_ring_base(g) + (skel_pool_head[started][g] + skel_pool_len[started][g]++) % size] = slot;
}
/* After a call with pool references: each one's slot leaves the front of
 * its queue for the back of the other (taken: done; started: started). */
static inline void skel_pools_moved(const int* refs, int n)
{
  int i, g, from, s;
  for (i = 0; i < n; ++i) {
    if (refs[i] >= 0 && refs[i] < SKEL_NUM_RINGS) g = refs[i], from = 1;
    else if (refs[i] <= -2) g = -2 - refs[i], from = 0;
    else continue;
    if (skel_ring_pool(g) != SKEL_POOL_RECEIVES) continue;
    s = skel_pool_slot(g, from);
    if (s < 0) continue;
    skel_pool_head[from][g] = (skel_pool_head[from][g] + 1) % skel_ring_size(g);
    --skel_pool_len[from][g];
    skel_pool_push(g, !from, s);
  }
}

/* A send pool's pending sends are the first skel_pool_len[0][g] slots of
 * its ring: drop those completed (MPI_REQUEST_NULL), keeping the rest
 * first. */
static inline void skel_pool_compact(int g)
{
  MPI_Request* q = &skel_req[skel_ring_base(g)];
  int i, n = 0;
  for (i = 0; i < skel_pool_len[0][g]; ++i)
    if (q[i] != MPI_REQUEST_NULL) q[n++] = q[i];
  for (i = n; i < skel_pool_len[0][g]; ++i) q[i] = MPI_REQUEST_NULL;
  skel_pool_len[0][g] = n;
}

/* Send-pool takes of the completion call being gathered (skel_gather). */
SKEL_MAYBE_UNUSED static SKEL_TLS int skel_pool_taken;

/* The j-th send-pool take (from 0) of a completion call, from pool g:
 * where the call has not completed more than j sends yet, it completes
 * every pending send that is done and, if `wait` and still short, waits for
 * the first to complete. The application's take without a wait (MPI_Test*)
 * spun, taking its messages in meanwhile; the skeleton takes them where the
 * trace did, and leaves its sends pending. The call gathers none (-1). */
static inline int skel_pool_any(int g, int wait, int j)
{
  MPI_Request* q = &skel_req[skel_ring_base(g)];
  int i, flag, index = MPI_UNDEFINED;
  const int n = skel_pool_len[0][g];
  if (skel_pool_taken > j || n == 0) return -1;
  for (i = 0; i < n; ++i) {
    PMPI_Test(&q[i], &flag, MPI_STATUS_IGNORE);
    if (flag) ++skel_pool_taken;
  }
  if (wait && skel_pool_taken <= j) {
    PMPI_Waitany(n, q, &index, MPI_STATUS_IGNORE);
    if (index != MPI_UNDEFINED) ++skel_pool_taken;
  }
  skel_pool_compact(g);
  return -1;
}

/* The slot for a new request of ring g: a send pool's next after its
 * pending sends (all slots pending: it waits for one), any other ring's
 * next in turn. */
static inline MPI_Request* skel_new_req(int g)
{
  int s, index;
  if (skel_ring_pool(g) == SKEL_POOL_SENDS) {
    if (skel_pool_len[0][g] == skel_ring_size(g)) {
      PMPI_Waitany(skel_ring_size(g), &skel_req[skel_ring_base(g)], &index, MPI_STATUS_IGNORE);
      skel_pool_compact(g);
    }
    ++skel_made[g];
    return &skel_req[skel_ring_base(g) + skel_pool_len[0][g]++];
  }
  s = skel_ring_base(g) + (int)(skel_made[g]++ % skel_ring_size(g));
  if (skel_ring_pool(g) == SKEL_POOL_RECEIVES) skel_pool_push(g, 0, s);
  return &skel_req[s];
}

/* A completion's reference, back * SKEL_NUM_RINGS + g ("the back-th latest
 * request of ring g"), or a pool reference (above), as a slot; -1 stays -1
 * (MPI_REQUEST_NULL). */
static inline int skel_slot(int ref)
{
  long g, back, k;
  if (ref <= -2) return skel_pool_slot(-2 - ref, 0);
  if (ref < 0) return -1;
  g = ref % SKEL_NUM_RINGS;
  back = ref / SKEL_NUM_RINGS;
  if (back == 0) return skel_pool_slot((int)g, 1);
  k = ((skel_made[g] - back) % skel_ring_size(g) + skel_ring_size(g)) % skel_ring_size(g);
  return skel_ring_base(g) + (int)k;
}

/* Gather / scatter a completion call's requests (references as above). */
static inline void skel_gather(const int* refs, int n)
{
  int i, s, g, j = 0;
  /* a rank whose call completed none (its MPI_Test found nothing where
   * another rank's completed) tests no request: MPI_Test(&skel_tmp_req[0])
   * read a handle left from before (0 at first: MPICH refused it, Open MPI
   * crashed) */
  skel_tmp_req[0] = MPI_REQUEST_NULL;
  skel_pool_taken = 0;
  for (i = 0; i < n; ++i) {
    g = refs[i] >= 0 ? refs[i] % SKEL_NUM_RINGS : -1;
    if (g >= 0 && skel_ring_pool(g) == SKEL_POOL_SENDS) s = skel_pool_any(g, refs[i] < SKEL_NUM_RINGS, j++);
    else s = skel_slot(refs[i]);
    skel_tmp_slot[i] = s;
    skel_tmp_req[i] = s >= 0 ? skel_req[s] : MPI_REQUEST_NULL;
  }
}
/* after skel_gather(refs, n): the requests back to the slots they came from */
static inline void skel_scatter(const int* refs, int n)
{
  int i;
  (void)refs;
  for (i = 0; i < n; ++i)
    if (skel_tmp_slot[i] >= 0) skel_req[skel_tmp_slot[i]] = skel_tmp_req[i];
}
/* A traced MPI_Test, Waitany or Waitsome completed these requests; the skeleton's
 * may not have completed them yet: finish them untraced. */
static inline void skel_finish(const int* slots, int n)
{
  PMPI_Waitall(n, skel_tmp_req, skel_statuses);
  skel_scatter(slots, n);
}

/* MPI_Alltoallw: the per-peer datatypes are not recorded, only the bytes;
 * every peer gets a contiguous type of `size` bytes (side 0 send, 1 receive). */
static inline MPI_Datatype* skel_bytes_types_of(int size, int side)
{
  static MPI_Datatype made[2];
  static int made_size[2] = {-1, -1};
  static MPI_Datatype types[2][SKEL_WORLD_SIZE];
  int i;
  if (made_size[side] != size) {
    if (made_size[side] >= 0) PMPI_Type_free(&made[side]);
    PMPI_Type_contiguous(size, MPI_BYTE, &made[side]);
    PMPI_Type_commit(&made[side]);
    made_size[side] = size;
    for (i = 0; i < SKEL_WORLD_SIZE; ++i) types[side][i] = made[side];
  }
  return types[side];
}

/* A neighbourhood collective's number of out- (out = 1) or in-neighbours on
 * comm's topology, as MPI counts them: the entries of its count lists. */
SKEL_MAYBE_UNUSED static int skel_degree(MPI_Comm comm, int out)
{
  int topo = MPI_UNDEFINED, n = 0, in = 0, outs = 0, weighted = 0, me = 0;
  MPI_Topo_test(comm, &topo);
  if (topo == MPI_CART) {
    MPI_Cartdim_get(comm, &n);
    n *= 2;
  } else if (topo == MPI_GRAPH) {
    MPI_Comm_rank(comm, &me);
    MPI_Graph_neighbors_count(comm, me, &n);
  } else if (topo == MPI_DIST_GRAPH) {
    MPI_Dist_graph_neighbors_count(comm, &in, &outs, &weighted);
    n = out ? outs : in;
  }
  return n < SKEL_LIST_LEN ? n : SKEL_LIST_LEN;
}

/* Displacements of a v-collective: packed, in order. */
static inline int* skel_displs(const int* counts, int n, int* out)
{
  int i, d = 0;
  for (i = 0; i < n; ++i) {
    out[i] = d;
    d += counts[i];
  }
  return out;
}

/* Cut loops: a loop of n iterations cut from n * f stands for the
 * application's iterations around each of its own (skel_estimate.h; where
 * the values of its calls cycle over P iterations, read "period of P
 * iterations" for "iteration": the loop keeps whole periods, and
 * skel_loop_period marks the end of each). An iteration's time counts what
 * the cut loops inside it predict for their left-out iterations
 * (skel_extra_now: this thread's predictions so far, of its cut loops and
 * kept runs), so that a loop cut inside a cut loop is predicted in the
 * left-out iterations of both. */
SKEL_MAYBE_UNUSED static SKEL_TLS double skel_extra_now;
SKEL_MAYBE_UNUSED static double skel_loop_xmark[SKEL_NUM_CUT_LOOPS + 1]; /* skel_extra_now at the mark */
static inline void skel_add_extra(int l, double t)
{
  skel_loop_extra[l] += t;
  skel_extra_now += t;
}
static inline void skel_loop_begin(int l)
{
  skel_loop_start[l] = skel_loop_mark[l] = MPI_Wtime();
  skel_loop_xmark[l] = skel_extra_now;
  skel_loop_nperiods[l] = 0;
}
static inline void skel_loop_period(int l)
{
  double now = MPI_Wtime();
  if (skel_loop_nperiods[l] < SKEL_PERIOD_SAMPLES) {
    skel_loop_periods[l][skel_loop_nperiods[l]++] = now - skel_loop_mark[l] + (skel_extra_now - skel_loop_xmark[l]);
    skel_loop_mark[l] = now;
    skel_loop_xmark[l] = skel_extra_now;
  }
}
static inline void skel_loop_end(int l)
{
  double now = MPI_Wtime(), f = skel_loop_factor[l];
  double rest = now - skel_loop_mark[l] + (skel_extra_now - skel_loop_xmark[l]);
  if (skel_loop_iters[l] < 2) {
    skel_add_extra(l, rest * (f - 1.0));
    return;
  }
  skel_add_extra(l, skel_left_out_time(skel_loop_periods[l], skel_loop_nperiods[l], rest, f));
}

/* Kept runs of top-level calls (an irregular program's time steps): run l
 * stands for itself and runs left out (of its kind and shape, or short
 * steps), factor f = their traced time / its own (short steps: their calls
 * / its own). Its time here includes what the cut loops inside it predict
 * for their left-out iterations; predicted: (f - 1) times that. A run's
 * time, as the generator counts the traced one, is how much later the last
 * rank ends it than the last rank came to it, each on its own clock from
 * its MPI_Init (with its predictions so far): a rank that came early waits
 * there for one still in what came before, which is not the run's time
 * (where the ranks do not all meet at a run's end, each rank's own time
 * multiplied by f predicted the steps left out 13-15 % long on 4 ranks).
 * Each rank notes when it came and left (skel_run_span); skel_report takes
 * the latest of every rank's. With threads (each thread's program its own
 * runs), each rank its own time, as it was. */
SKEL_MAYBE_UNUSED static double skel_run_extra0[SKEL_NUM_CUT_LOOPS + 1];
/* per run: this rank's clock where it came, where it left, and 1 (a kept run) */
SKEL_MAYBE_UNUSED static double skel_run_span[SKEL_NUM_CUT_LOOPS + 1][3];
static inline void skel_run_begin(int l)
{
#if SKEL_NUM_THREADS > 1
  skel_run_extra0[l] = skel_extra_now;
  skel_loop_start[l] = MPI_Wtime();
#else
  skel_run_span[l][0] = MPI_Wtime() - skel_t0 + skel_extra_now;
  skel_run_span[l][2] = 1;
#endif
}
static inline void skel_run_end(int l)
{
#if SKEL_NUM_THREADS > 1
  double t = MPI_Wtime() - skel_loop_start[l] + (skel_extra_now - skel_run_extra0[l]);
  skel_add_extra(l, t * (skel_loop_factor[l] - 1.0));
#else
  skel_run_span[l][1] = MPI_Wtime() - skel_t0 + skel_extra_now;
#endif
}
/* What the kept runs stand for beyond themselves, the same on every rank
 * (collective: every rank calls it once, at the end); a run that another
 * process delayed stands for the others at its class's speed
 * (skel_runs_left_out_time, skel_estimate.h). */
static inline double skel_runs_extra(void)
{
  double extra = 0;
#if SKEL_NUM_THREADS <= 1
  static double measured[SKEL_NUM_CUT_LOOPS + 1];
  int l;
  PMPI_Allreduce(MPI_IN_PLACE, skel_run_span, 3 * (SKEL_NUM_CUT_LOOPS + 1), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (l = 0; l <= SKEL_NUM_CUT_LOOPS; ++l) {
    double t = skel_run_span[l][1] - skel_run_span[l][0];
    measured[l] = skel_run_span[l][2] > 0 && t > 0 ? t : 0;
  }
  extra = skel_runs_left_out_time(measured, skel_run_traced, skel_run_class, skel_loop_factor, SKEL_NUM_CUT_LOOPS + 1);
#endif
  return extra;
}

/* Ranks that share cores: where this node runs more of the skeleton's
 * ranks than there are cores this rank may run on (the launcher bound none
 * of them: Open MPI oversubscribed, mpiexec without binding), each rank is
 * pinned to one of those cores. A run K times shorter than the
 * application's is over before the kernel's balancer spreads the ranks: 4
 * Open MPI ranks on 2 cores ran three on one core for a whole 0.08 s
 * skeleton run in 7 of 30 runs (predictions up to 1.31 s for an application
 * of 0.86-0.90 s), pinned in none of 30 (0.81-0.93 s). The application,
 * unbound, is spread by the balancer over its longer run, so that ranks
 * that compute much do not share a core where others could: the ranks are
 * placed as a balancer would, the most loaded first (their traced
 * computation, skel_rank_load), each on the core least loaded so far (ties:
 * the lower rank, the lower core; equal loads make it round robin). PRK's
 * PIC kernel on 4 ranks computes 1.3 s on ranks 0 and 2, 0.12 s on 1 and
 * 3: round robin put 0 and 2 on one core and its skeleton ran 2.68 s for
 * an application of 1.5 s. Not for threaded skeletons (their threads would
 * share one core) nor under SimGrid; SKELGEN_PIN=0 leaves the ranks
 * unpinned, SKELGEN_PIN=show pins them and says so on stderr, one line a
 * rank. */
#if !defined(SMPI_H) && SKEL_NUM_THREADS == 1 && defined(__linux__)
static int skel_by_load(const void* a, const void* b)
{
  int x = *(const int*)a, y = *(const int*)b;
  if (skel_rank_load[x] != skel_rank_load[y]) return skel_rank_load[x] > skel_rank_load[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* The core (0 .. ncores - 1) of world rank `me` among the node's ranks. */
static int skel_core_of(int me, int* ranks, int nranks, int ncores)
{
  double* load = (double*)calloc((size_t)ncores, sizeof(double));
  int i, c, best, mine = me % ncores;
  if (!load) return mine;
  qsort(ranks, (size_t)nranks, sizeof(int), skel_by_load);
  for (i = 0; i < nranks; ++i) {
    for (best = 0, c = 1; c < ncores; ++c)
      if (load[c] < load[best]) best = c;
    /* a rank with no computation still counts a little, so idle ranks spread too */
    load[best] += skel_rank_load[ranks[i]] + 1e-9;
    if (ranks[i] == me) mine = best;
  }
  free(load);
  return mine;
}
#endif

static void skel_spread_over_cores(void)
{
#if !defined(SMPI_H) && SKEL_NUM_THREADS == 1 && defined(__linux__)
  cpu_set_t allowed, one;
  MPI_Comm node;
  int local, nlocal, k, cpu;
  int* ranks;
  const char* env = getenv("SKELGEN_PIN");
  if (env && strcmp(env, "0") == 0) return;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return; /* bound, or one core */
  if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return;
  PMPI_Comm_rank(node, &local);
  PMPI_Comm_size(node, &nlocal);
  if (nlocal <= CPU_COUNT(&allowed) || !(ranks = (int*)malloc((size_t)nlocal * sizeof(int)))) {
    PMPI_Comm_free(&node);
    return; /* a core each: the kernel spreads them at once */
  }
  PMPI_Allgather(&skel_rank, 1, MPI_INT, ranks, 1, MPI_INT, node);
  PMPI_Comm_free(&node);
  k = skel_core_of(skel_rank, ranks, nlocal, CPU_COUNT(&allowed));
  free(ranks);
  for (cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed) && k-- == 0) break;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) {
    if (local == 0) fprintf(stderr, "%s: warning: could not pin the ranks to cores (%s)\n", SKEL_NAME, strerror(errno));
  } else if (env && strcmp(env, "show") == 0) {
    fprintf(stderr, "%s: rank %d pinned to cpu %d (rank %d of %d on its node, %d cpus, traced computation %.6f s)\n",
            SKEL_NAME, skel_rank, cpu, local, nlocal, CPU_COUNT(&allowed), skel_rank_load[skel_rank]);
  }
#endif
}

/* Right after the skeleton's MPI_Init: check the world, set up buffers and
 * tables, spread the ranks over the cores where they share them, start this
 * rank's clock. */
static inline void skel_setup(void)
{
  int size, i;
  PMPI_Comm_rank(MPI_COMM_WORLD, &skel_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != SKEL_WORLD_SIZE) {
    if (skel_rank == 0)
      fprintf(stderr, "%s: error: this skeleton was generated for %d ranks, started on %d\n", SKEL_NAME,
              SKEL_WORLD_SIZE, size);
    PMPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
  }
  skel_sbuf = (char*)skel_alloc(SKEL_BUF_BYTES);
  skel_rbuf = (char*)skel_alloc(SKEL_BUF_BYTES);
  skel_xbuf = (char*)skel_alloc(SKEL_BUF_BYTES);
  skel_fwd = skel_rbuf;
  for (i = 0; i < SKEL_NUM_SLOTS; ++i) skel_req[i] = MPI_REQUEST_NULL;
  for (i = 0; i < SKEL_NUM_RINGS; ++i) skel_made[i] = 0;
  skel_null_req = MPI_REQUEST_NULL;
  for (i = 0; i <= SKEL_NUM_COMMS; ++i) skel_comm[i] = MPI_COMM_NULL;
  skel_comm[0] = MPI_COMM_WORLD;
  skel_comm[1] = MPI_COMM_SELF;
#if SKEL_BSEND_BYTES > 0
  skel_bsend_buf = (char*)skel_alloc(SKEL_BSEND_BYTES);
  PMPI_Buffer_attach(skel_bsend_buf, SKEL_BSEND_BYTES);
#endif
  skel_types_setup();
#ifdef SMPI_H
  (void)skel_kernel_run; /* the simulated run executes flops instead */
#endif
  /* No barrier: like the application, each rank's clock starts when its
   * MPI_Init returns, and the first calls pay for connection set-up. */
  skel_spread_over_cores();
  skel_watchdog_start();
  skel_t0 = MPI_Wtime();
}

/* The threads (SKEL_NUM_THREADS > 1): thread k's calls run in
 * skel_thread_<k>, started where the application's thread k started among
 * the first thread's calls and waited for where it was done. */
#if SKEL_NUM_THREADS > 1
static pthread_t skel_threads[SKEL_NUM_THREADS];
/* The first thread's predicted extra time made while other threads ran
 * (from its first start of a thread to its last wait while none is left):
 * the report counts it or the other threads', whichever is longer. */
static int skel_alive;
static double skel_first_beside, skel_first_at_fork;
static inline void skel_thread_setup(int tid)
{
  skel_tid = tid;
  skel_fwd = skel_rbuf;
}
static inline void skel_fork(int tid, void* (*body)(void*))
{
  int provided = 0;
  PMPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) skel_die("this MPI does not provide MPI_THREAD_MULTIPLE, which the threads need");
  if (skel_alive++ == 0) skel_first_at_fork = skel_extra_now;
  if (pthread_create(&skel_threads[tid], NULL, body, NULL) != 0) skel_die("cannot start a thread");
}
static inline void skel_join(int tid)
{
  skel_compute(0); /* not in a call: the watchdog looks at the thread waited for */
  pthread_join(skel_threads[tid], NULL);
  if (--skel_alive == 0) skel_first_beside += skel_extra_now - skel_first_at_fork;
}
#endif

/* Right before the skeleton's MPI_Finalize: one result line from rank 0.
 * measured: this run, MPI_Init to MPI_Finalize; predicted: the same plus
 * each cut loop's left-out iterations, at the time of its steady ones, and
 * the time of the runs left out, as the kept runs standing for them
 * predict it (max over ranks). */
SKEL_MAYBE_UNUSED static int skel_result_lost;
static inline void skel_report(void)
{
  double mine[2], all[2];
  mine[0] = MPI_Wtime() - skel_t0;
  mine[1] = mine[0] + skel_extra_now + skel_runs_extra();
#if SKEL_NUM_FARMS > 0
  { /* a farm's left-out tasks delay every rank after it (its master knows by how much) */
    double farms = 0;
    PMPI_Allreduce(&skel_farm_extra, &farms, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    mine[1] += farms;
  }
#endif
#if SKEL_NUM_THREADS > 1
  { /* the threads ran side by side: while others ran, the longest one's cut iterations add */
    double most = skel_first_beside, extra[SKEL_NUM_THREADS] = {0};
    int l;
    for (l = 0; l < SKEL_NUM_CUT_LOOPS; ++l) extra[skel_loop_stream[l]] += skel_loop_extra[l];
    for (l = 1; l < SKEL_NUM_THREADS; ++l) most = extra[l] > most ? extra[l] : most;
    mine[1] += most - skel_first_beside;
  }
#endif
  PMPI_Reduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (skel_rank == 0) {
    int lost = printf("SKELGEN_RESULT measured_s=%.6f predicted_s=%.6f scale=%d\n", all[0], all[1], SKEL_SCALE) < 0;
    if (fflush(stdout) != 0 || lost) skel_result_lost = 1; /* exits non-zero after MPI_Finalize */
  }
#if SKEL_BSEND_BYTES > 0
  {
    void* buf;
    int bytes;
    PMPI_Buffer_detach(&buf, &bytes);
  }
#endif
}

/* Every rank ends here (skel_finalize), also one whose trace stopped
 * early: the requests still in slots are completed first (one the
 * application left open, or the last iteration's of a cut loop; the
 * generator's completion check proved that each completes), persistent
 * ones freed. Untraced (PMPI_): not the application's calls. */
SKEL_MAYBE_UNUSED static int skel_finalized;
static inline void skel_complete_all(void)
{
  int i;
  for (i = 0; i < SKEL_NUM_SLOTS; ++i) {
    if (skel_req[i] == MPI_REQUEST_NULL) continue;
    PMPI_Wait(&skel_req[i], MPI_STATUS_IGNORE); /* an inactive persistent request: at once */
    if (skel_req[i] != MPI_REQUEST_NULL) PMPI_Request_free(&skel_req[i]);
  }
}
static inline void skel_finalize(void)
{
  skel_enter(SKEL_FINALIZE_CALL);
  skel_complete_all();
  skel_report();
  MPI_Finalize();
  skel_finalized = 1;
  if (skel_result_lost) {
    fprintf(stderr, "skeleton: cannot write the SKELGEN_RESULT line to stdout\n");
    exit(1);
  }
}
