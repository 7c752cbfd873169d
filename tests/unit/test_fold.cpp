// The folding core against brute force: suffix array vs sorting, LCE vs
// direct comparison, maximal runs vs an exhaustive search, fold/expand round
// trips, and the greedy fold's length against an exact dynamic program.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <tuple>

#include "skel/fold.h"

#include <functional>

using namespace skt::fold;

namespace {

std::vector<int32_t> random_string(std::mt19937& rng, size_t n, int32_t sigma) {
  std::vector<int32_t> s(n);
  for (auto& c : s) c = static_cast<int32_t>(rng() % static_cast<uint32_t>(sigma));
  return s;
}

// A random program of nested loops (symbols 0..4, loops of 2..6 iterations), expanded.
std::vector<int32_t> loop_program(std::mt19937& rng, int depth) {
  std::vector<int32_t> out;
  int items = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < items; ++k) {
    if (depth > 0 && rng() % 2) {
      auto body = loop_program(rng, depth - 1);
      int count = 2 + static_cast<int>(rng() % 5);
      for (int c = 0; c < count; ++c) out.insert(out.end(), body.begin(), body.end());
    } else {
      out.push_back(static_cast<int32_t>(rng() % 5));
    }
  }
  return out;
}

// Nested loops with noise: a random program expanded, a few symbols changed.
std::vector<int32_t> structured_string(std::mt19937& rng, size_t max_len, int depth = 3) {
  std::vector<int32_t> s = loop_program(rng, depth);
  if (s.size() > max_len) s.resize(max_len);
  if (!s.empty() && rng() % 3 == 0) s[rng() % s.size()] = 7;  // noise
  return s;
}

// A trace-like string of lo..hi symbols: 0-2 calls before and after the
// loops (symbols 10-12), the program entered mid-pattern half of the time
// (its first symbols cut off), cut at hi, 0-2 symbols replaced by noise
// (20, 21).
std::vector<int32_t> trace_like_string(std::mt19937& rng, size_t lo, size_t hi) {
  for (;;) {
    std::vector<int32_t> s;
    for (uint32_t k = rng() % 3; k-- > 0;) s.push_back(10 + static_cast<int32_t>(rng() % 3));
    std::vector<int32_t> body = loop_program(rng, 2 + static_cast<int>(rng() % 2));
    size_t cut = rng() % 2 ? rng() % std::max<size_t>(1, body.size() / 3) : 0;
    s.insert(s.end(), body.begin() + static_cast<std::ptrdiff_t>(cut), body.end());
    for (uint32_t k = rng() % 3; k-- > 0;) s.push_back(10 + static_cast<int32_t>(rng() % 3));
    if (s.size() < lo) continue;
    if (s.size() > hi) s.resize(hi);
    for (uint32_t k = rng() % 3; k-- > 0;) s[rng() % s.size()] = 20 + static_cast<int32_t>(rng() % 2);
    return s;
  }
}

// Exact optimum: the fewest symbols any folded form of s writes. A dynamic
// program over all substrings, independent of the suffix-array machinery:
// opt(i, j) is the best of writing s[i, j) as two parts, or, where it has a
// period p dividing its length, as (s[i, i + p))^((j - i) / p). O(n^3).
uint64_t optimal_length(const std::vector<int32_t>& s) {
  const size_t n = s.size();
  if (n == 0) return 0;
  // common[i][j]: length of the longest common prefix of s[i..] and s[j..]
  std::vector<std::vector<uint32_t>> common(n + 1, std::vector<uint32_t>(n + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = n; j-- > 0;) common[i][j] = s[i] == s[j] ? common[i + 1][j + 1] + 1 : 0;
  std::vector<std::vector<uint32_t>> opt(n + 1, std::vector<uint32_t>(n + 1, 0));
  for (size_t len = 1; len <= n; ++len)
    for (size_t i = 0; i + len <= n; ++i) {
      const size_t j = i + len;
      uint32_t best = static_cast<uint32_t>(len);
      for (size_t k = i + 1; k < j; ++k) best = std::min(best, opt[i][k] + opt[k][j]);
      for (size_t p = 1; 2 * p <= len; ++p)
        if (len % p == 0 && common[i][i + p] >= len - p) best = std::min(best, opt[i][i + p]);
      opt[i][j] = best;
    }
  return opt[0][n];
}

}  // namespace

TEST(SuffixArray, MatchesSortingOnRandomAndRepetitiveStrings) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 2000; ++trial) {
    size_t n = rng() % 200;
    int32_t sigma = 1 + static_cast<int32_t>(rng() % (trial % 3 == 0 ? 2 : 50));
    auto s = trial % 4 == 0 ? structured_string(rng, 200) : random_string(rng, n, sigma);
    int32_t mx = s.empty() ? 0 : *std::max_element(s.begin(), s.end());
    auto sa = suffix_array(s, mx);
    std::vector<int32_t> want(s.size());
    for (size_t i = 0; i < s.size(); ++i) want[i] = static_cast<int32_t>(i);
    std::sort(want.begin(), want.end(), [&](int32_t a, int32_t b) {
      return std::lexicographical_compare(s.begin() + a, s.end(), s.begin() + b, s.end());
    });
    ASSERT_EQ(sa, want) << "trial " << trial;
  }
}

TEST(Lce, MatchesDirectComparison) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    auto s = trial % 2 ? structured_string(rng, 300) : random_string(rng, 1 + rng() % 300, 1 + rng() % 3);
    Lce lce(s);
    uint32_t n = static_cast<uint32_t>(s.size());
    for (int q = 0; q < 300; ++q) {
      uint32_t i = rng() % n, j = rng() % n;
      uint32_t f = 0, b = 0;
      while (i + f < n && j + f < n && s[i + f] == s[j + f]) ++f;
      while (b <= std::min(i, j) && s[i - b] == s[j - b]) ++b;
      ASSERT_EQ(lce.forward(i, j), f) << i << " " << j;
      ASSERT_EQ(lce.backward(i, j), b) << i << " " << j;
    }
  }
}

// From 2^16 symbols on the two sides are built by two threads.
TEST(Lce, MatchesDirectComparisonOnALongString) {
  std::mt19937 rng(12);
  std::vector<int32_t> s;
  while (s.size() < 70000) {
    auto part = trace_like_string(rng, 60, 200);
    s.insert(s.end(), part.begin(), part.end());
  }
  Lce lce(s);
  const uint32_t n = static_cast<uint32_t>(s.size());
  for (int q = 0; q < 2000; ++q) {
    const uint32_t i = rng() % n, j = q % 2 ? rng() % n : std::min<uint32_t>(n - 1, i + 1 + rng() % 400);
    uint32_t f = 0, b = 0;
    while (i + f < n && j + f < n && s[i + f] == s[j + f]) ++f;
    while (b <= std::min(i, j) && s[i - b] == s[j - b]) ++b;
    ASSERT_EQ(lce.forward(i, j), f) << i << " " << j;
    ASSERT_EQ(lce.backward(i, j), b) << i << " " << j;
  }
}

TEST(MaximalRuns, MatchExhaustiveSearch) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int32_t> s;
    switch (trial % 4) {
      case 0: s = structured_string(rng, 80); break;
      case 1: s = random_string(rng, rng() % 80, 1 + rng() % 3); break;
      case 2: s = trace_like_string(rng, 48, 160); break;
      default: {  // a block longer than the jumps' periods, repeated with changes
        const auto block = random_string(rng, 65 + rng() % 20, 3);
        for (int k = 0; k < 3; ++k) s.insert(s.end(), block.begin(), block.end());
        s[rng() % s.size()] = 9;
      }
    }
    // Symbols held in one byte, two, or four.
    if (trial % 5 >= 3)
      for (int32_t& c : s) c += trial % 5 == 3 ? 300 : 70000;
    uint32_t n = static_cast<uint32_t>(s.size());
    // brute force: every maximal interval with period p, length >= 2p, primitive root
    std::set<std::tuple<uint32_t, uint32_t, uint32_t>> want;
    for (uint32_t p = 1; p <= n / 2; ++p)
      for (uint32_t i = 0; i + p < n; ++i) {
        if (s[i] != s[i + p] || (i > 0 && s[i - 1] == s[i - 1 + p])) continue;  // start of a maximal run
        uint32_t e = i + p;
        while (e < n && s[e] == s[e - p]) ++e;
        if (e - i < 2 * p) continue;
        bool primitive = true;
        for (uint32_t d = 1; d < p && primitive; ++d) {
          if (p % d) continue;
          bool per = true;
          for (uint32_t x = i; x + d < e && per; ++x) per = s[x] == s[x + d];
          if (per) primitive = false;
        }
        if (primitive) want.insert({i, e, p});
      }
    // The Lce structure at the first long extension, by budget, never.
    for (uint64_t direct : {uint64_t{0}, uint64_t{16}, ~uint64_t{0}}) {
      std::set<std::tuple<uint32_t, uint32_t, uint32_t>> got;
      for (const skt::fold::Run& r : maximal_runs(s, direct))
        EXPECT_TRUE(got.insert({r.start, r.end, r.period}).second) << "twice";
      ASSERT_EQ(got, want) << "trial " << trial << ", direct " << direct;
    }
  }
}

TEST(Fold, ExpandsBackToTheInput) {
  std::mt19937 rng(4);
  std::vector<std::vector<int32_t>> cases = {
      {}, {5}, {1, 1}, {1, 2}, std::vector<int32_t>(1000, 3),  // one long run of one symbol
  };
  std::vector<int32_t> half;  // period n/2
  for (int k = 0; k < 2; ++k)
    for (int32_t c = 0; c < 50; ++c) half.push_back(c);
  cases.push_back(half);
  std::vector<int32_t> distinct;  // no repeats at all
  for (int32_t c = 0; c < 500; ++c) distinct.push_back(c);
  cases.push_back(distinct);
  for (int t = 0; t < 3000; ++t)
    cases.push_back(t % 3 ? structured_string(rng, 400, 4) : random_string(rng, rng() % 300, 1 + rng() % 4));
  for (const auto& s : cases) {
    Folded f = fold(s);
    ASSERT_EQ(expand(f), s);
    ASSERT_LE(folded_length(f), s.size());
    for (const Loop& l : f.loops) ASSERT_GE(l.count, 2u);
  }
  EXPECT_EQ(to_string(fold(std::vector<int32_t>(1000, 3))), "( 3 )^1000");
  EXPECT_EQ(to_string(fold(half)), "(" + [&] {
    std::string b;
    for (int32_t c = 0; c < 50; ++c) b += " " + std::to_string(c);
    return b;
  }() + " )^2");
  EXPECT_EQ(folded_length(fold(distinct)), 500u);
}

TEST(Fold, TheIssuesExampleAndNesting) {
  EXPECT_EQ(to_string(fold({1, 2, 3, 1, 2, 3, 1, 2, 3, 1})), "( 1 2 3 )^3 1");
  std::vector<int32_t> s{0};
  for (int i = 0; i < 200; ++i) {
    s.push_back(1);
    for (int k = 0; k < 10; ++k) s.insert(s.end(), {2, 3});
    s.push_back(4);
  }
  s.push_back(5);
  Folded f = fold(s);
  EXPECT_EQ(to_string(f), "0 ( 1 ( 2 3 )^10 4 )^200 5");
  EXPECT_EQ(folded_length(f), 6u);
}

