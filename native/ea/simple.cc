// The counting estimators: most common value (§6.3.1), collision (§6.3.2) and Markov
// (§6.3.3), plus the predictor bound shared by §6.3.7-10.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "ea/ea.h"
#include "ea/search.h"

namespace qe::ea {

using detail::kZAlpha;

double most_common_value(const uint8_t* s, size_t n, int k) {
  if (n < 2) return kNotApplicable;
  std::vector<size_t> counts(static_cast<size_t>(std::max(k, 1)), 0);
  for (size_t i = 0; i < n; ++i) ++counts[s[i]];
  return most_common_value_of_mode(*std::max_element(counts.begin(), counts.end()), n);
}

double most_common_value_of_mode(size_t mode, size_t n) {
  if (n < 2) return kNotApplicable;
  const double p = static_cast<double>(mode) / static_cast<double>(n);
  return -std::log2(detail::upper_bound(p, static_cast<double>(n)));
}

double collision_estimate(const uint8_t* bits, size_t n) {
  // Walk the bitstring collision by collision: a pair 00/11 collides after 2 bits, any other
  // start after 3 (the third bit always equals one of the first two).
  size_t i = 0, v = 0;
  double squares = 0;
  while (i + 1 < n) {
    size_t t;
    if (bits[i] == bits[i + 1]) t = 2;
    else if (i + 2 < n) t = 3;
    else break;
    ++v;
    squares += static_cast<double>(t * t);
    i += t;
  }
  if (v < 2) return kNotApplicable;
  const double mean = static_cast<double>(i) / static_cast<double>(v);
  const double sigma = std::sqrt((squares - static_cast<double>(i) * mean) / static_cast<double>(v - 1));
  double bound = mean - kZAlpha * sigma / std::sqrt(static_cast<double>(v));
  bound = std::max(bound, 2.0);
  // For binary data the expected collision time reduces to 2 + 2p - 2p^2 (p >= 1/2), so the
  // search of step 7 has the closed form below; beyond 2.5 no p fits and the estimate is 1.
  if (bound >= 2.5) return 1.0;
  return -std::log2(0.5 + std::sqrt(1.25 - 0.5 * bound));
}

double markov_estimate(const uint8_t* bits, size_t n) {
  if (n < 2) return kNotApplicable;
  size_t c0 = 0, c00 = 0, c10 = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (bits[i] == 0) {
      ++c0;
      c00 += bits[i + 1] == 0;
    } else {
      c10 += bits[i + 1] == 0;
    }
  }
  const size_t c1 = n - 1 - c0;  // ones among the first n-1 bits
  const double p00 = c0 ? static_cast<double>(c00) / static_cast<double>(c0) : 0.0;
  const double p01 = c0 ? 1.0 - p00 : 0.0;
  const double p10 = c1 ? static_cast<double>(c10) / static_cast<double>(c1) : 0.0;
  const double p11 = c1 ? 1.0 - p10 : 0.0;
  if (bits[n - 1] == 0) ++c0;
  const double p0 = static_cast<double>(c0) / static_cast<double>(n);
  const double p1 = 1.0 - p0;
  // The most likely 128-bit sequence is one of six shapes; -log2 of its probability.
  double h = 128.0;
  auto consider = [&h](bool possible, double value) {
    if (possible) h = std::min(h, value);
  };
  consider(p00 > 0, -std::log2(p0) - 127.0 * std::log2(p00));
  consider(p01 > 0 && p10 > 0, -std::log2(p0) - 64.0 * std::log2(p01) - 63.0 * std::log2(p10));
  consider(p01 > 0 && p11 > 0, -std::log2(p0) - std::log2(p01) - 126.0 * std::log2(p11));
  consider(p10 > 0 && p00 > 0, -std::log2(p1) - std::log2(p10) - 126.0 * std::log2(p00));
  consider(p10 > 0 && p01 > 0, -std::log2(p1) - 64.0 * std::log2(p10) - 63.0 * std::log2(p01));
  consider(p11 > 0, -std::log2(p1) - 127.0 * std::log2(p11));
  return std::min(h / 128.0, 1.0);
}

namespace {

// log of the probability that N predictions with success probability p contain no run of
// r correct ones (§6.3.7 step 10, the series in its closed form).
double log_no_run(long double p, long r, long n) {
  const long double q = 1.0L - p;
  long double x = 1.0L, last = 0.0L;
  for (int i = 0; i <= 65 && (x - last) > (LDBL_EPSILON * x); ++i) {
    last = x;
    x = 1.0L + q * powl(p, static_cast<long double>(r)) * powl(x, r + 1.0L);
  }
  return static_cast<double>(logl(1.0L - p * x) - logl((r + 1.0L - r * x) * q) - (n + 1.0L) * logl(x));
}

}  // namespace

double prediction_estimate(long correct, long n, long longest_run, int k) {
  if (n <= 1) return kNotApplicable;
  const double p_global = static_cast<double>(correct) / static_cast<double>(n);
  const double p_global_bound = p_global > 0 ? detail::upper_bound(p_global, static_cast<double>(n))
                                             : 1.0 - std::pow(0.01, 1.0 / static_cast<double>(n));
  double p = std::fmax(1.0 / k, p_global_bound);
  const long r = longest_run + 1;
  const double target = std::log(0.99);
  // P_local only matters when a run as long as the one seen is unlikely at P_global'.
  if (p < 1.0 && log_no_run(p, r, n) > target) {
    const double p_local = detail::bisect_decreasing([&](double x) { return log_no_run(x, r, n); }, target, p, 1.0, 1.0);
    p = std::fmax(p, p_local);
  }
  return -std::log2(p);
}

}  // namespace qe::ea
