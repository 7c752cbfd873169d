// Maximal runs by period sampling, and the choice of loops (MISSION.md §3).
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "skel/fold.h"

namespace skt::fold {

namespace {

// Below this length, runs are found by comparing symbols directly: the
// O(n^2) scan reads n^2/4 pairs, less than building the two suffix arrays
// costs (loop bodies are folded, and their rotations measured, by the
// thousands).
constexpr uint32_t kDirectRuns = 48;

// Every maximal primitive run by scanning each period, O(n^2).
std::vector<Run> maximal_runs_direct(const std::vector<int32_t>& s) {
  std::vector<Run> runs;
  const uint32_t n = static_cast<uint32_t>(s.size());
  for (uint32_t p = 1; p <= n / 2; ++p)
    for (uint32_t q = 0; q + p < n;) {
      uint32_t e = q;
      while (e + p < n && s[e] == s[e + p]) ++e;
      if (e - q >= p) {  // s[q, e + p) has period p
        bool primitive = true;
        for (uint32_t d = 1; d < p && primitive; ++d) {
          if (p % d) continue;
          uint32_t x = q;
          while (x + d < e + p && s[x] == s[x + d]) ++x;
          primitive = x + d < e + p;
        }
        if (primitive) runs.push_back(Run{q, e + p, p});
      }
      q = e + 1;
    }
  return runs;
}

// Finds the maximal primitive runs period by period, shortest first. The
// runs found so far speed up the extensions of longer periods: where both
// positions lie in runs of the same short period and start the same
// period's worth of symbols, the two strings agree up to the nearer run's
// end, and the extension jumps there instead of asking the LCE structure.
// A trace is mostly such runs (inner loops), and for a long period most
// samples compare two inner loops in phase; an LCE query reads the rank and
// range-minimum tables at random places (at 10^7 symbols, several cache
// misses in hundreds of MB), a jump reads one cover entry per position.
//
// Sym: the narrowest type that holds the symbols (sym: s in it), so that
// the samples of long periods, two reads far apart each, stay in the
// caches longer (10^7 symbols of one byte: 10 MB).
template <typename Sym>
class RunFinder {
 public:
  RunFinder(const std::vector<int32_t>& s, const Sym* sym, uint64_t direct_per_symbol)
      : s32_(s), s_(sym), n_(static_cast<uint32_t>(s.size())), direct_per_symbol_(direct_per_symbol),
        factor_(n_ / 2 + 1, 0), cover_(n_, kNone) {
    for (uint32_t p = 2; p <= n_ / 2; ++p)
      if (!factor_[p])
        for (uint64_t q = p; q <= n_ / 2; q += p)
          if (!factor_[q]) factor_[q] = p;
  }

  std::vector<Run> find() {
    for (uint32_t p = 1; p <= n_ / 2; ++p) scan(p);
    return std::move(runs_);
  }

 private:
  static constexpr uint32_t kNone = ~0u;
  // Runs of periods up to this one serve for jumps (the phase check reads
  // one period of symbols directly).
  static constexpr uint32_t kJumpPeriod = 64;
  // Symbols compared directly before a jump or an LCE query.
  static constexpr uint32_t kScan = 8;
  // Samples prefetched ahead, for periods beyond a cache line.
  static constexpr uint32_t kAhead = 8;

  // The runs of period p: any run of period p holds two sampled positions
  // q, q + p (multiples of p).
  void scan(uint32_t p) {
    // Strides past a cache line are not prefetched by the hardware: ask for
    // the symbol kAhead samples on, and for the cover entries an extension
    // will read while it compares its first symbols.
    const bool far = p * sizeof(Sym) >= 64;
    for (uint32_t q = 0; q + p < n_;) {
      if (far && q + (kAhead + 1) * uint64_t{p} < n_) __builtin_prefetch(&s_[q + (kAhead + 1) * p]);
      if (s_[q] != s_[q + p]) {
        q += p;
        continue;
      }
      __builtin_prefetch(&cover_[q]);
      __builtin_prefetch(&cover_[q + p]);
      const uint32_t f = forward(q, q + p);
      const uint32_t b = q > 0 ? backward(q - 1, q + p - 1) : 0;
      const uint32_t start = q - b, end = q + p + f;
      if (end - start >= 2 * p && primitive(start, end, p)) add(Run{start, end, p});
      // Samples inside this run would find it again: skip past them.
      uint32_t next = end >= p ? end - p + 1 : q + p;
      next = ((next + p - 1) / p) * p;
      q = std::max(next, q + p);
    }
  }

