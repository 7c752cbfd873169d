#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "skel/codec.h"
#include "skel/compress.h"
#include "skel/fold.h"
#include "skel/trace.h"

namespace skt::fold {
namespace {

bool count_like(Param p) { return p == Param::count || p == Param::count2 || p == Param::bytes || p == Param::bytes2; }
bool tag_like(Param p) { return p == Param::tag || p == Param::tag2; }
// Parameters that may change from one instance of a call to the next and
// still fold: counts (a + b*i, or within a band) and tags (a + b*i exactly,
// e.g. a tag that is the iteration number). Their order in CountRule / Builder::counts.
constexpr Param kRuleParams[] = {Param::count, Param::count2, Param::bytes, Param::bytes2, Param::tag, Param::tag2};
constexpr int kNumRuleParams = 6;
// A value left out of the coarse key: counts always (their kind is kept), tags when
// no rank's is MPI_ANY_TAG (-1, stays in the key), whether one value for all ranks
// or one per rank (NPB BT's stage tags, WEST + the cell's coordinates).
bool coarse_free(Param p, const MergedEvent& e, const ParamDesc& d) {
  if (count_like(p)) return true;
  if (!tag_like(p)) return false;
  switch (d.kind) {
    case ParamKind::kConst: return d.a >= 0;
    case ParamKind::kLinear:  // a + b * rank
      for (uint32_t r : e.ranks)
        if (d.a + d.b * r < 0) return false;
      return true;
    case ParamKind::kTable:
      for (size_t q = 0; q < e.ranks.size(); ++q)
        if (e.tables[static_cast<size_t>(d.a) + q] < 0) return false;
      return true;
    default: return false;
  }
}
// A cycle rule (CountRule kind 3): the value at iteration k of the innermost
// loop around the call is cycle[k mod period], period at most this: NPB BT's
// stage tags over the cells, stages a loop of their own or flattened into a
// longer one by the merge's order.
constexpr int64_t kMaxCyclePeriod = 64;
// ... and where the computation before the call is the same in every phase:
// the phases' shortest gaps within 25 % of the node's mean (the count band;
// or 50 us) of each other, on every rank, so that timing noise does not split
// a loop.
constexpr double kPhaseGapTolerance = 0.25, kPhaseGapFloorNs = 50000;
// One parameter (kRuleParams index q) of one coarse symbol, refined.
int64_t refinement(int64_t coarse, int q) { return coarse * kNumRuleParams + q; }

// Merged events -> symbols. The coarse key is everything that must be
// equal, with constant count-like values and tags left out, so that counts
// and tags that follow the iteration (a + b*i) can fold. Calls whose coarse
// symbol has a parameter `refined` (refinement()) also key that tag exactly
// or that count by band: the first value seen becomes a centre, later values
// within +-band of it join it, others start a centre of their own.
class SymbolTable {
 public:
  SymbolTable(double band, const std::set<int64_t>& refined) : band_(band), refined_(refined) {}

  // The symbol of e; `fresh` says it is new; `coarse` is its coarse symbol.
  int64_t symbol(const MergedEvent& e, bool& fresh, int64_t& coarse) {
    key_.clear();
    put(e.identity);
    put(static_cast<int64_t>(e.ranks.size()));
    for (uint32_t r : e.ranks) put(r);
    for (size_t p = 0; p < kNumParams; ++p) {
      const ParamDesc& d = e.params[p];
      bool free = coarse_free(static_cast<Param>(p), e, d);
      // a free tag's kind is left out too: one value for all ranks in one
      // iteration, a table in the next (BT: 6000 + rank, then a permutation)
      if (!free || !tag_like(static_cast<Param>(p))) put(static_cast<int64_t>(d.kind));
      if (free) continue;  // left out of the coarse key; refined below
      if (d.kind == ParamKind::kTable) {
        for (size_t q = 0; q < e.ranks.size(); ++q) put(e.tables[static_cast<size_t>(d.a) + q]);
      } else {
        put(d.a);
        put(d.b);
      }
    }
    for (const ListDesc& l : e.lists) {
      if (l.field == ListField::reqrefs) continue;  // keyed by reqback: stays the same in a loop
      put(static_cast<int64_t>(l.field));
      put(l.same);
      for (const auto& v : l.lists) {
        put(static_cast<int64_t>(v.size()));
        for (int64_t x : v) put(x);
      }
    }
    std::string base = key_;
    coarse = coarse_.emplace(base, static_cast<int64_t>(coarse_.size())).first->second;
    for (int q = 0; q < kNumRuleParams; ++q) {
      size_t p = static_cast<size_t>(kRuleParams[q]);
      const ParamDesc& d = e.params[p];
      if (!coarse_free(kRuleParams[q], e, d) || !refined_.count(refinement(coarse, q))) continue;
      if (tag_like(static_cast<Param>(p)) || !(d.kind == ParamKind::kConst && d.a > 0)) {  // exact
        put(static_cast<int64_t>(p));
        if (d.kind == ParamKind::kTable)
          for (size_t q = 0; q < e.ranks.size(); ++q) put(e.tables[static_cast<size_t>(d.a) + q]);
        else {
          put(d.a);
          put(d.b);
        }
        continue;
      }
      std::vector<int64_t>& centres = centres_[base + static_cast<char>(p)];
      size_t c = 0;
      while (c < centres.size() &&
             std::fabs(static_cast<double>(d.a - centres[c])) > band_ * static_cast<double>(centres[c]))
        ++c;
      if (c == centres.size()) centres.push_back(d.a);
      put(static_cast<int64_t>(p));
      put(static_cast<int64_t>(c));
    }
    auto [it, is_new] = ids_.emplace(key_, static_cast<int64_t>(ids_.size()));
    fresh = is_new;
    return it->second;
  }
  size_t size() const { return ids_.size(); }

