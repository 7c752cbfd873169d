/* Time steps of active messages over persistent wildcard receives, as
 * message-driven codes (Graph500's reference BFS) keep them: every rank
 * makes POOL MPI_Recv_init(MPI_ANY_SOURCE) at the start, takes whichever is
 * done (MPI_Wait of the one, MPI_Waitany of a pool of several) and restarts
 * it with MPI_Start at once. Each of STEPS steps sends a number
 * of messages round a ring that changes from step to step (1 to 6, of 1 to
 * 8 times CHUNK doubles: a frontier's data, a hash of the step), each one
 * computed before it is sent and handled (summed) when it arrives; the step
 * ends with an MPI_Allreduce of what each rank handled. No two neighbouring
 * steps are alike, so no loop holds them: the skeleton must leave steps out,
 * and the steps restart the persistent receives (a pool of several in
 * another order each step: which one takes a message depends on how many
 * came before). With SPIN=1 a rank spins instead of waiting, as an
 * active-message layer does while its sends drain: MPI_Testany over the
 * pool (MPI_Test of the one) until a message is in, MPI_Test of its send
 * until done, nothing computed between the polls, so how many polls find
 * nothing is the timing's choice. With RING=k a rank sends from a ring of k
 * buffers instead of waiting for each send, as Graph500's active messages
 * do: the ring starts as k MPI_PROC_NULL sends, each message goes from the
 * buffer whose send MPI_Testany (spinning) or MPI_Waitany finds done, and an
 * MPI_Waitall of the ring ends the run; which buffer is free is the timing's.
 *
 *   am_steps [STEPS=200] [CHUNK=2000] [WORK=100000] [POOL=1] [SPIN=0] [RING=0]
 *
 * Prints the steps, the messages and a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "am_common.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 200;
  const int chunk = argc > 2 ? atoi(argv[2]) : 2000;
  const long work = argc > 3 ? atol(argv[3]) : 100000;
  const int npool = argc > 4 ? atoi(argv[4]) : 1;
  const int spin = argc > 5 ? atoi(argv[5]) : 0;
  const int nring = argc > 6 ? atoi(argv[6]) : 0;
  if (steps < 1 || chunk < 1 || work < 0 || npool < 1 || npool > 16 || spin < 0 || spin > 1 || nring < 0 ||
      nring > 16) {
    if (rank == 0)
      fprintf(stderr, "usage: am_steps [STEPS>=1] [CHUNK>=1] [WORK>=0] [POOL=1..16] [SPIN=0|1] [RING=0..16]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int right = (rank + 1) % size, most = 8 * chunk;
  double* in = calloc((size_t)most * npool, sizeof(double));
  double* outs = calloc((size_t)most * (nring ? nring : 1), sizeof(double));
  MPI_Request pool[16], sent, ring[16];
  for (int i = 0; i < nring; ++i) MPI_Isend(NULL, 0, MPI_DOUBLE, MPI_PROC_NULL, 7, MPI_COMM_WORLD, &ring[i]);
  for (int i = 0; i < npool; ++i) MPI_Recv_init(in + (size_t)most * i, most, MPI_DOUBLE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &pool[i]);
  for (int i = 0; i < npool; ++i) MPI_Start(&pool[i]);
  double acc = rank, total = 0;
  long messages = 0;
  for (int step = 0; step < steps; ++step) {
    const int n = 1 + (int)(mix((unsigned)step * 2654435761U) % 6);
    double handled = 0;
    for (int k = 0; k < n; ++k) {
      const int len = chunk * (1 + (int)(mix((unsigned)(step * 8 + k)) % 8));
      acc = compute(work * (1 + k % 3), acc);
      MPI_Status st;
      int idx = 0, got, flag = 0, free_at = 0;
      if (nring && spin)
        while (!flag) MPI_Testany(nring, ring, &free_at, &flag, MPI_STATUS_IGNORE);
      else if (nring)
        MPI_Waitany(nring, ring, &free_at, MPI_STATUS_IGNORE);
      double* out = outs + (size_t)most * free_at;
      for (int i = 0; i < len; ++i) out[i] = acc + i;
      MPI_Isend(out, len, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, nring ? &ring[free_at] : &sent);
      flag = 0;
      if (spin && npool == 1) {
        while (!flag) MPI_Test(&pool[0], &flag, &st);
      } else if (spin) {
        while (!flag) MPI_Testany(npool, pool, &idx, &flag, &st);
      } else if (npool == 1) {
        MPI_Wait(&pool[0], &st);  /* the message from the left: handle it, take the next */
      } else {
        MPI_Waitany(npool, pool, &idx, &st);
      }
      MPI_Get_count(&st, MPI_DOUBLE, &got);
      for (int i = 0; i < got; i += 97) handled += in[(size_t)most * idx + i];
      MPI_Start(&pool[idx]);
      if (nring)
        ;  /* the ring's next take finds it done */
      else if (spin)
        for (flag = 0; !flag;) MPI_Test(&sent, &flag, MPI_STATUS_IGNORE);
      else
        MPI_Wait(&sent, MPI_STATUS_IGNORE);
      ++messages;
    }
    double sum;
    MPI_Allreduce(&handled, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    total += sum * 1e-9;
  }
  if (nring) MPI_Waitall(nring, ring, MPI_STATUSES_IGNORE);
  for (int i = 0; i < npool; ++i) MPI_Cancel(&pool[i]);
  MPI_Status done[16];
  MPI_Waitall(npool, pool, done);
  for (int i = 0; i < npool; ++i) MPI_Request_free(&pool[i]);
  if (rank == 0) printf("am_steps: %d steps, %ld messages per rank, checksum %.6f\n", steps, messages, total);
  free(in);
  free(outs);
  MPI_Finalize();
  return 0;
}
