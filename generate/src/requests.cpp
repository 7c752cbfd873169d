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
  // Position q holds event e: a creating call adds to its ranks' requests.
  void made(size_t q, const MergedEvent& e, uint32_t func) {
    for (uint32_t r : e.ranks) made_[r][creates_persistent_request(func)].push_back(q);
  }
  // The positions of the calls that made the requests e names for rank r
  // (kUnknown: not in the trace), from the folded program's reqback.
  std::vector<size_t> where(const MergedEvent& e, uint32_t r) const {
    std::vector<size_t> out;
    if (!e.find_list(ListField::reqback)) return out;
    for (int64_t b : m_.list(e, ListField::reqback, r)) {
      const std::vector<size_t>& mine = made_[r][b & 1];
      size_t k = b > 0 ? static_cast<size_t>(b / 2) : 0;
      out.push_back(k > 0 && k <= mine.size() ? mine[mine.size() - k] : kUnknown);
    }
    return out;
  }

 private:
  const MergedTrace& m_;
  std::vector<std::array<std::vector<size_t>, 2>> made_;  // per rank: [persistent] positions of its creating calls
};

namespace {

const Identity& identity_at(const FoldedProgram& p, uint32_t node) {
  const MergedTrace& m = p.symbols;
  return m.identities[m.events[p.nodes[node].symbol].identity];
}
uint32_t func_of(const FoldedProgram& p, uint32_t node) { return identity_at(p, node).func; }

// Pass 1: which creating nodes a reference reaches. Where one reference of
// one rank reaches different creating nodes at different positions, those
// nodes are joined (they share a ring). at: expand_nodes(p).
UnionFind join_shared_creators(const FoldedProgram& p, const std::vector<uint32_t>& at) {
  const MergedTrace& m = p.symbols;
  const size_t N = p.nodes.size();
  std::vector<std::vector<std::vector<int64_t>>> first(N);  // [node][rank][j]: creator first seen
  UnionFind uf(N);
  Creators creators(m);
  for (size_t q = 0; q < at.size(); ++q) {
    uint32_t w = at[q];
    const MergedEvent& e = m.events[static_cast<size_t>(p.nodes[w].symbol)];
    if (creates_request(func_of(p, w))) creators.made(q, e, func_of(p, w));
    if (!uses_requests(func_of(p, w))) continue;
    if (first[w].empty()) first[w].resize(m.world_size);
    for (uint32_t r : e.ranks) {
      std::vector<size_t> refs = creators.where(e, r);
      auto& mine = first[w][r];
      if (mine.size() < refs.size()) mine.resize(refs.size(), -1);
      for (size_t j = 0; j < refs.size(); ++j) {
        if (refs[j] == Creators::kUnknown) continue;
        uint32_t c = at[refs[j]];
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
// references that differ (out.problems, five at most). Needs the rings
// numbered (number_rings).
class RefResolver {
 public:
  RefResolver(const FoldedProgram& p, const std::vector<uint32_t>& at, RequestSlots& out)
      : p_(p), m_(p.symbols), at_(at), out_(out), made_(m_.world_size, std::vector<uint64_t>(out.ring_size.size(), 0)),
        instance_(m_.world_size), seen_(p.nodes.size()), creators_(m_) {}

  void run() {
    out_.refs.assign(p_.nodes.size(), {});
    for (size_t q = 0; q < at_.size(); ++q) {
      uint32_t n = at_[q];
      uint32_t f = func_of(p_, n);
      const MergedEvent& e = m_.events[static_cast<size_t>(p_.nodes[n].symbol)];
      if (creates_request(f)) {
        creators_.made(q, e, f);
        int32_t g = out_.ring_of_node[n];
        for (uint32_t r : e.ranks) instance_[r][q] = made_[r][static_cast<size_t>(g)]++;
        continue;
      }
      if (!uses_requests(f)) continue;
      if (out_.refs[n].empty()) {
        out_.refs[n].resize(m_.world_size);
        seen_[n].resize(m_.world_size);
      }
      const CallClass cls = call_class(f);  // Start* and Cancel leave their requests pending
      bool completes = cls == CallClass::kComplete || cls == CallClass::kRequestFree;
      for (uint32_t r : e.ranks) resolve(n, e, r, completes);
    }
  }

 private:
  // The references of node n (event e) for rank r.
  void resolve(uint32_t n, const MergedEvent& e, uint32_t r, bool completes) {
    std::vector<size_t> refs = creators_.where(e, r);
    auto& mine = out_.refs[n][r];
    if (mine.size() < refs.size()) {
      mine.resize(refs.size());
      seen_[n][r].resize(refs.size(), 0);
    }
    for (size_t j = 0; j < refs.size(); ++j) {
      RequestRef ref;
      if (refs[j] != Creators::kUnknown) {
        size_t pos = refs[j];
        uint32_t c = at_[pos];
        auto it = instance_[r].find(pos);
        if (creates_request(func_of(p_, c)) && it != instance_[r].end()) {
          ref.ring = out_.ring_of_node[c];
          ref.back = static_cast<uint32_t>(made_[r][static_cast<size_t>(ref.ring)] - it->second);
          uint32_t& size = out_.ring_size[static_cast<size_t>(ref.ring)];
          size = std::max(size, ref.back);
          if (completes && !creates_persistent_request(func_of(p_, c))) instance_[r].erase(it);
        }
      }
      if (!seen_[n][r][j]) {
        mine[j] = ref;
        seen_[n][r][j] = 1;
      } else if (!(mine[j] == ref) && differs_.size() < kMaxDiffering) {
        differs_.emplace_back(n, r);
      }
    }
  }

  const FoldedProgram& p_;
  const MergedTrace& m_;
  const std::vector<uint32_t>& at_;
  RequestSlots& out_;

 public:
  // (node, rank) where a reference differs between occurrences: problems,
  // unless the ring is a pool (mark_pools), whose references name none
  static constexpr size_t kMaxDiffering = 1000;
  std::vector<std::pair<uint32_t, uint32_t>> differs_;

 private:
  std::vector<std::vector<uint64_t>> made_;                   // [rank][ring]: requests made
  std::vector<std::unordered_map<size_t, uint64_t>> instance_;  // per rank: position -> instance number, pending only
  std::vector<std::vector<std::vector<uint8_t>>> seen_;        // [node][rank][j]: a reference kept
  Creators creators_;
};

// The pools among the rings (RequestSlots::pool): two slots or more, made
// by persistent receives from MPI_ANY_SOURCE of one tag and communicator,
// completed by calls that choose (MPI_Testany ...) one request of it at a
// time, started one at a time. Those completions and starts become pool
// references; others (cancelled requests completed by MPI_Waitall at the
// end) keep naming their slots.
void mark_pools(const FoldedProgram& p, RequestSlots& out) {
  const size_t G = out.ring_size.size();
  std::vector<uint8_t> may(G, 0), taken(G, 0);
  for (size_t g = 0; g < G; ++g) may[g] = out.ring_size[g] >= 2;
  std::vector<const MergedEvent*> first(G, nullptr);  // per ring: its first creating call
  for (uint32_t n = 0; n < out.ring_of_node.size(); ++n) {
    const int32_t g = out.ring_of_node[n];
    if (g < 0) continue;
    const MergedEvent& e = p.symbols.events[static_cast<size_t>(p.nodes[n].symbol)];
    const Identity& id = identity_at(p, n);
    const bool wildcard_recv = call_class(id.func) == CallClass::kRecvInit && id.peer_class == PeerClass::kAnySource;
    if (!wildcard_recv || p.nodes[n].rule(Param::tag)) may[static_cast<size_t>(g)] = 0;
    // the MPI takes the oldest of the receives a message matches: all must match the same ones
    const MergedEvent*& f = first[static_cast<size_t>(g)];
    if (!f) f = &e;
    if (p.symbols.identities[f->identity].comm != id.comm) may[static_cast<size_t>(g)] = 0;
    for (uint32_t r : e.ranks)
      if (std::binary_search(f->ranks.begin(), f->ranks.end(), r) &&
          p.symbols.value(*f, Param::tag, r) != p.symbols.value(e, Param::tag, r))
        may[static_cast<size_t>(g)] = 0;
  }
  auto each_ref = [&](auto&& visit) {
    for (uint32_t n = 0; n < out.refs.size(); ++n)
      for (auto& refs : out.refs[n])
        for (RequestRef& ref : refs)
          if (ref.ring >= 0) visit(n, refs.size(), ref);
  };
  each_ref([&](uint32_t n, size_t k, const RequestRef& ref) {
    const uint32_t f = func_of(p, n);
    const CallClass c = call_class(f);
    const size_t g = static_cast<size_t>(ref.ring);
    const bool one = k == 1;
    if (completion_of(f) == Completion::kChoose && one) taken[g] = 1;
    else if ((completion_of(f) == Completion::kChoose || c == CallClass::kStart) && !one) may[g] = 0;
  });
  out.pool.assign(G, 0);
  for (size_t g = 0; g < G; ++g) out.pool[g] = may[g] && taken[g];
  each_ref([&](uint32_t n, size_t, RequestRef& ref) {
    if (!out.pool[static_cast<size_t>(ref.ring)]) return;
    const uint32_t f = func_of(p, n);
    if (call_class(f) != CallClass::kStart && completion_of(f) != Completion::kChoose) return;
    ref.pool = call_class(f) == CallClass::kStart ? PoolRef::kStart : PoolRef::kTake;
    ref.back = 0;
  });
}

}  // namespace

RequestSlots assign_request_slots(const FoldedProgram& p) {
  std::vector<uint32_t> at = expand_nodes(p);
  RequestSlots out;
  UnionFind uf = join_shared_creators(p, at);
  number_rings(p, uf, out);
  RefResolver resolver(p, at, out);
  resolver.run();
  mark_pools(p, out);
  for (const auto& [n, r] : resolver.differs_) {
    const auto& refs = out.refs[n][r];
    if (out.problems.size() >= 5) break;
    if (std::any_of(refs.begin(), refs.end(), [](const RequestRef& x) { return x.pool != PoolRef::kNo; })) continue;
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
