/* A particle-in-cell code's shape (as PRK's PIC kernel): the ranks own
 * slabs of a periodic domain in a ring; every step each rank moves its
 * particles (computation in proportion to how many it holds), then tells
 * its two neighbours how many leave towards them and sends them: two
 * exchanges of non-blocking messages, the second's counts different in
 * every step (0 to a few dozen particles of 80 bytes, drawn from a
 * deterministic generator). The even ranks start with four times the
 * particles of the odd ones, so they compute about four times as long
 * (ranks that share cores must not pair the heavy ones). Every 10th step an
 * MPI_Allreduce checks that no particle was lost. usage: particles [STEPS]
 * (default 60). */
#include "applog.h"

enum { kDoubles = 10, kMost = 64 };  /* a particle: 10 doubles (80 bytes); most that leave one way per step */
enum { kRight = 0, kLeft = 1 };      /* directions; the tags of the count and particle messages */

static unsigned next_random(unsigned* state) {
  *state = *state * 1103515245u + 12345u;
  return (*state >> 16) & 0x7fff;
}

static int rank, size;

/* Posts both directions' receives and sends of one exchange and completes them. */
static void exchange(int tag0, void* in[2], const int in_n[2], void* out[2], const int out_n[2], MPI_Datatype type,
                     int type_bytes, const char* what, int step) {
  const int peer[2] = {(rank + 1) % size, (rank + size - 1) % size};
  MPI_Request req[4];
  for (int d = 0; d < 2; ++d) { /* from the left comes what travels right */
    MPI_Irecv(in[d], in_n[d], type, peer[1 - d], tag0 + d, MPI_COMM_WORLD, &req[d]);
    LOG("MPI_Irecv peer=%d tag=%d count=%d bytes=%d comm=world request=%s%d.%d", peer[1 - d], tag0 + d, in_n[d],
        in_n[d] * type_bytes, what, step, d);
  }
  for (int d = 0; d < 2; ++d) {
    MPI_Isend(out[d], out_n[d], type, peer[d], tag0 + d, MPI_COMM_WORLD, &req[2 + d]);
    LOG("MPI_Isend peer=%d tag=%d count=%d bytes=%d comm=world request=%s%d.%d", peer[d], tag0 + d, out_n[d],
        out_n[d] * type_bytes, what, step, 2 + d);
  }
  MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
  LOG("MPI_Waitall completed=%s%d.0,%s%d.1,%s%d.2,%s%d.3", what, step, what, step, what, step, what, step);
}

int main(int argc, char** argv) {
  app_start(&argc, &argv, &rank, &size);
  const int steps = app_iters(argc, argv, 60);
  MPI_Datatype particle;
  MPI_Type_contiguous(kDoubles, MPI_DOUBLE, &particle);
  MPI_Type_commit(&particle);
  LOG("MPI_Type_commit");
  static double leaving[2][kMost * kDoubles], arriving[2][kMost * kDoubles];
  long held = rank % 2 == 0 ? 4000 : 1000, total0 = 0, total = 0;
  unsigned state = 7u + 31u * (unsigned)rank;
  double acc = 0;
  for (int it = 0; it < steps; ++it) {
    acc += busy((int)(held * 200)); /* move the particles */
    int out_n[2], in_n[2];
    for (int d = 0; d < 2; ++d) {
      out_n[d] = (int)(next_random(&state) % (kMost / 2 + 1)) + (held > 1000 ? (int)(next_random(&state) % (kMost / 2)) : 0);
      if (out_n[d] > held / 4) out_n[d] = (int)(held / 4);
      for (int i = 0; i < out_n[d] * kDoubles; ++i) leaving[d][i] = acc + i;
    }
    void* counts_out[2] = {&out_n[0], &out_n[1]}, *counts_in[2] = {&in_n[0], &in_n[1]};
    const int ones[2] = {1, 1};
    exchange(0, counts_in, ones, counts_out, ones, MPI_INT, 4, "c", it);
    void* parts_out[2] = {leaving[0], leaving[1]}, *parts_in[2] = {arriving[0], arriving[1]};
    exchange(2, parts_in, in_n, parts_out, out_n, particle, 8 * kDoubles, "p", it);
    held += in_n[0] + in_n[1] - out_n[0] - out_n[1];
    acc += arriving[0][0] * 1e-12;
    if (it % 10 == 0 || it == steps - 1) {
      MPI_Allreduce(&held, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      LOG("MPI_Allreduce count=1 bytes=8 comm=world");
      if (it == 0) total0 = total;
      if (total != total0 && rank == 0) fprintf(stderr, "particles: %ld particles, started with %ld\n", total, total0);
    }
  }
  MPI_Type_free(&particle);
  if (rank == 0) printf("particles: %d steps on %d ranks, %ld particles\n", steps, size, total);
  LOG("MPI_Finalize");
  MPI_Finalize();
  return total == total0 ? 0 : 1;
}