  // No proper divisor d of p is a period of s[start, end) too (else the
  // same run is found, once, at its smallest period).
  bool primitive(uint32_t start, uint32_t end, uint32_t p) const {
    for (uint32_t rest = p; rest > 1;) {
      const uint32_t f1 = factor_[rest], d = p / f1;
      if (forward(start, start + d) >= end - start - d) return false;
      while (rest % f1 == 0) rest /= f1;
    }
    return true;
  }

  void add(const Run& r) {
    const uint32_t id = static_cast<uint32_t>(runs_.size());
    runs_.push_back(r);
    if (r.period > kJumpPeriod) return;
    for (uint32_t x = r.start; x < r.end; ++x)
      if (cover_[x] == kNone) cover_[x] = id;
  }

  // How far x and y (x < y) agree for sure when both lie in runs of one
  // period, with a period's worth of room, agreeing on it (dir = +1: the
  // symbols from x and y on; -1: those up to them): to the nearer run's end
  // (step; 0: no such runs). Where one run ends before the other, the
  // extension ends there (exact): the run that ends breaks its period, the
  // other keeps it, and the two agreed on the last period before.
  struct Jump {
    uint32_t step;
    bool exact;
  };
  Jump jump(uint32_t x, uint32_t y, int dir) const {
    if (cover_[x] == kNone || cover_[y] == kNone) return {0, false};
    const Run& a = runs_[cover_[x]];
    const Run& b = runs_[cover_[y]];
    if (a.period != b.period) return {0, false};
    const uint32_t room_x = dir > 0 ? a.end - x : x - a.start + 1, room_y = dir > 0 ? b.end - y : y - b.start + 1;
    const uint32_t room = std::min(room_x, room_y);
    if (room < a.period) return {0, false};
    for (uint32_t k = 0; k < a.period; ++k)
      if (dir > 0 ? s_[x + k] != s_[y + k] : s_[x - k] != s_[y - k]) return {0, false};
    return {room, room_x != room_y};
  }

  // Length of the longest common prefix of s[i..] and s[j..], i < j.
  uint32_t forward(uint32_t i, uint32_t j) const {
    uint32_t k = 0;
    for (;;) {
      const uint32_t limit = std::min(kScan, n_ - (j + k));
      uint32_t m = 0;
      while (m < limit && s_[i + k + m] == s_[j + k + m]) ++m;
      if (m < kScan) return k + m;
      const Jump jp = jump(i + k, j + k, +1);
      if (jp.step == 0) return k + lce_forward(i + k, j + k);
      k += jp.step;
      if (jp.exact) return k;
    }
  }

  // Length of the longest common suffix of s[..i] and s[..j], i < j.
  uint32_t backward(uint32_t i, uint32_t j) const {
    uint32_t k = 0;
    for (;;) {
      const uint32_t limit = std::min(kScan, i - k + 1);
      uint32_t m = 0;
      while (m < limit && s_[i - k - m] == s_[j - k - m]) ++m;
      if (m < kScan) return k + m;
      const Jump jp = jump(i - k, j - k, -1);
      if (jp.step == 0) return k + lce_backward(i - k, j - k);
      k += jp.step;
      if (jp.exact) return k;
    }
  }

  // The LCE structure is built on demand: extensions that neither end
  // within kScan symbols nor jump are first compared directly, up to a
  // budget of direct_per_symbol_ symbols per symbol of the string in all
  // (on a trace, where nearly every long extension jumps, they stay within
  // it and the two suffix arrays are never built); past it, every query is
  // O(1). So the work stays O(n log n) whatever the string.

