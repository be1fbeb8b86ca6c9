// Template tests of SP 800-22 rev1a, matched to the reference implementation sts-2.1.2:
//  * aperiodic_templates(m): the reference's template files, generated instead of read;
//  * non_overlapping_template (section 2.7): N = 8 blocks, one chi-square per template;
//  * overlapping_template (section 2.8): the all-ones template, M = 1032, K = 5.
//
// Speed: both tests reduce to counting m-bit windows, which is done from 64-bit words.
// The non-overlapping test needs no per-template scan at all: an aperiodic template
// cannot overlap itself (an overlap at shift k would make its first m-k bits equal its
// last m-k bits, i.e. give it a period), so the reference's "skip m bits after a match"
// never skips over another match of the same template, and its count equals the number
// of windows equal to the template. One histogram of all m-bit windows per block
// therefore answers all templates at once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "sts/special.h"
#include "sts/bitwords.h"
#include "sts/sts.h"

namespace qe::sts {
namespace {

// cephes_igamc as the reference calls it: Q(a, x) with Q = 1 for x <= 0.
double reference_igamc(double a, double x) { return x <= 0 ? 1.0 : igamc(a, x); }

// True when the m-bit word t (first bit most significant) has no proper border: no
// shift k in 1..m-1 with its first m-k bits equal to its last m-k bits.
bool is_aperiodic(uint32_t t, int m) {
  for (int k = 1; k < m; ++k) {
    const uint32_t suffix_mask = (uint32_t{1} << (m - k)) - 1;
    if ((t >> k) == (t & suffix_mask)) return false;
  }
  return true;
}

// Adds, for every start position p in [first, first + count), the window of m bits
// (1 <= m <= 32) starting at p to hist[window]. The caller guarantees that the bits up
// to first + count - 1 + m - 1 lie inside `words` (n bits, zero past n).
void count_windows(const std::vector<uint64_t>& words, size_t first, size_t count, int m, uint32_t* hist) {
  const size_t nwords = words.size();
  const unsigned down = 64 - static_cast<unsigned>(m);
  const uint64_t mask = (uint64_t{1} << m) - 1;
  size_t p = first;
  const size_t end = first + count;
  while (p < end) {
    const size_t q = p >> 6;
    const uint64_t hi = words[q];
    const uint64_t lo = q + 1 < nwords ? words[q + 1] : 0;
    const size_t stop = std::min(end, (q + 1) << 6);
    unsigned r = static_cast<unsigned>(p & 63);
    const unsigned r_end = r + static_cast<unsigned>(stop - p);
    // Windows that lie inside `hi`, then those that straddle into `lo` (r >= 65 - m >= 33,
    // so every shift below is in range).
    const unsigned inside_end = std::min(r_end, 65u - static_cast<unsigned>(m));
    for (; r < inside_end; ++r) ++hist[(hi >> (down - r)) & mask];
    for (; r < r_end; ++r) ++hist[((hi << r) | (lo >> (64 - r))) >> down];
    p = stop;
  }
}

// The reference's nonOverlappingTemplateMatchings with an explicit template list.
TestResult non_overlapping_template_of(const Bits& bits, int m, const std::vector<uint32_t>& templates) {
  constexpr int N = 8;  // the reference's fixed number of blocks
  const size_t M = bits.n / N;
  // lambda = (M - m + 1) / 2^m as the reference computes it; it aborts unless lambda > 0.
  const double lambda = (static_cast<double>(M) - m + 1) / std::pow(2.0, m);
  if (!(lambda > 0)) {
    return TestResult::not_applicable(templates.size(),
                          "non-overlapping template: n = " + std::to_string(bits.n) + " gives blocks of M = " +
                              std::to_string(M) + " bits, shorter than the template length m = " + std::to_string(m));
  }
  const double var_wj = static_cast<double>(M) * (1.0 / std::pow(2.0, m) - (2.0 * m - 1.0) / std::pow(2.0, 2.0 * m));
  const double sd = std::pow(var_wj, 0.5);

  const size_t bins = size_t{1} << m;
  std::vector<uint32_t> hist(bins);
  // counts[t * N + i] = occurrences of template t in block i.
  std::vector<uint32_t> counts(templates.size() * N);
  for (int i = 0; i < N; ++i) {
    std::fill(hist.begin(), hist.end(), 0u);
    count_windows(bits.words, static_cast<size_t>(i) * M, M - static_cast<size_t>(m) + 1, m, hist.data());
    for (size_t t = 0; t < templates.size(); ++t) counts[t * N + i] = hist[templates[t]];
  }

  TestResult result;
  result.p_values.reserve(templates.size());
  for (size_t t = 0; t < templates.size(); ++t) {
    double chi2 = 0.0;
    for (int i = 0; i < N; ++i) {
      const double z = (static_cast<double>(counts[t * N + i]) - lambda) / sd;
      chi2 += z * z;
    }
    result.p_values.push_back(reference_igamc(N / 2.0, chi2 / 2.0));
  }
  return result;
}

// out[k] = in[k] & in[k + shift]: if `in` marks the starts of runs of `have` ones and
// shift <= have, `out` marks the starts of runs of have + shift ones.
std::vector<uint64_t> and_shifted(const std::vector<uint64_t>& in, size_t shift) {
  const size_t nw = in.size();
  const size_t ws = shift >> 6;
  const unsigned bs = static_cast<unsigned>(shift & 63);
  std::vector<uint64_t> out(nw);
  for (size_t w = 0; w < nw; ++w) {
    const uint64_t a = w + ws < nw ? in[w + ws] : 0;
    const uint64_t b = w + ws + 1 < nw ? in[w + ws + 1] : 0;
    const uint64_t shifted = bs == 0 ? a : (a << bs) | (b >> (64 - bs));
    out[w] = in[w] & shifted;
  }
  return out;
}

// Number of set bits at positions [a, b) of a bit vector (MSB-first words).
QE_POPCNT_CLONES uint64_t popcount_range(const std::vector<uint64_t>& words, size_t a, size_t b) {
  if (a >= b) return 0;
  const size_t wa = a >> 6;
  const size_t wb = (b - 1) >> 6;
  const uint64_t head = ~uint64_t{0} >> (a & 63);
  const uint64_t tail = ~uint64_t{0} << (63 - ((b - 1) & 63));
  if (wa == wb) return static_cast<uint64_t>(__builtin_popcountll(words[wa] & head & tail));
  uint64_t total = static_cast<uint64_t>(__builtin_popcountll(words[wa] & head));
  for (size_t w = wa + 1; w < wb; ++w) total += static_cast<uint64_t>(__builtin_popcountll(words[w]));
  total += static_cast<uint64_t>(__builtin_popcountll(words[wb] & tail));
  return total;
}

// The reference's Pr(u, eta): the probability of u occurrences in the (pre-rev1a)
// compound-Poisson approximation of SP 800-22, with the reference's own lgamma sum.
double reference_pr(int u, double eta) {
  if (u == 0) return std::exp(-eta);
  double sum = 0.0;
  for (int l = 1; l <= u; ++l) {
    sum += std::exp(-eta - u * std::log(2.0) + l * std::log(eta) - log_gamma(l + 1) + log_gamma(u) - log_gamma(l) -
                    log_gamma(u - l + 1));
  }
  return sum;
}

}  // namespace

std::vector<uint32_t> aperiodic_templates(int m) {
  if (m < 2 || m > 21) {
    throw std::invalid_argument("aperiodic_templates: template length m = " + std::to_string(m) +
                                " is outside NIST's range 2..21");
  }
  // NIST's template files list the aperiodic words in increasing numeric order (first
  // bit most significant); checked against template9 and the reference's counts.
  std::vector<uint32_t> out;
  const uint32_t end = uint32_t{1} << m;
  for (uint32_t t = 0; t < end; ++t) {
    if (is_aperiodic(t, m)) out.push_back(t);
  }
  return out;
}

TestResult non_overlapping_template(const Bits& bits, int m) {
  if (m < 2 || m > 21) {
    return TestResult::not_applicable(1, "non-overlapping template: template length m = " + std::to_string(m) +
                                 " is outside NIST's range 2..21");
  }
  return non_overlapping_template_of(bits, m, tested_templates(m));
}

std::vector<uint32_t> tested_templates(int m) {
  // sts-2.1.2 tests at most 148 templates: all of them up to m = 9, the first 148 for
  // m = 10, and every (count / 148)-th one from m = 11 on. Matching that keeps our
  // P-value lists comparable with every published report.
  constexpr size_t kMaxTemplates = 148;
  const std::vector<uint32_t> all = aperiodic_templates(m);
  const size_t skip = all.size() < kMaxTemplates ? 1 : all.size() / kMaxTemplates;
  std::vector<uint32_t> tested;
  for (size_t j = 0; j < kMaxTemplates && j * skip < all.size(); ++j) tested.push_back(all[j * skip]);
  return tested;
}

TestResult overlapping_template(const Bits& bits, int m) {
  constexpr size_t M = 1032;  // the reference's fixed substring length
  constexpr int K = 5;
  const size_t N = bits.n / M;
  if (m < 1 || static_cast<size_t>(m) > M) {
    return TestResult::not_applicable(1, "overlapping template: template length m = " + std::to_string(m) +
                                 " must be between 1 and M = 1032");
  }
  if (N == 0) {
    return TestResult::not_applicable(1, "overlapping template: n = " + std::to_string(bits.n) +
                                 " is shorter than one substring of M = 1032 bits");
  }
  // Probabilities exactly as the reference computes them (its initialised pi[] table is
  // overwritten by Pr(), which is the compound-Poisson formula, not rev1a's corrected
  // values 0.364091, 0.185659, ...).
  const double lambda = static_cast<double>(M - static_cast<size_t>(m) + 1) / std::pow(2.0, m);
  const double eta = lambda / 2.0;
  double pi[K + 1];
  double sum = 0.0;
  for (int i = 0; i < K; ++i) {
    pi[i] = reference_pr(i, eta);
    sum += pi[i];
  }
  pi[K] = 1 - sum;
  for (const double p : pi) {
    // Long templates make some class probabilities vanish (or 1 - sum round below 0): the
    // chi-square is undefined there (the reference divides by zero).
    if (!(p > 0)) {
      return TestResult::not_applicable(1, "overlapping template: template length m = " + std::to_string(m) +
                                   " is too long for substrings of M = 1032 bits (expected counts vanish)");
    }
  }

  // runs[k] = 1 where bits k .. k+m-1 are all ones; built by doubling the run length.
  std::vector<uint64_t> runs = bits.words;
  for (int have = 1; have < m;) {
    const int step = std::min(have, m - have);
    runs = and_shifted(runs, static_cast<size_t>(step));  // runs of `have` & runs of `step` shifted
    have += step;
  }
  uint64_t nu[K + 1] = {0, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < N; ++i) {
    const uint64_t w = popcount_range(runs, i * M, i * M + M - static_cast<size_t>(m) + 1);
    ++nu[w <= 4 ? w : K];
  }
  double chi2 = 0.0;
  for (int i = 0; i <= K; ++i) {
    const double expected = static_cast<double>(N) * pi[i];
    const double diff = static_cast<double>(nu[i]) - expected;
    chi2 += diff * diff / expected;
  }
  TestResult result;
  result.p_values.push_back(reference_igamc(K / 2.0, chi2 / 2.0));
  return result;
}

}  // namespace qe::sts
