// Approximate entropy (SP 800-22 rev1a section 2.12) and serial (section 2.11), matched
// to the reference implementation sts-2.1.2.
//
// Both tests count the overlapping k-bit patterns of the sequence read cyclically (the
// first k-1 bits appended at the end) for a few k. The reference rescans the sequence
// bit by bit once per k; here one pass histograms the longest windows from 64-bit words,
// and the counts for shorter k are the marginals of that histogram (a cyclic k-bit
// window is the prefix of the cyclic (k+1)-bit window at the same position).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sts/special.h"
#include "sts/sts.h"

namespace qe::sts {
namespace {

// cephes_igamc as the reference calls it: Q(a, x) with Q = 1 for x <= 0.
double reference_igamc(double a, double x) { return x <= 0 ? 1.0 : igamc(a, x); }

// The longest pattern we histogram: 2^k counters must stay small next to the sequence
// (k <= log2(n) + 2, i.e. at most 4n counters) and bounded in memory (k <= 28); the
// counters are 32-bit, so n < 2^32 (the reference itself stops at 2^31 - 1).
bool window_fits(int k, size_t n) {
  if (k > 28) return false;
  if (n > 0xffffffffu) return false;  // the 32-bit pattern counters could overflow
  return (size_t{1} << k) <= 4 * n;
}

// Counts of the n cyclic k-bit windows (1 <= k <= 28): hist[v] = number of positions p
// in 0..n-1 whose bits p, p+1, ..., p+k-1 (indices mod n), first bit most significant,
// equal v.
std::vector<uint32_t> cyclic_window_counts(const Bits& bits, int k) {
  const size_t n = bits.n;
  // The sequence followed by its first k-1 bits (wrapping again if n < k-1), plus one
  // spare zero word so every 64-bit read below stays inside the buffer.
  const size_t total = n + static_cast<size_t>(k) - 1;
  std::vector<uint64_t> ext((total + 63) / 64 + 1, 0);
  std::copy(bits.words.begin(), bits.words.begin() + static_cast<std::ptrdiff_t>((n + 63) / 64), ext.begin());
  if (n % 64 != 0) ext[(n - 1) / 64] &= ~uint64_t{0} << (64 - n % 64);  // don't trust bits past n
  for (size_t j = 0; j + 1 < static_cast<size_t>(k); ++j) {
    const size_t pos = n + j;
    if (bits.bit(j % n)) ext[pos >> 6] |= uint64_t{1} << (63 - (pos & 63));
  }
  std::vector<uint32_t> hist(size_t{1} << k, 0);
  const unsigned down = 64 - static_cast<unsigned>(k);
  const uint64_t mask = (uint64_t{1} << k) - 1;
  const unsigned inside = 65 - static_cast<unsigned>(k);  // windows r < inside lie in one word
  for (size_t q = 0, p = 0; p < n; ++q) {
    const uint64_t hi = ext[q];
    const uint64_t lo = ext[q + 1];
    const unsigned stop = static_cast<unsigned>(std::min<size_t>(64, n - p));
    unsigned r = 0;
    for (const unsigned end = std::min(stop, inside); r < end; ++r) ++hist[(hi >> (down - r)) & mask];
    // The rest straddle into the next word; r >= 65 - k >= 37, so the shifts are in range.
    for (; r < stop; ++r) ++hist[((hi << r) | (lo >> (64 - r))) >> down];
    p += stop;
  }
  return hist;
}

// Counts of cyclic (k - drop)-bit windows from those of k-bit windows: a shorter window is
// the prefix of the longer one at the same position.
std::vector<uint32_t> shorter_counts(const std::vector<uint32_t>& hist, unsigned drop = 1) {
  std::vector<uint32_t> out(hist.size() >> drop, 0);
  for (size_t v = 0; v < hist.size(); ++v) out[v >> drop] += hist[v];
  return out;
}

// The reference's ApEn phi term: sum over patterns (in increasing order) of
// P log(P / n), divided by n.
double apen_phi(const std::vector<uint32_t>& hist, double n) {
  double sum = 0.0;
  for (const uint32_t count : hist) {
    if (count > 0) sum += count * std::log(count / n);
  }
  return sum / n;
}

// The reference's psi2(k) from the k-bit counts: sum(P^2) * 2^k / n - n.
double psi2(const std::vector<uint32_t>& hist, int k, size_t n) {
  if (k <= 0) return 0.0;
  uint64_t squares = 0;  // exact; the reference's double sum is exact too below 2^53
  for (const uint32_t count : hist) squares += static_cast<uint64_t>(count) * count;
  return static_cast<double>(squares) * std::pow(2.0, k) / static_cast<double>(n) - static_cast<double>(n);
}

// The two tests from their window counts (ApEn: (m+1)-bit windows; serial: m-bit).
TestResult approximate_entropy_from_counts(const std::vector<uint32_t>& longer, int m, size_t n) {
  const double dn = static_cast<double>(n);
  const double phi_m1 = apen_phi(longer, dn);
  const double phi_m = m == 0 ? 0.0 : apen_phi(shorter_counts(longer), dn);
  const double apen = phi_m - phi_m1;
  const double chi_squared = 2.0 * dn * (std::log(2.0) - apen);
  TestResult result;
  result.p_values.push_back(reference_igamc(std::pow(2.0, m - 1), chi_squared / 2.0));
  return result;
}

TestResult serial_from_counts(const std::vector<uint32_t>& h0, int m, size_t n) {
  const std::vector<uint32_t> h1 = m >= 2 ? shorter_counts(h0) : std::vector<uint32_t>{};
  const std::vector<uint32_t> h2 = m >= 3 ? shorter_counts(h1) : std::vector<uint32_t>{};
  const double psim0 = psi2(h0, m, n);
  const double psim1 = psi2(h1, m - 1, n);
  const double psim2 = psi2(h2, m - 2, n);
  const double del1 = psim0 - psim1;
  const double del2 = psim0 - 2.0 * psim1 + psim2;
  TestResult result;
  result.p_values.push_back(reference_igamc(std::pow(2.0, m - 1) / 2, del1 / 2.0));
  result.p_values.push_back(reference_igamc(std::pow(2.0, m - 2) / 2, del2 / 2.0));
  return result;
}

bool approximate_entropy_applies(int m, size_t n) { return n > 0 && m >= 0 && window_fits(m + 1, n); }
bool serial_applies(int m, size_t n) { return n > 0 && m >= 1 && window_fits(m, n); }

}  // namespace

TestResult approximate_entropy(const Bits& bits, int m) {
  const size_t n = bits.n;
  if (n == 0) return TestResult::not_applicable(1, "approximate entropy: empty sequence");
  if (!approximate_entropy_applies(m, n)) {
    return TestResult::not_applicable(1, "approximate entropy: block length m = " + std::to_string(m) +
                                 " is outside 0..log2(n)+1 for n = " + std::to_string(n) +
                                 " (NIST recommends m < log2(n) - 5)");
  }
  // NIST recommends m < floor(log2(n)) - 5; like the reference we still compute the
  // P-value beyond that (the reference only prints a warning).
  return approximate_entropy_from_counts(cyclic_window_counts(bits, m + 1), m, n);
}

TestResult serial(const Bits& bits, int m) {
  const size_t n = bits.n;
  if (n == 0) return TestResult::not_applicable(2, "serial: empty sequence");
  if (!serial_applies(m, n)) {
    return TestResult::not_applicable(2, "serial: block length m = " + std::to_string(m) + " is outside 1..log2(n)+2 for n = " +
                                 std::to_string(n) + " (NIST recommends m < floor(log2(n)) - 2)");
  }
  return serial_from_counts(cyclic_window_counts(bits, m), m, n);
}

SerialAndApproximateEntropy serial_and_approximate_entropy(const Bits& bits, int serial_m, int approximate_entropy_m) {
  const size_t n = bits.n;
  if (!serial_applies(serial_m, n) || !approximate_entropy_applies(approximate_entropy_m, n)) {
    return {serial(bits, serial_m), approximate_entropy(bits, approximate_entropy_m)};
  }
  // Both window lengths fit, so the longer one does: count it once, and each test takes
  // the marginal counts it needs (the same integers its own pass would count).
  const int apen_k = approximate_entropy_m + 1;
  const int k = std::max(serial_m, apen_k);
  const std::vector<uint32_t> longest = cyclic_window_counts(bits, k);
  const auto counts_for = [&](int want, std::vector<uint32_t>& storage) -> const std::vector<uint32_t>& {
    if (want == k) return longest;
    storage = shorter_counts(longest, static_cast<unsigned>(k - want));
    return storage;
  };
  std::vector<uint32_t> serial_storage, apen_storage;
  return {serial_from_counts(counts_for(serial_m, serial_storage), serial_m, n),
          approximate_entropy_from_counts(counts_for(apen_k, apen_storage), approximate_entropy_m, n)};
}

}  // namespace qe::sts
