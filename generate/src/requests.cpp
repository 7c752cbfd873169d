#include "requests.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <string>
#include <unordered_map>

#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skt::gen {

namespace {

void expand(const FoldedProgram& p, const std::vector<uint32_t>& items, std::vector<uint32_t>& out) {
  for (uint32_t id : items) {
    const FoldedNode& n = p.nodes[id];
    if (!n.is_loop()) {
      out.push_back(id);
      continue;
    }
    for (uint64_t k = 0; k < n.count; ++k) expand(p, n.body, out);
  }
}

struct UnionFind {
  std::vector<uint32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(uint32_t a, uint32_t b) { parent[find(a)] = find(b); }
};

}  // namespace

std::vector<uint32_t> expand_nodes(const FoldedProgram& p) {
  std::vector<uint32_t> out;
  out.reserve(p.merged_events);
  expand(p, p.top, out);
  return out;
}


// Where the requests a completion names were made: walks the expanded
// program in order (made() at every position, then where()).
class Creators {
 public:
  explicit Creators(const MergedTrace& m) : m_(m), made_(m.world_size) {}
  static constexpr size_t kUnknown = SIZE_MAX;
  // A request a completion names: the position of the call that made it
  // (kUnknown: not in the trace); for a pool's reference (pool_reqback),
  // the pool's latest request made.
  struct Named {
    size_t at = kUnknown;
    bool pool = false;
  };
  // Position q holds event e: a creating call adds to its ranks' requests.
  void made(size_t q, const MergedEvent& e, uint32_t func) {
    for (uint32_t r : e.ranks) made_[r][creates_persistent_request(func)].push_back(q);
    const int64_t pool = pool_of(e);
    if (pool >= 0)
      for (uint32_t r : e.ranks) latest_[key(static_cast<uint64_t>(pool), r)] = q;
  }
  // The requests e names for rank r, from the folded program's reqback.
  std::vector<Named> where(const MergedEvent& e, uint32_t r) const {
    std::vector<Named> out;
    if (!e.find_list(ListField::reqback)) return out;
    for (int64_t b : m_.list(e, ListField::reqback, r)) {
      if (is_pool_reqback(b)) {
        auto it = latest_.find(key(pool_of_reqback(b), r));
        out.push_back({it == latest_.end() ? kUnknown : it->second, true});
        continue;
      }
      const std::vector<size_t>& mine = made_[r][b & 1];
      size_t k = b > 0 ? static_cast<size_t>(b / 2) : 0;
      out.push_back({k > 0 && k <= mine.size() ? mine[mine.size() - k] : kUnknown, false});
    }
    return out;
  }
  // The pool whose requests e makes (list field pool), or -1.
  static int64_t pool_of(const MergedEvent& e) {
    const ListDesc* l = e.find_list(ListField::pool);
    return l && l->same && l->lists.size() == 1 && l->lists[0].size() == 1 && l->lists[0][0] >= 0 ? l->lists[0][0] : -1;
  }

 private:
  static uint64_t key(uint64_t pool, uint32_t rank) { return (pool << 32) | rank; }

  const MergedTrace& m_;
  std::vector<std::array<std::vector<size_t>, 2>> made_;  // per rank: [persistent] positions of its creating calls
  std::unordered_map<uint64_t, size_t> latest_;         // (pool, rank) -> position of its latest request made
};

