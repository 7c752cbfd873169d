// Loading the rank files into interned, normalised per-rank sequences.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "skel/memory.h"
#include "skel/merge.h"
#include "skel/skel_funcs.h"
#include "skel/value_bounds.h"

namespace skt::merge {
namespace {

struct TupleHash {
  size_t operator()(const ParamTuple& t) const {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t v : t) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ULL;
    return static_cast<size_t>(h);
  }
};

struct IdentityHash {
  size_t operator()(const Identity& i) const {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t v : {int64_t(i.func), int64_t(i.callsite), i.comm, i.dtype, i.dtype2, i.op, i.root,
                      int64_t(static_cast<uint8_t>(i.peer_class))})
      h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ULL;
    return static_cast<size_t>(h);
  }
};

// What a loaded call takes while the rank files are read: the call itself
// (64 bytes, and up to as much again while its vector grows) and its place
// among the first thread's calls (20): 124 bytes a call were measured at
// 20 million calls (Ray's trace, --keep-completions). The merge itself
// takes more, from 125 bytes a call where every rank makes every call to
// some 1,200 where no call merges across ranks (NBX with its polls kept):
// skelgen caps its address space to turn that into an error
// (skel/memory.h).
constexpr uint64_t kLoadBytesPerCall = 160;

// Stops a merge whose calls would not fit in memory with a one-line error
// as soon as it reads one call more than fit, instead of the kernel
// killing it (and perhaps the user's other work) later: a trace of tens of
// millions of calls per rank that nothing folds before the merge (an
// active-message program's polls kept with --keep-completions: Ray's 94
// million needed more than this machine's 23 GB).
std::string too_many_calls(uint64_t calls, uint64_t limit) {
  char gb[32];
  std::snprintf(gb, sizeof gb, "%.1f", static_cast<double>(limit * kLoadBytesPerCall) / 1e9);
  return "the traces hold more calls than this machine's memory can load: " + std::to_string(calls) +
         " read, about " + std::to_string(kLoadBytesPerCall) + " bytes each, " + gb +
         " GB available (set SKELGEN_MEMORY_GB to allow more, or trace a shorter run)";
}

// Global tables shared by all ranks while loading.
struct Interner {
  MergedTrace& t;
  std::map<std::string, uint32_t> modules;
  std::map<std::vector<std::pair<uint32_t, uint64_t>>, uint32_t> callsites;
  std::map<std::pair<std::string, int64_t>, uint32_t> datatypes;
  std::map<std::string, uint32_t> ops;
  // communicator symbols by (creating func, callsite, parent symbol, slot)
  std::map<std::array<int64_t, 4>, uint32_t> comms;
  std::unordered_map<Identity, uint32_t, IdentityHash> identities;
  std::vector<std::map<std::vector<int64_t>, int32_t>> group_index;  // per comm symbol: group (CommInfo::runs) -> index
  std::map<std::array<int64_t, 3>, uint32_t> slots;  // per (creating func, callsite, parent): slots made
  // per (creating func, callsite, parent) and group (CommInfo::runs): the slot the group was last given
  std::map<std::pair<std::array<int64_t, 3>, std::vector<int64_t>>, uint32_t> slot_of_group;

  uint64_t calls = 0;       // calls kept so far, every rank and run
  uint64_t call_limit = 0;  // more than this many would not fit in memory (kLoadBytesPerCall); 0: no limit

  explicit Interner(MergedTrace& tables) : t(tables) {}

  uint32_t module(const std::string& path) {
    auto [it, fresh] = modules.emplace(path, static_cast<uint32_t>(t.modules.size()));
    if (fresh) t.modules.push_back(path);
    return it->second;
  }
  uint32_t identity(const Identity& id) {
    auto [it, fresh] = identities.emplace(id, static_cast<uint32_t>(t.identities.size()));
    if (fresh) t.identities.push_back(id);
    return it->second;
  }
};

// Per rank: the file's local ids mapped to the global tables.
struct RankMaps {
  std::unordered_map<uint32_t, uint32_t> callsite, dtype, op;
  std::unordered_map<ParamTuple, uint32_t, TupleHash> tuples;
  std::unordered_map<int64_t, int64_t> comm;  // local comm id -> symbol
  // live symbols per creation key, to reuse slots of freed communicators
  std::map<std::array<int64_t, 3>, std::set<uint32_t>> live_slots;
  std::unordered_map<int64_t, std::pair<std::array<int64_t, 3>, uint32_t>> slot_of;  // local comm id -> key, slot
};


uint32_t global_callsite(Interner& in, RankMaps& maps, const TraceFile& f, uint32_t local) {
  auto it = maps.callsite.find(local);
  if (it != maps.callsite.end()) return it->second;
  std::vector<std::pair<uint32_t, uint64_t>> key;
  auto cs = f.callsites().find(local);
  if (cs != f.callsites().end())
    for (const Frame& fr : cs->second.frames)
      key.push_back({in.module(fr.module < f.modules().size() ? f.modules()[fr.module] : "?"), fr.offset});
  auto [git, fresh] = in.callsites.emplace(key, static_cast<uint32_t>(in.t.callsites.size()));
  if (fresh) {
    std::vector<Frame> frames;
    for (auto& [m, off] : key) frames.push_back(Frame{m, off});
    in.t.callsites.push_back(frames);
  }
  maps.callsite[local] = git->second;
  return git->second;
}

int64_t global_dtype(Interner& in, RankMaps& maps, const TraceFile& f, int64_t local) {
  if (local == kNone) return kNone;
  auto it = maps.dtype.find(static_cast<uint32_t>(local));
  if (it != maps.dtype.end()) return it->second;
  auto d = f.datatypes().find(static_cast<uint32_t>(local));
  std::string name = d == f.datatypes().end() ? "?" : d->second.name;
  int64_t size = d == f.datatypes().end() ? -1 : d->second.size;
  auto [git, fresh] = in.datatypes.emplace(std::make_pair(name, size), static_cast<uint32_t>(in.t.datatypes.size()));
  if (fresh) in.t.datatypes.push_back(DatatypeInfo{git->second, size, name});
  maps.dtype[static_cast<uint32_t>(local)] = git->second;
  return git->second;
}

int64_t global_op(Interner& in, RankMaps& maps, const TraceFile& f, int64_t local) {
  if (local == kNone) return kNone;
  auto it = maps.op.find(static_cast<uint32_t>(local));
  if (it != maps.op.end()) return it->second;
  auto o = f.ops().find(static_cast<uint32_t>(local));
  std::string name = o == f.ops().end() ? "op" + std::to_string(local) : o->second;
  if (name == "user") name += std::to_string(local);  // user ops: one symbol per rank-local op
  auto [git, fresh] = in.ops.emplace(name, static_cast<uint32_t>(in.t.ops.size()));
  if (fresh) in.t.ops.push_back(name);
  maps.op[static_cast<uint32_t>(local)] = git->second;
  return git->second;
}

