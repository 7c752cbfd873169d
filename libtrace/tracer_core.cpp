#include "tracer_core.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef SKT_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <string>
#include <vector>

#include "handle_map.h"
#include "thread_numbers.h"
#include "skel/skel_funcs.h"
#include "skel/trace.h"
#include "skel/trace_writer.h"
#include "calibrate.h"

#ifndef SKT_TRACER_VERSION
#define SKT_TRACER_VERSION "0.1.0"
#endif

namespace skt::tracer {
namespace {

constexpr int kMaxStackDepth = 16;
// One kernel sample during the run (SKELTRACE_CALIBRATE_EVERY_MS): 0.5 ms,
// 1 % of a rank's time at the default 50 ms interval.
constexpr double kSampleSeconds = 0.5e-3;

struct CommEntry {
  std::vector<int64_t> members;  // world ranks
};

struct LiveRequest {
  uint64_t packed = 0;  // pack(RequestInfo)
  uintptr_t at = 0;     // the address of the MPI_Request it was made into
};

struct State {
  bool started = false;
  pid_t pid = 0;              // the traced process; a fork()ed child is not it
  bool enabled = false;       // false after an I/O error or when disabled
  bool multiple = false;      // MPI_THREAD_MULTIPLE: take the lock
  bool threads = false;       // MPI_THREAD_SERIALIZED or MULTIPLE: events name their thread
  bool cpu_gaps = false;      // GapClock::kThreadCpu: every event also gets its gap's thread CPU time
  int rank = 0, size = 1;
  int stack_depth = 1;
  bool verbose = false;
  std::string dir;
  int64_t origin_ns = 0;      // raw clock value of trace time 0; advanced past tracer overhead
  TraceWriter writer;
  std::mutex mu;
  HandleMap comm_ids{64};     // MPI_Comm bits -> comm id
  std::vector<CommEntry> comms;
  HandleMap dtypes{128};      // MPI_Datatype bits -> (id << 1) | defined
  uint32_t next_dtype = kFirstDerivedDatatype;
  HandleMap ops{32};          // MPI_Op bits -> (id << 1) | defined
  uint32_t next_op = kFirstUserOp;
  HandleMap callsites{1024};  // return address (or frame hash) -> callsite id
  uint32_t next_callsite = 0;
  HandleMap modules{64};      // module base -> module id
  uint32_t next_module = 0;
  // MPI_Request bits -> the oldest live request behind it: its packed
  // RequestInfo and where the program keeps it (its MPI_Request variable).
  BasicHandleMap<LiveRequest> requests{256};
  // Live requests sharing a handle with an older live one, oldest first. MPI
  // libraries return one shared handle for every MPI_PROC_NULL request.
  std::unordered_map<uint64_t, std::deque<uint64_t>> request_dups;
  // Behind a handle that was ever shared: each live request's packed info
  // by where the program keeps it (its MPI_Request variable), which tells
  // them apart (Open MPI's one empty request is also an MPI_Ibarrier's on a
  // communicator of one rank: testing that barrier is not testing the oldest
  // MPI_PROC_NULL send).
  // shared_keys holds every such handle (never erased; a lookup there is
  // cheap where none is shared, the common case, on every request made and
  // ended).
  std::unordered_map<uint64_t, std::vector<std::pair<uintptr_t, uint64_t>>> shared_at;
  HandleMap shared_keys{64};
  uint32_t next_request = 0;
  uintptr_t main_base = 0;
  std::string exe;
  // Timing-only mode (SKELTRACE_TIME_FILE): nothing is recorded; the wrappers
  // pass straight through and MPI_Finalize writes the run time to this file.
  std::string time_file;
  // Merging inside the job (SKELTRACE_MERGE_IN_JOB): the rank file goes to
  // stage_dir, a directory of this node, and MPI_Finalize merges the ranks'
  // files into dir + ".skm" (merge_in_job); keep: the rank files go to dir too.
  bool merge_in_job = false, keep_rank_files = false;
  std::string stage_dir;
  pid_t in_job_pid = 0;  // the rank's process (a forked child takes no part)
  int64_t time_start_ns = 0;      // when MPI_Init returned
  int64_t time_start_cpu_ns = 0;  // the process's CPU time (all its threads) then
  // Kernel samples during the run (SKELTRACE_CALIBRATE_EVERY_MS): every
  // sample_every_ns of wall time (thread CPU gap clock: of each thread's CPU
  // time), after a call, sample_units of kernel timed on the gap clock;
  // MPI_Finalize records their median with MPI_Init's rate.
  int64_t sample_every_ns = 0, last_sample_ns = 0;
  unsigned long long sample_units = 0;
  double init_rate = 0;
  std::vector<double> samples;
};

State& st() {
  static State* s = new State;  // never destroyed: wrappers may run during exit
  return *s;
}

thread_local int t_depth = 0;
// GapClock::kThreadCpu: the calling thread's CPU clock when it entered the
// current MPI call, and when the tracer was done with its previous one;
// whether the entry's was read (else the gap was short: see cpu_at()).
thread_local int64_t t_cpu_entry = 0;
thread_local int64_t t_cpu_last = 0;
thread_local bool t_cpu_entry_read = false;
// The last read of the thread's CPU clock, and the wall clock just after it.
thread_local int64_t t_cpu_read = 0, t_wall_at_cpu_read = INT64_MIN / 2;
// The CPU time of the thread's next kernel sample (SKELTRACE_CALIBRATE_EVERY_MS,
// taken every so much of its CPU time with the thread CPU gap clock).
thread_local int64_t t_cpu_next_sample = 0;
// The wall clock when the calling thread entered the current MPI call (0:
// not noted): the tracer's work before the call's own clock read (requests
// looked up, sizes asked) is cut out of the gap like its work after one.
thread_local int64_t t_wall_entry = 0;
// The bytes [lo, hi) the calling thread's last blocking receive filled (note_received).
thread_local uintptr_t t_received_lo = 0, t_received_hi = 0;

constexpr auto thread_cpu_ns = clock_ns<CLOCK_THREAD_CPUTIME_ID>;

// The thread CPU clock is a system call (about 370 ns here, against 20 ns
// for the wall clock through the vDSO); two per MPI call made the traced
// loop of 64 ranks on 2 cores 1.3x slower than with wall-clock gaps. So it
// is read only when kCpuReadAfterNs of wall time has passed since its last
// read: over a shorter span the thread cannot have been off the CPU for
// longer than the span, and its CPU time is taken as the wall time that
// passed (a rank that loses its core for a time slice, milliseconds on a
// shared node, is always read). A gap whose end was not read is shorter
// than that and was not interrupted: its event carries no cpu_gap (trace
// format 2.2: its CPU time is its wall gap).
constexpr int64_t kCpuReadAfterNs = 10000;

// Blocked time in a gap (GapClock::kThreadCpu, trace field kBlocked): a gap
// off the CPU for longer than this is split into the time the thread waited
// for a core (the scheduler's run delay, /proc/thread-self/schedstat) and
// the rest, when it was blocked (asleep, waiting for I/O). The skeleton
// sleeps the blocked time instead of computing it: a master-worker farm
// whose workers slept their tasks, traced on 4 ranks on 2 cores, had a
// skeleton that took 0.004 s for a 0.36 s application (no CPU time in the
// gaps). Blocked time under this is not recorded.
constexpr int64_t kBlockedMinNs = 50000;
// Other threads' CPU time (kTeamCpu) under this is not recorded: an MPI
// library's own helper threads, waking now and then.
constexpr int64_t kTeamCpuMinNs = 10000;

// The calling thread's schedstat file, opened at its first use and closed
// when the thread ends (-1: not available; no blocked time then).
struct SchedStat {
  int fd = -2;
  int64_t run_delay = 0;  // ns the thread waited for a core, at the last read
  int64_t wall = 0, cpu = 0;  // the wall clock and the thread's CPU time at the last read
  ~SchedStat() {
    if (fd >= 0) ::close(fd);
  }
  // Reads the run delay into run_delay, and the clocks into wall and cpu
  // around it; false where schedstat cannot be read. A thread that loses
  // its core between the clocks' reads and the file's (a system call's
  // return is where a loaded scheduler takes it) would count that wait
  // in the run delay and not off the CPU, or the other way round: the
  // read is taken again (up to three times) until the thread was off the
  // CPU under kSettledReadNs around it. A clean-clone CI run had a 3 ms
  // sleep come out 2.5 ms blocked when the clocks were read only before.
  bool read() {
    if (fd == -2) fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    for (int attempt = 0; attempt < 3; ++attempt) {
      const int64_t wall_before = clock_ns<CLOCK_MONOTONIC>(), cpu_before = thread_cpu_ns();
      if (!read_run_delay()) return false;
      const int64_t cpu_after = thread_cpu_ns(), wall_after = clock_ns<CLOCK_MONOTONIC>();
      wall = wall_before, cpu = cpu_before;
      if ((wall_after - wall_before) - (cpu_after - cpu_before) < kSettledReadNs) break;
    }
    return true;
  }

