// How well one kernel calibration predicts the kernel's own speed right
// after it: calibrate as MPI_Init does (skt::tracer::calibrate, 20 ms), then
// run SECONDS of kernel in pieces of PIECE_MS at the calibrated rate, the
// way a skeleton runs its gaps, and print the time taken over the time the
// rate promised, for the median rate (what the tracer records) and for the
// fastest run's rate (what it recorded before). 1.00 = exact; above 1 the
// skeleton computes too long.
//   calibration [SECONDS [PIECE_MS [CALIBRATION_MS]]]   (libtrace/bench/calibration.sh runs it)
#include <cstdio>
#include <cstdlib>

#include "calibrate.h"

constexpr auto monotonic_ns = skt::tracer::clock_ns<CLOCK_MONOTONIC>;

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 0.24, piece = (argc > 2 ? std::atof(argv[2]) : 0.24) * 1e-3;
  int cal_ms = argc > 3 ? std::atoi(argv[3]) : 20;
  if (seconds <= 0 || piece <= 0 || piece > seconds || cal_ms <= 0) {
    std::fprintf(stderr, "usage: calibration [SECONDS > 0 [PIECE_MS > 0 [CALIBRATION_MS > 0]]]\n");
    return 2;
  }
  double cal_s = 0, best = 0;
  double median = skt::tracer::calibrate(cal_ms, cal_s, monotonic_ns, &best);
  auto units = static_cast<unsigned long long>(piece * median);
  long pieces = static_cast<long>(seconds / piece);
  volatile double sink = 0;
  int64_t a = monotonic_ns();
  for (long i = 0; i < pieces; ++i) sink = sink + skel_kernel_run(units, 1.0);
  double took = static_cast<double>(monotonic_ns() - a) * 1e-9, promised = static_cast<double>(pieces) * piece;
  // the median rate promised `promised`; the best rate would have asked for best/median times the work
  std::printf("median_ratio=%.4f best_ratio=%.4f median_rate=%.4g best_rate=%.4g\n", took / promised,
              took / promised * best / median, median, best);
  return 0;
}
