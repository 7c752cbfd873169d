/* Sparse data exchange by the NBX algorithm (Hoefler et al.; PETSc's
 * PetscCommBuildTwoSided, for one): each step every rank sends to a few
 * ranks of its choosing (MPI_Issend), and no rank knows who will send to
 * it; it polls with MPI_Iprobe(MPI_ANY_SOURCE), receives what comes, and
 * tests its sends, then an MPI_Ibarrier once they are all taken, until the
 * barrier completes. How often each rank polls, and which of its MPI_Test
 * calls find their request done, changes with every step and run: in one
 * merged call one rank's MPI_Test completes its send while another's finds
 * nothing. Computation between the steps. Before the steps, a handshake
 * makes that so for certain in the program's first completion call: rank
 * 1's MPI_Test finds its receive done, rank 0's cannot (its message is
 * sent after a barrier); the skeleton tested a handle never set there.
 *
 *   nbx [STEPS=60] [WORK=100000]
 *
 * Prints the ranks, steps and the messages received on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { kTag = 7, kMaxTargets = 3, kHello = 8, kReply = 9 };

static double compute(long n, double x) {
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

/* One call site for every rank's test of its handshake request. */
static __attribute__((noinline)) int test_once(MPI_Request* r) {
  int flag = 0;
  MPI_Test(r, &flag, MPI_STATUS_IGNORE);
  return flag;
}

/* Rank 0 sends hello and posts a receive for the reply, which rank 1 sends
 * only after the barrier; rank 1 receives hello (in before its MPI_Irecv:
 * it probed for it). Both test their receive once, from one call site. */
static void handshake(int rank) {
  double hello = 1, reply = 2, in = 0;
  MPI_Request r = MPI_REQUEST_NULL;
  if (rank == 0) {
    MPI_Send(&hello, 1, MPI_DOUBLE, 1, kHello, MPI_COMM_WORLD);
    MPI_Irecv(&in, 1, MPI_DOUBLE, 1, kReply, MPI_COMM_WORLD, &r);
  } else if (rank == 1) {
    MPI_Probe(0, kHello, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(&in, 1, MPI_DOUBLE, 0, kHello, MPI_COMM_WORLD, &r);
  }
  if (rank <= 1 && test_once(&r) == 0 && rank == 1) MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) MPI_Send(&reply, 1, MPI_DOUBLE, 0, kReply, MPI_COMM_WORLD);
  if (rank == 0) MPI_Wait(&r, MPI_STATUS_IGNORE);
}

/* One step's exchange: sends to `targets` ranks; returns the messages received. */
static int exchange(int rank, int size, int step, double value) {
  MPI_Request sends[kMaxTargets], barrier = MPI_REQUEST_NULL;
  MPI_Status statuses[kMaxTargets];
  double out[kMaxTargets], in;
  int targets = 1 + (rank + step) % kMaxTargets, received = 0, done = 0, barrier_on = 0;
  if (targets > size - 1) targets = size - 1;
  for (int t = 0; t < targets; ++t) {
    out[t] = value + t;
    MPI_Issend(&out[t], 1, MPI_DOUBLE, (rank + 1 + (t + step) % (size - 1)) % size, kTag, MPI_COMM_WORLD, &sends[t]);
  }
  while (!done) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &st);
    if (flag) {
      MPI_Recv(&in, 1, MPI_DOUBLE, st.MPI_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      ++received;
    }
    if (barrier_on) {
      MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    } else {
      int sent = 0;
      MPI_Testall(targets, sends, &sent, statuses);
      if (sent) {
        MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
        barrier_on = 1;
      }
    }
  }
  return received;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int steps = argc > 1 ? atoi(argv[1]) : 60;
  long work = argc > 2 ? atol(argv[2]) : 100000;
  double acc = rank;
  int received = 0, all = 0;
  if (size < 2) {
    fprintf(stderr, "nbx: needs 2 ranks or more\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  handshake(rank);
  for (int s = 0; s < steps; ++s) {
    acc = compute(work * (1 + (rank + s) % 3), acc);
    received += exchange(rank, size, s, acc);
  }
  MPI_Reduce(&received, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("nbx: %d ranks, %d steps, %d messages\n", size, steps, all);
  MPI_Finalize();
  return 0;
}
