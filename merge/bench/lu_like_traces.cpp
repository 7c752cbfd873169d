// Writes a synthetic LU-like trace: P ranks on a px x py grid, ITER SSOR
// iterations, each a lower-triangular wavefront sweep over NZ planes
// (receive from north and west, send to south and east, where those
// neighbours exist), the upper sweep back, a halo exchange with the four
// neighbours (Irecv/Isend/Waitall) and an Allreduce every 5 iterations. Ranks
// on the grid's edges make fewer calls than interior ones: the boundary
// differences merge has to handle. With P=16, ITER=249, NZ=162 an interior
// rank makes about 324,000 calls (NPB LU class C on 16 ranks: 324,355).
//   usage: lu_like_traces OUT_DIR P ITER [NZ]
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "skel/skel_funcs.h"
#include "skel/trace_writer.h"
#include "synthetic_rank.h"

using namespace skt;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR P ITER [NZ]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  int P = std::atoi(argv[2]), iters = std::atoi(argv[3]), nz = argc > 4 ? std::atoi(argv[4]) : 162;
  int px = 1;
  while (px * px < P) px *= 2;
  if (px * px > P) px /= 2;
  int py = P / px;
  if (px * py != P || P < 1 || iters < 1 || nz < 1) {
    std::fprintf(stderr, "lu_like_traces: P must be a power of two, ITER and NZ positive\n");
    return 2;
  }
  mkdir(dir.c_str(), 0755);
  uint64_t total = 0;
  for (int r = 0; r < P; ++r) {
    int row = r / py, col = r % py;
    int north = row > 0 ? r - py : -1, south = row < px - 1 ? r + py : -1;
    int west = col > 0 ? r - 1 : -1, east = col < py - 1 ? r + 1 : -1;
    TraceWriter w;
    if (!bench::open_synthetic_rank(w, "lu_like_traces", dir, r, P, "/synthetic/lu", 16)) return 1;
    std::mt19937 rng(static_cast<unsigned>(r));
    int64_t t = 0;
    int64_t req = 0;
    auto call = [&](uint32_t func, int site, int64_t peer, int64_t tag, int64_t count, int64_t gap) {
      w.begin_event(func, static_cast<uint32_t>(site));
      w.put_int(Field::kComm, kCommWorld);
      if (peer != kNone) w.put_int(Field::kPeer, peer);
      if (tag != kNone) w.put_int(Field::kTag, tag);
      if (count != kNone) {
        w.put_int(Field::kCount, count);
        w.put_int(Field::kDtype, bench::kDoubleType);
      }
      if (func == kFunc_MPI_Isend || func == kFunc_MPI_Irecv) {
        int64_t id = req++;
        w.put_list(Field::kReqs, &id, 1);
      }
      t += gap + static_cast<int64_t>(rng() % 64);
      int64_t dur = 300 + static_cast<int64_t>(rng() % 200);
      w.end_event(t, t + dur);
      t += dur;
    };
    call(kFunc_MPI_Init, 0, kNone, kNone, kNone, 0);
    for (int it = 0; it < iters; ++it) {
      for (int k = 1; k < nz - 1; ++k) {  // lower sweep: wavefront from the north-west
        if (north >= 0) call(kFunc_MPI_Recv, 1, north, 1, 5 * 8, 200);
        if (west >= 0) call(kFunc_MPI_Recv, 2, west, 2, 5 * 8, 100);
        if (south >= 0) call(kFunc_MPI_Send, 3, south, 1, 5 * 8, 4000);
        if (east >= 0) call(kFunc_MPI_Send, 4, east, 2, 5 * 8, 100);
      }
      for (int k = nz - 2; k > 0; --k) {  // upper sweep: back from the south-east
        if (south >= 0) call(kFunc_MPI_Recv, 5, south, 3, 5 * 8, 200);
        if (east >= 0) call(kFunc_MPI_Recv, 6, east, 4, 5 * 8, 100);
        if (north >= 0) call(kFunc_MPI_Send, 7, north, 3, 5 * 8, 4000);
        if (west >= 0) call(kFunc_MPI_Send, 8, west, 4, 5 * 8, 100);
      }
      int64_t first = req;
      int nreq = 0;
      for (int nb : {north, south, west, east})
        if (nb >= 0) call(kFunc_MPI_Irecv, 9, nb, 5, 5 * 8 * nz, 100), ++nreq;
      for (int nb : {north, south, west, east})
        if (nb >= 0) call(kFunc_MPI_Isend, 10, nb, 5, 5 * 8 * nz, 100), ++nreq;
      std::vector<int64_t> done;
      for (int q = 0; q < nreq; ++q) done.push_back(first + q);
      w.begin_event(kFunc_MPI_Waitall, 11);
      w.put_list(Field::kReqs, done.data(), done.size());
      t += 50000;
      w.end_event(t, t + 1000);
      t += 1000;
      if (it % 5 == 0) {
        w.begin_event(kFunc_MPI_Allreduce, 12);
        w.put_int(Field::kComm, kCommWorld);
        w.put_int(Field::kCount, 5);
        w.put_int(Field::kDtype, bench::kDoubleType);
        t += 20000;
        w.end_event(t, t + 3000);
        t += 3000;
      }
    }
    call(kFunc_MPI_Finalize, 13, kNone, kNone, kNone, 1000);
    if (!w.close(EndStatus::kFinalized)) {
      std::fprintf(stderr, "lu_like_traces: %s\n", w.error().c_str());
      return 1;
    }
    total += w.events();
    if (r == py + 1 || (P < 4 && r == 0))
      std::printf("rank %d (interior): %llu events\n", r, static_cast<unsigned long long>(w.events()));
  }
  std::printf("%d ranks (%dx%d), %d iterations, %d planes: %llu events in all\n", P, px, py, iters, nz,
              static_cast<unsigned long long>(total));
  return 0;
}
