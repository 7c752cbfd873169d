// Several traced runs of one program merged as one (merge::load_runs,
// docs/merge.md "Several runs"): each time the median over the runs at its
// position, checked against a brute-force median of the synthetic runs'
// own times; runs that differ in structure give the run of median time.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "skel/merge.h"
#include "skel/skel_funcs.h"
#include "folded_fixtures.h"
#include "synthetic.h"
#include "trace_fixtures.h"

using namespace skt;
using namespace skt::testing;

namespace {

constexpr uint32_t kP = 3, kSteps = 12;

// Run k's time of rank r's call i: a base, a wobble of its own per run (under
// 10 % of it, with the call's duration's), and
// in run `disturbed` (if any) rank 1's seventh call 20 ms late.
int64_t gap_of(uint32_t k, uint32_t r, size_t i, int disturbed) {
  int64_t g = 200000 + 1000 * static_cast<int64_t>(i) + 1499 * ((k * 31 + r * 17 + i * 13) % 11);
  if (static_cast<int>(k) == disturbed && r == 1 && i == 7) g += 20000000;
  return g;
}
int64_t dur_of(uint32_t k, uint32_t r, size_t i) { return 3000 + 211 * ((k * 7 + r * 5 + i * 3) % 13); }

// A ring: each step every rank sends to the next and receives from the one
// before, 200 us or more of computation apart (so that no call moves in
// normalisation: each rank's merged order is its own). extra: rank 1 makes
// one Barrier more at the end. any_source: rank 0's receives take MPI_ANY_SOURCE
// (the matched source: the one before it, or in run 2 the next rank).
std::vector<Syn> ring(uint32_t k, uint32_t r, int disturbed, bool extra = false, bool any_source = false) {
  std::vector<Syn> v{call(kFunc_MPI_Init, 0)};
  for (uint32_t s = 0; s < kSteps; ++s) {
    v.push_back(message(kFunc_MPI_Send, 1, (r + 1) % kP, 0));
    Syn q = message(kFunc_MPI_Recv, 2, (r + kP - 1) % kP, 0);
    if (any_source && r == 0) {
      q.flags = kFlagAnySource;
      if (k == 2) q.peer = 1;
    }
    v.push_back(q);
  }
  if (extra && r == 1) v.push_back(call(kFunc_MPI_Barrier, 3));
  v.push_back(call(kFunc_MPI_Finalize, 4));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i].gap = gap_of(k, r, i, disturbed);
    v[i].dur = dur_of(k, r, i);
  }
  return v;
}

std::vector<std::string> write_runs(const std::string& tag, int disturbed, uint32_t mismatched = 99,
                                    bool any_source = false) {
  std::vector<std::string> dirs;
  const std::string parent = temp_dir(tag);
  for (uint32_t k = 0; k < 3; ++k) {
    dirs.push_back(parent + "/run-" + std::to_string(k + 1));
    mkdir(dirs.back().c_str(), 0755);
    write_synthetic(dirs.back(), kP, [&](uint32_t r) { return ring(k, r, disturbed, k == mismatched, any_source); },
                    100 + k);
  }
  return dirs;
}

int64_t median3(int64_t a, int64_t b, int64_t c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); }

merge::Options options() {
  merge::Options opt;
  opt.order = merge::Order::kWalk;
  return opt;
}

}  // namespace

