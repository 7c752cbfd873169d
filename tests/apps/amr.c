/* Adaptive refinement in the manner of block-structured AMR codes: a G x G
 * grid of blocks, each at a refinement level 0..2 (a level-l block costs
 * 4^l), dealt to the ranks in row-major order by equal shares of the cost.
 * Every time step each rank exchanges halos with the owners of the blocks
 * next to its own (Irecv, Isend, compute, Waitall; one message per
 * neighbour, its size the faces shared times the finer level's face),
 * reduces the time step on MPI_COMM_WORLD and a residual on a
 * sub-communicator (even and odd ranks), and every CHECK steps checksums
 * NV variables (one Allreduce each). Every REFINE steps the levels change
 * (a deterministic draw, the same on every rank: the metadata is
 * replicated, as in most AMR codes), the count of changed blocks is
 * reduced, and every second time the blocks are rebalanced: ownership
 * recomputed, the migrating blocks moved by Alltoall (counts) and
 * Alltoallv (data). Neighbour sets and message sizes thus change after
 * each refinement. Before the first step each rank may build its blocks
 * (an initial mesh: SETUP steps' worth of computation on its share, no
 * call, as AMR codes set up and refine their first mesh before they talk).
 * usage: amr [STEPS [WORK [REFINE [SETUP]]]] (default 120 steps, WORK
 * iterations of busy() per unit of cost, default 20000, a refinement
 * every REFINE steps, default 10, SETUP default 0) */
#include "applog.h"

#include <string.h>

enum { G = 8, NB = G * G, NV = 6, CHECK = 5, FACE = 16, MAXP = 64 };
static int REFINE = 10; /* steps between refinements (argv[3]) */

static int level[NB], owner[NB];
static unsigned rng = 12345u;

static unsigned draw(void) {
  rng = rng * 1103515245u + 12345u;
  return (rng >> 16) & 0x7fff;
}

static int cost(int b) { return 1 << (2 * level[b]); }

/* Owners by equal shares of the total cost, in row-major block order. */
static void deal(int size) {
  int total = 0, acc = 0;
  for (int b = 0; b < NB; ++b) total += cost(b);
  for (int b = 0; b < NB; ++b) {
    int o = (int)((long)acc * size / total);
    owner[b] = o < size ? o : size - 1;
    acc += cost(b);
  }
}

/* Face values each neighbour gets from `rank` (0: not a neighbour). */
static void neighbours(int rank, int* faces) {
  memset(faces, 0, sizeof(int) * MAXP);
  for (int b = 0; b < NB; ++b) {
    if (owner[b] != rank) continue;
    int x = b % G, y = b / G, nbr[4] = {x > 0 ? b - 1 : -1, x < G - 1 ? b + 1 : -1, y > 0 ? b - G : -1,
                                        y < G - 1 ? b + G : -1};
    for (int d = 0; d < 4; ++d) {
      int n = nbr[d];
      if (n < 0 || owner[n] == rank) continue;
      int l = level[b] > level[n] ? level[b] : level[n];
      faces[owner[n]] += FACE << l;
    }
  }
}

static int refine(void) {
  int changed = 0;
  for (int k = 0; k < 6; ++k) {
    int b = (int)(draw() % NB), up = draw() % 3 != 0;
    if (up && level[b] < 2) ++level[b], ++changed;
    else if (!up && level[b] > 0) --level[b], ++changed;
  }
  return changed;
}

