// The IID track (§5): the most-common-value estimate, the chi-square independence and
// goodness-of-fit tests (§5.2.1-2), the longest-repeated-substring test (§5.2.3) and the
// permutation tests (§5.1): 19 statistics on the data and on up to 10,000 shuffles of it.
//
// As in NIST's tool, a statistic stops being computed once it has been seen both above
// (or equal to) and below (or equal to) its unpermuted value more than 5 times each
// (C[i][0] + C[i][1] > 5 and C[i][1] + C[i][2] > 5); the shuffling ends when every statistic
// is settled. A statistic still unsettled after the last shuffle fails the test. Unlike the
// tool, shuffling also ends as soon as the verdict is certain: once a statistic is too few
// shuffles short of settling to make it in the shuffles left, or once the chi-square or LRS
// test has failed (docs/ea.md "When the shuffling stops"). The shuffles come from
// xoshiro256** seeded from the OS CSPRNG (getrandom), one stream per thread.
#include <sys/random.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/cpu.h"  // QE_POPCNT_CLONES
#include "ea/bzip2_size.h"
#include "ea/ea.h"
#include "ea/parallel.h"
#include "ea/shuffle.h"
#include "ea/suffix_array.h"
#include "sts/special.h"

namespace qe::ea {

const char* const kPermutationStatisticNames[kPermutationStatistics] = {
    "excursion",      "numDirectionalRuns", "lenDirectionalRuns", "numIncreasesDecreases", "numRunsMedian",
    "lenRunsMedian",  "avgCollision",       "maxCollision",       "periodicity(1)",        "periodicity(2)",
    "periodicity(8)", "periodicity(16)",    "periodicity(32)",    "covariance(1)",         "covariance(2)",
    "covariance(8)",  "covariance(16)",     "covariance(32)",     "compression",
};

namespace {

constexpr unsigned kLags[5] = {1, 2, 8, 16, 32};
constexpr double kChiSquareAlpha = 0.001;

// Proportions as the tool accumulates them: 1/n added once per sample. The sums differ from
// count/n in the last bits, and the chi-square binning compares expectations against 5,
// so the same arithmetic keeps the same bins.
// Each cell's sum is a chain of n_c dependent additions; the chains of different cells are
// independent, so they run side by side, a round at a time over the cells still adding (the
// same additions in the same order per cell, so the same sums): ~1 ms instead of ~3.
std::vector<double> proportions(const uint8_t* s, size_t n, int k) {
  std::vector<size_t> counts(static_cast<size_t>(k), 0);
  for (size_t i = 0; i < n; ++i) ++counts[s[i]];
  std::vector<size_t> order(counts.size());  // most samples first
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return counts[a] > counts[b]; });
  const double step = 1.0 / static_cast<double>(n);
  std::vector<double> sum(counts.size(), 0.0);  // in `order`
  size_t adding = counts.size();
  for (size_t round = 0; adding > 0; ++round) {
    while (adding > 0 && counts[order[adding - 1]] <= round) --adding;
    for (size_t c = 0; c < adding; ++c) sum[c] += step;
  }
  std::vector<double> p(counts.size());
  for (size_t c = 0; c < order.size(); ++c) p[order[c]] = sum[c];
  return p;
}

// Pools the cells, in increasing order of expectation (cell index on ties), into bins whose
// expectation reaches 5; a last bin short of 5 merges into the one before. Returns the bin
// of each cell and fills the bin expectations.
std::vector<int> bin_cells(const std::vector<double>& expected, std::vector<double>& bins) {
  // Sorted as (expectation, cell) pairs: comparing them in place is ~3x faster than
  // comparing indices through the array (65,536 cells for 8-bit data).
  std::vector<std::pair<double, size_t>> order(expected.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = {expected[i], i};
  std::sort(order.begin(), order.end());
  std::vector<int> bin_of(expected.size(), -1);
  int current = 0;
  double sum = 0.0;
  for (const auto& [e, idx] : order) {
    if (sum >= 5.0) {
      bins.push_back(sum);
      ++current;
      sum = 0.0;
    }
    bin_of[idx] = current;
    sum += e;
  }
  if (current != 0 && sum < 5.0) {
    for (size_t r = order.size(); r-- > 0 && bin_of[order[r].second] == current;) bin_of[order[r].second] = current - 1;
    bins[static_cast<size_t>(current - 1)] += sum;
  } else {
    bins.push_back(sum);
  }
  return bin_of;
}

double pearson(const std::vector<double>& expected, const std::vector<long>& observed) {
  double t = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) t += std::pow(static_cast<double>(observed[i]) - expected[i], 2) / expected[i];
  return t;
}