// A run that holds its whole periods in several places folds where
// phase_cost is lowest (the leftmost on ties): against a brute-force
// argmin on strings made of one run between distinct symbols, with random
// costs; and every folded string, with any cost, still expands to its input.
TEST(Fold, ALoopStartsWherePhaseCostIsLowest) {
  EXPECT_EQ(to_string(fold({1, 2, 3, 1, 2, 3, 1, 2})), "( 1 2 3 )^2 1 2");
  auto at = [](uint64_t where) { return [where](uint64_t first, uint64_t) -> uint64_t { return first % 3 != where; }; };
  EXPECT_EQ(to_string(fold({1, 2, 3, 1, 2, 3, 1, 2}, {}, at(1))), "1 ( 2 3 1 )^2 2");
  EXPECT_EQ(to_string(fold({1, 2, 3, 1, 2, 3, 1, 2}, {}, at(2))), "1 2 ( 3 1 2 )^2");
  std::mt19937 rng(8);
  for (int t = 0; t < 2000; ++t) {
    const int32_t period = 1 + static_cast<int32_t>(rng() % 6);
    const uint32_t count = 2 + rng() % 5, spare = rng() % static_cast<uint32_t>(period), before = rng() % 4;
    std::vector<int32_t> s;
    for (uint32_t k = 0; k < before; ++k) s.push_back(100 + static_cast<int32_t>(k));
    for (uint32_t k = 0; k < count * static_cast<uint32_t>(period) + spare; ++k)
      s.push_back(static_cast<int32_t>(k % static_cast<uint32_t>(period)));
    s.push_back(200);
    std::vector<uint64_t> cost(s.size());
    for (uint64_t& c : cost) c = rng() % 3;
    uint64_t asked = 0;
    Folded f = fold(s, {}, [&](uint64_t first, uint64_t length) {
      EXPECT_EQ(length, static_cast<uint64_t>(period));
      ++asked;
      return cost.at(first);
    });
    ASSERT_EQ(expand(f), s);
    uint32_t best = 0;  // the oracle: the shift whose middle iteration costs least
    for (uint32_t shift = 1; shift <= spare; ++shift)
      if (cost[before + shift + count / 2 * period] < cost[before + best + count / 2 * period]) best = shift;
    std::vector<Item> want(s.begin(), s.begin() + before + best);
    want.push_back(loop_item(0));
    want.insert(want.end(), s.begin() + before + best + count * period, s.end());
    if (period == 1) ASSERT_EQ(spare, 0u);
    ASSERT_EQ(f.items, want) << to_string(f);
    ASSERT_EQ(f.loops.size(), 1u);
    ASSERT_EQ(f.loops[0].count, count);
    ASSERT_EQ(asked == 0, spare == 0) << "asked only where there is a choice";
    ASSERT_LE(asked, spare + 1);
  }
  for (int t = 0; t < 2000; ++t) {
    auto s = t % 2 ? structured_string(rng, 300, 4) : random_string(rng, rng() % 200, 1 + rng() % 3);
    const uint32_t salt = rng();
    Folded f = fold(s, {}, [&](uint64_t first, uint64_t length) { return (first * 2654435761u ^ length ^ salt) % 5; });
    ASSERT_EQ(expand(f), s);
    ASSERT_LE(folded_length(f), s.size());
  }
}

// The oracle itself, on strings whose optimum is known by construction.
TEST(Fold, TheExactOptimumOfKnownStrings) {
  EXPECT_EQ(optimal_length({}), 0u);
  EXPECT_EQ(optimal_length({1, 2, 3, 1, 2, 3, 1, 2, 3, 1}), 4u);
  EXPECT_EQ(optimal_length(std::vector<int32_t>(50, 3)), 1u);
  EXPECT_EQ(optimal_length({0, 1, 2, 3, 4}), 5u);
  // "3 3 4" five times after "3 3 3 3": ( 3 )^4 ( ( 3 )^2 4 )^5, 3 symbols
  std::vector<int32_t> s(4, 3);
  for (int k = 0; k < 5; ++k) s.insert(s.end(), {3, 3, 4});
  EXPECT_EQ(optimal_length(s), 3u);
}

namespace {

struct Quality {
  int optimal = 0, total = 0;
  double worst = 1.0, sum_ratio = 0;
  void add(uint64_t got, uint64_t best) {
    ++total;
    optimal += got == best;
    const double ratio = static_cast<double>(got) / static_cast<double>(best);
    worst = std::max(worst, ratio);
    sum_ratio += ratio;
  }
  double share() const { return static_cast<double>(optimal) / total; }
  void print(const char* what) const {
    std::printf("%s: %d of %d optimal (%.1f%%), mean ratio %.4f, worst ratio %.3f\n", what, optimal, total,
                100 * share(), sum_ratio / total, worst);
  }
};

}  // namespace

// The fold against the exact optimum on thousands of short structured
// strings (seed 5, 2,289 of length 4..60). Measured: the longest-first rule
// (until 2026-11-25) 1730 optimal (75.6%), mean ratio 1.036, worst 1.600;
// the shortest-pass rule 2289 (100%). The floors in tests/CMakeLists.txt
// record that, so the test fails if a change makes the fold worse.
TEST(Fold, QualityAgainstTheExactOptimum) {
  std::mt19937 rng(5);
  Quality q, old;
  for (int t = 0; t < 3000; ++t) {
    auto s = structured_string(rng, 60, 3);
    if (s.size() < 4) continue;
    const uint64_t best = optimal_length(s), got = folded_length(fold(s));
    ASSERT_GE(got, best) << "the fold beat the optimum: the oracle is wrong";
    q.add(got, best);
    old.add(folded_length(fold(s, {}, {}, Choice::kLongestFirst)), best);
  }
  q.print("fold vs optimum, length <= 60");
  old.print("longest-first rule vs optimum, length <= 60");
  EXPECT_GE(q.share(), FOLD_OPTIMAL_FLOOR);
  EXPECT_LE(q.worst, FOLD_WORST_RATIO_CEILING);
}

// Issue 34's set: trace-like strings of 60..200 symbols (loops nested up to
// three deep, calls before and after, loops entered mid-pattern, noise).
// Measured (seed 34, 400 strings): the shortest-pass rule 400 optimal
// (100%), worst 1.000; the longest-first rule 160 (40.0%), worst 1.700.
// Targets: >= 99 % optimal, worst <= 1.2 (FOLD_TRACE_* in tests/CMakeLists.txt).
TEST(Fold, NearOptimalOnTraceLikeStrings) {
  std::mt19937 rng(34);
  Quality q, old;
  for (int t = 0; t < 400; ++t) {
    auto s = trace_like_string(rng, 60, 200);
    const uint64_t best = optimal_length(s);
    const Folded f = fold(s);
    ASSERT_EQ(expand(f), s);
    ASSERT_GE(folded_length(f), best) << "the fold beat the optimum: the oracle is wrong";
    q.add(folded_length(f), best);
    old.add(folded_length(fold(s, {}, {}, Choice::kLongestFirst)), best);
  }
  q.print("fold vs optimum, trace-like, length 60..200");
  old.print("longest-first rule vs optimum, trace-like, length 60..200");
  EXPECT_GE(q.share(), FOLD_TRACE_OPTIMAL_FLOOR);
  EXPECT_LE(q.worst, FOLD_TRACE_WORST_RATIO_CEILING);
}

// The choice rule must never fold longer than the longest-first rule it
// replaced, on any string of these kinds (structured, trace-like, random,
// periodic with insertions), and must fold the same string the same way.
TEST(Fold, NeverLongerThanTheLongestFirstRule) {
  std::mt19937 rng(9);
  int shorter = 0;
  for (int t = 0; t < 6000; ++t) {
    std::vector<int32_t> s;
    const int32_t sigma = 1 + static_cast<int32_t>(rng() % 4);
    switch (t % 4) {
      case 0: s = structured_string(rng, 400, 4); break;
      case 1: s = trace_like_string(rng, 20, 400); break;
      case 2: s = random_string(rng, rng() % 300, sigma); break;
      default: {
        const auto body = random_string(rng, 1 + rng() % 12, sigma);
        const size_t len = rng() % 400;
        while (s.size() < len) {
          s.insert(s.end(), body.begin(), body.end());
          if (rng() % 5 == 0) s.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(sigma)));
        }
      }
    }
    const Folded f = fold(s);
    ASSERT_EQ(expand(f), s);
    const uint64_t got = folded_length(f), old = folded_length(fold(s, {}, {}, Choice::kLongestFirst));
    ASSERT_LE(got, old) << "case " << t << ": " << to_string(f) << " vs " << to_string(fold(s, {}, {}, Choice::kLongestFirst));
    shorter += got < old;
    ASSERT_EQ(to_string(fold(s)), to_string(f)) << "not deterministic";
  }
  std::printf("shorter than the longest-first rule on %d of 6000 strings\n", shorter);
}

// ------------------------------------------------------------ merged traces

#include "skel/compress.h"
#include "skel/merge.h"
#include "skel/skel_funcs.h"
#include "synthetic.h"
#include "trace_fixtures.h"

namespace {

skt::MergedTrace merged_from(uint32_t P, const std::function<std::vector<skt::testing::Syn>(uint32_t)>& program) {
  std::string dir = skt::testing::temp_dir("fold");
  skt::testing::write_synthetic(dir, P, program);
  skt::merge::Options opt;
  auto loaded = skt::merge::load(dir, opt);
  return skt::merge::merge(loaded, opt);
}

skt::testing::Syn call(uint32_t func, uint32_t site, int64_t gap, int64_t dur, int64_t count = skt::kNone) {
  skt::testing::Syn s;
  s.func = func;
  s.site = site;
  s.gap = gap;
  s.dur = dur;
  s.count = count;
  if (count != skt::kNone) s.tag = 0;
  return s;
}

}  // namespace

TEST(Compress, NestedLoopsKeepEveryRanksTimeAndTheLoopEntryGap) {
  const uint32_t P = 3;
  auto m = merged_from(P, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 5000)};
    for (int outer = 0; outer < 20; ++outer) {
      // the computation before the inner loop is large; inside it is small
      for (int inner = 0; inner < 10; ++inner) {
        v.push_back(call(skt::kFunc_MPI_Barrier, 1, inner == 0 ? 900000 + r * 1000 : 1000 + inner, 300 + r));
        v.push_back(call(skt::kFunc_MPI_Allreduce, 2, 2000, 400 + outer));
      }
      v.push_back(call(skt::kFunc_MPI_Bcast, 3, 50000, 700, 8));
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 4, 10, 100));
    return v;
  });
  skt::FoldedProgram p = compress(m, {});
  EXPECT_EQ(p.to_string(), "S0 ( ( S1 S2 )^10 S3 )^20 S4");
  EXPECT_TRUE(verify(p, m, 1e-9).empty());
  // The inner loop node took each instance's entry gap (900 us), its first
  // call only the gaps of iterations 2..10.
  const skt::FoldedNode* inner = nullptr;
  const skt::FoldedNode* barrier = nullptr;
  for (const auto& n : p.nodes) {
    if (n.is_loop() && n.count == 10) inner = &n;
    if (!n.is_loop() && m.identities[p.symbols.events[static_cast<size_t>(n.symbol)].identity].func ==
                            skt::kFunc_MPI_Barrier)
      barrier = &n;
  }
  ASSERT_TRUE(inner && barrier);
  // The outer loop's own entry is the first inner loop's first call: it goes to the outer loop.
  EXPECT_EQ(inner->gap[1].n, 19u);
  EXPECT_DOUBLE_EQ(inner->gap[1].mean, 901000);
  EXPECT_EQ(barrier->gap[2].n, 20u * 9u);
  EXPECT_NEAR(barrier->gap[2].mean, 1005, 1e-9);
  EXPECT_EQ(barrier->dur[2].n, 200u);
  EXPECT_DOUBLE_EQ(barrier->dur[2].mean, 302);
}

