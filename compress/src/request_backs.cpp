#include "request_backs.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skt::fold {
namespace {

// What pool the requests a call makes may form (docs/compress.md, "Request
// pools"): persistent receives from MPI_ANY_SOURCE (taken as messages come,
// restarted: the oldest started takes the next message), or sends (a ring
// of send buffers, each taken by MPI_Testany as it is free: whichever is
// done, and the skeleton's take finds whichever is done in its run).
enum class PoolKind : uint8_t { kNone, kReceives, kSends };
PoolKind pool_kind(const Identity& id) {
  const CallClass c = call_class(id.func);
  if (c == CallClass::kRecvInit && id.peer_class == PeerClass::kAnySource) return PoolKind::kReceives;
  return c == CallClass::kIsend ? PoolKind::kSends : PoolKind::kNone;
}

// The pools of a merged trace (docs/compress.md, "Request pools"). A take
// is a call site of MPI_Waitany/Testany/Waitsome/Testsome; it takes from a
// pool when every call of it, on every rank, completes one request at most,
// made by calls that may make a pool of one kind (its makers) but for a few
// strays. A receive pool's makers are on one communicator and, per rank, of
// one tag (the MPI takes the oldest receive started that a message matches:
// all must match the same messages), and their requests are started one at a
// time. A send pool's requests are never freed nor cancelled; the other
// calls that complete one (MPI_Wait*, MPI_Test*) name the pool too (any of
// its pending sends). A maker whose requests are also taken by a choosing
// call that is no pool take (a Waitsome of several) makes no pool, and the
// takes of its requests none.
class Pools {
 public:
  explicit Pools(const MergedTrace& m)
      : m_(m), bad_take_(m.identities.size(), 0), bad_maker_(m.identities.size(), 0),
        makers_(m.identities.size()), takes_(m.identities.size()), take_ok_(m.identities.size(), 0),
        pool_(m.identities.size(), -1), pool_of_take_(m.identities.size(), -1), takes_named_(m.identities.size(), 0),
        strays_(m.identities.size(), 0) {
    for (size_t idx = 0; idx < m.events.size(); ++idx) note(idx);
    settle();
  }

  // The pool event e's reference to the request made at merged index
  // `made`, one of n it names for a rank, names instead, or -1.
  int64_t names_pool(const MergedEvent& e, size_t n, int64_t made) const {
    if (made < 0) return -1;
    const uint32_t f = m_.identities[e.identity].func;
    const uint32_t maker = m_.events[static_cast<size_t>(made)].identity;
    if (completion_of(f) == Completion::kChoose && n == 1 && pool_of_take_[e.identity] >= 0)
      return pool_of_take_[e.identity];
    if (pool_[maker] < 0) return -1;
    if (pool_kind(m_.identities[maker]) == PoolKind::kSends) return pool_[maker];
    return call_class(f) == CallClass::kStart && n == 1 ? pool_[maker] : -1;
  }
  // The pool whose requests a call of this identity makes, or -1.
  int64_t pool_of_maker(uint32_t identity) const { return pool_[identity]; }

 private:
  void note(size_t idx) {
    const MergedEvent& e = m_.events[idx];
    const Identity& id = m_.identities.at(e.identity);
    if (creates_request(id.func)) {
      if (pool_kind(id) == PoolKind::kReceives) note_tags(e);
      return;
    }
    if (!uses_requests(id.func) || !e.find_list(ListField::reqrefs)) return;
    const bool choose = completion_of(id.func) == Completion::kChoose;
    for (size_t k = 0; k < e.ranks.size(); ++k) {
      const std::vector<int64_t>& refs = m_.list_at(e, ListField::reqrefs, k);
      for (int64_t d : refs) {
        if (d < 0 || static_cast<size_t>(d) > idx) continue;
        const uint32_t maker = m_.events[idx - static_cast<size_t>(d)].identity;
        if (!creates_request(m_.identities[maker].func)) continue;
        const PoolKind kind = pool_kind(m_.identities[maker]);
        note_use(maker, kind, call_class(id.func), choose, refs.size());
        if (!choose) continue;
        if (refs.size() > 1) bad_take_[e.identity] = 1;
        ++takes_named_[e.identity];
        if (kind != PoolKind::kNone) link(e.identity, maker);
        else ++strays_[e.identity];
      }
    }
  }

