/* Aborts mid-run: every rank exchanges many small messages (enough to flush
 * several chunks with a small SKELTRACE_BUFFER_KB), then the last rank calls
 * MPI_Abort while the others wait in a Barrier. The aborting rank's trace
 * must hold every call up to MPI_Abort; the others' traces must be readable
 * up to their last complete chunk. */
#include "applog.h"

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int v = rank, w;
  for (int it = 0; it < 2000; ++it) {
    MPI_Sendrecv(&v, 1, MPI_INT, next, it % 7, &w, 1, MPI_INT, prev, it % 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    LOG("MPI_Sendrecv peer=%d tag=%d count=1 peer2=%d tag2=%d comm=world", next, it % 7, prev, it % 7);
  }
  if (rank == size - 1) {
    /* No output here: whether a launcher forwards it before MPI_Abort kills
     * the job is a race, so the output comparison would be flaky. */
    LOG("MPI_Abort comm=world");
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  LOG("MPI_Barrier comm=world");
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
