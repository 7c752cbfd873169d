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

// An edit script turning a into b from their matching blocks: the anchors
// (a[i] == b[j], i and j ascending), then in each range between them as
// difflib does: the longest common run, then the same on each side of it.
// Between blocks, a's calls alone come first, then b's. Empty with `ok`
// false when the work (the lengths of the ranges searched, summed) passes
// work_limit.
std::vector<Edit> diff(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                       const std::vector<Block>& anchors, size_t work_limit, bool& ok) {
  ok = true;
  std::vector<Block> blocks = anchors;
  std::vector<std::array<size_t, 4>> todo;
  size_t i0 = 0, j0 = 0;
  for (const Block& x : anchors) {
    todo.push_back({i0, x.i, j0, x.j});
    i0 = x.i + x.k, j0 = x.j + x.k;
  }
  todo.push_back({i0, a.size(), j0, b.size()});
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
