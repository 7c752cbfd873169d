// Deadlock-free order of a run of point-to-point calls (internal to the
// generator).
//
// Merging puts each communication step into one order for every rank
// (Irecvs, sends, receives, Waits), and the application's own per-rank
// order is gone. A step of blocking calls in that order can deadlock once
// messages are too large for the MPI's eager buffers (everyone sends first).
// safe_order() checks a run under the strictest rule, rendezvous (a send
// completes only when its receive is posted, and the other way round),
// simulating every rank. If the emitted order can block, it orders each
// rank's blocking calls by one global order of the messages (posting calls
// first): the smallest unfinished message then always has both ends ready.
// The new order is simulated too before it is used. A run it cannot model
// (an MPI_Irecv from MPI_ANY_SOURCE, requests from outside the run) gets
// each rank's non-blocking receives posted first instead. Neither moves a
// request-creating call across a completion naming the same ring of request
// slots (it would complete another request, or reuse a pending slot).
#pragma once

#include <cstdint>
#include <vector>

#include "requests.h"
#include "skel/folded.h"

namespace skt::gen {

// Calls safe_order() may reorder: sends, receives, Sendrecv, Wait*.
bool is_point_to_point(uint32_t func);

// Parameter pm of event node n on rank r at its j-th instance in the whole
// program, the k-th iteration of its innermost loop (the node's rule where
// the value changes between instances, else its symbol's): a cycle over the
// loop's iterations (RuleKind::kCycle) and a rule linear in them
// (RuleKind::kLoopLinear) are at k, every other rule at j. Where the
// innermost loop runs whole periods of the cycle, or only once, k = j.
int64_t value_at(const FoldedProgram& p, uint32_t n, Param pm, uint32_t r, uint64_t j, uint64_t k);
int64_t value_at(const FoldedProgram& p, uint32_t n, Param pm, uint32_t r, uint64_t j);  // k = j

struct SafeOrder {
  enum Verdict { kAsEmitted, kReordered, kUnproven } verdict = kAsEmitted;
  std::vector<std::vector<uint32_t>> order;  // kReordered: per world rank, the run's nodes it calls, in order
};

// run: consecutive event nodes of one node list, all is_point_to_point.
SafeOrder safe_order(const FoldedProgram& p, const RequestSlots& slots, const std::vector<uint32_t>& run);

}  // namespace skt::gen
