// The tracer's kernel rate for a whole run (libtrace/calibrate.h): the
// median of MPI_Init's calibration and the samples taken during the run,
// checked against a brute-force median, and one sample against the kernel's
// own work on a clock that counts it.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "calibrate.h"

namespace {

double brute_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

TEST(Calibrate, RunRateIsTheMedianOfTheInitRateAndTheSamples) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> samples(rng() % 9);
    for (double& s : samples) s = 1e7 + static_cast<double>(rng() % 1000000);
    double init = 1e7 + static_cast<double>(rng() % 1000000);
    std::vector<double> all = samples;
    all.push_back(init);
    EXPECT_DOUBLE_EQ(skt::tracer::run_rate(init, samples), brute_median(all));
  }
}

TEST(Calibrate, RunRateLeavesOutWhatWasNotMeasured) {
  // no sample: MPI_Init's rate alone
  EXPECT_DOUBLE_EQ(skt::tracer::run_rate(2.5e7, {}), 2.5e7);
  // a sample whose clock did not move (rate 0) is not a vote
  EXPECT_DOUBLE_EQ(skt::tracer::run_rate(2.0e7, {0.0, 3.0e7, 0.0}), 2.5e7);
  // calibration off (rate 0): the samples alone; nothing: 0
  EXPECT_DOUBLE_EQ(skt::tracer::run_rate(0, {1e7, 2e7, 6e7}), 2e7);
  EXPECT_DOUBLE_EQ(skt::tracer::run_rate(0, {}), 0);
  // one descheduled sample (a third of the rate) does not move the median far
  EXPECT_DOUBLE_EQ(skt::tracer::run_rate(3.0e7, {1.0e7, 3.1e7, 2.9e7, 3.05e7}), 3.0e7);
}

// A fake clock that advances 1 ns per call: sample_rate times the kernel
// between two readings, so its rate is the units over 1 ns.
int64_t ticks = 0;
int64_t fake_clock() { return ticks++; }

TEST(Calibrate, SampleRateIsUnitsOverTheClocksDifference) {
  ticks = 1000;
  EXPECT_DOUBLE_EQ(skt::tracer::sample_rate(500, fake_clock), 500 / 1e-9);
  auto frozen = []() -> int64_t { return 42; };
  EXPECT_EQ(skt::tracer::sample_rate(500, frozen), 0);
}

}  // namespace
