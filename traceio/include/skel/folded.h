// A folded program: the merged trace as nested loops of symbols, with the
// timing of every position. Written by skelgen compress, read by the
// generator. File layout: docs/trace-format.md, "Folded programs".
//
// Timing model (what makes the expanded program's time equal the trace's):
// every call instance's computation gap is attributed to exactly one node,
// the outermost node that starts with it: the first call of a loop's first
// iteration gives its gap to the loop (the computation before the loop is
// entered), every other call instance to its own event node. A node keeps,
// per rank, how many values it got and their mean and spread, so that
// mean x n summed over nodes is the trace's total. Call durations go to
// event nodes the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skel/merged.h"

namespace skt {

struct RankStat {
  uint64_t n = 0;     // values summarised
  double mean = 0;    // ns
  double sd = 0;      // standard deviation, ns
  double min = 0, max = 0;
};

// A count-like parameter (count, count2, bytes, bytes2) or a tag (tag, tag2;
// linear or cycle only) whose value changed between the instances of one event
// node: per rank, the rule it follows over the instances i = 0, 1, ...
// A cycle (kCycle) is all ranks' or none: the value at the
// iteration k of the innermost loop around the node is
// cycle[r * period + k mod period], in every run of that loop (NPB BT's stage
// tags); a is then the mean. An instance cycle (kInstanceCycle), also all
// ranks' or none: the value at the node's i-th instance in the whole program
// is cycle[r * period + i mod period] (a call made once per direction of a
// sweep, the directions a loop around it). Peers (peer, peer2; world ranks,
// -2 MPI_PROC_NULL) get only kLinear with b = 0, or the cycles.
// The file stores a kind as its number.
enum class RuleKind : uint8_t {
  kNone = 0,           // the rank does not take part
  kLinear = 1,         // a + b*i
  kMean = 2,           // a, the values in [min, max]
  kCycle = 3,          // over the innermost loop's iteration
  kInstanceCycle = 4,  // over the node's instances in the whole program
  kLoopLinear = 5,     // a + b*k, k the innermost loop's iteration (a tag that is an inner loop's index:
                       // PRK's Synch_p2p pipeline sends row j with tag j, the rows an inner loop)
};
inline bool cycles(RuleKind k) { return k == RuleKind::kCycle || k == RuleKind::kInstanceCycle; }

struct CountRule {
  Param param = Param::count;
  std::vector<RuleKind> kind;   // per world rank
  std::vector<double> a, b, min, max;
  uint64_t period = 0;          // cycles: the cycle's length (at most 64)
  std::vector<int64_t> cycle;   // cycles: per world rank, `period` values (rank-major)
  bool is_cycle() const { return period > 0; }
  bool by_instance() const;     // kInstanceCycle
  // A receive's count where its values wobble (kMean): the largest of every
  // such rank's, since a sender's mean is taken over other instances than
  // its receiver's (a particle code's node of seven neighbour messages).
  double capacity() const;
  // Rank r's value of a linear rule, a + b * its variable: the instance
  // (kLinear) or the innermost loop's iteration (kLoopLinear); a for others.
  double linear_value(size_t r, uint64_t instance, uint64_t iteration) const;
};

// Parts of a node's instances its computation profile has (compress).
inline constexpr size_t kProfileParts = 16;

struct FoldedNode {
  int64_t symbol = -1;          // event node: index into FoldedProgram::symbols.events; loop: -1
  uint64_t count = 0;           // loop: iterations per instance
  std::vector<uint32_t> body;   // loop: child node indices, in order
  uint64_t instances = 0;       // times the node runs in the whole program
  std::vector<RankStat> gap;    // per world rank: computation before the node
  std::vector<RankStat> dur;    // per world rank: call duration (event nodes)
  std::vector<RankStat> work;   // per world rank: thread CPU time of the gap (n = 0: not measured, use gap)
  std::vector<RankStat> blocked;  // per world rank: time of the gap it was blocked (asleep; empty: never)
  std::vector<CountRule> rules; // count-like parameters that vary between instances
  // The course of the computation through the run: per world
  // rank, empty where the gap keeps its mean, else the mean of the gap's
  // computation (work where measured, else gap) over each of S equal parts of
  // the node's instances in program order, as a factor of that rank's mean.
  // Kept where the computation drifts (values that grow small and slow in a
  // solver's sweep): one mean would even out which rank waits when.
  std::vector<std::vector<double>> profile;
  // The computation by phase: where it differs between the
  // phases of a value cycle (the node's own, or a cycled call's beside it in
  // its loop's body: NPB MG's levels, BT's stages) so that one mean would
  // even out the waits between ranks, the phase is, as for a cycle rule, the
  // innermost loop's iteration k (phase_by_instance false) or the node's
  // instance i in the whole program, mod phase_period; per world rank
  // (empty: the rank keeps its mean) the mean computation at each phase, as
  // a factor of that rank's mean. profile, where kept too, is then the course
  // with the phases divided out; the computation at an instance is the mean
  // times both factors. phase_period 0: no table.
  uint64_t phase_period = 0;
  bool phase_by_instance = false;
  std::vector<std::vector<double>> phase_factor;
  bool is_loop() const { return symbol < 0; }
  const CountRule* rule(Param p) const {  // the rule of parameter p, or nullptr (at most one per parameter)
    for (const CountRule& r : rules)
      if (r.param == p) return &r;
    return nullptr;
  }
};

struct FoldedProgram {
  std::string source;            // merged trace it was folded from
  uint64_t merged_events = 0;    // events in that merged trace
  // Folded with call sites joined (compress --join-call-sites, 1.4): a
  // symbol's calls may come from several call sites of one function, and its
  // representative's call site is the first seen; a node's rules may then be
  // instance cycles (RuleKind::kInstanceCycle).
  bool callsites_joined = false;
  MergedTrace symbols;           // tables; events[i] = the representative call of symbol i (no times)
  std::vector<FoldedNode> nodes;
  std::vector<uint32_t> top;     // top-level node indices
  // Messages whose send and receive the top-level loops' iterations part:
  // per top-level loop, the message ends in its middle iteration whose other
  // end lies outside it (a loop the generator does not cut). Set by the fold
  // for the merge-order judge; not kept in a folded file (0 when read).
  uint64_t crossing_messages = 0;
  // MPI_THREAD_MULTIPLE traces: each other thread's calls folded on their
  // own (MergedTrace::threads); a thread's program has its number and runs
  // after merged event fork_after and before join_before of the first
  // thread's (-1: from the start, to the end).
  std::vector<FoldedProgram> threads;
  uint32_t thread = 0;
  int64_t fork_after = -1, join_before = -1;

  // "S0 ( S1 ( S2 S3 )^10 )^200 S4"
  std::string to_string() const;
  // Symbols written, brackets and exponents not counted.
  uint64_t length() const;
  // The symbol sequence the program stands for.
  std::vector<int64_t> expand() const;

  // The main loop: the loop whose runs cover the most calls of the expanded
  // program (count x calls per iteration x instances); the outermost one on a
  // tie. found = false when the program has no loop.
  struct LoopSummary {
    bool found = false;
    uint32_t node = 0;
    uint64_t body_length = 0;  // symbols written in its body (nested loops folded)
    uint64_t count = 0;        // iterations per instance
    uint64_t covered = 0;      // calls of the expanded program inside its runs
  };
  LoopSummary main_loop() const;
};

void write_folded(const std::string& path, const FoldedProgram& p);
FoldedProgram read_folded(const std::string& path);  // throws TraceError naming the file
bool is_folded_file(const std::string& path);

}  // namespace skt