 private:
  static constexpr int64_t kSettledReadNs = 20000;
  bool read_run_delay() {
    char buf[128];
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = '\0';
    unsigned long long on_cpu = 0, delay = 0;
    if (std::sscanf(buf, "%llu %llu", &on_cpu, &delay) != 2) return false;
    run_delay = static_cast<int64_t>(delay);
    return true;
  }
};
thread_local SchedStat t_schedstat;
// Where the calling thread's current gap started (the wall clock after the
// tracer's work on the call before), and its blocked time (0: none noted).
thread_local int64_t t_gap_start = 0, t_blocked = 0;

// The CPU time of the rank's other threads (trace field kTeamCpu): the
// process's CPU clock less the first thread's, read at the end of gaps as
// long as kBlockedMinNs (where the first thread's CPU clock is read too),
// less what it was at the last such read. An OpenMP team computes between
// the calls, and where the ranks outnumber the cores the calling thread's
// CPU time is only its own share of that work: 4 Open MPI ranks of teams
// of 2 on 2 cores (tests/apps/omp_team.c) had a skeleton that ran 0.36 of
// the program's time. Read by the first thread only (at
// MPI_THREAD_MULTIPLE the others' calls are theirs). What the team's
// threads spun while the calling thread was in MPI (an OpenMP runtime's wait
// for the next region) counts too: on shared cores it is CPU the other ranks
// did not get (the same program: 0.77 CPU s of work a rank, 1.18 counted;
// the skeleton then ran 1.14-1.24 times the program's time, 0.71 with the
// spinning left out).
thread_local int64_t t_team_cpu_last = -1;  // -1: not read yet
thread_local int64_t t_team_cpu = 0;        // the current gap's (0: none; mark_entry() clears it)
void note_team_cpu(int64_t wall, int64_t cpu) {
  if (wall - t_gap_start < kBlockedMinNs || thread_number() != 0) return;
  const int64_t others = clock_ns<CLOCK_PROCESS_CPUTIME_ID>() - cpu;
  if (t_team_cpu_last >= 0 && others > t_team_cpu_last) t_team_cpu = others - t_team_cpu_last;
  t_team_cpu_last = others;
}
// At a gap's end (wall time `wall`, thread CPU time `cpu`), where the CPU
// clock was read: the part of the gap the thread was off the CPU, less this
// gap's run delay, is blocked time. The run delay since the last schedstat
// read, less all the time the thread was off the CPU between that read and
// the gap's start, is the gap's: off the CPU outside long gaps (in MPI
// calls, which spin or yield rather than sleep; in the tracer's own work,
// which can lose a time slice on a loaded machine; in short gaps) is taken
// as run delay. The thread's first call reads where its count starts.
// `wall` moves past a read.
void note_blocked(int64_t& wall, int64_t cpu) {
  if (t_gap_start == 0) {
    t_schedstat.read();
    wall = clock_ns<CLOCK_MONOTONIC>();
    return;
  }
  const int64_t off = (wall - t_gap_start) - (cpu - t_cpu_last);
  if (off < kBlockedMinNs || t_schedstat.fd < 0) return;
  const int64_t off_before = (t_gap_start - t_schedstat.wall) - (t_cpu_last - t_schedstat.cpu);
  const int64_t before = t_schedstat.run_delay;
  if (!t_schedstat.read()) return;
  // off the CPU from the gap's end to the read: the tracer's, a wait for a core
  const int64_t off_after = (t_schedstat.wall - wall) - (t_schedstat.cpu - cpu);
  const int64_t delay = std::min(
      off, std::max<int64_t>(0, t_schedstat.run_delay - before - std::max<int64_t>(0, off_before) -
                                    std::max<int64_t>(0, off_after)));
  if (off - delay >= kBlockedMinNs) t_blocked = off - delay;
  wall = clock_ns<CLOCK_MONOTONIC>();
}

// The calling thread's CPU time at wall time `wall` (now): read, and noted
// with the wall clock after the read, or taken as that of the last read plus
// the wall time since. `read` says which.
int64_t cpu_at(int64_t& wall, bool& read) {
  read = wall - t_wall_at_cpu_read >= kCpuReadAfterNs;
  if (!read) return t_cpu_read + (wall - t_wall_at_cpu_read);
  t_cpu_read = thread_cpu_ns();
  wall = t_wall_at_cpu_read = clock_ns<CLOCK_MONOTONIC>();
  return t_cpu_read;
}

template <typename H>
uint64_t handle_bits(H h) {
  uint64_t v = 0;
  static_assert(sizeof(H) <= sizeof v, "MPI handle wider than 64 bits");
  std::memcpy(&v, &h, sizeof h);
  return v;
}

void warn_once(const std::string& what) {
  State& s = st();
  if (!s.enabled) return;
  s.enabled = false;
  std::fprintf(stderr, "skeltrace: rank %d: %s; tracing stops, the application continues\n", s.rank,
               what.c_str());
}

int env_int(const char* name, int def, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end || x < lo || x > hi) {
    std::fprintf(stderr, "skeltrace: ignoring %s=%s (expected an integer in %d..%d)\n", name, v, lo, hi);
    return def;
  }
  return static_cast<int>(x);
}

// ---- symbolic ids (called with the lock held when multiple)

int64_t comm_id(MPI_Comm c) {
  if (c == MPI_COMM_NULL) return kNone;
  if (c == MPI_COMM_WORLD) return kCommWorld;
  if (c == MPI_COMM_SELF) return kCommSelf;
  const uint64_t* v = st().comm_ids.find(handle_bits(c));
  return v ? static_cast<int64_t>(*v) : kUnknownComm;
}

int64_t to_world(int64_t cid, int64_t local) {
  if (local < 0 || cid < 0) return local;
  const auto& comms = st().comms;
  if (static_cast<size_t>(cid) >= comms.size()) return local;
  const auto& m = comms[static_cast<size_t>(cid)].members;
  return local < static_cast<int64_t>(m.size()) ? m[static_cast<size_t>(local)] : local;
}

// The world ranks of a group's members, in the group's order.
std::vector<int64_t> world_ranks_of(MPI_Group g) {
  MPI_Group wg;
  int n = 0;
  PMPI_Group_size(g, &n);
  PMPI_Comm_group(MPI_COMM_WORLD, &wg);
  std::vector<int> local(static_cast<size_t>(n)), world(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) local[static_cast<size_t>(i)] = i;
  PMPI_Group_translate_ranks(g, n, local.data(), wg, world.data());
  PMPI_Group_free(&wg);
  return std::vector<int64_t>(world.begin(), world.end());
}

// A new communicator: its members (world ranks, by rank) are recorded. An
// intercommunicator is recorded as the communicator of both its groups (the
// world ranks of both, in world order), which the skeleton makes with
// MPI_Comm_create_group; its peers and roots name ranks of the remote
// group, so they are read as world ranks through that group (members).
int64_t register_comm(MPI_Comm c, int64_t parent, uint32_t func) {
  State& s = st();
  MPI_Group g;
  PMPI_Comm_group(c, &g);
  CommEntry e;
  e.members = world_ranks_of(g);
  PMPI_Group_free(&g);
  std::vector<int64_t> recorded = e.members;
  int inter = 0;
  PMPI_Comm_test_inter(c, &inter);
  if (inter) {
    PMPI_Comm_remote_group(c, &g);
    e.members = world_ranks_of(g);
    PMPI_Group_free(&g);
    recorded.insert(recorded.end(), e.members.begin(), e.members.end());
    std::sort(recorded.begin(), recorded.end());
  }
  auto id = static_cast<uint32_t>(s.comms.size());
  s.comms.push_back(e);
  s.comm_ids.put(handle_bits(c), id);
  s.writer.define_comm(id, parent, func, recorded.data(), recorded.size());
  return id;
}

void define_dtype(uint32_t id, MPI_Datatype t, const char* name) {
  int size = 0;
  PMPI_Type_size(t, &size);
  st().writer.define_datatype(id, size, name);
}

int64_t dtype_id(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return kNone;
  State& s = st();
  uint64_t key = handle_bits(t);
  const uint64_t* v = s.dtypes.find(key);
  uint32_t id;
  if (!v) {
    id = s.next_dtype++;
    s.dtypes.put(key, (static_cast<uint64_t>(id) << 1) | 1);
    define_dtype(id, t, "derived");
    return id;
  }
  id = static_cast<uint32_t>(*v >> 1);
  if (!(*v & 1)) {  // predefined, defined on first use
    s.dtypes.put(key, *v | 1);
    const char* n = predefined_datatype_name(id);
    define_dtype(id, t, n ? n : "?");
  }
  return id;
}

int64_t op_id(MPI_Op o) {
  if (o == MPI_OP_NULL) return kNone;
  State& s = st();
  uint64_t key = handle_bits(o);
  const uint64_t* v = s.ops.find(key);
  uint32_t id;
  if (!v) {
    id = s.next_op++;
    s.ops.put(key, (static_cast<uint64_t>(id) << 1) | 1);
  } else {
    id = static_cast<uint32_t>(*v >> 1);
    if (*v & 1) return id;
    s.ops.put(key, *v | 1);
  }
  const char* n = predefined_op_name(id);
  s.writer.define_op(id, n ? n : "user");
  return id;
}

void register_predefined() {
  State& s = st();
#define SKT_REG_DT(id, name)                                                   \
  if (name != MPI_DATATYPE_NULL && !s.dtypes.find(handle_bits(name)))          \
    s.dtypes.put(handle_bits(name), static_cast<uint64_t>(id) << 1);
  SKT_PREDEFINED_DATATYPES(SKT_REG_DT)
#undef SKT_REG_DT
#define SKT_REG_OP(id, name) \
  if (name != MPI_OP_NULL) s.ops.put(handle_bits(name), static_cast<uint64_t>(id) << 1);
  SKT_PREDEFINED_OPS(SKT_REG_OP)
#undef SKT_REG_OP
}

// ---- call sites

int find_main_base(struct dl_phdr_info* info, size_t, void* data) {
  *static_cast<uintptr_t*>(data) = info->dlpi_addr;
  return 1;  // the first object is the main program
}

uint32_t module_of(uintptr_t addr, uint64_t& offset) {
  State& s = st();
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(addr), &info) || !info.dli_fbase) {
    offset = addr;
    info.dli_fbase = nullptr;
  } else {
    offset = addr - reinterpret_cast<uintptr_t>(info.dli_fbase);
  }
  uint64_t key = reinterpret_cast<uintptr_t>(info.dli_fbase) + 1;
  if (const uint64_t* v = s.modules.find(key)) return static_cast<uint32_t>(*v);
  std::string name = info.dli_fname ? info.dli_fname : "?";
  if (!info.dli_fbase) name = "?";
  else if (reinterpret_cast<uintptr_t>(info.dli_fbase) == s.main_base || name.empty() ||
           name.find('/') == std::string::npos)
    name = s.exe.empty() ? name : s.exe;
  uint32_t id = s.next_module++;
  s.modules.put(key, id);
  s.writer.define_module(id, name);
  return id;
}

