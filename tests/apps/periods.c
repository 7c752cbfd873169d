/* Refinements that come and go in periods, in the manner of block-refined
 * codes whose refined regions follow a moving feature: a chain of ranks
 * works on a background grid, and each time step exchanges halos with its
 * neighbours on MPI_COMM_WORLD (Irecv, Isend, compute, Waitall) and
 * reduces a residual there. NR refinements take turns, each for a slot of
 * PERIOD / NR steps: at the slot's first step every rank takes part in
 * MPI_Comm_split, the refinement's owners (two neighbouring ranks; the
 * others get MPI_COMM_NULL) exchange halos of the refinement's size on its
 * communicator for the first half of the slot, compute twice as long
 * there and reduce on it, then free it; the second half of the slot is the
 * background alone. So the steps repeat every PERIOD, and a run whose
 * step count is not a multiple of it (the default: 2.5 periods) folds to
 * a loop of two periods and a tail.
 * usage: periods [STEPS [WORK [PERIOD]]] (default 100 steps, WORK 400000
 * iterations of busy() per step on the background, PERIOD 40) */
#include "applog.h"

enum { NR = 4, BG = 256, MAXN = 1024 };

static double sbuf[MAXN], rbuf[2][MAXN];

/* Whether `rank` owns refinement g (two neighbouring ranks of `size`). */
static int owns(int rank, int size, int g) {
  int lo = g * size / NR, hi = lo + 1 < size ? lo + 1 : lo;
  return rank >= lo && rank <= hi;
}

/* A halo exchange with the chain's neighbours on comm (me of n), `work`
 * computed while the messages travel. */
static double halo(MPI_Comm comm, int me, int n, int count, int work) {
  MPI_Request req[4];
  int k = 0;
  if (me > 0) MPI_Irecv(rbuf[0], count, MPI_DOUBLE, me - 1, 3, comm, &req[k++]);
  if (me + 1 < n) MPI_Irecv(rbuf[1], count, MPI_DOUBLE, me + 1, 3, comm, &req[k++]);
  for (int i = 0; i < count; ++i) sbuf[i] = me + 0.001 * i;
  if (me > 0) MPI_Isend(sbuf, count, MPI_DOUBLE, me - 1, 3, comm, &req[k++]);
  if (me + 1 < n) MPI_Isend(sbuf, count, MPI_DOUBLE, me + 1, 3, comm, &req[k++]);
  double s = busy(work);
  MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
  return s + 1e-9 * (rbuf[0][0] + rbuf[1][0]);
}

/* One time step: the background, and refinement g where `fine` is open. */
static double step(int rank, int size, int work, MPI_Comm fine, int g) {
  double s = halo(MPI_COMM_WORLD, rank, size, BG, work), res, all;
  if (fine != MPI_COMM_NULL) {
    int me, n;
    MPI_Comm_rank(fine, &me);
    MPI_Comm_size(fine, &n);
    double local = halo(fine, me, n, 64 * (g + 1), 2 * work), sum;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, fine);
    s += 1e-9 * sum;
  }
  res = 1.0 / (1.0 + s);
  MPI_Allreduce(&res, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  const int steps = app_iters(argc, argv, 100);
  const int work = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 400000;
  const int period = argc > 3 && atoi(argv[3]) >= 2 * NR ? atoi(argv[3]) : 40;
  const int slot = period / NR, life = slot / 2;
  MPI_Comm fine = MPI_COMM_NULL;
  double t = 0;
  for (int it = 0; it < steps; ++it) {
    const int at = it % period, g = at / slot < NR ? at / slot : NR - 1, age = at - g * slot;
    if (age == 0) MPI_Comm_split(MPI_COMM_WORLD, owns(rank, size, g) ? 0 : MPI_UNDEFINED, rank, &fine);
    t += step(rank, size, work, age < life ? fine : MPI_COMM_NULL, g);
    if (age == life - 1 && fine != MPI_COMM_NULL) MPI_Comm_free(&fine);
  }
  if (fine != MPI_COMM_NULL) MPI_Comm_free(&fine);
  if (rank == 0) printf("periods: %d ranks, %d steps, period %d, checksum %.6f\n", size, steps, period, t);
  MPI_Finalize();
  return 0;
}
