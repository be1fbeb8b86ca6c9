// Induced-sorting suffix array construction (Nong, Zhang and Chan, "Two Efficient Algorithms
// for Linear Time Suffix Array Construction", 2011), Kasai's LCP, and one bottom-up pass
// over the LCP intervals for the counts every tuple length needs.
#include "ea/suffix_array.h"

#include "common/populated.h"

#include <algorithm>
#include <array>
#include <memory>
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

namespace {

// Bottom-up pass over LCP intervals. `lcp(i)` (1 <= i < n) is the common prefix of the i-1th
// and ith suffix in sorted order. Each interval [lb, i) with depth h whose parent has depth p
// is one node of the suffix tree: every tuple length in (p, h] has a tuple occurring exactly
// i - lb times there. Records, per depth, the largest node count and the pair counts as a
// difference array over lengths.
template <typename Lcp>
void scan_intervals(size_t n, Lcp lcp, std::vector<uint64_t>& max_at_depth, std::vector<uint64_t>& pair_steps) {
  struct Open {
    size_t depth, lb;
  };
  std::vector<Open> stack{{0, 0}};
  for (size_t i = 1; i <= n; ++i) {
    const size_t cur = i < n ? lcp(i) : 0;
    size_t lb = i - 1;
    while (cur < stack.back().depth) {
      const Open node = stack.back();
      stack.pop_back();
      const uint64_t count = i - node.lb;
      const size_t parent = std::max(cur, stack.back().depth);
      max_at_depth[node.depth] = std::max(max_at_depth[node.depth], count);
      const uint64_t pairs = count * (count - 1) / 2;
      pair_steps[parent + 1] += pairs;
      pair_steps[node.depth + 1] -= pairs;  // unsigned wrap-around cancels in the prefix sum
      lb = node.lb;
    }
    if (cur > stack.back().depth) stack.push_back({cur, lb});
  }
}

// Turns per-depth maxima and pair steps into TupleCounts for lengths 1..v.
TupleCounts finish(size_t v, std::vector<uint64_t>& max_at_depth, const std::vector<uint64_t>& pair_steps) {
  TupleCounts out;
  out.longest_repeat = v;
  // A tuple's count is at most its prefix's: the most common L-tuple count is the largest
  // node count at any depth >= L (a tuple seen once has count 1).
  out.max_count.assign(v + 1, 1);
  uint64_t running_max = 1;
  for (size_t L = max_at_depth.size() - 1; L >= 1; --L) {
    running_max = std::max(running_max, max_at_depth[L]);
    if (L <= v) out.max_count[L] = running_max;
  }
  out.pairs.assign(v + 1, 0);
  uint64_t running = 0;
  for (size_t L = 1; L <= v; ++L) {
    running += pair_steps[L];
    out.pairs[L] = running;
  }
  return out;
}

TupleCounts counts_by_suffix_array(const uint8_t* s, size_t n) {
  std::vector<int32_t> lcp;
  {
    const std::vector<int32_t> sa = suffix_array(s, n);
    lcp = lcp_array(s, n, sa);
  }
  size_t v = 0;
  for (int32_t h : lcp) v = std::max(v, static_cast<size_t>(h));
  std::vector<uint64_t> max_at_depth(v + 2, 0), pair_steps(v + 2, 0);
  scan_intervals(n, [&lcp](size_t i) { return static_cast<size_t>(lcp[i]); }, max_at_depth, pair_steps);
  return finish(v, max_at_depth, pair_steps);
}

// The windows of `per_key` symbols of s (positions 0 .. full-1), each packed into a 64-bit
// key (first symbol in the top bits), produced on demand: they are cheap to recompute, and
// computing them twice spares a 64-bit array as large as the keys themselves.
class Windows {
 public:
  Windows(const uint8_t* s, size_t full, int width)
      : s_(s), full_(full), width_(width), per_key_(static_cast<size_t>(64 / width)),
        pad_(64 - static_cast<int>(per_key_) * width) {}
  template <typename F>
  void each(F f) const {  // f(key of window i), i ascending
    const uint64_t symbol_mask = (uint64_t{1} << width_) - 1;
    const uint64_t key_mask = pad_ == 0 ? ~uint64_t{0} : (uint64_t{1} << (64 - pad_)) - 1;
    uint64_t key = 0;
    for (size_t i = 0; i < per_key_; ++i) key = (key << width_) | (s_[i] & symbol_mask);
    for (size_t i = 0;; ++i) {
      f(key << pad_);
      if (i + 1 == full_) break;
      key = ((key << width_) | (s_[i + per_key_] & symbol_mask)) & key_mask;
    }
  }

