/* A bandwidth test of the kind MPI benchmark suites run: ranks in pairs
 * (rank 2i sends, rank 2i + 1 receives), for each message size from 1 byte
 * doubling up to MAX_BYTES, ROUNDS rounds of a window of WINDOW messages
 * (MPI_Isend / MPI_Irecv, one MPI_Waitall), then a 4-byte acknowledgement
 * back. The two sides run different code (if the rank sends ... else ...),
 * so each rank's calls have no partner call of their own on the other side:
 * a merge that sets the two sides apart folds shorter than one that
 * interleaves them, but no loop of it can be cut.
 * Prints "window_bw: checked N messages" once every receive got its size
 * and fill.
 *   window_bw [ROUNDS=40] [MAX_BYTES=16384] [WINDOW=32] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kDataTag = 100, kAckTag = 101, kMaxWindow = 256 };

static int arg(int argc, char** argv, int i, int fallback) {
  return argc > i ? atoi(argv[i]) : fallback;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = arg(argc, argv, 1, 40), max_bytes = arg(argc, argv, 2, 16384);
  int window = arg(argc, argv, 3, 32);
  if (window > kMaxWindow) window = kMaxWindow;
  if (size % 2 != 0 || rounds < 1 || max_bytes < 1 || window < 1) {
    if (rank == 0) fprintf(stderr, "window_bw: needs an even number of ranks and positive arguments\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int sender = rank % 2 == 0, partner = sender ? rank + 1 : rank - 1;
  char* buf = malloc((size_t)max_bytes * (size_t)window);
  char ack[4] = {0};
  MPI_Request req[kMaxWindow];
  long checked = 0, bad = 0;
  for (int bytes = 1; bytes <= max_bytes; bytes *= 2) {
    for (int r = 0; r < rounds; ++r) {
      if (sender) {
        for (int w = 0; w < window; ++w) {
          memset(buf + (size_t)w * (size_t)bytes, (char)(w + r), (size_t)bytes);
          MPI_Isend(buf + (size_t)w * (size_t)bytes, bytes, MPI_CHAR, partner, kDataTag, MPI_COMM_WORLD, &req[w]);
        }
        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
        MPI_Recv(ack, 4, MPI_CHAR, partner, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        for (int w = 0; w < window; ++w)
          MPI_Irecv(buf + (size_t)w * (size_t)bytes, bytes, MPI_CHAR, partner, kDataTag, MPI_COMM_WORLD, &req[w]);
        MPI_Status st[kMaxWindow];
        MPI_Waitall(window, req, st);
        for (int w = 0; w < window; ++w) {
          int got = 0;
          MPI_Get_count(&st[w], MPI_CHAR, &got);
          bad += got != bytes || buf[(size_t)w * (size_t)bytes + (size_t)bytes - 1] != (char)(w + r);
          ++checked;
        }
        MPI_Send(ack, 4, MPI_CHAR, partner, kAckTag, MPI_COMM_WORLD);
      }
    }
  }
  long totals[2] = {checked, bad}, sums[2];
  MPI_Reduce(totals, sums, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (sums[1] != 0) fprintf(stderr, "window_bw: %ld of %ld messages wrong\n", sums[1], sums[0]);
    else printf("window_bw: checked %ld messages\n", sums[0]);
  }
  free(buf);
  MPI_Finalize();
  return rank == 0 && sums[1] != 0;
}
