// The completion check, and the repairs of a plan that does not complete.
#include "repair.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace skt::gen {
namespace {

// Messages of at most this size are sent eagerly by every MPI we know
// (Open MPI's shared-memory eager limit is 4 KiB, MPICH's larger): a
// skeleton that needs no more completes wherever the application did.
constexpr uint64_t kSafeEagerBytes = 4096;

std::string loops_text(const std::vector<uint32_t>& loops) {
  std::string s;
  for (uint32_t l : loops) s += (s.empty() ? "n" : ", n") + std::to_string(l);
  return s;
}

// The cut loops around the calls where the problem shows.
std::vector<uint32_t> blamed_cuts(const Plan& plan, const CheckResult& r) {
  std::set<uint32_t> out;
  for (const CheckPosition& at : r.at)
    for (const auto& [loop, iteration] : at.loops)
      if (plan.cut_of[loop] >= 0) out.insert(loop);
  return {out.begin(), out.end()};
}

class Repairer {
 public:
  Repairer(const FoldedProgram& p, Plan& plan, const std::function<void(const std::string&)>& progress)
      : p_(p), plan_(plan), progress_(progress) {}

  Completion run() {
    CheckResult r = check("checking that the skeleton completes");
    // With messages sent eagerly, senders get further before a wildcard receive is matched than when each
    // waits for its receive, and it may take a message the strict run never offered it (a random program
    // on 4 ranks: strict complete, hung under Open MPI): both are checked where wildcards are
    if (has_wildcard_receives()) {
      CheckOptions unlimited;
      unlimited.eager_bytes = std::numeric_limits<uint64_t>::max();
      const CheckResult buffered = check("checking with messages buffered by the MPI", unlimited);
      r.wildcard_choices = std::max(r.wildcard_choices, buffered.wildcard_choices);
      if (r.wildcard_choices > 0 || !buffered.ok()) r = pin_wildcards(r);
    }
    if (!r.ok() && !plan_.cuts.empty()) r = keep_loops_whole(r);
    if (!r.ok()) return with_buffering(r);
    out_.complete = true;
    out_.verdict = "completes on every rank, every message waiting for its receive (" + std::to_string(r.calls) +
                   " calls checked)";
    out_.last = r;
    return out_;
  }

 private:
  // A check of the plan; where messages longer than their receives' room
  // were sent, the room is made (make_room) and the plan checked again:
  // matching does not depend on lengths, so once is enough.
  CheckResult check(const std::string& what, const CheckOptions& opt = {}) {
    if (progress_) progress_(what);
    CheckResult r = check_completion(p_, plan_, opt);
    if (r.short_receives.empty()) return r;
    make_room(r.short_receives);
    r = check_completion(p_, plan_, opt);
    if (!r.short_receives.empty() && r.ok()) {
      const auto& [node, bytes] = *r.short_receives.begin();
      r.problem = CheckProblem::kTruncation;
      r.message = "a message of " + std::to_string(bytes) + " bytes would be received into less (MPI_ERR_TRUNCATE): " +
                  describe_position(p_, CheckPosition{0, static_cast<int64_t>(node), {}});
    }
    return r;
  }

  // A sender's count that is the mean of counts that vary (compress keeps
  // small messages' mean) can be longer than its receive's own count: the
  // receive posts room for the longest message sent to it. One repair line
  // for all of them, naming the first.
  void make_room(const std::map<uint32_t, uint64_t>& short_receives) {
    size_t raised = 0;
    std::string first;
    for (const auto& [node, bytes] : short_receives) {
      uint64_t& room = plan_.receive_bytes[node];
      if (bytes <= room) continue;
      if (first.empty())
        first = describe_position(p_, CheckPosition{0, static_cast<int64_t>(node), {}}) + " to " +
                std::to_string(bytes) + " bytes";
      room = bytes;
      ++raised;
    }
    if (raised == 0) return;
    out_.repairs.push_back(std::to_string(raised) + " receive(s) post room for the longer messages sent to them " +
                           "(their senders' counts are means of counts that vary): " + first +
                           (raised > 1 ? ", ..." : ""));
  }

  bool has_wildcard_receives() const {
    for (const Identity& id : p_.symbols.identities)
      if (id.peer_class == PeerClass::kAnySource) return true;
    return false;
  }

  void uncut(uint32_t loop, const std::string& why) {
    const CutLoop& c = plan_.cuts[static_cast<size_t>(plan_.cut_of[loop])];
    out_.repairs.push_back("loop n" + std::to_string(loop) + " runs all " + std::to_string(c.count) +
                           " iterations (cut to " + std::to_string(c.iterations) + ", " + why + ")");
    plan_.uncut(loop);
  }