uint32_t callsite_id(const void* ret) {
  State& s = st();
  uintptr_t frames[kMaxStackDepth];
  int n = 1;
  frames[0] = reinterpret_cast<uintptr_t>(ret);
  uint64_t key = frames[0];
#ifdef SKT_HAVE_LIBUNWIND
  if (s.stack_depth > 1) {
    void* bt[kMaxStackDepth + 8];
    int got = unw_backtrace(bt, kMaxStackDepth + 8);
    int from = 0;
    while (from < got && bt[from] != ret) ++from;  // skip the tracer's own frames
    n = 0;
    key = 1469598103934665603ULL;
    for (int i = from; i < got && n < s.stack_depth; ++i) {
      frames[n++] = reinterpret_cast<uintptr_t>(bt[i]);
      key = (key ^ reinterpret_cast<uintptr_t>(bt[i])) * 1099511628211ULL;
    }
    if (n == 0) {
      frames[0] = reinterpret_cast<uintptr_t>(ret);
      n = 1;
      key = frames[0];
    }
  }
#endif
  if (const uint64_t* v = s.callsites.find(key | 1)) return static_cast<uint32_t>(*v);
  int64_t list[2 * kMaxStackDepth];
  for (int i = 0; i < n; ++i) {
    uint64_t off = 0;
    list[2 * i] = module_of(frames[i], off);
    list[2 * i + 1] = static_cast<int64_t>(off);
  }
  uint32_t id = s.next_callsite++;
  s.callsites.put(key | 1, id);
  s.writer.define_callsite(id, list, static_cast<size_t>(2 * n));
  return id;
}

// ---- requests: packed as id (32) | comm id (24) | flags (8)
constexpr uint64_t kReqAnySource = 1, kReqPersistent = 2;

uint64_t pack(const RequestInfo& ri) {
  return (static_cast<uint64_t>(ri.id) << 32) | (static_cast<uint64_t>(ri.comm_id & 0xffffff) << 8) |
         (ri.any_source_recv ? kReqAnySource : 0) | (ri.persistent ? kReqPersistent : 0);
}

// ---- time
int64_t rel(int64_t raw) { return raw - st().origin_ns; }

std::string hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string read_cmdline() {
  FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (!f) return "";
  std::string out;
  int c;
  while ((c = std::fgetc(f)) != EOF) out.push_back(c == 0 ? ' ' : static_cast<char>(c));
  std::fclose(f);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Whether this node's ranks outnumber the CPUs they may run on (the union of
// their affinity masks): then a rank's wall-clock gaps include time spent
// waiting for a core. Collective over MPI_COMM_WORLD.
bool ranks_outnumber_cpus(int& local, int& cpus) {
  local = 1;
  cpus = 0;
  MPI_Comm node = MPI_COMM_NULL;
  if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return false;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < n && i < CPU_SETSIZE; ++i) CPU_SET(i, &mine);
  }
  constexpr int kWords = sizeof(cpu_set_t) / sizeof(unsigned long);
  unsigned long in[kWords], all[kWords];
  std::memcpy(in, &mine, sizeof in);
  int rc = PMPI_Allreduce(in, all, kWords, MPI_UNSIGNED_LONG, MPI_BOR, node);
  PMPI_Comm_size(node, &local);
  PMPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return false;
  cpu_set_t any;
  std::memcpy(&any, all, sizeof any);
  cpus = CPU_COUNT(&any);
  return cpus > 0 && local > cpus;
}

