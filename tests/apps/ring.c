/* Blocking ring: Send/Recv in rank order (rank 0 sends first), Ssend of
 * what was just received (a forwarded send),
 * Sendrecv, Sendrecv_replace, Probe with MPI_ANY_SOURCE, Iprobe. */
#include "applog.h"

int main(int argc, char** argv) {
  int rank, size;
  MPI_Status st;
  app_start(&argc, &argv, &rank, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const int iters = app_iters(argc, argv, 5);
  /* the message of iteration it has 8 + it ints: its count follows the iteration */
  int* buf = malloc((size_t)(iters + 64) * sizeof(int));
  int* in = malloc((size_t)(iters + 64) * sizeof(int));
  for (int i = 0; i < iters + 64; ++i) buf[i] = rank * 100 + i % 64;
  double acc = 0;
  for (int it = 0; it < iters; ++it) {
    int n = 8 + it;
    if (rank == 0) {
      MPI_Send(buf, n, MPI_INT, next, it, MPI_COMM_WORLD);
      LOG("MPI_Send peer=%d tag=%d count=%d bytes=%d comm=world", next, it, n, n * 4);
      MPI_Recv(in, n, MPI_INT, prev, it, MPI_COMM_WORLD, &st);
      LOG("MPI_Recv peer=%d tag=%d count=%d bytes=%d comm=world", prev, it, n, n * 4);
    } else {
      MPI_Recv(in, n, MPI_INT, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=%d tag=%d count=%d bytes=%d comm=world", prev, it, n, n * 4);
      MPI_Ssend(in, n, MPI_INT, next, it, MPI_COMM_WORLD);
      LOG("MPI_Ssend peer=%d tag=%d count=%d bytes=%d comm=world forwards=1", next, it, n, n * 4);
    }
    acc += busy(20000) + in[0];
    MPI_Sendrecv(buf, 4, MPI_DOUBLE, next, 7, in, 4, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, &st);
    LOG("MPI_Sendrecv peer=%d tag=7 count=4 bytes=32 peer2=%d tag2=7 count2=4 bytes2=32 comm=world", next, prev);
    MPI_Sendrecv_replace(buf, 3, MPI_INT, next, 9, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    LOG("MPI_Sendrecv_replace peer=%d tag=9 count=3 bytes=12 peer2=%d tag2=9 comm=world", next, prev);
  }
  /* Everyone sends one message to rank 0, which probes for them in any order. */
  if (rank == 0) {
    for (int k = 1; k < size; ++k) {
      int flag = 0;
      MPI_Probe(MPI_ANY_SOURCE, 42, MPI_COMM_WORLD, &st);
      LOG("MPI_Probe peer=%d tag=42 comm=world any_source=1", st.MPI_SOURCE);
      MPI_Iprobe(st.MPI_SOURCE, 42, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      LOG("MPI_Iprobe peer=%d tag=42 comm=world", st.MPI_SOURCE);
      MPI_Recv(in, 1, MPI_INT, st.MPI_SOURCE, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      LOG("MPI_Recv peer=%d tag=42 count=1 bytes=4 comm=world", st.MPI_SOURCE);
    }
  } else {
    MPI_Send(&rank, 1, MPI_INT, 0, 42, MPI_COMM_WORLD);
    LOG("MPI_Send peer=0 tag=42 count=1 bytes=4 comm=world");
  }
  double total = 0;
  MPI_Reduce(&acc, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  LOG("MPI_Reduce root=0 count=1 bytes=8 comm=world");
  if (rank == 0) printf("ring: checksum %.6f\n", total);
  LOG("MPI_Finalize");
  free(buf);
  free(in);
  MPI_Finalize();
  return 0;
}
