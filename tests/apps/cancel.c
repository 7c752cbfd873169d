/* Receives posted in advance and cancelled (a particle code's buffers, as
 * Monte Carlo transport codes keep them): in each step every rank keeps one
 * MPI_Irecv posted from its left neighbour, polls it with MPI_Test while it
 * computes, posts it again after each message, and sends its right
 * neighbour a number of messages that changes from step to step; at the
 * step's end the receive still posted, which no message will ever match, is
 * cancelled and waited for (MPI_Cancel, MPI_Wait, MPI_Test_cancelled), and
 * an MPI_Allreduce checks that every message sent was received.
 *   cancel [STEPS [WORK]]   (default 40 steps, 20000 terms of work a poll)
 * Prints "cancel: N messages, N cancelled" on rank 0; exits 1 where a
 * cancel failed or a count does not add up. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static void compute(long terms)
{
  double s = 0;
  for (long i = 1; i <= terms; ++i) s += 1.0 / (double)i;
  sink = s;
}

/* The messages rank r sends to its right neighbour in step s: 0 to 3. */
static int messages(int r, int s) { return (r * 7 + s * 3) % 4; }

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int steps = argc > 1 ? atoi(argv[1]) : 40;
  const long work = argc > 2 ? atol(argv[2]) : 20000;
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  double in[64], out[64] = {0};
  long sent = 0, received = 0, cancelled = 0;
  int bad = 0;
  for (int s = 0; s < steps; ++s) {
    MPI_Request req;
    MPI_Irecv(in, 64, MPI_DOUBLE, left, 2300, MPI_COMM_WORLD, &req);
    const int to_send = messages(rank, s), to_receive = messages(left, s);
    int got = 0;
    for (int m = 0; m < to_send || got < to_receive;) {
      compute(work);
      if (m < to_send) {
        out[0] = s;
        MPI_Send(out, 16 + 16 * m, MPI_DOUBLE, right, 2300, MPI_COMM_WORLD);
        ++m, ++sent;
      }
      int flag = 0;
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      if (flag) {
        ++got, ++received;
        MPI_Irecv(in, 64, MPI_DOUBLE, left, 2300, MPI_COMM_WORLD, &req);
      }
    }
    MPI_Status st;
    int was_cancelled = 0;
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &was_cancelled);
    if (was_cancelled) ++cancelled;
    else bad = 1;
    long counts[2] = {sent, received}, all[2];
    MPI_Allreduce(counts, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (all[0] != all[1]) bad = 1;
  }
  long totals[2] = {received, cancelled}, all[2];
  MPI_Reduce(totals, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("cancel: %ld messages, %ld cancelled\n", all[0], all[1]);
  MPI_Finalize();
  return bad;
}