ChiSquare with_p(double t, long df) {
  // The tool's P-value: igamc(df/2, T/2), which is 1 for df = 0.
  return {t, df, (df <= 0 || t <= 0) ? 1.0 : qe::sts::igamc(static_cast<double>(df) / 2.0, t / 2.0)};
}

// p: the proportions of the k symbols (proportions()), which the non-binary tests bin by.
ChiSquare independence(const uint8_t* s, size_t n, int k, const std::vector<double>& p) {
  if (k == 2) {
    // Non-overlapping m-bit tuples, m the largest up to 11 with enough expected rare tuples.
    double p1 = 0;
    for (size_t i = 0; i < n; ++i) p1 += s[i];
    p1 /= static_cast<double>(n);
    const double p0 = 1.0 - p1;
    const double rare = std::min(p0, p1);
    int m = 11;
    while (m > 1 && !(std::pow(rare, m) * static_cast<double>(n / static_cast<size_t>(m)) >= 5)) --m;
    if (m < 2) return with_p(0.0, 0);
    const size_t blocks = n / static_cast<size_t>(m);
    std::vector<long> seen(size_t{1} << m, 0);
    for (size_t b = 0; b < blocks; ++b) {
      unsigned v = 0;
      for (int j = 0; j < m; ++j) v = (v << 1) | s[b * static_cast<size_t>(m) + static_cast<size_t>(j)];
      ++seen[v];
    }
    double t = 0;
    for (size_t v = 0; v < seen.size(); ++v) {
      const int w = __builtin_popcount(static_cast<unsigned>(v));
      const double e = std::pow(p1, w) * std::pow(p0, m - w) * static_cast<double>(blocks);
      t += std::pow(static_cast<double>(seen[v]) - e, 2) / e;
    }
    return with_p(t, (1L << m) - 2);
  }
  const auto ku = static_cast<size_t>(k);
  std::vector<double> expected(ku * ku);
  const double pairs = std::floor(static_cast<double>(n) * 0.5);
  for (size_t i = 0; i < ku; ++i)
    for (size_t j = 0; j < ku; ++j) expected[i * ku + j] = p[i] * p[j] * pairs;
  std::vector<double> bins;
  const std::vector<int> bin_of = bin_cells(expected, bins);
  std::vector<long> observed(bins.size(), 0);
  for (size_t j = 0; j + 1 < n; j += 2) ++observed[static_cast<size_t>(bin_of[s[j] * ku + s[j + 1]])];
  return with_p(pearson(bins, observed), static_cast<long>(bins.size()) - k);
}

ChiSquare goodness_of_fit(const uint8_t* s, size_t n, int k, const std::vector<double>& p) {
  const size_t part = n / 10;
  if (k == 2) {
    long ones = 0;
    for (size_t i = 0; i < n; ++i) ones += s[i];
    const double p1 = static_cast<double>(ones) / static_cast<double>(n);
    const double e0 = (1.0 - p1) * static_cast<double>(part), e1 = p1 * static_cast<double>(part);
    double t = 0;
    for (size_t b = 0; b < 10; ++b) {
      long o1 = 0;
      for (size_t j = 0; j < part; ++j) o1 += s[b * part + j];
      const long o0 = static_cast<long>(part) - o1;
      t += std::pow(static_cast<double>(o0) - e0, 2) / e0 + std::pow(static_cast<double>(o1) - e1, 2) / e1;
    }
    return with_p(t, 9);
  }
  std::vector<double> expected(static_cast<size_t>(k));
  for (size_t j = 0; j < expected.size(); ++j) expected[j] = p[j] * std::floor(static_cast<double>(n) / 10.0);
  std::vector<double> bins;
  const std::vector<int> bin_of = bin_cells(expected, bins);
  double t = 0;
  for (size_t b = 0; b < 10; ++b) {
    std::vector<long> observed(bins.size(), 0);
    for (size_t j = 0; j < part; ++j) ++observed[static_cast<size_t>(bin_of[s[b * part + j]])];
    t += pearson(bins, observed);
  }
  return with_p(t, 9 * (static_cast<long>(bins.size()) - 1));
}

