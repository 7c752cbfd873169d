#include "requests.h"

#include <numeric>

#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skt::gen {

bool creates_request(uint32_t f) {
  switch (f) {
    case kFunc_MPI_Isend: case kFunc_MPI_Issend: case kFunc_MPI_Ibsend: case kFunc_MPI_Irsend:
    case kFunc_MPI_Irecv:
    case kFunc_MPI_Send_init: case kFunc_MPI_Ssend_init: case kFunc_MPI_Bsend_init: case kFunc_MPI_Rsend_init:
    case kFunc_MPI_Recv_init:
    case kFunc_MPI_Ibarrier: case kFunc_MPI_Ibcast: case kFunc_MPI_Ireduce: case kFunc_MPI_Iallreduce:
    case kFunc_MPI_Igather: case kFunc_MPI_Igatherv: case kFunc_MPI_Iscatter: case kFunc_MPI_Iscatterv:
    case kFunc_MPI_Iallgather: case kFunc_MPI_Iallgatherv: case kFunc_MPI_Ialltoall: case kFunc_MPI_Ialltoallv:
    case kFunc_MPI_Ialltoallw: case kFunc_MPI_Ireduce_scatter: case kFunc_MPI_Ireduce_scatter_block:
    case kFunc_MPI_Iscan: case kFunc_MPI_Iexscan:
      return true;
    default:
      return false;
  }
}

bool uses_requests(uint32_t f) {
  switch (f) {
    case kFunc_MPI_Wait: case kFunc_MPI_Waitall: case kFunc_MPI_Waitany: case kFunc_MPI_Waitsome:
    case kFunc_MPI_Test: case kFunc_MPI_Testall: case kFunc_MPI_Testany: case kFunc_MPI_Testsome:
    case kFunc_MPI_Start: case kFunc_MPI_Startall: case kFunc_MPI_Request_free:
      return true;
    default:
      return false;
  }
}

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

RequestSlots assign_request_slots(const FoldedProgram& p) {
  const MergedTrace& m = p.symbols;
  const size_t N = p.nodes.size();
  auto func_of = [&](uint32_t node) { return m.identities[m.events[p.nodes[node].symbol].identity].func; };
  RequestSlots out;
  out.refs.resize(N);
  // creator[node][rank][j]: the creating node of reference j (first seen), or -1
  std::vector<std::vector<std::vector<int64_t>>> creator(N);
  UnionFind uf(N);
  std::vector<uint32_t> at = expand_nodes(p);
  for (size_t q = 0; q < at.size(); ++q) {
    uint32_t w = at[q];
    const FoldedNode& node = p.nodes[w];
    const MergedEvent& e = m.events[static_cast<size_t>(node.symbol)];
    if (!uses_requests(func_of(w))) continue;
    if (creator[w].empty()) creator[w].resize(m.world_size);
    for (uint32_t r : e.ranks) {
      const std::vector<int64_t>& refs = m.list(e, ListField::reqrefs, r);
      auto& mine = creator[w][r];
      if (mine.size() < refs.size()) mine.resize(refs.size(), -2);  // -2: not seen yet
      for (size_t j = 0; j < refs.size(); ++j) {
        int64_t d = refs[j];
        int64_t c = -1;
        if (d >= 0 && static_cast<size_t>(d) <= q) {
          uint32_t cn = at[q - static_cast<size_t>(d)];
          if (creates_request(func_of(cn))) c = cn;
        }
        if (mine[j] == -2 || mine[j] == -1) mine[j] = c;
        else if (c >= 0 && c != mine[j]) uf.join(static_cast<uint32_t>(c), static_cast<uint32_t>(mine[j]));
      }
    }
  }
  out.slot_of_node.assign(N, -1);
  std::vector<int32_t> slot_of_root(N, -1);
  for (uint32_t n = 0; n < N; ++n) {
    if (p.nodes[n].is_loop() || !creates_request(func_of(n))) continue;
    uint32_t root = uf.find(n);
    if (slot_of_root[root] < 0) slot_of_root[root] = static_cast<int32_t>(out.num_slots++);
    out.slot_of_node[n] = slot_of_root[root];
  }
  for (uint32_t w = 0; w < N; ++w) {
    if (creator[w].empty()) continue;
    out.refs[w].resize(m.world_size);
    for (uint32_t r = 0; r < m.world_size; ++r)
      for (int64_t c : creator[w][r]) out.refs[w][r].push_back(c >= 0 ? out.slot_of_node[static_cast<size_t>(c)] : -1);
  }
  return out;
}

}  // namespace skt::gen
