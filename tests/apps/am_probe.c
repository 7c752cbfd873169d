/* Active messages taken by probing, as message-driven codes without
 * posted receives do (Ray, the genome assembler): each of STEPS steps,
 * every rank sends 1 to 4 messages (1 to 8 times CHUNK doubles, each
 * computed before it is sent) to ranks a hash of the step chooses, then
 * spins on MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG), computing nothing
 * between its probes, and takes each message that comes with MPI_Recv from
 * the source and tag the probe found (a tag per sender), until it has as
 * many as the same hash sends it; then it waits for its sends and the step
 * ends with an MPI_Allreduce. How many probes find nothing, and in which
 * order the messages come, is the timing's choice; no two neighbouring
 * steps are alike.
 *
 *   am_probe [STEPS=200] [CHUNK=2000] [WORK=100000]
 *
 * Prints the steps, the messages and a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "am_common.h"

enum { kMaxSends = 4, kTagBase = 100 };

/* What rank `from` sends in `step`: how many messages, and the k-th one's
 * destination (never itself) and length. */
static int sends_of(int step, int from) { return 1 + (int)(mix((unsigned)(step * 7919 + from)) % kMaxSends); }
static int target_of(int step, int from, int k, int size) {
  return (from + 1 + (int)(mix((unsigned)(step * 104729 + from * 31 + k)) % (unsigned)(size - 1))) % size;
}
static int length_of(int step, int from, int k, int chunk) {
  return chunk * (1 + (int)(mix((unsigned)(step * 8 + from * 3 + k)) % 8));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 200;
  const int chunk = argc > 2 ? atoi(argv[2]) : 2000;
  const long work = argc > 3 ? atol(argv[3]) : 100000;
  if (steps < 1 || chunk < 1 || work < 0 || size < 2) {
    if (rank == 0) fprintf(stderr, "usage: am_probe [STEPS>=1] [CHUNK>=1] [WORK>=0], on 2 ranks or more\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int most = 8 * chunk;
  double* out = calloc((size_t)most * kMaxSends, sizeof(double));
  double* in = calloc((size_t)most, sizeof(double));
  MPI_Request sent[kMaxSends];
  double acc = rank, total = 0;
  long messages = 0;
  for (int step = 0; step < steps; ++step) {
    const int n = sends_of(step, rank);
    for (int k = 0; k < n; ++k) {
      const int len = length_of(step, rank, k, chunk);
      acc = compute(work / 4, acc);
      double* buf = out + (size_t)most * k;
      for (int i = 0; i < len; ++i) buf[i] = acc + i;
      MPI_Isend(buf, len, MPI_DOUBLE, target_of(step, rank, k, size), kTagBase + rank, MPI_COMM_WORLD, &sent[k]);
    }
    int expected = 0;
    for (int from = 0; from < size; ++from)
      for (int k = 0; k < sends_of(step, from); ++k) expected += from != rank && target_of(step, from, k, size) == rank;
    double handled = 0;
    for (int got = 0; got < expected;) {
      int flag = 0, count;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
      if (!flag) continue; /* spin: nothing computed between the probes */
      MPI_Get_count(&st, MPI_DOUBLE, &count);
      MPI_Recv(in, count, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < count; i += 97) handled += in[i];
      ++got;
      ++messages;
    }
    MPI_Waitall(n, sent, MPI_STATUSES_IGNORE);
    acc = compute(work, acc);
    double sum;
    MPI_Allreduce(&handled, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    total += sum * 1e-9;
  }
  if (rank == 0) printf("am_probe: %d steps, %ld messages on rank 0, checksum %.6f\n", steps, messages, total);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
