// Fold benchmark: time and peak memory of skt::fold::fold on a structured
// input of n symbols, and optionally of a straightforward O(n^2) repeat
// finder on the same input (each in its own process: peak memory is the
// process's). The input is LU-like: an outer loop whose body holds a 7-symbol
// inner body repeated 249 times plus 10 other calls, with 0.1 % of the
// symbols replaced by noise.
//   usage: fold_bench N [shortest|longest-first|naive]
// shortest: fold() as skelgen folds (Choice::kShortest); longest-first: the
// choice rule used until 2026-11-25 (Choice::kLongestFirst).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "skel/fold.h"

using namespace skt::fold;

static std::vector<int32_t> lu_like(size_t n) {
  std::mt19937 rng(42);
  std::vector<int32_t> s;
  s.reserve(n);
  for (int32_t k = 0; k < 20 && s.size() < n; ++k) s.push_back(100 + k);  // set-up calls
  while (s.size() < n) {
    for (int it = 0; it < 249 && s.size() < n; ++it)
      for (int32_t k = 0; k < 7 && s.size() < n; ++k) s.push_back(k);
    for (int32_t k = 0; k < 10 && s.size() < n; ++k) s.push_back(10 + k);
  }
  for (size_t i = 0; i < n / 1000; ++i) s[rng() % n] = 50 + static_cast<int32_t>(rng() % 20);
  return s;
}

// The O(n^2) baseline: every maximal run found by scanning each period over
// the whole string (the repeats only: no choice, no fold).
static size_t naive_runs(const std::vector<int32_t>& s) {
  size_t n = s.size(), found = 0;
  for (size_t p = 1; p <= n / 2; ++p) {
    size_t run = 0;
    for (size_t i = 0; i + p < n; ++i) {
      run = s[i] == s[i + p] ? run + 1 : 0;
      if (run == p) ++found;  // a repeat of period p reached two copies
    }
  }
  return found;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s N [shortest|longest-first|naive]\n", argv[0]);
    return 2;
  }
  size_t n = std::strtoull(argv[1], nullptr, 10);
  const char* method = argc > 2 ? argv[2] : "shortest";
  const bool naive = std::strcmp(method, "naive") == 0;
  if (!naive && std::strcmp(method, "shortest") != 0 && std::strcmp(method, "longest-first") != 0) {
    std::fprintf(stderr, "%s: unknown method %s\n", argv[0], method);
    return 2;
  }
  std::vector<int32_t> s = lu_like(n);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  auto t0 = std::chrono::steady_clock::now();
  uint64_t len = 0;
  if (naive) {
    len = naive_runs(s);
  } else {
    Folded f = fold(s, {}, {}, std::strcmp(method, "shortest") == 0 ? Choice::kShortest : Choice::kLongestFirst);
    len = folded_length(f);
    if (n <= 1000000 && expand(f) != s) {
      std::fprintf(stderr, "fold_bench: expand(fold(s)) != s\n");
      return 1;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  // peak: the whole process (libraries, the input itself); own: what the
  // method added on top of the process as it was before it ran.
  auto cpu = [](const rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  };
  // cpu_seconds: user + system time of the run (on a shared host, what the
  // run itself took, without the waits for a core).
  std::printf("n=%zu method=%s seconds=%.3f cpu_seconds=%.3f peak_bytes_per_symbol=%.1f own_bytes_per_symbol=%.1f result=%llu\n", n,
              method, secs, cpu(after) - cpu(before), static_cast<double>(after.ru_maxrss) * 1024.0 / static_cast<double>(n),
              static_cast<double>(after.ru_maxrss - before.ru_maxrss) * 1024.0 / static_cast<double>(n),
              static_cast<unsigned long long>(len));
  return 0;
}