  uint32_t lce_forward(uint32_t i, uint32_t j) const {
    if (!lce_) {
      const uint64_t left = budget_left();
      uint32_t m = 0;
      while (m < left && j + m < n_ && s_[i + m] == s_[j + m]) ++m;
      direct_ += m;
      if (m < left) return m;
      build_lce();
    }
    return lce_->forward(i, j);
  }

  uint32_t lce_backward(uint32_t i, uint32_t j) const {
    if (!lce_) {
      const uint64_t left = budget_left();
      uint32_t m = 0;
      while (m < left && m <= i && s_[i - m] == s_[j - m]) ++m;
      direct_ += m;
      if (m < left) return m;
      build_lce();
    }
    return lce_->backward(i, j);
  }

  uint64_t budget_left() const {
    const uint64_t budget = direct_per_symbol_ > ~0ull / n_ ? ~0ull : direct_per_symbol_ * n_;
    return direct_ < budget ? budget - direct_ : 0;
  }
  void build_lce() const { lce_ = std::make_unique<Lce>(s32_); }

  const std::vector<int32_t>& s32_;
  const Sym* const s_;
  const uint32_t n_;
  const uint64_t direct_per_symbol_;
  mutable std::unique_ptr<Lce> lce_;
  mutable uint64_t direct_ = 0;  // symbols compared directly for want of lce_
  std::vector<uint32_t> factor_;  // factor_[k]: the smallest prime factor of k
  std::vector<uint32_t> cover_;   // per position: the first run of period <= kJumpPeriod found over it
  std::vector<Run> runs_;
};

template <typename Sym>
std::vector<Run> find_narrow(const std::vector<int32_t>& s, uint64_t direct_per_symbol) {
  const std::vector<Sym> narrow(s.begin(), s.end());
  return RunFinder<Sym>(s, narrow.data(), direct_per_symbol).find();
}

}  // namespace

std::vector<Run> maximal_runs(const std::vector<int32_t>& s, uint64_t direct_per_symbol) {
  if (s.size() < 2) return {};
  if (s.size() < kDirectRuns) return maximal_runs_direct(s);
  const int32_t top = *std::max_element(s.begin(), s.end());
  if (top <= UINT8_MAX) return find_narrow<uint8_t>(s, direct_per_symbol);
  if (top <= UINT16_MAX) return find_narrow<uint16_t>(s, direct_per_symbol);
  return RunFinder<int32_t>(s, s.data(), direct_per_symbol).find();
}

namespace {

// A loop to fold: count periods of `period` items from `start`.
struct Placement {
  uint32_t start, period, count;
  uint32_t end() const { return start + period * count; }
};

struct FoldState {
  Folded out;
  PhaseCost phase_cost;
  Choice choice = Choice::kShortest;
  std::map<std::pair<std::vector<Item>, uint64_t>, size_t> loop_ids;   // (folded body, count) -> loop
  std::map<std::vector<Item>, std::vector<Item>> folded_bodies;        // raw body -> folded body
  std::vector<uint64_t> loop_length;                                   // per loop: its body's folded length

  // Places tried per run where phase_cost decides (each scans one iteration).
  static constexpr uint32_t kMaxShifts = 255;
  // Choice::kShortest: rotations of a run's body tried as loop bodies, per
  // run: the first kRotations, and their symbols at most kRotationSymbols.
  static constexpr uint32_t kRotations = 32;
  static constexpr uint32_t kRotationSymbols = 8192;

  uint64_t weight(Item it) const { return is_loop(it) ? loop_length[loop_index(it)] : 1; }
  uint64_t length(const std::vector<Item>& items) const {
    uint64_t n = 0;
    for (Item it : items) n += weight(it);
    return n;
  }

