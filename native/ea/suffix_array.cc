// Induced-sorting suffix array construction (Nong, Zhang and Chan, "Two Efficient Algorithms
// for Linear Time Suffix Array Construction", 2011), Kasai's LCP, and one bottom-up pass
// over the LCP intervals for the counts every tuple length needs.
#include "ea/suffix_array.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace qe::ea::detail {

namespace {

// Suffix array of t[0..n), where t[n-1] is a unique smallest character (0) and the others
// lie in [1, k). Recursive on the reduced string of LMS substrings.
void sais(const int32_t* t, int32_t* sa, int32_t n, int32_t k) {
  std::vector<uint8_t> stype(static_cast<size_t>(n));  // 1 = S-type suffix, 0 = L-type
  stype[static_cast<size_t>(n - 1)] = 1;
  for (int32_t i = n - 2; i >= 0; --i)
    stype[static_cast<size_t>(i)] = t[i] < t[i + 1] || (t[i] == t[i + 1] && stype[static_cast<size_t>(i + 1)]);
  auto is_lms = [&](int32_t i) { return i > 0 && stype[static_cast<size_t>(i)] && !stype[static_cast<size_t>(i - 1)]; };

  std::vector<int32_t> counts(static_cast<size_t>(k), 0), bucket(static_cast<size_t>(k));
  for (int32_t i = 0; i < n; ++i) ++counts[static_cast<size_t>(t[i])];
  auto bucket_starts = [&] {
    int32_t sum = 0;
    for (int32_t c = 0; c < k; ++c) {
      bucket[static_cast<size_t>(c)] = sum;
      sum += counts[static_cast<size_t>(c)];
    }
  };
  auto bucket_ends = [&] {
    int32_t sum = 0;
    for (int32_t c = 0; c < k; ++c) {
      sum += counts[static_cast<size_t>(c)];
      bucket[static_cast<size_t>(c)] = sum;
    }
  };
  auto induce = [&] {
    bucket_starts();
    for (int32_t i = 0; i < n; ++i) {
      const int32_t j = sa[i] - 1;
      if (sa[i] > 0 && !stype[static_cast<size_t>(j)]) sa[bucket[static_cast<size_t>(t[j])]++] = j;
    }
    bucket_ends();
    for (int32_t i = n - 1; i >= 0; --i) {
      const int32_t j = sa[i] - 1;
      if (sa[i] > 0 && stype[static_cast<size_t>(j)]) sa[--bucket[static_cast<size_t>(t[j])]] = j;
    }
  };

  // 1. Sort the LMS substrings: drop the LMS suffixes at their bucket ends and induce.
  std::fill(sa, sa + n, -1);
  bucket_ends();
  for (int32_t i = 1; i < n; ++i)
    if (is_lms(i)) sa[--bucket[static_cast<size_t>(t[i])]] = i;
  induce();

  // 2. Name the LMS substrings in sorted order; equal substrings share a name.
  int32_t n1 = 0;
  for (int32_t i = 0; i < n; ++i)
    if (is_lms(sa[i])) sa[n1++] = sa[i];
  std::fill(sa + n1, sa + n, -1);
  int32_t names = 0, prev = -1;
  for (int32_t i = 0; i < n1; ++i) {
    const int32_t pos = sa[i];
    bool differs = false;
    for (int32_t d = 0;; ++d) {
      if (prev < 0 || t[pos + d] != t[prev + d] || stype[static_cast<size_t>(pos + d)] != stype[static_cast<size_t>(prev + d)]) {
        differs = true;
        break;
      }
      if (d > 0 && (is_lms(pos + d) || is_lms(prev + d))) break;
    }
    if (differs) {
      ++names;
      prev = pos;
    }
    sa[n1 + pos / 2] = names - 1;
  }
  for (int32_t i = n - 1, j = n - 1; i >= n1; --i)
    if (sa[i] >= 0) sa[j--] = sa[i];

  // 3. Sort the LMS suffixes: recurse when names repeat, else the names are the ranks.
  int32_t* reduced = sa + n - n1;
  if (names < n1) {
    sais(reduced, sa, n1, names);
  } else {
    for (int32_t i = 0; i < n1; ++i) sa[reduced[i]] = i;
  }

  // 4. Induce the full order from the sorted LMS suffixes.
  for (int32_t i = 1, j = 0; i < n; ++i)
    if (is_lms(i)) reduced[j++] = i;
  for (int32_t i = 0; i < n1; ++i) sa[i] = reduced[sa[i]];
  std::fill(sa + n1, sa + n, -1);
  bucket_ends();
  for (int32_t i = n1 - 1; i >= 0; --i) {
    const int32_t j = sa[i];
    sa[i] = -1;
    sa[--bucket[static_cast<size_t>(t[j])]] = j;
  }
  induce();
}

}  // namespace