TEST(Compress, CpuTimesOfTheGapsGoWhereTheirWallGapsGo) {
  // Ranks 0 and 1 measured each gap's thread CPU time too (sharing cores:
  // CPU time below the wall time); rank 2 only the wall time.
  const uint32_t P = 3;
  std::vector<double> want_work(P, 0);
  auto program = [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 5000)};
    for (int it = 0; it < 30; ++it) {
      v.push_back(call(skt::kFunc_MPI_Barrier, 1, 40000 + it, 300));
      v.push_back(call(skt::kFunc_MPI_Allreduce, 2, 8000, 400));
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 3, 10, 100));
    if (r < 2)
      for (auto& s : v) s.work = s.gap / 4 + r;
    return v;
  };
  for (uint32_t r = 0; r < 2; ++r)
    for (const auto& s : program(r)) want_work[r] += static_cast<double>(s.work);
  std::string dir = skt::testing::temp_dir("fold-work");
  skt::MergedTrace m = merged_from(P, program);
  skt::write_merged(dir + "/m.skm", m);
  m = skt::read_merged(dir + "/m.skm");
  ASSERT_EQ(m.ranks[0].works.size(), m.ranks[0].gaps.size());
  EXPECT_TRUE(m.ranks[2].works.empty());
  skt::write_folded(dir + "/p.skf", compress(m, {}));
  skt::FoldedProgram p = skt::read_folded(dir + "/p.skf");
  EXPECT_EQ(p.to_string(), "S0 ( S1 S2 )^30 S3");
  std::vector<double> got(P, 0);
  const skt::FoldedNode* allreduce = nullptr;
  for (const auto& n : p.nodes) {
    ASSERT_EQ(n.work.size(), P);
    for (uint32_t r = 0; r < P; ++r) got[r] += n.work[r].mean * static_cast<double>(n.work[r].n);
    EXPECT_EQ(n.work[2].n, 0u) << "rank 2 measured no CPU time";
    if (!n.is_loop() && m.identities[p.symbols.events[static_cast<size_t>(n.symbol)].identity].func ==
                            skt::kFunc_MPI_Allreduce)
      allreduce = &n;
  }
  EXPECT_NEAR(got[0], want_work[0], 1e-6 * want_work[0]);
  EXPECT_NEAR(got[1], want_work[1], 1e-6 * want_work[1]);
  ASSERT_TRUE(allreduce);
  EXPECT_EQ(allreduce->work[1].n, 30u);
  EXPECT_DOUBLE_EQ(allreduce->work[1].mean, 8000 / 4 + 1);
  EXPECT_DOUBLE_EQ(allreduce->gap[1].mean, 8000);
}

// The time a rank slept in a gap (trace field blocked) goes where its gap
// goes, through the merged and folded files; a rank that never slept has
// none. Every other barrier's gap on rank 0 held a 2 ms sleep.
TEST(Compress, BlockedTimeGoesWhereItsGapGoesAndTheSkeletonSleepsIt) {
  const uint32_t P = 2;
  auto program = [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 5000)};
    for (int it = 0; it < 20; ++it) {
      v.push_back(call(skt::kFunc_MPI_Barrier, 1, 2500000, 300));
      v.back().work = 500000;
      if (r == 0 && it % 2 == 0) v.back().blocked = 2000000;
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 2, 10, 100));
    v.back().work = 10;
    v.front().work = 0;
    return v;
  };
  std::string dir = skt::testing::temp_dir("fold-blocked");
  skt::MergedTrace m = merged_from(P, program);
  skt::write_merged(dir + "/m.skm", m);
  m = skt::read_merged(dir + "/m.skm");
  ASSERT_EQ(m.ranks[0].blocked.size(), m.ranks[0].gaps.size());
  EXPECT_TRUE(m.ranks[1].blocked.empty()) << "rank 1 never slept";
  int64_t slept = 0;
  for (int64_t b : m.ranks[0].blocked) slept += b;
  EXPECT_EQ(slept, 10 * 2000000);
  skt::write_folded(dir + "/p.skf", compress(m, {}));
  skt::FoldedProgram p = skt::read_folded(dir + "/p.skf");
  EXPECT_EQ(p.to_string(), "S0 ( S1 )^20 S2");
  double got = 0;
  for (const auto& n : p.nodes) {
    ASSERT_EQ(n.blocked.size(), P);
    got += n.blocked[0].mean * static_cast<double>(n.blocked[0].n);
    EXPECT_EQ(n.blocked[1].mean, 0.0) << "rank 1 never slept";
  }
  EXPECT_NEAR(got, 10 * 2000000.0, 1e-6);
}

TEST(Compress, EachRanksFirstCallInALoopGivesItsEntryGapToTheLoop) {
  // A pipeline (NPB LU at 2 ranks): rank 0 sends, rank 1 receives, 40 times.
  // Both compute 1 ms before the sweep and 10 us per message. Rank 1's first
  // call in the loop is the receive, not the loop's first call: its 1 ms is
  // still the loop's, not spread over its receives.
  auto m = merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 5000)};
    for (int sweep = 0; sweep < 5; ++sweep) {
      v.push_back(call(skt::kFunc_MPI_Barrier, 3, 500, 100));
      for (int k = 0; k < 40; ++k) {
        skt::testing::Syn s = call(r == 0 ? skt::kFunc_MPI_Send : skt::kFunc_MPI_Recv, r == 0 ? 1 : 2,
                                   k == 0 ? 1000000 : 10000, 50, 8);
        s.peer = 1 - r;
        v.push_back(s);
      }
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 4, 10, 100));
    return v;
  });
  skt::FoldedProgram p = compress(m, {});
  EXPECT_EQ(p.to_string(), "S0 ( S1 ( S2 S3 )^40 )^5 S4");
  EXPECT_TRUE(verify(p, m, 1e-9).empty());
  for (const auto& n : p.nodes) {
    if (n.is_loop() && n.count == 40) {
      for (uint32_t r = 0; r < 2; ++r) {
        EXPECT_EQ(n.gap[r].n, 5u) << "rank " << r;
        EXPECT_DOUBLE_EQ(n.gap[r].mean, 1000000) << "rank " << r;
      }
    } else if (!n.is_loop() && n.symbol >= 0) {
      uint32_t f = m.identities[p.symbols.events[static_cast<size_t>(n.symbol)].identity].func;
      uint32_t r = f == skt::kFunc_MPI_Send ? 0 : 1;
      if (f != skt::kFunc_MPI_Send && f != skt::kFunc_MPI_Recv) continue;
      EXPECT_EQ(n.gap[r].n, 5u * 39u) << "rank " << r;
      EXPECT_DOUBLE_EQ(n.gap[r].mean, 10000) << "rank " << r;
    }
  }
}

// 64 or 70, with no cycle of at most 64 iterations in 100 (checked below).
constexpr int kBandIterations = 100;
bool wobble(int it) { return (static_cast<uint32_t>(it) * 2654435761u >> 7) % 3 == 0; }

TEST(Compress, CountsInABandFoldWithARuleAndOthersDoNot) {
  for (int p = 1; p <= 64; ++p) {
    bool cycle = true;
    for (int it = p; it < kBandIterations && cycle; ++it) cycle = wobble(it) == wobble(it % p);
    ASSERT_FALSE(cycle) << "the wobble repeats every " << p;
  }
  auto m = merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < kBandIterations; ++it) {
      v.push_back(call(skt::kFunc_MPI_Bcast, 1, 100, 10, 1000 + 10 * it));           // linear, within 25 %
      v.push_back(call(skt::kFunc_MPI_Allreduce, 2, 100, 10, wobble(it) ? 64 : 70));  // wobbles, no cycle
    }
    return v;
  });
  skt::FoldedProgram p = compress(m, {});
  EXPECT_EQ(p.to_string(), "S0 ( S1 S2 )^" + std::to_string(kBandIterations));
  EXPECT_TRUE(verify(p, m).empty());
  bool linear = false, mean = false;
  for (const auto& n : p.nodes)
    for (const auto& rule : n.rules)
      if (rule.param == skt::Param::count) {
        if (rule.kind[0] == skt::RuleKind::kLinear && rule.a[0] == 1000 && rule.b[0] == 10) linear = true;
        if (rule.kind[0] == skt::RuleKind::kMean && rule.min[0] == 64 && rule.max[0] == 70) mean = true;
      }
  EXPECT_TRUE(linear);
  EXPECT_TRUE(mean);
  // With no band the linear counts still fold; the wobbling ones split.
  skt::fold::CompressOptions exact;
  exact.count_band = 0;
  skt::FoldedProgram p0 = compress(m, exact);
  EXPECT_TRUE(verify(p0, m).empty());
  size_t allreduces = 0;
  for (const auto& e : p0.symbols.events) allreduces += p0.symbols.identities.at(e.identity).func == skt::kFunc_MPI_Allreduce;
  EXPECT_EQ(allreduces, 2u) << p0.to_string();
  for (const auto& n : p0.nodes)
    for (const auto& rule : n.rules)
      for (skt::RuleKind k : rule.kind) EXPECT_NE(k, skt::RuleKind::kMean) << "a mean with no band";
}

// A particle code's step: each rank sends its neighbour the particles that
// leave, a different number on every rank in every step (per-rank tables,
// 0 on every rank in some steps: one value for all), then all reduce.
skt::MergedTrace migrating(int64_t most_doubles, int steps) {
  return merged_from(2, [=](uint32_t r) {
    std::mt19937 rng(5 + r);
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < steps; ++it) {
      const int64_t leaving = it % 7 == 3 ? 0 : static_cast<int64_t>(rng() % static_cast<uint32_t>(most_doubles + 1));
      skt::testing::Syn send = call(skt::kFunc_MPI_Sendrecv, 1, 5000, 10, leaving);
      send.peer = 1 - r;
      v.push_back(send);
      v.push_back(call(skt::kFunc_MPI_Allreduce, 2, 100, 10, 1));
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 3, 10, 10));
    return v;
  });
}

TEST(Compress, SmallMessagesOfAnyCountFoldIntoOneLoop) {
  // up to 2,048 doubles (16 KiB), no cycle in 200 steps: one loop of every step, each rank's counts their mean
  skt::MergedTrace small = migrating(2048, 200);
  skt::FoldedProgram p = compress(small, {});
  EXPECT_EQ(p.to_string(), "S0 ( S1 S2 )^200 S3");
  EXPECT_TRUE(verify(p, small).empty());
  bool mean = false;
  for (const auto& n : p.nodes)
    for (const auto& rule : n.rules)
      if (rule.param == skt::Param::count) {
        for (uint32_t r = 0; r < 2; ++r) {
          EXPECT_EQ(rule.kind[r], skt::RuleKind::kMean) << "rank " << r;
          EXPECT_EQ(rule.min[r], 0) << "rank " << r;
          EXPECT_LE(rule.max[r], 2048) << "rank " << r;
          EXPECT_GE(rule.capacity(), rule.max[r]) << "a receive must take any rank's largest";
        }
        mean = true;
      }
  EXPECT_TRUE(mean);
  // larger messages (up to 64 KiB) keep their sizes apart: no loop of every step
  skt::MergedTrace large = migrating(8192, 200);
  EXPECT_NE(compress(large, {}).to_string(), "S0 ( S1 S2 )^200 S3");
  // nor with no band, or with call sites joined (counts tell the call sites apart there)
  skt::fold::CompressOptions exact, joined;
  exact.count_band = 0;
  joined.join_callsites = true;
  EXPECT_NE(compress(small, exact).to_string(), "S0 ( S1 S2 )^200 S3");
  EXPECT_NE(compress(small, joined).to_string(), "S0 ( S1 S2 )^200 S3");
}

