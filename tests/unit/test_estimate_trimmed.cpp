// The alternative estimate that generate/bench/estimate.sh compares with the
// skeleton's own (-DSKEL_ESTIMATE_TRIMMED_MEAN, generate/templates/skel_estimate.h):
// every period at the trimmed mean of periods 1.., against its definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <vector>

#define SKEL_ESTIMATE_TRIMMED_MEAN
#include "skel_estimate.h"

TEST(EstimateTrimmed, EveryPeriodAtTheTrimmedMeanOfPeriodsAfterTheFirst) {
  std::srand(7);
  for (int n = 2; n <= SKEL_PERIOD_SAMPLES; ++n) {
    std::vector<double> p(static_cast<size_t>(n));
    for (double& x : p) x = 1 + std::rand() % 1000 / 100.0;
    std::vector<double> s(p.begin() + 1, p.end());
    std::sort(s.begin(), s.end());
    const size_t cut = s.size() / 4;
    const double mean = std::accumulate(s.begin() + cut, s.end() - cut, 0.0) / static_cast<double>(s.size() - 2 * cut);
    const double want = 9 * (n * mean + 0.25);
    EXPECT_NEAR(skel_left_out_time(p.data(), n, 0.25, 10), want, 1e-9 * want) << n << " periods";
  }
}
