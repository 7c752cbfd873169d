/* A level-synchronous breadth-first search (as the Graph500 benchmark
 * does) that talks only in collectives: a random graph of VERTICES
 * vertices, DEGREE edges each, its vertices split evenly among the ranks;
 * ROOTS searches, each level of one sending the frontier's edges to the
 * ranks that own their ends (MPI_Alltoall of the counts, MPI_Alltoallv of
 * the vertices) and summing the next frontier (MPI_Allreduce); each search
 * ends with an MPI_Reduce of the vertices reached. Levels take a few to
 * thousands of times the smallest one's time as the frontier grows and
 * shrinks, their counts differ every time, and the number of levels
 * differs by root: no loop holds them.
 *
 *   bfs [VERTICES=262144] [ROOTS=24] [DEGREE=8]
 *
 * Prints the first search's reach and levels and a checksum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The d-th end of vertex v's edges: a hash, the same on every rank. */
static long edge_end(long v, long d, long vertices) {
  unsigned long long x = (unsigned long long)(v * 131 + d) * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 32;
  return (long)(x % (unsigned long long)vertices);
}

typedef struct {
  int P;
  long vertices, degree, block, mine, first;  /* block: vertices per rank; mine: this rank's (the last owns the rest) */
  long *level, *frontier, *send, *recv;
  int *scount, *rcount, *sdisp, *rdisp, *fill;
} Search;

static int owner(const Search* s, long v) { return v / s->block < s->P ? (int)(v / s->block) : s->P - 1; }

/* One level: the frontier's edges to their owners; returns the next frontier's size on this rank. */
static long expand(Search* s, long nf, long depth) {
  memset(s->scount, 0, sizeof(int) * s->P);
  memset(s->fill, 0, sizeof(int) * s->P);
  for (long f = 0; f < nf; ++f)
    for (long d = 0; d < s->degree; ++d) s->scount[owner(s, edge_end(s->frontier[f], d, s->vertices))]++;
  s->sdisp[0] = 0;
  for (int p = 1; p < s->P; ++p) s->sdisp[p] = s->sdisp[p - 1] + s->scount[p - 1];
  for (long f = 0; f < nf; ++f)
    for (long d = 0; d < s->degree; ++d) {
      long w = edge_end(s->frontier[f], d, s->vertices);
      int p = owner(s, w);
      s->send[s->sdisp[p] + s->fill[p]++] = w;
    }
  MPI_Alltoall(s->scount, 1, MPI_INT, s->rcount, 1, MPI_INT, MPI_COMM_WORLD);
  s->rdisp[0] = 0;
  for (int p = 1; p < s->P; ++p) s->rdisp[p] = s->rdisp[p - 1] + s->rcount[p - 1];
  long total = s->rdisp[s->P - 1] + s->rcount[s->P - 1];
  s->recv = realloc(s->recv, sizeof(long) * (size_t)(total + 1));
  MPI_Alltoallv(s->send, s->scount, s->sdisp, MPI_LONG, s->recv, s->rcount, s->rdisp, MPI_LONG, MPI_COMM_WORLD);
  long next = 0;
  for (long i = 0; i < total; ++i) {
    long local = s->recv[i] - s->first;
    if (local >= 0 && local < s->mine && s->level[local] < 0) {
      s->level[local] = depth;
      s->frontier[next++] = s->recv[i];
    }
  }
  return next;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  Search s;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.P);
  s.vertices = argc > 1 ? atol(argv[1]) : 262144;
  int roots = argc > 2 ? atoi(argv[2]) : 24;
  s.degree = argc > 3 ? atol(argv[3]) : 8;
  s.block = s.vertices / s.P;
  s.first = rank * s.block;
  s.mine = rank == s.P - 1 ? s.vertices - s.first : s.block;
  s.level = malloc(sizeof(long) * (size_t)s.mine);
  s.frontier = malloc(sizeof(long) * (size_t)s.mine);
  s.send = malloc(sizeof(long) * (size_t)(s.mine * s.degree));
  s.recv = NULL;
  s.scount = calloc((size_t)s.P, sizeof(int));
  s.rcount = calloc((size_t)s.P, sizeof(int));
  s.sdisp = calloc((size_t)s.P, sizeof(int));
  s.rdisp = calloc((size_t)s.P, sizeof(int));
  s.fill = calloc((size_t)s.P, sizeof(int));
  long checksum = 0;
  for (int r = 0; r < roots; ++r) {
    for (long i = 0; i < s.mine; ++i) s.level[i] = -1;
    long root = (r * 7919L + 11) % s.vertices, nf = 0, global = 1, depth = 0;
    if (root >= s.first && root < s.first + s.mine) {
      s.level[root - s.first] = 0;
      s.frontier[nf++] = root;
    }
    while (global > 0) {
      nf = expand(&s, nf, ++depth);
      MPI_Allreduce(&nf, &global, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    long reached = 0, all = 0;
    for (long i = 0; i < s.mine; ++i) reached += s.level[i] >= 0;
    MPI_Reduce(&reached, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    checksum += all * (r + 1);
    if (rank == 0 && r == 0) printf("bfs: root %ld reached %ld vertices in %ld levels\n", root, all, depth - 1);
  }
  if (rank == 0) printf("bfs: %d ranks, %d searches, checksum %ld\n", s.P, roots, checksum);
  free(s.level), free(s.frontier), free(s.send), free(s.recv);
  free(s.scount), free(s.rcount), free(s.sdisp), free(s.rdisp), free(s.fill);
  MPI_Finalize();
  return 0;
}