// SKELTRACE_GAP_CLOCK: wall, cpu, or auto (cpu when ranks outnumber CPUs,
// or at MPI_THREAD_SERIALIZED and above: a rank's threads share its cores,
// and the wall clock of one thread's gap holds the others' computation too;
// the merge reads the wall clock after all where ranks had CPUs enough and
// one thread made every MPI call: `sharing` says which).
// Collective (auto asks the node's ranks), so every rank must call it.
bool choose_cpu_gaps(int rank, bool threads, CoreSharing& sharing) {
  const char* v = std::getenv("SKELTRACE_GAP_CLOCK");
  std::string mode = v && *v ? v : "auto";
  if (mode != "auto" && mode != "wall" && mode != "cpu") {
    if (rank == 0) std::fprintf(stderr, "skeltrace: ignoring SKELTRACE_GAP_CLOCK=%s (expected auto, wall or cpu)\n", v);
    mode = "auto";
  }
  int local = 1, cpus = 0;
  bool shared = ranks_outnumber_cpus(local, cpus);  // collective: called whatever the mode
  sharing = cpus == 0 || mode != "auto" ? CoreSharing::kUnknown  // a clock the user chose stands
            : shared                     ? CoreSharing::kShared
                                         : CoreSharing::kOwnCores;
  if (mode != "auto") return mode == "cpu";
  if (threads) return true;
  if (shared && rank == 0 && env_int("SKELTRACE_VERBOSE", 0, 0, 1))
    std::fprintf(stderr, "skeltrace: %d ranks share %d CPUs on rank 0's node: computation measured in thread CPU time\n",
                 local, cpus);
  return shared;
}

// The tracer's own fixed cost in every gap (TraceHeader::gap_floor_ns): a
// gap runs from the last clock read after one call (record(): the wall
// clock) to the first of the next wrapper (enter(): the wall clock), and a
// program that calls MPI back to back (an Irecv and its Isend) still shows
// that much. With cpu_gaps the CPU clock's floor (cpu_gap_floor_ns) is that
// of a gap read at both ends (cpu_at(): after the call, and at the entry,
// the CPU clock, then the wall clock). next_entry
// stands for the way into the next wrapper; not inlined, as the application's
// call is not. The shortest of many spans, so a lower bound (the real way in,
// through the PLT and enter(), is a few ns longer): what the generator takes
// off is never computation the application did. tests/apps/cxx_vector, five
// calls and no computation per iteration: 28 ns of every gap (wall) were the
// tracer's, its skeleton computed them and ran 5-8 % long.
__attribute__((noinline)) int64_t next_entry(bool cpu_gaps, int64_t* cpu_entry) {
  if (cpu_gaps) *cpu_entry = thread_cpu_ns();
  return now_ns();
}

// Ten batches of 200 spans with the CPU given up between them: ranks that
// share cores all measure at once after MPI_Init, and one batch could run
// while the core's other hardware thread was busy (a rank's floor came out
// 740-770 ns where its gaps went down to 530 ns, the others' floors 500).
void measure_gap_floors(bool cpu_gaps, double& wall_ns, double& cpu_ns) {
  int64_t wall = INT64_MAX, cpu = INT64_MAX;
  for (int i = 0; i < 2000; ++i) {
    if (i % 200 == 0) sched_yield();
    int64_t last = now_ns();
    wall = std::min(wall, next_entry(false, nullptr) - last);
    if (!cpu_gaps) continue;
    int64_t cpu_entry = 0, cpu_last = thread_cpu_ns();
    next_entry(true, &cpu_entry);
    cpu = std::min(cpu, cpu_entry - cpu_last);
  }
  wall_ns = static_cast<double>(std::max<int64_t>(wall, 0));
  cpu_ns = cpu_gaps ? static_cast<double>(std::max<int64_t>(cpu, 0)) : 0.0;
}

// mkdir -p: every rank may race to create the same path, so EEXIST is fine.
// A program that exits without MPI_Finalize keeps what it buffered: the
// file ends without an end chunk and reads as truncated.
void flush_at_exit() {
  State& s = st();
  if (s.enabled && s.writer.is_open() && getpid() == s.pid) s.writer.flush();
}

// In a fork()ed child: trace nothing, flush nothing. The child shares the
// rank file's descriptor and holds a copy of the parent's buffer; writing it
// (at exit(), say) would put the parent's events in the file twice.
void stop_in_child() { st().enabled = false; }

bool make_dir(const std::string& dir) {
  for (size_t pos = dir.find('/', 1); pos != std::string::npos; pos = dir.find('/', pos + 1))
    if (mkdir(dir.substr(0, pos).c_str(), 0755) != 0 && errno != EEXIST && errno != EACCES) return false;
  return mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

// The trace directory, made if missing and checked: a directory owned by
// this user (another user's directory, or a symlink to one, is refused).
// Returns an open O_DIRECTORY fd for openat, or -1 with `why` set.
int open_trace_dir(const std::string& dir, std::string& why) {
  if (!make_dir(dir)) {
    why = "cannot create trace directory " + dir + ": " + std::strerror(errno);
    return -1;
  }
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat sb {};
  if (fd < 0 || fstat(fd, &sb) != 0) {
    why = "cannot open trace directory " + dir + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  if (sb.st_uid != geteuid()) {
    why = "trace directory " + dir + " belongs to uid " + std::to_string(sb.st_uid) + ", not to this user";
    ::close(fd);
    return -1;
  }
  return fd;
}

// A copy of the staged rank file `from` as `name` in the trace directory
// (created, never through a symlink or over an existing file).
bool copy_into(const std::string& from, const std::string& dir, const std::string& name, std::string& why) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    why = "cannot read " + from + ": " + std::strerror(errno);
    return false;
  }
  int dir_fd = open_trace_dir(dir, why);
  if (dir_fd < 0) {
    ::close(in);
    return false;
  }
  int out = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  ::close(dir_fd);
  bool ok = out >= 0;
  char buf[1 << 16];
  for (ssize_t n; ok && (n = ::read(in, buf, sizeof buf)) != 0;) ok = n > 0 && ::write(out, buf, n) == n;
  if (!ok) why = "cannot copy " + from + " to " + dir + "/" + name + ": " + std::strerror(errno);
  if (in >= 0) ::close(in);
  if (out >= 0 && ::close(out) != 0) ok = false;
  return ok;
}

// The in-job merge's library, beside this tracer: libskelinjob-<MPI>.so.
using MergeInJob = int (*)(MPI_Comm, const char*, const char*, const char*, const char*, char*, size_t);
// SKELTRACE_MERGE_IN_JOB_LIB names another.
MergeInJob load_merge_in_job(std::string& why) {
  std::string path;
  Dl_info info{};
  if (const char* lib = std::getenv("SKELTRACE_MERGE_IN_JOB_LIB"); lib && *lib) {
    path = lib;
  } else if (dladdr(reinterpret_cast<void*>(&load_merge_in_job), &info) && info.dli_fname) {
    path = info.dli_fname;
    path = path.substr(0, path.rfind('/') + 1);
#if defined(OPEN_MPI)
    path += "libskelinjob-openmpi.so";
#else
    path += "libskelinjob-mpich.so";
#endif
  } else {
    why = "cannot find the tracer's own directory";
    return nullptr;
  }
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* fn = lib ? dlsym(lib, "skel_merge_in_job") : nullptr;
  if (!fn) why = std::string("cannot load the in-job merge: ") + dlerror();
  return reinterpret_cast<MergeInJob>(fn);
}

