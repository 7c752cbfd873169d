// Request slots of a skeleton (internal to the generator).
//
// Every request-creating call (Isend, Irecv, *_init, non-blocking
// collectives) belongs to a ring of slots, skel_req[base .. base+size-1],
// and takes the next slot of its ring each time it runs: a call in a loop
// may have several requests pending at once (Irecv in a loop, then one
// Waitall). A completion (Wait*, Test*, Start*, Request_free, Cancel) names its
// requests by how many of the rank's request-creating calls back they were
// made (reqback); expanding the folded program turns that into "the k-th latest request of ring g",
// which the skeleton finds at run time from the ring's counter. When one
// reference of one rank reaches different creating nodes at different
// occurrences (an Irecv before a loop completed by the Wait in the loop's
// first iteration, the Irecv inside the loop completed in the next), those
// nodes share a ring: the count of requests made stays the same reference.
#pragma once

#include <cstdint>
#include <vector>

#include "skel/folded.h"
#include "skel/trace.h"

namespace skt::gen {

// A reference into a pool (RequestSlots::pool) names no request of its own:
// kTake, a completion's, is a receive pool's oldest started request (the one
// the MPI matches the next message to), or whichever of a send pool's
// pending sends completes first (MPI_Wait*); kPoll, a send pool's take by
// MPI_Test*, whichever is done if any, without waiting (the application
// spun there, taking its messages in: the skeleton takes them where the
// trace did, and a wait could hold a sender whose receiver waits for it);
// kStart, an MPI_Start's, the receive that has been done longest.
enum class PoolRef : uint8_t { kNo, kTake, kStart, kPoll };
// What a ring is (RequestSlots::pool); its value is the skeleton's skel_ring_pool[].
enum class PoolKind : uint8_t { kNone = 0, kReceives = 1, kSends = 2 };

struct RequestRef {
  int32_t ring = -1;  // -1: a request the trace did not see (MPI_REQUEST_NULL)
  uint32_t back = 1;  // 1 = the ring's latest request, 2 = the one before ... (0 in a pool reference)
  PoolRef pool = PoolRef::kNo;
  bool operator==(const RequestRef& o) const { return ring == o.ring && back == o.back && pool == o.pool; }
};

struct RequestSlots {
  std::vector<uint32_t> ring_base, ring_size;  // per ring: first slot, slots
  uint32_t num_slots = 0;
  std::vector<int32_t> ring_of_node;           // per node: ring of a request-creating node, -1 otherwise
  // Per completion node: per world rank, the requests it completes, starts
  // or frees, in order (outer vector empty: not a completion node).
  std::vector<std::vector<std::vector<RequestRef>>> refs;  // [node][rank]
  std::vector<std::string> problems;           // references that differ between occurrences (first kept)
  // Per ring: a pool (compress names it: skel/merged.h, pool_reqback) of
  // persistent receives from MPI_ANY_SOURCE of one tag and communicator
  // (Graph500's active messages keep four started and take each by
  // MPI_Testany as it is done, restarting it at once): the MPI matches each
  // message to the oldest receive started, so which one a completion finds
  // depends on how many came, not on the slot named. Its takes
  // (MPI_Testany/Waitany/Testsome/Waitsome of one) and starts are pool
  // references; the ring's slots keep two queues (started, done). Or a
  // pool of sends (Graph500's send buffers, each found free by MPI_Testany
  // and sent from again): a take completes whichever of its pending sends
  // is done (PoolRef), and a new send takes a free slot; as many slots as
  // the sends a rank made, kMostSendPoolSlots at most.
  std::vector<PoolKind> pool;
};

// creates_request(), uses_requests(): skel/trace.h

RequestSlots assign_request_slots(const FoldedProgram& p);

// The node of every merged event, in order (the program expanded).
std::vector<uint32_t> expand_nodes(const FoldedProgram& p);

}  // namespace skt::gen