// ---- The permutation statistics.

struct Data {
  const uint8_t* sym;  // translated symbols
  const uint8_t* raw;  // as read
  size_t n;
  int k;
  double raw_mean, median;
};

struct Scratch {
  std::vector<uint8_t> sums, bytes;  // conversions I and II of binary data
  std::vector<uint8_t> seen;
  std::vector<uint64_t> bits;  // a run test's bits
  Bzip2Size bzip2;
};

// Conversion I (sum of each 8-bit block) and II (each 8-bit block as a byte, MSB first);
// the last block may be short.
void convert(const uint8_t* s, size_t n, Scratch& w) {
  const size_t blocks = (n + 7) / 8;
  w.sums.assign(blocks, 0);
  w.bytes.assign(blocks, 0);
  for (size_t i = 0; i < n; ++i) {
    w.sums[i / 8] = static_cast<uint8_t>(w.sums[i / 8] + s[i]);
    w.bytes[i / 8] = static_cast<uint8_t>(w.bytes[i / 8] + (s[i] << (7 - i % 8)));
  }
}

// Length of the bzip2 compression (block size 5 x 100k) of the samples written in decimal,
// separated by single spaces: computed exactly without running bzip2 (ea/bzip2_size.h).
double compressed_length(const uint8_t* raw, size_t n, Scratch& w) {
  return static_cast<double>(w.bzip2.of_decimal_samples(raw, n, 5));
}

using Stats = std::array<double, kPermutationStatistics>;
using Active = std::array<bool, kPermutationStatistics>;

bool any(const Active& a, int from, int to) {
  for (int i = from; i <= to; ++i)
    if (a[static_cast<size_t>(i)]) return true;
  return false;
}

// The run tests read a sequence of bits (up/down, below/above the median), packed 64 to a
// word (bit j of word w is element 64w + j): a compare of 16 bytes at a time makes them,
// and runs are then counted a word at a time. One element at a time, the same work was a
// chain of dependent updates per element, about three times slower.
struct BitRuns {
  size_t count, longest, ones;
};

// The longest run of set bits in y: each y &= y << 1 shortens every run by one.
inline size_t longest_ones(uint64_t y) {
  size_t k = 0;
  for (; y != 0; ++k) y &= y << 1;
  return k;
}

QE_POPCNT_CLONES BitRuns runs_of_bits(const uint64_t* words, size_t length) {
  if (length == 0) return {0, 0, 0};
  size_t ones = 0, changes = 0, longest = 0, carry = 0;  // carry: the run reaching the word's start
  bool carry_bit = false;
  for (size_t w = 0; w * 64 < length; ++w) {
    const size_t valid = std::min<size_t>(64, length - w * 64);
    const uint64_t mask = valid == 64 ? ~uint64_t{0} : (uint64_t{1} << valid) - 1;
    const uint64_t x = words[w] & mask;
    ones += static_cast<size_t>(__builtin_popcountll(x));
    const bool first = (x & 1) != 0;
    const uint64_t before = w == 0 ? uint64_t{first} : uint64_t{carry_bit};  // the bit before bit 0
    changes += static_cast<size_t>(__builtin_popcountll((x ^ ((x << 1) | before)) & mask));
    const uint64_t like_first = first ? x : ~x & mask;
    const size_t lead = like_first == mask ? valid : static_cast<size_t>(__builtin_ctzll(~like_first));
    const size_t joined = (w > 0 && carry_bit == first ? carry : 0) + lead;
    if (lead == valid) {  // one run across the word
      carry = joined;
      carry_bit = first;
      continue;
    }
    longest = std::max({longest, joined, longest_ones(x), longest_ones(~x & mask)});
    const bool top = ((x >> (valid - 1)) & 1) != 0;
    const uint64_t unlike_top = (top ? ~x : x) & mask;  // not empty: the word has two runs
    carry = valid - 1 - static_cast<size_t>(63 - __builtin_clzll(unlike_top));
    carry_bit = top;
  }
  return {changes + 1, std::max(longest, carry), ones};
}