// A pipeline (PRK's Synch_p2p): rank 0 sends each row j = 1 .. rows-1 to
// rank 1 with tag j, rank 1 receives them; the rows are an inner loop, run
// once a sweep, and the sweeps end in an MPI_Allreduce.
skt::MergedTrace row_tags(int rows, int sweeps) {
  return merged_from(2, [=](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < sweeps; ++it) {
      for (int j = 1; j < rows; ++j) {
        skt::testing::Syn s = call(r == 0 ? skt::kFunc_MPI_Send : skt::kFunc_MPI_Recv, r == 0 ? 1 : 2, 1000, 10, 1);
        s.peer = 1 - r;
        s.tag = j;
        v.push_back(s);
      }
      v.push_back(call(skt::kFunc_MPI_Allreduce, 3, 100, 10, 1));
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 4, 10, 10));
    return v;
  });
}

TEST(Compress, TagsThatAreAnInnerLoopsIndexFoldLinearInIt) {
  // 99 rows: longer than any cycle kept (64), so the tags were keyed exactly, every row a symbol
  skt::MergedTrace m = row_tags(100, 12);
  skt::FoldedProgram p = compress(m, {});
  EXPECT_TRUE(verify(p, m).empty());
  EXPECT_LE(p.length(), 8u) << p.to_string();
  int tag_rules = 0;
  for (const auto& n : p.nodes)
    for (const auto& rule : n.rules)
      if (rule.param == skt::Param::tag) {
        ++tag_rules;
        for (uint32_t r = 0; r < 2; ++r) {
          if (rule.kind[r] == skt::RuleKind::kNone) continue;
          EXPECT_EQ(rule.kind[r], skt::RuleKind::kLoopLinear) << "rank " << r;
          // the loop may start at any row: its value at k = 0 and its step reproduce every row
          EXPECT_EQ(rule.b[r], 1) << "rank " << r;
        }
      }
  EXPECT_EQ(tag_rules, 2) << p.to_string();
  // a short inner loop keeps its cycle (exact, as before)
  skt::FoldedProgram q = compress(row_tags(9, 12), {});
  for (const auto& n : q.nodes)
    for (const auto& rule : n.rules)
      for (skt::RuleKind k : rule.kind) EXPECT_NE(k, skt::RuleKind::kLoopLinear) << q.to_string();
}

TEST(Compress, CountsFollowingTheIterationFoldFarBeyondTheBand) {
  std::mt19937 rng(11);
  std::vector<int64_t> jumps;
  for (int it = 0; it < 20; ++it) jumps.push_back(1 + static_cast<int64_t>(rng() % 4) * 1000);
  auto m = merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < 20; ++it) {
      v.push_back(call(skt::kFunc_MPI_Bcast, 1, 100, 10, 100 * (it + 1) + r));  // 100 .. 2000: linear
      v.push_back(call(skt::kFunc_MPI_Barrier, 2, 100, 10));
    }
    for (int it = 0; it < 20; ++it) v.push_back(call(skt::kFunc_MPI_Reduce, 3, 100, 10, jumps[it]));  // no rule
    return v;
  });
  skt::FoldedProgram p = compress(m, {});
  EXPECT_TRUE(verify(p, m).empty());
  std::string form = p.to_string();
  EXPECT_EQ(form.rfind("S0 ( S1 S2 )^20", 0), 0u) << form;
  bool linear = false;
  for (const auto& n : p.nodes)
    for (const auto& rule : n.rules)
      if (rule.param == skt::Param::count && rule.kind[1] == skt::RuleKind::kLinear && rule.a[1] == 101 && rule.b[1] == 100) linear = true;
  EXPECT_TRUE(linear) << "rank 1's counts 101, 201, ... as a + b*i";
  // The Reduce counts jump between 1, 1001, 2001, 3001: one symbol per band, never one loop over all 20.
  for (const auto& n : p.nodes)
    for (const auto& rule : n.rules)
      if (rule.param == skt::Param::count)
        for (size_t k = 0; k < rule.kind.size(); ++k)
          if (rule.kind[k] == skt::RuleKind::kMean) EXPECT_LE(rule.max[k], rule.min[k] * 1.25 + 1) << "a mean over values outside the band";
}

TEST(Compress, TagsFollowingTheIterationFoldExactlyOthersStay) {
  // Sends with tag = iteration fold into one loop with a linear tag rule;
  // tags that alternate fold with a cycle (a table over the iterations);
  // tags that jump with no cycle of at most 64 stay exact (one symbol per
  // value): a skeleton must send the application's tags, never a mean.
  auto m = merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < 30; ++it) {
      skt::testing::Syn s = call(skt::kFunc_MPI_Send, 1, 100, 10, 8);
      s.peer = 1 - r;
      s.tag = 5 + 2 * it;
      v.push_back(s);
    }
    for (int it = 0; it < 6; ++it) {
      skt::testing::Syn s = call(skt::kFunc_MPI_Send, 2, 100, 10, 8);
      s.peer = 1 - r;
      s.tag = it % 2 ? 100 : 7;  // alternates: a cycle of 2
      v.push_back(s);
    }
    for (int it = 0; it < kBandIterations; ++it) {
      skt::testing::Syn s = call(skt::kFunc_MPI_Send, 3, 100, 10, 8);
      s.peer = 1 - r;
      s.tag = wobble(it) ? 200 : 9;  // jumps: no rule
      v.push_back(s);
    }
    return v;
  });
  skt::FoldedProgram p = compress(m, {});
  EXPECT_TRUE(verify(p, m).empty());
  EXPECT_EQ(p.to_string().rfind("S0 ( S1 )^30 ( S2 )^6 ", 0), 0u) << p.to_string();
  bool rule = false, cycle = false;
  for (const auto& n : p.nodes)
    for (const auto& ru : n.rules)
      if (ru.param == skt::Param::tag) {
        if (ru.kind[0] == skt::RuleKind::kLinear && ru.a[0] == 5 && ru.b[0] == 2 && ru.a[1] == 5 && ru.b[1] == 2) rule = true;
        if (ru.kind[0] == skt::RuleKind::kCycle && ru.kind[1] == skt::RuleKind::kCycle && ru.cycle == std::vector<int64_t>{7, 100, 7, 100}) cycle = true;
        EXPECT_NE(ru.kind[0], skt::RuleKind::kMean) << "a mean tag";
      }
  EXPECT_TRUE(rule) << "tags 5, 7, 9, ... as 5 + 2*i";
  EXPECT_TRUE(cycle) << "tags 7, 100, 7, ... as a cycle of 2";
  std::multiset<int64_t> tags;  // of the call site 3 symbols: the two exact ones
  for (const auto& e : p.symbols.events)
    if (p.symbols.identities.at(e.identity).callsite == p.symbols.identities.at(p.symbols.events.back().identity).callsite)
      tags.insert(p.symbols.value(e, skt::Param::tag, 0));
  EXPECT_EQ(tags, (std::multiset<int64_t>{9, 200}));
}

// Cycle rules against a brute-force search: a loop of sends, run one to
// three times, whose tags repeat with a random period over the loop's
// iteration k (of a few values, so that shorter periods may hold by chance),
// on each rank its own pattern, sometimes broken once in some run. The rule
// must be the smallest period p <= 64 for which every run's tag at k is the
// first run's at k mod p, on every rank, its cycle the first p tags; a
// linear or constant run has no cycle; where no period over k holds, the
// smallest p <= 64 over the instances (the runs one after the other) for
// which the tag of instance i is that of i mod p, on every rank (an
// instance cycle); where neither holds there is no cycle (the tags stay
// exact).
TEST(Compress, CycleRulesHoldTheSmallestPeriodABruteForceSearchFinds) {
  std::mt19937 rng(20261122);
  int cycles_seen = 0, none_seen = 0, instance_cycles_seen = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const int iters = 3 + static_cast<int>(rng() % 150), runs = 1 + static_cast<int>(rng() % 3);
    // tags[rank][run][k]
    std::vector<std::vector<std::vector<int64_t>>> tags(2, std::vector<std::vector<int64_t>>(runs, std::vector<int64_t>(iters)));
    for (auto& rank_tags : tags) {
      const int q = 1 + static_cast<int>(rng() % 70), values = 2 + static_cast<int>(rng() % 3);
      std::vector<int64_t> pattern(q);
      for (auto& x : pattern) x = 10 + static_cast<int64_t>(rng() % values);
      for (auto& t : rank_tags)
        for (int k = 0; k < iters; ++k) t[k] = pattern[k % q];
      if (rng() % 4 == 0) rank_tags[rng() % runs][rng() % iters] = 99;
    }
    auto m = merged_from(2, [&](uint32_t r) {
      std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
      for (int run = 0; run < runs; ++run) {
        for (int k = 0; k < iters; ++k) {
          skt::testing::Syn s = call(skt::kFunc_MPI_Send, 1, 1000, 10, 8);
          s.peer = 1 - r;
          s.tag = tags[r][run][k];
          v.push_back(s);
          v.push_back(call(skt::kFunc_MPI_Allreduce, 2, 1000, 10, 1));
        }
        v.push_back(call(skt::kFunc_MPI_Barrier, 3, 1000, 10));
      }
      return v;
    });
    skt::FoldedProgram p = compress(m, {});
    ASSERT_TRUE(verify(p, m).empty());
    auto holds = [&](int64_t period) {
      for (const auto& rank_tags : tags)
        for (const auto& t : rank_tags)
          for (int k = 0; k < iters; ++k)
            if (t[k] != rank_tags[0][k % period]) return false;
      return true;
    };
    auto linear = [&] {  // the same a + b*k in every run, on each rank
      for (const auto& rank_tags : tags)
        for (const auto& t : rank_tags)
          for (int k = 0; k < iters; ++k)
            if (t[k] != rank_tags[0][0] + k * (rank_tags[0][1] - rank_tags[0][0])) return false;
      return true;
    };
    int64_t want = 0;
    for (int64_t period = 1; period <= 64 && !want; ++period)
      if (holds(period)) want = period;
    // where no cycle over k holds: over the node's instances, the runs one
    // after the other (an instance cycle, kind 4)
    auto holds_by_instance = [&](int64_t period) {
      for (const auto& rank_tags : tags) {
        std::vector<int64_t> seq;
        for (const auto& t : rank_tags) seq.insert(seq.end(), t.begin(), t.end());
        for (size_t i = 0; i < seq.size(); ++i)
          if (seq[i] != seq[i % static_cast<size_t>(period)]) return false;
      }
      return true;
    };
    int64_t want_by_instance = 0;
    for (int64_t period = 1; period <= 64 && !want && !want_by_instance; ++period)
      if (holds_by_instance(period)) want_by_instance = period;
    std::vector<const skt::CountRule*> found;
    for (const auto& n : p.nodes)
      if (const skt::CountRule* rule = n.rule(skt::Param::tag); rule && rule->is_cycle()) found.push_back(rule);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(runs) + " x " + std::to_string(iters) +
                 " iterations, " + p.to_string());
    if (!want && want_by_instance > 1) {
      ASSERT_EQ(found.size(), 1u);
      EXPECT_EQ(found[0]->period, static_cast<uint64_t>(want_by_instance));
      for (uint32_t r = 0; r < 2; ++r) {
        EXPECT_EQ(found[0]->kind[r], skt::RuleKind::kInstanceCycle);
        for (int64_t i = 0; i < want_by_instance; ++i)
          EXPECT_EQ(found[0]->cycle[r * want_by_instance + i], tags[r][i / iters][i % iters]) << "rank " << r;
      }
      ++instance_cycles_seen;
      continue;
    }
    if (want <= 1 || linear()) {
      EXPECT_TRUE(found.empty()) << (want ? "a linear or constant run" : "no period holds") << ", yet a cycle of "
                                 << found.front()->period;
      none_seen += want == 0;
      continue;
    }
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0]->period, static_cast<uint64_t>(want));
    for (uint32_t r = 0; r < 2; ++r) {
      EXPECT_EQ(found[0]->kind[r], skt::RuleKind::kCycle);
      for (int64_t k = 0; k < want; ++k) EXPECT_EQ(found[0]->cycle[r * want + k], tags[r][0][k]) << "rank " << r;
    }
    ++cycles_seen;
  }
  EXPECT_GE(cycles_seen, 20);  // every outcome exercised
  EXPECT_GE(none_seen, 10);
  EXPECT_GE(instance_cycles_seen, 5);
}

