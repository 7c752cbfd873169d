/* Cell-based adaptive refinement in the manner of codes whose halo library
 * tags each update anew: the ranks hold cells of a 1-D decomposition, each
 * time step updates the halo of every state variable (NV updates of Irecv,
 * Isend, Waitall with the neighbours on either side), its tag 2000 plus the
 * updates made since the last rezone, then reduces the time step
 * (Allreduce MIN) and, every fourth step, a mass sum (Allreduce SUM). The
 * mesh is rezoned at irregular intervals (a deterministic draw, the same on
 * every rank: every 3 to 9 steps): the cell counts change (Allgather of the
 * counts), the cells are rebalanced (Allgatherv of the new counts), the halo
 * sizes change, and the tags start again at 2001. The same step thus comes
 * with other tags and sizes each time, and no loop holds the steps (their
 * tags differ): the skeleton leaves steps out, and the kept ones are the
 * same code but for their numbers (docs/generate.md, "Kept runs written
 * once").
 *
 *   rezone [STEPS=200] [WORK=4000]   (WORK: busy() iterations per cell)
 *
 * Prints a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { NV = 3, MAXH = 4096 };

static unsigned rng = 2024u;
static unsigned draw(void) {
  rng = rng * 1103515245u + 12345u;
  return (rng >> 16) & 0x7fff;
}

static double busy(long n) {
  double x = 0.5;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 200;
  const long work = argc > 2 ? atol(argv[2]) : 4000;
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  static double send[2][MAXH], recv[2][MAXH];
  int cells = 200 + 20 * rank, halo = 8, updates = 0, next_rezone = 3 + (int)(draw() % 7);
  double state = 0, dt, mass;
  for (int step = 0; step < steps; ++step) {
    for (int v = 0; v < NV; ++v) {
      MPI_Request req[4];
      const int tag = 2000 + ++updates;
      MPI_Irecv(recv[0], halo, MPI_DOUBLE, left, tag, MPI_COMM_WORLD, &req[0]);
      MPI_Irecv(recv[1], halo, MPI_DOUBLE, right, tag, MPI_COMM_WORLD, &req[1]);
      MPI_Isend(send[0], halo, MPI_DOUBLE, left, tag, MPI_COMM_WORLD, &req[2]);
      MPI_Isend(send[1], halo, MPI_DOUBLE, right, tag, MPI_COMM_WORLD, &req[3]);
      state += busy(work * cells / NV);
      MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    }
    dt = 1.0 / (1.0 + state);
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    if (step % 4 == 3) {
      mass = state;
      MPI_Allreduce(MPI_IN_PLACE, &mass, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (step + 1 == next_rezone) { /* refine and coarsen, then rebalance */
      int counts[256], displs[256], total = 0;
      cells = 150 + (int)(draw() % 150) + 10 * rank;
      MPI_Allgather(&cells, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
      for (int r = 0; r < size && r < 256; ++r) displs[r] = total, total += counts[r];
      static double all[256 * 400];
      MPI_Allgatherv(send[0], cells < 400 ? cells : 400, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE,
                     MPI_COMM_WORLD);
      halo = 4 + (int)(draw() % 12);
      updates = 0;
      next_rezone = step + 1 + 3 + (int)(draw() % 7);
    }
  }
  if (rank == 0) printf("rezone: %d steps, checksum %.6f\n", steps, state + dt);
  MPI_Finalize();
  return 0;
}