// At MPI_Finalize (every rank, the file closed): the ranks' files merged
// along a tree of the ranks into dir.skm (generate/injob/injob.cpp). Where
// that fails, nothing is lost: each rank's file goes to the trace directory
// as without SKELTRACE_MERGE_IN_JOB, and rank 0 says why.
void merge_in_job(State& s) {
  const std::string name = TraceDir::rank_file_name(static_cast<uint32_t>(s.rank));
  const std::string staged = s.stage_dir + "/" + name;
  std::string why;
  MergeInJob fn = load_merge_in_job(why);
  int loaded = fn != nullptr;
  PMPI_Allreduce(MPI_IN_PLACE, &loaded, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  char message[1024] = "";
  int rc = 1;
  if (loaded) {
    MPI_Comm comm;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    rc = fn(comm, staged.c_str(), s.stage_dir.c_str(), (s.dir + ".skm").c_str(), s.dir.c_str(), message,
            sizeof message);
    PMPI_Comm_free(&comm);
  } else if (!why.empty()) {
    std::snprintf(message, sizeof message, "%s", why.c_str());
  } else {
    std::snprintf(message, sizeof message, "another rank could not load the in-job merge");
  }
  struct stat sb {};
  const bool have_file = ::stat(staged.c_str(), &sb) == 0;  // not where this rank's tracing never started
  if (have_file && (rc != 0 || s.keep_rank_files) && !copy_into(staged, s.dir, name, why))
    std::fprintf(stderr, "skeltrace: rank %d: %s; the file stays in %s\n", s.rank, why.c_str(), s.stage_dir.c_str());
  else
    ::unlink(staged.c_str());
  ::rmdir(s.stage_dir.c_str());  // the last rank of the node to get here removes it
  if (s.rank != 0) return;
  if (rc == 0)
    std::fprintf(stderr, "skeltrace: merged in the job into %s.skm: %s\n", s.dir.c_str(), message);
  else
    std::fprintf(stderr, "skeltrace: the merge in the job failed (%s); the rank files are in %s\n", message,
                 s.dir.c_str());
}

}  // namespace

// ---------------------------------------------------------------- public

int64_t now_ns() { return clock_ns<CLOCK_MONOTONIC>(); }

bool recording() { return st().enabled; }

bool enter() {
  if (t_depth > 0 || !st().enabled) return false;
  ++t_depth;
  mark_entry();
  return true;
}

void mark_entry() {
  int64_t wall = now_ns();
  if (st().cpu_gaps) {
    t_cpu_entry = cpu_at(wall, t_cpu_entry_read);  // a read moves `wall` past it
    t_blocked = 0;  // note_blocked's, where the CPU clock was read
    t_team_cpu = 0;
    if (t_cpu_entry_read && t_gap_start != 0) note_team_cpu(wall, t_cpu_entry);
    if (t_cpu_entry_read) note_blocked(wall, t_cpu_entry);
  }
  t_wall_entry = wall;
}

int64_t entry_ns() { return t_wall_entry; }

void leave() { --t_depth; }

__attribute__((noinline)) void scrub_stack() {
  unsigned char area[kScrubBytes];
  explicit_bzero(area, sizeof area);
}
bool nested() { return t_depth > 0; }
void push() { ++t_depth; }
void pop() { --t_depth; }

// Messages matched by a probe and not yet received: few at a time (one per
// thread, typically), so a short list under its own lock.
namespace {
struct NotedMessage {
  MPI_Message handle;
  ProbedMessage message;
};
std::mutex g_messages_mu;
std::vector<NotedMessage> g_messages;
}  // namespace

void note_message(MPI_Message m, MPI_Comm comm, const MPI_Status* status) {
  if (m == MPI_MESSAGE_NULL) return;
  ProbedMessage p;
  p.comm = comm;
  p.source = status ? status->MPI_SOURCE : MPI_PROC_NULL;
  p.tag = status ? status->MPI_TAG : MPI_ANY_TAG;
  if (m == MPI_MESSAGE_NO_PROC) p.source = MPI_PROC_NULL;
  std::lock_guard<std::mutex> lock(g_messages_mu);
  if (g_messages.size() < 4096) g_messages.push_back({m, p});  // bounded: a program that never receives them
}

ProbedMessage take_message(MPI_Message m) {
  std::lock_guard<std::mutex> lock(g_messages_mu);
  for (size_t i = 0; i < g_messages.size(); ++i) {
    if (g_messages[i].handle != m) continue;
    ProbedMessage p = g_messages[i].message;
    g_messages.erase(g_messages.begin() + static_cast<std::ptrdiff_t>(i));
    return p;
  }
  ProbedMessage none;
  if (m == MPI_MESSAGE_NO_PROC) none.comm = MPI_COMM_SELF;
  return none;
}

int comm_size(MPI_Comm c) {
  int n = 0;
  if (PMPI_Comm_size(c, &n) != MPI_SUCCESS) return 0;
  return n;
}

int comm_rank(MPI_Comm c) {
  int r = -1;
  if (PMPI_Comm_rank(c, &r) != MPI_SUCCESS) return -1;
  return r;
}

int cart_dims(MPI_Comm c) {
  int n = 0;
  if (PMPI_Cartdim_get(c, &n) != MPI_SUCCESS) return 0;
  return n;
}

NeighborDegrees neighbor_degrees(MPI_Comm c) {
  NeighborDegrees d;
  int topo = MPI_UNDEFINED, n = 0, weighted = 0;
  if (PMPI_Topo_test(c, &topo) != MPI_SUCCESS) return d;
  if (topo == MPI_CART) d.in = d.out = 2 * cart_dims(c);
  if (topo == MPI_GRAPH && PMPI_Graph_neighbors_count(c, comm_rank(c), &n) == MPI_SUCCESS) d.in = d.out = n;
  if (topo == MPI_DIST_GRAPH && PMPI_Dist_graph_neighbors_count(c, &d.in, &d.out, &weighted) != MPI_SUCCESS)
    d = NeighborDegrees();
  return d;
}

int64_t neighbor_bytes(int count, MPI_Datatype dtype, int degree) {
  int size = 0;
  if (PMPI_Type_size(dtype, &size) != MPI_SUCCESS) return kNone;
  return int64_t{count} * size * degree;
}

int64_t bytes_w(const int* counts, const MPI_Datatype* types, int n) {
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    int sz = 0;
    PMPI_Type_size(types[i], &sz);
    sum += static_cast<int64_t>(counts[i]) * sz;
  }
  return sum;
}

int64_t bytes_w_f(const MPI_Fint* counts, const MPI_Fint* types, int n) {
  int64_t sum = 0;
  for (int i = 0; i < n; ++i) {
    int sz = 0;
    PMPI_Type_size(MPI_Type_f2c(types[i]), &sz);
    sum += static_cast<int64_t>(counts[i]) * sz;
  }
  return sum;
}

// The key of a request handle: with MPI_THREAD_MULTIPLE, per thread, so that
// a handle the MPI hands to one thread right after another thread's request
// under it completed is never taken for that request (the two threads'
// records race); user-space handles leave the top 16 bits free.
static uint64_t request_key(MPI_Request h) {
  const uint64_t bits = handle_bits(h);
  return st().multiple ? bits ^ (static_cast<uint64_t>(thread_number()) << 48) : bits;
}

// Whether handle `key` was ever shared by live requests.
bool ever_shared(const State& s, uint64_t key) { return s.shared_keys.size() && s.shared_keys.find(key); }

// The live request behind a shared handle that the program keeps at `at`
// (the latest made there), or nullptr.
const uint64_t* shared_request_at(State& s, uint64_t key, uintptr_t at) {
  if (!at || !ever_shared(s, key)) return nullptr;
  auto it = s.shared_at.find(key);
  if (it == s.shared_at.end()) return nullptr;
  for (auto k = it->second.rbegin(); k != it->second.rend(); ++k)
    if (k->first == at) return &k->second;
  return nullptr;
}

RequestInfo request_info(MPI_Request h, int nth, uintptr_t at) {
  RequestInfo ri;
  if (h == MPI_REQUEST_NULL) return ri;
  State& s = st();
  std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
  if (s.multiple) lock.lock();
  uint64_t key = request_key(h);
  const LiveRequest* oldest = s.requests.find(key);
  const uint64_t* v = oldest ? &oldest->packed : nullptr;
  const uint64_t* kept_at = v ? shared_request_at(s, key, at) : nullptr;
  if (kept_at) {
    v = kept_at;
    ri.by_address = true;
  } else if (v && nth > 0) {
    auto it = s.request_dups.find(key);
    v = it != s.request_dups.end() && static_cast<size_t>(nth) <= it->second.size() ? &it->second[nth - 1] : nullptr;
  }
  ri.shared = v && !s.request_dups.empty() && s.request_dups.count(key);
  if (v) {
    ri.id = static_cast<int64_t>(*v >> 32);
    ri.comm_id = static_cast<uint32_t>((*v >> 8) & 0xffffff);
    ri.any_source_recv = (*v & kReqAnySource) != 0;
    ri.persistent = (*v & kReqPersistent) != 0;
  }
  return ri;
}

