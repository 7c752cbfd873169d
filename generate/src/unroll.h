// Top-level loops of too few iterations to cut, unrolled (internal to the
// generator): their iterations' time steps can then be left out.
#pragma once

#include <cstdint>
#include <string>

#include "skel/folded.h"

namespace skt::gen {

// A top-level loop of at most this many iterations is unrolled where its
// body holds time steps (unroll_short_top_loops).
inline constexpr uint64_t kUnrollAtMost = 3;

// p with its short top-level loops unrolled, in `store`; or p itself where
// none is (K below 2, a threaded program, no such loop). A loop is
// unrolled where it has at most kUnrollAtMost iterations, its body holds
// at least two loops (steps: a loop of two or three iterations cannot be
// cut by K, each iteration a run of time steps, PRK AMR's refinement
// period of 40 steps made 2.6 times), and each iteration's copy can stand
// alone: every rank's values in the body follow no rule over the unrolled
// loop's iteration or the whole program's instances (linear in the
// instance, a cycle of the loop's iteration in a node right in its body, a
// course of the computation through the run). Each copy takes 1 / count of
// the node's instances with the same means, and its part of a cycle or
// phase table over the instances (one value, or a table of its own of at
// most 64). Repeated (a copy's body items are top
// level in turn) while any is unrolled, to at most kMaxTopNodes top-level
// nodes. Node numbers are then the unrolled program's; `note` says what
// was unrolled ("" where nothing was).
const FoldedProgram& unroll_short_top_loops(const FoldedProgram& p, double scale, FoldedProgram& store,
                                            std::string& note);

inline constexpr size_t kMaxTopNodes = 4096;

}  // namespace skt::gen