  // Folds a sequence of items (symbols and loops) into loops, pass by pass.
  // origin[i]: where item i starts in the string fold() was given (its first
  // instance's, in a loop body); origin[cur.size()]: where the last one ends.
  // Only phase_cost reads it: without one it stays empty (8 bytes per symbol
  // less at the peak).
  std::vector<Item> fold_items(std::vector<Item> cur, std::vector<uint64_t> origin,
                               const std::function<void(int, size_t)>& progress) {
    for (int pass = 1;; ++pass) {
      std::vector<Run> runs = maximal_runs(dense_string(cur));
      if (runs.empty()) return cur;
      std::vector<Placement> keep =
          choice == Choice::kLongestFirst ? longest_first(runs, origin) : shortest(runs, cur, origin);
      apply(keep, cur, origin);
      if (progress) progress(pass, cur.size());
    }
  }

  // The items re-numbered densely, so that they form an integer alphabet.
  static std::vector<int32_t> dense_string(const std::vector<Item>& cur) {
    std::map<Item, int32_t> dense;
    std::vector<int32_t> str(cur.size());
    for (size_t i = 0; i < cur.size(); ++i) str[i] = dense.emplace(cur[i], static_cast<int32_t>(dense.size())).first->second;
    return str;
  }

  // Where run r folds all its whole periods: of the shifts from r.start
  // that are usable, those that phase_cost scores lowest (trying up to
  // kMaxShifts + 1, the first that costs nothing ends the search), in
  // increasing order; without a phase_cost, or where the run has no spare
  // symbols, shift 0 if it is usable.
  std::vector<uint32_t> cheapest_shifts(const Run& r, const std::vector<uint64_t>& origin,
                                        const std::function<bool(uint32_t)>& usable) const {
    const uint32_t count = (r.end - r.start) / r.period, spare = (r.end - r.start) % r.period;
    const uint32_t last = phase_cost ? std::min(spare, kMaxShifts) : 0;
    std::vector<uint32_t> best;
    uint64_t best_cost = ~0ull;
    for (uint32_t shift = 0; shift <= last && best_cost > 0; ++shift) {
      if (!usable(shift)) continue;
      const uint32_t middle = r.start + shift + count / 2 * r.period;
      const uint64_t cost = last > 0 ? phase_cost(origin[middle], origin[middle + r.period] - origin[middle]) : 0;
      if (cost < best_cost) best.clear(), best_cost = cost;
      if (cost == best_cost) best.push_back(shift);
    }
    return best;
  }

  // Choice::kLongestFirst: runs longest first (the part that folds: whole
  // periods), leftmost on ties; each that overlaps none already chosen folds
  // at its cheapest shift.
  std::vector<Placement> longest_first(std::vector<Run> runs, const std::vector<uint64_t>& origin) const {
    auto folded_len = [](const Run& r) { return (r.end - r.start) / r.period * r.period; };
    std::sort(runs.begin(), runs.end(), [&](const Run& a, const Run& b) {
      uint32_t la = folded_len(a), lb = folded_len(b);
      return la != lb ? la > lb : a.start < b.start;
    });
    std::set<std::pair<uint32_t, uint32_t>> chosen;  // [start, end) of the folded parts
    auto is_free = [&](uint32_t s0, uint32_t e0) {
      auto next = chosen.lower_bound({s0, 0});
      if (next != chosen.end() && next->first < e0) return false;
      return next == chosen.begin() || std::prev(next)->second <= s0;
    };
    std::vector<Placement> keep;
    for (const Run& r : runs) {
      const uint32_t count = (r.end - r.start) / r.period;
      const auto free_at = [&](uint32_t shift) { return is_free(r.start + shift, r.start + shift + count * r.period); };
      const std::vector<uint32_t> shifts = cheapest_shifts(r, origin, free_at);
      if (shifts.empty()) continue;
      const Placement pl{r.start + shifts.front(), r.period, count};
      chosen.insert({pl.start, pl.end()});
      keep.push_back(pl);
    }
    std::sort(keep.begin(), keep.end(), [](const Placement& a, const Placement& b) { return a.start < b.start; });
    return keep;
  }

