#include "unroll.h"

#include <algorithm>
#include <vector>

namespace skt::gen {

namespace {

// Whether rank r's values of instance-cycle rule `rule` are one value over
// the instances [first, first + n), put in v.
bool constant_over(const CountRule& rule, size_t r, uint64_t first, uint64_t n, int64_t& v) {
  auto at = [&](uint64_t i) { return rule.cycle[r * rule.period + i % rule.period]; };
  v = at(first);
  for (uint64_t i = first + 1; i < first + n; ++i)
    if (at(i) != v) return false;
  return true;
}

// A copy of `each` instances takes a table over the instances (a cycle, a
// phase table) of another period anew, as the period `each`, where each is
// at most this (copy_subtree()).
constexpr uint64_t kMaxRebasedPeriod = 64;

// Whether an instance-cycle rule holds in each of `copies` copies of
// `each` instances: whole cycles in each, one value per rank in each (two
// refinements of one owner's, five steps each, a cycle of 10 counts over a
// loop of two: each copy its own count), or a copy short enough to take
// its part of the cycle as a cycle of its own (copy_subtree()).
bool instance_cycle_splits(const CountRule& rule, uint64_t each, uint64_t copies) {
  if (rule.period == 0) return false;
  if (each % rule.period == 0 || each <= kMaxRebasedPeriod) return true;
  int64_t v = 0;
  for (size_t r = 0; r < rule.kind.size(); ++r)
    for (uint64_t k = 0; k < copies && rule.kind[r] == RuleKind::kInstanceCycle; ++k)
      if (!constant_over(rule, r, k * each, each, v)) return false;
  return true;
}

// Whether a copy of node n (of the subtree of a loop unrolled into
// `copies`, `direct`: right in its body) runs as the node did in that
// iteration: its values and its computation follow nothing the copy would
// restart (docs/generate.md, "Short top-level loops").
bool copy_stands_alone(const FoldedNode& n, uint64_t copies, bool direct) {
  if (n.instances % copies != 0 || !n.profile.empty()) return false;
  const uint64_t each = n.instances / copies;  // instances of one copy
  if (n.phase_period > 0 && (n.phase_by_instance ? each % n.phase_period != 0 && each > kMaxRebasedPeriod : direct))
    return false;
  for (const CountRule& rule : n.rules) {
    if (rule.by_instance() && !instance_cycle_splits(rule, each, copies)) return false;
    for (size_t r = 0; r < rule.kind.size(); ++r) switch (rule.kind[r]) {
        case RuleKind::kNone:
        case RuleKind::kMean:
          break;
        case RuleKind::kLinear:  // a + b * instance
          if (r < rule.b.size() && rule.b[r] != 0) return false;
          break;
        case RuleKind::kInstanceCycle:  // instance_cycle_splits
          break;
        case RuleKind::kCycle:       // over the innermost loop's iteration: the unrolled loop's, in its body
        case RuleKind::kLoopLinear:
          if (direct) return false;
          break;
      }
  }
  return true;
}

bool subtree_stands_alone(const FoldedProgram& p, uint32_t id, uint64_t copies, bool direct) {
  const FoldedNode& n = p.nodes[id];
  if (!copy_stands_alone(n, copies, direct)) return false;
  return std::all_of(n.body.begin(), n.body.end(),
                     [&](uint32_t c) { return subtree_stands_alone(p, c, copies, false); });
}

// Whether top-level loop `id` is unrolled (unroll_short_top_loops).
bool unrolls(const FoldedProgram& p, uint32_t id) {
  const FoldedNode& n = p.nodes[id];
  if (!n.is_loop() || n.count < 2 || n.count > kUnrollAtMost) return false;
  const auto loops = std::count_if(n.body.begin(), n.body.end(), [&](uint32_t c) { return p.nodes[c].is_loop(); });
  if (loops < 2) return false;
  return std::all_of(n.body.begin(), n.body.end(), [&](uint32_t c) { return subtree_stands_alone(p, c, n.count, true); });
}

// The part of a table of `period` values over the instances (one row of a
// cycle, a rank's phase factors) that instances [first, first + each)
// take, as a table of period `each`.
template <typename T>
std::vector<T> part_of(const T* table, uint64_t period, uint64_t first, uint64_t each) {
  std::vector<T> part(each);
  for (uint64_t i = 0; i < each; ++i) part[i] = table[(first + i) % period];
  return part;
}

// Instance-cycle rule `rule` over the instances [first, first + each)
// alone: one value per rank where it is (kLinear, b 0), else the cycle's
// values there as a cycle of period `each` (at most kMaxRebasedPeriod:
// instance_cycle_splits()).
void rebase_cycle(CountRule& rule, uint64_t first, uint64_t each) {
  auto cycled = [&](size_t r) { return rule.kind[r] == RuleKind::kInstanceCycle; };
  int64_t v = 0;
  bool constant = true;
  for (size_t r = 0; r < rule.kind.size(); ++r) constant = constant && (!cycled(r) || constant_over(rule, r, first, each, v));
  if (constant) {
    for (size_t r = 0; r < rule.kind.size(); ++r) {
      if (!cycled(r)) continue;
      constant_over(rule, r, first, each, v);
      rule.kind[r] = RuleKind::kLinear;
      rule.a[r] = rule.min[r] = rule.max[r] = static_cast<double>(v);
      rule.b[r] = 0;
    }
    rule.period = 0;
    rule.cycle.clear();
    return;
  }
  std::vector<int64_t> cycle(rule.kind.size() * each, 0);
  for (size_t r = 0; r < rule.kind.size(); ++r) {
    if (!cycled(r)) continue;
    const std::vector<int64_t> part = part_of(&rule.cycle[r * rule.period], rule.period, first, each);
    std::copy(part.begin(), part.end(), cycle.begin() + static_cast<long>(r * each));
  }
  rule.period = each;
  rule.cycle = std::move(cycle);
}

// Copies node id's subtree of p into out.nodes (children first) as copy
// `k` of `copies`: 1 / copies of each node's instances, and of each
// statistic's values (a remainder to the first copies: a gap or a
// duration is not counted at every instance), with their means; returns
// the copy's number.
uint32_t copy_subtree(const FoldedProgram& p, uint32_t id, uint64_t k, uint64_t copies, FoldedProgram& out) {
  FoldedNode n = p.nodes[id];
  for (uint32_t& c : n.body) c = copy_subtree(p, c, k, copies, out);
  n.instances /= copies;
  const uint64_t each = n.instances, first = k * each;  // the copy's instances, from the node's `first`
  for (CountRule& rule : n.rules)  // (one instance: the value, as a node right in the unrolled body is at the top)
    if (rule.by_instance() && (each % rule.period != 0 || each == 1)) rebase_cycle(rule, first, each);
  if (n.phase_by_instance && n.phase_period > 0 && each % n.phase_period != 0) {  // its phases, period `each`
    for (std::vector<double>& f : n.phase_factor)
      if (!f.empty()) f = part_of(f.data(), n.phase_period, first, each);
    n.phase_period = each;
  }
  for (std::vector<RankStat>* stats : {&n.gap, &n.dur, &n.work, &n.blocked})
    for (RankStat& s : *stats) s.n = s.n / copies + (k < s.n % copies ? 1 : 0);
  out.nodes.push_back(std::move(n));
  return static_cast<uint32_t>(out.nodes.size() - 1);
}

// One round: every top-level loop that unrolls(), unrolled once. False
// where none is (out untouched).
bool unroll_round(const FoldedProgram& p, FoldedProgram& out, std::string& unrolled) {
  size_t top = 0;
  std::vector<bool> unrolled_at(p.top.size());
  for (size_t i = 0; i < p.top.size(); ++i) {
    const FoldedNode& n = p.nodes[p.top[i]];
    unrolled_at[i] = unrolls(p, p.top[i]);
    top += unrolled_at[i] ? n.count * n.body.size() : 1;
  }
  if (std::none_of(unrolled_at.begin(), unrolled_at.end(), [](bool u) { return u; }) || top > kMaxTopNodes)
    return false;
  FoldedProgram q = p;  // its tables; the nodes anew
  q.nodes.clear();
  q.top.clear();
  for (size_t i = 0; i < p.top.size(); ++i) {
    const uint32_t id = p.top[i];
    const FoldedNode& n = p.nodes[id];
    if (!unrolled_at[i]) {
      q.top.push_back(copy_subtree(p, id, 0, 1, q));
      continue;
    }
    unrolled += (unrolled.empty() ? "" : ", ") + std::to_string(n.count) + " x " + std::to_string(n.body.size());
    for (uint64_t k = 0; k < n.count; ++k)
      for (uint32_t c : n.body) q.top.push_back(copy_subtree(p, c, k, n.count, q));
  }
  out = std::move(q);
  return true;
}

}  // namespace

const FoldedProgram& unroll_short_top_loops(const FoldedProgram& p, double scale, FoldedProgram& store,
                                            std::string& note) {
  note.clear();
  if (scale < 2 || !p.threads.empty()) return p;
  std::string unrolled;
  const FoldedProgram* at = &p;
  for (int round = 0; round < 4; ++round) {
    FoldedProgram next;
    if (!unroll_round(*at, next, unrolled)) break;
    store = std::move(next);
    at = &store;
  }
  if (at == &p) return p;
  note = "top-level loops of too few iterations to cut, unrolled so that their time steps may be left out "
         "(iterations x nodes: " + unrolled + "); node numbers below are the unrolled program's";
  return store;
}

}  // namespace skt::gen