namespace {
// Forgets the live request `id` behind handle h (the handle may be shared).
void forget_request(MPI_Request h, int64_t id) {
  State& s = st();
  std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
  if (s.multiple) lock.lock();
  uint64_t key = request_key(h);
  const LiveRequest* oldest = s.requests.find(key);
  if (!oldest) return;
  auto dup = s.request_dups.empty() ? s.request_dups.end() : s.request_dups.find(key);
  bool has_dups = dup != s.request_dups.end() && !dup->second.empty();
  if (static_cast<int64_t>(oldest->packed >> 32) == id) {
    if (has_dups) {
      s.requests.put(key, LiveRequest{dup->second.front(), 0});  // its address is in shared_at
      dup->second.pop_front();
    } else {
      s.requests.erase(key);
    }
  } else if (has_dups) {
    auto& q = dup->second;
    for (auto it = q.begin(); it != q.end(); ++it)
      if (static_cast<int64_t>(*it >> 32) == id) {
        q.erase(it);
        break;
      }
  }
  if (dup != s.request_dups.end() && dup->second.empty()) s.request_dups.erase(dup);
  if (!ever_shared(s, key)) return;
  auto kept = s.shared_at.find(key);
  if (kept == s.shared_at.end()) return;
  auto& live = kept->second;
  for (auto it = live.begin(); it != live.end(); ++it)
    if (static_cast<int64_t>(it->second >> 32) == id) {
      live.erase(it);
      break;
    }
}
}  // namespace

void request_done(MPI_Request h_before, const RequestInfo& info) {
  if (info.id == kNone || info.persistent) return;
  forget_request(h_before, info.id);
}

void request_freed(MPI_Request h_before, const RequestInfo& info) {
  if (info.id != kNone) forget_request(h_before, info.id);
}

int64_t world_rank_of(uint32_t cid, int local_rank) {
  State& s = st();
  std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
  if (s.multiple) lock.lock();
  return to_world(cid, local_rank);
}

namespace {
// The bytes [lo, hi) that `count` `dtype` at `buf` span (lower bound and
// extent); false for an empty or unknown one.
bool span_of(const void* buf, int count, MPI_Datatype dtype, uintptr_t& lo, uintptr_t& hi) {
  MPI_Aint lb = 0, extent = 0;
  if (!buf || count <= 0 || dtype == MPI_DATATYPE_NULL || PMPI_Type_get_extent(dtype, &lb, &extent) != MPI_SUCCESS ||
      extent <= 0)
    return false;
  lo = reinterpret_cast<uintptr_t>(buf) + static_cast<uintptr_t>(lb);
  hi = lo + static_cast<uintptr_t>(extent) * static_cast<uintptr_t>(count);
  return true;
}
// A kernel sample after the call that ends at wall time t1, when one is
// due: every sample_every_ns of wall time, or with the thread CPU gap clock
// of the thread's CPU time (ranks sharing cores; by the wall clock each
// sample would take 0.5 ms of a core every 50 ms however little of it the
// rank got: 64 ranks on 2 cores ran 2.5x slower traced than untraced).
void take_kernel_sample(State& s, int64_t t1) {
  if (s.sample_every_ns <= 0) return;
  if (s.cpu_gaps) {
    if (t_cpu_next_sample == 0) t_cpu_next_sample = t_cpu_entry + s.sample_every_ns;  // a new thread
    if (t_cpu_entry < t_cpu_next_sample) return;
    s.samples.push_back(sample_rate(s.sample_units, thread_cpu_ns));
    t_cpu_next_sample = t_cpu_entry + s.sample_every_ns;
    return;
  }
  if (t1 - s.last_sample_ns < s.sample_every_ns) return;
  s.samples.push_back(sample_rate(s.sample_units, now_ns));
  s.last_sample_ns = now_ns();
}
// After the tracer's work on a call (at wall time `done`, moved past any
// read): the thread's CPU time, and where the next gap starts.
void note_cpu_after_call(int64_t& done) {
  bool read = false;
  t_cpu_last = cpu_at(done, read);
  t_gap_start = done;
}
}  // namespace

void note_received(const void* buf, int count, MPI_Datatype dtype) {
  uintptr_t lo = 0, hi = 0;
  if (span_of(buf, count, dtype, lo, hi)) t_received_lo = lo, t_received_hi = hi;
}

void note_send_buffer(Rec& r, const void* buf, int count, MPI_Datatype dtype) {
  // most sends start outside the received bytes: no datatype query for them
  const uintptr_t b = reinterpret_cast<uintptr_t>(buf);
  if (b < t_received_lo || b >= t_received_hi) return;
  uintptr_t lo = 0, hi = 0;
  if (span_of(buf, count, dtype, lo, hi) && lo >= t_received_lo && hi <= t_received_hi) r.flags |= kFlagForwards;
}

