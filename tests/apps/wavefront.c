/* NPB LU's shape: SSOR iterations on a px x py grid of ranks that is not
 * periodic (MPI_Dims_create; the ranks on the grid's edges have two or three
 * neighbours, its corners two). Every iteration:
 *  - the right-hand side's halo exchange (LU's exchange_3): along each axis,
 *    receive from one side and send to the other, wait, then the other way,
 *    only where the neighbour exists;
 *  - the lower triangular sweep (blts) over NZ planes: receive from north and
 *    west, compute the plane, send to south and east, a pipeline that starts
 *    at rank 0 and runs down the grid's diagonal;
 *  - the upper sweep (buts) back: from south and east, to north and west;
 *  - every 5th iteration and the last, the residual's MPI_Allreduce (l2norm).
 * With few planes per sweep (NZ near px + py, as NPB LU class S on 8 or 16
 * ranks) a sweep's pipeline is as deep as it is long: the ranks reach the
 * same call at times that differ by whole planes, and merging the ranks'
 * calls by time pairs one rank's plane with another's next ones, differently
 * in every iteration. usage: wavefront [ITERS [NZ [WORK]]] */
#include "applog.h"

enum { PLANE = 40, FACE = 400 };

static int rank, size;
static double plane_in[PLANE], plane_out[PLANE], face_in[FACE], face_out[FACE];

static void recv_plane(int from, int tag) {
  if (from < 0) return;
  MPI_Recv(plane_in, PLANE, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  LOG("MPI_Recv peer=%d tag=%d count=%d bytes=%d comm=world", from, tag, PLANE, PLANE * 8);
  plane_out[0] += plane_in[1] * 1e-3;
}

static void send_plane(int to, int tag) {
  if (to < 0) return;
  MPI_Send(plane_out, PLANE, MPI_DOUBLE, to, tag, MPI_COMM_WORLD);
  LOG("MPI_Send peer=%d tag=%d count=%d bytes=%d comm=world", to, tag, PLANE, PLANE * 8);
}

/* One direction of the halo exchange: from `from` (if any), to `to` (if any). */
static void exchange(int from, int to, int tag, int it, int dir) {
  MPI_Request req = MPI_REQUEST_NULL;
  char lab[32];
  snprintf(lab, sizeof lab, "h%d_%d", it, dir);
  if (from >= 0) {
    MPI_Irecv(face_in, FACE, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, &req);
    LOG("MPI_Irecv peer=%d tag=%d count=%d bytes=%d comm=world request=%s", from, tag, FACE, FACE * 8, lab);
  }
  if (to >= 0) {
    MPI_Send(face_out, FACE, MPI_DOUBLE, to, tag, MPI_COMM_WORLD);
    LOG("MPI_Send peer=%d tag=%d count=%d bytes=%d comm=world", to, tag, FACE, FACE * 8);
  }
  if (from >= 0) {
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    LOG("MPI_Wait completed=%s", lab);
    face_out[0] += face_in[1] * 1e-3;
  }
}

int main(int argc, char** argv) {
  app_start(&argc, &argv, &rank, &size);
  const int iters = app_iters(argc, argv, 20);
  const int nz = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 6;
  const int work = argc > 3 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 100000;
  int dims[2] = {0, 0};
  MPI_Dims_create(size, 2, dims);
  const int px = dims[1], x = rank % px, y = rank / px, py = dims[0];
  const int west = x > 0 ? rank - 1 : -1, east = x < px - 1 ? rank + 1 : -1;
  const int north = y > 0 ? rank - px : -1, south = y < py - 1 ? rank + px : -1;
  double acc = 0;
  for (int i = 0; i < PLANE; ++i) plane_out[i] = rank + i * 1e-3;
  for (int i = 0; i < FACE; ++i) face_out[i] = rank - i * 1e-3;
  for (int it = 0; it < iters; ++it) {
    acc += busy(4 * work);
    exchange(north, south, 1, it, 0);
    exchange(south, north, 2, it, 1);
    exchange(west, east, 3, it, 2);
    exchange(east, west, 4, it, 3);
    acc += busy(2 * work);
    for (int k = 1; k < nz - 1; ++k) { /* blts */
      recv_plane(north, 5);
      recv_plane(west, 6);
      acc += busy(work);
      send_plane(south, 5);
      send_plane(east, 6);
    }
    for (int k = nz - 2; k > 0; --k) { /* buts */
      recv_plane(south, 7);
      recv_plane(east, 8);
      acc += busy(work);
      send_plane(north, 7);
      send_plane(west, 8);
    }
    if (it % 5 == 4 || it == iters - 1) {
      double local = plane_out[0], sum;
      MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      LOG("MPI_Allreduce count=1 bytes=8 comm=world");
      plane_out[1] = sum * 1e-9;
    }
  }
  double total = 0;
  acc += plane_out[0];
  MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  LOG("MPI_Reduce root=0 count=1 bytes=8 comm=world");
  if (rank == 0) printf("wavefront: checksum %.6f\n", total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
