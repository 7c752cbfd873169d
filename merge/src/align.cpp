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
//
// Collectives (any call of ordered_across_members) are anchors: a group's
// n-th on a communicator goes into the column of the other ranks' n-th on
// the same group of it, where that column holds the same call, and only the
// runs between anchors are aligned by their blocks. MPI matches collectives
// by their order, and so did the ranks: NPB MG's zran3 reaches one of its
// 40 MPI_Allreduce from two call sites, by rank, and the longest common runs
// alone had lined up some ranks' first ten with the others' second (163
// collective events where the walk made 126, so auto took the walk, whose
// fold at 16 ranks, class B, was 1,704 symbols against 359).
#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include "skel/merge.h"

namespace skt::merge {
namespace {

enum class Edit : uint8_t { kMatch, kOld, kNew };

// A suffix automaton of s[lo, hi): per state, the length of its longest
// string, its suffix link, its transitions, and where in s the first and the
// last occurrence of its strings end (last_end: filled by with_last_ends).
struct SuffixAutomaton {
  struct State {
    long len = 0, link = -1, first_end = 0, last_end = -1;
    std::map<uint32_t, long> next;
  };
  std::vector<State> st;
  State& operator[](long v) { return st[static_cast<size_t>(v)]; }
  const State& operator[](long v) const { return st[static_cast<size_t>(v)]; }
};

SuffixAutomaton suffix_automaton(const std::vector<uint32_t>& s, size_t lo, size_t hi) {
  SuffixAutomaton sa;
  sa.st.resize(1);
  sa.st.reserve(2 * (hi - lo) + 2);
  long last = 0;
  for (size_t p = lo; p < hi; ++p) {
    const uint32_t c = s[p];
    const long cur = static_cast<long>(sa.st.size());
    sa.st.push_back(SuffixAutomaton::State{sa[last].len + 1, -1, static_cast<long>(p), static_cast<long>(p), {}});
    long q = last;
    while (q != -1 && !sa[q].next.count(c)) {
      sa[q].next[c] = cur;
      q = sa[q].link;
    }
    if (q == -1) {
      sa[cur].link = 0;
    } else {
      const long r = sa[q].next[c];
      if (sa[q].len + 1 == sa[r].len) {
        sa[cur].link = r;
      } else {
        const long clone = static_cast<long>(sa.st.size());
        SuffixAutomaton::State copy = sa[r];
        copy.len = sa[q].len + 1;
        copy.last_end = -1;  // a clone ends nowhere of its own
        sa.st.push_back(std::move(copy));
        while (q != -1 && sa[q].next.count(c) && sa[q].next[c] == r) {
          sa[q].next[c] = clone;
          q = sa[q].link;
        }
        sa[r].link = clone;
        sa[cur].link = clone;
      }
    }
    last = cur;
  }
  return sa;
}

// Fills each state's last_end: the latest end among the states whose
// suffix links lead to it (longest states first, a counting sort by length).
void with_last_ends(SuffixAutomaton& sa) {
  std::vector<size_t> by_len(sa.st.size() + 1, 0);
  for (const auto& x : sa.st) ++by_len[static_cast<size_t>(x.len)];
  for (size_t l = 1; l < by_len.size(); ++l) by_len[l] += by_len[l - 1];
  std::vector<long> order(sa.st.size());
  for (long v = static_cast<long>(sa.st.size()) - 1; v >= 0; --v) order[--by_len[static_cast<size_t>(sa[v].len)]] = v;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (sa[*it].link >= 0) sa[sa[*it].link].last_end = std::max(sa[sa[*it].link].last_end, sa[*it].last_end);
}

// The longest run of calls common to a[alo, ahi) and b[blo, bhi), the one
// that ends earliest in a, then earliest in b (as Python's difflib): a
// suffix automaton of the b range, a's range run through it. O(n + m).
struct Block {
  size_t i = 0, j = 0, k = 0;  // a[i, i + k) == b[j, j + k)
};
Block longest_block(const std::vector<uint32_t>& a, size_t alo, size_t ahi, const std::vector<uint32_t>& b,
                    size_t blo, size_t bhi) {
  const SuffixAutomaton sa = suffix_automaton(b, blo, bhi);
  Block best;
  long v = 0, len = 0;
  for (size_t p = alo; p < ahi; ++p) {
    const uint32_t c = a[p];
    while (v != 0 && !sa[v].next.count(c)) {
      v = sa[v].link;
      len = sa[v].len;
    }
    auto it = sa[v].next.find(c);
    if (it == sa[v].next.end()) {
      v = 0, len = 0;
      continue;
    }
    v = it->second, ++len;
    if (static_cast<size_t>(len) > best.k) {
      // the longest match ending at p: its first occurrence in b ends at first_end
      best.k = static_cast<size_t>(len);
      best.i = p + 1 - best.k;
      best.j = static_cast<size_t>(sa[v].first_end) + 1 - best.k;
    }
  }
  return best;
}

// The longest stretch of s[lo, hi) that repeats a period at least twice:
// s[start, start + count * period) is the period s[start, start + period)
// count times (its smallest period; the earliest of equal stretches). From
// the suffix automaton: a string whose first and last occurrences overlap or
// touch, d apart, makes a stretch of period d as long as itself and d more;
// the longest such stretch is a whole run (its longest repeat occurs twice,
// one period apart). O(n).
struct Periodic {
  size_t start = 0, period = 0, count = 0;
};
Periodic longest_periodic(const std::vector<uint32_t>& s, size_t lo, size_t hi) {
  SuffixAutomaton sa = suffix_automaton(s, lo, hi);
  with_last_ends(sa);
  long best_span = 0, best_d = 0, best_first = 0;
  for (const auto& x : sa.st) {
    const long d = x.last_end - x.first_end;
    if (x.len == 0 || d <= 0 || d > x.len) continue;
    const long span = x.len + d, first = x.first_end - x.len + 1;
    if (span > best_span || (span == best_span && (d < best_d || (d == best_d && first < best_first))))
      best_span = span, best_d = d, best_first = first;
  }
  if (best_span == 0) return {};
  return Periodic{static_cast<size_t>(best_first), static_cast<size_t>(best_d), static_cast<size_t>(best_span / best_d)};
}

// Where both ranges are mostly one period repeated, the same number of
// times (at least half of each range: a stretch found by chance among other
// calls is not the range's loop), the two stretches; count 0 where not.
std::pair<Periodic, Periodic> common_periods(const std::vector<uint32_t>& a, size_t alo, size_t ahi,
                                             const std::vector<uint32_t>& b, size_t blo, size_t bhi) {
  constexpr size_t kMinRange = 4;  // calls; a shorter range is aligned block by block
  if (ahi - alo < kMinRange || bhi - blo < kMinRange) return {};
  const Periodic x = longest_periodic(a, alo, ahi);
  if (x.count < 2 || 2 * x.count * x.period < ahi - alo) return {};  // b's is not sought where a's fails
  const Periodic y = longest_periodic(b, blo, bhi);
  if (y.count != x.count || 2 * y.count * y.period < bhi - blo) return {};
  return {x, y};
}

// A range being aligned stands for `count` ranges a_step and b_step further
// on as well (its blocks are repeated there): a period of both sides' loops.
struct Repeat {
  size_t count = 1, a_step = 0, b_step = 0;
};
struct Range {
  size_t alo = 0, ahi = 0, blo = 0, bhi = 0;
  std::vector<Repeat> repeats;  // of the periods it lies in, outermost first
  bool whole_is_not_a_loop = false;  // two periods aligned to learn one: not split into periods again
};

// Block x where it stands and at every repeat of its range.
void add_repeated(std::vector<Block>& blocks, const Block& x, const std::vector<Repeat>& repeats, size_t level = 0) {
  if (level == repeats.size()) {
    blocks.push_back(x);
    return;
  }
  const Repeat& r = repeats[level];
  for (size_t c = 0; c < r.count; ++c)
    add_repeated(blocks, Block{x.i + c * r.a_step, x.j + c * r.b_step, x.k}, repeats, level + 1);
}

// The matching blocks of a and b in given ranges, under a bound on the work
// (the lengths of the ranges searched, summed; `ok` false past it).
//
// In a range as difflib does: the longest common run, then the same on each
// side of it. Where both sides of a range are mostly one period repeated the
// same number of times (a loop that both run as often), every period is
// aligned alike, and what comes before and after on its own; the calls left
// unmatched at the end of one period and at the start of the next go each
// into its own period (empty blocks where periods begin). So every
// iteration of the loop is merged alike. Found block by block over the whole
// range, the runs that cross from one iteration into the next paired the
// groups' calls otherwise than in the first iteration, which has none
// before it (NPB MG at 16 ranks: the first V-cycle stayed out of the loop).
//
// How one period is aligned: as the second of two periods aligned together,
// where that alignment crosses from the first period into the second at the
// start of both (the alignment inside a loop, not at its edge: one period
// alone, a run that ends a's period may pair with one that starts b's, as
// the longest common run does not know that the periods come round again);
// one period alone where it does not.
struct Matcher {
  const std::vector<uint32_t>& a;
  const std::vector<uint32_t>& b;
  size_t work_limit = 0, work = 0;
  bool ok = true;

