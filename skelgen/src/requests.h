// Request slots of a skeleton (internal to the generator).
//
// Every request-creating call (Isend, Irecv, *_init, non-blocking
// collectives) gets a slot, skel_req[slot]. A completion (Wait*, Test*,
// Start*, Request_free) names its requests by distance back in the merged
// event sequence; the expansion of the folded program says which node that
// is at each occurrence. When one reference of one rank reaches different
// creating nodes at different occurrences (an Irecv before a loop completed
// by the Wait in the loop's first iteration, the Irecv inside the loop
// completed in the next iteration), those nodes share a slot: for that rank
// they are never pending at the same time.
#pragma once

#include <cstdint>
#include <vector>

#include "skel/folded.h"

namespace skt::gen {

struct RequestSlots {
  uint32_t num_slots = 0;
  std::vector<int32_t> slot_of_node;  // per node: slot of a request-creating node, -1 otherwise
  // Per completion node: per world rank, the slots of the requests it
  // completes, starts or frees, in order (-1: a request the trace did not see).
  std::vector<std::vector<std::vector<int32_t>>> refs;  // [node][rank] (empty outer vector: not a completion)
};

// True for calls that create one request.
bool creates_request(uint32_t func);
// True for Wait*/Test*/Start*/Request_free.
bool uses_requests(uint32_t func);

RequestSlots assign_request_slots(const FoldedProgram& p);

// The node of every merged event, in order (the program expanded).
std::vector<uint32_t> expand_nodes(const FoldedProgram& p);

}  // namespace skt::gen
