// A C++ program (std::vector buffers, RAII, a lambda) through the MPI C API:
// Sendrecv ring, MPI_IN_PLACE Allreduce, Isend/Irecv with Waitall, Gather at
// a rotating root.
#include <cstdio>
#include <numeric>
#include <vector>

#include "applog.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  applog_open();
  LOG("MPI_Init");
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  std::vector<double> v(100, rank), w(100), all(static_cast<size_t>(4 * size));
  auto exchange = [&](int it) {
    MPI_Sendrecv(v.data(), 100, MPI_DOUBLE, next, it, w.data(), 100, MPI_DOUBLE, prev, it, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    LOG("MPI_Sendrecv peer=%d tag=%d count=100 bytes=800 peer2=%d tag2=%d comm=world", next, it, prev, it);
  };
  const int iters = app_iters(argc, argv, 5);
  for (int it = 0; it < iters; ++it) {
    exchange(it);
    MPI_Allreduce(MPI_IN_PLACE, w.data(), 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    LOG("MPI_Allreduce count=100 bytes=800 comm=world in_place=1");
    std::vector<MPI_Request> req(2);
    MPI_Irecv(w.data(), 10, MPI_DOUBLE, prev, 50, MPI_COMM_WORLD, &req[0]);
    LOG("MPI_Irecv peer=%d tag=50 count=10 bytes=80 comm=world request=r%d", prev, it);
    MPI_Isend(v.data(), 10, MPI_DOUBLE, next, 50, MPI_COMM_WORLD, &req[1]);
    LOG("MPI_Isend peer=%d tag=50 count=10 bytes=80 comm=world request=s%d", next, it);
    MPI_Waitall(2, req.data(), MPI_STATUSES_IGNORE);
    LOG("MPI_Waitall completed=r%d,s%d", it, it);
    int root = it % size;
    MPI_Gather(v.data(), 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, root, MPI_COMM_WORLD);
    LOG("MPI_Gather root=%d count=4 bytes=32 comm=world", root);
  }
  if (rank == 0) std::printf("cxx_vector: %.1f\n", std::accumulate(w.begin(), w.end(), 0.0));
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