int64_t comm_symbol(const RankMaps& maps, int64_t local) {
  if (local == kNone) return kNone;
  if (local == kCommWorld || local == kCommSelf) return local;
  auto it = maps.comm.find(local);
  return it == maps.comm.end() ? kUnknownComm : it->second;  // made by a call the tracer does not record
}

// Whether communicator symbol `symbol` already gives one of the members of
// group `def` another group (a communicator made again by the same call
// with other members: a refinement's ranks, split off and freed in turn).
bool gives_members_another_group(const Interner& in, uint32_t symbol, const CommInfo& def) {
  const CommSymbol& c = in.t.comms[symbol];
  int32_t mine = -1;  // def's group in the symbol, -1: none yet
  if (symbol < in.group_index.size()) {
    auto g = in.group_index[symbol].find(def.runs);
    if (g != in.group_index[symbol].end()) mine = g->second;
  }
  if (mine >= 0 && c.groups.size() == 1) return false;  // the one group there is (MPI_Comm_dup's)
  for (int64_t m : def.members())
    if (m >= 0 && static_cast<size_t>(m) < c.group_of.size() && c.group_of[m] >= 0 && c.group_of[m] != mine) return true;
  return false;
}

constexpr uint32_t kSlotsLooked = 64;

// A communicator created by event ev of rank r: its symbol, and r's group.
// The symbol is the call's (function, call site, parent) and a slot: the
// first not live on this rank whose symbol gives none of the new group's
// members another group. A communicator freed and made again by the same
// call takes its symbol again (a loop that splits and frees folds), unless
// its members differ: each rank's group in a symbol is one, and a peer's
// rank in the communicator is read from it (PRK AMR's refinements, split
// off from MPI_COMM_WORLD by one call, their owners changing as they
// move: a peer's world rank was taken for its rank in the wrong group).
int64_t create_comm(Interner& in, RankMaps& maps, const TraceFile& f, const Event& ev, uint32_t callsite,
                    int64_t parent, uint32_t rank, uint32_t world) {
  std::array<int64_t, 3> key{ev.func, callsite, parent};
  std::set<uint32_t>& live = maps.live_slots[key];
  auto def = f.comms().find(static_cast<uint32_t>(ev.new_comm));
  auto taken = [&](uint32_t slot) {
    if (live.count(slot)) return true;
    if (def == f.comms().end()) return false;
    auto it = in.comms.find(std::array<int64_t, 4>{key[0], key[1], key[2], slot});
    return it != in.comms.end() && gives_members_another_group(in, it->second, def->second);
  };
  // the first free of at most kSlotsLooked; past them, the slot the group was given before if free, else
  // a new one (a trace that makes a communicator of new members every time would otherwise look at all
  // it made before, each time; the group's other members find the slot it was given)
  uint32_t& made = in.slots[key];
  uint32_t slot = 0;
  while (slot < made && slot < kSlotsLooked && taken(slot)) ++slot;
  if (slot == kSlotsLooked) {
    auto before = def == f.comms().end() ? in.slot_of_group.end() : in.slot_of_group.find({key, def->second.runs});
    slot = before != in.slot_of_group.end() && !taken(before->second) ? before->second : made;
  }
  made = std::max(made, slot + 1);
  if (def != f.comms().end()) in.slot_of_group[{key, def->second.runs}] = slot;
  live.insert(slot);
  auto [it, fresh] = in.comms.emplace(std::array<int64_t, 4>{key[0], key[1], key[2], slot},
                                      static_cast<uint32_t>(in.t.comms.size()));
  if (fresh) {
    CommSymbol c;
    c.created_by = ev.func;
    c.callsite = callsite;
    c.parent = parent;
    c.slot = slot;
    c.group_of.assign(world, -1);
    in.t.comms.push_back(c);
  }
  CommSymbol& c = in.t.comms[it->second];
  if (def != f.comms().end()) {
    // each distinct group once: look it up in this symbol's index
    if (in.group_index.size() <= it->second) in.group_index.resize(it->second + 1);
    auto& index = in.group_index[it->second];
    auto [g, fresh_group] = index.emplace(def->second.runs, static_cast<int32_t>(c.groups.size()));
    if (fresh_group) c.groups.push_back(def->second.members());
    c.group_of[rank] = g->second;
  }
  if (ev.func == kFunc_MPI_Cart_create && c.dims.empty()) {
    c.dims = ev.dims;
    c.periods = ev.periods;
  }
  maps.comm[ev.new_comm] = it->second;
  maps.slot_of[ev.new_comm] = {key, slot};
  return it->second;
}

// A rank's gap floors (the tracer's own cost in every gap, measured at
// MPI_Init: TraceHeader::gap_floor_ns) are lowered to its shortest gap,
// wall and CPU, after MPI_Init. The floor is meant as a lower bound of every
// gap, what the generator takes off as not the application's; measured
// while the ranks start together on shared cores it can come out high: 4
// Open MPI ranks on 2 cores measured 1,021-1,201 ns (wall, with the CPU
// clock's reads in it), and the one at 1,201 ns made gaps of 1,061 ns (CPU:
// 530 against 581). Not with MPI_THREAD_MULTIPLE, where a gap can run from
// another thread's call.
void lower_floors_to_shortest_gaps(MergedRank& mr, const RankData& rd, const TraceHeader& h) {
  if (h.thread_level >= 3) return;
  for (size_t i = 1; i < rd.events.size(); ++i) {
    const RankEvent& e = rd.events[i];
    if (mr.gap_floor_ns > 0 && e.gap >= 0) mr.gap_floor_ns = std::min(mr.gap_floor_ns, static_cast<double>(e.gap));
    if (mr.cpu_gap_floor_ns > 0 && rd.cpu_work && e.work != kNone && e.work >= 0)
      mr.cpu_gap_floor_ns = std::min(mr.cpu_gap_floor_ns, static_cast<double>(e.work));
  }
}

// An MPI_Iprobe that found nothing: what another must share to continue its spin.
struct FailedProbe {
  uint32_t callsite = 0;
  int64_t comm = 0, peer = 0, tag = 0;
  uint64_t flags = 0;
  auto key() const { return std::tie(callsite, comm, peer, tag, flags); }
  bool operator==(const FailedProbe& o) const { return key() == o.key(); }
  bool operator<(const FailedProbe& o) const { return key() < o.key(); }
};

// A probe's repeats (the same probe finding nothing again, next after
// itself): how many, and how many within kSpinNs of it.
struct SpinSite {
  uint64_t repeats = 0, fast = 0;
  bool spins() const { return 2 * fast > repeats; }  // its median gap is under kSpinNs
};