// A master posts an MPI_ANY_SOURCE Irecv with the round as its tag and
// waits for it; the worker computes and sends. The first round completes
// with MPI_Wait, the others with Waitany, so the run of rounds begins at the
// first round's Send: folded there, each iteration would send the tag its
// next one receives, and a cut loop could not keep its messages. The loop
// must start where every iteration's sends and receives carry the same tags.
TEST(Compress, ALoopStartsWhereItsMessagesPairWithinOneIteration) {
  const int rounds = 30;
  auto m = merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int k = 0; k < rounds; ++k) {
      if (r == 0) {
        skt::testing::Syn irecv = call(skt::kFunc_MPI_Irecv, 1, 100, 10, 1);
        irecv.peer = 1;
        irecv.tag = k;
        irecv.flags = skt::kFlagAnySource;
        irecv.reqs = {k};
        skt::testing::Syn wait = call(k ? skt::kFunc_MPI_Waitany : skt::kFunc_MPI_Wait, k ? 2 : 3, 100, 50000);
        wait.reqs = {k};
        v.insert(v.end(), {irecv, wait});
      } else {
        skt::testing::Syn send = call(skt::kFunc_MPI_Send, 4, 200000, 10, 1);
        send.peer = 0;
        send.tag = k;
        v.push_back(send);
      }
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 5, 100, 10));
    return v;
  });
  skt::FoldedProgram p = compress(m, {});
  ASSERT_TRUE(verify(p, m).empty());
  const skt::FoldedProgram::LoopSummary main = p.main_loop();
  ASSERT_TRUE(main.found) << p.to_string();
  ASSERT_GE(main.count, static_cast<uint64_t>(rounds - 2)) << p.to_string();
  // Where the loop starts in the merged trace: the calls before it.
  uint64_t first = 0;
  for (uint32_t id : p.top) {
    if (id == main.node) break;
    first += p.nodes[id].is_loop() ? p.nodes[id].count * p.nodes[id].body.size() : 1;
  }
  // Every iteration's send tags and receive tags, from the merged trace itself.
  for (uint64_t k = 0; k < main.count; ++k) {
    std::multiset<int64_t> sent, received;
    for (uint64_t i = first + k * main.body_length; i < first + (k + 1) * main.body_length; ++i) {
      const skt::MergedEvent& e = m.events[i];
      const uint32_t f = m.identities[e.identity].func;
      if (f == skt::kFunc_MPI_Send) sent.insert(m.value(e, skt::Param::tag, 1));
      if (f == skt::kFunc_MPI_Irecv) received.insert(m.value(e, skt::Param::tag, 0));
    }
    ASSERT_EQ(sent, received) << "iteration " << k << " of " << p.to_string();
  }
}

constexpr int kStages = 4, kCells = 5;
int64_t stage_cell(uint32_t r, int s) { return static_cast<int64_t>((2 * r + static_cast<uint32_t>(s)) % kCells); }
// 20 iterations of kStages stages on 2 ranks: each sends about its cell and
// receives about the other's; `nested`: a Barrier ends each iteration;
// `uneven`: the computation before a send is 100 us per cell size unit.
skt::MergedTrace stage_program(bool nested, bool uneven) {
  return merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < 20; ++it) {
      for (int s = 0; s < kStages; ++s) {
        skt::testing::Syn send = call(skt::kFunc_MPI_Send, 1, uneven ? 100000 * (1 + stage_cell(r, s)) : 100, 10, 8);
        send.peer = 1 - r;
        send.tag = 100 + stage_cell(r, s);
        v.push_back(send);
        skt::testing::Syn recv = call(skt::kFunc_MPI_Recv, 2, 100, 10, 8);
        recv.peer = 1 - r;
        recv.tag = 100 + stage_cell(1 - r, s);
        v.push_back(recv);
      }
      if (nested) v.push_back(call(skt::kFunc_MPI_Barrier, 3, 100, 10));
    }
    return v;
  });
}

// NPB BT's stages: at stage s of every iteration a rank sends about cell
// (2 * rank + s) mod 5 and receives what its predecessor sent a stage before.
// The tags wrap modulo the cell count; whether the stages are a loop of
// their own (between other calls) or flattened into the iterations' loop,
// they fold with a cycle rule holding exactly the program's tags.
TEST(Compress, StageTagsThatWrapFoldWithACycle) {
  for (bool nested : {true, false}) {
    skt::MergedTrace m = stage_program(nested, false);
    std::string dir = skt::testing::temp_dir("fold-cycle");
    skt::write_folded(dir + "/p.skf", compress(m, {}));  // the cycle survives the file
    skt::FoldedProgram p = skt::read_folded(dir + "/p.skf");
    EXPECT_TRUE(verify(p, m).empty());
    EXPECT_EQ(p.to_string(), nested ? "S0 ( ( S1 S2 )^4 S3 )^20" : "S0 ( S1 S2 )^80") << p.to_string();
    int cycles = 0;
    for (const auto& n : p.nodes)
      for (const auto& ru : n.rules) {
        ASSERT_EQ(ru.param, skt::Param::tag);
        ASSERT_EQ(ru.period, static_cast<uint64_t>(kStages));
        uint32_t f = p.symbols.identities.at(p.symbols.events.at(static_cast<size_t>(n.symbol)).identity).func;
        for (uint32_t r = 0; r < 2; ++r)
          for (int s = 0; s < kStages; ++s) {
            EXPECT_EQ(ru.kind[r], skt::RuleKind::kCycle);
            EXPECT_EQ(ru.cycle[r * kStages + static_cast<uint32_t>(s)],
                      100 + stage_cell(f == skt::kFunc_MPI_Send ? r : 1 - r, s))
                << "rank " << r << " stage " << s;
          }
        ++cycles;
      }
    EXPECT_EQ(cycles, 2) << "the send's tags and the receive's";
  }
}

// Walks the expanded program as the generator runs it: visit(node, its call,
// function, the node's instance i, the innermost loop's iteration k).
using CallVisit = std::function<void(const skt::FoldedNode&, const skt::MergedEvent&, uint32_t, uint64_t, int64_t)>;
void walk_calls(const skt::FoldedProgram& p, const CallVisit& visit) {
  std::vector<uint64_t> instance(p.nodes.size(), 0);
  std::function<void(const std::vector<uint32_t>&, int64_t)> walk = [&](const std::vector<uint32_t>& items, int64_t k) {
    for (uint32_t id : items) {
      const skt::FoldedNode& n = p.nodes[id];
      if (n.is_loop()) {
        for (uint64_t i = 0; i < n.count; ++i) walk(n.body, static_cast<int64_t>(i));
        continue;
      }
      const skt::MergedEvent& e = p.symbols.events.at(static_cast<size_t>(n.symbol));
      visit(n, e, p.symbols.identities.at(e.identity).func, instance[id]++, k);
    }
  };
  walk(p.top, -1);
}

// Rank r's value of pm at a node's instance i, iteration k, by its rules as
// the generator evaluates them (kinds 1, 3, 4; another kind is a failure).
int64_t value_by_rules(const skt::FoldedProgram& p, const skt::FoldedNode& n, const skt::MergedEvent& e, skt::Param pm,
                       uint32_t r, uint64_t i, int64_t k) {
  int64_t got = p.symbols.value(e, pm, r);
  for (const auto& ru : n.rules) {
    if (ru.param != pm) continue;
    if (ru.kind[r] == skt::RuleKind::kLinear) got = std::llround(ru.a[r] + ru.b[r] * static_cast<double>(i));
    else if (ru.kind[r] == skt::RuleKind::kCycle) got = ru.cycle[r * ru.period + static_cast<uint64_t>(k) % ru.period];
    else if (ru.kind[r] == skt::RuleKind::kInstanceCycle) got = ru.cycle[r * ru.period + i % ru.period];
    else ADD_FAILURE() << "a rule of kind " << static_cast<int>(ru.kind[r]) << " on " << skt::param_name(pm);
  }
  return got;
}

// The computation node n's table gives rank r at phase k (FoldedNode::phase_factor).
double phase_gap(const skt::FoldedNode& n, uint32_t r, uint64_t k) {
  if (!n.phase_period || n.phase_factor.at(r).empty()) return n.gap.at(r).mean;
  return n.gap.at(r).mean * n.phase_factor.at(r).at(k % n.phase_period);
}

// The same stages, but each stage computes as long as its cell is large
// (100-500 us): one mean gap over the stages would even out the pipeline's
// waits, so every stage's send keeps its own computation in a table over the
// loop's iterations, and the cycle still folds: the program's gaps, exactly,
// through the file and back.
TEST(Compress, StagesThatComputeUnevenlyKeepTheirGapsByPhase) {
  skt::MergedTrace m = stage_program(false, true);
  std::string dir = skt::testing::temp_dir("fold-phases");
  skt::write_folded(dir + "/p.skf", compress(m, {}));
  skt::FoldedProgram p = skt::read_folded(dir + "/p.skf");
  EXPECT_TRUE(verify(p, m).empty());
  EXPECT_EQ(p.to_string(), "S0 ( S1 S2 )^80") << "the cycle folds as with even stages";
  int tables = 0;
  for (const auto& n : p.nodes) {
    if (n.is_loop() || p.symbols.identities.at(p.symbols.events.at(static_cast<size_t>(n.symbol)).identity).func !=
                           skt::kFunc_MPI_Send) {
      EXPECT_EQ(n.phase_period, 0u) << "the receives compute alike in every stage";
      continue;
    }
    ASSERT_EQ(n.phase_period, static_cast<uint64_t>(kStages));
    EXPECT_FALSE(n.phase_by_instance);
    for (uint32_t r = 0; r < 2; ++r)
      for (int s = 0; s < kStages; ++s)
        EXPECT_NEAR(phase_gap(n, r, static_cast<uint64_t>(s)), 100000.0 * static_cast<double>(1 + stage_cell(r, s)),
                    1e-6)
            << "rank " << r << " stage " << s;
    ++tables;
  }
  EXPECT_EQ(tables, 1) << p.to_string();
}

