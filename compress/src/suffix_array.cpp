// SA-IS (Nong, Zhang, Chan 2009): induced sorting over an integer alphabet.
#include <algorithm>

#include "skel/fold.h"

namespace skt::fold {
namespace {

// s: values in [0, upper]. Returns the suffix array of s.
std::vector<int32_t> sa_is(const std::vector<int32_t>& s, int32_t upper) {
  const int32_t n = static_cast<int32_t>(s.size());
  if (n == 0) return {};
  if (n == 1) return {0};
  if (n == 2) return s[0] < s[1] ? std::vector<int32_t>{0, 1} : std::vector<int32_t>{1, 0};
  std::vector<int32_t> sa(static_cast<size_t>(n));
  // ls[i]: suffix i is S-type (smaller than suffix i+1); the last is L-type.
  std::vector<bool> ls(static_cast<size_t>(n), false);
  for (int32_t i = n - 2; i >= 0; --i) ls[i] = s[i] == s[i + 1] ? ls[i + 1] : s[i] < s[i + 1];
  // Bucket boundaries: sum_l[c] = start of c's bucket, sum_s[c] = start of its S part.
  std::vector<int32_t> sum_l(static_cast<size_t>(upper) + 1, 0), sum_s(static_cast<size_t>(upper) + 1, 0);
  for (int32_t i = 0; i < n; ++i) {
    if (!ls[i]) ++sum_s[s[i]];
    else ++sum_l[s[i] + 1];
  }
  for (int32_t c = 0; c <= upper; ++c) {
    sum_s[c] += sum_l[c];
    if (c < upper) sum_l[c + 1] += sum_s[c];
  }
  std::vector<int32_t> buf(static_cast<size_t>(upper) + 1);
  auto induce = [&](const std::vector<int32_t>& lms) {
    std::fill(sa.begin(), sa.end(), -1);
    std::copy(sum_s.begin(), sum_s.end(), buf.begin());
    for (int32_t d : lms)
      if (d != n) sa[buf[s[d]]++] = d;
    std::copy(sum_l.begin(), sum_l.end(), buf.begin());
    sa[buf[s[n - 1]]++] = n - 1;
    for (int32_t i = 0; i < n; ++i) {
      int32_t v = sa[i];
      if (v >= 1 && !ls[v - 1]) sa[buf[s[v - 1]]++] = v - 1;
    }
    std::copy(sum_l.begin(), sum_l.end(), buf.begin());
    for (int32_t i = n - 1; i >= 0; --i) {
      int32_t v = sa[i];
      if (v >= 1 && ls[v - 1]) sa[--buf[s[v - 1] + 1]] = v - 1;
    }
  };
  // LMS positions: S-type right after an L-type.
  std::vector<int32_t> lms_map(static_cast<size_t>(n) + 1, -1), lms;
  int32_t m = 0;
  for (int32_t i = 1; i < n; ++i)
    if (!ls[i - 1] && ls[i]) lms_map[i] = m++;
  lms.reserve(static_cast<size_t>(m));
  for (int32_t i = 1; i < n; ++i)
    if (!ls[i - 1] && ls[i]) lms.push_back(i);
  induce(lms);
  if (m) {
    // Name the LMS substrings in sorted order, sort them recursively.
    std::vector<int32_t> sorted_lms;
    sorted_lms.reserve(static_cast<size_t>(m));
    for (int32_t v : sa)
      if (lms_map[v] != -1) sorted_lms.push_back(v);
    std::vector<int32_t> rec(static_cast<size_t>(m));
    int32_t rec_upper = 0;
    rec[lms_map[sorted_lms[0]]] = 0;
    for (int32_t i = 1; i < m; ++i) {
      int32_t l = sorted_lms[i - 1], r = sorted_lms[i];
      int32_t end_l = lms_map[l] + 1 < m ? lms[lms_map[l] + 1] : n;
      int32_t end_r = lms_map[r] + 1 < m ? lms[lms_map[r] + 1] : n;
      bool same = true;
      if (end_l - l != end_r - r) {
        same = false;
      } else {
        while (l < end_l && s[l] == s[r]) {
          ++l;
          ++r;
        }
        if (l == n || s[l] != s[r]) same = false;
      }
      if (!same) ++rec_upper;
      rec[lms_map[sorted_lms[i]]] = rec_upper;
    }
    std::vector<int32_t> rec_sa = sa_is(rec, rec_upper);
    for (int32_t i = 0; i < m; ++i) sorted_lms[i] = lms[rec_sa[i]];
    induce(sorted_lms);
  }
  return sa;
}

}  // namespace

std::vector<int32_t> suffix_array(const std::vector<int32_t>& s, int32_t max_symbol) {
  return sa_is(s, std::max<int32_t>(0, max_symbol));
}

}  // namespace skt::fold
