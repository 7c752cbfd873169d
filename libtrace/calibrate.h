// The reference kernel's rate on this node, as the tracer records it in
// each rank's header (MPI_Init) and libtrace/bench/calibration.cpp checks it.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "skel/skel_kernel.h"

namespace skt::tracer {

// Nanoseconds of clock Id (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID ...); a
// function, so that calibrate() can take it as its clock.
template <clockid_t Id>
inline int64_t clock_ns() {
  timespec ts;
  clock_gettime(Id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// The median of sorted, non-empty rates.
inline double median_of_sorted(const std::vector<double>& rates) {
  size_t n = rates.size();
  return n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
}

// Kernel units per second of `clock` (monotonic or thread CPU ns), for `ms`
// of that clock: per CPU second when ranks share cores, so that a contended
// start-up does not understate the node's speed. `seconds`: the wall time it
// took; `best` (optional): the fastest run's rate.
//
// Doubles the work until one run takes ms/8, then takes the median rate of
// the runs that fit in the budget, leaving out runs more than 10 % slower
// than the best (descheduled: another process had the core). Not the best:
// the application's gaps include the small interruptions a typical run has,
// and the best of several runs overstated the rate by 4 % on average here
// (libtrace/bench/calibration.sh), so skeletons computed too long.
inline double calibrate(int ms, double& seconds, int64_t (*clock)(), double* best = nullptr) {
  auto wall_ns = clock_ns<CLOCK_MONOTONIC>;
  if (best) *best = 0;
  if (ms <= 0) {
    seconds = 0;
    return 0;
  }
  volatile double sink = 0;
  unsigned long long units = 1000;
  int64_t begin = clock(), wall_begin = wall_ns();
  double last = 0;
  std::vector<double> rates;
  for (;;) {
    int64_t a = clock();
    sink = sink + skel_kernel_run(units, 1.0 + static_cast<double>(units & 7));
    int64_t b = clock();
    double dt = static_cast<double>(b - a) * 1e-9;
    if (dt > 0) last = static_cast<double>(units) / dt;
    if (dt > 0 && dt * 8000 >= ms) rates.push_back(last);
    else units *= 2;
    if ((b - begin) >= static_cast<int64_t>(ms) * 1000000) break;
  }
  seconds = static_cast<double>(wall_ns() - wall_begin) * 1e-9;
  (void)sink;
  if (rates.empty()) return last;
  std::sort(rates.begin(), rates.end());
  if (best) *best = rates.back();
  rates.erase(rates.begin(), std::lower_bound(rates.begin(), rates.end(), 0.9 * rates.back()));
  return median_of_sorted(rates);
}

// One sample of the kernel's rate during the run: `units` units timed on
// `clock`, in units per second (0 if the clock did not move).
inline double sample_rate(unsigned long long units, int64_t (*clock)()) {
  volatile double sink = 0;
  int64_t a = clock();
  sink = sink + skel_kernel_run(units, 1.0 + static_cast<double>(units & 7));
  int64_t b = clock();
  (void)sink;
  return b > a ? static_cast<double>(units) / (static_cast<double>(b - a) * 1e-9) : 0;
}

// The rate a trace keeps for its whole run: the median of the MPI_Init
// calibration and the samples taken during the run. One calibration at
// MPI_Init moved by +-8 % from run to run here while the application's own
// computation moved by 3 % (docs/tracer.md); the samples follow the machine
// through the run, and the median leaves out one that was descheduled.
inline double run_rate(double init_rate, std::vector<double> samples) {
  if (init_rate > 0) samples.push_back(init_rate);
  samples.erase(std::remove_if(samples.begin(), samples.end(), [](double r) { return !(r > 0); }), samples.end());
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return median_of_sorted(samples);
}

}  // namespace skt::tracer
