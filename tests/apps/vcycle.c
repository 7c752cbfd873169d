/* A multigrid solver's time steps in the manner of algebraic multigrid
 * libraries that communicate through persistent requests (hypre built with
 * HYPRE_USING_PERSISTENT_COMM): every REBUILD steps the hierarchy is set
 * up again, each level's exchange made as one MPI_Recv_init and one
 * MPI_Send_init per neighbour, in a loop over the neighbours (so one call
 * site makes requests to several peers); each time step then runs V-cycles
 * whose depth changes from step to step (as a solver's iterations do):
 * down and up the levels, each level an MPI_Startall of its requests,
 * computation, an MPI_Waitall, and a residual MPI_Allreduce after each
 * cycle (a draw, the same on every rank: the steps do not repeat in any
 * period, so they do not fold into one loop). The old hierarchy's requests
 * are freed before the next set-up.
 * Level l's neighbours are the ranks at distance 1 + (l + epoch) mod
 * (size - 1) either way, so they change with the set-up too, and each
 * direction has a tag of its own.
 * usage: vcycle [STEPS [WORK [REBUILD]]] (default 60 steps, WORK
 * iterations of busy() per unit of computation, default 20000, a set-up
 * every REBUILD steps, default 10) */
#include "applog.h"

enum { LEVELS = 4, NBRS = 2, COUNT = 256 };

static MPI_Request req[LEVELS][2 * NBRS];
static double inbuf[LEVELS][NBRS][COUNT], outbuf[LEVELS][COUNT];
static int peer[LEVELS][NBRS];
static int epoch; /* the set-ups so far, minus one: the requests' labels in the call log */
static unsigned rng = 12345u;

static unsigned draw(void) {
  rng = rng * 1103515245u + 12345u;
  return (rng >> 16) & 0x7fff;
}

/* The tag of level l's message sent to neighbour i (0: at + distance, 1: at -
 * distance); what neighbour i sends back comes with tag(l, 1 - i). On 2 ranks
 * both neighbours are the other rank: only the tags tell the requests apart. */
static int tag(int l, int i) { return NBRS * l + i; }

/* The hierarchy of epoch e: each level's persistent receives and sends. */
static void set_up(int rank, int size, int e) {
  epoch = e;
  for (int l = 0; l < LEVELS; ++l) {
    const int d = 1 + (l + e) % (size > 1 ? size - 1 : 1);
    peer[l][0] = (rank + d) % size;
    peer[l][1] = (rank - d % size + size) % size;
    for (int i = 0; i < NBRS; ++i) {
      MPI_Recv_init(inbuf[l][i], COUNT >> l, MPI_DOUBLE, peer[l][i], tag(l, 1 - i), MPI_COMM_WORLD, &req[l][i]);
      LOG("MPI_Recv_init peer=%d tag=%d count=%d bytes=%d comm=world request=r%d.%d.%d", peer[l][i],
          tag(l, 1 - i), COUNT >> l, 8 * (COUNT >> l), e, l, i);
    }
    for (int i = 0; i < NBRS; ++i) {
      MPI_Send_init(outbuf[l], COUNT >> l, MPI_DOUBLE, peer[l][i], tag(l, i), MPI_COMM_WORLD, &req[l][NBRS + i]);
      LOG("MPI_Send_init peer=%d tag=%d count=%d bytes=%d comm=world request=s%d.%d.%d", peer[l][i], tag(l, i),
          COUNT >> l, 8 * (COUNT >> l), e, l, i);
    }
  }
}

static void tear_down(void) {
  for (int l = 0; l < LEVELS; ++l)
    for (int i = 0; i < 2 * NBRS; ++i) {
      MPI_Request_free(&req[l][i]);
      LOG("MPI_Request_free reqs=%c%d.%d.%d", i < NBRS ? 'r' : 's', epoch, l, i % NBRS);
    }
}

static double smooth(int rank, int l, int work) {
  MPI_Startall(2 * NBRS, req[l]);
  LOG("MPI_Startall reqs=r%d.%d.0,r%d.%d.1,s%d.%d.0,s%d.%d.1", epoch, l, epoch, l, epoch, l, epoch, l);
  double s = busy((work >> l) * (1 + rank % 2));
  MPI_Waitall(2 * NBRS, req[l], MPI_STATUSES_IGNORE);
  LOG("MPI_Waitall completed=r%d.%d.0,r%d.%d.1,s%d.%d.0,s%d.%d.1", epoch, l, epoch, l, epoch, l, epoch, l);
  for (int l2 = 0; l2 < LEVELS; ++l2) outbuf[l2][0] = s + inbuf[l][0][0];
  return s;
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  const int steps = app_iters(argc, argv, 60), work = app_arg(argc, argv, 2, 20000),
            rebuild = app_arg(argc, argv, 3, 10);
  double sum = 0;
  for (int step = 0; step < steps; ++step) {
    if (step % rebuild == 0) {
      if (step > 0) tear_down();
      sum += busy(work);
      set_up(rank, size, step / rebuild);
    }
    /* cycles in this step and their depth: a deterministic draw, the same on every rank */
    const int cycles = 1 + (int)(draw() % 3), depth = 2 + (int)(draw() % (LEVELS - 1));
    for (int c = 0; c < cycles; ++c) {
      for (int l = 0; l < depth; ++l) sum += smooth(rank, l, work);
      for (int l = depth - 2; l >= 0; --l) sum += smooth(rank, l, work);
      double residual;
      MPI_Allreduce(&sum, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      LOG("MPI_Allreduce count=1 bytes=8 comm=world");
      sum = residual / size;
    }
  }
  tear_down();
  if (rank == 0) printf("vcycle: %d steps, sum %.6f\n", steps, sum);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