 private:
  void put(int64_t v) {
    uint8_t tmp[10];
    uint8_t* end = codec::put_varint(tmp, codec::zigzag(v));
    key_.append(reinterpret_cast<char*>(tmp), static_cast<size_t>(end - tmp));
  }
  double band_;
  const std::set<int64_t>& refined_;
  std::unordered_map<std::string, int64_t> coarse_;
  std::string key_;
  std::unordered_map<std::string, std::vector<int64_t>> centres_;
  std::unordered_map<std::string, int64_t> ids_;
};

// Per merged event: the reqback list (skel/merged.h) of a call that completes,
// starts or frees requests; others get an empty ListDesc. A request's distance
// in merged events (reqrefs) grows from one iteration to the next when it was
// made before the loop (persistent requests started in a loop); counted in the
// rank's own request-creating calls it stays the same, so such loops fold.
std::vector<ListDesc> request_backs(const MergedTrace& m) {
  std::vector<ListDesc> out(m.events.size());
  // per rank, [persistent]: merged indices of its request-creating calls
  std::vector<std::array<std::vector<int64_t>, 2>> created(m.world_size);
  std::vector<std::vector<int64_t>> lists;
  for (size_t idx = 0; idx < m.events.size(); ++idx) {
    const MergedEvent& e = m.events[idx];
    uint32_t f = m.identities.at(e.identity).func;
    if (creates_request(f)) {
      for (uint32_t r : e.ranks) created[r][creates_persistent_request(f)].push_back(static_cast<int64_t>(idx));
      continue;
    }
    if (!uses_requests(f) || !e.find_list(ListField::reqrefs)) continue;
    lists.clear();
    for (uint32_t r : e.ranks) {
      std::vector<int64_t> backs;
      for (int64_t d : m.list(e, ListField::reqrefs, r)) {
        int64_t back = -1, at = static_cast<int64_t>(idx) - d;
        for (int persistent = 0; persistent < 2 && d >= 0 && back < 0; ++persistent) {
          const std::vector<int64_t>& mine = created[r][persistent];
          auto it = std::lower_bound(mine.begin(), mine.end(), at);
          if (it != mine.end() && *it == at) back = 2 * (mine.end() - it) + persistent;
        }
        backs.push_back(back);
      }
      lists.push_back(std::move(backs));
    }
    ListDesc& l = out[idx];
    l.field = ListField::reqback;
    l.same = std::all_of(lists.begin(), lists.end(), [&](const std::vector<int64_t>& v) { return v == lists[0]; });
    if (l.same) l.lists.push_back(lists.at(0));
    else l.lists = lists;
  }
  return out;
}

struct Acc {  // running statistics of one rank at one node
  uint64_t n = 0;
  double sum = 0, sumsq = 0, min = 0, max = 0;
  void add(double v) {
    if (!n || v < min) min = v;
    if (!n || v > max) max = v;
    ++n;
    sum += v;
    sumsq += v * v;
  }
  RankStat stat() const {
    RankStat s;
    s.n = n;
    if (!n) return s;
    s.mean = sum / static_cast<double>(n);
    double var = sumsq / static_cast<double>(n) - s.mean * s.mean;
    s.sd = var > 0 ? std::sqrt(var) : 0;
    s.min = min;
    s.max = max;
    return s;
  }
};

struct CountAcc {  // one count-like parameter of one rank over a node's instances
  uint64_t n = 0;
  int64_t first = 0, step = 0;
  bool linear = true, varies = false, in_band = true;
  double sum = 0, min = 0, max = 0;
  // cycle: the value depends only on k mod p, k the iteration of the innermost
  // loop around the node, for some p <= kMaxCyclePeriod. Checked online for
  // every p at once once the value varies: bit p-1 of `periods` says p still
  // holds, seen[j] is the value at k = j (k < 64; every k before a later one
  // is seen first, as the loop counts up), so p holds while v == seen[k mod p].
  bool in_loop = true;
  int64_t max_k = -1;
  uint64_t periods = ~0ull;
  std::vector<int64_t> seen;
  void add(int64_t v, double band, int64_t k) {
    if (k < 0) in_loop = false;
    if (in_loop) {
      if (n && v != first && !varies)  // the first change: all values so far were `first`
        seen.assign(static_cast<size_t>(std::min<int64_t>(max_k + 1, kMaxCyclePeriod)), first);
      if (n && (varies || v != first)) {
        if (k < kMaxCyclePeriod && k >= static_cast<int64_t>(seen.size())) seen.push_back(v);
        for (uint64_t left = periods; left; left &= left - 1) {  // the periods still holding
          int64_t p = __builtin_ctzll(left) + 1;
          if (seen[static_cast<size_t>(k % p)] != v) periods &= ~(1ull << (p - 1));
        }
      }
      max_k = std::max(max_k, k);
    }
    if (n && std::fabs(static_cast<double>(v - first)) > band * std::fabs(static_cast<double>(first))) in_band = false;
    if (n == 0) first = v;
    else if (n == 1) step = v - first;
    else if (v != first + step * static_cast<int64_t>(n)) linear = false;
    if (n && v != first) varies = true;
    double d = static_cast<double>(v);
    if (!n || d < min) min = d;
    if (!n || d > max) max = d;
    sum += d;
    ++n;
  }
};

// Builds the loop tree (build) and walks the expanded program over it (walk):
// the timing walk fills every node's statistics and value rules; a phase
// walk (phase_period set, after the timing walk) only gathers the gaps of the
// nodes with a cycle, per phase.
struct Builder {
  Builder(const MergedTrace& trace, const std::vector<int64_t>& symbols, FoldedProgram& program,
          const Folded& fold_result, double count_band)
      : m(trace), seq(symbols), out(program), folded(fold_result), cursor(trace.world_size, 0),
        band(count_band), pending(trace.world_size, -1) {}
  const MergedTrace& m;
  const std::vector<int64_t>& seq;  // symbol of each merged event
  FoldedProgram& out;
  const Folded& folded;
  std::vector<std::vector<Acc>> gap, dur;        // per node, per world rank
  std::vector<std::vector<std::vector<CountAcc>>> counts;  // per node, per kRuleParams entry, per rank
  std::vector<size_t> cursor;                    // per rank: next time index
  size_t pos = 0;                                // next merged event
  double band = 0;
  std::vector<std::vector<Acc>> work;             // per node, per world rank (ranks with works only)
  // per node with a cycle: its period, and its own gaps per rank and phase (k mod period)
  std::map<uint32_t, uint64_t> phase_period;
  std::map<uint32_t, std::vector<std::vector<Acc>>> phase_gap;