  // A run as the dynamic program sees it: its loops may start at any
  // position whose offset from the run's start is one of `rotations` (mod
  // the period) and take any number >= 2 of periods that fit.
  struct Span {
    Run run;
    std::vector<uint32_t> rotations;     // offsets in [0, period), increasing
    std::vector<uint64_t> body;          // per rotation: the folded body's length
    std::vector<uint64_t> tail;          // tail[j - start - 2 period]: min over j' = j, j + period, ... <= end
    std::vector<uint32_t> tail_at;       //   of best[j'], and the largest j' that reaches it
  };

  // With a phase_cost: the cheapest shifts that fold all whole periods (as
  // Choice::kLongestFirst). Without: rotation 0, those where another run of
  // the pass starts or ends (edges: all runs' starts and ends, sorted), then
  // the first kRotations, as many as kRotationSymbols / period allows (at
  // least one): a body folds shortest where it does not cut an inner loop,
  // so a loop may start mid-pattern where an inner loop starts
  // ("1 ( 2 2 2 3 )^5" rather than "( 1 2 2 2 )^5 3"), and each rotation
  // tried is a body folded (and kept) once.
  Span span_of(const Run& r, const std::vector<uint32_t>& edges, const std::vector<Item>& cur,
               const std::vector<uint64_t>& origin) {
    Span sp{r, {}, {}, {}, {}};
    if (phase_cost) {
      sp.rotations = cheapest_shifts(r, origin, [](uint32_t) { return true; });
    } else {
      const size_t most = std::max<size_t>(1, kRotationSymbols / r.period);
      std::vector<uint32_t> wanted{0};
      for (auto x = std::lower_bound(edges.begin(), edges.end(), r.start);
           x != edges.end() && *x <= r.end && wanted.size() < most; ++x)
        wanted.push_back((*x - r.start) % r.period);
      for (uint32_t k = 1; k < std::min(r.period, kRotations) && wanted.size() < most; ++k) wanted.push_back(k);
      for (uint32_t k : wanted)
        if (r.start + k + 2 * r.period <= r.end) sp.rotations.push_back(k);
      std::sort(sp.rotations.begin(), sp.rotations.end());
      sp.rotations.erase(std::unique(sp.rotations.begin(), sp.rotations.end()), sp.rotations.end());
    }
    for (uint32_t k : sp.rotations) sp.body.push_back(body_length(Placement{r.start + k, r.period, 2}, cur, origin));
    sp.tail.resize(r.end - r.start - 2 * r.period + 1);
    sp.tail_at.resize(sp.tail.size());
    return sp;
  }

  // The length of the body that a loop starting at a would have, or
  // nothing where no loop of the span starts at a.
  static const uint64_t* body_at(const Span& sp, uint32_t a) {
    const uint32_t k = (a - sp.run.start) % sp.run.period;
    auto it = std::lower_bound(sp.rotations.begin(), sp.rotations.end(), k);
    return it != sp.rotations.end() && *it == k ? &sp.body[static_cast<size_t>(it - sp.rotations.begin())] : nullptr;
  }