  // A call naming n requests, one of them made by `maker`: receives are
  // started and taken one at a time (a Startall, a Waitsome of several,
  // spoils their pool); sends freed or cancelled are no pool's.
  void note_use(uint32_t maker, PoolKind kind, CallClass cls, bool choose, size_t n) {
    if (kind == PoolKind::kReceives && (choose || cls == CallClass::kStart) && n > 1) bad_maker_[maker] = 1;
    if (kind == PoolKind::kSends && (cls == CallClass::kRequestFree || cls == CallClass::kCancel)) bad_maker_[maker] = 1;
  }

  // Per rank, the tag of a maker's receives, which must stay the same.
  void note_tags(const MergedEvent& e) {
    for (size_t k = 0; k < e.ranks.size(); ++k) {
      const int64_t tag = m_.value_at(e, Param::tag, k);
      auto [it, fresh] = tags_.emplace(key(e.identity, e.ranks[k]), tag);
      if (!fresh && it->second != tag) bad_maker_[e.identity] = 1;
    }
  }

  void link(uint32_t take, uint32_t maker) {
    std::vector<uint32_t>& mk = makers_[take];
    if (std::find(mk.begin(), mk.end(), maker) != mk.end()) return;
    mk.push_back(maker);
    takes_[maker].push_back(take);
  }

  // A take's makers: none bad, all of one kind (receives: alike); strays few.
  bool sound(uint32_t take) const {
    const std::vector<uint32_t>& mk = makers_[take];
    if (mk.empty() || bad_take_[take] || strays_[take] > kMostStrays * takes_named_[take]) return false;
    const Identity& first = m_.identities[mk[0]];
    const PoolKind kind = pool_kind(first);
    for (uint32_t maker : mk) {
      if (bad_maker_[maker] || pool_kind(m_.identities[maker]) != kind) return false;
      if (kind == PoolKind::kReceives && (m_.identities[maker].comm != first.comm || !same_tags(mk[0], maker)))
        return false;
    }
    return true;
  }

  bool same_tags(uint32_t a, uint32_t b) const {
    for (uint32_t r = 0; r < m_.world_size; ++r) {
      auto x = tags_.find(key(a, r)), y = tags_.find(key(b, r));
      if (x != tags_.end() && y != tags_.end() && x->second != y->second) return false;
    }
    return true;
  }

  // take_ok_, then the pools: a maker one of whose takes is unsound spoils the others.
  void settle() {
    for (uint32_t t = 0; t < take_ok_.size(); ++t) take_ok_[t] = sound(t);
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t maker = 0; maker < takes_.size(); ++maker) {
        const std::vector<uint32_t>& tk = takes_[maker];
        if (std::all_of(tk.begin(), tk.end(), [&](uint32_t t) { return take_ok_[t]; })) continue;
        for (uint32_t t : tk) changed |= std::exchange(take_ok_[t], 0) != 0;
      }
    }
    number_pools();
  }

  // A pool's number: the least identity of its makers, those linked by
  // the takes they share.
  void number_pools() {
    for (uint32_t t = 0; t < take_ok_.size(); ++t) {
      if (!take_ok_[t]) continue;
      int64_t least = *std::min_element(makers_[t].begin(), makers_[t].end());
      for (uint32_t maker : makers_[t])
        if (pool_[maker] >= 0) least = std::min(least, pool_[maker]);
      for (uint32_t maker : makers_[t]) relabel(maker, least);
    }
    for (uint32_t t = 0; t < take_ok_.size(); ++t)
      if (take_ok_[t]) pool_of_take_[t] = pool_[makers_[t][0]];
  }
  // maker, and every maker of its pool so far, join pool `to`
  void relabel(uint32_t maker, int64_t to) {
    const int64_t from = pool_[maker];
    if (from == to) return;
    if (from < 0) {
      pool_[maker] = to;
      return;
    }
    for (int64_t& p : pool_)
      if (p == from) p = to;
  }

  static uint64_t key(uint32_t identity, uint32_t rank) { return (static_cast<uint64_t>(identity) << 32) | rank; }

  const MergedTrace& m_;
  std::vector<uint8_t> bad_take_, bad_maker_;        // per identity
  std::vector<std::vector<uint32_t>> makers_, takes_;  // per take: its makers; per maker: its takes
  std::vector<uint8_t> take_ok_;                      // per identity: a pool's take
  std::vector<int64_t> pool_, pool_of_take_;          // per identity: the pool it makes, takes from; or -1
  // per take: the requests it named, and of those the strays (made by calls
  // that make no pool: the tracer can not tell requests apart behind one
  // shared handle, Open MPI's empty ones, and may name another)
  std::vector<uint64_t> takes_named_, strays_;
  static constexpr double kMostStrays = 0.25;
  std::unordered_map<uint64_t, int64_t> tags_;        // (maker, rank) -> its receives' tag
};

