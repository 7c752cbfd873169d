/* A geometric multigrid solver's V-cycles in the manner of NPB MG: the
 * ranks form a ring, and every level's halo exchange is the same code (two
 * MPI_Irecv, two MPI_Send, two MPI_Wait; a tag per direction). On the
 * coarsest levels only the odd ranks work on: each even rank hands its
 * coarse data to the odd rank above it and receives the result back, while
 * the odd ranks exchange on COARSE more levels among themselves (a ring of
 * twice the distance). So the two halves of the ranks make different
 * numbers of the same exchanges per V-cycle, and the even ranks' hand-over
 * comes between the levels' exchanges. Around the timed cycles, as in MG:
 * a warm-up cycle, a barrier, the residual's exchange and an
 * MPI_Allreduce of its norm, then CYCLES times a V-cycle and the residual's
 * exchange, and the norm again.
 * A merge must line up the halves' exchanges alike in every cycle, so that
 * one loop holds all CYCLES V-cycles (tests/run_loop_count_test.sh).
 * usage: mgrid [CYCLES [WORK [COARSE [LEVELS]]]] (default 12 cycles, WORK
 * iterations of busy() per unit of computation on the finest level, default
 * 20000, 2 coarse levels on the odd ranks below 4 levels on all, at most
 * 8); needs an even number of ranks, at least 2 */
#include "applog.h"

enum { MAX_LEVELS = 8, FINE = 1024, TAG_UP = 1100, TAG_DOWN = 1300 };

static int levels = 4; /* the levels all ranks work on */

static double sendbuf[2][FINE], recvbuf[2][FINE];

/* Every receive is posted here (as NPB MG's comm3 and its coarse levels'
 * hand-over share one): a message travelling up carries TAG_UP, one
 * travelling down TAG_DOWN. */
static void post_recv(double* buf, int count, int from, int tag, MPI_Request* req) {
  MPI_Irecv(buf, count, MPI_DOUBLE, from, tag, MPI_COMM_WORLD, req);
  LOG("MPI_Irecv peer=%d tag=%d count=%d bytes=%d comm=world", from, tag, count, 8 * count);
}

/* One level's halo exchange with the ranks `dist` away either way. */
static void exchange(int rank, int size, int dist, int count) {
  const int up = (rank + dist) % size, down = (rank - dist + size) % size;
  MPI_Request req[2];
  post_recv(recvbuf[0], count, down, TAG_UP, &req[0]);
  post_recv(recvbuf[1], count, up, TAG_DOWN, &req[1]);
  MPI_Send(sendbuf[0], count, MPI_DOUBLE, up, TAG_UP, MPI_COMM_WORLD);
  LOG("MPI_Send peer=%d tag=%d count=%d bytes=%d comm=world", up, TAG_UP, count, 8 * count);
  MPI_Send(sendbuf[1], count, MPI_DOUBLE, down, TAG_DOWN, MPI_COMM_WORLD);
  LOG("MPI_Send peer=%d tag=%d count=%d bytes=%d comm=world", down, TAG_DOWN, count, 8 * count);
  for (int i = 0; i < 2; ++i) {
    MPI_Wait(&req[i], MPI_STATUS_IGNORE);
    LOG("MPI_Wait");
  }
}

/* The coarsest levels live on the odd ranks alone (an even rank's share of
 * them is empty): the odd ranks exchange on `coarse` levels among
 * themselves, then send the even rank below them its part of the result,
 * which it waits for. */
static void coarsest(int rank, int size, int coarse, int work, double* acc) {
  const int count = FINE >> levels;
  if (rank % 2 == 0) {
    MPI_Request req;
    post_recv(recvbuf[0], count, rank + 1, TAG_DOWN, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    LOG("MPI_Wait");
    return;
  }
  for (int l = 0; l < coarse; ++l) {
    *acc += busy(work >> levels);
    exchange(rank, size, 2, count);
  }
  MPI_Send(sendbuf[0], count, MPI_DOUBLE, rank - 1, TAG_DOWN, MPI_COMM_WORLD);
  LOG("MPI_Send peer=%d tag=%d count=%d bytes=%d comm=world", rank - 1, TAG_DOWN, count, 8 * count);
}

static void v_cycle(int rank, int size, int coarse, int work, double* acc) {
  for (int l = 0; l < levels; ++l) { /* down: restrict, exchange */
    *acc += busy(work >> l);
    exchange(rank, size, 1, FINE >> l);
  }
  coarsest(rank, size, coarse, work, acc);
  for (int l = levels - 1; l >= 0; --l) { /* up: exchange, then interpolate and smooth */
    exchange(rank, size, 1, FINE >> l);
    *acc += busy(work >> l);
  }
}

/* The residual: a computation on the finest level and its exchange. */
static void residual(int rank, int size, int work, double* acc) {
  *acc += busy(work);
  exchange(rank, size, 1, FINE);
}

static void norm(double* acc) {
  double sum;
  MPI_Allreduce(acc, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  LOG("MPI_Allreduce count=1 bytes=8 comm=world");
  *acc = sum * 1e-9;
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  const int cycles = app_iters(argc, argv, 12), work = app_arg(argc, argv, 2, 20000);
  const int coarse = app_arg(argc, argv, 3, 2);
  levels = app_arg(argc, argv, 4, 4);
  if (levels > MAX_LEVELS) levels = MAX_LEVELS;
  if (size % 2 != 0) {
    if (rank == 0) fprintf(stderr, "mgrid: needs an even number of ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int i = 0; i < FINE; ++i) sendbuf[0][i] = sendbuf[1][i] = rank + i;
  double acc = 0;
  v_cycle(rank, size, coarse, work, &acc); /* warm-up */
  residual(rank, size, work, &acc);
  MPI_Barrier(MPI_COMM_WORLD);
  LOG("MPI_Barrier comm=world");
  residual(rank, size, work, &acc);
  norm(&acc);
  for (int it = 0; it < cycles; ++it) {
    v_cycle(rank, size, coarse, work, &acc);
    residual(rank, size, work, &acc);
  }
  norm(&acc);
  if (rank == 0) printf("mgrid: %d cycles, norm %.6f\n", cycles, acc);
  MPI_Finalize();
  LOG("MPI_Finalize");
  return 0;
}
