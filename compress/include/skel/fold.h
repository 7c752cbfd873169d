// Stage 3 core: folding a symbol string into nested loops (MISSION.md §3).
//
// A trace is a string over an integer alphabet; loops are tandem repeats.
// fold() finds all maximal primitive tandem repeats in O(n log n) with a
// suffix array, LCP array and O(1) range-minimum queries (longest common
// extensions forward and backward), chooses among the loops they offer the
// non-overlapping set that leaves the string shortest (Choice), folds each
// into (body)^count, and repeats on the shorter string until no repeat is
// left. Bodies are folded the same way, so nested loops come out naturally.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace skt::fold {

// Suffix array of s (values 0..max_symbol) by SA-IS, O(n + max_symbol).
std::vector<int32_t> suffix_array(const std::vector<int32_t>& s, int32_t max_symbol);

// Longest common extensions of a string in O(1) after O(n) preparation
// (two suffix arrays, built by two threads from 2^16 symbols on).
// forward(i, j): length of the longest common prefix of the suffixes at i, j.
// backward(i, j): length of the longest common suffix of the prefixes ending
// at i and j (inclusive). Memory: about 40 bytes per symbol.
class Lce {
 public:
  explicit Lce(const std::vector<int32_t>& s);
  ~Lce();
  Lce(const Lce&) = delete;
  Lce& operator=(const Lce&) = delete;
  uint32_t forward(uint32_t i, uint32_t j) const;
  uint32_t backward(uint32_t i, uint32_t j) const;

 private:
  struct Side;
  Side* fwd_;
  Side* bwd_;
  uint32_t n_;
};

// A maximal tandem repeat: s[start, end) has period `period`, end - start >=
// 2 * period, cannot be extended either way, and its root is primitive.
struct Run {
  uint32_t start, end, period;
};
// Every maximal primitive run, each once (with its smallest period), in
// order of period, then start. Periods are sampled (O(n log n) samples);
// an extension first jumps over runs of short periods already found, then
// compares symbols directly, up to direct_per_symbol * n symbols in all,
// and only past that builds the Lce structure (memory: ~40 bytes per
// symbol; 0 builds it at the first long extension).
std::vector<Run> maximal_runs(const std::vector<int32_t>& s, uint64_t direct_per_symbol = 16);

// A folded string. An item is a symbol (>= 0) or a loop (-1 - loop index).
using Item = int64_t;
struct Loop {
  std::vector<Item> body;
  uint64_t count = 0;
};
struct Folded {
  std::vector<Item> items;  // the top level
  std::vector<Loop> loops;  // shared: one entry per distinct (body, count)
};
inline bool is_loop(Item it) { return it < 0; }
inline size_t loop_index(Item it) { return static_cast<size_t>(-1 - it); }
inline Item loop_item(size_t index) { return -1 - static_cast<Item>(index); }

// Where a loop starts when it could start at several places: a run of
// length end - start folds count = (end - start) / period whole periods,
// starting anywhere from start to start + (end - start) mod period (in
// "1 2 3 1 2 3 1 2", "( 1 2 3 )^2 1 2" or "1 ( 2 3 1 )^2 2" or
// "1 2 ( 3 1 2 )^2"). phase_cost(first, length) scores the loop's middle
// iteration, [first, first + length) in positions of the string fold() was
// given; only the cheapest places are offered, and among them the choice
// rule decides (the leftmost where they fold alike). Without a phase_cost
// every place is offered. (compress: the messages whose send and receive
// would fall in different iterations, which a cut loop cannot keep.)
using PhaseCost = std::function<uint64_t(uint64_t first, uint64_t length)>;

// How each pass chooses among the repeats it found (docs/compress.md).
enum class Choice : uint8_t {
  kShortest,     // the non-overlapping loops that leave the pass's string shortest
  kLongestFirst, // longest repeat first, leftmost on ties (until 2026-11-25; for comparison)
};

// progress(pass, symbols left) is called after each pass on long inputs.
Folded fold(const std::vector<int32_t>& s, const std::function<void(int, size_t)>& progress = {},
            const PhaseCost& phase_cost = {}, Choice choice = Choice::kShortest);
std::vector<int32_t> expand(const Folded& f);
// Symbols written, brackets and exponents not counted.
uint64_t folded_length(const Folded& f);
// "( 1 2 3 )^3 1": items separated by single spaces.
std::string to_string(const Folded& f);

}  // namespace skt::fold
