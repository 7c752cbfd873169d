/* A 2-D halo exchange whose completion depends on timing, as in codes that
 * overlap communication with computation: every time step each rank posts
 * MPI_Irecv and MPI_Isend to its (up to four, non-periodic) grid
 * neighbours, then completes them in one of four ways (MODE):
 *   waitsome  MPI_Waitsome until all are done, each arrived face processed
 *             as it comes (the calls and their outcounts vary from run to run)
 *   testall   the interior computed in CHUNKS pieces, MPI_Testall after each
 *             piece until the messages are in, MPI_Waitall if the interior is
 *             done first (the number of tests varies)
 *   testsome  the same with MPI_Testsome, each arrived face processed
 *   waitany   MPI_Waitany once per request, each arrived face processed
 *   testfirst MPI_Test of the first receive until it is in, a slice of the
 *             interior computed after each test that finds nothing (as a
 *             particle code polls its buffers: how many tests fail is the
 *             timing's choice), an MPI_Allreduce of one value on the grid,
 *             then the interior and MPI_Waitall of the rest
 * An MPI_Allreduce of the residual every 10 steps, an MPI_Bcast on the
 * grid row's communicator every 25. With PERSISTENT 1 the requests are
 * persistent (MPI_Recv_init, MPI_Send_init once, MPI_Startall each step).
 * usage: poll_halo MODE [STEPS [FACE [WORK [PERSISTENT]]]] (default 200
 * steps, 2,000 doubles a face, WORK iterations of busy() for the interior,
 * default 200,000) */
#include "applog.h"

#include <string.h>

enum { CHUNKS = 8, MAXN = 4 };
enum Mode { kWaitsome, kTestall, kTestsome, kWaitany, kTestFirst };

static double face_work(const double* f, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += f[i] * 0.5;
  return s + busy(n);
}

/* MPI_Waitsome until the requests not yet done (nreq - done) are, each
 * arrived face (a receive: index below n) processed as it comes. */
static double waitsome_rest(int n, MPI_Request* req, const double* faces, int face, int done) {
  int idx[2 * MAXN], out = 0;
  MPI_Status st[2 * MAXN];
  double acc = 0;
  while (done < 2 * n) {
    MPI_Waitsome(2 * n, req, &out, idx, st);
    if (out == MPI_UNDEFINED) break;
    for (int k = 0; k < out; ++k)
      if (idx[k] < n) acc += face_work(faces + (size_t)idx[k] * face, face);
    done += out;
  }
  return acc;
}