// One thread's calls on one rank while loading: where they go, their
// distinct parameter tuples, and the end of the last one (for its gaps).
// And the spinning probes it is leaving out (spun_probe).
struct ThreadSink {
  RankData* data = nullptr;
  std::unordered_map<ParamTuple, uint32_t, TupleHash> tuples;
  int64_t last_end = -1;
  int64_t first_start = -1;
  std::optional<FailedProbe> last_probe;  // the last probe kept, where it and every call since found nothing
  CarriedTime carried;                     // spun probes' time, for the next call kept
  uint64_t spun = 0;                       // probes left out (spun_probe, leave_out_slow_repeats)
  std::map<FailedProbe, SpinSite> spin_sites;
  std::vector<std::pair<size_t, FailedProbe>> slow_repeats;  // repeats kept (kSpinNs or more after): event index
};

std::optional<FailedProbe> failed_probe(const Event& ev) {
  if (replayed_as(ev.func) != kFunc_MPI_Iprobe || !(ev.flags & kFlagTestFailed)) return std::nullopt;
  return FailedProbe{ev.callsite, ev.comm, ev.peer, ev.tag, ev.flags};
}

// A thread's gap before ev: from the end of its own previous call (the
// first: from the end of the first thread's last call before it, MainCalls).
// The tracer takes its own time out of the rank's one time line, the other
// threads' too: a thread's short gap can come out below 0, and is 0.
int64_t gap_before(const ThreadSink& sink, const Event& ev) {
  return sink.last_end >= 0 ? std::max<int64_t>(0, ev.t_start_ns - sink.last_end) : ev.gap_ns;
}

int64_t unread_cpu_gap_extra(const TraceHeader& h);

// The CPU time of ev's gap (of `gap` ns) on a thread CPU trace.
int64_t gap_work(const Event& ev, int64_t gap, const TraceHeader& h) {
  return ev.cpu_gap_ns != kNone ? ev.cpu_gap_ns : gap + unread_cpu_gap_extra(h);
}

// The first of a stream's calls (in file order) after file position seq.
std::vector<RankEvent>::const_iterator after_seq(const std::vector<RankEvent>& e, uint32_t seq) {
  return std::upper_bound(e.begin(), e.end(), seq, [](uint32_t v, const RankEvent& x) { return v < x.seq; });
}

// Spinning probes, left out as they are read (docs/merge.md, "Spinning
// probes"): an MPI_Iprobe that found nothing, within kSpinNs of the call
// before it, where the last probe kept was the same probe finding nothing
// (same call site, communicator, source and tag) and every call kept since
// found or completed nothing too (a sparse exchange by NBX tests its sends
// between its probes). An active-message layer polls so, nothing
// computed between its probes: Ray, the genome assembler, made 47 million
// on each of 2 ranks in a 13 s run (80 ns apart), a merge of them all
// more memory than the machine's 23 GB. The first probe of each spin is
// kept; the others' gaps are carried into the next call kept as
// computation, their durations as time in it, as the spinning polls of
// coalesce_timed_completions(). A probe does not change MPI's state, and
// the skeleton's next calls (the probe that found the message, the
// receive) wait as long as the message takes. A farm master that computes
// between its probes (more than kSpinNs) keeps every one. A repeat kept
// because it came later (an interrupt) is left out after the rank is read
// where most of its probe's repeats spin (leave_out_slow_repeats).
bool spun_probe(ThreadSink& sink, const Event& ev, bool cpu_work, const TraceHeader& h) {
  const std::optional<FailedProbe> probe = failed_probe(ev);
  if (!probe || !sink.last_probe || !(*sink.last_probe == *probe)) return false;
  const int64_t gap = gap_before(sink, ev);
  SpinSite& site = sink.spin_sites[*probe];
  ++site.repeats;
  if (gap >= kSpinNs) {
    sink.slow_repeats.emplace_back(sink.data->events.size(), *probe);
    return false;
  }
  ++site.fast;
  RankEvent left_out;
  left_out.gap = gap;
  left_out.dur = ev.duration_ns;
  left_out.blocked = ev.blocked_ns;
  if (cpu_work) {
    left_out.work = gap_work(ev, gap, h);
    left_out.team = ev.team_cpu_ns;
  }
  sink.carried.add(left_out);
  sink.last_end = ev.t_start_ns + ev.duration_ns;
  ++sink.spun;
  return true;
}

// The repeats spun_probe() kept for their gap, where their probe spins: left
// out, their time carried into the next call kept as it carries the others'
// (so that a spin leaves one probe however often it was interrupted).
void leave_out_slow_repeats(ThreadSink& sink) {
  if (sink.slow_repeats.empty()) return;
  std::vector<RankEvent>& ev = sink.data->events;
  CarriedTime c;
  size_t kept = 0, next = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (next < sink.slow_repeats.size() && sink.slow_repeats[next].first == i &&
        sink.spin_sites[sink.slow_repeats[next++].second].spins()) {
      c.add(ev[i]);
      ++sink.spun;
      continue;
    }
    ev[kept++] = c.into(ev[i]);
  }
  ev.resize(kept);
  sink.slow_repeats.clear();
}

// The ends of the first thread's calls, in order, with their file positions:
// where another thread started and ended among them (its fork and join).
struct MainCalls {
  std::vector<int64_t> starts, ends;
  std::vector<uint32_t> seqs;
  // The end of the last call that ended by t, or -1.
  int64_t end_before(int64_t t) const {
    auto it = std::upper_bound(ends.begin(), ends.end(), t);
    return it == ends.begin() ? -1 : *(it - 1);
  }
  // The last call that ended by t (its seq), or -1.
  int64_t ended_by(int64_t t) const {
    auto it = std::upper_bound(ends.begin(), ends.end(), t);
    return it == ends.begin() ? -1 : static_cast<int64_t>(seqs[static_cast<size_t>(it - ends.begin() - 1)]);
  }
  // The first thread's call after a thread that ended at t: its gap (wall
  // clock) is taken to start at t, not before: the first thread was waiting
  // for the other (pthread_join), not computing; nor was it blocked in any
  // other way then (a join's wait is blocked time: the skeleton joins its
  // own thread there). rd: the first thread's calls, in file order.
  void waited_for(RankData& rd, int64_t t) const {
    auto it = std::lower_bound(starts.begin(), starts.end(), t);
    if (it == starts.end()) return;
    RankEvent& e = rd.events[static_cast<size_t>(it - starts.begin())];
    const int64_t cut = e.gap - std::max<int64_t>(0, std::min(e.gap, *it - t));
    e.gap -= cut;
    e.blocked = std::max<int64_t>(0, e.blocked - cut);
  }
  // The first call that started at or after t (its seq), or -1 (none: the end).
  int64_t started_from(int64_t t) const {
    auto it = std::lower_bound(starts.begin(), starts.end(), t);
    return it == starts.end() ? -1 : static_cast<int64_t>(seqs[static_cast<size_t>(it - starts.begin())]);
  }
};

// A thread CPU trace of a rank that had CPUs enough and made every MPI call
// from one thread is read by its wall-clock gaps (CoreSharing): an OpenMP
// team computes between the calls, and the calling thread's CPU time is its
// own share of that work, less where the team outnumbers the rank's cores
// (miniVite, 2 MPICH ranks of 2 threads on 2 cores: 3.06 CPU s in 4.18 s of
// gaps, its skeleton 25 % short). A wall gap holds the time asleep too.
void read_wall_gaps(RankData& rd) {
  rd.cpu_work = false;
  rd.any_blocked = false;
  for (RankEvent& e : rd.events) {
    e.work = kNone;
    e.blocked = 0;
  }
}

