// Maximal runs by period sampling, and the greedy fold (MISSION.md §3).
#include <algorithm>
#include <map>
#include <set>

#include "skel/fold.h"

namespace skt::fold {

std::vector<Run> maximal_runs(const std::vector<int32_t>& s) {
  std::vector<Run> runs;
  const uint32_t n = static_cast<uint32_t>(s.size());
  if (n < 2) return runs;
  Lce lce(s);
  // Prime factors of each period, to test whether a run's root is primitive.
  std::vector<uint32_t> smallest_factor(n / 2 + 1, 0);
  for (uint32_t p = 2; p <= n / 2; ++p)
    if (!smallest_factor[p])
      for (uint64_t q = p; q <= n / 2; q += p)
        if (!smallest_factor[q]) smallest_factor[q] = p;
  for (uint32_t p = 1; p <= n / 2; ++p) {
    // Any run of period p holds two sampled positions q, q + p (multiples of p).
    for (uint32_t q = 0; q + p < n;) {
      if (s[q] != s[q + p]) {
        q += p;
        continue;
      }
      uint32_t f = lce.forward(q, q + p);
      uint32_t b = q > 0 ? lce.backward(q - 1, q + p - 1) : 0;
      uint32_t start = q - b, end = q + p + f;
      if (end - start >= 2 * p) {
        // Keep it only if no proper divisor d of p is a period too (then the
        // same run is found, once, at its smallest period).
        bool primitive = true;
        for (uint32_t rest = p; rest > 1 && primitive;) {
          uint32_t f1 = smallest_factor[rest];
          uint32_t d = p / f1;
          if (lce.forward(start, start + d) >= end - start - d) primitive = false;
          while (rest % f1 == 0) rest /= f1;
        }
        if (primitive) runs.push_back(Run{start, end, p});
      }
      // Samples inside this run would find it again: skip past them.
      uint32_t next = end >= p ? end - p + 1 : q + p;
      next = ((next + p - 1) / p) * p;
      q = std::max(next, q + p);
    }
  }
  return runs;
}

namespace {

struct FoldState {
  Folded out;
  PhaseCost phase_cost;
  std::map<std::pair<std::vector<Item>, uint64_t>, size_t> loop_ids;   // (folded body, count) -> loop
  std::map<std::vector<Item>, std::vector<Item>> folded_bodies;        // raw body -> folded body

  // Folds a sequence of items (symbols and loops) into loops, pass by pass.
  // origin[i]: where item i starts in the string fold() was given (its first
  // instance's, in a loop body); origin[cur.size()]: where the last one ends.
  std::vector<Item> fold_items(std::vector<Item> cur, std::vector<uint64_t> origin,
                               const std::function<void(int, size_t)>& progress) {
    for (int pass = 1;; ++pass) {
      // Re-number the items densely so they form an integer alphabet.
      std::map<Item, int32_t> dense;
      std::vector<int32_t> str(cur.size());
      for (size_t i = 0; i < cur.size(); ++i) {
        auto [it, fresh] = dense.emplace(cur[i], static_cast<int32_t>(dense.size()));
        str[i] = it->second;
      }
      std::vector<Run> runs = maximal_runs(str);
      if (runs.empty()) return cur;
      // Longest first (the part that folds: whole periods), leftmost on ties.
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
      std::vector<Run> keep;  // the folded parts: whole periods from start
      for (const Run& r : runs) {
        const uint32_t len = folded_len(r);
        const uint32_t last_shift = phase_cost ? std::min<uint32_t>(r.end - r.start - len, kMaxShifts) : 0;
        uint32_t best = ~0u;
        uint64_t best_cost = ~0ull;
        for (uint32_t shift = 0; shift <= last_shift && best_cost > 0; ++shift) {
          const uint32_t s0 = r.start + shift;
          if (!is_free(s0, s0 + len)) continue;
          uint64_t cost = 0;
          if (last_shift > 0) {
            const uint32_t middle = s0 + len / r.period / 2 * r.period;
            cost = phase_cost(origin[middle], origin[middle + r.period] - origin[middle]);
          }
          if (cost < best_cost) best = shift, best_cost = cost;
        }
        if (best == ~0u) continue;
        chosen.insert({r.start + best, r.start + best + len});
        keep.push_back(Run{r.start + best, r.start + best + len, r.period});
      }
      std::sort(keep.begin(), keep.end(), [](const Run& a, const Run& b) { return a.start < b.start; });
      std::vector<Item> next;
      std::vector<uint64_t> next_origin;
      next.reserve(cur.size());
      next_origin.reserve(cur.size() + 1);
      size_t i = 0;
      auto copy_until = [&](size_t end) {
        for (; i < end; ++i) {
          next.push_back(cur[i]);
          next_origin.push_back(origin[i]);
        }
      };
      for (const Run& r : keep) {
        copy_until(r.start);
        std::vector<Item> body(cur.begin() + r.start, cur.begin() + r.start + r.period);
        std::vector<uint64_t> body_origin(origin.begin() + r.start, origin.begin() + r.start + r.period + 1);
        next.push_back(loop_item(make_loop(body, std::move(body_origin), (r.end - r.start) / r.period)));
        next_origin.push_back(origin[r.start]);
        i = r.end;
      }
      copy_until(cur.size());
      next_origin.push_back(origin[cur.size()]);
      cur.swap(next);
      origin.swap(next_origin);
      if (progress) progress(pass, cur.size());
    }
  }

  size_t make_loop(const std::vector<Item>& raw_body, std::vector<uint64_t> origin, uint64_t count) {
    auto fb = folded_bodies.find(raw_body);
    std::vector<Item> body;
    if (fb != folded_bodies.end()) {
      body = fb->second;  // folded where it was first seen
    } else {
      body = raw_body.size() >= 2 ? fold_items(raw_body, std::move(origin), {}) : raw_body;
      folded_bodies.emplace(raw_body, body);
    }
    auto [it, fresh] = loop_ids.emplace(std::make_pair(body, count), out.loops.size());
    if (fresh) out.loops.push_back(Loop{body, count});
    return it->second;
  }

  // Places tried per run (phase_cost scans one iteration per place).
  static constexpr uint32_t kMaxShifts = 255;
};

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
            const PhaseCost& phase_cost) {
  FoldState st;
  st.phase_cost = phase_cost;
  std::vector<Item> items(s.begin(), s.end());
  std::vector<uint64_t> origin(s.size() + 1);
  for (size_t i = 0; i <= s.size(); ++i) origin[i] = i;
  st.out.items = st.fold_items(std::move(items), std::move(origin), progress);
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
