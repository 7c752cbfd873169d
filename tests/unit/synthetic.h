// Writes small hand-made traces through the real writer, for merge tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "skel/trace.h"

namespace skt::testing {

struct Syn {
  uint32_t func = 0;
  uint32_t site = 0;  // call site number (offset 0x100 + 16 * site in module "app")
  int64_t peer = kNone, tag = kNone, count = kNone, root = kNone, comm = kCommWorld;
  uint64_t flags = 0;
  int64_t new_comm = kNone;            // local id of a communicator this call creates
  std::vector<int64_t> members;        // its members (world ranks)
  int64_t color = kNone;
  std::vector<int64_t> reqs;           // created (one) or completed request ids
  std::vector<int64_t> sources;        // completions: per request completed, the matched world source or -1
  int64_t gap = 1000, dur = 100;       // ns
  int64_t work = kNone;                // thread CPU ns of the gap: a rank with any is traced with GapClock::kThreadCpu
  int64_t blocked = 0;                 // ns of the gap the thread was blocked (trace 2.2 field kBlocked)
  int64_t team = 0;                    // ns the rank's other threads computed (trace 2.4 field kTeamCpu)
  int64_t kernel_rate = kNone;         // MPI_Finalize: the kernel's rate over the run (trace 1.2)
  uint32_t thread = 0;                 // the calling thread (a rank with any other than 0: MPI_THREAD_MULTIPLE)
};

// dir/rank-NNNNN.skt for ranks 0..P-1 with the events program(rank) returns,
// each header saying `sharing` (trace 2.4).
void write_synthetic(const std::string& dir, uint32_t P, const std::function<std::vector<Syn>(uint32_t)>& program,
                     uint64_t run_id = 7, CoreSharing sharing = CoreSharing::kUnknown);

}  // namespace skt::testing