// The test program pair_exchange's shape: one exchange with tag 1, then 30
// iterations of a tag 2 and a tag 3 exchange, a loop that runs once. Its tags
// fold as one pass of a table (a cycle of 61, each phase seen once), so each
// phase's gap is one value. `before_tag3`: the computation before each tag 3
// exchange on rank 0 and before each tag 2 exchange on rank 1 (ns; 1.3 us
// elsewhere); `spike`, `spike2`: one phase of rank 0 takes that much longer
// once (an interrupt, a page fault), another phase the second.
skt::MergedTrace one_pass_exchanges(int64_t heavy, int64_t spike, int64_t spike2 = 0) {
  return merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    auto exchange = [&](int tag, int64_t gap) {
      skt::testing::Syn send = call(skt::kFunc_MPI_Send, 1, gap, 10, 8);
      send.peer = 1 - r;
      send.tag = tag;
      v.push_back(send);
      skt::testing::Syn recv = call(skt::kFunc_MPI_Recv, 2, 1300, 10, 8);
      recv.peer = 1 - r;
      recv.tag = tag;
      v.push_back(recv);
    };
    exchange(1, 1300);
    for (int it = 0; it < 30; ++it) {
      exchange(2, r == 0 && it == 11 ? 1300 + spike : r == 0 && it == 2 ? 1300 + spike2 : r == 1 ? heavy : 1300);
      exchange(3, r == 0 ? heavy : 1300);
    }
    v.push_back(call(skt::kFunc_MPI_Barrier, 3, 1300, 10));
    return v;
  });
}
bool has_cycle(const skt::FoldedProgram& p) {
  for (const auto& n : p.nodes)
    for (const auto& ru : n.rules)
      if (ru.kind[0] == skt::RuleKind::kCycle) return true;
  return false;
}

bool has_phases(const skt::FoldedProgram& p) {
  for (const auto& n : p.nodes)
    if (n.phase_period) return true;
  return false;
}

// One spike in one phase seen once is noise, not a phase that computes more:
// no table of the phases' computation is kept (the test program's traced
// skeleton has such spikes; they once split the cycle, and it folded one way
// or the other from run to run). Work that differs by phase and by rank, seen
// in every phase of a tag, is kept by phase, and the fold stays the same.
TEST(Compress, ASpikeInAPhaseSeenOnceKeepsNoPhaseTable) {
  skt::MergedTrace even = one_pass_exchanges(1300, 0);
  skt::FoldedProgram p_even = compress(even, {});
  EXPECT_TRUE(has_cycle(p_even)) << p_even.to_string();
  // one spike; two of 55 and 6 us (seen in a traced skeleton: within 50 us of each other); two of 122 and
  // 92 us above the rest, within a quarter of the larger excess of each other (seen in a traced skeleton too)
  for (auto [spike, spike2] : {std::pair<int64_t, int64_t>{60000, 0}, {55000, 6300}, {122000, 92000}}) {
    skt::MergedTrace spiked = one_pass_exchanges(1300, spike, spike2);
    skt::FoldedProgram p_spiked = compress(spiked, {});
    EXPECT_TRUE(verify(p_spiked, spiked).empty());
    EXPECT_EQ(p_spiked.to_string(), p_even.to_string()) << "spikes " << spike << ", " << spike2;
    EXPECT_TRUE(has_cycle(p_spiked));
    EXPECT_FALSE(has_phases(p_spiked)) << "spikes " << spike << ", " << spike2;
  }

  // where the work differs by tag and by rank, the cycle folds as before, and the sends keep it by phase
  skt::MergedTrace uneven = one_pass_exchanges(61300, 0);
  skt::FoldedProgram p = compress(uneven, {});
  EXPECT_TRUE(verify(p, uneven).empty());
  EXPECT_EQ(p.to_string(), p_even.to_string());
  int tables = 0;
  walk_calls(p, [&](const skt::FoldedNode& n, const skt::MergedEvent& e, uint32_t f, uint64_t i, int64_t k) {
    if (f != skt::kFunc_MPI_Send || i == 0) return;  // the first is the loop's computation
    tables += i == 1;
    ASSERT_NE(n.phase_period, 0u) << p.to_string();
    const int64_t tag = value_by_rules(p, n, e, skt::Param::tag, 0, i, k);
    const uint64_t phase = n.phase_by_instance ? i : static_cast<uint64_t>(k);
    EXPECT_NEAR(phase_gap(n, 0, phase), tag == 3 ? 61300 : 1300, 1e-6) << "rank 0, tag " << tag << ", instance " << i;
    EXPECT_NEAR(phase_gap(n, 1, phase), tag == 2 ? 61300 : 1300, 1e-6) << "rank 1, tag " << tag << ", instance " << i;
  });
  EXPECT_EQ(tables, 1) << p.to_string();
}

// A computation that drifts through the run (rank 0's gap grows from 0.1 to
// 0.3 ms over 200 iterations, rank 1's stays with a 1 % jitter) keeps its
// course: per rank, the mean of each of kProfileParts equal parts of the
// node's instances as a factor of the rank's mean, computed here from the
// gaps the test wrote (instance 0's gap is the loop's: the computation
// before it). Through the file and back. Steady gaps with the same jitter
// keep no profile.
TEST(Compress, AComputationThatDriftsKeepsItsCourseThroughTheRun) {
  const int iters = 200;
  auto gap_of = [&](uint32_t r, int i, bool drift) -> int64_t {
    if (drift && r == 0) return 100000 + 1000 * i;
    return 100000 + ((i * 7919) % 3 - 1) * 1000;  // -1 %, 0, +1 %
  };
  auto program = [&](bool drift) {
    return merged_from(2, [&](uint32_t r) {
      std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
      for (int i = 0; i < iters; ++i) v.push_back(call(skt::kFunc_MPI_Barrier, 1, gap_of(r, i, drift), 10));
      v.push_back(call(skt::kFunc_MPI_Finalize, 2, 10, 10));
      return v;
    });
  };
  skt::MergedTrace steady = program(false);
  skt::FoldedProgram p_steady = compress(steady, {});
  for (const auto& n : p_steady.nodes) EXPECT_TRUE(n.profile.empty()) << p_steady.to_string();

  skt::MergedTrace drifting = program(true);
  skt::FoldedProgram p = compress(drifting, {});
  ASSERT_TRUE(verify(p, drifting).empty());
  std::string dir = skt::testing::temp_dir("course");
  write_folded(dir + "/p.skf", p);
  skt::FoldedProgram back = skt::read_folded(dir + "/p.skf");
  ASSERT_EQ(back.nodes.size(), p.nodes.size());
  size_t barriers = 0;
  for (size_t id = 0; id < back.nodes.size(); ++id) {
    const skt::FoldedNode& n = back.nodes[id];
    EXPECT_EQ(n.profile, p.nodes[id].profile);
    if (n.is_loop() || n.instances != iters) {
      EXPECT_TRUE(n.profile.empty()) << "node " << id;
      continue;
    }
    ++barriers;
    ASSERT_EQ(n.profile.size(), 2u);
    for (uint32_t r = 0; r < 2; ++r) {
      ASSERT_EQ(n.profile[r].size(), skt::kProfileParts);
      std::vector<double> sum(skt::kProfileParts, 0), cnt(skt::kProfileParts, 0);
      double all = 0;
      for (int i = 1; i < iters; ++i) {
        size_t part = static_cast<size_t>(i) * skt::kProfileParts / iters;
        sum[part] += static_cast<double>(gap_of(r, i, true));
        cnt[part] += 1;
        all += static_cast<double>(gap_of(r, i, true));
      }
      double mean = all / (iters - 1);
      for (size_t k = 0; k < skt::kProfileParts; ++k)
        EXPECT_NEAR(n.profile[r][k], sum[k] / cnt[k] / mean, 1e-9) << "rank " << r << ", part " << k;
    }
    EXPECT_LT(n.profile[0].front(), 0.6);  // 0.1 ms against a mean of 0.2 ms
    EXPECT_GT(n.profile[0].back(), 1.4);
  }
  EXPECT_EQ(barriers, 1u) << p.to_string();
}

TEST(Compress, DamagedFoldedFilesAreRejectedWithTheirName) {
  auto m = merged_from(2, [&](uint32_t) {
    std::vector<skt::testing::Syn> v;
    for (int it = 0; it < 5; ++it) v.push_back(call(skt::kFunc_MPI_Barrier, 1, 100, 10));
    return v;
  });
  std::string dir = skt::testing::temp_dir("fbad");
  std::string good = dir + "/p.skf";
  write_folded(good, compress(m, {}));
  skt::FoldedProgram back = skt::read_folded(good);
  EXPECT_EQ(back.to_string(), "( S0 )^5");
  EXPECT_TRUE(verify(back, m).empty());
  std::string bytes = skt::testing::read_file(good);
  auto expect_error = [&](const std::string& content, const std::string& what) {
    std::string p = dir + "/bad.skf";
    skt::testing::write_file(p, content);
    try {
      skt::read_folded(p);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const skt::TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
    }
  };
  expect_error("", "bad magic");
  expect_error(bytes.substr(0, bytes.size() - 3), "truncated");
  std::string v7 = bytes;
  v7[8] = 7;
  expect_error(v7, "version 7." + std::to_string(skt::kFoldedVersionMinor) + " is not supported");
  std::string flipped = bytes;
  flipped[bytes.size() - 6] ^= 0x10;
  expect_error(flipped, "corrupt");
  std::string merged_path = dir + "/m.skm";
  skt::write_merged(merged_path, m);
  expect_error(skt::testing::read_file(merged_path), "this is a merged trace, not a folded program");
  {  // a merged trace whose identity names a peer class out of range
    skt::MergedTrace bad_peer = m;
    bad_peer.identities.front().peer_class = static_cast<skt::PeerClass>(7);
    skt::write_merged(merged_path, bad_peer);
    try {
      skt::read_merged(merged_path);
      ADD_FAILURE() << "accepted a peer class of 7";
    } catch (const skt::TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("(peer class)"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(merged_path), std::string::npos) << e.what();
    }
  }
  // a rule of an unknown kind, and a cycle of no length (written as such, read back)
  skt::FoldedProgram cyc = compress(stage_program(true, false), {});
  auto with_rules = [&](auto change) {
    skt::FoldedProgram q = cyc;
    for (auto& n : q.nodes)
      for (auto& ru : n.rules) change(ru);
    std::string path = dir + "/rules.skf";
    write_folded(path, q);
    return skt::testing::read_file(path);
  };
  expect_error(with_rules([](skt::CountRule& ru) { ru.kind.assign(ru.kind.size(), static_cast<skt::RuleKind>(9)); }), "corrupt folded program (rule kind)");
  // the first kind past the last one (kLoopLinear, 5)
  expect_error(with_rules([](skt::CountRule& ru) { ru.kind.assign(ru.kind.size(), static_cast<skt::RuleKind>(6)); }), "corrupt folded program (rule kind)");
  expect_error(with_rules([](skt::CountRule& ru) { ru.period = 0; }), "corrupt folded program (rule period)");
  // one cycle over the loop's iterations on one rank and over the instances on the other
  expect_error(with_rules([](skt::CountRule& ru) { ru.kind.back() = skt::RuleKind::kInstanceCycle; }), "corrupt folded program (rule kind)");
  // a computation profile (section 6) with a negative factor is rejected; one whose ranks have
  // different numbers of parts is not written
  {
    skt::FoldedProgram q = cyc;
    q.nodes.back().profile.assign(q.symbols.world_size, std::vector<double>(skt::kProfileParts, 1.0));
    q.nodes.back().profile[0][3] = -1;
    write_folded(dir + "/prof.skf", q);
    expect_error(skt::testing::read_file(dir + "/prof.skf"), "corrupt folded program (profile factor)");
    q.nodes.back().profile[0].resize(4, 1.0);
    try {
      write_folded(dir + "/prof2.skf", q);
      ADD_FAILURE() << "wrote a profile whose ranks have different numbers of parts";
    } catch (const skt::TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("profile parts differ between ranks"), std::string::npos) << e.what();
    }
  }
  // a phase table (section 7) with a negative factor is rejected; one of another length than its period is not written
  {
    skt::FoldedProgram q = cyc;
    q.nodes.back().phase_period = 4;
    q.nodes.back().phase_factor.assign(q.symbols.world_size, std::vector<double>(4, 1.0));
    q.nodes.back().phase_factor[1][2] = -0.5;
    write_folded(dir + "/ph.skf", q);
    expect_error(skt::testing::read_file(dir + "/ph.skf"), "corrupt folded program (phase factor)");
    skt::FoldedProgram longer = cyc;  // a period beyond the reader's bound (4096)
    longer.nodes.back().phase_period = 5000;
    longer.nodes.back().phase_factor.assign(longer.symbols.world_size, std::vector<double>(5000, 1.0));
    write_folded(dir + "/ph3.skf", longer);
    expect_error(skt::testing::read_file(dir + "/ph3.skf"), "corrupt folded program (phase period)");
    q.nodes.back().phase_factor[1].resize(3, 1.0);
    try {
      write_folded(dir + "/ph2.skf", q);
      ADD_FAILURE() << "wrote a phase table of another length than its period";
    } catch (const skt::TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("phase table of another length"), std::string::npos) << e.what();
    }
  }
  // kind 4 alone reads back, with the call sites joined flag
  skt::FoldedProgram q = cyc;
  q.callsites_joined = true;
  for (auto& n : q.nodes)
    for (auto& ru : n.rules) ru.kind.assign(ru.kind.size(), skt::RuleKind::kInstanceCycle);
  write_folded(dir + "/k4.skf", q);
  skt::FoldedProgram back4 = skt::read_folded(dir + "/k4.skf");
  EXPECT_TRUE(back4.callsites_joined);
  int by_instance = 0;
  for (const auto& n : back4.nodes)
    for (const auto& ru : n.rules) by_instance += ru.by_instance() && ru.period == static_cast<uint64_t>(kStages);
  EXPECT_GT(by_instance, 0);
}

