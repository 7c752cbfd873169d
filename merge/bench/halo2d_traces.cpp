// Writes a synthetic 2-D halo trace: P ranks on a px x py Cartesian grid
// (MPI_Cart_create over MPI_COMM_WORLD, not periodic), ITER iterations, each
// an exchange with the four grid neighbours on the Cartesian communicator
// (Irecv x 4, Isend x 4, Waitall; MPI_PROC_NULL off the grid's edges, as
// MPI_Cart_shift gives) after a computation, and an Allreduce every
// kReduceEvery iterations. Every rank makes the same calls: each merged
// event holds all ranks, and the peers are Cartesian neighbours (the merge's
// kCart rule). The scaling benchmark in ranks (merge/bench/scale.sh) uses it
// beside lu_like_traces.
//   usage: halo2d_traces OUT_DIR P ITER
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "skel/skel_funcs.h"
#include "skel/trace_writer.h"
#include "synthetic_rank.h"

using namespace skt;

namespace {

constexpr int kReduceEvery = 10;
constexpr uint32_t kCartComm = kFirstUserComm;  // the rank-local id of the Cartesian communicator
using bench::kDoubleType;
constexpr int64_t kHaloDoubles = 512;
constexpr int64_t kComputeNs = 200000, kJitterNs = 64, kCallNs = 300, kCallJitterNs = 200;
enum Site : uint32_t { kInitSite, kCartSite, kIrecvSite, kIsendSite, kWaitSite, kReduceSite, kFinalizeSite, kSites };

struct Grid {
  int px = 1, py = 1;
  // The world rank at (row, col), or MPI_PROC_NULL off the grid.
  int64_t at(int row, int col) const {
    return row < 0 || row >= px || col < 0 || col >= py ? kProcNull : static_cast<int64_t>(row) * py + col;
  }
};

// The squarest px x py = P with px a power of two (P a power of two).
bool grid_of(int P, Grid& g) {
  while (g.px * g.px < P) g.px *= 2;
  if (g.px * g.px > P) g.px /= 2;
  g.py = P / g.px;
  return P >= 1 && g.px * g.py == P;
}

class RankWriter {
 public:
  RankWriter(TraceWriter& w, int rank) : w_(w), rng_(static_cast<unsigned>(rank)) {}
  void begin(uint32_t func, Site site, uint32_t comm) {
    w_.begin_event(func, site);
    if (comm != kNone32) w_.put_int(Field::kComm, comm);
  }
  void end(int64_t gap_ns) {
    t_ += gap_ns + static_cast<int64_t>(rng_() % kJitterNs);
    const int64_t dur = kCallNs + static_cast<int64_t>(rng_() % kCallJitterNs);
    w_.end_event(t_, t_ + dur);
    t_ += dur;
  }
  int64_t next_request() { return request_++; }
  static constexpr uint32_t kNone32 = ~0u;

 private:
  TraceWriter& w_;
  std::mt19937 rng_;
  int64_t t_ = 0, request_ = 0;
};

void write_cart_create(TraceWriter& w, RankWriter& rw, const Grid& g, int P) {
  std::vector<int64_t> members(static_cast<size_t>(P));
  for (int q = 0; q < P; ++q) members[static_cast<size_t>(q)] = q;
  w.define_comm(kCartComm, kCommWorld, kFunc_MPI_Cart_create, members.data(), members.size());
  const int64_t dims[] = {g.px, g.py}, periods[] = {0, 0};
  rw.begin(kFunc_MPI_Cart_create, kCartSite, kCommWorld);
  w.put_list(Field::kDims, dims, 2);
  w.put_list(Field::kPeriods, periods, 2);
  w.put_int(Field::kNewComm, kCartComm);
  rw.end(0);
}

void write_exchange(TraceWriter& w, RankWriter& rw, const std::vector<int64_t>& neighbours) {
  std::vector<int64_t> requests;
  for (uint32_t func : {kFunc_MPI_Irecv, kFunc_MPI_Isend})
    for (int64_t nb : neighbours) {
      rw.begin(func, func == kFunc_MPI_Irecv ? kIrecvSite : kIsendSite, kCartComm);
      w.put_int(Field::kPeer, nb);
      w.put_int(Field::kTag, 0);
      w.put_int(Field::kCount, kHaloDoubles);
      w.put_int(Field::kDtype, kDoubleType);
      requests.push_back(rw.next_request());
      w.put_list(Field::kReqs, &requests.back(), 1);
      rw.end(requests.size() == 1 ? kComputeNs : 0);
    }
  rw.begin(kFunc_MPI_Waitall, kWaitSite, RankWriter::kNone32);
  w.put_list(Field::kReqs, requests.data(), requests.size());
  rw.end(0);
}

void write_allreduce(TraceWriter& w, RankWriter& rw) {
  rw.begin(kFunc_MPI_Allreduce, kReduceSite, kCartComm);
  w.put_int(Field::kCount, 1);
  w.put_int(Field::kDtype, kDoubleType);
  rw.end(0);
}

bool write_rank(const std::string& dir, int r, int P, int iters, const Grid& g, uint64_t& events) {
  TraceWriter w;
  if (!bench::open_synthetic_rank(w, "halo2d_traces", dir, r, P, "/synthetic/halo2d", kSites)) return false;
  RankWriter rw(w, r);
  const int row = r / g.py, col = r % g.py;
  const std::vector<int64_t> neighbours{g.at(row - 1, col), g.at(row + 1, col), g.at(row, col - 1),
                                        g.at(row, col + 1)};
  rw.begin(kFunc_MPI_Init, kInitSite, RankWriter::kNone32);
  rw.end(0);
  write_cart_create(w, rw, g, P);
  for (int it = 0; it < iters; ++it) {
    write_exchange(w, rw, neighbours);
    if (it % kReduceEvery == 0) write_allreduce(w, rw);
  }
  rw.begin(kFunc_MPI_Finalize, kFinalizeSite, RankWriter::kNone32);
  rw.end(0);
  if (!w.close(EndStatus::kFinalized)) {
    std::fprintf(stderr, "halo2d_traces: %s\n", w.error().c_str());
    return false;
  }
  events += w.events();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR P ITER\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int P = std::atoi(argv[2]), iters = std::atoi(argv[3]);
  Grid g;
  if (!grid_of(P, g) || iters < 1) {
    std::fprintf(stderr, "halo2d_traces: P must be a power of two, ITER positive\n");
    return 2;
  }
  mkdir(dir.c_str(), 0755);
  uint64_t total = 0;
  for (int r = 0; r < P; ++r)
    if (!write_rank(dir, r, P, iters, g, total)) return 1;
  std::printf("%d ranks (%dx%d), %d iterations: %llu events in all\n", P, g.px, g.py, iters,
              static_cast<unsigned long long>(total));
  return 0;
}