// A thread CPU trace of a rank that made every MPI call from one thread and
// shared its cores with other ranks: the CPU time its other threads used
// (trace field kTeamCpu, an OpenMP team's work between the calls) is the
// gap's work too, which the skeleton's one thread computes; the calling
// thread's time asleep in such a gap was its wait for the team (4 Open MPI
// ranks of teams of 2 on 2 cores: the skeleton ran 0.36 of the program's
// time on the calling thread's CPU time alone). Where several threads made
// calls, the other threads' CPU time is theirs, read by their own clocks.
void add_team_work(RankData& rd) {
  bool blocked = false;
  for (RankEvent& e : rd.events) {
    if (e.team > 0 && e.work != kNone) {
      e.work += e.team;
      e.blocked = 0;
    }
    e.team = 0;
    blocked |= e.blocked > 0;
  }
  rd.any_blocked = blocked;
}

// A thread CPU trace leaves a gap's cpu_gap out where the tracer did not
// read the CPU clock at its end (format 2.2: the gap was short and not
// interrupted, its CPU time is its wall time). Such a gap counts as if read
// at both ends, with the CPU clock's floor in it where its wall time holds
// the wall clock's: the generator, taking the CPU floor off every gap's CPU
// time, then keeps its wall time less the wall floor.
int64_t unread_cpu_gap_extra(const TraceHeader& h) {
  return std::max<int64_t>(0, std::llround(h.cpu_gap_floor_ns - h.gap_floor_ns));
}

void add_event(Interner& in, RankMaps& maps, const TraceFile& f, const Event& ev, uint32_t r, uint32_t world_size,
               bool cpu_work, ThreadSink& sink) {
  RankData& rd = *sink.data;
  RankEvent re;
  re.seq = static_cast<uint32_t>(ev.seq);
  re.gap = gap_before(sink, ev);
  if (sink.first_start < 0) sink.first_start = ev.t_start_ns;
  sink.last_end = ev.t_start_ns + ev.duration_ns;
  if (cpu_work) re.work = gap_work(ev, re.gap, f.header());
  re.dur = ev.duration_ns;
  re.blocked = ev.blocked_ns;
  if (cpu_work) re.team = ev.team_cpu_ns;
  re = sink.carried.into(re);  // the spun probes' before it (spun_probe)
  // a poll that found nothing between two probes continues the spin (NBX: a probe, a test of the sends)
  if (std::optional<FailedProbe> probe = failed_probe(ev)) sink.last_probe = probe;
  else if (!(ev.flags & kFlagTestFailed)) sink.last_probe.reset();
  rd.any_blocked |= re.blocked > 0;
  Identity id;
  id.func = replayed_as(ev.func);  // MPI_Mrecv merged as the MPI_Recv the skeleton makes
  id.callsite = global_callsite(in, maps, f, ev.callsite);
  id.comm = comm_symbol(maps, ev.comm);
  id.dtype = global_dtype(in, maps, f, ev.dtype);
  id.dtype2 = global_dtype(in, maps, f, ev.dtype2);
  id.op = global_op(in, maps, f, ev.op);
  id.root = ev.root;
  id.peer_class = (ev.flags & kFlagAnySource) ? PeerClass::kAnySource : ev.peer != kNone ? PeerClass::kRank : PeerClass::kNone;
  int64_t new_comm = kNone;
  if (ev.new_comm != kNone) new_comm = create_comm(in, maps, f, ev, id.callsite, id.comm, r, world_size);
  if (ev.func == kFunc_MPI_Comm_free && ev.comm != kNone) {
    auto it = maps.slot_of.find(ev.comm);
    if (it != maps.slot_of.end()) {
      maps.live_slots[it->second.first].erase(it->second.second);
      maps.slot_of.erase(it);
    }
    maps.comm.erase(ev.comm);
  }
  re.identity = in.identity(id);
  ParamTuple p;
  p[size_t(Param::peer)] = ev.peer;
  p[size_t(Param::peer2)] = ev.peer2;
  p[size_t(Param::tag)] = ev.tag;
  p[size_t(Param::tag2)] = ev.tag2;
  p[size_t(Param::count)] = ev.count;
  p[size_t(Param::count2)] = ev.count2;
  p[size_t(Param::bytes)] = ev.bytes;
  p[size_t(Param::bytes2)] = ev.bytes2;
  p[size_t(Param::color)] = ev.color;
  p[size_t(Param::key)] = ev.key;
  p[size_t(Param::new_comm)] = new_comm;
  p[size_t(Param::forwards)] = forwarding_send(ev.func) ? ((ev.flags & kFlagForwards) ? 1 : 0) : kNone;
  auto [tp, fresh_tuple] = sink.tuples.emplace(p, static_cast<uint32_t>(rd.params.size()));
  if (fresh_tuple) rd.params.push_back(p);
  re.params = tp->second;
  bool completion = uses_requests(ev.func);
  if (!completion && ev.reqs.size() == 1) re.created_request = ev.reqs[0];
  if (!ev.counts.empty() || !ev.counts2.empty() || !ev.dims.empty() || !ev.periods.empty() ||
      (completion && !ev.reqs.empty()) || !ev.req_sources.empty()) {
    re.lists = static_cast<int32_t>(rd.lists.size());
    rd.lists.emplace_back();
    auto& l = rd.lists.back();
    l[size_t(ListField::counts)] = ev.counts;
    l[size_t(ListField::counts2)] = ev.counts2;
    l[size_t(ListField::dims)] = ev.dims;
    l[size_t(ListField::periods)] = ev.periods;
    if (completion) l[size_t(ListField::reqrefs)] = ev.reqs;  // raw ids until resolve below
    l[size_t(ListField::req_sources)] = ev.req_sources;
  }
  rd.events.push_back(re);
}

// Normalises a rank's sequence and resolves its completed / started / freed
// request ids to the index of the creating call.
void finish_rank(RankData& rd, const std::vector<Identity>& identities) {
  normalize(rd, identities);
  std::unordered_map<int64_t, int64_t> creator;
  for (size_t i = 0; i < rd.events.size(); ++i) {
    RankEvent& e = rd.events[i];
    if (e.lists >= 0) {
      auto& refs = rd.lists[static_cast<size_t>(e.lists)][size_t(ListField::reqrefs)];
      for (int64_t& id : refs) {
        auto it = creator.find(id);
        id = it == creator.end() ? -1 : it->second;
      }
    }
    if (e.created_request != kNone) creator[e.created_request] = static_cast<int64_t>(i);
  }
}

