// Stage 3 on a merged trace: merged events -> symbols -> nested loops, with
// the timing of every position (skel/folded.h).
//
// Two merged events are the same symbol when they are the same call
// (identity), by the same ranks, with the same parameter descriptions —
// except that a count or byte size only has to lie within +-band of a centre
// (the first such values seen for that call, rank by rank), or the message be
// small (at most 4 KiB on every rank: it costs its latency), so that loops
// whose message sizes wobble still fold, and a tag may change by a fixed
// step from one instance to the next (a tag that is the iteration number).
// The exact values are kept: where they vary between a node's instances, its
// CountRule says how (linear in the instance, a cycle over the loop's
// iterations or over the instances, or, for counts only, the mean with its
// range). Peers of calls to given ranks are kept like tags (exactly). With
// join_callsites, the call site is left out of the symbol.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "skel/folded.h"

namespace skt::fold {

struct CompressOptions {
  double count_band = 0.25;  // counts within +-25 % of a centre share a symbol (0: exact)
  // Calls of one function from different call sites may share a symbol,
  // their peers and tags kept exactly by cycle rules, over the loop's
  // iterations or the node's instances (NPB BT's six face exchanges become
  // one loop).
  // Off: a symbol is one call site (the published method).
  bool join_callsites = false;
  // Threads (0: one per core, at most 4, for traces of 65,536 calls or more;
  // else one). The timing walk splits the ranks between them, and the message
  // partners are found beside the first symbols. The program does not depend
  // on it.
  unsigned threads = 0;
  std::function<void(const std::string&)> progress;
};

FoldedProgram compress(const MergedTrace& m, const CompressOptions& opt);

// Problems (at most `limit`): the program must expand to the merged trace's
// calls, and every rank's total computation and communication time must
// match the merged trace's within `tolerance` (relative).
std::vector<std::string> verify(const FoldedProgram& p, const MergedTrace& m, double tolerance = 1e-3,
                                size_t limit = 20);

}  // namespace skt::fold