  // Choice::kShortest: of the loops the runs could become, the set that
  // overlap none of each other and leave this pass's string shortest, each
  // loop counted as its folded body's length: a dynamic program over the
  // positions, from the end (best[i]: the shortest folding of items i...).
  // On ties the choice that reaches further wins (a loop before a plain
  // item, more periods before fewer), then the shorter period. Each run
  // keeps, along each residue of its period, the minimum of best over the
  // ends a loop may have, so the program takes O(sum of run lengths).
  std::vector<Placement> shortest(const std::vector<Run>& runs, const std::vector<Item>& cur,
                                  const std::vector<uint64_t>& origin) {
    std::vector<uint32_t> edges;
    for (const Run& r : runs) edges.insert(edges.end(), {r.start, r.end});
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    std::vector<Span> spans;
    for (const Run& r : runs) {
      spans.push_back(span_of(r, edges, cur, origin));
      if (spans.back().rotations.empty()) spans.pop_back();
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.run.end > b.run.end; });
    const size_t n = cur.size();
    std::vector<uint64_t> best(n + 1, 0);
    std::vector<uint32_t> reach(n), period(n, 0);  // the choice at i: items [i, reach) as one loop of period, or one item
    std::vector<size_t> active;
    size_t next_span = 0;
    for (size_t i = n + 1; i-- > 0;) {
      while (next_span < spans.size() && spans[next_span].run.end >= i) active.push_back(next_span++);
      if (i < n) {
        best[i] = weight(cur[i]) + best[i + 1];
        reach[i] = static_cast<uint32_t>(i + 1);
      }
      for (size_t k = 0; k < active.size();) {
        if (spans[active[k]].run.start > i) {
          active[k] = active.back();
          active.pop_back();
        } else {
          ++k;
        }
      }
      for (size_t k : active) {
        const Span& sp = spans[k];
        const uint32_t p = sp.run.period;
        const uint64_t* body = i + 2 * p <= sp.run.end ? body_at(sp, static_cast<uint32_t>(i)) : nullptr;
        if (!body) continue;
        const size_t t = i + 2 * p - (sp.run.start + 2 * p);
        const uint64_t len = *body + sp.tail[t];
        const uint32_t to = sp.tail_at[t];
        if (len < best[i] || (len == best[i] && (to > reach[i] || (to == reach[i] && p < period[i]))))
          best[i] = len, reach[i] = to, period[i] = p;
      }
      for (size_t k : active) {  // best[i] is final: i as the end of loops
        Span& sp = spans[k];
        const uint32_t p = sp.run.period, first_end = sp.run.start + 2 * p;
        if (i < first_end) continue;
        const size_t t = i - first_end;
        const bool further = i + p <= sp.run.end && sp.tail[t + p] <= best[i];
        sp.tail[t] = further ? sp.tail[t + p] : best[i];
        sp.tail_at[t] = further ? sp.tail_at[t + p] : static_cast<uint32_t>(i);
      }
    }
    std::vector<Placement> keep;
    for (size_t i = 0; i < n; i = reach[i])
      if (period[i]) keep.push_back(Placement{static_cast<uint32_t>(i), period[i], (reach[i] - static_cast<uint32_t>(i)) / period[i]});
    return keep;
  }

  uint64_t body_length(const Placement& pl, const std::vector<Item>& cur, const std::vector<uint64_t>& origin) {
    return length(folded_body(std::vector<Item>(cur.begin() + pl.start, cur.begin() + pl.start + pl.period),
                              origin_of(origin, pl.start, pl.start + pl.period + 1)));
  }

  // origin[from, to), or nothing where origin is not kept.
  static std::vector<uint64_t> origin_of(const std::vector<uint64_t>& origin, size_t from, size_t to) {
    if (origin.empty()) return {};
    return std::vector<uint64_t>(origin.begin() + static_cast<std::ptrdiff_t>(from),
                                 origin.begin() + static_cast<std::ptrdiff_t>(to));
  }

  // Replaces each placement by its loop.
  void apply(const std::vector<Placement>& keep, std::vector<Item>& cur, std::vector<uint64_t>& origin) {
    std::vector<Item> next;
    std::vector<uint64_t> next_origin;
    next.reserve(cur.size());
    const bool keep_origin = !origin.empty();
    next_origin.reserve(keep_origin ? cur.size() + 1 : 0);
    size_t i = 0;
    auto copy_until = [&](size_t end) {
      for (; i < end; ++i) {
        next.push_back(cur[i]);
        if (keep_origin) next_origin.push_back(origin[i]);
      }
    };
    for (const Placement& pl : keep) {
      copy_until(pl.start);
      std::vector<Item> body(cur.begin() + pl.start, cur.begin() + pl.start + pl.period);
      next.push_back(loop_item(make_loop(body, origin_of(origin, pl.start, pl.start + pl.period + 1), pl.count)));
      if (keep_origin) next_origin.push_back(origin[pl.start]);
      i = pl.end();
    }
    copy_until(cur.size());
    if (keep_origin) next_origin.push_back(origin[cur.size()]);
    cur.swap(next);
    origin.swap(next_origin);
  }

