// The skeleton's plan (internal to the generator): every decision that
// makes the skeleton differ from the folded program, taken before a line of
// C is written, so that the emitter writes it and the completion check
// (check.h) runs it from the same facts.
//
//   - which loops run fewer iterations (cuts), and how many;
//   - which runs of point-to-point calls each rank makes in an order of its
//     own (steps: safe_order.h);
//   - the request slots every request-creating call uses (requests.h);
//   - whether receives take any tag (traces of several threads per rank).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "farm.h"
#include "requests.h"
#include "skel/folded.h"
#include "skel/generate.h"

namespace skt::gen {

// Per node, per world rank: ns the application spent in the node (its
// subtree: gaps and call durations), and the program's time (the slowest
// rank's, MPI_Init's and MPI_Finalize's own time left out).
struct NodeTimes {
  std::vector<std::vector<double>> total;  // [node][rank]
  std::vector<double> rank_total;          // [rank]: the program, per rank
  double program = 0;                      // max over ranks
  double share(uint32_t node) const;       // the node's time (max over ranks) / program
};
NodeTimes measure_times(const FoldedProgram& p);

// Rank r's computation per instance of a node, in ns: its mean thread CPU
// time where the trace measured that (ranks sharing cores), else its mean
// wall-clock gap, less the tracer's own fixed cost in every gap (the trace
// header's gap floor on that clock), which the application did not spend.
double computation_ns(const FoldedProgram& p, const FoldedNode& node, uint32_t r);

struct Plan {
  std::vector<CutLoop> cuts;   // the loops that run fewer iterations, in the order chosen
  std::vector<int32_t> cut_of; // per node: index in cuts, -1: runs as traced
  RequestSlots slots;
  // A run of point-to-point calls that each rank makes in an order of its own.
  struct Step {
    std::vector<uint32_t> nodes;               // the run, as merged
    std::vector<std::vector<uint32_t>> order;  // per world rank: the nodes it calls, in order
  };
  std::map<uint32_t, Step> steps;  // by the run's first node
  bool any_tag_receives = false;   // traces of several threads per rank in one stream: receives take MPI_ANY_TAG
  // A thread's own program (FoldedProgram::threads): it holds the
  // communicators the first thread made before it started.
  bool inherits_comms = false;
  // Receives from MPI_ANY_SOURCE take the source they took in the trace
  // (where which message the MPI matches first would decide completion).
  bool pin_wildcards = false;
  // Whether node e's receive end (its `peer` parameter: Param::peer, or
  // Param::peer2 of an MPI_Sendrecv) takes any source in the skeleton: an
  // MPI_ANY_SOURCE receive unless the wildcards are pinned and the trace
  // names its source (a blocking receive's; an MPI_Irecv's is named at its
  // completion, not on the receive: HPCC's RandomAccess, pinned to
  // MPI_PROC_NULL, took no message, and its senders waited for ever).
  bool any_source(const Identity& id, const MergedEvent& e, Param peer) const {
    return id.peer_class == PeerClass::kAnySource &&
           (!pin_wildcards || e.params[static_cast<size_t>(peer)].kind == ParamKind::kAbsent);
  }
  // Receives that post room for more than their own counts say, by node:
  // the longest message (bytes) the completion check saw sent to them.
  // A send's count that is the mean of counts that vary (small messages,
  // compress's band) can be longer than the count its receive kept where the
  // two were folded apart (a receiver's first iteration peeled off, all of
  // its messages the shortest): MPI_ERR_TRUNCATE. The emitter and the check
  // both post max(count, these bytes / the datatype's size).
  std::map<uint32_t, uint64_t> receive_bytes;
  // The count node n's receive posts at least, in elements of type_size bytes (0: none).
  int64_t room_count(uint32_t n, int64_t type_size) const {
    const auto it = receive_bytes.find(n);
    if (it == receive_bytes.end()) return 0;
    const uint64_t size = static_cast<uint64_t>(std::max<int64_t>(type_size, 1));
    return static_cast<int64_t>((it->second + size - 1) / size);
  }

  // Runs of top-level nodes that stand for themselves and for the runs after
  // them that the skeleton leaves out: the time steps of an irregular
  // program whose time-step loop did not fold (neighbours and message sizes
  // that change after each refinement), where cutting loops alone leaves
  // the skeleton much longer than 1/K of the run (leave_out_steps below).
  // What a kept run's factor is the ratio of: traced time (a group of time
  // steps of one kind and shape), or calls (a sample of the short steps).
  enum class StandsBy : uint8_t { kTracedTime, kCalls };
  struct KeptRun {
    size_t first = 0, end = 0;  // p.top[first, end)
    double factor = 1;          // (its own + the left-out runs it stands for) / its own, of `by`
    size_t left_out = 0;        // top-level nodes left out that it stands for
    StandsBy by = StandsBy::kTracedTime;
    // For the skeleton's outlier rule (skel_runs_left_out_time): its own
    // traced time, and its class, the kind of step it is (short steps
    // sampled by their calls: class 0; each kind of the others: 1, 2, ...).
    double traced_s = 0;
    int run_class = 0;
  };
  std::vector<KeptRun> kept_runs;
  std::vector<bool> left_out;  // per index in p.top
  bool leaves_out(size_t top_index) const { return top_index < left_out.size() && left_out[top_index]; }
  void keep_all() {
    kept_runs.clear();
    left_out.clear();
  }

