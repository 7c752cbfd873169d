/* Persistent requests: Send_init/Recv_init once, Startall + Waitall each
 * iteration, a single Start + Wait, then Request_free. The trace must keep
 * the same request ids across iterations. */
#include "applog.h"

int main(int argc, char** argv) {
  int rank, size;
  app_start(&argc, &argv, &rank, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  double out[16], in[16], sum = 0;
  for (int i = 0; i < 16; ++i) out[i] = rank + i;
  MPI_Request req[2];
  MPI_Recv_init(in, 16, MPI_DOUBLE, prev, 5, MPI_COMM_WORLD, &req[0]);
  LOG("MPI_Recv_init peer=%d tag=5 count=16 bytes=128 comm=world request=precv", prev);
  MPI_Send_init(out, 16, MPI_DOUBLE, next, 5, MPI_COMM_WORLD, &req[1]);
  LOG("MPI_Send_init peer=%d tag=5 count=16 bytes=128 comm=world request=psend", next);
  const int iters = app_iters(argc, argv, 4);
  for (int it = 0; it < iters; ++it) {
    MPI_Startall(2, req);
    LOG("MPI_Startall reqs=precv,psend");
    sum += busy(10000);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    LOG("MPI_Waitall completed=precv,psend");
    sum += in[0];
  }
  MPI_Start(&req[0]);
  LOG("MPI_Start reqs=precv");
  MPI_Start(&req[1]);
  LOG("MPI_Start reqs=psend");
  MPI_Wait(&req[1], MPI_STATUS_IGNORE);
  LOG("MPI_Wait completed=psend");
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
  LOG("MPI_Wait completed=precv");
  MPI_Request_free(&req[0]);
  LOG("MPI_Request_free reqs=precv");
  MPI_Request_free(&req[1]);
  LOG("MPI_Request_free reqs=psend");
  double total;
  MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  LOG("MPI_Allreduce count=1 bytes=8 comm=world");
  if (rank == 0) printf("persistent: checksum %.6f\n", total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return 0;
}