  // Where a receive from MPI_ANY_SOURCE had several messages to take, the
  // skeleton's completion depends on which one the MPI matches first, and
  // the choices combine over the iterations beyond what the check can try:
  // the receives take the source they took in the trace instead (the
  // application's own matching), unless that fails where the wildcards did
  // not.
  CheckResult pin_wildcards(const CheckResult& r) {
    plan_.pin_wildcards = true;
    CheckResult pinned = check("checking with each MPI_ANY_SOURCE receive taking its traced source");
    if (!pinned.ok() && r.ok()) {
      plan_.pin_wildcards = false;
      return r;
    }
    out_.repairs.push_back("receives from MPI_ANY_SOURCE take the source they took in the trace (" +
                           (r.wildcard_choices > 0 ? std::to_string(r.wildcard_choices) + " of them had"
                                                   : std::string("with messages buffered by the MPI, they have")) +
                           " several messages to take: completion would depend on the MPI's choice)");
    return pinned;
  }

  // The cut loops where the problem shows are kept whole, as long as that
  // helps; then, if it still fails, every cut loop, and the cuts are put
  // back one by one where the program still completes with them.
  // Where the program does not complete even with every loop whole, the
  // cuts are not to blame: they are all given back (the program relies on
  // the MPI's buffering, with_buffering) and `r` returned as it was.
  CheckResult keep_loops_whole(CheckResult r, const CheckOptions& opt = {}) {
    const std::vector<CutLoop> planned = plan_.cuts;
    const size_t repairs = out_.repairs.size();
    for (std::vector<uint32_t> blamed = blamed_cuts(plan_, r); !r.ok() && !blamed.empty();
         blamed = blamed_cuts(plan_, r)) {
      for (uint32_t loop : blamed) uncut(loop, "the skeleton would not complete: " + r.message);
      r = check("checking again with loop(s) " + loops_text(blamed) + " whole", opt);
    }
    if (r.ok() || plan_.cuts.empty()) return r;
    const std::vector<CutLoop> cuts = plan_.cuts;
    for (const CutLoop& c : cuts) plan_.uncut(c.node);
    const CheckResult whole = check("checking again with every loop whole", opt);
    if (!whole.ok()) {  // not the cuts
      for (const CutLoop& c : planned) cut_again(c);
      out_.repairs.resize(repairs);
      return whole;
    }
    for (const CutLoop& c : cuts) {
      cut_again(c);
      CheckResult with = check("checking the cut of loop n" + std::to_string(c.node), opt);
      if (with.ok()) continue;
      plan_.uncut(c.node);
      out_.repairs.push_back("loop n" + std::to_string(c.node) + " runs all " + std::to_string(c.count) +
                             " iterations (cut to " + std::to_string(c.iterations) +
                             ", the skeleton would not complete: " + with.message + ")");
    }
    return check("checking the repaired skeleton", opt);
  }

  void cut_again(const CutLoop& c) {
    plan_.cut_of[c.node] = static_cast<int32_t>(plan_.cuts.size());
    plan_.cuts.push_back(c);
  }

  // No cut is to blame: does it complete where the MPI sends short
  // messages eagerly, as the application's own run relied on?
  Completion with_buffering(const CheckResult& strict) {
    CheckOptions unlimited;
    unlimited.eager_bytes = std::numeric_limits<uint64_t>::max();
    CheckResult r = check("checking with messages buffered by the MPI", unlimited);
    if (!r.ok() && !plan_.cuts.empty()) r = keep_loops_whole(r, unlimited);
    out_.last = strict;
    if (!r.ok()) {
      out_.verdict = r.message;
      out_.last = r;
      return out_;
    }
    out_.complete = true;
    out_.last = r;
    const std::string needs = std::to_string(r.eager_needed) + " bytes";
    out_.verdict = "completes where the MPI sends messages of up to " + needs +
                   " before their receive is posted, as the traced run did (with every message waiting for its "
                   "receive: " + strict.message + ")";
    if (r.eager_needed > kSafeEagerBytes)
      out_.warning = "the skeleton completes only where the MPI buffers messages of " + needs +
                     " before their receive is posted (the application relied on it too); an MPI that does not "
                     "will hang, and the watchdog stops it: " + strict.message;
    if (r.unreceived > 0)
      out_.warning += std::string(out_.warning.empty() ? "" : "; ") + std::to_string(r.unreceived) +
                      " message(s) are sent and never received (the MPI drops them at MPI_Finalize)";
    return out_;
  }

  const FoldedProgram& p_;
  Plan& plan_;
  const std::function<void(const std::string&)>& progress_;
  Completion out_;
};

}  // namespace

Completion ensure_completion(const FoldedProgram& p, Plan& plan,
                             const std::function<void(const std::string&)>& progress) {
  return Repairer(p, plan, progress).run();
}

}  // namespace skt::gen
