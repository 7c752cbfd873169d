/* NPB BT's and SP's pipelined line solves on a ring: every iteration runs
 * NSTAGE stages; at stage s a rank works on cell (2 * rank + s) mod NSTAGE,
 * first receiving what its predecessor sent about the cell it worked on one
 * stage before (Irecv, Wait for its own previous send, Wait), then sending
 * its own cell's result on (Isend; not at the last stage). The tag names the
 * cell, as BT's WEST + jp + kp * NCELLS does, so it wraps modulo the cell
 * count: over the stages it follows no a + b * s rule, and the stage loop
 * folds only with a per-iteration tag table (compress's cycle rule). The
 * cells are of one size, as BT's are, so every stage computes as long (with
 * uneven stages the tags stay exact: tests/unit/test_fold.cpp). */
#include "applog.h"

enum { NSTAGE = 5, N = 256, TAG = 100 };

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  int succ = (rank + 1) % size, pred = (rank + size - 1) % size;
  const int iters = app_iters(argc, argv, 6);
  double out[N], in[N], acc = 0;
  for (int i = 0; i < N; ++i) out[i] = rank + i * 1e-3;
  for (int it = 0; it < iters; ++it) {
    MPI_Request sreq = MPI_REQUEST_NULL, rreq;
    char slab[32] = "", rlab[32];
    for (int s = 0; s < NSTAGE; ++s) {
      int cell = (2 * rank + s) % NSTAGE;
      if (s > 0) {
        int pcell = (2 * pred + s - 1) % NSTAGE; /* the cell pred sent about at stage s - 1 */
        snprintf(rlab, sizeof rlab, "r%d_%d", it, s);
        MPI_Irecv(in, N, MPI_DOUBLE, pred, TAG + pcell, MPI_COMM_WORLD, &rreq);
        LOG("MPI_Irecv peer=%d tag=%d count=%d bytes=%d comm=world request=%s", pred, TAG + pcell, N, N * 8, rlab);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        LOG("MPI_Wait completed=%s", slab);
        MPI_Wait(&rreq, MPI_STATUS_IGNORE);
        LOG("MPI_Wait completed=%s", rlab);
        out[0] += in[1];
      }
      acc += busy(300000);
      if (s < NSTAGE - 1) {
        snprintf(slab, sizeof slab, "s%d_%d", it, s);
        MPI_Isend(out, N, MPI_DOUBLE, succ, TAG + cell, MPI_COMM_WORLD, &sreq);
        LOG("MPI_Isend peer=%d tag=%d count=%d bytes=%d comm=world request=%s", succ, TAG + cell, N, N * 8, slab);
      }
    }
    /* the iteration's end, as BT's next copy_faces: the stages are a loop of their own */
    double local = out[0], sum;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    LOG("MPI_Allreduce count=1 bytes=8 comm=world");
    out[1] = sum * 1e-9;
  }
  double total = 0;
  acc += out[0];
  MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  LOG("MPI_Reduce root=0 count=1 bytes=8 comm=world");
  if (rank == 0) printf("stages: checksum %.6f\n", total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
