// The merged order by each call's count (merge --order nth): a rank's n-th
// call of a kind (its identity and tag, and for a wait the kind of the call
// that made its request: kinds() below) is one merged event with every other
// rank's n-th call of that kind. In an SPMD program the ranks that make a call make it
// equally often per iteration, so the n-th of one rank is the n-th of the
// others, however far apart in time they make it: in a pipeline (NPB LU's
// wavefront sweeps, a rank starting a plane after the ranks above and left of
// it have done it) the ranks reach one plane's calls whole planes apart, and
// the look-ahead walk, pairing calls by time, paired one rank's plane with
// another's next, differently in every iteration; the alignment, comparing
// call sequences that differ at every plane, gave up or split them.
//
// The events are then put in an order that keeps every rank's calls in its
// order: a topological order of the events, each rank's calls a chain among
// them, taking of the events all of whose ranks have come to them the one
// that was ready first (then the kind first seen, then the lowest count), so
// that ranks not tied by a common call take turns, as they ran, and the
// choice is the same in every iteration: taken by kind alone, two ranks of
// NPB LU that share no call between reductions (one sends each plane, the
// other receives it) came out one's whole sweep loop, then the other's: two
// loops, each no longer closing over the messages the other receives.
// Where the ranks make the kinds in orders that conflict (rank a's n-th X
// before its m-th Y, rank b's after: a rank with no neighbour above posts its
// receive from below ahead of its send down, once normalize() has put a
// step's receives first), the event most ranks have come to goes first with
// those ranks, and the others make it later, an event of their own.
// O(n log n) in the calls.
#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>

#include "skel/merge.h"

namespace skt::merge {

namespace {

// Each call's kind: its identity and tag, and for a call completing or starting one request, the kind of
// the call that made it. Unlike the alignment's keys, the tag counts even where ranks use different
// sets of tags with a call: a rank on the grid's edge sends to fewer sides, and its n-th send to one side
// is the others' n-th to that side, not their n-th send; and where one MPI_Wait call site completes the
// receives from every side, a rank's n-th wait there is the others' n-th for the same side.
struct Kinds {
  std::vector<std::vector<uint32_t>> of_rank;  // per rank, per call
  std::vector<uint32_t> identity;              // per kind
};

Kinds kinds(const Loaded& in) {
  Kinds k;
  std::map<std::tuple<uint32_t, int64_t, int64_t>, uint32_t> kind_of;  // (identity, tag, request maker's kind)
  k.of_rank.resize(in.ranks.size());
  for (uint32_t r = 0; r < in.ranks.size(); ++r) {
    const RankData& rd = in.ranks[r];
    std::vector<uint32_t>& mine = k.of_rank[r];
    mine.reserve(rd.events.size());
    for (const RankEvent& e : rd.events) {
      const int64_t tag = rd.params[e.params][static_cast<size_t>(Param::tag)];
      int64_t maker = kNone;
      if (e.lists >= 0) {
        const std::vector<int64_t>& refs = rd.lists[static_cast<size_t>(e.lists)][static_cast<size_t>(ListField::reqrefs)];
        if (refs.size() == 1 && refs[0] >= 0 && static_cast<size_t>(refs[0]) < mine.size()) maker = mine[static_cast<size_t>(refs[0])];
      }
      auto [it, added] = kind_of.emplace(std::make_tuple(e.identity, tag, maker), static_cast<uint32_t>(k.identity.size()));
      if (added) k.identity.push_back(e.identity);
      mine.push_back(it->second);
    }
  }
  return k;
}

// The merged events before they are ordered: one per (kind, count), and per rank and call, its event.
struct Events {
  std::vector<std::vector<uint32_t>> of_count;  // per kind, per count: the event
  std::vector<uint32_t> kind, count, members;   // per event: its kind, its count, the ranks making it
  std::vector<std::vector<uint32_t>> of_rank;   // per rank, per call: its event
};

Events number_events(const Kinds& keys) {
  Events ev;
  ev.of_count.resize(keys.identity.size());
  ev.of_rank.resize(keys.of_rank.size());
  std::vector<uint32_t> made(keys.identity.size(), 0);  // this rank's calls of each kind so far
  for (size_t r = 0; r < keys.of_rank.size(); ++r) {
    const std::vector<uint32_t>& calls = keys.of_rank[r];
    ev.of_rank[r].reserve(calls.size());
    for (uint32_t k : calls) {
      const uint32_t n = made[k]++;
      if (n == ev.of_count[k].size()) {
        ev.of_count[k].push_back(static_cast<uint32_t>(ev.kind.size()));
        ev.kind.push_back(k);
        ev.count.push_back(n);
        ev.members.push_back(0);
      }
      const uint32_t e = ev.of_count[k][n];
      ++ev.members[e];
      ev.of_rank[r].push_back(e);
    }
    for (uint32_t k : calls) made[k] = 0;
  }
  return ev;
}

}  // namespace

std::vector<Column> nth_ranks(const Loaded& in) {
  const Kinds keys = kinds(in);
  Events ev = number_events(keys);
  const size_t n_ranks = in.ranks.size();
  const std::vector<uint32_t>& kind = ev.kind;
  const std::vector<uint32_t>& count = ev.count;
  std::vector<uint32_t>& members = ev.members;  // less those already merged where an event is split
  // Kahn's algorithm over the ranks' chains: an event is ready when all its ranks have come to it, and the
  // one ready first goes first. Where none is, the ranks' orders conflict there: the event most ranks have
  // come to goes first with those ranks, the others making it later (an event of their own).
  using Ready = std::tuple<size_t, uint32_t, uint32_t>;  // (columns made when it became ready, kind, count)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  std::set<std::tuple<int64_t, uint32_t, uint32_t>> partly;  // (-ranks come, kind, count) of events not ready
  std::vector<Column> cols;
  cols.reserve(kind.size());
  std::vector<uint32_t> arrived(kind.size(), 0);
  std::vector<std::vector<uint32_t>> waiting(kind.size());  // per event: the ranks at it
  auto arrive = [&](uint32_t r, size_t at) {
    if (at == ev.of_rank[r].size()) return;
    const uint32_t e = ev.of_rank[r][at];
    waiting[e].push_back(r);
    if (arrived[e]) partly.erase({-int64_t{arrived[e]}, kind[e], count[e]});
    if (++arrived[e] == members[e]) ready.emplace(cols.size(), kind[e], count[e]);
    else partly.emplace(-int64_t{arrived[e]}, kind[e], count[e]);
  };
  std::vector<size_t> cursor(n_ranks, 0);
  for (uint32_t r = 0; r < n_ranks; ++r) arrive(r, 0);
  while (!ready.empty() || !partly.empty()) {
    uint32_t k, n;
    if (!ready.empty()) {
      size_t since;
      std::tie(since, k, n) = ready.top();
      ready.pop();
    } else {  // a conflict: split the event most ranks are at
      int64_t come;
      std::tie(come, k, n) = *partly.begin();
      partly.erase(partly.begin());
    }
    const uint32_t e = ev.of_count[k][n];
    std::vector<uint32_t> ranks = std::move(waiting[e]);
    waiting[e].clear();
    members[e] -= arrived[e];
    arrived[e] = 0;
    std::sort(ranks.begin(), ranks.end());
    for (uint32_t r : ranks) arrive(r, ++cursor[r]);
    cols.push_back(Column{keys.identity[k], std::move(ranks)});
  }
  return cols;
}

}  // namespace skt::merge
