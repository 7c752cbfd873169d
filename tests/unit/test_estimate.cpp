// What a cut loop predicts (generate/templates/skel_estimate.h, the C every
// skeleton carries): each later period for itself and f - 1 more, period 0's
// left-out neighbours as long as period 1, a delayed period as the median.
#include <gtest/gtest.h>

#include <cstdlib>

#include "skel_estimate.h"

namespace {

TEST(Estimate, SteadyPeriodsStandForTheirNeighbours) {
  const double p[] = {5, 2, 2, 2};  // period 0 holds the entry skew
  // 3 steady periods x 9 left out each, and period 0's 9 neighbours as long as period 1
  EXPECT_DOUBLE_EQ(skel_left_out_time(p, 4, 0, 10), 9 * 6 + 9 * 2);
  EXPECT_DOUBLE_EQ(skel_left_out_time(p, 4, 0.5, 10), 9 * 6 + 9 * 2 + 9 * 0.5);  // time after the last period kept
}

TEST(Estimate, ADelayedPeriodCountsAsTheMedianInWhatItStandsFor) {
  const double steady[] = {5, 2, 2, 2, 2}, delayed[] = {5, 2, 20, 2, 2};
  EXPECT_DOUBLE_EQ(skel_left_out_time(delayed, 5, 0, 10), skel_left_out_time(steady, 5, 0, 10));
  const double first_delayed[] = {5, 20, 2, 2, 2};  // period 1 also stands for period 0's neighbours
  EXPECT_DOUBLE_EQ(skel_left_out_time(first_delayed, 5, 0, 10), skel_left_out_time(steady, 5, 0, 10));
}

TEST(Estimate, ADriftingComputationKeepsEachPeriodsTime) {
  const double drift[] = {5, 2, 3, 4, 5};  // within 3x the median (3.5): no period is taken for delayed
  EXPECT_DOUBLE_EQ(skel_left_out_time(drift, 5, 0, 10), 9 * (2 + 3 + 4 + 5) + 9 * 2);
}

TEST(Estimate, OnePeriodIsExtrapolatedWhole) {
  const double one[] = {5};
  EXPECT_DOUBLE_EQ(skel_left_out_time(one, 1, 1, 4), 3 * 6);
  EXPECT_DOUBLE_EQ(skel_left_out_time(one, 0, 6, 4), 3 * 6);
}

// Kept runs of the top level: each stands for factor - 1 more of its
// measured time; one a process delayed (measured / traced over 3 times its
// class's median) counts as its class's median there.
TEST(Estimate, ADelayedRunStandsForOthersAtItsClasssSpeed) {
  const double traced[] = {1e-4, 2e-4, 1e-4, 1e-4, 5e-3};
  const int cls[] = {1, 1, 1, 1, 2};
  const double factor[] = {10, 10, 10, 10, 3};
  const double steady[] = {1.1e-4, 2.2e-4, 1.1e-4, 1.1e-4, 5e-3};
  const double delayed[] = {1.1e-4, 2.2e-4, 4.0e-4, 1.1e-4, 5e-3};  // run 2 held up 290 us: ratio 4 against 1.1
  const double want = 9 * (1.1e-4 + 2.2e-4 + 1.1e-4 + 1.1e-4) + 2 * 5e-3;
  EXPECT_NEAR(skel_runs_left_out_time(steady, traced, cls, factor, 5), want, 1e-15);
  EXPECT_NEAR(skel_runs_left_out_time(delayed, traced, cls, factor, 5), want, 1e-15);
  // under 3 times the median: its own measured speed
  const double slower[] = {1.1e-4, 2.2e-4, 3.0e-4, 1.1e-4, 5e-3};
  EXPECT_NEAR(skel_runs_left_out_time(slower, traced, cls, factor, 5), want + 9 * (3.0e-4 - 1.1e-4), 1e-15);
}

// Classes keep their own medians: a class of small messages that runs 5
// times its traced time (a slower network, SimGrid) is not delayed against
// a class of computation that runs at its traced speed (the median of all
// runs' ratios is 1); a class of fewer than 3 runs, runs without a traced
// time, and timers that are no kept run (measured 0) keep their measured
// times.
TEST(Estimate, RunsAreOutliersOnlyAgainstTheirOwnClass) {
  const double traced[] = {1e-4, 1e-4, 1e-4, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-4, 1e-4, 0, 1e-4};
  const int cls[] = {1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 0, -1};
  const double factor[] = {4, 4, 4, 2, 2, 2, 2, 2, 5, 5, 7, 9};
  const double measured[] = {5e-4, 5e-4, 6e-4, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-4, 9e-4, 2e-4, 0};
  double want = 3 * (5e-4 + 5e-4 + 6e-4) + 1 * 5e-3 + 4 * (1e-4 + 9e-4) + 6 * 2e-4;
  EXPECT_NEAR(skel_runs_left_out_time(measured, traced, cls, factor, 12), want, 1e-15);
  EXPECT_DOUBLE_EQ(skel_runs_left_out_time(measured, traced, cls, factor, 0), 0);
}

// A farm's left-out tasks: where the master's replay of the kept farm was
// right, whole - kept; where it came out 10 % long (ranks sharing cores),
// the whole replay is taken 10 % shorter; a replay far off is trusted
// within a factor of 2 only.
TEST(Estimate, AFarmsReplayIsScaledByHowItMissedTheKeptFarm) {
  EXPECT_DOUBLE_EQ(skel_farm_scaled_left_out(1.0, 0.1, 0.1), 0.9);
  EXPECT_NEAR(skel_farm_scaled_left_out(0.456, 0.048, 0.0437), 0.456 * 0.0437 / 0.048 - 0.0437, 1e-12);
  EXPECT_LT(skel_farm_scaled_left_out(0.456, 0.048, 0.0437), 0.456 - 0.048);
  EXPECT_DOUBLE_EQ(skel_farm_scaled_left_out(1.0, 0.1, 0.5), 2 * 1.0 - 0.5);   // measured 5x the replay: x2
  EXPECT_DOUBLE_EQ(skel_farm_scaled_left_out(1.0, 0.1, 0.01), 0.5 * 1.0 - 0.01);  // a tenth: x1/2
  EXPECT_DOUBLE_EQ(skel_farm_scaled_left_out(1.0, 0.0, 0.1), 1.0);  // no replay of the kept farm
  EXPECT_DOUBLE_EQ(skel_farm_scaled_left_out(0.1, 0.2, 0.0), 0.0);  // never below nothing
}

}  // namespace