void record(Rec& r) {
  State& s = st();
  if (!s.enabled) return;
  std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
  if (s.multiple) lock.lock();
  TraceWriter& w = s.writer;
  // Definitions first: they must precede the event record that uses them.
  uint32_t cs = callsite_id(r.ret);
  int64_t cid = r.has_comm ? comm_id(r.comm) : kNone;
  int64_t dt = dtype_id(r.dtype);
  int64_t dt2 = dtype_id(r.dtype2);
  int64_t op = op_id(r.op);
  int64_t new_cid = kNone;
  if (r.has_new_comm && r.new_comm != MPI_COMM_NULL) new_cid = register_comm(r.new_comm, cid, r.func);
  int64_t committed = kNone;
  if (r.has_commit && r.committed != MPI_DATATYPE_NULL) {
    committed = s.next_dtype++;
    s.dtypes.put(handle_bits(r.committed), (static_cast<uint64_t>(committed) << 1) | 1);
    define_dtype(static_cast<uint32_t>(committed), r.committed, "derived");
  }
  int64_t req_id = kNone;
  if (r.has_new_request && r.new_request != MPI_REQUEST_NULL) {
    RequestInfo ri;
    ri.id = s.next_request++;
    ri.comm_id = cid >= 0 ? static_cast<uint32_t>(cid) : 0xffffff;
    ri.any_source_recv = (r.flags & kFlagAnySource) != 0;
    ri.persistent = (r.flags & kFlagPersistent) != 0;
    uint64_t key = request_key(r.new_request);
    const LiveRequest* live = s.requests.find(key);
    if (live && !ever_shared(s, key)) {  // shared from now on: the one live so far first
      s.shared_keys.put(key, 1);
      s.shared_at[key].emplace_back(live->at, live->packed);
    }
    if (live)
      s.request_dups[key].push_back(pack(ri));
    else
      s.requests.put(key, LiveRequest{pack(ri), r.new_request_at});
    if (ever_shared(s, key)) s.shared_at[key].emplace_back(r.new_request_at, pack(ri));
    req_id = ri.id;
  }

  w.begin_event(r.func, cs);
  if (cid != kNone) w.put_int(Field::kComm, cid);
  if (r.peer != kNone) w.put_int(Field::kPeer, to_world(cid, r.peer));
  if (r.tag != kNone) w.put_int(Field::kTag, r.tag);
  if (r.count != kNone) w.put_int(Field::kCount, r.count);
  if (dt != kNone) w.put_int(Field::kDtype, dt);
  if (r.peer2 != kNone) w.put_int(Field::kPeer2, to_world(cid, r.peer2));
  if (r.tag2 != kNone) w.put_int(Field::kTag2, r.tag2);
  if (r.count2 != kNone) w.put_int(Field::kCount2, r.count2);
  if (dt2 != kNone) w.put_int(Field::kDtype2, dt2);
  // on an intercommunicator the root passes MPI_ROOT (itself), its group-mates MPI_PROC_NULL
  if (r.root != kNone)
    w.put_int(Field::kRoot, r.root == MPI_ROOT ? s.rank : r.root == MPI_PROC_NULL ? kProcNull : to_world(cid, r.root));
  if (op != kNone) w.put_int(Field::kOp, op);
  if (r.flags) w.put_int(Field::kFlags, static_cast<int64_t>(r.flags));
  if (r.bytes != kNone) w.put_int(Field::kBytes, r.bytes);
  if (r.bytes2 != kNone) w.put_int(Field::kBytes2, r.bytes2);
  if (r.counts) w.put_list(Field::kCounts, r.counts, static_cast<size_t>(r.ncounts));
  if (r.counts2) w.put_list(Field::kCounts2, r.counts2, static_cast<size_t>(r.ncounts2));
  if (r.dims) w.put_list(Field::kDims, r.dims, static_cast<size_t>(r.ndims));
  if (r.periods) w.put_list(Field::kPeriods, r.periods, static_cast<size_t>(r.ndims));
  if (r.color != kNone) w.put_int(Field::kColor, r.color);
  if (r.key != kNone) w.put_int(Field::kKey, r.key);
  if (new_cid != kNone) w.put_int(Field::kNewComm, new_cid);
  if (committed != kNone) w.put_int(Field::kDtype, committed);
  // Not read at the entry: the gap's CPU time is its wall time (the gap runs
  // from the last read or after it), and the field is left out; except at
  // MPI_THREAD_MULTIPLE, where the gap also holds the tracer's work after the
  // call before (the time line does not move) and the CPU time does not.
  if (s.cpu_gaps && (t_cpu_entry_read || s.multiple))
    w.put_int(Field::kCpuGap, t_cpu_entry > t_cpu_last ? t_cpu_entry - t_cpu_last : 0);
  if (s.cpu_gaps && t_blocked > 0) w.put_int(Field::kBlocked, t_blocked);
  if (s.cpu_gaps && t_team_cpu >= kTeamCpuMinNs) w.put_int(Field::kTeamCpu, t_team_cpu);  // the first thread's only
  if (s.threads && thread_number() != 0) w.put_int(Field::kThread, thread_number());
  if (r.kernel_rate != kNone) w.put_int(Field::kKernelRate, r.kernel_rate);
  if (r.kernel_samples != kNone) w.put_int(Field::kKernelSamples, r.kernel_samples);
  if (req_id != kNone) w.put_list(Field::kReqs, &req_id, 1);
  if (r.req_ids) w.put_list(Field::kReqs, r.req_ids, static_cast<size_t>(r.nreqs));
  if (r.req_sources) w.put_list(Field::kReqSources, r.req_sources, static_cast<size_t>(r.nreqs));
  // The tracer's own time before the call: the gap ends where the wrapper
  // was entered (the call's duration stays the PMPI call's).
  // Not at MPI_THREAD_MULTIPLE: the rank's one time line would move under
  // the other threads' calls (their starts before the origin: negative times).
  if (!s.multiple && t_wall_entry > 0 && r.t0 >= t_wall_entry) s.origin_ns += r.t0 - t_wall_entry;
  t_wall_entry = 0;
  w.end_event(rel(r.t0), rel(r.t1));
  if (r.frees_comm && cid >= static_cast<int64_t>(kFirstUserComm)) s.comm_ids.erase(handle_bits(r.comm));
  if (w.failed()) warn_once(w.error());
  take_kernel_sample(s, r.t1);
  // The tracer's own time after the call (ids, encoding, a chunk flush, a
  // kernel sample) is not application computation: move the time origin past it.
  // A read of the CPU clock here is cut out too (it can take a time slice:
  // 2.3 ms once, 4 Open MPI ranks on 2 cores); the gap starts after it.
  int64_t done = now_ns();
  if (s.cpu_gaps) note_cpu_after_call(done);
  if (!s.multiple) s.origin_ns += done - r.t1;
}

void start(int64_t t0, int64_t t1, uint32_t func, const void* ret, int provided, bool fortran) {
  State& s = st();
  if (s.started) return;
  s.started = true;
  if (const char* d = std::getenv("SKELTRACE_DISABLE"); d && *d && std::strcmp(d, "0") != 0) return;
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized) return;
  PMPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &s.size);
  if (const char* tf = std::getenv("SKELTRACE_TIME_FILE"); tf && *tf) {
    // Like the skeleton's own clock: from MPI_Init's return to MPI_Finalize's entry.
    s.time_file = tf;
    s.time_start_ns = t1;
    s.time_start_cpu_ns = clock_ns<CLOCK_PROCESS_CPUTIME_ID>();
    return;
  }
  s.multiple = provided == MPI_THREAD_MULTIPLE;
  s.threads = provided >= MPI_THREAD_SERIALIZED;
  s.stack_depth = env_int("SKELTRACE_STACK_DEPTH", 1, 1, kMaxStackDepth);
#ifndef SKT_HAVE_LIBUNWIND
  if (s.stack_depth > 1 && s.rank == 0)
    std::fprintf(stderr, "skeltrace: built without libunwind; SKELTRACE_STACK_DEPTH>1 ignored\n");
  s.stack_depth = 1;
#endif
  s.verbose = env_int("SKELTRACE_VERBOSE", 0, 0, 1) != 0;
  int buffer_kb = env_int("SKELTRACE_BUFFER_KB", 1024, 4, 1 << 20);
  int level = env_int("SKELTRACE_ZSTD_LEVEL", 3, 1, 19);
  int cal_ms = env_int("SKELTRACE_CALIBRATE_MS", 20, 0, 10000);
  int sample_every_ms = env_int("SKELTRACE_CALIBRATE_EVERY_MS", 50, 0, 3600000);

  // One run id for all files of this run: rank 0 draws it and broadcasts it.
  uint64_t run_id = 0;
  if (s.rank == 0) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    run_id = (static_cast<uint64_t>(ts.tv_sec) << 32) ^ static_cast<uint64_t>(ts.tv_nsec) ^
             (static_cast<uint64_t>(getpid()) << 16);
    if (run_id == 0) run_id = 1;
  }
  PMPI_Bcast(&run_id, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

  const char* dir_env = std::getenv("SKELTRACE_DIR");
  if (dir_env && *dir_env) {
    s.dir = dir_env;
  } else {
    char buf[64];
    std::snprintf(buf, sizeof buf, "skeltrace-%016llx", static_cast<unsigned long long>(run_id));
    s.dir = buf;
  }
  // A world started by MPI_Comm_spawn writes its own files, in a
  // subdirectory named by its run id: its ranks count from 0 again and must
  // not collide with the parents' (docs/tracer.md, "Safety").
  MPI_Comm parent = MPI_COMM_NULL;
  PMPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) s.dir += "/" + TraceDir::spawned_dir_name(run_id);
  if (const char* mj = std::getenv("SKELTRACE_MERGE_IN_JOB"); mj && *mj && std::strcmp(mj, "0") != 0) {
    if (parent != MPI_COMM_NULL) {
      if (s.rank == 0) std::fprintf(stderr, "skeltrace: a world started by MPI_Comm_spawn is not merged in the job\n");
    } else {
      const char* tmp = std::getenv("SKELTRACE_STAGE_DIR");
      if (!tmp || *tmp != '/') tmp = std::getenv("TMPDIR");
      char name[96];
      std::snprintf(name, sizeof name, "/skeltrace-stage-%u-%016llx", static_cast<unsigned>(geteuid()),
                    static_cast<unsigned long long>(run_id));
      s.stage_dir = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + name;
      s.merge_in_job = true;
      s.in_job_pid = getpid();
      s.keep_rank_files = std::strcmp(mj, "keep") == 0;
    }
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) s.exe.assign(exe, static_cast<size_t>(n));
  dl_iterate_phdr(find_main_base, &s.main_base);

  TraceHeader h;
  h.rank = static_cast<uint32_t>(s.rank);
  h.world_size = static_cast<uint32_t>(s.size);
  h.run_id = run_id;
  h.pid = static_cast<uint32_t>(getpid());