namespace {
// NPB BT's shape on a 2 x 2 torus (tests/apps/sweeps.c): every iteration
// exchanges faces (each of 4 receives and 4 sends from a call site of its
// own, then a Waitall), then sweeps along x and along y, each sweep's calls
// from call sites of its own: kSweepStages forward stages and one backward
// stage (smaller messages, and longer computation before it, longer on rank
// r + 1 than on rank r, as BT's back substitution on unequal cells). The
// peers, tags and counts are this function's: the oracle the folded rules
// must reproduce.
constexpr uint32_t kTorusRanks = 4;
constexpr int kSweepStages = 3, kSweepIterations = 12;
int64_t torus_neighbour(uint32_t r, int side) {  // 0 east, 1 west, 2 north, 3 south
  uint32_t x = r % 2, y = r / 2;
  switch (side) {
    case 0: case 1: return y * 2 + (x + 1) % 2;
    default: return ((y + 1) % 2) * 2 + x;
  }
}
struct SweepCall {
  uint32_t func;
  int64_t peer, tag, count, gap;
};
// Rank r's point-to-point calls of one iteration, in order (Waits and the Waitall as peer -1).
std::vector<SweepCall> sweep_iteration(uint32_t r) {
  std::vector<SweepCall> v;
  for (int d = 0; d < 4; ++d) v.push_back({skt::kFunc_MPI_Irecv, torus_neighbour(r, d), 1000 + d, 64, 20000});
  for (int d = 0; d < 4; ++d) v.push_back({skt::kFunc_MPI_Isend, torus_neighbour(r, d ^ 1), 1000 + d, 64, 20000});
  v.push_back({skt::kFunc_MPI_Waitall, -1, -1, -1, 20000});
  for (int dir = 0; dir < 2; ++dir)
    for (int s = 0; s <= kSweepStages; ++s) {
      int64_t pred = torus_neighbour(r, 2 * dir + 1), succ = torus_neighbour(r, 2 * dir);
      bool back = s == kSweepStages;
      int64_t count = back ? 32 : 64, gap = back ? 200000 * (1 + r) : 20000;
      v.push_back({skt::kFunc_MPI_Irecv, pred, 100 + 10 * dir + (pred + s) % kSweepStages, count, gap});
      v.push_back({skt::kFunc_MPI_Isend, succ, 100 + 10 * dir + (r + s) % kSweepStages, count, 20000});
      v.push_back({skt::kFunc_MPI_Wait, -1, -1, -1, 20000});
      v.push_back({skt::kFunc_MPI_Wait, -1, -1, -1, 20000});
    }
  return v;
}
// The call site of the i-th call of an iteration: one per statement of the program.
uint32_t sweep_site(size_t i) {
  if (i < 9) return static_cast<uint32_t>(1 + i);  // the faces
  size_t k = i - 9, dir = k / (4 * (kSweepStages + 1)), stage = k / 4 % (kSweepStages + 1);
  return static_cast<uint32_t>(10 + 8 * dir + 4 * (stage == kSweepStages) + k % 4);
}
skt::MergedTrace sweep_program() {
  return merged_from(kTorusRanks, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    int64_t req = 1;
    std::vector<int64_t> open;
    for (int it = 0; it < kSweepIterations; ++it) {
      std::vector<SweepCall> calls = sweep_iteration(r);
      for (size_t i = 0; i < calls.size(); ++i) {
        skt::testing::Syn s = call(calls[i].func, sweep_site(i), calls[i].gap, 10, calls[i].count);
        if (calls[i].peer >= 0) {
          s.peer = calls[i].peer;
          s.tag = calls[i].tag;
          s.reqs = {req};
          open.push_back(req++);
        } else {  // completes the oldest open request (a Wait) or all (the Waitall)
          s.tag = skt::kNone;
          s.count = skt::kNone;
          size_t n = calls[i].func == skt::kFunc_MPI_Waitall ? open.size() : 1;
          s.reqs.assign(open.begin(), open.begin() + static_cast<long>(n));
          open.erase(open.begin(), open.begin() + static_cast<long>(n));
        }
        v.push_back(s);
      }
      v.push_back(call(skt::kFunc_MPI_Barrier, 30, 20000, 10));
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 31, 0, 10));
    return v;
  });
}
}  // namespace

// Per call site, the faces and the sweeps are 8 + 1 + 2 x 8 symbols; with
// the call sites joined, the faces fold into a loop of receives and one of
// sends (peers and tags a cycle over its iterations) and the sweeps into one
// loop over both directions' stages (peers, tags and counts a cycle over its
// iterations; the backward stage, whose computation before it differs from
// the forward ones' by rank, in a phase table of the receive).
// Expanding every rule gives back each rank's peers, tags and counts, and
// the phase table the computation before each sweep receive, exactly.
TEST(Compress, JoinedCallSitesFoldFacesAndSweepsWithExactPeersAndTags) {
  skt::MergedTrace m = sweep_program();
  skt::FoldedProgram apart = compress(m, {});
  CompressOptions join;
  join.join_callsites = true;
  std::string dir = skt::testing::temp_dir("fold-join");
  skt::write_folded(dir + "/p.skf", compress(m, join));  // the rules survive the file
  skt::FoldedProgram p = skt::read_folded(dir + "/p.skf");
  EXPECT_TRUE(p.callsites_joined);
  EXPECT_FALSE(apart.callsites_joined);
  EXPECT_TRUE(verify(p, m).empty());
  EXPECT_EQ(p.to_string(), "S0 ( ( S1 )^4 ( S2 )^4 S3 ( S1 S2 S4 S5 )^8 S6 )^12 S7") << p.to_string();
  EXPECT_GE(apart.length(), 2 + 8 + 1 + 8 + 1u) << apart.to_string();
  // Walk the expanded program with every node's instance and loop iteration,
  // evaluating each rule as the generator does, against the oracle.
  std::vector<std::vector<SweepCall>> want(kTorusRanks);
  for (uint32_t r = 0; r < kTorusRanks; ++r) want[r] = sweep_iteration(r);
  size_t at = 0, checked = 0, timed = 0;  // the call within the iteration
  walk_calls(p, [&](const skt::FoldedNode& n, const skt::MergedEvent& e, uint32_t f, uint64_t i, int64_t k) {
    if (f == skt::kFunc_MPI_Barrier) at = 0;
    if (f != skt::kFunc_MPI_Irecv && f != skt::kFunc_MPI_Isend && f != skt::kFunc_MPI_Wait &&
        f != skt::kFunc_MPI_Waitall)
      return;
    for (uint32_t r = 0; r < kTorusRanks; ++r) {
      const SweepCall& w = want[r].at(at);
      ASSERT_EQ(f, w.func) << "call " << at;
      if (w.peer < 0) continue;
      for (skt::Param pm : {skt::Param::peer, skt::Param::tag, skt::Param::count}) {
        EXPECT_EQ(value_by_rules(p, n, e, pm, r, i, k), pm == skt::Param::peer ? w.peer
                                                        : pm == skt::Param::tag ? w.tag
                                                                                : w.count)
            << skt::param_name(pm) << ", rank " << r << ", call " << at << " of the iteration";
        ++checked;
      }
      // a sweep receive's own computation (in the loop's first iteration it is the loop's)
      if (at >= 9 && f == skt::kFunc_MPI_Irecv && k > 0) {
        const uint64_t phase = n.phase_by_instance ? i : static_cast<uint64_t>(k);
        EXPECT_NEAR(phase_gap(n, r, phase), static_cast<double>(w.gap), 1e-6) << "rank " << r << ", call " << at;
        ++timed;
      }
    }
    ++at;
  });
  EXPECT_EQ(checked, 3u * kTorusRanks * kSweepIterations * (8 + 2 * 2 * (kSweepStages + 1)));
  EXPECT_EQ(timed, kTorusRanks * kSweepIterations * (2 * (kSweepStages + 1) - 1));
  bool by_iteration = false, phases = false;
  for (const auto& n : p.nodes) {
    for (const auto& ru : n.rules) by_iteration |= ru.kind[0] == skt::RuleKind::kCycle && ru.param == skt::Param::peer;
    phases |= n.phase_period != 0;
  }
  EXPECT_TRUE(by_iteration) << "the peers: a cycle over the loop's iterations";
  EXPECT_TRUE(phases) << "the backward stage's computation: a phase table";
}