LoadedThread& thread_stream(Loaded& out, uint32_t number, uint32_t world_size) {
  for (LoadedThread& t : out.threads)
    if (t.number == number) return t;
  out.threads.emplace_back();
  LoadedThread& t = out.threads.back();
  t.number = number;
  t.ranks.resize(world_size);
  t.fork_seq.assign(world_size, -1);
  t.join_seq.assign(world_size, -1);
  t.traced_calls.assign(world_size, 0);
  return t;
}

// Whether the one thread of a rank besides the first made its calls in one
// run, no call of the first among them (by file position), while the first
// thread waited: its call after the run computed at most a tenth of its gap
// (a CPU-clock trace; MPI_THREAD_MULTIPLE traces are). Then the rank made
// its calls in one order, and computed in one thread at a time, which one
// stream replays. A pool's master thread does so while the main thread
// waits for the pool (mpi4py.futures: the main thread makes the
// intercommunicator, the master thread every call with the workers, the
// main thread MPI_Finalize, 6 ms of CPU in its 1.4 s gap); kept apart, the
// master's calls would pair with the workers' main threads, which the
// skeleton's threads do not (docs/merge.md, "Threads"). Not with more
// threads: two that run at once may still call in runs (tests/apps/threads.c
// did on some runs), and one stream would replay them one after the other.
bool threads_take_turns_in_runs(const std::map<uint32_t, ThreadSink>& sinks) {
  if (sinks.size() != 2) return false;
  const std::vector<RankEvent>& first = sinks.at(0).data->events;
  for (const auto& [number, sink] : sinks) {
    if (number == 0) continue;
    const std::vector<RankEvent>& t = sink.data->events;
    if (t.empty()) return false;
    const uint32_t lo = t.front().seq, hi = t.back().seq;
    for (const auto& [other, o] : sinks) {
      if (other == number) continue;
      auto at = after_seq(o.data->events, lo);
      if (at != o.data->events.end() && at->seq < hi) return false;
    }
    auto next = after_seq(first, hi);
    if (next == first.end() || next->work == kNone || next->work * 10 > next->gap) return false;
  }
  return true;
}

// Moves every other thread's calls into the first thread's stream, at their
// file positions (threads_take_turns_in_runs()): their parameter tuples and
// lists re-indexed, their threads' streams left empty on this rank.
void take_threads_into_one_stream(std::map<uint32_t, ThreadSink>& sinks, Loaded& out, uint32_t r, uint32_t P) {
  ThreadSink& main = sinks.at(0);
  RankData& rd = *main.data;
  for (auto it = sinks.begin(); it != sinks.end();) {
    if (it->first == 0) {
      ++it;
      continue;
    }
    RankData& t = *it->second.data;
    std::vector<uint32_t> param_at(t.params.size());
    for (size_t i = 0; i < t.params.size(); ++i) {
      auto [at, fresh] = main.tuples.emplace(t.params[i], static_cast<uint32_t>(rd.params.size()));
      if (fresh) rd.params.push_back(t.params[i]);
      param_at[i] = at->second;
    }
    const auto list_base = static_cast<int32_t>(rd.lists.size());
    rd.lists.insert(rd.lists.end(), t.lists.begin(), t.lists.end());
    for (RankEvent& e : t.events) {
      e.params = param_at[e.params];
      if (e.lists >= 0) e.lists += list_base;
    }
    rd.events.insert(after_seq(rd.events, t.events.front().seq), t.events.begin(), t.events.end());
    rd.any_blocked |= t.any_blocked;
    main.spun += it->second.spun;
    thread_stream(out, it->first, P).ranks[r] = RankData{};
    it = sinks.erase(it);
  }
}

void copy_header(MergedRank& mr, const TraceHeader& h) {
  mr.hostname = h.hostname;
  mr.mpi_library = h.mpi_library;
  mr.executable = h.executable;
  mr.command_line = h.command_line;
  mr.kernel_name = h.kernel_name;
  mr.kernel_version = h.kernel_version;
  mr.kernel_units_per_s = h.kernel_units_per_s;
  mr.gap_floor_ns = h.gap_floor_ns;
  mr.cpu_gap_floor_ns = h.cpu_gap_floor_ns;
}


// A new Loaded for a world of P ranks: its symbols 0 and 1 (MPI_COMM_WORLD,
// MPI_COMM_SELF) made.
void start_tables(Loaded& out, uint32_t P, const Options& opt, const std::string& source) {
  MergedTrace& t = out.tables;
  t.world_size = P;
  t.lookahead = opt.lookahead;
  t.source = source;
  t.ranks.resize(P);
  out.ranks.resize(P);
  for (int k = 0; k < 2; ++k) {
    CommSymbol c;
    if (k == 0) {  // MPI_COMM_WORLD: one group, held by every rank
      c.groups.emplace_back();
      for (uint32_t q = 0; q < P; ++q) c.groups[0].push_back(q);
      c.group_of.assign(P, 0);
    } else {  // MPI_COMM_SELF: each rank its own
      for (uint32_t r = 0; r < P; ++r) {
        c.groups.push_back({static_cast<int64_t>(r)});
        c.group_of.push_back(static_cast<int32_t>(r));
      }
    }
    t.comms.push_back(c);
  }
}

// Each stream's completion episodes whose calls depend on timing, as one
// MPI_Waitall each (coalesce_timed_completions()). The first thread's only
// where the rank has no other: other threads' forks and joins are placed by
// the file positions of its calls.
void coalesce_streams(Interner& in, std::map<uint32_t, ThreadSink>& sinks, Loaded& out) {
  const std::function<uint32_t(const Identity&)> intern = [&in](const Identity& id) { return in.identity(id); };
  for (auto& [number, sink] : sinks)
    if (number != 0 || sinks.size() == 1)
      out.coalesced_completions += coalesce_timed_completions(*sink.data, in.t.identities, intern);
}