  void match(Range first, std::vector<Block>& blocks) {
    std::vector<Range> todo{std::move(first)};
    while (!todo.empty() && ok) {
      Range r = std::move(todo.back());
      todo.pop_back();
      if (r.alo >= r.ahi || r.blo >= r.bhi) continue;
      work += 2 * ((r.ahi - r.alo) + (r.bhi - r.blo));  // the periods sought, then the longest block
      if (work > work_limit) {
        ok = false;
        return;
      }
      const auto [pa, pb] = r.whole_is_not_a_loop ? std::pair<Periodic, Periodic>{}
                                                  : common_periods(a, r.alo, r.ahi, b, r.blo, r.bhi);
      if (pa.count > 0) {
        for (size_t c = 0; c <= pa.count; ++c)
          add_repeated(blocks, Block{pa.start + c * pa.period, pb.start + c * pb.period, 0}, r.repeats);
        todo.push_back({r.alo, pa.start, r.blo, pb.start, r.repeats});
        todo.push_back({pa.start + pa.count * pa.period, r.ahi, pb.start + pb.count * pb.period, r.bhi, r.repeats});
        std::vector<Repeat> inside = r.repeats;
        inside.push_back(Repeat{pa.count, pa.period, pb.period});
        if (!period_as_the_second_of_two(pa, pb, inside, blocks) && ok)
          todo.push_back({pa.start, pa.start + pa.period, pb.start, pb.start + pb.period, std::move(inside)});
        continue;
      }
      const Block x = longest_block(a, r.alo, r.ahi, b, r.blo, r.bhi);
      if (x.k == 0) continue;
      add_repeated(blocks, x, r.repeats);
      todo.push_back({r.alo, x.i, r.blo, x.j, r.repeats});
      todo.push_back({x.i + x.k, r.ahi, x.j + x.k, r.bhi, std::move(r.repeats)});
    }
  }

