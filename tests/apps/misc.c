/* The remaining families: buffered, synchronous and ready sends
 * (Bsend/Ibsend/Issend/Rsend/Irsend), Comm_split_type, Comm_split with
 * MPI_UNDEFINED, Comm_create, Comm_idup,
 * Comm_create_group, Dist_graph_create_adjacent, Graph_create, one-sided
 * (Win_create/fence/Put/Get/Accumulate/Win_free; post/start/complete/wait; Win_allocate, lock_all,
 * Fetch_and_op, Compare_and_swap, Get_accumulate, the flushes, Win_sync;
 * Win_create_dynamic, Win_allocate_shared), MPI-IO (File_open/
 * write_at/read_at/sync/close), Testall/Testany/Testsome, Waitsome, matched
 * probes (Mprobe/Mrecv, Improbe/Imrecv), requests behind one shared handle.
 * argv[1]: how many one-sided epochs run, each after some computation
 * (default 1). */
#include <string.h>

#include "applog.h"

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  double x[8] = {0}, y[8] = {0};
  for (int i = 0; i < 8; ++i) x[i] = rank + i;

  /* buffered and synchronous sends around the ring */
  static char bsend_buf[1 << 16];
  MPI_Buffer_attach(bsend_buf, sizeof bsend_buf);
  MPI_Request rq[4];
  MPI_Irecv(y, 3, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, &rq[0]);
  LOG("MPI_Irecv peer=%d tag=1 count=3 bytes=24 comm=world request=a", prev);
  MPI_Bsend(x, 3, MPI_DOUBLE, next, 1, MPI_COMM_WORLD);
  LOG("MPI_Bsend peer=%d tag=1 count=3 bytes=24 comm=world", next);
  MPI_Irecv(y + 3, 2, MPI_DOUBLE, prev, 2, MPI_COMM_WORLD, &rq[1]);
  LOG("MPI_Irecv peer=%d tag=2 count=2 bytes=16 comm=world request=b", prev);
  MPI_Ibsend(x, 2, MPI_DOUBLE, next, 2, MPI_COMM_WORLD, &rq[2]);
  LOG("MPI_Ibsend peer=%d tag=2 count=2 bytes=16 comm=world request=c", next);
  MPI_Issend(x, 1, MPI_DOUBLE, next, 3, MPI_COMM_WORLD, &rq[3]);
  LOG("MPI_Issend peer=%d tag=3 count=1 bytes=8 comm=world request=d", next);
  MPI_Recv(y + 5, 1, MPI_DOUBLE, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  LOG("MPI_Recv peer=%d tag=3 count=1 bytes=8 comm=world", prev);
  int done = 0;
  while (!done) {
    int flag;
    MPI_Testall(4, rq, &flag, MPI_STATUSES_IGNORE);
    if (flag) { LOG("MPI_Testall completed=a,b,c,d"); done = 1; }
    else LOG("MPI_Testall completed=");
  }
  void* detached;
  int dsize;
  MPI_Buffer_detach(&detached, &dsize);

  /* ready sends: the receiver posts first, a barrier orders them */
  MPI_Request r1;
  MPI_Irecv(y, 4, MPI_DOUBLE, prev, 4, MPI_COMM_WORLD, &r1);
  LOG("MPI_Irecv peer=%d tag=4 count=4 bytes=32 comm=world request=e", prev);
  MPI_Barrier(MPI_COMM_WORLD);
  LOG("MPI_Barrier comm=world");
  MPI_Rsend(x, 4, MPI_DOUBLE, next, 4, MPI_COMM_WORLD);
  LOG("MPI_Rsend peer=%d tag=4 count=4 bytes=32 comm=world", next);
  int idx, flag = 0;
  while (!flag) {
    MPI_Testany(1, &r1, &idx, &flag, MPI_STATUS_IGNORE);
    if (flag) LOG("MPI_Testany completed=e");
    else LOG("MPI_Testany completed=");
  }
  MPI_Request r2[2];
  MPI_Irecv(y, 1, MPI_DOUBLE, prev, 5, MPI_COMM_WORLD, &r2[0]);
  LOG("MPI_Irecv peer=%d tag=5 count=1 bytes=8 comm=world request=f", prev);
  MPI_Barrier(MPI_COMM_WORLD);
  LOG("MPI_Barrier comm=world");
  MPI_Irsend(x, 1, MPI_DOUBLE, next, 5, MPI_COMM_WORLD, &r2[1]);
  LOG("MPI_Irsend peer=%d tag=5 count=1 bytes=8 comm=world request=g", next);
  int left = 2;
  char lab[2][2] = {"f", "g"};
  while (left > 0) {
    int out, ids[2];
    MPI_Testsome(2, r2, &out, ids, MPI_STATUSES_IGNORE);
    if (out == 0) { LOG("MPI_Testsome completed="); continue; }
    if (out == 1) LOG("MPI_Testsome completed=%s", lab[ids[0]]);
    else LOG("MPI_Testsome completed=%s,%s", lab[ids[0]], lab[ids[1]]);
    left -= out;
  }

  /* matched probes: MPI_Mprobe from any source + MPI_Mrecv, then
   * MPI_Improbe polled until it finds the message + MPI_Imrecv (merged and
   * replayed as MPI_Probe + MPI_Recv and MPI_Iprobe + MPI_Irecv) */
  {
    double out[6] = {0}, in[6];
    MPI_Request sent[2], taken;
    MPI_Message msg;
    MPI_Status st;
    MPI_Isend(out, 5, MPI_DOUBLE, next, 8, MPI_COMM_WORLD, &sent[0]);
    LOG("MPI_Isend peer=%d tag=8 count=5 bytes=40 comm=world request=p8", next);
    MPI_Mprobe(MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &msg, &st);
    LOG("MPI_Mprobe peer=%d tag=8 comm=world any_source=1", st.MPI_SOURCE);
    MPI_Mrecv(in, 5, MPI_DOUBLE, &msg, MPI_STATUS_IGNORE);
    LOG("MPI_Mrecv peer=%d tag=8 count=5 bytes=40 comm=world", st.MPI_SOURCE);
    MPI_Isend(out, 6, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, &sent[1]);
    LOG("MPI_Isend peer=%d tag=9 count=6 bytes=48 comm=world request=p9", next);
    int found = 0;
    while (!found) {
      MPI_Improbe(prev, 9, MPI_COMM_WORLD, &found, &msg, &st);
      if (found) LOG("MPI_Improbe peer=%d tag=9 comm=world", prev);
      else LOG("MPI_Improbe tag=9 comm=world");
    }
    MPI_Imrecv(in, 6, MPI_DOUBLE, &msg, &taken);
    LOG("MPI_Imrecv peer=%d tag=9 count=6 bytes=48 comm=world request=m9", prev);
    MPI_Wait(&taken, MPI_STATUS_IGNORE);
    LOG("MPI_Wait completed=m9");
    MPI_Waitall(2, sent, MPI_STATUSES_IGNORE);
    LOG("MPI_Waitall completed=p8,p9");
  }

  /* one handle behind several live requests: MPI_PROC_NULL sends (and in
   * Open MPI a barrier of one rank) return the library's one empty request,
   * as Graph500's ring of send buffers starts; each completion must name
   * the request the program completed, told apart by where the program
   * keeps it (a test of the barrier is not a test of the oldest send) */
  {
    MPI_Request ring[3], bar;
    static const char* const rl[3] = {"e0", "e1", "e2"};
    for (int j = 0; j < 3; ++j) {
      MPI_Isend(NULL, 0, MPI_CHAR, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &ring[j]);
      LOG("MPI_Isend peer=null tag=0 count=0 bytes=0 comm=world request=%s", rl[j]);
    }
    MPI_Ibarrier(MPI_COMM_SELF, &bar);
    LOG("MPI_Ibarrier comm=self request=eb");
    for (int flag = 0; !flag;) {
      MPI_Test(&bar, &flag, MPI_STATUS_IGNORE);
      if (flag) LOG("MPI_Test completed=eb");
      else LOG("MPI_Test completed=");
    }
    for (int k = 0; k < 3; ++k) {
      int idx = 0;
      MPI_Waitany(3, ring, &idx, MPI_STATUS_IGNORE);
      LOG("MPI_Waitany completed=%s", rl[idx]);
    }
  }

  /* communicators: shared-memory split, group-based creation, graphs */
  MPI_Comm node, evens, evens2, dist, graph;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  LOG("MPI_Comm_split_type comm=world new_comm=node key=%d", rank);
  /* a split the last rank takes no part in (MPI_UNDEFINED: it gets MPI_COMM_NULL) */
  MPI_Comm most;
  const int in_most = rank != size - 1;
  MPI_Comm_split(MPI_COMM_WORLD, in_most ? 0 : MPI_UNDEFINED, rank, &most);
  if (in_most) {
    LOG("MPI_Comm_split comm=world new_comm=most color=0 key=%d", rank);
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, most);
    LOG("MPI_Allreduce count=1 bytes=8 comm=most");
    MPI_Comm_free(&most);
    LOG("MPI_Comm_free comm=most");
  } else {
    LOG("MPI_Comm_split comm=world color=%d key=%d", MPI_UNDEFINED, rank);
  }
  MPI_Group wg, eg;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int ev[64], ne = 0;
  for (int r = 0; r < size; r += 2) ev[ne++] = r;
  MPI_Group_incl(wg, ne, ev, &eg);
  MPI_Comm_create(MPI_COMM_WORLD, eg, &evens);
  if (rank % 2 == 0) LOG("MPI_Comm_create comm=world new_comm=evens");
  else LOG("MPI_Comm_create comm=world");
  if (rank % 2 == 0) {
    MPI_Comm_create_group(MPI_COMM_WORLD, eg, 7, &evens2);
    LOG("MPI_Comm_create_group comm=world tag=7 new_comm=evens2");
    MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_SUM, evens2);
    LOG("MPI_Allreduce count=1 bytes=8 comm=evens2");
    MPI_Comm_free(&evens2);
    LOG("MPI_Comm_free comm=evens2");
    MPI_Comm_free(&evens);
    LOG("MPI_Comm_free comm=evens");
  }
  MPI_Group_free(&eg);
  MPI_Group_free(&wg);
  int srcs[1] = {prev}, dsts[1] = {next};
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dist);
  LOG("MPI_Dist_graph_create_adjacent comm=world new_comm=dist");
  MPI_Sendrecv(x, 1, MPI_DOUBLE, next, 6, y, 1, MPI_DOUBLE, prev, 6, dist, MPI_STATUS_IGNORE);
  LOG("MPI_Sendrecv peer=%d tag=6 count=1 peer2=%d tag2=6 comm=dist", next, prev);
  int index[64], edges[128];
  for (int r = 0; r < size; ++r) { index[r] = 2 * (r + 1); edges[2 * r] = (r + 1) % size; edges[2 * r + 1] = (r + size - 1) % size; }
  MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
  LOG("MPI_Graph_create comm=world new_comm=graph");
  MPI_Comm_free(&graph);
  LOG("MPI_Comm_free comm=graph");
  MPI_Comm_free(&dist);
  LOG("MPI_Comm_free comm=dist");
  MPI_Comm_free(&node);
  LOG("MPI_Comm_free comm=node");
  /* a communicator duplicated without blocking: its request is not recorded */
  MPI_Comm idup;
  MPI_Request idup_req;
  MPI_Comm_idup(MPI_COMM_WORLD, &idup, &idup_req);
  LOG("MPI_Comm_idup comm=world new_comm=idup");
  MPI_Wait(&idup_req, MPI_STATUS_IGNORE);
  LOG("MPI_Wait");
  MPI_Allreduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE, MPI_SUM, idup);
  LOG("MPI_Allreduce count=1 bytes=8 comm=idup in_place=1");
  MPI_Comm_free(&idup);
  LOG("MPI_Comm_free comm=idup");

  /* one-sided */
  MPI_Win win;
  double wbuf[4] = {0};
  MPI_Win_create(wbuf, sizeof wbuf, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  LOG("MPI_Win_create comm=world");
  const int iters = app_iters(argc, argv, 1);
  for (int it = 0; it < iters; ++it) {
  x[7] += busy(300000) > 2 ? 1 : 0;
  MPI_Win_fence(0, win);
  LOG("MPI_Win_fence");
  MPI_Put(x, 1, MPI_DOUBLE, next, 0, 1, MPI_DOUBLE, win);
  LOG("MPI_Put count=1 bytes=8");
  MPI_Accumulate(x, 1, MPI_DOUBLE, next, 1, 1, MPI_DOUBLE, MPI_SUM, win);
  LOG("MPI_Accumulate count=1 bytes=8");
  MPI_Win_fence(0, win);
  LOG("MPI_Win_fence");
  MPI_Get(y, 2, MPI_DOUBLE, prev, 0, 2, MPI_DOUBLE, win);
  LOG("MPI_Get count=2 bytes=16");
  MPI_Win_fence(0, win);
  LOG("MPI_Win_fence");
  }
  MPI_Win_free(&win);
  LOG("MPI_Win_free");
  /* general active target (post-start-complete-wait): each rank exposes its
   * window to the rank before it and puts into the rank after it */
  MPI_Win_create(wbuf, sizeof wbuf, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  LOG("MPI_Win_create comm=world");
  MPI_Group world_group, from, to;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, 1, &prev, &from);
  MPI_Group_incl(world_group, 1, &next, &to);
  for (int it = 0; it < iters; ++it) {
    MPI_Win_post(from, 0, win);
    LOG("MPI_Win_post");
    MPI_Win_start(to, 0, win);
    LOG("MPI_Win_start");
    MPI_Put(x, 2, MPI_DOUBLE, next, 0, 2, MPI_DOUBLE, win);
    LOG("MPI_Put count=2 bytes=16");
    MPI_Win_complete(win);
    LOG("MPI_Win_complete");
    MPI_Win_wait(win);
    LOG("MPI_Win_wait");
  }
  MPI_Group_free(&from);
  MPI_Group_free(&to);
  MPI_Group_free(&world_group);
  MPI_Win_free(&win);
  LOG("MPI_Win_free");
  /* passive target on a window MPI allocates, atomics, flushes; a dynamic
   * window and a shared one (on MPI_COMM_SELF) created and freed */
  double* wmem;
  MPI_Win_allocate(4 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &wmem, &win);
  LOG("MPI_Win_allocate comm=world");
  MPI_Win_lock_all(0, win);
  LOG("MPI_Win_lock_all");
  MPI_Fetch_and_op(&x[0], &y[0], MPI_DOUBLE, next, 0, MPI_SUM, win);
  LOG("MPI_Fetch_and_op");
  MPI_Win_flush(next, win);
  LOG("MPI_Win_flush");
#ifndef OPEN_MPI /* Open MPI 4.1's osc/rdma over vader crashes in MPI_Compare_and_swap here */
  long long swap[3] = {rank, 0, 0};  /* compare and swap takes integers only */
  MPI_Compare_and_swap(&swap[0], &swap[1], &swap[2], MPI_LONG_LONG, next, 1, win);
  LOG("MPI_Compare_and_swap");
#endif
  MPI_Win_flush_local(next, win);
  LOG("MPI_Win_flush_local");
  MPI_Get_accumulate(&x[3], 1, MPI_DOUBLE, &y[2], 1, MPI_DOUBLE, prev, 2, 1, MPI_DOUBLE, MPI_SUM, win);
  LOG("MPI_Get_accumulate count=1 bytes=8");
  MPI_Win_flush_all(win);
  LOG("MPI_Win_flush_all");
  MPI_Win_flush_local_all(win);
  LOG("MPI_Win_flush_local_all");
  MPI_Win_sync(win);
  LOG("MPI_Win_sync");
  MPI_Win_unlock_all(win);
  LOG("MPI_Win_unlock_all");
  MPI_Win_free(&win);
  LOG("MPI_Win_free");
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  LOG("MPI_Win_create_dynamic comm=world");
  MPI_Win_free(&win);
  LOG("MPI_Win_free");
  MPI_Win_allocate_shared(sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_SELF, &wmem, &win);
  LOG("MPI_Win_allocate_shared comm=self");
  MPI_Win_free(&win);
  LOG("MPI_Win_free");

  /* MPI-IO: every rank writes its own block of one file, reads it back */
  char path[4096];
  const char* dir = getenv("APPLOG_DIR");
  snprintf(path, sizeof path, "%s/misc-io.dat", dir ? dir : "/tmp");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  LOG("MPI_File_open comm=world");
  MPI_File_write_at(fh, (MPI_Offset)rank * 8 * sizeof(double), x, 8, MPI_DOUBLE, MPI_STATUS_IGNORE);
  LOG("MPI_File_write_at count=8 bytes=64");
  MPI_File_sync(fh);
  LOG("MPI_File_sync");
  MPI_File_read_at(fh, (MPI_Offset)rank * 8 * sizeof(double), y, 8, MPI_DOUBLE, MPI_STATUS_IGNORE);
  LOG("MPI_File_read_at count=8 bytes=64");
  MPI_File_close(&fh);
  LOG("MPI_File_close");

  /* Many requests completed at once right after they were posted: what the
   * tracer does before the Waitall's own call (looking up its 512 requests,
   * 15-50 us here) is not computation and must not be in the gap before it.
   * The posting calls are logged after the Waitall, so no logging is in
   * that gap either (checked as gap_under=). */
  {
    enum { MANY = 256 };
    static double many_out[MANY], many_in[MANY];
    static char done[2 * MANY * 16];
    MPI_Request many[2 * MANY];
    for (int rep = 0; rep < 3; ++rep) {
      for (int i = 0; i < MANY; ++i)
        MPI_Irecv(&many_in[i], 1, MPI_DOUBLE, prev, 1000, MPI_COMM_WORLD, &many[i]);
      for (int i = 0; i < MANY; ++i)
        MPI_Isend(&many_out[i], 1, MPI_DOUBLE, next, 1000, MPI_COMM_WORLD, &many[MANY + i]);
      MPI_Waitall(2 * MANY, many, MPI_STATUSES_IGNORE);
      int pos = 0;
      for (int i = 0; i < MANY; ++i) {
        LOG("MPI_Irecv peer=%d tag=1000 count=1 bytes=8 comm=world request=mr%d_%d", prev, rep, i);
        pos += snprintf(done + pos, sizeof done - pos, "%smr%d_%d", i ? "," : "", rep, i);
      }
      for (int i = 0; i < MANY; ++i) {
        LOG("MPI_Isend peer=%d tag=1000 count=1 bytes=8 comm=world request=ms%d_%d", next, rep, i);
        pos += snprintf(done + pos, sizeof done - pos, ",ms%d_%d", rep, i);
      }
      LOG("MPI_Waitall completed=%s gap_under=0.000005", done);
    }
  }

  double s = 0, total;
  for (int i = 0; i < 8; ++i) s += y[i];
  MPI_Reduce(&s, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  LOG("MPI_Reduce root=0 count=1 bytes=8 comm=world");
  if (rank == 0) printf("misc: checksum %.3f\n", total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
