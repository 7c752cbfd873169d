// The merged order as an alignment of the ranks' call sequences (merge
// --align): ranks whose identity sequences are equal form a group; the
// groups are aligned one after the other against the columns so far (a
// progressive alignment), each by its matching blocks with them, so that
// where one group makes calls the others do not, those calls stand apart and
// the runs around them line up, wherever they fall in time. NPB MG at 16
// ranks is the case: one half of the ranks makes two exchanges more per
// V-cycle than the other, and the greedy walk paired the halves' exchanges
// at places that shifted from V-cycle to V-cycle, so no loop held the
// V-cycles. A shortest edit script (Myers' diff, tried first) is no better:
// the extra exchanges cost the same wherever they go among equal ones, and
// it put them at a different place in every V-cycle too; the longest common
// run first keeps the long runs of exchanges whole.
#include <algorithm>
#include <array>
#include <map>

#include "skel/merge.h"

namespace skt::merge {
namespace {

enum class Edit : uint8_t { kMatch, kOld, kNew };

// The longest run of calls common to a[alo, ahi) and b[blo, bhi), the one
// that ends earliest in a, then earliest in b (as Python's difflib): a
// suffix automaton of the b range, a's range run through it. O(n + m).
struct Block {
  size_t i = 0, j = 0, k = 0;  // a[i, i + k) == b[j, j + k)
};
Block longest_block(const std::vector<uint32_t>& a, size_t alo, size_t ahi, const std::vector<uint32_t>& b,
                    size_t blo, size_t bhi) {
  struct State {
    long len = 0, link = -1, first_end = 0;  // first_end: where in b its first occurrence ends
    std::map<uint32_t, long> next;
  };
  std::vector<State> st(1);
  st.reserve(2 * (bhi - blo) + 2);
  long last = 0;
  for (size_t p = blo; p < bhi; ++p) {
    const uint32_t c = b[p];
    const long cur = static_cast<long>(st.size());
    st.push_back(State{st[static_cast<size_t>(last)].len + 1, -1, static_cast<long>(p), {}});
    long q = last;
    while (q != -1 && !st[static_cast<size_t>(q)].next.count(c)) {
      st[static_cast<size_t>(q)].next[c] = cur;
      q = st[static_cast<size_t>(q)].link;
    }
    if (q == -1) {
      st[static_cast<size_t>(cur)].link = 0;
    } else {
      const long r = st[static_cast<size_t>(q)].next[c];
      if (st[static_cast<size_t>(q)].len + 1 == st[static_cast<size_t>(r)].len) {
        st[static_cast<size_t>(cur)].link = r;
      } else {
        const long clone = static_cast<long>(st.size());
        State copy = st[static_cast<size_t>(r)];
        copy.len = st[static_cast<size_t>(q)].len + 1;
        st.push_back(std::move(copy));
        while (q != -1 && st[static_cast<size_t>(q)].next.count(c) && st[static_cast<size_t>(q)].next[c] == r) {
          st[static_cast<size_t>(q)].next[c] = clone;
          q = st[static_cast<size_t>(q)].link;
        }
        st[static_cast<size_t>(r)].link = clone;
        st[static_cast<size_t>(cur)].link = clone;
      }
    }
    last = cur;
  }
  Block best;
  long v = 0, len = 0;
  for (size_t p = alo; p < ahi; ++p) {
    const uint32_t c = a[p];
    while (v != 0 && !st[static_cast<size_t>(v)].next.count(c)) {
      v = st[static_cast<size_t>(v)].link;
      len = st[static_cast<size_t>(v)].len;
    }
    auto it = st[static_cast<size_t>(v)].next.find(c);
    if (it == st[static_cast<size_t>(v)].next.end()) {
      v = 0, len = 0;
      continue;
    }
    v = it->second, ++len;
    if (static_cast<size_t>(len) > best.k) {
      // the longest match ending at p: its first occurrence in b ends at first_end
      best.k = static_cast<size_t>(len);
      best.i = p + 1 - best.k;
      best.j = static_cast<size_t>(st[static_cast<size_t>(v)].first_end) + 1 - best.k;
    }
  }
  return best;
}

// An edit script turning a into b from their matching blocks, found as
// difflib does: the longest common run, then the same on each side of it.
// Between blocks, a's calls alone come first, then b's. Empty with `ok`
// false when the work (the lengths of the ranges searched, summed) passes
// work_limit.
std::vector<Edit> diff(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, size_t work_limit, bool& ok) {
  ok = true;
  std::vector<Block> blocks;
  std::vector<std::array<size_t, 4>> todo{{0, a.size(), 0, b.size()}};
  size_t work = 0;
  while (!todo.empty()) {
    auto [alo, ahi, blo, bhi] = todo.back();
    todo.pop_back();
    if (alo >= ahi || blo >= bhi) continue;
    work += (ahi - alo) + (bhi - blo);
    if (work > work_limit) {
      ok = false;
      return {};
    }
    const Block x = longest_block(a, alo, ahi, b, blo, bhi);
    if (x.k == 0) continue;
    blocks.push_back(x);
    todo.push_back({alo, x.i, blo, x.j});
    todo.push_back({x.i + x.k, ahi, x.j + x.k, bhi});
  }
  std::sort(blocks.begin(), blocks.end(), [](const Block& x, const Block& y) { return x.i < y.i; });
  std::vector<Edit> out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  for (const Block& x : blocks) {
    out.insert(out.end(), x.i - i, Edit::kOld);
    out.insert(out.end(), x.j - j, Edit::kNew);
    out.insert(out.end(), x.k, Edit::kMatch);
    i = x.i + x.k, j = x.j + x.k;
  }
  out.insert(out.end(), a.size() - i, Edit::kOld);
  out.insert(out.end(), b.size() - j, Edit::kNew);
  return out;
}

}  // namespace

std::vector<Column> align_ranks(const Loaded& in, size_t work_factor) {
  // Groups of ranks with equal identity sequences, the largest first (then by lowest rank).
  std::map<std::vector<uint32_t>, std::vector<uint32_t>> by_sequence;
  for (uint32_t r = 0; r < in.ranks.size(); ++r) {
    std::vector<uint32_t> seq;
    seq.reserve(in.ranks[r].events.size());
    for (const RankEvent& e : in.ranks[r].events) seq.push_back(e.identity);
    by_sequence[std::move(seq)].push_back(r);
  }
  std::vector<std::pair<const std::vector<uint32_t>*, const std::vector<uint32_t>*>> groups;
  for (const auto& [seq, ranks] : by_sequence) groups.emplace_back(&seq, &ranks);
  std::sort(groups.begin(), groups.end(), [](const auto& x, const auto& y) {
    return x.second->size() != y.second->size() ? x.second->size() > y.second->size() : x.second->front() < y.second->front();
  });
  std::vector<Column> cols;
  for (const auto& [seq, ranks] : groups) {
    if (cols.empty()) {  // the first group: its calls as they come
      for (uint32_t x : *seq) cols.push_back(Column{x, *ranks});
      continue;
    }
    std::vector<uint32_t> have;
    have.reserve(cols.size());
    for (const Column& c : cols) have.push_back(c.identity);
    bool ok = true;
    const std::vector<Edit> script = diff(have, *seq, work_factor * (have.size() + seq->size()), ok);
    if (!ok) return {};
    std::vector<Column> next;
    next.reserve(script.size());
    size_t i = 0, j = 0;
    for (Edit e : script) {
      if (e == Edit::kNew) {
        next.push_back(Column{(*seq)[j++], *ranks});
        continue;
      }
      next.push_back(std::move(cols[i++]));
      if (e == Edit::kMatch) {
        next.back().ranks.insert(next.back().ranks.end(), ranks->begin(), ranks->end());
        ++j;
      }
    }
    cols = std::move(next);
  }
  for (Column& c : cols) std::sort(c.ranks.begin(), c.ranks.end());
  return cols;
}

}  // namespace skt::merge