static double step(int rank, int size, MPI_Comm half, int it, int work, double* field) {
  static double sbuf[MAXP][FACE * 16], rbuf[MAXP][FACE * 16];
  int faces[MAXP], n = 0, peer[MAXP];
  MPI_Request req[2 * MAXP];
  char lab[2 * MAXP][24];
  neighbours(rank, faces);
  for (int q = 0; q < size; ++q)
    if (faces[q]) peer[n++] = q;
  for (int i = 0; i < n; ++i) {
    int c = faces[peer[i]] < FACE * 16 ? faces[peer[i]] : FACE * 16;
    MPI_Irecv(rbuf[i], c, MPI_DOUBLE, peer[i], 7, MPI_COMM_WORLD, &req[i]);
    snprintf(lab[i], 24, "r%d_%d", it, peer[i]);
    LOG("MPI_Irecv peer=%d tag=7 count=%d bytes=%d comm=world request=%s", peer[i], c, c * 8, lab[i]);
  }
  for (int i = 0; i < n; ++i) {
    int c = faces[peer[i]] < FACE * 16 ? faces[peer[i]] : FACE * 16;
    for (int k = 0; k < c; ++k) sbuf[i][k] = field[k % 64] + rank;
    MPI_Isend(sbuf[i], c, MPI_DOUBLE, peer[i], 7, MPI_COMM_WORLD, &req[n + i]);
    snprintf(lab[n + i], 24, "s%d_%d", it, peer[i]);
    LOG("MPI_Isend peer=%d tag=7 count=%d bytes=%d comm=world request=%s", peer[i], c, c * 8, lab[n + i]);
  }
  int mine = 0;
  for (int b = 0; b < NB; ++b)
    if (owner[b] == rank) mine += cost(b);
  double s = busy(work * mine);
  MPI_Waitall(2 * n, req, MPI_STATUSES_IGNORE);
  {
    char line[4096] = "";
    for (int i = 0, pos = 0; i < 2 * n; ++i) pos += snprintf(line + pos, sizeof line - pos, "%s%s", i ? "," : "", lab[i]);
    LOG("MPI_Waitall completed=%s", line);
  }
  for (int i = 0; i < n; ++i) field[i % 64] += 1e-6 * rbuf[i][0];
  double dt = 1.0 / (1.0 + s), gdt, res = field[0], gres;
  MPI_Allreduce(&dt, &gdt, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  LOG("MPI_Allreduce count=1 bytes=8 comm=world");
  MPI_Allreduce(&res, &gres, 1, MPI_DOUBLE, MPI_SUM, half);
  LOG("MPI_Allreduce count=1 bytes=8 comm=half");
  return gdt + 1e-9 * gres;
}

static void rebalance(int rank, int size) {
  int old[NB], scount[MAXP] = {0}, rcount[MAXP], sdisp[MAXP], rdisp[MAXP];
  static double sdata[NB * 16], rdata[NB * 16];
  memcpy(old, owner, sizeof old);
  deal(size);
  for (int b = 0; b < NB; ++b)
    if (old[b] == rank && owner[b] != rank) scount[owner[b]] += cost(b);
  MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
  LOG("MPI_Alltoall count=1 bytes=4 comm=world");
  int st = 0, rt = 0;
  char sl[1024] = "", rl[1024] = "";
  for (int q = 0, sp = 0, rp = 0; q < size; ++q) {
    sdisp[q] = st, rdisp[q] = rt, st += scount[q], rt += rcount[q];
    sp += snprintf(sl + sp, sizeof sl - sp, "%s%d", q ? "," : "", scount[q]);
    rp += snprintf(rl + rp, sizeof rl - rp, "%s%d", q ? "," : "", rcount[q]);
  }
  for (int k = 0; k < st; ++k) sdata[k] = rank + k;
  MPI_Alltoallv(sdata, scount, sdisp, MPI_DOUBLE, rdata, rcount, rdisp, MPI_DOUBLE, MPI_COMM_WORLD);
  LOG("MPI_Alltoallv comm=world counts=%s counts2=%s bytes=%d bytes2=%d", sl, rl, st * 8, rt * 8);
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  if (size > MAXP) MPI_Abort(MPI_COMM_WORLD, 2);
  const int steps = app_iters(argc, argv, 120);
  const int work = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 20000;
  if (argc > 3 && atoi(argv[3]) > 0) REFINE = atoi(argv[3]);
  deal(size);
  const int setup = argc > 4 && atoi(argv[4]) > 0 ? atoi(argv[4]) : 0;
  double made = 0;
  for (int b = 0, k = 0; b < NB; ++b)  /* the initial mesh: each block's share, one block at a time */
    if (owner[b] == rank)
      for (k = 0; k < setup; ++k) made += 1e-9 * busy(work * cost(b));
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  {
    char m[1024] = "";
    for (int r = rank % 2, pos = 0; r < size; r += 2) pos += snprintf(m + pos, sizeof m - pos, "%s%d", pos ? "," : "", r);
    LOG("MPI_Comm_split comm=world new_comm=half color=%d key=%d members=%s", rank % 2, rank, m);
  }
  double field[64], t = made;
  for (int i = 0; i < 64; ++i) field[i] = rank + 0.01 * i;
  for (int it = 0; it < steps; ++it) {
    t += step(rank, size, half, it, work, field);
    if (it % CHECK == CHECK - 1)
      for (int v = 0; v < NV; ++v) {
        double local = field[v], sum;
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        LOG("MPI_Allreduce count=1 bytes=8 comm=world");
        field[v] = 0.5 * (field[v] + sum / size);
      }
    if (it % REFINE == REFINE - 1) {
      int changed = refine(), total;
      MPI_Allreduce(&changed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      LOG("MPI_Allreduce count=1 bytes=4 comm=world");
      if ((it / REFINE) % 2 == 1) rebalance(rank, size);
    }
  }
  double all;
  MPI_Allreduce(&t, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  LOG("MPI_Allreduce count=1 bytes=8 comm=world");
  MPI_Comm_free(&half);
  LOG("MPI_Comm_free comm=half");
  if (rank == 0) printf("amr: %d ranks, %d steps, checksum %.6f\n", size, steps, all);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
