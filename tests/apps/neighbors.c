/* Neighbourhood collectives on a 3-D Cartesian grid (periodic in the first
 * dimension where it has more than 2 ranks; MPI_PROC_NULL neighbours at
 * the other edges), as a stencil
 * code with MPI-3's collectives instead of point-to-point calls. Each step:
 * computation, MPI_Neighbor_alltoall of the faces; every third step the
 * counts of an uneven exchange (MPI_Neighbor_alltoall of ints), then
 * MPI_Ineighbor_alltoallv overlapped with computation; MPI_Neighbor_allgather
 * of a scalar; at the end MPI_Neighbor_allgatherv, MPI_Ineighbor_allgather(v)
 * and MPI_Ineighbor_alltoall once each. usage: neighbors [STEPS] (default 20). */
#include <string.h>

#include "applog.h"

enum { kDims = 3, kNeighbours = 2 * kDims, kFace = 64, kMost = kFace + 3 * 16 };

static int step_count(int it, int k, int rank) { return kFace + ((it + k + rank) % 3) * 16; }

/* "a,b,c" of n ints */
static const char* joined(const int* v, int n) {
  static char s[256];
  int pos = 0;
  s[0] = 0;
  for (int i = 0; i < n; ++i) pos += snprintf(s + pos, sizeof s - pos, "%s%d", i ? "," : "", v[i]);
  return s;
}

int main(int argc, char** argv) {
  int rank, size, dims[kDims] = {0, 0, 0}, periods[kDims] = {0, 0, 0};
  MPI_Comm grid;
  app_start(&argc, &argv, &rank, &size);
  MPI_Dims_create(size, kDims, dims);
  /* periodic only where the two neighbours differ: MPI's order of two messages
   * from one rank to the same one is ambiguous (Open MPI 4.1 truncates) */
  periods[0] = dims[0] > 2;
  MPI_Cart_create(MPI_COMM_WORLD, kDims, dims, periods, 0, &grid);
  LOG("MPI_Cart_create comm=world new_comm=grid");
  static double out[kNeighbours * kMost], in[kNeighbours * kMost];
  for (int i = 0; i < kNeighbours * kMost; ++i) out[i] = rank + 1e-3 * i;
  const int bytes = kFace * 8 * kNeighbours;
  double acc = 0;
  const int steps = app_iters(argc, argv, 20);
  for (int it = 0; it < steps; ++it) {
    acc += busy(20000);
    MPI_Neighbor_alltoall(out, kFace, MPI_DOUBLE, in, kFace, MPI_DOUBLE, grid);
    LOG("MPI_Neighbor_alltoall count=%d bytes=%d count2=%d bytes2=%d comm=grid", kFace, bytes, kFace, bytes);
    if (it % 3 == 0) {
      int sc[kNeighbours], rc[kNeighbours] = {0}, sd[kNeighbours], rd[kNeighbours];
      for (int k = 0; k < kNeighbours; ++k) sc[k] = step_count(it, k, rank), sd[k] = rd[k] = k * kMost;
      MPI_Neighbor_alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, grid);
      LOG("MPI_Neighbor_alltoall count=1 bytes=%d count2=1 bytes2=%d comm=grid", 4 * kNeighbours, 4 * kNeighbours);
      MPI_Request r;
      MPI_Ineighbor_alltoallv(out, sc, sd, MPI_DOUBLE, in, rc, rd, MPI_DOUBLE, grid, &r);
      char counts[256];
      strcpy(counts, joined(sc, kNeighbours));
      LOG("MPI_Ineighbor_alltoallv counts=%s counts2=%s comm=grid request=v%d", counts, joined(rc, kNeighbours), it);
      acc += busy(10000);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      LOG("MPI_Wait completed=v%d", it);
    }
    acc += in[0] * 1e-9;
    MPI_Neighbor_allgather(&acc, 1, MPI_DOUBLE, in, 1, MPI_DOUBLE, grid);
    LOG("MPI_Neighbor_allgather count=1 bytes=%d count2=1 bytes2=%d comm=grid", 8 * kNeighbours, 8 * kNeighbours);
  }
  int ones[kNeighbours], displs[kNeighbours];
  for (int k = 0; k < kNeighbours; ++k) ones[k] = 1, displs[k] = k;
  MPI_Neighbor_allgatherv(&acc, 1, MPI_DOUBLE, in, ones, displs, MPI_DOUBLE, grid);
  LOG("MPI_Neighbor_allgatherv count=1 bytes=%d counts2=%s comm=grid", 8 * kNeighbours, joined(ones, kNeighbours));
  MPI_Request r[3];
  MPI_Ineighbor_allgather(&acc, 1, MPI_DOUBLE, in, 1, MPI_DOUBLE, grid, &r[0]);
  LOG("MPI_Ineighbor_allgather count=1 count2=1 comm=grid request=g");
  MPI_Ineighbor_allgatherv(&acc, 1, MPI_DOUBLE, in + kNeighbours, ones, displs, MPI_DOUBLE, grid, &r[1]);
  LOG("MPI_Ineighbor_allgatherv count=1 counts2=%s comm=grid request=gv", joined(ones, kNeighbours));
  MPI_Ineighbor_alltoall(out, 2, MPI_DOUBLE, in + 2 * kNeighbours, 2, MPI_DOUBLE, grid, &r[2]);
  LOG("MPI_Ineighbor_alltoall count=2 bytes=%d count2=2 comm=grid request=a", 16 * kNeighbours);
  MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  LOG("MPI_Waitall completed=g,gv,a");
  double total = 0;
  MPI_Allreduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, grid);
  LOG("MPI_Allreduce count=1 bytes=8 comm=grid");
  MPI_Comm_free(&grid);
  LOG("MPI_Comm_free comm=grid");
  if (rank == 0) printf("neighbors: %d steps on %d x %d x %d, sum %.6f\n", steps, dims[0], dims[1], dims[2], total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