// Reads the rank files of one run into out (its ranks' headers and calls, in
// file order, not yet normalised), interning into in's tables: those of out
// itself, or of the first run when several are read.
void read_run(const TraceDir& td, const Options& opt, Interner& in, Loaded& out) {
  MergedTrace& t = out.tables;
  const uint32_t P = in.t.world_size;
  t.world_size = P;
  t.ranks.resize(P);
  out.ranks.resize(P);
  for (uint32_t r = 0; r < P; ++r) {
    auto f = td.open_rank(r);
    const TraceHeader& h = f->header();
    if (std::string why = bounds::header_problem(h); !why.empty())
      throw TraceError(td.rank_path(r) + ": corrupt header (" + why + ")");
    if (r == 0) t.run_id = h.run_id;
    MergedRank& mr = t.ranks[r];
    copy_header(mr, h);
    RankData& rd = out.ranks[r];
    rd.cpu_work = h.gap_clock == GapClock::kThreadCpu;
    RankMaps maps;
    std::map<uint32_t, ThreadSink> sinks;  // by thread number; 0: the first thread, into rd
    sinks[0].data = &rd;
    MainCalls main_calls;
    Event ev;
    uint64_t read = 0;
    while (f->next(ev)) {
      ++read;
      if (opt.progress && read % 1000000 == 0)
        opt.progress("rank " + std::to_string(r) + ": " + std::to_string(read) + " events read");
      const auto call = [&ev] {  // for an error only
        const char* name = func_name(ev.func);
        return std::to_string(ev.seq) + " (" + (name ? name : "?") + ")";
      };
      if (ev.root == kProcNull)  // checked before the bounds: not corrupt, not replayed
        throw TraceError(td.rank_path(r) + ": event " + call() +
                         " has the root MPI_PROC_NULL (a root's group-mate on an intercommunicator), which "
                         "skelgen does not replay: no skeleton can be made of this trace");
      if (std::string why = bounds::event_problem(*f, ev); !why.empty())
        throw TraceError(td.rank_path(r) + ": corrupt event " + call() + ": " + why);
      // A 1.2 trace's MPI_Finalize carries the kernel's rate over the whole
      // run (MPI_Init's calibration and the samples since): it replaces MPI_Init's.
      if (ev.kernel_rate != kNone && ev.kernel_rate > 0) mr.kernel_units_per_s = static_cast<double>(ev.kernel_rate);
      ThreadSink& sink = sinks[ev.thread];
      if (!sink.data) {
        LoadedThread& lt = thread_stream(out, ev.thread, P);
        sink.data = &lt.ranks[r];
        sink.data->cpu_work = rd.cpu_work;
        sink.last_end = main_calls.end_before(ev.t_start_ns);  // its first call's gap starts there
      }
      if (opt.coalesce_completions && spun_probe(sink, ev, rd.cpu_work, h)) continue;
      if (++in.calls > in.call_limit && in.call_limit > 0)
        throw TraceError(td.rank_path(r) + ": " + too_many_calls(in.calls, in.call_limit));
      add_event(in, maps, *f, ev, r, P, rd.cpu_work, sink);
      if (ev.thread == 0) {
        main_calls.starts.push_back(ev.t_start_ns);
        main_calls.ends.push_back(ev.t_start_ns + ev.duration_ns);
        main_calls.seqs.push_back(static_cast<uint32_t>(ev.seq));
      }
    }
    if (threads_take_turns_in_runs(sinks)) {
      for (const auto& [number, sink] : sinks)  // the first thread's call after each run waited for it
        if (number != 0) main_calls.waited_for(rd, sink.last_end);
      if (opt.coalesce_completions)
        for (auto& [number, sink] : sinks) leave_out_slow_repeats(sink);
      take_threads_into_one_stream(sinks, out, r, P);
    }
    mr.end = f->end();
    mr.events = rd.events.size() + sinks[0].spun;
    if (rd.cpu_work && h.core_sharing == CoreSharing::kOwnCores && sinks.size() == 1) read_wall_gaps(rd);
    else if (rd.cpu_work && sinks.size() == 1) add_team_work(rd);
    lower_floors_to_shortest_gaps(mr, rd, h);
    if (f->end() != TraceEnd::kFinalized && !opt.allow_partial)
      throw TraceError(td.rank_path(r) + ": the trace ends early (" + trace_end_name(f->end()) + " after " +
                       std::to_string(read) + " events); use --allow-partial to merge what it holds");
    for (auto& [number, sink] : sinks) {
      if (number == 0) continue;
      LoadedThread& lt = thread_stream(out, number, P);
      lt.fork_seq[r] = main_calls.ended_by(sink.first_start);
      lt.join_seq[r] = main_calls.started_from(sink.last_end);
      lt.traced_calls[r] = sink.data->events.size() + sink.spun;
      main_calls.waited_for(rd, sink.last_end);
    }
    for (auto& [number, sink] : sinks) {
      if (opt.coalesce_completions) leave_out_slow_repeats(sink);
      out.coalesced_completions.spun_probes += sink.spun;
    }
    if (opt.coalesce_completions) coalesce_streams(in, sinks, out);
  }
  // threads whose calls every rank took into its one stream
  out.threads.erase(std::remove_if(out.threads.begin(), out.threads.end(),
                                   [](const LoadedThread& t) {
                                     return std::all_of(t.ranks.begin(), t.ranks.end(),
                                                        [](const RankData& d) { return d.events.empty(); });
                                   }),
                    out.threads.end());
  std::sort(out.threads.begin(), out.threads.end(),
            [](const LoadedThread& a, const LoadedThread& b) { return a.number < b.number; });
}

// Normalises every rank's streams and indexes the communicators' members.
void finish(Loaded& out) {
  for (LoadedThread& lt : out.threads)
    for (RankData& rd : lt.ranks) finish_rank(rd, out.tables.identities);
  for (RankData& rd : out.ranks) finish_rank(rd, out.tables.identities);
  for (CommSymbol& c : out.tables.comms) c.index_members();
}

Loaded load_one(const std::string& dir, const Options& opt) {
  TraceDir td(dir);
  Loaded out;
  start_tables(out, td.world_size(), opt, dir);
  Interner in(out.tables);
  in.call_limit = mem::available_bytes() / kLoadBytesPerCall;
  read_run(td, opt, in, out);
  finish(out);
  if (out.coalesced_completions.made_one && opt.progress)
    opt.progress("note: " + std::to_string(out.coalesced_completions.made_one) +
                 " runs of MPI_Waitany, MPI_Waitsome or MPI_Test* calls, whose number and order the timing "
                 "decides, merged as one MPI_Waitall each (--keep-completions: as traced)");
  if (out.coalesced_completions.idle_calls && opt.progress)
    opt.progress("note: " + std::to_string(out.coalesced_completions.idle_calls) +
                 " MPI_Test* or MPI_Wait* calls that completed nothing left out, their time added to the next "
                 "call's (spinning polls: as time in it, others as computation before it; --keep-completions: as "
                 "traced)");
  if (out.coalesced_completions.spun_probes && opt.progress)
    opt.progress("note: " + std::to_string(out.coalesced_completions.spun_probes) +
                 " MPI_Iprobe calls that found nothing within " + std::to_string(kSpinNs / 1000) +
                 " us of the same probe finding nothing left out, "
                 "their time added to the next call's (spinning probes; --keep-completions: as traced)");
  return out;
}

// ---------------------------------------------------------------- several runs

// A stream of one rank in one run: the first thread's calls or another thread's.
std::vector<const RankData*> streams_of(const Loaded& l, uint32_t r) {
  std::vector<const RankData*> s{&l.ranks[r]};
  for (const LoadedThread& t : l.threads) s.push_back(&t.ranks[r]);
  return s;
}