/* Completes the step's 2 n requests (receives first) in the given mode. */
static double complete(enum Mode mode, int n, MPI_Request* req, const double* faces, int face, int work, MPI_Comm grid) {
  int nreq = 2 * n, idx[2 * MAXN], out = 0, flag = 0, done = 0, chunk = 0;
  MPI_Status st[2 * MAXN];
  double acc = 0;
  switch (mode) {
    case kWaitsome:
      acc += waitsome_rest(n, req, faces, face, 0);
      acc += busy(work);
      break;
    case kTestall:
      for (chunk = 0; chunk < CHUNKS; ++chunk) {
        acc += busy(work / CHUNKS);
        if (!flag) MPI_Testall(nreq, req, &flag, st);
      }
      if (!flag) MPI_Waitall(nreq, req, st);
      for (int k = 0; k < n; ++k) acc += face_work(faces + (size_t)k * face, face);
      break;
    case kTestsome:
      for (chunk = 0; chunk < CHUNKS; ++chunk) {
        acc += busy(work / CHUNKS);
        if (done < nreq) {
          MPI_Testsome(nreq, req, &out, idx, st);
          for (int k = 0; k < out && out != MPI_UNDEFINED; ++k)
            if (idx[k] < n) acc += face_work(faces + (size_t)idx[k] * face, face);
          if (out != MPI_UNDEFINED) done += out;
        }
      }
      acc += waitsome_rest(n, req, faces, face, done);
      break;
    case kWaitany:
      for (int k = 0; k < nreq; ++k) {
        int i = 0;
        MPI_Waitany(nreq, req, &i, MPI_STATUS_IGNORE);
        if (i != MPI_UNDEFINED && i < n) acc += face_work(faces + (size_t)i * face, face);
      }
      acc += busy(work);
      break;
    case kTestFirst:
      do { /* one call site: which test finds the message is the timing's choice */
        MPI_Test(&req[0], &flag, st);
        if (!flag) acc += busy(work / 64), ++chunk;
      } while (!flag);
      acc += face_work(faces, face);
      {
        double local = chunk, polls = 0;
        MPI_Allreduce(&local, &polls, 1, MPI_DOUBLE, MPI_SUM, grid);
        acc += polls * 1e-12;
      }
      acc += busy(work - chunk * (work / 64) > 0 ? work - chunk * (work / 64) : 0);
      MPI_Waitall(nreq, req, st);
      for (int k = 1; k < n; ++k) acc += face_work(faces + (size_t)k * face, face);
      break;
  }
  return acc;
}

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  const char* m = argc > 1 ? argv[1] : "waitsome";
  enum Mode mode = !strcmp(m, "testall") ? kTestall : !strcmp(m, "testsome") ? kTestsome
                   : !strcmp(m, "waitany") ? kWaitany : !strcmp(m, "testfirst") ? kTestFirst : kWaitsome;
  int steps = argc > 2 ? atoi(argv[2]) : 200, face = argc > 3 ? atoi(argv[3]) : 2000;
  int work = argc > 4 ? atoi(argv[4]) : 200000, persistent = argc > 5 && atoi(argv[5]) == 1;
  if (steps <= 0 || face <= 0 || work <= 0) {
    if (rank == 0) fprintf(stderr, "usage: poll_halo waitsome|testall|testsome|waitany|testfirst [STEPS [FACE [WORK [PERSISTENT]]]]\n");
    MPI_Finalize();
    return 2;
  }
  int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
  MPI_Dims_create(size, 2, dims);
  MPI_Comm grid, row;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
  MPI_Cart_coords(grid, rank, 2, coords);
  MPI_Comm_split(grid, coords[0], coords[1], &row);
  int nbr[MAXN], n = 0;
  for (int d = 0; d < 2; ++d) {
    int lo, hi;
    MPI_Cart_shift(grid, d, 1, &lo, &hi);
    if (lo != MPI_PROC_NULL) nbr[n++] = lo;
    if (hi != MPI_PROC_NULL) nbr[n++] = hi;
  }
  double* sbuf = calloc((size_t)MAXN * face, sizeof(double));
  double* rbuf = calloc((size_t)MAXN * face, sizeof(double));
  double total = 0, param = 1.0;
  MPI_Request req[2 * MAXN], preq[2 * MAXN];
  for (int k = 0; k < n && persistent; ++k) {
    MPI_Recv_init(rbuf + (size_t)k * face, face, MPI_DOUBLE, nbr[k], 7, grid, &preq[k]);
    MPI_Send_init(sbuf + (size_t)k * face, face, MPI_DOUBLE, nbr[k], 7, grid, &preq[n + k]);
  }
  for (int it = 0; it < steps; ++it) {
    for (int k = 0; k < n; ++k) sbuf[(size_t)k * face] = total + it;
    if (persistent) {
      memcpy(req, preq, sizeof(MPI_Request) * 2 * (size_t)n);
      MPI_Startall(2 * n, req);
    } else {
      for (int k = 0; k < n; ++k) MPI_Irecv(rbuf + (size_t)k * face, face, MPI_DOUBLE, nbr[k], 7, grid, &req[k]);
      for (int k = 0; k < n; ++k)
        MPI_Isend(sbuf + (size_t)k * face, face, MPI_DOUBLE, nbr[k], 7, grid, &req[n + k]);
    }
    total += complete(mode, n, req, rbuf, face, work, grid) * 1e-9;
    if (it % 10 == 9) {
      double local = total, global = 0;
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, grid);
      total = global / size;
    }
    if (it % 25 == 24) MPI_Bcast(&param, 1, MPI_DOUBLE, 0, row);
  }
  if (rank == 0) printf("poll_halo %s: %d ranks (%d x %d), %d steps, result %.6f\n", m, size, dims[0], dims[1], steps, total);
  for (int k = 0; k < 2 * n && persistent; ++k) MPI_Request_free(&preq[k]);
  MPI_Comm_free(&row);
  MPI_Comm_free(&grid);
  free(sbuf);
  free(rbuf);
  MPI_Finalize();
  return 0;
}