// NPB CG's reductions: one Irecv, one Send and one Wait call site, made once
// per step of a recursive exchange, the peer rank xor 2^step and the tag
// the step's. Per call site (call sites not joined), the peers fold like
// the tags, a cycle over the steps: three symbols, where keyed peers give
// one symbol per call and step. Every rank computes 0.5 ms before the first
// step and 5 us before the second (kept by phase: the cycle folds whatever
// the computation). Evaluating the rules as the generator does gives back
// each call's peer and tag.
TEST(Compress, PeersThatCycleOverTheStepsFoldPerCallSite) {
  const uint32_t P = 4, kIterations = 12, kSteps = 2;
  auto peer_of = [](uint32_t r, uint32_t step) { return static_cast<int64_t>(r ^ (1u << step)); };
  auto m = merged_from(P, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    int64_t req = 1;
    for (uint32_t it = 0; it < kIterations; ++it)
      for (uint32_t step = 0; step < kSteps; ++step) {
        skt::testing::Syn rv = call(skt::kFunc_MPI_Irecv, 1, step == 0 ? 500000 : 5000, 10, 8);
        rv.peer = peer_of(r, step);
        rv.tag = step + 1;
        rv.reqs = {req};
        skt::testing::Syn sd = call(skt::kFunc_MPI_Send, 2, 1000, 10, 8);
        sd.peer = peer_of(r, step);
        sd.tag = step + 1;
        skt::testing::Syn wt = call(skt::kFunc_MPI_Wait, 3, 1000, 10);
        wt.reqs = {req++};
        v.insert(v.end(), {rv, sd, wt});
      }
    v.push_back(call(skt::kFunc_MPI_Finalize, 4, 0, 10));
    return v;
  });
  skt::FoldedProgram p = compress(m, {});
  EXPECT_FALSE(p.callsites_joined);
  EXPECT_TRUE(verify(p, m).empty());
  EXPECT_EQ(p.to_string(), "S0 ( S1 S2 S3 )^24 S4") << p.to_string();
  uint32_t checked = 0, call_index = 0;  // call_index: Irecv and Send calls walked, per rank alike
  walk_calls(p, [&](const skt::FoldedNode& n, const skt::MergedEvent& e, uint32_t f, uint64_t i, int64_t k) {
    if (f != skt::kFunc_MPI_Irecv && f != skt::kFunc_MPI_Send) return;
    const uint32_t step = (call_index++ / 2) % kSteps;
    for (const auto& ru : n.rules) EXPECT_EQ(ru.kind[0], skt::RuleKind::kCycle) << "a cycle over the loop's iterations";
    for (uint32_t r = 0; r < P; ++r)
      for (skt::Param pm : {skt::Param::peer, skt::Param::tag}) {
        EXPECT_EQ(value_by_rules(p, n, e, pm, r, i, k), pm == skt::Param::peer ? peer_of(r, step) : step + 1)
            << skt::param_name(pm) << ", rank " << r << ", call " << call_index;
        ++checked;
      }
  });
  EXPECT_EQ(checked, 2u * P * 2 * kIterations * kSteps);
}

// Joined call sites whose computation differs by direction, on one rank or
// on every rank: one mean would even out the rank's work between the
// directions, so the send keeps its computation by direction (a phase table
// over the loop's iterations), and the calls fold as one. (The first
// direction's computation is the loop's own, kept apart in any case.)
skt::MergedTrace direction_program(bool every_rank) {
  return merged_from(2, [&](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < 10; ++it)
      for (uint32_t dir = 0; dir < 3; ++dir) {
        // 2 ms before the last direction (on rank 1 only, or on both), 0.1 ms otherwise
        bool longer = dir == 2 && (every_rank || r == 1);
        skt::testing::Syn s = call(skt::kFunc_MPI_Send, 1 + dir, longer ? 2000000 : 100000, 10, 8);
        s.peer = 1 - r;
        s.tag = static_cast<int64_t>(dir);
        v.push_back(s);
        skt::testing::Syn rv = call(skt::kFunc_MPI_Recv, 4 + dir, 100, 10, 8);
        rv.peer = 1 - r;
        rv.tag = static_cast<int64_t>(dir);
        v.push_back(rv);
      }
    return v;
  });
}

TEST(Compress, JoinedCallSitesKeepByPhaseWhatComputesUnevenlyPerRank) {
  CompressOptions join;
  join.join_callsites = true;
  for (bool every_rank : {false, true}) {
    skt::MergedTrace m = direction_program(every_rank);
    skt::FoldedProgram p = compress(m, join);
    EXPECT_TRUE(verify(p, m).empty());
    EXPECT_EQ(p.to_string(), "S0 ( S1 S2 )^30") << p.to_string();
    EXPECT_TRUE(has_phases(p)) << p.to_string();
    // the program's gaps by direction, from the table (the first send's is the loop's)
    size_t sends = 0;
    walk_calls(p, [&](const skt::FoldedNode& n, const skt::MergedEvent&, uint32_t f, uint64_t i, int64_t k) {
      if (f != skt::kFunc_MPI_Send || i == 0) return;
      ++sends;
      const uint64_t phase = n.phase_by_instance ? i : static_cast<uint64_t>(k);
      EXPECT_NEAR(phase_gap(n, 0, phase), every_rank && i % 3 == 2 ? 2000000 : 100000, 1e-6) << "instance " << i;
      EXPECT_NEAR(phase_gap(n, 1, phase), i % 3 == 2 ? 2000000 : 100000, 1e-6) << "instance " << i;
    });
    EXPECT_EQ(sends, 29u);
  }
}

namespace {

// NPB CG's shape at 4 ranks (its conj_grad): an outer loop of 3 iterations around an inner one of 10, whose
// body makes 7 exchanges (Irecv, Send, Wait): a two-step row reduction of one element (call sites 1-3, rank
// xor 2 then xor 1), two exchanges of 100 elements (4-6, xor 1 then xor 2), one with a transposed rank (7-9,
// a table), the reduction again; after the inner loop, the reduction of 2 elements (10-12).
std::vector<skt::testing::Syn> cg_like(uint32_t r) {
  std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
  int64_t req = 0;
  auto exchange = [&](uint32_t site, int64_t peer, int64_t count, int64_t tag) {
    skt::testing::Syn irecv = call(skt::kFunc_MPI_Irecv, site, 20000, 10, count);
    irecv.peer = peer;
    irecv.tag = tag;
    irecv.reqs = {req};
    skt::testing::Syn send = call(skt::kFunc_MPI_Send, site + 1, 100, 10, count);
    send.peer = peer;
    send.tag = tag;
    skt::testing::Syn wait = call(skt::kFunc_MPI_Wait, site + 2, 100, 10);
    wait.reqs = {req++};
    v.insert(v.end(), {irecv, send, wait});
  };
  const int64_t transposed[4] = {0, 2, 1, 3};
  for (int outer = 0; outer < 3; ++outer) {
    for (int it = 0; it < 10; ++it) {
      exchange(1, r ^ 2, 1, 1);
      exchange(1, r ^ 1, 1, 2);
      exchange(4, r ^ 1, 100, 2);
      exchange(4, r ^ 2, 100, 1);
      exchange(7, transposed[r], 100, 1);
      exchange(1, r ^ 2, 1, 1);
      exchange(1, r ^ 1, 1, 2);
    }
    exchange(10, r ^ 2, 2, 1);
    exchange(10, r ^ 1, 2, 2);
  }
  v.push_back(call(skt::kFunc_MPI_Finalize, 20, 100, 10));
  return v;
}

}  // namespace

// With call sites joined, the Irecvs of 1, 2 and 100 elements first share a symbol whose counts and peers
// follow no rule (their cycle, 72 exchanges, is longer than kMaxCyclePeriod). Refining the counts first,
// and only then whatever still follows no rule, lets the reduction's two steps fold into one loop with a
// peer cycle, as they do per call site: 17 either way. Keying the peers exactly at once with the counts
// (before) wrote both steps out in every iteration: 29 joined.
TEST(Compress, JoinedCallSitesFoldNoLongerThanOneSymbolPerCallSite) {
  skt::MergedTrace m = merged_from(4, cg_like);
  skt::fold::CompressOptions per_site, joined;
  joined.join_callsites = true;
  skt::FoldedProgram a = skt::fold::compress(m, per_site), b = skt::fold::compress(m, joined);
  EXPECT_TRUE(skt::fold::verify(a, m).empty());
  EXPECT_TRUE(skt::fold::verify(b, m).empty());
  EXPECT_LE(b.length(), a.length()) << "per call site " << a.length() << ", joined " << b.length();
}

namespace {

// A pipeline over 7 ranks, 80 iterations: rank r > 0 receives from r - 1,
// rank r < 6 sends to r + 1 (so the ranks' first calls in an iteration
// differ, and the events' rank sets), then all reduce; rank 3's computation
// drifts (a course), and the ranks make different numbers of calls.
skt::MergedTrace pipeline_program() {
  return merged_from(7, [](uint32_t r) {
    std::vector<skt::testing::Syn> v{call(skt::kFunc_MPI_Init, 0, 0, 10)};
    for (int it = 0; it < 80; ++it) {
      if (r > 0) {
        skt::testing::Syn recv = call(skt::kFunc_MPI_Recv, 1, r == 3 ? 1000 + 500 * it : 1000, 10, 8 + r);
        recv.peer = r - 1;
        recv.tag = 5;
        v.push_back(recv);
      }
      if (r < 6) {
        skt::testing::Syn send = call(skt::kFunc_MPI_Send, 2, 500 + 100 * r, 10, 9 + r);
        send.peer = r + 1;
        send.tag = 5;
        v.push_back(send);
      }
      v.push_back(call(skt::kFunc_MPI_Allreduce, 3, 2000 + 10 * r, 10 + it % 3));
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 4, 10, 10));
    return v;
  });
}

std::string folded_bytes(const skt::FoldedProgram& p) {
  std::string path = skt::testing::temp_dir("threads") + "/p.skf";
  skt::write_folded(path, p);
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

// The timing walk splits the ranks between threads (CompressOptions::threads):
// whatever the number, the program is the same file, byte for byte — on
// programs with per-rank first calls in a loop and rank sets (the pipeline),
// a course, phase tables and cycles (the sweeps), and refinement rounds (CG).
TEST(Compress, TheProgramDoesNotDependOnTheThreads) {
  struct Case {
    const char* name;
    skt::MergedTrace m;
    bool joined;
  };
  std::vector<Case> cases;
  cases.push_back({"pipeline", pipeline_program(), false});
  cases.push_back({"sweeps", sweep_program(), false});
  cases.push_back({"sweeps joined", sweep_program(), true});
  cases.push_back({"cg joined", merged_from(4, cg_like), true});
  for (const Case& c : cases) {
    skt::fold::CompressOptions one;
    one.join_callsites = c.joined;
    one.threads = 1;
    const skt::FoldedProgram base = skt::fold::compress(c.m, one);
    ASSERT_TRUE(skt::fold::verify(base, c.m).empty()) << c.name;
    const std::string want = folded_bytes(base);
    for (unsigned threads : {2u, 3u, 7u, 16u}) {
      skt::fold::CompressOptions many = one;
      many.threads = threads;
      EXPECT_EQ(folded_bytes(skt::fold::compress(c.m, many)), want) << c.name << ", " << threads << " threads";
    }
  }
  // the pipeline has what the walk's lanes must keep apart: a course and per-rank loop entries
  const skt::FoldedProgram p = skt::fold::compress(cases[0].m, {});
  bool course = false;
  for (const auto& n : p.nodes) course |= !n.profile.empty();
  EXPECT_TRUE(course) << p.to_string();
}
