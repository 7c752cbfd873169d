// Longest common extensions in O(1): inverse suffix array, LCP (Kasai) and a
// range-minimum structure over the LCP array. The range minimum uses blocks
// of 64: inside a block, a 64-bit mask per position holds the stack of
// prefix-minimum candidates (a query is one AND and one count-trailing-
// zeros); across blocks, a sparse table of block minima. About 1.5 bytes per
// position for the table, 8 for the masks.
#include <algorithm>
#include <future>

#include "skel/fold.h"

namespace skt::fold {

namespace {

class RangeMin {
 public:
  explicit RangeMin(std::vector<int32_t> a) : a_(std::move(a)), mask_(a_.size()) {
    size_t n = a_.size();
    for (size_t b = 0; b < n; b += 64) {
      uint64_t stack = 0;
      for (size_t i = b; i < std::min(n, b + 64); ++i) {
        while (stack && a_[b + 63 - static_cast<size_t>(__builtin_clzll(stack))] >= a_[i])
          stack &= ~(uint64_t{1} << (63 - __builtin_clzll(stack)));
        stack |= uint64_t{1} << (i - b);
        mask_[i] = stack;
      }
    }
    size_t blocks = (n + 63) / 64;
    table_.emplace_back(blocks);
    for (size_t k = 0; k < blocks; ++k) table_[0][k] = in_block(k * 64, std::min(n, k * 64 + 64) - 1);
    for (size_t lev = 1; (size_t{1} << lev) <= blocks; ++lev) {
      const auto& prev = table_[lev - 1];
      std::vector<int32_t> cur(blocks - (size_t{1} << lev) + 1);
      for (size_t k = 0; k < cur.size(); ++k) cur[k] = std::min(prev[k], prev[k + (size_t{1} << (lev - 1))]);
      table_.push_back(std::move(cur));
    }
  }
  // Minimum of a[l..r], l <= r.
  int32_t min(size_t l, size_t r) const {
    size_t bl = l / 64, br = r / 64;
    if (bl == br) return in_block(l, r);
    int32_t m = std::min(in_block(l, bl * 64 + 63), in_block(br * 64, r));
    if (bl + 1 < br) {
      size_t len = br - bl - 1;
      size_t lev = 63 - static_cast<size_t>(__builtin_clzll(len));
      m = std::min(m, std::min(table_[lev][bl + 1], table_[lev][br - (size_t{1} << lev)]));
    }
    return m;
  }

 private:
  int32_t in_block(size_t l, size_t r) const {
    uint64_t m = mask_[r] & (~uint64_t{0} << (l % 64));
    return a_[(r / 64) * 64 + static_cast<size_t>(__builtin_ctzll(m))];
  }
  std::vector<int32_t> a_;
  std::vector<uint64_t> mask_;
  std::vector<std::vector<int32_t>> table_;
};

}  // namespace

struct Lce::Side {
  std::vector<int32_t> rank;  // inverse suffix array
  RangeMin lcp;
  Side(std::vector<int32_t> rank_, std::vector<int32_t> lcp_) : rank(std::move(rank_)), lcp(std::move(lcp_)) {}

  static Side* build(const std::vector<int32_t>& s) {
    int32_t max_symbol = 0;
    for (int32_t c : s) max_symbol = std::max(max_symbol, c);
    std::vector<int32_t> sa = suffix_array(s, max_symbol);
    size_t n = s.size();
    std::vector<int32_t> rank(n), lcp(n, 0);
    for (size_t i = 0; i < n; ++i) rank[static_cast<size_t>(sa[i])] = static_cast<int32_t>(i);
    // Kasai: lcp[k] = LCP(suffix sa[k-1], suffix sa[k]).
    size_t h = 0;
    for (size_t i = 0; i < n; ++i) {
      if (rank[i] == 0) {
        h = 0;
        continue;
      }
      size_t j = static_cast<size_t>(sa[static_cast<size_t>(rank[i]) - 1]);
      while (i + h < n && j + h < n && s[i + h] == s[j + h]) ++h;
      lcp[static_cast<size_t>(rank[i])] = static_cast<int32_t>(h);
      if (h) --h;
    }
    return new Side(std::move(rank), std::move(lcp));
  }
  uint32_t query(uint32_t i, uint32_t j, uint32_t n) const {
    if (i == j) return n - i;
    size_t a = static_cast<size_t>(rank[i]), b = static_cast<size_t>(rank[j]);
    if (a > b) std::swap(a, b);
    return static_cast<uint32_t>(lcp.min(a + 1, b));
  }
};

Lce::Lce(const std::vector<int32_t>& s) : n_(static_cast<uint32_t>(s.size())) {
  // The two sides are independent: from 2^16 symbols on, a second thread
  // builds the forward one. A std::bad_alloc in either reaches the caller
  // (skelgen reports it): the future carries the thread's, and waits for
  // the thread where this one's throws.
  std::future<Side*> forward;
  if (s.size() >= (size_t{1} << 16)) forward = std::async(std::launch::async, [&s] { return Side::build(s); });
  else fwd_ = Side::build(s);
  std::vector<int32_t> rev(s.rbegin(), s.rend());
  bwd_ = Side::build(rev);
  if (forward.valid()) fwd_ = forward.get();
}

Lce::~Lce() {
  delete fwd_;
  delete bwd_;
}

uint32_t Lce::forward(uint32_t i, uint32_t j) const { return fwd_->query(i, j, n_); }

uint32_t Lce::backward(uint32_t i, uint32_t j) const { return bwd_->query(n_ - 1 - i, n_ - 1 - j, n_); }

}  // namespace skt::fold