// Bit j of words[j / 64]: a[j] <= b[j], for j < length (b may be a constant).
template <bool ConstantB>
void pack_not_greater(const uint8_t* a, const uint8_t* b, size_t length, std::vector<uint64_t>& words) {
  words.assign((length + 63) / 64, 0);
  size_t j = 0;
#if defined(__SSE2__)
  const __m128i constant = _mm_set1_epi8(static_cast<char>(ConstantB ? b[0] : 0));
  for (; j + 64 <= length; j += 64) {
    uint64_t word = 0;
    for (size_t q = 0; q < 64; q += 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + j + q));
      const __m128i y = ConstantB ? constant : _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + j + q));
      // x <= y (unsigned) exactly where max(x, y) == y.
      const auto bits = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(x, y), y)));
      word |= uint64_t{bits} << q;
    }
    words[j / 64] = word;
  }
#endif
  for (; j < length; ++j) words[j / 64] |= uint64_t{a[j] <= (ConstantB ? b[0] : b[j])} << (j % 64);
}

// Sum of term(0) .. term(count - 1), each at most 255 x 255: 32-bit partial sums over
// chunks that cannot overflow (65,536 x 65,025 < 2^32), so the loop vectorises.
template <typename Term>
unsigned long chunked_sum(size_t count, Term term) {
  constexpr size_t kChunk = 65536;
  unsigned long total = 0;
  for (size_t start = 0; start < count; start += kChunk) {
    const size_t end = std::min(count, start + kChunk);
    uint32_t partial = 0;
    for (size_t i = start; i < end; ++i) partial += term(i);
    total += partial;
  }
  return total;
}

// The tool's excursion: max over i of |S_i - (i + 1) x mean|, S_i its running double sum.
// S_i is a whole number below 2^53, so a running integer sum converts to the same doubles,
// and the largest |x| is the larger of max x and -min x. Integer additions and two samples
// a step keep the loop off the 3-cycle chain of double additions: 1.13 -> 0.69 ms per 10^6.
double excursion(const uint8_t* raw, size_t n, double mean) {
  int64_t sum = 0;  // signed: one instruction to convert to double
  double high = 0, low = 0;
  size_t i = 0;
#if defined(__SSE2__)
  __m128d high2 = _mm_setzero_pd(), low2 = _mm_setzero_pd();
  const __m128d mean2 = _mm_set1_pd(mean), two = _mm_set1_pd(2.0);
  __m128d position = _mm_set_pd(2.0, 1.0);  // i + 1 of the pair's two samples
  for (; i + 2 <= n; i += 2) {
    const int64_t first = sum + raw[i];
    sum = first + raw[i + 1];
    const __m128d x = _mm_sub_pd(_mm_set_pd(static_cast<double>(sum), static_cast<double>(first)), _mm_mul_pd(position, mean2));
    high2 = _mm_max_pd(high2, x);
    low2 = _mm_min_pd(low2, x);
    position = _mm_add_pd(position, two);
  }
  alignas(16) double h[2], l[2];
  _mm_store_pd(h, high2);
  _mm_store_pd(l, low2);
  high = std::max(h[0], h[1]);
  low = std::min(l[0], l[1]);
#endif
  for (; i < n; ++i) {
    sum += raw[i];
    const double x = static_cast<double>(sum) - static_cast<double>(i + 1) * mean;
    high = std::max(high, x);
    low = std::min(low, x);
  }
  return std::max(high, -low);
}

