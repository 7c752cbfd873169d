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