// How many of rank r's own request-creating calls back (reqback, skel/merged.h) the request created at
// merged index `at` is; -1 where it is none of them. created: the rank's, by [persistent].
int64_t request_back(const std::array<std::vector<int64_t>, 2>& created, int64_t at) {
  for (int persistent = 0; persistent < 2; ++persistent) {
    const std::vector<int64_t>& mine = created[persistent];
    auto it = std::lower_bound(mine.begin(), mine.end(), at);
    if (it != mine.end() && *it == at) return 2 * (mine.end() - it) + persistent;
  }
  return -1;
}

}  // namespace

std::vector<ListDesc> request_backs(const MergedTrace& m) {
  const Pools pools(m);
  std::vector<ListDesc> out(m.events.size());
  // per rank, [persistent]: merged indices of its request-creating calls
  std::vector<std::array<std::vector<int64_t>, 2>> created(m.world_size);
  std::vector<int64_t> backs;   // every participating rank's list, side by side
  std::vector<size_t> starts;   // where each rank's begins in backs, and the end
  for (size_t idx = 0; idx < m.events.size(); ++idx) {
    const MergedEvent& e = m.events[idx];
    uint32_t f = m.identities.at(e.identity).func;
    if (creates_request(f)) {
      for (uint32_t r : e.ranks) created[r][creates_persistent_request(f)].push_back(static_cast<int64_t>(idx));
      if (pools.pool_of_maker(e.identity) >= 0)
        out[idx] = ListDesc{ListField::pool, true, {{pools.pool_of_maker(e.identity)}}};
      continue;
    }
    if (!uses_requests(f) || !e.find_list(ListField::reqrefs)) continue;
    if (e.ranks.empty()) throw TraceError("compress: merged event " + std::to_string(idx) + " has no ranks");
    backs.clear();
    starts.clear();
    for (size_t k = 0; k < e.ranks.size(); ++k) {
      starts.push_back(backs.size());
      const std::vector<int64_t>& refs = m.list_at(e, ListField::reqrefs, k);
      for (int64_t d : refs) {
        const int64_t made = d < 0 || d > static_cast<int64_t>(idx) ? -1 : static_cast<int64_t>(idx) - d;
        const int64_t pool = pools.names_pool(e, refs.size(), made);
        if (pool >= 0) backs.push_back(pool_reqback(static_cast<uint32_t>(pool)));
        else backs.push_back(made < 0 ? -1 : request_back(created[e.ranks[k]], made));
      }
    }
    starts.push_back(backs.size());
    auto list_of = [&](size_t k) {
      return std::vector<int64_t>(backs.begin() + static_cast<std::ptrdiff_t>(starts[k]),
                                  backs.begin() + static_cast<std::ptrdiff_t>(starts[k + 1]));
    };
    auto same_as_first = [&](size_t k) {
      return starts[k + 1] - starts[k] == starts[1] - starts[0] &&
             std::equal(backs.begin() + static_cast<std::ptrdiff_t>(starts[k]),
                        backs.begin() + static_cast<std::ptrdiff_t>(starts[k + 1]), backs.begin());
    };
    ListDesc& l = out[idx];
    l.field = ListField::reqback;
    l.same = true;
    for (size_t k = 1; k < e.ranks.size() && l.same; ++k) l.same = same_as_first(k);
    for (size_t k = 0; k < (l.same ? 1 : e.ranks.size()); ++k) l.lists.push_back(list_of(k));
  }
  return out;
}

}  // namespace skt::fold