void compute(const Data& d, const uint8_t* sym, const uint8_t* raw, const Active& on, Stats& out, Scratch& w) {
  const bool binary = d.k == 2;
  if (binary && (any(on, 1, 3) || any(on, 6, 17))) convert(sym, d.n, w);
  if (on[0]) out[0] = excursion(raw, d.n, d.raw_mean);
  const uint8_t* seq = binary ? w.sums.data() : sym;  // what the run/period tests read
  const size_t m = binary ? w.sums.size() : d.n;
  if (any(on, 1, 3)) {
    // Directions: up where the next value is >= this one, down where it is smaller.
    const size_t steps = m > 0 ? m - 1 : 0;
    pack_not_greater<false>(seq, seq + 1, steps, w.bits);
    const BitRuns r = runs_of_bits(w.bits.data(), steps);
    out[1] = static_cast<double>(r.count);
    out[2] = static_cast<double>(r.longest);
    out[3] = static_cast<double>(std::max(r.ones, steps - r.ones));
  }
  if (any(on, 4, 5)) {
    // Below the median: v < median, i.e. v <= ceil(median) - 1 for whole v (none when the
    // median is 0: then every bit is 0).
    const double median = binary ? 0.5 : d.median;
    const double limit = std::ceil(median) - 1;
    if (limit < 0) {
      w.bits.assign((d.n + 63) / 64, 0);
    } else {
      const auto highest_below = static_cast<uint8_t>(std::min(limit, 255.0));
      pack_not_greater<true>(sym, &highest_below, d.n, w.bits);
    }
    const BitRuns r = runs_of_bits(w.bits.data(), d.n);
    out[4] = static_cast<double>(r.count);
    out[5] = static_cast<double>(r.longest);
  }
  if (any(on, 6, 7)) {
    // Walk windows until a symbol repeats; each window's length is one collision time.
    const uint8_t* c = binary ? w.bytes.data() : sym;
    const size_t cn = binary ? w.bytes.size() : d.n;
    w.seen.assign(256, 0);
    uint8_t epoch = 0;
    unsigned long total = 0, count = 0, longest = 0;
    size_t start = 0;
    while (start < cn) {
      if (++epoch == 0) {
        std::fill(w.seen.begin(), w.seen.end(), 0);
        epoch = 1;
      }
      size_t j = start;
      while (j < cn && w.seen[c[j]] != epoch) w.seen[c[j++]] = epoch;
      if (j == cn) break;
      const unsigned long len = j - start + 1;
      total += len;
      ++count;
      longest = std::max(longest, len);
      start = j + 1;
    }
    out[6] = static_cast<double>(static_cast<unsigned>(total)) / static_cast<double>(count);
    out[7] = static_cast<double>(longest);
  }
  for (int l = 0; l < 5; ++l) {
    const size_t p = kLags[l];
    const size_t pairs = m > p ? m - p : 0;
    if (on[static_cast<size_t>(8 + l)])
      out[static_cast<size_t>(8 + l)] = static_cast<double>(chunked_sum(pairs, [seq, p](size_t i) { return uint32_t{seq[i] == seq[i + p]}; }));
    if (on[static_cast<size_t>(13 + l)]) {
      const uint8_t* v = binary ? w.sums.data() : raw;
      out[static_cast<size_t>(13 + l)] = static_cast<double>(chunked_sum(pairs, [v, p](size_t i) { return uint32_t{v[i]} * v[i + p]; }));
    }
  }
  if (on[18]) out[18] = compressed_length(raw, d.n, w);
}