 private:
  const uint8_t* s_;
  size_t full_;
  int width_;
  size_t per_key_;
  int pad_;
};

// The window keys, sorted. One radix pass by the top 8 bits scatters the keys as they are
// made (256 streams: a scatter the cache can follow); within each of those buckets (small
// enough for L2) two 12-bit LSD passes through a scratch buffer sort by the next 24 bits;
// then each run sharing those 32 bits is finished by insertion sort. Windows of real data
// rarely share 32 bits (runs of one or two), so this beats a full 64-bit LSD sort's four
// passes over memory; long runs (repetitive data) use std::sort. The keys are left
// uninitialised until scattered: the array is large, and zeroing it first would be one more
// pass over memory.
PopulatedArray<uint64_t> sorted_windows(const Windows& windows, size_t n) {
  std::array<size_t, 257> start{};
  windows.each([&start](uint64_t k) { ++start[(k >> 56) + 1]; });
  for (size_t b = 0; b < 256; ++b) start[b + 1] += start[b];
  PopulatedArray<uint64_t> keys(n);
  {
    std::array<size_t, 256> next;
    std::copy(start.begin(), start.end() - 1, next.begin());
    uint64_t* out = keys.get();
    windows.each([&next, out](uint64_t k) { out[next[k >> 56]++] = k; });
  }
  size_t largest = 0;
  for (size_t b = 0; b < 256; ++b) largest = std::max(largest, start[b + 1] - start[b]);
  std::vector<uint64_t> scratch(largest);
  std::vector<size_t> low(4096), high(4096);
  for (size_t b = 0; b < 256; ++b) {
    uint64_t* data = keys.get() + start[b];
    uint64_t* tmp = scratch.data();
    const size_t m = start[b + 1] - start[b];
    if (m < 2) continue;
    std::fill(low.begin(), low.end(), 0);
    std::fill(high.begin(), high.end(), 0);
    for (size_t i = 0; i < m; ++i) {
      ++low[(data[i] >> 32) & 0xFFF];
      ++high[(data[i] >> 44) & 0xFFF];
    }
    size_t sl = 0, sh = 0;
    for (size_t d = 0; d < 4096; ++d) {
      const size_t l = low[d], h = high[d];
      low[d] = sl;
      high[d] = sh;
      sl += l;
      sh += h;
    }
    for (size_t i = 0; i < m; ++i) tmp[low[(data[i] >> 32) & 0xFFF]++] = data[i];
    for (size_t i = 0; i < m; ++i) data[high[(tmp[i] >> 44) & 0xFFF]++] = tmp[i];
    // Runs sharing the top 32 bits lie within the bucket: finish them while it is in cache.
    for (size_t a = 0; a < m;) {
      size_t e = a + 1;
      while (e < m && (data[e] >> 32) == (data[a] >> 32)) ++e;
      if (e - a > 16) {
        std::sort(data + a, data + e);
      } else {
        for (size_t i = a + 1; i < e; ++i)
          for (size_t j = i; j > a && data[j - 1] > data[j]; --j) std::swap(data[j - 1], data[j]);
      }
      a = e;
    }
  }
  return keys;
}

// The common case, without a suffix array: when no two positions share `per_key` symbols
// (true for any data with real entropy), the tuple counts for lengths below that depend only
// on the sorted multiset of the `per_key`-symbol windows. The last per_key-1 positions, too
// short for a full window, are added afterwards by looking their prefixes up. Returns false
// when some window repeats; the caller then builds the suffix array.
bool counts_by_windows(const uint8_t* s, size_t n, int width, TupleCounts& out) {
  const size_t per_key = static_cast<size_t>(64 / width);
  if (n < 2 * per_key) return false;
  const size_t full = n - per_key + 1;
  const uint64_t symbol_mask = (uint64_t{1} << width) - 1;
  const PopulatedArray<uint64_t> sorted = sorted_windows(Windows(s, full, width), full);
  const uint64_t* const keys = sorted.get();
  // One pass: the scan also finds the longest common prefix and whether a whole window
  // repeats (then the counts are thrown away; the clamp only keeps the scan in range).
  size_t v = 0;
  bool repeats = false;
  // Common bits -> common symbols without a divide on every key (a divide's latency was a
  // fifth of the scan): floor(b * r / 2^16) with r = floor(2^16 / width) + 1 equals
  // floor(b / width) for every b <= 64 and width <= 8 (the error is below 64 / 2^16).
  const uint64_t reciprocal = (uint64_t{1} << 16) / static_cast<uint64_t>(width) + 1;
  auto common = [keys, reciprocal, per_key, &v, &repeats](size_t i) {
    const uint64_t x = keys[i - 1] ^ keys[i];
    const uint64_t bits = x == 0 ? 64 : static_cast<uint64_t>(__builtin_clzll(x));
    size_t c = static_cast<size_t>((bits * reciprocal) >> 16);
    if (c >= per_key) {
      repeats = true;
      c = per_key - 1;
    }
    v = std::max(v, c);
    return c;
  };
  std::vector<uint64_t> max_at_depth(per_key + 1, 0), pair_steps(per_key + 1, 0);
  scan_intervals(full, common, max_at_depth, pair_steps);
  if (repeats) return false;
  // The short tails: position full + t holds a suffix of per_key - 1 - t symbols. For each
  // length L, group the tails long enough by their L-prefix and add them to the windows
  // with that prefix (counted by binary search in the sorted windows).
  std::vector<uint64_t> extra_max(per_key, 0);
  std::vector<uint64_t> extra_pairs(per_key, 0);
  for (size_t L = 1; L < per_key; ++L) {
    std::vector<uint64_t> prefixes;
    for (size_t p = full; p + L <= n; ++p) {
      uint64_t t = 0;
      for (size_t j = 0; j < L; ++j) t = (t << width) | (s[p + j] & symbol_mask);
      prefixes.push_back(t);
    }
    std::sort(prefixes.begin(), prefixes.end());
    const int shift = 64 - static_cast<int>(L) * width;
    for (size_t a = 0; a < prefixes.size();) {
      size_t b = a;
      while (b < prefixes.size() && prefixes[b] == prefixes[a]) ++b;
      const uint64_t lo = prefixes[a] << shift;
      const uint64_t hi_exclusive_minus1 = lo | ((uint64_t{1} << shift) - 1);
      const auto first = std::lower_bound(keys, keys + full, lo);
      const auto last = std::upper_bound(first, keys + full, hi_exclusive_minus1);
      const auto base = static_cast<uint64_t>(last - first);
      const uint64_t total = base + (b - a);
      extra_pairs[L] += total * (total - 1) / 2 - base * (base - 1) / 2;  // base == 0 gives 0 * (wrapped) = 0
      extra_max[L] = std::max(extra_max[L], total);
      if (total >= 2) v = std::max(v, L);
      a = b;
    }
  }
  std::vector<uint64_t> depth_max(std::max(v, per_key) + 2, 0), steps(std::max(v, per_key) + 2, 0);
  for (size_t L = 0; L < max_at_depth.size(); ++L) depth_max[L] = max_at_depth[L];
  for (size_t L = 0; L < pair_steps.size(); ++L) steps[L] = pair_steps[L];
  out = finish(v, depth_max, steps);
  for (size_t L = 1; L <= v && L < per_key; ++L) {
    out.pairs[L] += extra_pairs[L];
    out.max_count[L] = std::max(out.max_count[L], extra_max[L]);
  }
  return true;
}

}  // namespace

TupleCounts tuple_counts(const uint8_t* s, size_t n) {
  if (n < 2) return {};
  uint8_t seen = 0;
  for (size_t i = 0; i < n; ++i) seen |= s[i];
  int width = 1;
  while (width < 8 && (seen >> width) != 0) ++width;
  TupleCounts out;
  if (counts_by_windows(s, n, width, out)) return out;
  return counts_by_suffix_array(s, n);
}

}  // namespace qe::ea::detail
