// Stage 2: merge the per-rank traces into one program trace.
//
//   load()       reads every rank file, interns call sites, datatypes, ops,
//                communicators (as symbols: the call that created them) and
//                call identities, and normalises each rank (normalize()).
//   merge()      orders the ranks' calls into merged events, one of two ways,
//                then describes each event's per-rank parameters:
//                - the look-ahead walk (walk_ranks, MISSION.md §2): one cursor
//                  per rank; where all current calls match they become one
//                  merged event; where they do not, a look-ahead of m calls
//                  per rank decides which call comes first; ranks without it
//                  do not take part. O(n L) when ranks agree, O(m n L) at
//                  most, for n ranks of L calls;
//                - an alignment of the ranks' sequences (align_ranks).
//                With Order::kAuto, both, and the one that splits fewer
//                collectives among events of fewer members; where they
//                split as many, the one a judge (the caller's: skelgen's
//                folds each) scores lower.
//   verify()     rebuilds every rank's sequence from a merged trace and
//                compares it with the normalised input, call for call.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "skel/merged.h"

namespace skt::merge {

// How merge() orders the ranks' calls into merged events.
enum class Order : uint8_t {
  kWalk,   // the look-ahead walk (walk_ranks)
  kAlign,  // the alignment (align_ranks); the walk where it gives up
  kAuto,   // all three; the ones splitting fewest collectives, of those the one Options::judge scores lowest
           // (on a tie the first of walk, align, nth)
  kNth,    // each call's count (nth_ranks)
};
const char* order_name(Order o);  // "auto", "walk", "align", "nth"
Order order_from_name(const std::string& name);  // the inverse; throws std::invalid_argument

struct Options {
  uint32_t lookahead = 64;    // m: calls looked at ahead in each rank on a mismatch
  Order order = Order::kWalk;
  // The alignment gives up (and the walk merges) where aligning a group would read its calls and the
  // columns more than align_work times over.
  size_t align_work = 64;
  // For Order::kAuto (required there): a merged trace's score, lower is better. skelgen's is the length of
  // its fold (generate/include/skel/pipeline.h): merged by the walk, NPB MG at 16 ranks folds to 1,417
  // symbols, by alignment to 401; at 2 and 4 ranks the walk's is shorter. Called per stream on each
  // distinct order left to judge, in the order walk, align, nth; the one returned is the one judged.
  std::function<uint64_t(const MergedTrace&)> judge;
  // Order::kAuto tries the alignment with this smaller work bound: where it gives up, it has cost less
  // (the synthetic LU-like trace of 4 ranks, 642,628 calls: 0.8 s with 64 on top of the walk's 0.6 s,
  // 0.13 s with 16; NPB MG at 16 ranks class C aligns from 12 on; docs/results/performance.md).
  size_t auto_align_work = 16;
  bool allow_partial = false; // merge ranks whose trace ends early (process died, MPI_Abort)
  // Completions whose calls depend on timing become one MPI_Waitall each (coalesce_timed_completions()).
  bool coalesce_completions = true;
  std::function<void(const std::string&)> progress;  // called now and then on long work
};

using ParamTuple = std::array<int64_t, kNumParams>;

// One call of one rank, after loading (48 bytes: a real trace has millions).
struct RankEvent {
  uint32_t identity = 0;
  uint32_t params = 0;               // index into RankData::params
  uint32_t seq = 0;                  // position in the rank's raw trace
  int32_t lists = -1;                // index into RankData::lists, -1 = none
  int64_t gap = 0, dur = 0;
  int64_t work = kNone;              // thread CPU ns of the gap (GapClock::kThreadCpu traces)
  int64_t blocked = 0;               // ns of the gap the thread was blocked (trace field kBlocked)
  int64_t team = 0;                  // ns the rank's other threads computed (trace field kTeamCpu; load only)
  int64_t created_request = kNone;   // the rank's id of the request this call creates
};

// The time of calls left out, carried into the next call kept: their gaps,
// their time in MPI, their blocked and CPU time (and, while loading, their
// other threads' CPU time).
struct CarriedTime {
  int64_t gap = 0, dur = 0, blocked = 0, work = 0, team = 0;
  void add(const RankEvent& e) {  // each of e's times into the same of the next call
    gap += e.gap;
    dur += e.dur;
    blocked += e.blocked;
    if (e.work != kNone) work += e.work;
    team += e.team;
  }
  RankEvent into(RankEvent e) {  // e with the time carried; nothing carried after
    e.gap += gap;
    e.dur += dur;
    e.blocked += blocked;
    if (e.work != kNone) e.work += work;
    e.team += team;
    *this = {};
    return e;
  }
};

struct RankData {
  std::vector<RankEvent> events;     // normalised order
  bool cpu_work = false;             // traced with GapClock::kThreadCpu: events carry work
  bool any_blocked = false;          // some event has blocked time
  std::vector<ParamTuple> params;    // the rank's distinct parameter tuples (calls repeat theirs)
  std::vector<std::array<std::vector<int64_t>, kNumListFields>> lists;
  // reqrefs of an event's lists: after load(), the index (in `events`) of the
  // call that created each request, or -1.
};

// The calls of one thread other than the first on every rank
// (MPI_THREAD_MULTIPLE traces, docs/merge.md "Threads"), and where on each
// rank it ran among the first thread's calls: after the call with file
// position fork_seq (-1: from the start), and done before the one with
// join_seq (-1: the end).
struct LoadedThread {
  uint32_t number = 0;
  std::vector<RankData> ranks;
  std::vector<int64_t> fork_seq, join_seq;
  std::vector<uint64_t> traced_calls;  // per rank: its calls as traced (before coalesce_timed_completions())
};

// Several traced runs of one program (load_runs): how much they disagreed,
// and what was merged.
inline constexpr double kRunsVary = 0.10;  // a call "varies" where its runs' times span more than this of their median
struct RunsReport {
  std::vector<std::string> dirs;  // the runs' trace directories, in the order given
  std::vector<double> total_s;    // per run: the slowest rank's traced time (its gaps and calls), s
  double median_s = 0;            // of total_s
  double spread = 0;              // (max - min) / median of total_s
  bool medians = true;            // the runs agree in structure: every time is the median over the runs
  size_t used = 0;                // the run (index in dirs) of median time: its structure and parameters
                                  // (and, where !medians, its times) are what was merged
  size_t mismatch_run = 0;        // !medians: a run that differs from `used`
  std::string mismatch;           // !medians: how ("rank 1: 1203 calls against 1201")
  size_t positions = 0;           // calls of every rank (every thread), each a position
  size_t varying = 0;             // positions whose gap + duration span more than kRunsVary of their median
  double varying_time_share = 0;  // those positions' share of the median time
  size_t other_matches = 0;       // calls that matched other messages in some run (MPI_ANY_SOURCE, Waitany)
};
// One line: "3 runs traced 0.512, 0.520, 0.803 s (median 0.520 s, spread 56.0 %); per-position medians; ...",
// or where the runs differ, which run was merged alone and why. Empty for one run.
std::string describe(const RunsReport& r);

// What coalesce_timed_completions() did: episodes made one MPI_Waitall, and
// calls that completed nothing left out.
struct CoalesceCounts {
  size_t made_one = 0, idle_calls = 0;
  size_t spun_probes = 0;  // MPI_Iprobe calls left out while loading (kSpinNs, docs/merge.md "Spinning probes")
  CoalesceCounts& operator+=(const CoalesceCounts& o) {
    made_one += o.made_one;
    idle_calls += o.idle_calls;
    spun_probes += o.spun_probes;
    return *this;
  }
};

// A poll that found nothing, followed by the next call within this many ns,
// computed nothing between them: the rank spins (docs/merge.md, "Spinning
// polls"). A spin's gaps are some 100 ns; a farm master on 4 Open MPI ranks
// over 2 cores spinning on MPI_Test had a median of 1.09 us after its first
// test of each request. A master computing between polls keeps them where
// it computes longer.
inline constexpr int64_t kSpinNs = 5000;

struct Loaded {
  MergedTrace tables;  // everything but events and times
  std::vector<RankData> ranks;        // the first thread's calls (every call when there is one thread)
  std::vector<LoadedThread> threads;  // the other threads' calls, by number
  RunsReport runs;                    // several runs (load_runs): how they compare; dirs empty for one
  CoalesceCounts coalesced_completions;  // episodes made one MPI_Waitall or left out (coalesce_timed_completions())
};

// Throws TraceError for unreadable, missing, mixed or (without
// allow_partial) truncated rank files, naming the file. A directory that
// holds run-1 ... run-N (skelgen trace --runs N) and no rank files is
// loaded as load_runs() of those.
Loaded load(const std::string& dir, const Options& opt);

// Several traced runs of one program (each a trace directory), loaded as
// one: where every run makes the same calls on every rank, in the same
// order, with the same parameters (a receive from MPI_ANY_SOURCE may take
// another source, a Waitany complete another request: the median run's
// are kept), each gap, call duration and CPU time is the median over the
// runs at its position (rank, thread, call), as are each rank's kernel
// speed and gap floors; so one disturbed run does not become the
// prediction. Where they differ, the run of median traced time is loaded
// alone (RunsReport::medians false). Reports through opt.progress and in
// Loaded::runs. One directory: load() of it.
Loaded load_runs(const std::vector<std::string>& dirs, const Options& opt);

// Reorders each communication step into one canonical order: the Irecvs,
// then the sends, then the other receives, then the Waits on the step's
// Irecvs (inside a class by call site). A step is a maximal sequence of
// consecutive sends, receives and Waits on the step's own Irecvs, each from a
// different call site: a call site seen again starts the next step, so steps
// never span loop iterations; and a call made after more than step_gap_ns of
// computation (its thread CPU time where measured; the median over the rank's
// calls between the same two call sites) starts the next step too,
// so calls never move across real work (NPB LU posts an Irecv after 1 ms of
// computation and sends right after it: moving the Irecv first moved that
// millisecond onto the send, and the peer's rendezvous send waited for it).
// A send or Irecv made after one of the step's receives completed starts the
// next step as well: no message goes out ahead of a receive it followed
// (NPB CG's chained exchanges overlapped when sorted as one step).
// Ranks that make one step's calls in different orders come out the same.
// Gaps stay with their positions, durations with their calls.
// 0: off. On by default since the generator keeps each channel's order
// when it reorders a step (its 16-rank skeleton had hung: an Irecv posted
// ahead of a Recv of the same source and tag took its message). NPB LU's
// 2-rank class A K=1 skeleton ran 12.3 s with steps uncut, against 11.1 s
// traced; cut, 11.1 s.
inline constexpr int64_t kStepGapNs = 50000;
inline constexpr int64_t kDefaultStepGapNs = kStepGapNs;
void normalize(RankData& rank, const std::vector<Identity>& identities, int64_t step_gap_ns = kDefaultStepGapNs);

// Completion episodes whose calls depend on timing. An episode is a maximal
// run of a rank's consecutive completion calls (MPI_Wait*, MPI_Test*; only
// computation between them). Where a rank completes its requests one at a
// time (MPI_Waitany, MPI_Waitsome) or by polling (MPI_Test* with computation
// between polls, until they are done), how many calls it makes and which
// request each completes change from run to run, and the time steps around
// them would not fold. Such an episode becomes one MPI_Waitall at its first
// call's call site, of the requests it completed in the order they were made,
// its gap the episode's computation (before, and between its calls), its
// duration the time in its calls. Only where some call of it is of those
// kinds, it completes at least one request (two where it chooses: Waitany,
// Waitsome, Testany, Testsome), none of them a receive from MPI_ANY_SOURCE,
// every request it completes was seen made or started between the same two
// episodes, and no request still active after it was made by the same
// function as one it completed (a farm master polling its workers' receives
// keeps its calls). Run on raw request ids, before normalize().
// Of the episodes not made one, calls that complete nothing (an MPI_Test or
// MPI_Testall that found nothing, an MPI_Wait or MPI_Waitall of
// MPI_REQUEST_NULL) are left out where no receive from MPI_ANY_SOURCE is
// active and a call follows, their time added to the next call's gap
// (docs/merge.md, "Polls that found nothing"). Returns how many episodes
// were made one and how many calls were left out. intern: the identity index
// of an Identity (added to the tables if new). load() says how many through
// Options::progress.
CoalesceCounts coalesce_timed_completions(RankData& rank, const std::vector<Identity>& identities,
                                          const std::function<uint32_t(const Identity&)>& intern);

// How merge() ordered the calls: the order it used, the merged events each way it tried (0: not tried),
// whether the alignment was over its work bound, and (auto, where the orders differed) each one's score.
struct Ordered {
  Order used = Order::kWalk;
  size_t walk_events = 0, align_events = 0, nth_events = 0;
  bool align_gave_up = false;
  uint64_t walk_judged = 0, align_judged = 0, nth_judged = 0;  // 0: not judged
  // Order::kAuto: the events each order makes of collectives (and other calls a communicator's members make
  // in one order). Where they differ, the order with fewer is used, unjudged: the other has split some
  // collective among events of fewer members (a master polling with MPI_Iprobe between its steps'
  // MPI_Allreduce, aligned: every step out of line, 12,530 lines of C that no step could be left out of).
  size_t walk_collectives = 0, align_collectives = 0, nth_collectives = 0;
  // The position, among the orders judged (walk, align, nth, each where it was judged), of the one used;
  // -1 where none was judged.
  int judged_index = -1;
};

MergedTrace merge(const Loaded& in, const Options& opt, Ordered* ordered = nullptr);
// One line for a summary, the judge's score named `score`: "by alignment (folded length 401 against the
// walk's 1417)", "by the look-ahead walk (the alignment's order is the same)", ...
std::string describe(const Ordered& o, const std::string& score = "score");

// One merged event before its parameters are described: an identity and the ranks making it there
// (sorted). A merge order is a sequence of them in which every rank's calls come in its order.
struct Column {
  uint32_t identity = 0;
  std::vector<uint32_t> ranks;
  bool operator==(const Column& o) const { return identity == o.identity && ranks == o.ranks; }
};

// Calls that the members of a communicator make in one order (collectives,
// making and freeing communicators, MPI_Finalize): a member that makes one
// later must first make what it does before, however far ahead that is.
bool ordered_across_members(uint32_t func);

// The look-ahead walk's order (above).
std::vector<Column> walk_ranks(const Loaded& in, uint32_t lookahead);

// The ranks' calls as columns of a progressive alignment (merge/src/align.cpp): ranks whose identity
// sequences are equal form a group, and each group, the largest first, is aligned against the columns so
// far by their matching blocks, found as Python's difflib finds them (the longest common run of calls,
// then the same on each side of it): equal calls in a block share a column, the others stand alone, the
// columns' first. Collectives are anchors (a group's n-th on a communicator joins the column of the
// others' n-th where it is the same call), and calls are compared by identity and, where every rank uses
// the same tags with the call, tag. Every rank's calls come in its order. Empty when aligning a group would search ranges
// adding up to more than work_factor times its length and the columns' (a suffix automaton each, O(n)).
std::vector<Column> align_ranks(const Loaded& in, size_t work_factor);

// The ranks' calls as columns by their counts (merge/src/nth.cpp): a rank's n-th call of a kind (identity,
// tag, and for a call completing one request the kind of the call that made it) shares a column with every
// other rank's n-th of that kind, the columns in an order keeping every rank's calls in its order (of those
// all of whose ranks have come to them, the one that was so first; where none has, the ranks' orders
// conflict, and the one most ranks are at goes first with those). O(n log n), and no timing in it.
std::vector<Column> nth_ranks(const Loaded& in);

// Mismatches between the ranks rebuilt from `m` and the normalised input
// (at most `limit` lines); empty when the merge is lossless.
std::vector<std::string> verify(const MergedTrace& m, const Loaded& in, size_t limit = 20);

}  // namespace skt::merge