std::vector<int32_t> suffix_array(const uint8_t* s, size_t n) {
  if (n >= static_cast<size_t>(INT32_MAX) - 1) throw std::length_error("too many samples for the tuple estimators (2^31 at most)");
  const auto m = static_cast<int32_t>(n + 1);
  std::vector<int32_t> text(n + 1);
  for (size_t i = 0; i < n; ++i) text[i] = static_cast<int32_t>(s[i]) + 1;
  text[n] = 0;
  std::vector<int32_t> sa(n + 1);
  sais(text.data(), sa.data(), m, 257);
  sa.erase(sa.begin());  // the sentinel's suffix sorts first
  return sa;
}

std::vector<int32_t> lcp_array(const uint8_t* s, size_t n, const std::vector<int32_t>& sa) {
  std::vector<int32_t> rank(n), lcp(n, 0);
  for (size_t i = 0; i < n; ++i) rank[static_cast<size_t>(sa[i])] = static_cast<int32_t>(i);
  size_t h = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto r = static_cast<size_t>(rank[i]);
    if (r > 0) {
      const auto j = static_cast<size_t>(sa[r - 1]);
      while (i + h < n && j + h < n && s[i + h] == s[j + h]) ++h;
      lcp[r] = static_cast<int32_t>(h);
      if (h > 0) --h;
    } else {
      h = 0;
    }
  }
  return lcp;
}

TupleCounts tuple_counts(const uint8_t* s, size_t n) {
  TupleCounts out;
  if (n < 2) return out;
  std::vector<int32_t> lcp;
  {
    const std::vector<int32_t> sa = suffix_array(s, n);
    lcp = lcp_array(s, n, sa);
  }
  size_t v = 0;
  for (int32_t h : lcp) v = std::max(v, static_cast<size_t>(h));
  out.longest_repeat = v;
  out.max_count.assign(v + 2, 0);
  std::vector<uint64_t> pair_steps(v + 2, 0);  // difference array over tuple lengths
  // Each LCP interval [lb, i) with depth h whose parent has depth p is one node of the suffix
  // tree: every tuple length in (p, h] has a tuple occurring exactly i - lb times there.
  struct Open {
    size_t depth, lb;
  };
  std::vector<Open> stack{{0, 0}};
  for (size_t i = 1; i <= n; ++i) {
    const size_t cur = i < n ? static_cast<size_t>(lcp[i]) : 0;
    size_t lb = i - 1;
    while (cur < stack.back().depth) {
      const Open node = stack.back();
      stack.pop_back();
      const uint64_t count = i - node.lb;
      const size_t parent = std::max(cur, stack.back().depth);
      out.max_count[node.depth] = std::max(out.max_count[node.depth], count);
      const uint64_t pairs = count * (count - 1) / 2;
      pair_steps[parent + 1] += pairs;
      pair_steps[node.depth + 1] -= pairs;  // unsigned wrap-around cancels in the prefix sum
      lb = node.lb;
    }
    if (cur > stack.back().depth) stack.push_back({cur, lb});
  }
  // A tuple's count is at most its prefix's: the most common L-tuple count is the largest
  // node count at any depth >= L (a tuple seen once has count 1).
  for (size_t L = v; L >= 1; --L) out.max_count[L] = std::max({out.max_count[L], out.max_count[L + 1], uint64_t{1}});
  out.max_count.resize(v + 1);
  out.pairs.assign(v + 1, 0);
  uint64_t running = 0;
  for (size_t L = 1; L <= v; ++L) {
    running += pair_steps[L];
    out.pairs[L] = running;
  }
  return out;
}

}  // namespace qe::ea::detail