namespace {

const Identity& identity_at(const FoldedProgram& p, uint32_t node) {
  const MergedTrace& m = p.symbols;
  return m.identities[m.events[p.nodes[node].symbol].identity];
}
uint32_t func_of(const FoldedProgram& p, uint32_t node) { return identity_at(p, node).func; }

// Pass 1: which creating nodes a reference reaches. Where one reference of
// one rank reaches different creating nodes at different positions, those
// nodes are joined (they share a ring), and so are the makers of one pool
// (list field pool). at: expand_nodes(p).
UnionFind join_shared_creators(const FoldedProgram& p, const std::vector<uint32_t>& at) {
  const MergedTrace& m = p.symbols;
  const size_t N = p.nodes.size();
  std::vector<std::vector<std::vector<int64_t>>> first(N);  // [node][rank][j]: creator first seen
  UnionFind uf(N);
  std::unordered_map<int64_t, uint32_t> maker_of_pool;  // a pool's makers share its ring
  for (uint32_t n = 0; n < N; ++n) {
    if (p.nodes[n].is_loop() || !creates_request(func_of(p, n))) continue;
    const int64_t pool = Creators::pool_of(m.events[static_cast<size_t>(p.nodes[n].symbol)]);
    if (pool < 0) continue;
    auto [it, fresh] = maker_of_pool.emplace(pool, n);
    if (!fresh) uf.join(n, it->second);
  }
  Creators creators(m);
  for (size_t q = 0; q < at.size(); ++q) {
    uint32_t w = at[q];
    const MergedEvent& e = m.events[static_cast<size_t>(p.nodes[w].symbol)];
    if (creates_request(func_of(p, w))) creators.made(q, e, func_of(p, w));
    if (!uses_requests(func_of(p, w))) continue;
    if (first[w].empty()) first[w].resize(m.world_size);
    for (uint32_t r : e.ranks) {
      std::vector<Creators::Named> refs = creators.where(e, r);
      auto& mine = first[w][r];
      if (mine.size() < refs.size()) mine.resize(refs.size(), -1);
      for (size_t j = 0; j < refs.size(); ++j) {
        if (refs[j].at == Creators::kUnknown) continue;
        uint32_t c = at[refs[j].at];
        if (!creates_request(func_of(p, c))) continue;
        if (mine[j] < 0) mine[j] = c;
        else if (mine[j] != c) uf.join(c, static_cast<uint32_t>(mine[j]));
      }
    }
  }
  return uf;
}

// Numbers the rings, one per set of joined creating nodes in the order of
// their first node: fills out.ring_of_node, and out.ring_size with 1 each.
void number_rings(const FoldedProgram& p, UnionFind& uf, RequestSlots& out) {
  const size_t N = p.nodes.size();
  out.ring_of_node.assign(N, -1);
  std::vector<int32_t> ring_of_root(N, -1);
  for (uint32_t n = 0; n < N; ++n) {
    if (p.nodes[n].is_loop() || !creates_request(func_of(p, n))) continue;
    uint32_t root = uf.find(n);
    if (ring_of_root[root] < 0) ring_of_root[root] = static_cast<int32_t>(out.ring_size.size());
    out.ring_of_node[n] = ring_of_root[root];
    if (static_cast<size_t>(ring_of_root[root]) == out.ring_size.size()) out.ring_size.push_back(1);
  }
}

// Pass 2: per rank, count the requests each ring made; a reference is
// "the k-th latest" of its ring, and must be the same k every time. Fills
// out.refs, grows out.ring_size to the deepest reference, and notes the
// references that differ (out.problems, five at most). A pool's reference
// (Creators::Named::pool) names none: its ring becomes a pool
// (out.pool), as large as the most requests of it a rank held at once.
// Needs the rings numbered (number_rings).
class RefResolver {
 public:
  RefResolver(const FoldedProgram& p, const std::vector<uint32_t>& at, RequestSlots& out)
      : p_(p), m_(p.symbols), at_(at), out_(out), made_(m_.world_size, std::vector<uint64_t>(out.ring_size.size(), 0)),
        held_(m_.world_size, std::vector<uint64_t>(out.ring_size.size(), 0)), most_held_(out.ring_size.size(), 0),
        instance_(m_.world_size), seen_(p.nodes.size()), creators_(m_) {}

  void run() {
    out_.refs.assign(p_.nodes.size(), {});
    out_.pool.assign(out_.ring_size.size(), PoolKind::kNone);
    for (size_t q = 0; q < at_.size(); ++q) {
      uint32_t n = at_[q];
      uint32_t f = func_of(p_, n);
      const MergedEvent& e = m_.events[static_cast<size_t>(p_.nodes[n].symbol)];
      if (creates_request(f)) {
        creators_.made(q, e, f);
        const size_t g = static_cast<size_t>(out_.ring_of_node[n]);
        for (uint32_t r : e.ranks) {
          instance_[r][q] = made_[r][g]++;
          most_held_[g] = std::max(most_held_[g], ++held_[r][g]);
        }
        continue;
      }
      if (!uses_requests(f)) continue;
      if (out_.refs[n].empty()) {
        out_.refs[n].resize(m_.world_size);
        seen_[n].resize(m_.world_size);
      }
      for (uint32_t r : e.ranks) resolve(n, e, r, f);
    }
    for (size_t g = 0; g < out_.pool.size(); ++g) {
      uint64_t most = most_held_[g];
      if (out_.pool[g] == PoolKind::kSends)  // its takes may find none done: room for every send
        for (uint32_t r = 0; r < m_.world_size; ++r) most = std::max(most, std::min(made_[r][g], kMostSendPoolSlots));
      if (out_.pool[g] != PoolKind::kNone) out_.ring_size[g] = std::max(out_.ring_size[g], static_cast<uint32_t>(most));
    }
  }