void os_random(void* buf, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    const ssize_t got = getrandom(p, len, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    p += got;
    len -= static_cast<size_t>(got);
  }
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The counting rule (§5.1, as NIST's tool applies it): a statistic passes once more than 5
// shuffles came out above or equal and more than 5 below or equal; still short of either
// after the last shuffle, it fails. `left` shuffles may still be counted, so a statistic
// short by more than `left` can no longer pass: its failure is already certain.
bool settled(const std::array<long, 3>& c) { return c[0] + c[1] > 5 && c[1] + c[2] > 5; }
bool cannot_settle(const std::array<long, 3>& c, long left) { return c[0] + c[1] + left <= 5 || c[1] + c[2] + left <= 5; }

struct PermutationRun {
  std::array<std::array<long, 3>, kPermutationStatistics> counts{};
  std::array<StatisticOutcome, kPermutationStatistics> outcomes{};
  unsigned shuffles = 0;
  bool passed = false, decided = false;
};

// `warm` is the scratch the unpermuted statistics were computed with: the first thread
// takes it over, so its ~9 MB of compression buffers are not allocated and faulted in again.
// `alongside` is other work that the second thread does before it starts shuffling (the
// only thread does it first), so that with two threads it costs no time; it returns false
// when it has settled the verdict ("not IID") on its own, which ends the shuffling.
//
// The shuffling also ends once a statistic can no longer settle (the track fails whatever
// the other statistics do) or every one has settled. Either way each statistic's outcome is
// the one NIST's tool would reach on the same shuffles, since counting on could not change it.
PermutationRun permutation_test(const Data& d, const Stats& t, const IidOptions& options, Scratch&& warm,
                                const std::function<bool()>& alongside) {
  PermutationRun out;
  Active active;
  active.fill(true);
  std::mutex lock;
  std::atomic<unsigned> claimed{0}, finished{0};
  std::atomic<bool> stop{false};
  const unsigned threads = std::max(1u, options.threads);
  const long total = options.shuffles;
  std::vector<uint8_t> seed = options.seed;
  if (seed.size() < 32) {
    seed.resize(32);
    os_random(seed.data(), seed.size());
  }
  std::vector<std::function<void()>> jobs;
  for (unsigned th = 0; th < threads; ++th) {
    jobs.emplace_back([&, th] {
      if (th == std::min(1u, threads - 1)) {
        try {
          if (!alongside() && options.stop_on_failed_tests) stop = true;
        } catch (...) {
          stop = true;  // no point shuffling on: the assessment fails with this error
          throw;
        }
      }
      Xoshiro rng;
      uint64_t mix;
      std::memcpy(&mix, seed.data(), 8);
      uint64_t words[4];
      std::memcpy(words, seed.data(), 32);
      mix ^= th * 0xD1B54A32D192ED03ull;
      for (int i = 0; i < 4; ++i) rng.s[i] = words[i] ^ splitmix(mix);
      std::vector<uint8_t> sym(d.sym, d.sym + d.n);
      // The translation is one-to-one, so only the symbols are shuffled and the raw values
      // are read back through the inverse table when a statistic needs them.
      std::array<uint8_t, 256> raw_of{};
      for (size_t i = 0; i < d.n; ++i) raw_of[d.sym[i]] = d.raw[i];
      bool raw_is_symbol = true;  // 8-bit data using all 256 values, or 0..k-1 as read
      for (size_t i = 0; i < d.n && raw_is_symbol; ++i) raw_is_symbol = d.sym[i] == d.raw[i];
      std::vector<uint8_t> raw(raw_is_symbol ? 0 : d.n);
      Scratch w = th == 0 ? std::move(warm) : Scratch{};
      Stats tp{};
      while (!stop.load() && claimed.fetch_add(1) < options.shuffles) {
        // Reshuffling the previous permutation is as uniform as shuffling the original.
        shuffle(sym, rng);
        Active on;
        {
          const std::lock_guard<std::mutex> g(lock);
          on = active;
        }
        if (!raw_is_symbol && (on[0] || on[18] || (d.k != 2 && any(on, 13, 17))))
          for (size_t i = 0; i < d.n; ++i) raw[i] = raw_of[sym[i]];
        compute(d, sym.data(), raw_is_symbol ? sym.data() : raw.data(), on, tp, w);
        {
          const std::lock_guard<std::mutex> g(lock);
          if (stop.load()) break;  // settled meanwhile: this shuffle cannot change a verdict
          ++out.shuffles;
          const long left = total - static_cast<long>(out.shuffles);
          bool all_settled = true, one_failed = false;
          for (size_t j = 0; j < static_cast<size_t>(kPermutationStatistics); ++j) {
            if (active[j] && on[j]) {
              auto& c = out.counts[j];
              if (tp[j] > t[j]) ++c[0];
              else if (tp[j] == t[j]) ++c[1];
              else ++c[2];
              if (settled(c)) active[j] = false;
            }
            all_settled = all_settled && !active[j];
            one_failed = one_failed || (active[j] && cannot_settle(out.counts[j], left));
          }
          if (all_settled || (one_failed && options.stop_on_failed_statistic)) stop = true;
        }
        const unsigned f = finished.fetch_add(1) + 1;
        if (options.progress && (f % 16 == 0 || stop.load())) options.progress(stop.load() ? options.shuffles : f, options.shuffles);
      }
    });
  }
  detail::run_jobs(jobs, threads, {});
  const long left = total - static_cast<long>(out.shuffles);
  bool all_passed = true, one_failed = false;
  for (size_t j = 0; j < out.counts.size(); ++j) {
    const auto& c = out.counts[j];
    out.outcomes[j] = settled(c) ? StatisticOutcome::passed
                      : cannot_settle(c, left) ? StatisticOutcome::failed
                                               : StatisticOutcome::open;
    all_passed = all_passed && out.outcomes[j] == StatisticOutcome::passed;
    one_failed = one_failed || out.outcomes[j] == StatisticOutcome::failed;
  }
  out.passed = all_passed;
  out.decided = all_passed || one_failed;
  return out;
}

Stats unpermuted_statistics(const Data& d, Scratch& w) {
  Active all;
  all.fill(true);
  Stats out{};
  compute(d, d.sym, d.raw, all, out, w);
  return out;
}

double median_of(const uint8_t* s, size_t n, int k) {
  if (k == 2) return 0.5;  // §5.1.5-6 fix the median of binary data at 0.5
  std::array<size_t, 256> counts{};
  for (size_t i = 0; i < n; ++i) ++counts[s[i]];
  auto at_rank = [&counts](size_t r) {
    size_t seen = 0;
    for (int v = 0; v < 256; ++v) {
      seen += counts[static_cast<size_t>(v)];
      if (seen > r) return static_cast<double>(v);
    }
    return 255.0;
  };
  const size_t half = n / 2;
  return (n & 1) ? at_rank(half) : (at_rank(half) + at_rank(half - 1)) / 2.0;
}

}  // namespace

std::array<double, kPermutationStatistics> permutation_statistics(const uint8_t* symbols, const uint8_t* raw, size_t n,
                                                                  int alphabet_size, double raw_mean, double median) {
  const Data d{symbols, raw, n, alphabet_size, raw_mean, median};
  Scratch w;
  return unpermuted_statistics(d, w);
}

IidResult assess_iid(const Samples& s, const IidOptions& options) {
  IidResult r;
  const size_t n = s.symbols.size();
  const int k = s.alphabet_size;
  const size_t nbits = options.truncate ? std::min(s.bit_count(), kMinSamples) : s.bit_count();
  r.h_assessed = s.bits_per_symbol;
  if (!options.conditioned) {
    r.most_common_literal = r.h_original = most_common_value(s.symbols.data(), n, k);
    r.h_assessed = std::min(r.h_assessed, r.h_original);
  }
  if (k > 2 || options.conditioned) {
    // The bitstring's most common value is its majority bit: counted, not written out.
    const size_t ones = bitstring_ones(s, nbits);
    r.most_common_bitstring = r.h_bitstring = most_common_value_of_mode(std::max(ones, nbits - ones), nbits);
    r.h_assessed = std::min(r.h_assessed, r.h_bitstring * s.bits_per_symbol);
  }
  // The chi-square and LRS tests need nothing of the permutation test's: with two threads
  // they run while the first thread shuffles.
  auto independent_tests = [&]() -> bool {
    const std::vector<double> p = proportions(s.symbols.data(), n, k);
    r.independence = independence(s.symbols.data(), n, k, p);
    r.goodness_of_fit = goodness_of_fit(s.symbols.data(), n, k, p);
    r.chi_square_passed = r.independence.p_value >= kChiSquareAlpha && r.goodness_of_fit.p_value >= kChiSquareAlpha;

    // §5.2.3: under IID, how likely is a repeat as long as the longest one seen?
    long double p_col = 0;
    for (double x : p) p_col += powl(static_cast<long double>(x), 2.0L);
    r.lrs_collision_probability = static_cast<double>(p_col);
    if (p_col > 1.0L - LDBL_EPSILON) {
      r.lrs_probability = 1.0;
      r.lrs_passed = true;
    } else {
      const auto w = static_cast<long>(detail::tuple_counts(s.symbols.data(), n).longest_repeat);
      r.lrs_length = w;
      const long double no_collision_per_pair = log1pl(-powl(p_col, static_cast<long double>(w)));
      const long m = static_cast<long>(n) - w + 1;
      const auto pairs = static_cast<long double>((m * m - m) / 2);
      r.lrs_probability = static_cast<double>(1.0L - expl(pairs * no_collision_per_pair));
      r.lrs_passed = logl(0.999L) >= pairs * no_collision_per_pair;
    }
    return r.chi_square_passed && r.lrs_passed;  // else the verdict is "not IID" already
  };

  double sum = 0;
  for (uint8_t v : s.raw) sum += v;
  const Data d{s.symbols.data(), s.raw.data(), n, k, sum / static_cast<double>(n), median_of(s.symbols.data(), n, k)};
  Scratch w;
  r.unpermuted = unpermuted_statistics(d, w);
  if (options.shuffles > 0) {
    const PermutationRun o = permutation_test(d, r.unpermuted, options, std::move(w), independent_tests);
    r.counts = o.counts;
    r.outcomes = o.outcomes;
    r.shuffles_run = o.shuffles;
    r.permutation_passed = o.passed;
    r.permutation_decided = o.decided;
  } else {
    independent_tests();
  }
  r.passed = r.chi_square_passed && r.lrs_passed && r.permutation_passed;
  return r;
}

}  // namespace qe::ea
