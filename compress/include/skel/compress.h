// Stage 3 on a merged trace: merged events -> symbols -> nested loops, with
// the timing of every position (skel/folded.h).
//
// Two merged events are the same symbol when they are the same call
// (identity), by the same ranks, with the same parameter descriptions —
// except that a constant count or byte size only has to lie within +-band of
// a centre (the first such value seen for that call), so that loops whose
// message sizes wobble a little still fold, and a tag may change by a fixed
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

#include "skel/fold.h"
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
  // Top-level loops of fewer iterations than this (0: none) are written
  // out, their bodies' short loops too where they then stand at the top
  // (write_out_short_top_loops). skelgen generate sets it to K: a cut loop
  // runs at least 2 iterations, so a loop of fewer than K at the top hides
  // the time steps in its body from the sampling of the top level's steps
  // (docs/generate.md, "Irregular time steps").
  uint64_t write_out_top_loops_below = 0;
  std::function<void(const std::string&)> progress;
};

FoldedProgram compress(const MergedTrace& m, const CompressOptions& opt);

// Rewrites f's top level: each loop of fewer than `below` iterations whose
// body is more than one call becomes its body written out `count` times,
// again for the loops that then stand at the top, as long as the top level
// stays within max_items items. Returns whether anything was written out.
bool write_out_short_top_loops(Folded& f, uint64_t below, size_t max_items);
// Whether p's top level holds such a loop.
bool has_short_top_loop(const FoldedProgram& p, uint64_t below);

// Problems (at most `limit`): the program must expand to the merged trace's
// calls, and every rank's total computation and communication time must
// match the merged trace's within `tolerance` (relative).
std::vector<std::string> verify(const FoldedProgram& p, const MergedTrace& m, double tolerance = 1e-3,
                                size_t limit = 20);

}  // namespace skt::fold