// The slowest rank's time in a run as read, from MPI_Init's return to
// MPI_Finalize's start (as skelgen generate's "traced:"): its first thread's
// gaps and calls in between.
double run_seconds(const Loaded& l, const std::vector<Identity>& ids) {
  double slowest = 0;
  for (const RankData& rd : l.ranks) {
    int64_t sum = 0;
    for (size_t i = 0; i < rd.events.size(); ++i) {
      const RankEvent& e = rd.events[i];
      const uint32_t f = ids[e.identity].func;
      if (i > 0) sum += std::max<int64_t>(0, e.gap);
      if (f != kFunc_MPI_Init && f != kFunc_MPI_Init_thread && f != kFunc_MPI_Finalize)
        sum += std::max<int64_t>(0, e.dur);
    }
    slowest = std::max(slowest, static_cast<double>(sum) * 1e-9);
  }
  return slowest;
}

template <typename T>
double median_of(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? static_cast<double>(v[n / 2])
               : 0.5 * (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2]));
}

// Per request id of a stream (file order): the position of the call that made it.
std::unordered_map<int64_t, int64_t> creators(const RankData& rd) {
  std::unordered_map<int64_t, int64_t> at;
  for (size_t i = 0; i < rd.events.size(); ++i)
    if (rd.events[i].created_request != kNone) at[rd.events[i].created_request] = static_cast<int64_t>(i);
  return at;
}
int64_t made_at(const std::unordered_map<int64_t, int64_t>& at, int64_t id) {
  auto it = at.find(id);
  return it == at.end() ? -1 : it->second;
}

// Where run b's structure differs from run a's ("" where it does not): the
// same threads, the same calls on every rank in the same order with the same
// parameters and lists. Where a receive from MPI_ANY_SOURCE took another
// source, or a completion call completed other requests (Waitany, Testsome:
// which message came first), the runs still agree; such calls are counted in
// `matched`.
std::string differs(const Loaded& a, const Loaded& b, const std::vector<Identity>& ids, size_t& matched) {
  if (a.threads.size() != b.threads.size()) return "threads";
  for (size_t k = 0; k < a.threads.size(); ++k)
    if (a.threads[k].number != b.threads[k].number) return "thread numbers";
  for (uint32_t r = 0; r < a.ranks.size(); ++r) {
    const auto sa = streams_of(a, r), sb = streams_of(b, r);
    for (size_t s = 0; s < sa.size(); ++s) {
      const RankData& x = *sa[s];
      const RankData& y = *sb[s];
      const std::string where =
          "rank " + std::to_string(r) + (s ? ", thread " + std::to_string(a.threads[s - 1].number) : "");
      if (x.cpu_work != y.cpu_work) return where + ": traced with another gap clock";
      const std::unordered_map<int64_t, int64_t> cx = creators(x), cy = creators(y);
      if (x.events.size() != y.events.size())
        return where + ": " + std::to_string(y.events.size()) + " calls against " + std::to_string(x.events.size());
      for (size_t i = 0; i < x.events.size(); ++i) {
        const RankEvent& ex = x.events[i];
        const RankEvent& ey = y.events[i];
        const std::string call = where + ", call " + std::to_string(i + 1);
        if (ex.identity != ey.identity) return call + ": another function, call site or communicator";
        const bool any_source = ids[ex.identity].peer_class == PeerClass::kAnySource;
        bool other_match = false;
        ParamTuple px = x.params[ex.params], py = y.params[ey.params];
        if (any_source) {  // the matched source (and what it sent)
          other_match |= px != py;
          for (Param p : {Param::peer, Param::peer2, Param::tag, Param::tag2, Param::count, Param::count2,
                          Param::bytes, Param::bytes2})
            px[size_t(p)] = py[size_t(p)] = 0;
        }
        if (px != py) return call + ": other parameters";
        if ((ex.lists < 0) != (ey.lists < 0)) return call + ": other lists";
        if (ex.lists >= 0) {
          auto lx = x.lists[static_cast<size_t>(ex.lists)], ly = y.lists[static_cast<size_t>(ey.lists)];
          // the requests a call completes, as the positions of the calls that made them (the tracer's
          // request ids follow the order of creation over the rank's threads, which differs between runs)
          for (int64_t& q : lx[size_t(ListField::reqrefs)]) q = made_at(cx, q);
          for (int64_t& q : ly[size_t(ListField::reqrefs)]) q = made_at(cy, q);
          for (ListField f : {ListField::reqrefs, ListField::req_sources}) {  // which requests completed, from whom
            other_match |= lx[size_t(f)] != ly[size_t(f)];
            lx[size_t(f)].clear();
            ly[size_t(f)].clear();
          }
          if (lx != ly) return call + ": other lists";
        }
        matched += other_match;
      }
    }
  }
  return "";
}

// Reads every run of dirs into runs (sized as dirs): those of the first run's
// world size interned into runs[0]'s tables, so that their calls' identities
// compare as numbers; a run of another world size into its own tables, read
// alone for its time (rep.mismatch names the last such run). Records each
// run's traced time in rep.total_s. Returns whether all have one world size.
bool read_runs(const std::vector<std::string>& dirs, const Options& opt, std::vector<Loaded>& runs,
               RunsReport& rep) {
  std::vector<TraceDir> tds;
  for (const std::string& d : dirs) tds.emplace_back(d);
  start_tables(runs[0], tds[0].world_size(), opt, dirs[0]);
  Interner in(runs[0].tables);
  in.call_limit = mem::available_bytes() / kLoadBytesPerCall;
  bool same_world = true;
  for (size_t k = 0; k < dirs.size(); ++k) {
    if (tds[k].world_size() != tds[0].world_size()) {
      same_world = false;
      rep.mismatch_run = k;
      rep.mismatch = std::to_string(tds[k].world_size()) + " ranks against " + std::to_string(tds[0].world_size());
      // its own tables: read alone, for its time
      runs[k] = Loaded();
      start_tables(runs[k], tds[k].world_size(), opt, dirs[k]);
      Interner own(runs[k].tables);
      read_run(tds[k], opt, own, runs[k]);
    } else {
      read_run(tds[k], opt, in, runs[k]);
    }
    const Loaded& tables_of_k = tds[k].world_size() == tds[0].world_size() ? runs[0] : runs[k];
    rep.total_s.push_back(run_seconds(runs[k], tables_of_k.tables.identities));
  }
  return same_world;
}

// From rep.total_s: the median time, the spread, and rep.used, the run of
// median time (the lower of the two middle ones for an even count).
void pick_median_run(RunsReport& rep) {
  rep.median_s = median_of(rep.total_s);
  rep.spread = rep.median_s > 0 ? (*std::max_element(rep.total_s.begin(), rep.total_s.end()) -
                                   *std::min_element(rep.total_s.begin(), rep.total_s.end())) / rep.median_s
                                : 0;
  std::vector<size_t> by_time(rep.total_s.size());
  for (size_t k = 0; k < by_time.size(); ++k) by_time[k] = k;
  std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) { return rep.total_s[a] < rep.total_s[b]; });
  rep.used = by_time[(by_time.size() - 1) / 2];
}

