// How the folded program names the requests a call completes, starts or
// frees (internal to compress): reqback (skel/merged.h), and the pools.
#pragma once

#include <vector>

#include "skel/merged.h"

namespace skt::fold {

// Per merged event: the reqback list of a call that completes, starts or
// frees requests; others get an empty ListDesc. A request's distance in
// merged events (reqrefs) grows from one iteration to the next when it was
// made before the loop (persistent requests started in a loop); counted in
// the rank's own request-creating calls it stays the same, so such loops
// fold. A take from a pool, and a restart into one, name the pool instead
// (pool_reqback): which request of the pool the trace names is the timing's
// choice (docs/compress.md, "Request pools").
std::vector<ListDesc> request_backs(const MergedTrace& m);

}  // namespace skt::fold
