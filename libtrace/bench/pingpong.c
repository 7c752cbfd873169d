/* Tracer overhead benchmark: 0-byte ping-pong between ranks 0 and 1 and a
 * tight loop of MPI_Iprobe (a call that never waits), each timed inside the
 * program. Prints "pingpong_roundtrip_ns=X iprobe_ns=Y".
 *   usage: pingpong [ROUNDTRIPS] [IPROBES] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long n = argc > 1 ? atol(argv[1]) : 200000, m = argc > 2 ? atol(argv[2]) : 400000;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "pingpong: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char b = 0;
  for (int warm = 0; warm < 2; ++warm) {
    long iters = warm == 0 ? n / 10 : n;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; ++i) {
      if (rank == 0) {
        MPI_Send(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&b, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&b, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    double t1 = MPI_Wtime();
    int flag;
    double t2 = MPI_Wtime();
    for (long i = 0; i < m; ++i) MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    double t3 = MPI_Wtime();
    if (warm == 1 && rank == 0)
      printf("pingpong_roundtrip_ns=%.1f iprobe_ns=%.1f\n", (t1 - t0) / n * 1e9, (t3 - t2) / m * 1e9);
  }
  MPI_Finalize();
  return 0;
}
