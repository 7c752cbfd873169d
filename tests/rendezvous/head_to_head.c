/* The control of tests/run_rendezvous_test.sh: both ranks send before they
 * receive. With eager messages this finishes; under forced rendezvous it must
 * deadlock, which shows that the setting really forces rendezvous. */
#include <mpi.h>

int main(int argc, char** argv) {
  int rank, x[4] = {0}, y[4];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Send(x, 4, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD);
  MPI_Recv(y, 4, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