  // Long computations of the top level, made once (a program's set-up
  // before its first exchange, its report before MPI_Finalize): each runs
  // 1/K of its work, timed, and stands for K times that (shorten_long_gaps).
  struct Shortened {
    uint32_t node = 0;       // a top-level node (a call, or a loop: the computation before its first iteration)
    double longest_ns = 0;   // its gap on the rank where it was longest (wall clock)
  };
  std::vector<Shortened> shortened;  // in program order
  double shortened_by = 1;           // K
  // The timers of the skeleton's runtime (skel_loop_factor ...): the cut
  // loops, then the kept runs, then the shortened computations.
  size_t timers() const { return cuts.size() + kept_runs.size() + shortened.size(); }

  // Dynamic master-worker farms (farm.h): each runs its own protocol in
  // place of its top-level items, with every K-th task (every task where
  // the farms are in time steps that are left out: leave_out_steps).
  std::vector<Farm> farms;
  std::vector<int32_t> farm_of_top;  // per index in p.top: the farm it is in, -1: none
  int32_t farm_at(size_t top_index) const {
    return top_index < farm_of_top.size() ? farm_of_top[top_index] : -1;
  }
  void index_farms(size_t top_items);  // farm_of_top, from farms

  // The iterations loop node n runs in the skeleton.
  uint64_t iterations(const FoldedProgram& p, uint32_t n) const {
    return cut_of[n] >= 0 ? cuts[static_cast<size_t>(cut_of[n])].iterations : p.nodes[n].count;
  }
  void uncut(uint32_t loop);  // runs it as traced
};

// A loop is cut only where this holds (and it holds the time): every
// message one of its iterations sends is received in that iteration and
// the other way round (per sender, receiver, communicator and tag), and
// every collective call in it is made by every member of its communicator
// in the same node, so that cutting it removes the same calls on every
// rank. `why` (optional) says what fails. With the program's request slots,
// a receive made by an MPI_Irecv and cancelled in the iteration (MPI_Cancel)
// counts as no receive (the MPI matched no message to it).
bool closed(const FoldedProgram& p, uint32_t loop, std::string* why = nullptr, const RequestSlots* slots = nullptr);

// A loop whose calls are all MPI_Iprobe (with the computation between them,
// in loops of its own or not): a wait for a message, which the application
// left when one came. Never cut: cut, the skeleton left it as early, waited
// in the receive after it, and the left-out polls' time was added on top (a
// farm master polling between tasks: +19 % on 2 MPICH ranks,
// tests/apps/step_farm.c). The emitter ends some of them when a message is
// in (docs/generate.md).
bool only_polls(const FoldedProgram& p, uint32_t loop);

// Node n is an MPI_Iprobe that found nothing: the tracer names a probe's
// source only where it found a message.
bool probe_found_nothing(const FoldedProgram& p, uint32_t n);

// A run of nodes (p.top[first, end), or a loop's body) is closed in the same
// sense: messages and collectives all inside it.
bool closed_items(const FoldedProgram& p, const std::vector<uint32_t>& items, std::string* why = nullptr,
                  const RequestSlots* slots = nullptr);

// The iterations after which a loop's calls come back to the same values
// (1, or the period its cycle rules span); a cut keeps whole periods.
uint64_t value_period(const FoldedProgram& p, uint32_t loop);

// Each rank's time in the skeleton on the traced machine, as planned: a cut
// loop keeps iterations / count of its time, a left-out top-level node none.
std::vector<double> planned_rank_times(const FoldedProgram& p, const NodeTimes& t, const Plan& plan);

// Where the cut loops leave the skeleton longer than kLeaveOutAbove / K of
// the traced run (an irregular program: its time steps did not fold into
// one loop), the top level is split into time steps: each shortest closed
// run (everything sent before its end received by then, no per-rank order
// across it) with a loop or a point-to-point call, with the runs of
// collectives alone after it (the step's reductions, whose time is the
// ranks' skew). A step's kind is the call sites of its point-to-point calls
// (of all its calls where it makes none). The shortest steps, as many as
// add up to a quarter of the skeleton's share of the run (those of
// collectives alone, and those of any kind shorter than a millisecond),
// are short steps: sorted by their calls, a sample of at most 16 is kept,
// one in each stratum, and stands for them all in proportion to their
// calls (a short step takes its calls' latency where it runs; its traced
// time does not say how long that is). The other steps of each kind made
// twice or more (K times where farms run in them) are split by shape (their
// calls per traced second within 2x), sorted by time and grouped, at most
// 1 / share steps a group whose mean time is at most twice their median's;
// of each group one step near the median is kept (the one of fewest
// top-level nodes) and stands for the group: its measured time (with what
// the cut loops inside it predict), times the group's traced time / its
// own, predicts them. share is 1 / K, less (down to 1 / 2K) where what
// cannot be left out would keep the skeleton longer than 1 / K of the run.
// Always kept, standing for nothing: steps of a kind made once (but for
// short ones); runs that hold MPI_Init or MPI_Finalize, persistent
// requests, communicator, window, file or datatype calls, or collectives
// some members make elsewhere, and collectives before the first step.
inline constexpr double kLeaveOutAbove = 2.0;
void leave_out_steps(const FoldedProgram& p, const NodeTimes& t, const GenerateOptions& opt, Plan& plan,
                     std::set<std::string>& notes);

// The plan for p: cuts chosen (GenerateOptions::scale, min_share), request
// slots assigned, deadlock-free orders found for the runs of
// point-to-point calls. What could not be done exactly goes to `notes`.
Plan make_plan(const FoldedProgram& p, const NodeTimes& t, const GenerateOptions& opt,
               std::set<std::string>& notes);

}  // namespace skt::gen
