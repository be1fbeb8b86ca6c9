// Suffix array and LCP array, for the tuple estimators (t-tuple, LRS) and the IID track's
// longest-repeated-substring test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qe::ea::detail {

// Suffix array of s[0..n) (byte alphabet), by induced sorting (SA-IS): linear time.
std::vector<int32_t> suffix_array(const uint8_t* s, size_t n);

// lcp[i] = length of the longest common prefix of the suffixes sa[i-1] and sa[i]; lcp[0] = 0.
// Kasai et al.'s linear-time algorithm. Takes the suffix array by value and reuses it.
std::vector<int32_t> lcp_array(const uint8_t* s, size_t n, const std::vector<int32_t>& sa);

// Repeated-tuple statistics of s for tuple lengths 1..v (v = longest repeated substring):
// max_count[L] = occurrences of the most common L-tuple; pairs[L] = number of pairs of equal
// L-tuples (the sum of C(count, 2) over distinct L-tuples). Index 0 unused.
struct TupleCounts {
  size_t longest_repeat = 0;
  std::vector<uint64_t> max_count;
  std::vector<uint64_t> pairs;
};
TupleCounts tuple_counts(const uint8_t* s, size_t n);

}  // namespace qe::ea::detail