  // A raw body folded, where it was first seen.
  const std::vector<Item>& folded_body(const std::vector<Item>& raw_body, std::vector<uint64_t> origin) {
    auto fb = folded_bodies.find(raw_body);
    if (fb != folded_bodies.end()) return fb->second;
    std::vector<Item> body = raw_body.size() >= 2 ? fold_items(raw_body, std::move(origin), {}) : raw_body;
    return folded_bodies.emplace(raw_body, std::move(body)).first->second;
  }

  size_t make_loop(const std::vector<Item>& raw_body, std::vector<uint64_t> origin, uint64_t count) {
    const std::vector<Item>& body = folded_body(raw_body, std::move(origin));
    auto [it, fresh] = loop_ids.emplace(std::make_pair(body, count), out.loops.size());
    if (fresh) {
      out.loops.push_back(Loop{body, count});
      loop_length.push_back(length(body));
    }
    return it->second;
  }
};

// Drops the loops that no item reaches (bodies folded only to be measured),
// keeping the others in their order.
void drop_unused_loops(Folded& f) {
  std::vector<char> used(f.loops.size(), 0);
  std::function<void(const std::vector<Item>&)> mark = [&](const std::vector<Item>& items) {
    for (Item it : items)
      if (is_loop(it) && !used[loop_index(it)]) {
        used[loop_index(it)] = 1;
        mark(f.loops[loop_index(it)].body);
      }
  };
  mark(f.items);
  std::vector<size_t> index(f.loops.size());
  std::vector<Loop> kept;
  for (size_t k = 0; k < f.loops.size(); ++k)
    if (used[k]) index[k] = kept.size(), kept.push_back(std::move(f.loops[k]));
  auto renumber = [&](std::vector<Item>& items) {
    for (Item& it : items)
      if (is_loop(it)) it = loop_item(index[loop_index(it)]);
  };
  renumber(f.items);
  for (Loop& l : kept) renumber(l.body);
  f.loops = std::move(kept);
}

void expand_into(const Folded& f, const std::vector<Item>& items, std::vector<int32_t>& out) {
  for (Item it : items) {
    if (!is_loop(it)) {
      out.push_back(static_cast<int32_t>(it));
      continue;
    }
    const Loop& l = f.loops[loop_index(it)];
    for (uint64_t k = 0; k < l.count; ++k) expand_into(f, l.body, out);
  }
}

uint64_t length_of(const Folded& f, const std::vector<Item>& items) {
  uint64_t n = 0;
  for (Item it : items) n += is_loop(it) ? length_of(f, f.loops[loop_index(it)].body) : 1;
  return n;
}

void print(const Folded& f, const std::vector<Item>& items, std::string& out) {
  for (Item it : items) {
    if (!out.empty()) out += ' ';
    if (!is_loop(it)) {
      out += std::to_string(it);
      continue;
    }
    const Loop& l = f.loops[loop_index(it)];
    out += '(';
    print(f, l.body, out);
    out += " )^" + std::to_string(l.count);
  }
}

}  // namespace

Folded fold(const std::vector<int32_t>& s, const std::function<void(int, size_t)>& progress,
            const PhaseCost& phase_cost, Choice choice) {
  FoldState st;
  st.phase_cost = phase_cost;
  st.choice = choice;
  std::vector<Item> items(s.begin(), s.end());
  std::vector<uint64_t> origin(phase_cost ? s.size() + 1 : 0);
  for (size_t i = 0; i < origin.size(); ++i) origin[i] = i;
  st.out.items = st.fold_items(std::move(items), std::move(origin), progress);
  drop_unused_loops(st.out);
  return std::move(st.out);
}

std::vector<int32_t> expand(const Folded& f) {
  std::vector<int32_t> out;
  expand_into(f, f.items, out);
  return out;
}

uint64_t folded_length(const Folded& f) { return length_of(f, f.items); }

std::string to_string(const Folded& f) {
  std::string out;
  print(f, f.items, out);
  return out;
}

}  // namespace skt::fold