#if defined(OPEN_MPI)
  h.mpi_flavor = MpiFlavor::kOpenMpi;
#elif defined(MPICH)
  h.mpi_flavor = MpiFlavor::kMpich;
#endif
  int ver = 0, sub = 0;
  PMPI_Get_version(&ver, &sub);
  h.mpi_version_major = static_cast<uint8_t>(ver);
  h.mpi_version_minor = static_cast<uint8_t>(sub);
  h.stack_depth = static_cast<uint8_t>(s.stack_depth);
  h.thread_level = static_cast<uint8_t>(provided < 0 ? 0 : provided);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int liblen = 0;
  PMPI_Get_library_version(lib, &liblen);
  h.mpi_library = std::string(lib, strnlen(lib, sizeof lib));
  if (auto nl = h.mpi_library.find('\n'); nl != std::string::npos) h.mpi_library.resize(nl);
  for (char& c : h.mpi_library)
    if (c == '\t') c = ' ';
  h.tracer_version = SKT_TRACER_VERSION;
  h.hostname = hostname();
  h.executable = s.exe;
  h.command_line = read_cmdline();
  h.kernel_name = SKEL_KERNEL_NAME;
  h.kernel_version = SKEL_KERNEL_VERSION;
  s.cpu_gaps = choose_cpu_gaps(s.rank, s.threads, h.core_sharing);
  h.gap_clock = s.cpu_gaps ? GapClock::kThreadCpu : GapClock::kWall;
  h.kernel_units_per_s = calibrate(cal_ms, h.calibration_s, s.cpu_gaps ? thread_cpu_ns : now_ns);
  s.init_rate = h.kernel_units_per_s;
  measure_gap_floors(s.cpu_gaps, h.gap_floor_ns, h.cpu_gap_floor_ns);
  if (sample_every_ms > 0 && s.init_rate > 0) {
    s.sample_every_ns = static_cast<int64_t>(sample_every_ms) * 1000000;
    s.sample_units = static_cast<unsigned long long>(kSampleSeconds * s.init_rate) + 1;
  }

  register_predefined();
  s.comms.resize(2);
  s.comms[kCommWorld].members.resize(static_cast<size_t>(s.size));
  for (int i = 0; i < s.size; ++i) s.comms[kCommWorld].members[static_cast<size_t>(i)] = i;
  s.comms[kCommSelf].members.assign(1, s.rank);

  // Trace time 0 is the entry into MPI_Init; the tracer's set-up after
  // PMPI_Init returned (broadcast, calibration, opening the file) is cut out.
  int64_t t2 = now_ns();
  s.origin_ns = t0 + (t2 - t1);
  s.last_sample_ns = t2;
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  h.start_realtime_ns = static_cast<int64_t>(rt.tv_sec) * 1000000000LL + rt.tv_nsec - (t2 - t0);
  h.start_monotonic_ns = s.origin_ns;

  const std::string name = TraceDir::rank_file_name(static_cast<uint32_t>(s.rank));
  s.enabled = true;
  std::string why;
  const std::string& file_dir = s.merge_in_job ? s.stage_dir : s.dir;
  int dir_fd = open_trace_dir(file_dir, why);
  if (dir_fd < 0) {
    warn_once(why);
    return;
  }
  bool opened = s.writer.open_at(dir_fd, name, file_dir + "/" + name, h, static_cast<size_t>(buffer_kb) * 1024, level);
  ::close(dir_fd);
  if (!opened) {
    warn_once(s.writer.error());
    return;
  }
  s.pid = getpid();
  std::atexit(flush_at_exit);
  pthread_atfork(nullptr, nullptr, stop_in_child);
  t_cpu_entry = t_cpu_last = t_cpu_read = thread_cpu_ns();
  t_wall_at_cpu_read = t_gap_start = now_ns();
  if (s.cpu_gaps) t_schedstat.read();
  t_cpu_next_sample = t_cpu_read + s.sample_every_ns;
  Rec r(func, ret);
  r.t0 = t0;
  r.t1 = t1;
  if (fortran) r.flags |= kFlagFortran;
  // Both start at trace time 0 (t0 - origin would be negative by the set-up time).
  int64_t shift = s.origin_ns - t0;
  r.t0 += shift;
  r.t1 += shift;
  record(r);
}

void before_finalize() {
  State& s = st();
  if (s.time_file.empty()) return;
  double mine = static_cast<double>(now_ns() - s.time_start_ns) * 1e-9, slowest = mine;
  double cpu = static_cast<double>(clock_ns<CLOCK_PROCESS_CPUTIME_ID>() - s.time_start_cpu_ns) * 1e-9, cpu_sum = cpu;
  // Every rank is in MPI_Finalize, which is collective over MPI_COMM_WORLD.
  PMPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  PMPI_Reduce(&cpu, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (s.rank == 0) {
    FILE* f = std::fopen(s.time_file.c_str(), "w");
    bool ok = f && std::fprintf(f, "measured_s=%.9f ranks=%d cpu_s=%.9f\n", slowest, s.size, cpu_sum) > 0;
    int err = errno;
    if (f && std::fclose(f) != 0) ok = false, err = errno;
    // Once, here: warn_once() speaks only while recording, which this mode never does.
    if (!ok)
      std::fprintf(stderr, "skeltrace: rank 0: cannot write the run time to %s: %s; the application continues\n",
                   s.time_file.c_str(), std::strerror(err));
  }
  s.time_file.clear();
}

void finish(int64_t t0, int64_t t1, const void* ret, bool fortran) {
  State& s = st();
  if (!s.enabled || getpid() != s.pid) return;
  Rec r(kFunc_MPI_Finalize, ret);
  r.t0 = t0;
  r.t1 = t1;
  if (fortran) r.flags |= kFlagFortran;
  if (s.init_rate > 0) {
    r.kernel_rate = static_cast<int64_t>(run_rate(s.init_rate, s.samples) + 0.5);
    r.kernel_samples = static_cast<int64_t>(s.samples.size());
  }
  s.sample_every_ns = 0;  // no sample after the last call
  record(r);
  uint64_t events = s.writer.events();
  if (!s.writer.close(EndStatus::kFinalized)) warn_once(s.writer.error());
  if (s.verbose && s.rank == 0)
    std::fprintf(stderr, "skeltrace: rank 0 wrote %llu events to %s/\n", static_cast<unsigned long long>(events),
                 (s.merge_in_job ? s.stage_dir : s.dir).c_str());
  s.enabled = false;
  if (s.merge_in_job) merge_in_job(s);
}

void finish_in_job(int64_t t0, const void* ret, bool fortran) {
  State& s = st();
  if (!s.merge_in_job || getpid() != s.in_job_pid) return;
  // A rank whose tracing stopped (its file could not be opened, a full
  // disk) still takes part in the merge's collectives: every rank must, or
  // the others would wait for it forever. Its missing file stops the merge.
  if (s.enabled && getpid() == s.pid) finish(t0, t0, ret, fortran);
  else merge_in_job(s);
}

void abort_flush(const void* ret, MPI_Comm comm, int errorcode, bool fortran) {
  State& s = st();
  if (!s.enabled || getpid() != s.pid) return;
  Rec r(kFunc_MPI_Abort, ret);
  mark_entry();
  r.t0 = r.t1 = now_ns();
  r.set_comm(comm);
  (void)errorcode;
  if (fortran) r.flags |= kFlagFortran;
  record(r);
  s.writer.close(EndStatus::kAborted);
  s.enabled = false;
}

}  // namespace skt::tracer
