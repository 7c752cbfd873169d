/* Time steps of active messages over a persistent wildcard receive, as
 * message-driven codes (Graph500's reference BFS) keep one: every rank
 * makes one MPI_Recv_init(MPI_ANY_SOURCE) at the start and restarts it with
 * MPI_Start as soon as a message is in. Each of STEPS steps sends a number
 * of messages round a ring that changes from step to step (1 to 6, of 1 to
 * 8 times CHUNK doubles: a frontier's data, a hash of the step), each one
 * computed before it is sent and handled (summed) when it arrives; the step
 * ends with an MPI_Allreduce of what each rank handled. No two neighbouring
 * steps are alike, so no loop holds them: the skeleton must leave steps out,
 * and the steps restart the persistent receive.
 *
 *   am_steps [STEPS=200] [CHUNK=2000] [WORK=100000]
 *
 * Prints the steps, the messages and a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned mix(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  return x ^ (x >> 16);
}

static double compute(long n, double x) {
  for (long i = 0; i < n; ++i) x = x * 0.999999 + 1e-7 * (double)(i & 7);
  return x;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 200;
  const int chunk = argc > 2 ? atoi(argv[2]) : 2000;
  const long work = argc > 3 ? atol(argv[3]) : 100000;
  if (steps < 1 || chunk < 1 || work < 0) {
    if (rank == 0) fprintf(stderr, "usage: am_steps [STEPS>=1] [CHUNK>=1] [WORK>=0]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int right = (rank + 1) % size, most = 8 * chunk;
  double* in = calloc((size_t)most, sizeof(double));
  double* out = calloc((size_t)most, sizeof(double));
  MPI_Request pool, sent;
  MPI_Recv_init(in, most, MPI_DOUBLE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &pool);
  MPI_Start(&pool);
  double acc = rank, total = 0;
  long messages = 0;
  for (int step = 0; step < steps; ++step) {
    const int n = 1 + (int)(mix((unsigned)step * 2654435761U) % 6);
    double handled = 0;
    for (int k = 0; k < n; ++k) {
      const int len = chunk * (1 + (int)(mix((unsigned)(step * 8 + k)) % 8));
      acc = compute(work * (1 + k % 3), acc);
      for (int i = 0; i < len; ++i) out[i] = acc + i;
      MPI_Isend(out, len, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &sent);
      MPI_Status st;
      MPI_Wait(&pool, &st);  /* the message from the left: handle it, take the next */
      int got;
      MPI_Get_count(&st, MPI_DOUBLE, &got);
      for (int i = 0; i < got; i += 97) handled += in[i];
      MPI_Start(&pool);
      MPI_Wait(&sent, MPI_STATUS_IGNORE);
      ++messages;
    }
    double sum;
    MPI_Allreduce(&handled, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    total += sum * 1e-9;
  }
  MPI_Cancel(&pool);
  MPI_Wait(&pool, MPI_STATUS_IGNORE);
  MPI_Request_free(&pool);
  if (rank == 0) printf("am_steps: %d steps, %ld messages per rank, checksum %.6f\n", steps, messages, total);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