  // The timing walk's accumulators, one per node built.
  void size_accumulators() {
    size_t N = out.nodes.size(), P = m.world_size;
    gap.assign(N, std::vector<Acc>(P));
    dur.assign(N, std::vector<Acc>(P));
    work.assign(N, std::vector<Acc>(P));
    counts.assign(N, std::vector<std::vector<CountAcc>>(kNumRuleParams, std::vector<CountAcc>(P)));
  }

  std::vector<uint32_t> build(const std::vector<Item>& items) {
    std::vector<uint32_t> ids;
    for (Item it : items) {
      FoldedNode n;
      if (is_loop(it)) {
        const Loop& l = folded.loops[loop_index(it)];
        n.body = build(l.body);
        n.count = l.count;
      } else {
        n.symbol = it;
      }
      ids.push_back(static_cast<uint32_t>(out.nodes.size()));
      out.nodes.push_back(std::move(n));
    }
    return ids;
  }

  // pending[r]: the loop whose instance rank r has entered without a call
  // yet: it takes the gap of the rank's first call there (the computation
  // before the loop), the outermost such loop; -1: none. Per rank, since a
  // rank's first call in an iteration need not be the body's first call
  // (NPB LU: rank 0 sends first, rank 1's first call is the receive).
  std::vector<int64_t> pending;
  int64_t iteration = -1;  // of the innermost loop being walked (-1: none)
  void walk(const std::vector<uint32_t>& items) {
    const bool phase_walk = !phase_period.empty();
    for (uint32_t id : items) {
      FoldedNode& node = out.nodes[id];
      if (!phase_walk) ++node.instances;
      if (node.is_loop()) {
        std::vector<uint32_t> claimed;
        for (uint32_t r = 0; r < pending.size(); ++r)
          if (pending[r] < 0) pending[r] = id, claimed.push_back(r);
        int64_t outer_iteration = iteration;
        for (uint64_t k = 0; k < node.count; ++k) {
          iteration = static_cast<int64_t>(k);
          walk(node.body);
          if (k == 0)  // a rank with no call in the first iteration: its later gaps are its own
            for (uint32_t r : claimed)
              if (pending[r] == static_cast<int64_t>(id)) pending[r] = -1;
        }
        iteration = outer_iteration;
        continue;
      }
      const MergedEvent& e = m.events.at(pos);
      if (seq.at(pos) != node.symbol) throw TraceError("compress: internal error: expansion out of step");
      ++pos;
      for (uint32_t r : e.ranks) {
        size_t c = cursor[r]++;
        size_t target = pending[r] >= 0 ? static_cast<size_t>(pending[r]) : id;
        pending[r] = -1;
        if (phase_walk) {
          auto ph = phase_period.find(id);
          if (target != id || ph == phase_period.end() || iteration < 0) continue;
          auto& g = phase_gap[id];
          if (g.empty()) g.assign(m.world_size, std::vector<Acc>(ph->second));
          // the CPU time where the trace has it: steadier than the wall gap on shared cores
          const MergedRank& mr = m.ranks[r];
          g[r][static_cast<size_t>(iteration) % ph->second].add(
              static_cast<double>(mr.works.empty() ? mr.gaps[c] : mr.works[c]));
          continue;
        }
        gap[target][r].add(static_cast<double>(m.ranks[r].gaps[c]));
        if (!m.ranks[r].works.empty()) work[target][r].add(static_cast<double>(m.ranks[r].works[c]));
        dur[id][r].add(static_cast<double>(m.ranks[r].durations[c]));
        for (int q = 0; q < kNumRuleParams; ++q)
          if (e.params[static_cast<size_t>(kRuleParams[q])].kind != ParamKind::kAbsent)
            counts[id][q][r].add(m.value(e, kRuleParams[q], r), band, iteration);
      }
    }
  }
};


// One attempt: symbols (with the given symbols refined), fold, tree, timing.
// Returns the refinements (coarse symbol, parameter) of nodes whose counts
// neither follow a + b*i nor stay within the band, or whose tags do not
// follow a + b*i (empty: the program is accepted).
std::set<int64_t> attempt(const MergedTrace& m, const std::vector<ListDesc>& backs, const CompressOptions& opt,
                          const std::set<int64_t>& refined, FoldedProgram& out) {
  out = FoldedProgram();
  out.source = m.source;
  out.merged_events = m.events.size();
  out.symbols = m.tables();
  // 1. merged events -> symbols
  SymbolTable symbols(opt.count_band, refined);
  std::vector<int64_t> seq, coarse_of;  // coarse_of: per symbol
  std::vector<int32_t> str;
  seq.reserve(m.events.size());
  MergedEvent with_backs;
  for (size_t idx = 0; idx < m.events.size(); ++idx) {
    const MergedEvent* e = &m.events[idx];
    if (!backs[idx].lists.empty()) {
      with_backs = *e;
      with_backs.lists.push_back(backs[idx]);
      e = &with_backs;
    }
    bool fresh = false;
    int64_t coarse = 0;
    int64_t id = symbols.symbol(*e, fresh, coarse);
    if (fresh) {
      out.symbols.events.push_back(*e);
      coarse_of.push_back(coarse);
    }
    seq.push_back(id);
    str.push_back(static_cast<int32_t>(id));
  }
  if (opt.progress)
    opt.progress(std::to_string(m.events.size()) + " merged events, " + std::to_string(symbols.size()) + " symbols");
  // 2. fold
  Folded folded = fold(str);
  // 3. the loop tree (children before parents) and 4. the timing walk
  Builder b(m, seq, out, folded, opt.count_band);
  out.top = b.build(folded.items);
  size_t N = out.nodes.size(), P = m.world_size;
  b.size_accumulators();
  bool any_work = false;
  for (const MergedRank& r : m.ranks) any_work |= !r.works.empty();
  b.walk(out.top);
  std::set<int64_t> offenders;
  std::map<uint32_t, uint64_t> cycles;            // node -> period of its cycle rules
  std::map<uint32_t, std::vector<int64_t>> cycle_refinements;  // node -> its cycle rules' refinements
  for (size_t i = 0; i < N; ++i) {
    FoldedNode& n = out.nodes[i];
    n.gap.resize(P);
    for (size_t r = 0; r < P; ++r) n.gap[r] = b.gap[i][r].stat();
    if (any_work) {
      n.work.resize(P);
      for (size_t r = 0; r < P; ++r) n.work[r] = b.work[i][r].stat();
    }
    if (n.is_loop()) continue;
    n.dur.resize(P);
    for (size_t r = 0; r < P; ++r) n.dur[r] = b.dur[i][r].stat();
    const MergedEvent& rep = out.symbols.events.at(static_cast<size_t>(n.symbol));
    for (int q = 0; q < kNumRuleParams; ++q) {
      // A rule where the value changes between the node's instances, or where
      // it stays but differs from the symbol's (the first instance of another
      // node of the same symbol: e.g. two calls with tags 0 and 1).
      // The rule, in order of preference: every rank's value linear (a + b*i;
      // constant included); else a cycle over the innermost loop's iterations
      // that every rank's values keep (exact); else, for counts, every rank's
      // within the band (its mean). Otherwise the call is an offender:
      // refined (tags exact, counts banded) and folded again.
      bool varies = false, linear = true, banded = !tag_like(kRuleParams[q]);
      uint64_t periods = ~0ull;  // the cycle lengths every rank's values keep
      for (size_t r = 0; r < P; ++r) {
        const CountAcc& c = b.counts[i][q][r];
        if (!c.n) continue;
        varies |= c.varies || c.first != m.value(rep, kRuleParams[q], static_cast<uint32_t>(r));
        linear &= !c.varies || c.linear;
        banded &= !c.varies || c.linear || c.in_band;
        if (!c.in_loop) periods = 0;
        else if (c.varies) periods &= c.periods;
      }
      uint64_t period = periods ? static_cast<uint64_t>(__builtin_ctzll(periods)) + 1 : 0;
      bool cyclic = !linear && period;
      if (!linear && !cyclic && !banded) offenders.insert(refinement(coarse_of[static_cast<size_t>(n.symbol)], q));
      if (!varies) continue;
      if (cyclic) {
        cycles[static_cast<uint32_t>(i)] = std::max<uint64_t>(cycles[static_cast<uint32_t>(i)], period);
        cycle_refinements[static_cast<uint32_t>(i)].push_back(refinement(coarse_of[static_cast<size_t>(n.symbol)], q));
      }
      CountRule rule;
      rule.param = kRuleParams[q];
      rule.kind.assign(P, 0);
      rule.a.assign(P, 0);
      rule.b.assign(P, 0);
      rule.min.assign(P, 0);
      rule.max.assign(P, 0);
      if (cyclic) {
        rule.period = period;
        rule.cycle.assign(P * period, 0);
      }
      for (size_t r = 0; r < P; ++r) {
        const CountAcc& c = b.counts[i][q][r];
        if (!c.n) continue;
        if (cyclic) {
          rule.kind[r] = 3;
          for (uint64_t k = 0; k < period; ++k)
            rule.cycle[r * period + k] = c.varies ? c.seen.at(k) : c.first;
          rule.a[r] = c.sum / static_cast<double>(c.n);
          rule.min[r] = c.min;
          rule.max[r] = c.max;
          continue;
        }
        rule.kind[r] = c.linear ? 1 : 2;
        rule.a[r] = c.linear ? static_cast<double>(c.first) : c.sum / static_cast<double>(c.n);
        rule.b[r] = c.linear ? static_cast<double>(c.step) : 0;
        rule.min[r] = c.min;
        rule.max[r] = c.max;
      }
      n.rules.push_back(std::move(rule));
    }
  }
  // A cycle keeps the values exact, but the node's computation is one mean
  // over all its instances. Where the computation before it differs by phase
  // (a pipeline whose stages work on cells of different sizes), the mean
  // would even out the waits between the ranks: such nodes keep their
  // values in the symbol instead (one node per phase, each with its own gap).
  // Compared by CPU time where the trace measured it (ranks sharing cores).
  if (!cycles.empty()) {
    Builder pb(m, seq, out, folded, opt.count_band);
    pb.phase_period = cycles;
    pb.walk(out.top);
    for (const auto& [node, phases] : pb.phase_gap) {
      bool even = true;
      for (size_t r = 0; r < P && even; ++r) {
        const FoldedNode& fn = out.nodes[node];
        double mean = m.ranks[r].works.empty() ? fn.gap[r].mean : fn.work[r].mean;
        // each phase's shortest gap: a rank descheduled once in a phase
        // (a long gap) must not make the phases look uneven
        double lo = 0, hi = 0;
        bool any = false;
        for (const Acc& a : phases[r]) {
          if (!a.n) continue;
          lo = any ? std::min(lo, a.min) : a.min;
          hi = any ? std::max(hi, a.min) : a.min;
          any = true;
        }
        if (hi - lo > std::max(kPhaseGapTolerance * mean, kPhaseGapFloorNs)) even = false;
      }
      if (!even) offenders.insert(cycle_refinements[node].begin(), cycle_refinements[node].end());
    }
  }
  return offenders;
}

}  // namespace

FoldedProgram compress(const MergedTrace& m, const CompressOptions& opt) {
  // Counts and tags are left out of the symbols first; a call whose counts
  // or tags then follow no rule has its counts banded and its tags exact, and
  // the fold is made again. The set of refined calls only grows, and with
  // every call refined each node's counts stay within the band of its first
  // value and its tags are constant: this ends.
  std::set<int64_t> refined;
  FoldedProgram out;
  std::vector<ListDesc> backs = request_backs(m);
  for (int round = 0;; ++round) {
    std::set<int64_t> offenders = attempt(m, backs, opt, refined, out);
    size_t before = refined.size();
    refined.insert(offenders.begin(), offenders.end());
    if (offenders.empty() || refined.size() == before) break;
    if (opt.progress) opt.progress("round " + std::to_string(round + 1) + ": counts of " +
                                   std::to_string(offenders.size()) + " calls follow no rule; banding them");
  }
  return out;
}

std::vector<std::string> verify(const FoldedProgram& p, const MergedTrace& m, double tolerance, size_t limit) {
  std::vector<std::string> out;
  auto report = [&](const std::string& s) {
    if (out.size() < limit) out.push_back(s);
  };
  std::vector<int64_t> seq = p.expand();
  if (seq.size() != m.events.size()) {
    report("the program expands to " + std::to_string(seq.size()) + " calls, the merged trace has " +
           std::to_string(m.events.size()));
    return out;
  }
  for (size_t i = 0; i < seq.size(); ++i) {
    const MergedEvent& want = m.events[i];
    const MergedEvent& got = p.symbols.events.at(static_cast<size_t>(seq[i]));
    if (got.identity != want.identity || got.ranks != want.ranks)
      report("call " + std::to_string(i) + ": the program has another call there");
  }
  for (uint32_t r = 0; r < m.world_size; ++r) {
    double gaps = 0, durs = 0, fgaps = 0, fdurs = 0;
    for (size_t k = 0; k < m.ranks[r].gaps.size(); ++k) {
      gaps += static_cast<double>(m.ranks[r].gaps[k]);
      durs += static_cast<double>(m.ranks[r].durations[k]);
    }
    for (const FoldedNode& n : p.nodes) {
      if (r < n.gap.size()) fgaps += n.gap[r].mean * static_cast<double>(n.gap[r].n);
      if (r < n.dur.size()) fdurs += n.dur[r].mean * static_cast<double>(n.dur[r].n);
    }
    auto off = [&](double want, double got) { return std::fabs(got - want) > tolerance * std::max(1.0, std::fabs(want)); };
    if (off(gaps, fgaps))
      report("rank " + std::to_string(r) + ": computation " + std::to_string(fgaps * 1e-9) + " s instead of " +
             std::to_string(gaps * 1e-9) + " s");
    if (off(durs, fdurs))
      report("rank " + std::to_string(r) + ": communication " + std::to_string(fdurs * 1e-9) + " s instead of " +
             std::to_string(durs * 1e-9) + " s");
  }
  return out;
}

}  // namespace skt::fold