// Runs of one world size (one set of tables) against the used run: the first
// that differs in structure in rep.mismatch_run, and where in rep.mismatch
// (left "" where none does); calls matching other messages counted.
void compare_to_used(const std::vector<Loaded>& runs, RunsReport& rep) {
  for (size_t k = 0; k < runs.size(); ++k) {
    if (k == rep.used) continue;
    rep.mismatch = differs(runs[rep.used], runs[k], runs[0].tables.identities, rep.other_matches);
    if (!rep.mismatch.empty()) rep.mismatch_run = k;
    if (!rep.mismatch.empty()) break;
  }
}

// The used run moved out of runs, with the shared tables (those of run 0,
// copied before the move) and its own rank headers, run id and source.
Loaded take_used_run(std::vector<Loaded>& runs, const RunsReport& rep, const std::string& source) {
  MergedTrace t = runs[0].tables;
  Loaded out = std::move(runs[rep.used]);
  t.ranks = out.tables.ranks;
  t.run_id = out.tables.run_id;
  t.source = source;
  out.tables = std::move(t);
  return out;
}

// Per position (rank, stream, call in file order) of out, the used run (moved
// out of runs[rep.used]): the median of each time over the runs; the
// structure and parameters stay the used run's. Counts the positions in rep,
// those whose time varies by more than kRunsVary, and their share of the time.
class RunMedians {
 public:
  RunMedians(Loaded& out, const std::vector<Loaded>& runs, RunsReport& rep)
      : out_(out), runs_(runs), rep_(rep),
        gaps_(runs.size()), durs_(runs.size()), works_(runs.size()), blocked_(runs.size()), v_(runs.size()) {}

  void run() {
    for (uint32_t r = 0; r < out_.ranks.size(); ++r) {
      std::vector<RankData*> mine{&out_.ranks[r]};
      for (LoadedThread& t : out_.threads) mine.push_back(&t.ranks[r]);
      for (size_t s = 0; s < mine.size(); ++s)
        for (size_t i = 0; i < mine[s]->events.size(); ++i) median_call(*mine[s], r, s, i);
      median_header(r);
    }
    rep_.varying_time_share = all_ > 0 ? varying_ / all_ : 0;
  }

 private:
  // Call i of stream s (0: the first thread) of rank r, as rd holds it.
  void median_call(RankData& rd, uint32_t r, size_t s, size_t i) {
    for (size_t k = 0; k < runs_.size(); ++k) {
      const RankEvent& e = k == rep_.used ? rd.events[i] : streams_of(runs_[k], r)[s]->events[i];
      gaps_[k] = e.gap;
      durs_[k] = e.dur;
      works_[k] = e.work;
      blocked_[k] = e.blocked;
      v_[k] = static_cast<double>(std::max<int64_t>(0, e.gap) + std::max<int64_t>(0, e.dur));
    }
    RankEvent& e = rd.events[i];
    e.gap = std::llround(median_of(gaps_));
    e.dur = std::llround(median_of(durs_));
    if (e.work != kNone) e.work = std::llround(median_of(works_));
    e.blocked = std::llround(median_of(blocked_));
    rd.any_blocked |= e.blocked > 0;
    const double m = median_of(v_);
    const double range = *std::max_element(v_.begin(), v_.end()) - *std::min_element(v_.begin(), v_.end());
    ++rep_.positions;
    all_ += m;
    if (range > kRunsVary * m) {
      ++rep_.varying;
      varying_ += m;
    }
  }

  // Rank r's kernel speed and tracer floors: each the median over the runs.
  void median_header(uint32_t r) {
    std::vector<double> rate, floor, cpu_floor;
    for (size_t k = 0; k < runs_.size(); ++k) {
      const MergedRank& h = k == rep_.used ? out_.tables.ranks[r] : runs_[k].tables.ranks[r];
      rate.push_back(h.kernel_units_per_s);
      floor.push_back(h.gap_floor_ns);
      cpu_floor.push_back(h.cpu_gap_floor_ns);
    }
    MergedRank& h = out_.tables.ranks[r];
    h.kernel_units_per_s = median_of(rate);
    h.gap_floor_ns = median_of(floor);
    h.cpu_gap_floor_ns = median_of(cpu_floor);
  }

  Loaded& out_;
  const std::vector<Loaded>& runs_;
  RunsReport& rep_;
  std::vector<int64_t> gaps_, durs_, works_, blocked_;  // one call's times, per run
  std::vector<double> v_;                               // its gap and duration, per run
  double all_ = 0, varying_ = 0;                        // the time of all positions, of those that vary
};

}  // namespace

std::string describe(const RunsReport& r) {
  if (r.dirs.size() < 2) return "";
  char buf[160];
  std::string s = std::to_string(r.dirs.size()) + " runs traced ";
  for (size_t k = 0; k < r.total_s.size(); ++k) {
    std::snprintf(buf, sizeof buf, "%s%.3f", k ? ", " : "", r.total_s[k]);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " s (median %.3f s, spread %.1f %%); ", r.median_s, 100 * r.spread);
  s += buf;
  if (!r.medians) return s + "they differ in structure (run " + std::to_string(r.used + 1) + " against run " +
                         std::to_string(r.mismatch_run + 1) + ": " + r.mismatch + "): merged run " +
                         std::to_string(r.used + 1) + " alone, the run of median traced time";
  std::snprintf(buf, sizeof buf,
                "per-position medians; %.1f %% of the calls (%.1f %% of the time) vary by more than %.0f %%",
                r.positions ? 100.0 * static_cast<double>(r.varying) / static_cast<double>(r.positions) : 0.0,
                100 * r.varying_time_share, 100 * kRunsVary);
  s += buf;
  if (r.other_matches)
    s += "; " + std::to_string(r.other_matches) + " calls matched other messages in other runs (run " +
         std::to_string(r.used + 1) + "'s kept)";
  return s;
}

// Several runs: the median run alone where they differ in structure or world
// size, otherwise the per-position medians of their times (RunMedians).
Loaded load_runs(const std::vector<std::string>& dirs, const Options& opt) {
  if (dirs.empty()) throw TraceError("no trace directories to merge");
  if (dirs.size() == 1) return load_one(dirs[0], opt);
  RunsReport rep;
  rep.dirs = dirs;
  std::vector<Loaded> runs(dirs.size());
  const bool same_world = read_runs(dirs, opt, runs, rep);
  pick_median_run(rep);
  if (same_world) compare_to_used(runs, rep);
  if (!same_world || !rep.mismatch.empty()) {
    rep.medians = false;
    rep.other_matches = 0;
    Loaded out = load_one(dirs[rep.used], opt);
    out.runs = rep;
    if (opt.progress) opt.progress(describe(rep));
    return out;
  }
  Loaded out = take_used_run(runs, rep, dirs[rep.used]);
  RunMedians(out, runs, rep).run();
  finish(out);
  out.runs = rep;
  if (opt.progress) opt.progress(describe(rep));
  return out;
}

Loaded load(const std::string& dir, const Options& opt) {
  const std::vector<std::string> runs = TraceDir::run_dirs(dir);
  if (!runs.empty()) return load_runs(runs, opt);
  return load_one(dir, opt);
}

}  // namespace skt::merge
