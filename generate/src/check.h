// The completion check (internal to the generator): does the skeleton, as
// planned, run to its end on every rank?
//
// An abstract execution of the skeleton exactly as the emitter writes it
// (the plan's cuts, per-rank step orders and request slots; every call's
// per-rank peer, tag, communicator, count and root as the C computes them)
// over all ranks at once, under MPI's matching rules:
//   - point-to-point messages match per communicator, by source and tag,
//     in the order they were sent and the receives posted (non-overtaking);
//     a receive from MPI_ANY_SOURCE is matched only when no rank can move,
//     so that every message it could take is posted (as in ISP's POE); it
//     takes the first posted, and further runs take another at one such
//     choice each (CheckOptions::wildcard_runs);
//   - a standard send completes when its receive takes it, unless it is at
//     most CheckOptions::eager_bytes long; a synchronous one always waits,
//     a buffered one never;
//   - collectives match in order per communicator, every member the same
//     call (and root); a blocking one completes when all members have made
//     it; calls that create communicators are collectives over the parent
//     (MPI_Comm_create_group: over the new members) and give each member
//     the group the trace recorded;
//   - every request completes through its slot's Wait*/Test* (a Test the
//     skeleton finishes with a wait), MPI_Start activates a persistent one;
//   - MPI_Finalize (with the skeleton's own reduction before it) is a
//     collective of all ranks, after each has completed the requests still
//     in its slots; anything still open then is an error.
// Cost: linear in the calls the skeleton makes (never the uncut trace),
// plus the scans of pending messages of one destination.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "plan.h"
#include "skel/folded.h"

namespace skt::gen {

struct CheckOptions {
  // Standard-mode sends of at most this many bytes complete before their
  // receive is posted (the eager protocol of every MPI for small
  // messages); 0: every one waits for its receive (rendezvous, the
  // strictest); UINT64_MAX: the MPI buffers everything.
  uint64_t eager_bytes = 0;
  // Runs beyond the first in which a wildcard receive takes another
  // sender's message than the first posted (one choice changed in each,
  // the earliest first).
  uint32_t wildcard_runs = 16;
};

enum class CheckProblem : uint8_t {
  kNone,
  kDeadlock,            // some ranks wait for ever
  kCollectiveMismatch,  // the members of a communicator make different collective calls in one place
  kOpenAtFinalize,      // a request still open when every rank is in MPI_Finalize
  kTruncation,          // a message longer than the receive that takes it
  kBadRequest,          // MPI_Start of a request that is not persistent and inactive
  kBadCommunicator,     // a call on a communicator the rank does not hold (not made yet, freed, not a member)
};
const char* check_problem_name(CheckProblem p);

// Where a rank is: the call it is in (an event node), and the loops around
// it with their iteration in the skeleton, outermost first.
struct CheckPosition {
  uint32_t rank = 0;
  int64_t node = -1;  // -1: at the program's end
  std::vector<std::pair<uint32_t, uint64_t>> loops;
};

struct CheckResult {
  CheckProblem problem = CheckProblem::kNone;
  std::string message;             // one line: what, rank, call, call site, loop
  std::vector<CheckPosition> at;   // the ranks involved, the first where it shows
  uint64_t calls = 0;              // MPI calls the skeleton makes, all ranks (the first run)
  uint32_t wildcard_runs = 0;      // runs with another wildcard choice
  uint64_t wildcard_choices = 0;   // wildcard receives that had several senders to take from (first run)
  uint64_t eager_needed = 0;       // the longest standard send that completed before its receive was posted
  uint64_t unreceived = 0;         // messages sent eagerly and never received (MPI drops them at MPI_Finalize)
  // Receives that messages longer than their room were sent to, by node: the
  // longest such message's bytes (Plan::receive_bytes makes room; MPI would
  // fail with MPI_ERR_TRUNCATE). Not a failure of the check: matching does
  // not depend on lengths.
  std::map<uint32_t, uint64_t> short_receives;
  // The skeleton's time as the run went (first run; ns from MPI_Init's
  // return to the last rank's MPI_Finalize): each rank's clock advances by
  // each call's computation before it (the node's mean, as the emitter
  // writes it: a loop's first iteration's first call's to the loop, a
  // shortened one's 1/K) and the call's least mean traced duration over
  // the ranks (one rank's alone: its shortest); a call that waits ends no
  // earlier than what it waited for: a
  // message once both ends are posted (its send once posted, up to
  // kTimedEagerBytes), a collective once every member came. So a rank
  // waiting for another rank's cut loop waits less, where each rank's own
  // time less what the plan leaves out does not know it.
  double expected_ns = 0;
  bool ok() const { return problem == CheckProblem::kNone; }
};

CheckResult check_completion(const FoldedProgram& p, const Plan& plan, const CheckOptions& opt = {});

// "MPI_Allreduce (n12, app+0x1a2) in loop n10 at iteration 3": a position for messages.
std::string describe_position(const FoldedProgram& p, const CheckPosition& at);

}  // namespace skt::gen