 private:
  // The references of node n (event e, a call of function f) for rank r.
  void resolve(uint32_t n, const MergedEvent& e, uint32_t r, uint32_t f) {
    const CallClass cls = call_class(f);
    std::vector<Creators::Named> refs = creators_.where(e, r);
    auto& mine = out_.refs[n][r];
    if (mine.size() < refs.size()) {
      mine.resize(refs.size());
      seen_[n][r].resize(refs.size(), 0);
    }
    for (size_t j = 0; j < refs.size(); ++j) {
      RequestRef ref = refs[j].pool ? pool_ref(refs[j], f) : named_ref(refs[j], r, cls);
      if (!seen_[n][r][j]) {
        mine[j] = ref;
        seen_[n][r][j] = 1;
      } else if (!(mine[j] == ref) && differs_.size() < kMaxDiffering) {
        differs_.emplace_back(n, r);
      }
    }
  }

  // "The back-th latest request of ring g"; a completion's (Start* and
  // Cancel leave their requests pending) ends an ordinary request.
  RequestRef named_ref(const Creators::Named& named, uint32_t r, CallClass cls) {
    RequestRef ref;
    if (named.at == Creators::kUnknown) return ref;
    const uint32_t c = at_[named.at];
    auto it = instance_[r].find(named.at);
    if (!creates_request(func_of(p_, c)) || it == instance_[r].end()) return ref;
    ref.ring = out_.ring_of_node[c];
    const size_t g = static_cast<size_t>(ref.ring);
    ref.back = static_cast<uint32_t>(made_[r][g] - it->second);
    out_.ring_size[g] = std::max(out_.ring_size[g], ref.back);
    const bool persistent = creates_persistent_request(func_of(p_, c));
    const bool ends = persistent ? cls == CallClass::kRequestFree
                                 : cls == CallClass::kComplete || cls == CallClass::kRequestFree;
    if (ends) {
      if (held_[r][g] > 0) --held_[r][g];
      if (!persistent) instance_[r].erase(it);
    }
    return ref;
  }

  // A pool's take (a completion: its oldest started receive, or any of its
  // sends) or start (an MPI_Start: its receive done longest).
  RequestRef pool_ref(const Creators::Named& named, uint32_t f) {
    const CallClass cls = call_class(f);
    RequestRef ref;
    if (named.at == Creators::kUnknown) return ref;
    const uint32_t c = at_[named.at];
    ref.ring = out_.ring_of_node[c];
    ref.back = 0;
    ref.pool = cls == CallClass::kStart ? PoolRef::kStart : PoolRef::kTake;
    const size_t g = static_cast<size_t>(ref.ring);
    const bool sends = call_class(func_of(p_, c)) == CallClass::kIsend;
    out_.pool[g] = sends ? PoolKind::kSends : PoolKind::kReceives;
    const bool waits = completion_of(f) == Completion::kWait || f == kFunc_MPI_Waitany || f == kFunc_MPI_Waitsome;
    if (sends && !waits) ref.pool = PoolRef::kPoll;
    return ref;
  }

  const FoldedProgram& p_;
  const MergedTrace& m_;
  const std::vector<uint32_t>& at_;
  RequestSlots& out_;

 public:
  // A send pool's slots at most (beyond, a send takes the slot of the one
  // made that many before, as in any ring; the MPI completes it unseen).
  static constexpr uint64_t kMostSendPoolSlots = 4096;
  // (node, rank) where a reference differs between occurrences: problems
  static constexpr size_t kMaxDiffering = 1000;
  std::vector<std::pair<uint32_t, uint32_t>> differs_;

 private:
  std::vector<std::vector<uint64_t>> made_;                   // [rank][ring]: requests made
  std::vector<std::vector<uint64_t>> held_;                   // [rank][ring]: requests made and not ended
  std::vector<uint64_t> most_held_;                           // [ring]: the most held_ on any rank
  std::vector<std::unordered_map<size_t, uint64_t>> instance_;  // per rank: position -> instance number, pending only
  std::vector<std::vector<std::vector<uint8_t>>> seen_;        // [node][rank][j]: a reference kept
  Creators creators_;
};

}  // namespace

RequestSlots assign_request_slots(const FoldedProgram& p) {
  std::vector<uint32_t> at = expand_nodes(p);
  RequestSlots out;
  UnionFind uf = join_shared_creators(p, at);
  number_rings(p, uf, out);
  RefResolver resolver(p, at, out);
  resolver.run();
  for (const auto& [n, r] : resolver.differs_) {
    if (out.problems.size() >= 5) break;
    out.problems.push_back("node " + std::to_string(n) + ", rank " + std::to_string(r) +
                           ": a request reference differs between iterations");
  }
  for (uint32_t size : out.ring_size) {
    out.ring_base.push_back(out.num_slots);
    out.num_slots += size;
  }
  return out;
}

}  // namespace skt::gen
