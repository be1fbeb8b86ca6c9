// Restart tests (§3.1.4): 1,000 restarts of 1,000 samples each, as a 1000x1000 matrix (row i
// = restart i). The sanity check bounds the most common symbol's count in any row or column;
// the row and column datasets are then assessed like the original data.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ea/ea.h"
#include "ea/parallel.h"

namespace qe::ea {

namespace {

constexpr size_t kSide = 1000;

// The (1 - alpha) quantile of the largest symbol count among 1,000 samples from the
// distribution with min-entropy H_I that makes such counts largest: ceil(2^H_I) - 1 symbols
// of probability p = 2^-H_I and one taking the rest. NIST's tool estimates this quantile from
// 5 million simulated rounds; here it is computed exactly:
//   P(every count <= U) = n! [x^n] (sum_{j<=U} (p x)^j / j!)^(k-1) (sum_{j<=U} (q x)^j / j!).
long max_count_cutoff(double h_initial, double alpha) {
  const long double p = powl(2.0L, -static_cast<long double>(h_initial));
  const int k = static_cast<int>(std::ceil(1.0 / static_cast<double>(p)));
  const long double q = std::max(0.0L, 1.0L - (k - 1) * p);
  const size_t n = kSide;
  auto truncated = [n](long double prob, long u) {
    std::vector<long double> c(n + 1, 0.0L);
    long double term = 1.0L;  // prob^j / j!
    for (long j = 0; j <= u && static_cast<size_t>(j) <= n; ++j) {
      c[static_cast<size_t>(j)] = term;
      term *= prob / static_cast<long double>(j + 1);
    }
    return c;
  };
  auto multiply = [n](const std::vector<long double>& a, const std::vector<long double>& b) {
    std::vector<long double> c(n + 1, 0.0L);
    for (size_t i = 0; i <= n; ++i) {
      if (a[i] == 0.0L) continue;
      for (size_t j = 0; i + j <= n; ++j) c[i + j] += a[i] * b[j];
    }
    return c;
  };
  long double factorial = 1.0L;
  for (size_t i = 2; i <= n; ++i) factorial *= static_cast<long double>(i);
  auto probability_all_at_most = [&](long u) {
    std::vector<long double> result = truncated(q, u), base = truncated(p, u);
    for (int e = k - 1; e > 0; e >>= 1) {
      if (e & 1) result = multiply(result, base);
      if (e > 1) base = multiply(base, base);
    }
    return result[n] * factorial;
  };
  // Smallest U with P(max <= U) >= 1 - alpha; P is increasing in U, so bisect.
  long lo = static_cast<long>(n) / k, hi = static_cast<long>(n);
  while (lo < hi) {
    const long mid = (lo + hi) / 2;
    if (probability_all_at_most(mid) >= 1.0L - alpha) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

double track_minimum(const std::vector<uint8_t>& s, int k, int width, bool iid, unsigned threads) {
  if (iid) return std::min(static_cast<double>(width), most_common_value(s.data(), s.size(), k));
  // The literal track of the non-IID assessment (the bitstring does not take part).
  std::array<double, kEstimatorCount> out;
  out.fill(kNotApplicable);
  const uint8_t* d = s.data();
  const size_t n = s.size();
  std::vector<std::function<void()>> jobs = {
      [&] { out[0] = most_common_value(d, n, k); },
      [&] {
        const TupleEstimates t = tuple_estimates(d, n);
        out[4] = t.t_tuple;
        out[5] = t.lrs;
      },
      [&] { out[6] = multi_mcw_estimate(d, n, k); },
      [&] { out[7] = lag_estimate(d, n, k); },
      [&] { out[8] = multi_mmc_estimate(d, n, k); },
      [&] { out[9] = lz78y_estimate(d, n, k); },
  };
  if (k == 2) {
    jobs.push_back([&] { out[1] = collision_estimate(d, n); });
    jobs.push_back([&] { out[2] = markov_estimate(d, n); });
    jobs.push_back([&] { out[3] = compression_estimate(d, n); });
  }
  detail::run_jobs(jobs, threads, {});
  double h = width;
  for (double v : out)
    if (!std::isnan(v)) h = std::min(h, v);
  return h;
}

}  // namespace

RestartResult assess_restart(const Samples& matrix, double h_initial, bool iid, const NonIidOptions& options) {
  if (matrix.symbols.size() != kSide * kSide)
    throw InputError("restart data must hold exactly 1000 x 1000 = 1000000 samples, not " +
                     std::to_string(matrix.symbols.size()));
  if (!(h_initial > 0) || h_initial > matrix.bits_per_symbol)
    throw InputError("the initial entropy estimate H_I must be above 0 and at most the " +
                     std::to_string(matrix.bits_per_symbol) + " bits per symbol");
  RestartResult r;
  const std::vector<uint8_t>& rows = matrix.symbols;
  std::vector<uint8_t> columns(rows.size());
  long row_max = 0, column_max = 0;
  for (size_t i = 0; i < kSide; ++i) {
    long counts[256] = {}, best = 0;
    for (size_t j = 0; j < kSide; ++j) best = std::max(best, ++counts[rows[i * kSide + j]]);
    row_max = std::max(row_max, best);
  }
  for (size_t j = 0; j < kSide; ++j) {
    long counts[256] = {}, best = 0;
    for (size_t i = 0; i < kSide; ++i) {
      columns[j * kSide + i] = rows[i * kSide + j];
      best = std::max(best, ++counts[rows[i * kSide + j]]);
    }
    column_max = std::max(column_max, best);
  }
  const double alpha = 1.0 - std::exp(std::log(0.99) / static_cast<double>(2 * kSide));
  r.max_count = std::max(row_max, column_max);
  r.cutoff = max_count_cutoff(h_initial, alpha);
  r.sanity_passed = r.max_count <= r.cutoff;
  if (options.progress) options.progress(1, 3);
  r.h_row = track_minimum(rows, matrix.alphabet_size, matrix.bits_per_symbol, iid, options.threads);
  if (options.progress) options.progress(2, 3);
  r.h_column = track_minimum(columns, matrix.alphabet_size, matrix.bits_per_symbol, iid, options.threads);
  if (options.progress) options.progress(3, 3);
  r.validated = r.sanity_passed && std::min(r.h_row, r.h_column) >= h_initial / 2.0;
  r.h_min = std::min({r.h_row, r.h_column, h_initial});
  return r;
}

}  // namespace qe::ea
