// Test helpers: folded programs from hand-made rank programs (written
// through the real writer, merged and folded by the real stages), for the
// generator's and the completion check's tests.
#pragma once

#include <functional>
#include <vector>

#include "skel/compress.h"
#include "skel/merge.h"
#include "synthetic.h"

namespace skt::testing {

// The folded program of the ranks' calls, calibrated as the tracer would
// have it (kernel name, version, 1e8 units per second; no gap floors).
FoldedProgram folded_from(uint32_t P, const std::function<std::vector<Syn>(uint32_t)>& program,
                          const fold::CompressOptions& fold = {}, merge::Order order = merge::Options{}.order);

// A call of func at call site `site`.
Syn call(uint32_t func, uint32_t site);

// A point-to-point call of 8 elements with peer and tag.
Syn message(uint32_t func, uint32_t site, int64_t peer, int64_t tag);

}  // namespace skt::testing