TEST(Runs, EachTimeIsTheMedianOfTheRunsAtItsPosition) {
  const std::vector<std::string> dirs = write_runs("runs_median", 1);
  merge::Loaded l = merge::load_runs(dirs, options());
  ASSERT_TRUE(l.runs.medians) << l.runs.mismatch;
  const MergedTrace m = merge::merge(l, options());
  EXPECT_TRUE(merge::verify(m, l).empty());
  size_t positions = 0;
  for (uint32_t r = 0; r < kP; ++r) {
    const std::vector<Syn> calls = ring(0, r, -1);
    ASSERT_EQ(m.ranks[r].gaps.size(), calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      // the brute-force median of the three runs' own values
      if (i > 0) {  // the first call's gap is from MPI_Init's start: the tracer's, not ours
        EXPECT_EQ(m.ranks[r].gaps[i], median3(gap_of(0, r, i, 1), gap_of(1, r, i, 1), gap_of(2, r, i, 1)))
            << "rank " << r << " call " << i;
      }
      EXPECT_EQ(m.ranks[r].durations[i], median3(dur_of(0, r, i), dur_of(1, r, i), dur_of(2, r, i)))
          << "rank " << r << " call " << i;
      ++positions;
    }
  }
  EXPECT_EQ(l.runs.positions, positions);
  // the disturbed call varies by more than 10 % (and each rank's first, whose gap is the tracer's), no other
  EXPECT_GE(l.runs.varying, 1u);
  EXPECT_LE(l.runs.varying, 1u + kP);
  // the disturbed run is the slowest by its 20 ms, and the merged times do not hold them
  ASSERT_EQ(l.runs.total_s.size(), 3u);
  EXPECT_GT(l.runs.total_s[1], l.runs.total_s[0] + 0.019);
  EXPECT_GT(l.runs.total_s[1], l.runs.total_s[2] + 0.019);
  EXPECT_GT(l.runs.spread, 0.019 / l.runs.median_s);
  EXPECT_NE(merge::describe(l.runs).find("per-position medians"), std::string::npos) << merge::describe(l.runs);
}

TEST(Runs, ADirectoryOfRunsIsLoadedAsItsRuns) {
  const std::vector<std::string> dirs = write_runs("runs_parent", 2);
  const std::string parent = dirs[0].substr(0, dirs[0].rfind('/'));
  EXPECT_EQ(TraceDir::run_dirs(parent), dirs);
  const merge::Loaded a = merge::load(parent, options()), b = merge::load_runs(dirs, options());
  const MergedTrace ma = merge::merge(a, options()), mb = merge::merge(b, options());
  for (uint32_t r = 0; r < kP; ++r) {
    EXPECT_EQ(ma.ranks[r].gaps, mb.ranks[r].gaps);
    EXPECT_EQ(ma.ranks[r].durations, mb.ranks[r].durations);
  }
  EXPECT_EQ(a.runs.dirs, dirs);
  EXPECT_TRUE(TraceDir::run_dirs(dirs[0]).empty()) << "a run's own directory holds rank files";
}

TEST(Runs, RunsThatDifferInStructureGiveTheRunOfMedianTime) {
  // run 3 (index 2) makes one call more on rank 1; run 2 (index 1) is disturbed, so run 1 or 3 has the median time
  const std::vector<std::string> dirs = write_runs("runs_mismatch", 1, 2);
  merge::Loaded l = merge::load_runs(dirs, options());
  EXPECT_FALSE(l.runs.medians);
  const std::string line = merge::describe(l.runs);
  EXPECT_NE(line.find("differ in structure"), std::string::npos) << line;
  EXPECT_NE(line.find("rank 1"), std::string::npos) << line;
  std::vector<double> sorted = l.runs.total_s;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(l.runs.total_s[l.runs.used], sorted[1]) << "the run of median time";
  // what was merged is that run alone, times and all
  const merge::Loaded alone = merge::load(dirs[l.runs.used], options());
  const MergedTrace m = merge::merge(l, options()), ma = merge::merge(alone, options());
  for (uint32_t r = 0; r < kP; ++r) EXPECT_EQ(m.ranks[r].gaps, ma.ranks[r].gaps);
}

TEST(Runs, AnySourceReceivesThatMatchedOtherSourcesStillAgree) {
  const std::vector<std::string> dirs = write_runs("runs_any", -1, 99, true);
  merge::Loaded l = merge::load_runs(dirs, options());
  EXPECT_TRUE(l.runs.medians) << l.runs.mismatch;
  EXPECT_EQ(l.runs.other_matches, kSteps) << "rank 0's receives in run 3 matched another source";
  EXPECT_NE(merge::describe(l.runs).find("matched other messages"), std::string::npos);
}