  // The blocks of one period (each repeat alike), from two periods aligned together: false where that
  // alignment does not cross into the second period at the start of both.
  bool period_as_the_second_of_two(const Periodic& pa, const Periodic& pb, const std::vector<Repeat>& repeats,
                                   std::vector<Block>& blocks) {
    std::vector<Block> two;
    match(Range{pa.start, pa.start + 2 * pa.period, pb.start, pb.start + 2 * pb.period, {}, true}, two);
    if (!ok) return false;
    const size_t ma = pa.start + pa.period, mb = pb.start + pb.period;  // where the second periods begin
    std::vector<Block> second;
    for (const Block& x : two) {
      if (x.i + x.k <= ma && x.j + x.k <= mb) continue;      // the first periods'
      if (x.i >= ma && x.j >= mb) {                           // the second's
        second.push_back(Block{x.i - pa.period, x.j - pb.period, x.k});
      } else if (x.i < ma && x.j < mb && ma - x.i == mb - x.j) {  // across both starts at once
        second.push_back(Block{pa.start, pb.start, x.k - (ma - x.i)});
      } else {
        return false;  // a's period begins elsewhere than b's in this alignment
      }
    }
    for (const Block& x : second) add_repeated(blocks, x, repeats);
    return true;
  }
};

// An edit script turning a into b: the anchors (a[i] == b[j], i and j
// ascending), then in each range between them the Matcher's blocks. Between
// blocks, a's calls alone come first, then b's. Empty with `ok` false when
// the work passes work_limit.
std::vector<Edit> diff(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                       const std::vector<Block>& anchors, size_t work_limit, bool& ok) {
  std::vector<Block> blocks = anchors;
  Matcher m{a, b, work_limit};
  size_t i0 = 0, j0 = 0;
  for (const Block& x : anchors) {
    m.match({i0, x.i, j0, x.j, {}}, blocks);
    i0 = x.i + x.k, j0 = x.j + x.k;
  }
  m.match({i0, a.size(), j0, b.size(), {}}, blocks);
  ok = m.ok;
  if (!ok) return {};
  std::sort(blocks.begin(), blocks.end(), [](const Block& x, const Block& y) {
    return std::tie(x.i, x.j, x.k) < std::tie(y.i, y.j, y.k);  // an empty block before the one it starts
  });
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

// What the alignment compares: each call's identity, and its tag where every
// rank that makes the call uses the same tags with it (the tags name the
// exchange: NPB MG's one call site exchanges along three axes, tags 1100 to
// 3300, and by identity alone a group's exchange along one axis lined up with
// the others' along another, a table of peers in every column after it).
// A tag that depends on the rank (the sender's number) says nothing of
// which call is which: identity alone.
struct CallKeys {
  std::vector<std::vector<uint32_t>> of_rank;  // per rank, per call
  std::vector<uint32_t> identity;              // per key
};
constexpr size_t kMaxKeyedTags = 64;  // an identity using more tags is keyed by identity alone

CallKeys call_keys(const Loaded& in) {
  const size_t n_ids = in.tables.identities.size();
  // per identity: the tags the first rank making it uses; keyed while every other rank uses the same
  std::vector<std::vector<int64_t>> tags(n_ids);
  std::vector<bool> seen(n_ids, false);
  std::vector<bool> keyed(n_ids, true);
  std::vector<std::vector<int64_t>> mine(n_ids);
  for (uint32_t r = 0; r < in.ranks.size(); ++r) {
    const RankData& rd = in.ranks[r];
    std::vector<uint32_t> used;
    for (const RankEvent& e : rd.events) {
      if (!keyed[e.identity]) continue;
      auto& t = mine[e.identity];
      if (t.empty()) used.push_back(e.identity);
      const int64_t tag = rd.params[e.params][static_cast<size_t>(Param::tag)];
      if (std::find(t.begin(), t.end(), tag) == t.end()) {
        if (t.size() == kMaxKeyedTags) keyed[e.identity] = false;
        else t.push_back(tag);
      }
    }
    for (uint32_t x : used) {
      std::sort(mine[x].begin(), mine[x].end());
      if (!seen[x]) seen[x] = true, tags[x] = mine[x];
      else if (tags[x] != mine[x]) keyed[x] = false;
      mine[x].clear();
    }
  }
  CallKeys k;
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> key_of(n_ids);  // per identity: (tag, key), at most 64
  k.of_rank.resize(in.ranks.size());
  for (uint32_t r = 0; r < in.ranks.size(); ++r) {
    const RankData& rd = in.ranks[r];
    k.of_rank[r].reserve(rd.events.size());
    for (const RankEvent& e : rd.events) {
      const int64_t tag = keyed[e.identity] ? rd.params[e.params][static_cast<size_t>(Param::tag)] : kNone;
      auto& keys = key_of[e.identity];
      auto it = std::find_if(keys.begin(), keys.end(), [&](const auto& t) { return t.first == tag; });
      if (it == keys.end()) {
        it = keys.insert(keys.end(), {tag, static_cast<uint32_t>(k.identity.size())});
        k.identity.push_back(e.identity);
      }
      k.of_rank[r].push_back(it->second);
    }
  }
  return k;
}

// The n-th collective (ordered_across_members) that the members of one
// group of a communicator make.
struct Anchor {
  int64_t comm = kNone;
  int32_t group = 0;
  uint32_t nth = 0;
  bool operator<(const Anchor& o) const {
    return comm != o.comm ? comm < o.comm : group != o.group ? group < o.group : nth < o.nth;
  }
};

// Per call of seq (keys), which the ranks of a group make: the anchors it is
// (one per group of its communicator that the ranks hold), none for other calls.
std::vector<std::vector<Anchor>> anchors_of(const Loaded& in, const std::vector<uint32_t>& identity_of_key,
                                            const std::vector<uint32_t>& seq, const std::vector<uint32_t>& ranks) {
  const auto& ids = in.tables.identities;
  std::vector<std::vector<Anchor>> out(seq.size());
  std::map<int64_t, uint32_t> made;  // per communicator: its collectives so far
  for (size_t j = 0; j < seq.size(); ++j) {
    const Identity& id = ids[identity_of_key[seq[j]]];
    if (!ordered_across_members(id.func)) continue;
    const uint32_t nth = made[id.comm]++;
    const CommSymbol* c = id.comm > kCommWorld && id.comm < static_cast<int64_t>(in.tables.comms.size())
                              ? &in.tables.comms[static_cast<size_t>(id.comm)]
                              : nullptr;  // MPI_COMM_WORLD, or none (MPI_Finalize): one group
    std::vector<int32_t> groups;
    for (uint32_t r : ranks) groups.push_back(c && r < c->group_of.size() ? c->group_of[r] : 0);
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    for (int32_t g : groups) out[j].push_back(Anchor{id.comm, g, nth});
  }
  return out;
}

// The group's collectives that meet the same collective of the columns so far
// (its anchors' column holds the same call), as one-call blocks ascending in
// both: one that would go back in the columns is left to the alignment.
std::vector<Block> anchor_blocks(const std::vector<uint32_t>& have, const std::vector<std::vector<Anchor>>& have_anchors,
                                 const std::vector<uint32_t>& seq, const std::vector<std::vector<Anchor>>& seq_anchors) {
  std::map<Anchor, size_t> column_of;
  for (size_t i = 0; i < have_anchors.size(); ++i)
    for (const Anchor& a : have_anchors[i]) column_of.emplace(a, i);
  std::vector<Block> out;
  for (size_t j = 0; j < seq.size(); ++j) {
    for (const Anchor& a : seq_anchors[j]) {
      auto it = column_of.find(a);
      if (it == column_of.end() || have[it->second] != seq[j]) continue;
      if (out.empty() || (it->second > out.back().i && j > out.back().j)) out.push_back(Block{it->second, j, 1});
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<Column> align_ranks(const Loaded& in, size_t work_factor) {
  const CallKeys keys = call_keys(in);
  // Groups of ranks with equal key sequences, the largest first (then by lowest rank).
  std::map<std::vector<uint32_t>, std::vector<uint32_t>> by_sequence;
  for (uint32_t r = 0; r < in.ranks.size(); ++r) by_sequence[keys.of_rank[r]].push_back(r);
  std::vector<std::pair<const std::vector<uint32_t>*, const std::vector<uint32_t>*>> groups;
  for (const auto& [seq, ranks] : by_sequence) groups.emplace_back(&seq, &ranks);
  std::sort(groups.begin(), groups.end(), [](const auto& x, const auto& y) {
    return x.second->size() != y.second->size() ? x.second->size() > y.second->size() : x.second->front() < y.second->front();
  });
  std::vector<Column> cols;
  std::vector<uint32_t> have;                    // per column: its key
  std::vector<std::vector<Anchor>> col_anchors;  // per column: the collectives it holds
  for (const auto& [seq, ranks] : groups) {
    std::vector<std::vector<Anchor>> seq_anchors = anchors_of(in, keys.identity, *seq, *ranks);
    if (cols.empty()) {  // the first group: its calls as they come
      for (uint32_t x : *seq) cols.push_back(Column{keys.identity[x], *ranks});
      have = *seq;
      col_anchors = std::move(seq_anchors);
      continue;
    }
    bool ok = true;
    const std::vector<Block> anchors = anchor_blocks(have, col_anchors, *seq, seq_anchors);
    const std::vector<Edit> script = diff(have, *seq, anchors, work_factor * (have.size() + seq->size()), ok);
    if (!ok) return {};
    std::vector<Column> next;
    std::vector<uint32_t> next_keys;
    std::vector<std::vector<Anchor>> next_anchors;
    next.reserve(script.size());
    next_keys.reserve(script.size());
    next_anchors.reserve(script.size());
    size_t i = 0, j = 0;
    for (Edit e : script) {
      if (e == Edit::kNew) {
        next.push_back(Column{keys.identity[(*seq)[j]], *ranks});
        next_keys.push_back((*seq)[j]);
        next_anchors.push_back(std::move(seq_anchors[j++]));
        continue;
      }
      next.push_back(std::move(cols[i]));
      next_keys.push_back(have[i]);
      next_anchors.push_back(std::move(col_anchors[i++]));
      if (e == Edit::kMatch) {
        next.back().ranks.insert(next.back().ranks.end(), ranks->begin(), ranks->end());
        for (const Anchor& a : seq_anchors[j]) next_anchors.back().push_back(a);
        ++j;
      }
    }
    cols = std::move(next);
    have = std::move(next_keys);
    col_anchors = std::move(next_anchors);
  }
  for (Column& c : cols) std::sort(c.ranks.begin(), c.ranks.end());
  return cols;
}

}  // namespace skt::merge
