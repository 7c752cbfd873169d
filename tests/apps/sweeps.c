/* NPB BT's and SP's shape on a px x py torus of ranks, with its call sites:
 * every iteration exchanges faces with the four neighbours, each receive and
 * send written out on a line of its own (as BT's copy_faces), then sweeps
 * along x and then along y, each sweep a function of its own (x_solve,
 * y_solve) running NSTAGE pipelined forward stages (receive from the
 * predecessor, send on, work, wait for both) whose tags name the direction
 * and the cell, and one backward stage (the back substitution: smaller
 * messages, and work that differs by rank, as BT's cells of unequal size).
 * Folded per call site, every face call and each sweep is a symbol of its
 * own; with the call sites joined (skelgen compress --join-call-sites), the
 * faces become one loop of receives and one of sends whose peers and tags
 * change with the iteration (a cycle), and the two sweeps one loop over the
 * directions whose forward stages' peers and tags change with the direction
 * and the stage (a cycle over the instances). The forward stages compute
 * alike; the backward one, computing by rank, stays a symbol of its own. */
#include "applog.h"

enum { NSTAGE = 3, N = 512, NBACK = 64, FACE = 1000, TAG = 100 };

static int rank, size, px, py;
static double out[N], in[N], face_in[4][N];

static void log_face(const char* call, int peer, int tag, const char* lab) {
  LOG("%s peer=%d tag=%d count=%d bytes=%d comm=world request=%s", call, peer, tag, N, N * 8, lab);
}

/* One sweep: NSTAGE forward stages along one direction (the cell a rank
 * works on at stage s is (rank + s) mod NSTAGE, and the tag names it), then
 * the backward stage (NBACK values back, work by rank). */
#define SWEEP(NAME, DIR)                                                                          \
  static double NAME(int pred, int succ, int it) {                                                \
    double acc = 0;                                                                               \
    for (int s = 0; s <= NSTAGE; ++s) {                                                           \
      MPI_Request rreq, sreq;                                                                     \
      char rlab[32], slab[32];                                                                    \
      int tag_in = TAG + 10 * DIR + (pred + s) % NSTAGE, tag_out = TAG + 10 * DIR + (rank + s) % NSTAGE; \
      int n = s < NSTAGE ? N : NBACK;                                                             \
      snprintf(rlab, sizeof rlab, "%c%d_%d_r", 'x' + DIR, it, s);                                 \
      snprintf(slab, sizeof slab, "%c%d_%d_s", 'x' + DIR, it, s);                                 \
      MPI_Irecv(in, n, MPI_DOUBLE, pred, tag_in, MPI_COMM_WORLD, &rreq);                          \
      LOG("MPI_Irecv peer=%d tag=%d count=%d bytes=%d comm=world request=%s", pred, tag_in, n, n * 8, rlab); \
      MPI_Isend(out, n, MPI_DOUBLE, succ, tag_out, MPI_COMM_WORLD, &sreq);                        \
      LOG("MPI_Isend peer=%d tag=%d count=%d bytes=%d comm=world request=%s", succ, tag_out, n, n * 8, slab); \
      acc += busy(s < NSTAGE ? 200000 : 400000 * (1 + rank % 2));                                 \
      MPI_Wait(&rreq, MPI_STATUS_IGNORE);                                                         \
      LOG("MPI_Wait completed=%s", rlab);                                                         \
      MPI_Wait(&sreq, MPI_STATUS_IGNORE);                                                         \
      LOG("MPI_Wait completed=%s", slab);                                                         \
      out[s] += in[s + 1];                                                                        \
    }                                                                                             \
    return acc;                                                                                   \
  }
SWEEP(x_sweep, 0)
SWEEP(y_sweep, 1)

int main(int argc, char** argv) {
  app_start(&argc, &argv, &rank, &size);
  px = size % 2 == 0 ? 2 : 1;
  py = size / px;
  int x = rank % px, y = rank / px;
  int east = y * px + (x + 1) % px, west = y * px + (x + px - 1) % px;
  int north = ((y + 1) % py) * px + x, south = ((y + py - 1) % py) * px + x;
  const int iters = app_iters(argc, argv, 6);
  double acc = 0;
  for (int i = 0; i < N; ++i) out[i] = rank + i * 1e-3;
  for (int it = 0; it < iters; ++it) {
    MPI_Request req[8];
    char lab[8][32];
    for (int k = 0; k < 8; ++k) snprintf(lab[k], sizeof lab[k], "f%d_%d", it, k);
    acc += busy(300000);
    /* the faces: each call on a line of its own; the tag names the side the data comes from */
    MPI_Irecv(face_in[0], N, MPI_DOUBLE, east, FACE + 1, MPI_COMM_WORLD, &req[0]);
    log_face("MPI_Irecv", east, FACE + 1, lab[0]);
    MPI_Irecv(face_in[1], N, MPI_DOUBLE, west, FACE + 2, MPI_COMM_WORLD, &req[1]);
    log_face("MPI_Irecv", west, FACE + 2, lab[1]);
    MPI_Irecv(face_in[2], N, MPI_DOUBLE, north, FACE + 3, MPI_COMM_WORLD, &req[2]);
    log_face("MPI_Irecv", north, FACE + 3, lab[2]);
    MPI_Irecv(face_in[3], N, MPI_DOUBLE, south, FACE + 4, MPI_COMM_WORLD, &req[3]);
    log_face("MPI_Irecv", south, FACE + 4, lab[3]);
    MPI_Isend(out, N, MPI_DOUBLE, west, FACE + 1, MPI_COMM_WORLD, &req[4]);
    log_face("MPI_Isend", west, FACE + 1, lab[4]);
    MPI_Isend(out, N, MPI_DOUBLE, east, FACE + 2, MPI_COMM_WORLD, &req[5]);
    log_face("MPI_Isend", east, FACE + 2, lab[5]);
    MPI_Isend(out, N, MPI_DOUBLE, south, FACE + 3, MPI_COMM_WORLD, &req[6]);
    log_face("MPI_Isend", south, FACE + 3, lab[6]);
    MPI_Isend(out, N, MPI_DOUBLE, north, FACE + 4, MPI_COMM_WORLD, &req[7]);
    log_face("MPI_Isend", north, FACE + 4, lab[7]);
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    LOG("MPI_Waitall completed=%s,%s,%s,%s,%s,%s,%s,%s", lab[0], lab[1], lab[2], lab[3], lab[4], lab[5], lab[6],
        lab[7]);
    out[0] += face_in[0][1] + face_in[3][2];
    acc += x_sweep(west, east, it);
    acc += y_sweep(south, north, it);
    double local = out[0], sum;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    LOG("MPI_Allreduce count=1 bytes=8 comm=world");
    out[1] = sum * 1e-9;
  }
  double total = 0;
  acc += out[0];
  MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  LOG("MPI_Reduce root=0 count=1 bytes=8 comm=world");
  if (rank == 0) printf("sweeps: checksum %.6f\n", total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
