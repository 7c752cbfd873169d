// Traces whose ranks ended early: the longest prefix that completes.
#include "partial.h"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "check.h"
#include "plan.h"
#include "skel/skel_funcs.h"

namespace skt::gen {
namespace {

// What every MPI sends before its receive is posted (the threshold under
// which repair.cpp calls a skeleton's buffering ordinary).
constexpr uint64_t kCommonEagerBytes = 4096;

MergedTrace prefix_of(const MergedTrace& m, size_t n) {
  MergedTrace t = m.tables();
  t.events.assign(m.events.begin(), m.events.begin() + static_cast<std::ptrdiff_t>(n));
  for (uint32_t r = 0; r < m.world_size; ++r) {
    t.ranks[r].gaps = m.ranks[r].gaps;
    t.ranks[r].durations = m.ranks[r].durations;
    t.ranks[r].works = m.ranks[r].works;
    t.ranks[r].blocked = m.ranks[r].blocked;
  }
  keep_merged_prefix(t, n);
  return t;
}

// Does the skeleton of the first n merged events (loops uncut) run to its end?
bool completes(const MergedTrace& m, size_t n, const FoldPrefix& fold) {
  if (n == 0) return true;
  const FoldedProgram p = fold(prefix_of(m, n));
  GenerateOptions go;
  go.scale = 1;
  std::set<std::string> notes;
  Plan plan = make_plan(p, measure_times(p), go, notes);
  plan.inherits_comms = m.thread != 0;  // a thread's stream holds the communicators the first thread made
  for (const CutLoop& c : std::vector<CutLoop>(plan.cuts)) plan.uncut(c.node);
  CheckOptions co;
  co.eager_bytes = kCommonEagerBytes;
  return check_completion(p, plan, co).ok();
}

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// At most this many sync points are tried before the step-back search.
constexpr int kSyncPointTries = 16;

// The longest prefix, at most `limit` events long, that ends with a
// blocking collective of every rank on MPI_COMM_WORLD and completes
// (`prefix_completes`), trying the last kSyncPointTries such points before limit;
// 0 if none does. Every rank's calls before such a collective precede it in
// the merged order and its calls after it follow, so the prefix is each
// rank's calls up to one global synchronisation: where a step ends, the
// messages of the steps before it matched. The step-back search alone
// assumes that completing is monotone in the prefix's length, and it is
// not: a prefix cut inside a step leaves halves of that step's messages
// (miniAMR on 4 Open MPI ranks, killed mid-run: the search stopped 10,708
// merged events before the first rank's last call, 73 % of the trace).
size_t latest_sync_point_that_completes(const MergedTrace& m, size_t limit,
                                        const std::function<bool(size_t)>& prefix_completes) {
  int tries = 0;
  for (size_t n = limit; n > 0 && tries < kSyncPointTries; --n) {
    const MergedEvent& e = m.events[n - 1];
    const Identity& id = m.identities[e.identity];
    if (call_class(id.func) != CallClass::kCollective || id.comm != static_cast<int64_t>(kCommWorld) ||
        e.ranks.size() != m.world_size)
      continue;
    ++tries;
    if (prefix_completes(n)) return n;
  }
  return 0;
}

}  // namespace

void keep_merged_prefix(MergedTrace& m, size_t n) {
  m.events.resize(std::min(n, m.events.size()));
  std::vector<size_t> seen(m.world_size, 0);
  for (const MergedEvent& e : m.events)
    for (uint32_t r : e.ranks) ++seen[r];
  for (uint32_t r = 0; r < m.world_size; ++r) {
    MergedRank& rk = m.ranks[r];
    rk.gaps.resize(std::min(seen[r], rk.gaps.size()));
    rk.durations.resize(std::min(seen[r], rk.durations.size()));
    if (!rk.works.empty()) rk.works.resize(std::min(seen[r], rk.works.size()));
    if (!rk.blocked.empty()) rk.blocked.resize(std::min(seen[r], rk.blocked.size()));
    rk.events = seen[r];
  }
}

std::string cut_partial_trace(MergedTrace& m, const FoldPrefix& fold) {
  // The merged event after which the first rank to stop made no more calls.
  std::vector<size_t> last(m.world_size, 0);
  for (size_t i = 0; i < m.events.size(); ++i)
    for (uint32_t r : m.events[i].ranks) last[r] = i + 1;
  size_t first_stop = m.events.size();
  uint32_t first_rank = 0;
  for (uint32_t r = 0; r < m.world_size; ++r)
    if (m.ranks[r].end != TraceEnd::kFinalized && last[r] < first_stop) first_stop = last[r], first_rank = r;
  bool partial = false;
  for (const MergedRank& r : m.ranks) partial |= r.end != TraceEnd::kFinalized;
  if (!partial) return "";

  // Step back from first_stop until the prefix completes, then narrow down.
  uint32_t checks = 0;
  auto ok = [&](size_t n) { return ++checks, completes(m, n, fold); };
  size_t good = first_stop;
  if (!ok(first_stop)) {
    good = latest_sync_point_that_completes(m, first_stop, ok);
    size_t bad = first_stop;  // the shortest prefix known to fail
    for (size_t back = 1;; back *= 2) {
      size_t n = back >= first_stop ? 0 : first_stop - back;
      if (n <= good) break;
      if (ok(n)) { good = n; break; }
      bad = n;
    }
    while (bad - good > 1) {
      size_t mid = good + (bad - good) / 2;
      (ok(mid) ? good : bad) = mid;
    }
  }
  const size_t total = m.events.size();
  std::string line = "the trace ends early (rank " + std::to_string(first_rank) + " " +
                     trace_end_name(m.ranks[first_rank].end) + " after " +
                     with_commas(m.ranks[first_rank].events) + " calls); the skeleton stops after merged event " +
                     with_commas(good) + " of " + with_commas(total);
  if (good < first_stop)
    line += " (" + with_commas(first_stop - good) + " earlier than where rank " + std::to_string(first_rank) +
            " stopped: the halves of messages and collectives the stopped ranks left unmatched are dropped on "
            "every rank; " + std::to_string(checks) + " completion checks)";
  keep_merged_prefix(m, good);
  return line;
}

}  // namespace skt::gen
