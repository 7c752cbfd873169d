/* What an MPI call leaves on the stack below its caller. A program that
 * reads a local it never set (PRK's AMR kernel passes an unset send
 * buffer pointer to MPI_Alltoallv where it sends nothing) reads what the
 * calls before left there; traced, that was the tracer's wrappers' data,
 * and one such read turned into MPI_IN_PLACE: the traced run hung where
 * the untraced one ran. The tracer zeroes the stack its wrappers used
 * (libtrace/tracer_core.h, scrub_stack).
 *
 * For each of a few calls (generated wrappers, completion wrappers), made
 * from a function of its own, a function at the same depth reads the
 * bytes below its own top PROBE_SKIP bytes (the caller's and the
 * wrapper's own frame: return addresses, saved registers) and prints how
 * many are not zero:
 *   stack_reuse            -> "after MPI_Barrier: 0 of 1536 bytes set" ...
 * Test stack_reuse_<mpi> (tests/CMakeLists.txt): traced, every count is 0.
 * Untraced, the MPI library's own frames leave what they leave. */
#include <mpi.h>
#include <stdio.h>

#define PROBE_BYTES 1008
#define PROBE_SKIP 256

enum { kBarrier, kAllreduce, kIsendIrecvWait, kTest, kCalls };
static const char* const names[kCalls] = {"MPI_Barrier", "MPI_Allreduce", "MPI_Isend+MPI_Irecv+MPI_Wait",
                                          "MPI_Test"};

__attribute__((noinline)) static void call(int which, int rank, int size)
{
  int in = rank, out = 0, flag = 0;
  MPI_Request reqs[2];
  switch (which) {
    case kBarrier:
      MPI_Barrier(MPI_COMM_WORLD);
      break;
    case kAllreduce:
      MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case kIsendIrecvWait:
      MPI_Irecv(&out, 1, MPI_INT, (rank + size - 1) % size, 5, MPI_COMM_WORLD, &reqs[0]);
      MPI_Isend(&in, 1, MPI_INT, (rank + 1) % size, 5, MPI_COMM_WORLD, &reqs[1]);
      MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
      MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
      break;
    case kTest:
      MPI_Irecv(&out, 1, MPI_INT, (rank + size - 1) % size, 6, MPI_COMM_WORLD, &reqs[0]);
      MPI_Isend(&in, 1, MPI_INT, (rank + 1) % size, 6, MPI_COMM_WORLD, &reqs[1]);
      while (!flag) MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE);
      MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
      break;
  }
}

/* The bytes below the top PROBE_SKIP of this frame's array that are not
 * zero: never set here, they are what the call before left. */
__attribute__((noinline)) static int probe(void)
{
  volatile unsigned char area[PROBE_BYTES];
  int set = 0;
  for (int i = 0; i < PROBE_BYTES - PROBE_SKIP; ++i) set += area[i] != 0;
  return set;
}

int main(int argc, char** argv)
{
  int rank = 0, size = 1, worst = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int which = 0; which < kCalls; ++which) {
    call(which, rank, size);
    const int set = probe();
    if (rank == 0) printf("after %s: %d of %d bytes set\n", names[which], set, PROBE_BYTES - PROBE_SKIP);
    worst = set > worst ? set : worst;
  }
  int all = 0;
  MPI_Reduce(&worst, &all, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("most bytes set on any rank: %d\n", all);
  MPI_Finalize();
  return 0;
}
