// Special functions behind the SP 800-22 P-values, checked against closed forms and
// independently computed sums (in long double), including far tails and large a.
#include <cmath>
#include <limits>

#include "sts/special.h"
#include "tests/check.h"

namespace {

using qe::sts::igam;
using qe::sts::igamc;

double rel_err(double got, double want) { return want == 0 ? std::fabs(got) : std::fabs(got - want) / std::fabs(want); }

// Q(n, x) for integer n: the Poisson(x) probability of fewer than n events,
// e^-x sum_{k<n} x^k / k!. Summed in long double outward from the largest term (found
// with lgammal once), each further term by the exact ratio x/k, so no cancellation and
// no dependence on the code under test.
double poisson_upper_q(int n, double x) {
  const long double lx = x;
  const int mode = std::min(n - 1, static_cast<int>(std::floor(x)));
  const long double t_mode = std::exp(-lx + mode * std::log(lx) - std::lgamma(static_cast<long double>(mode) + 1));
  long double sum = t_mode;
  long double t = t_mode;
  for (int k = mode; k > 0; --k) {  // downward: t_{k-1} = t_k * k / x
    t = t * k / lx;
    sum += t;
    if (t < sum * 1e-22L) break;
  }
  t = t_mode;
  for (int k = mode + 1; k < n; ++k) {  // upward: t_k = t_{k-1} * x / k
    t = t * lx / k;
    sum += t;
    if (t < sum * 1e-22L && k > x) break;
  }
  return static_cast<double>(sum);
}

// P(n, x) for integer n: the Poisson(x) probability of at least n events, summed from
// k = n upward (for x < n the terms fall), again in long double.
double poisson_lower_p(int n, double x) {
  const long double lx = x;
  long double t = std::exp(-lx + n * std::log(lx) - std::lgamma(static_cast<long double>(n) + 1));
  long double sum = 0;
  for (int k = n; t > sum * 1e-22L; ++k) {
    sum += t;
    t = t * lx / (k + 1);
  }
  return static_cast<double>(sum);
}

// Q(n + 1/2, x) = erfc(sqrt x) + e^-x sum_{k=0}^{n-1} x^(k+1/2) / Gamma(k + 3/2).
double half_integer_q(int n, double x) {
  const long double lx = x;
  long double term = std::exp(-lx) * std::sqrt(lx) / std::tgamma(1.5L);  // k = 0
  long double sum = 0;
  for (int k = 0; k < n; ++k) {
    sum += term;
    term = term * lx / (k + 1.5L);
  }
  return static_cast<double>(std::erfc(std::sqrt(lx)) + sum);
}

}  // namespace

QE_TEST(igamc_a1_is_exp) {
  for (double x : {1e-8, 0.001, 0.3, 1.0, 2.5, 10.0, 50.0, 200.0, 700.0}) {
    CHECK(rel_err(igamc(1, x), std::exp(-x)) < 1e-14);
    CHECK(rel_err(igam(1, x), -std::expm1(-x)) < 1e-14);
  }
}

QE_TEST(igamc_a_half_is_erfc) {
  for (double x : {1e-10, 1e-4, 0.01, 0.5, 1.0, 3.0, 20.0, 100.0, 600.0}) {
    CHECK(rel_err(igamc(0.5, x), std::erfc(std::sqrt(x))) < 1e-13);
    CHECK(rel_err(igam(0.5, x), std::erf(std::sqrt(x))) < 1e-13);
  }
}

QE_TEST(igamc_integer_a_is_poisson_sum) {
  const int as[] = {2, 3, 5, 10, 33, 100, 512};
  for (int a : as) {
    for (double f : {0.05, 0.3, 0.8, 0.97, 1.0, 1.03, 1.3, 2.0, 4.0}) {
      const double x = a * f;
      CHECK(rel_err(igamc(a, x), poisson_upper_q(a, x)) < 1e-13);
      CHECK(rel_err(igam(a, x), poisson_lower_p(a, x)) < 1e-13);
    }
  }
}

// Serial with m = 16 asks for Q(2^14, x): the prefactor must not lose ~a*eps.
QE_TEST(igamc_large_a_matches_poisson_sum) {
  for (int a : {16384, 65536}) {
    const double sd = std::sqrt(static_cast<double>(a));
    for (double z : {-12.0, -6.0, -3.0, -1.0, -0.1, 0.0, 0.1, 1.0, 3.0, 6.0, 12.0, 30.0}) {
      const double x = a + z * sd;
      const double want = poisson_upper_q(a, x);
      CHECK(rel_err(igamc(a, x), want) < 1e-12);
    }
    // The left tail through igam: P(a, x) = 1 - Q(a, x) is tiny and must keep precision.
    const double x_left = a - 10 * sd;
    CHECK(rel_err(igam(a, x_left), poisson_lower_p(a, x_left)) < 1e-11);
  }
}

QE_TEST(igamc_large_a_center_follows_asymptotics) {
  // Q(a, a) = 1/2 - 1/(3 sqrt(2 pi a)) + O(a^-3/2).
  for (double a : {1e4, 16384.0, 1e6}) {
    const double approx = 0.5 - 1 / (3 * std::sqrt(2 * M_PI * a));
    CHECK(std::fabs(igamc(a, a) - approx) < 1 / std::pow(a, 1.5));
  }
}

QE_TEST(igamc_half_integer_a) {
  for (int n : {1, 2, 4, 10, 40}) {
    for (double x : {0.2, 1.0, 5.0, 20.0, 60.0}) {
      CHECK(rel_err(igamc(n + 0.5, x), half_integer_q(n, x)) < 1e-12);
    }
  }
}

QE_TEST(igamc_chi_square_quantiles) {
  // Chi-square upper quantiles from statistical tables: P(chi2_k > q) = alpha.
  CHECK_NEAR(igamc(1.5, 7.814727903251178 / 2), 0.05, 1e-13);    // k = 3, 95 %
  CHECK_NEAR(igamc(3.0, 16.811893829770927 / 2), 0.01, 1e-13);   // k = 6, 99 %
  CHECK_NEAR(igamc(4.5, 21.665994333461924 / 2), 0.01, 1e-13);   // k = 9, 99 %
}

QE_TEST(igamc_edges) {
  CHECK_EQ(igamc(3, 0), 1.0);
  CHECK_EQ(igam(3, 0), 0.0);
  CHECK_EQ(igamc(3, std::numeric_limits<double>::infinity()), 0.0);
  CHECK(std::isnan(igamc(0, 1)));
  CHECK(std::isnan(igamc(-1, 1)));
  CHECK(std::isnan(igamc(1, -1)));
  CHECK(std::isnan(igamc(std::nan(""), 1)));
  // Far right tail keeps relative precision instead of flushing to 0 early.
  CHECK(rel_err(igamc(1, 700), std::exp(-700.0)) < 1e-13);
  CHECK(igamc(4, 2000) == 0.0 || igamc(4, 2000) < 1e-300);
}

QE_TEST(normal_cdf_values_and_tails) {
  CHECK_EQ(qe::sts::normal_cdf(0), 0.5);
  CHECK_NEAR(qe::sts::normal_cdf(1.959963984540054), 0.975, 1e-15);
  CHECK(rel_err(qe::sts::normal_cdf(-10), 7.6198530241605269e-24) < 1e-13);
  CHECK(rel_err(qe::sts::normal_cdf(-30), 4.906713927148187e-198) < 1e-12);
  for (double x : {0.1, 0.7, 1.5, 3.0, 6.0}) {
    CHECK_NEAR(qe::sts::normal_cdf(x) + qe::sts::normal_cdf(-x), 1.0, 1e-15);
  }
}

QE_TEST(log_gamma_values) {
  CHECK(rel_err(qe::sts::log_gamma(0.5), 0.5 * std::log(M_PI)) < 1e-15);
  CHECK(std::fabs(qe::sts::log_gamma(1)) < 1e-15);
  CHECK(std::fabs(qe::sts::log_gamma(2)) < 1e-15);
  double log_fact = 0;  // log((n-1)!)
  for (int n = 2; n <= 170; ++n) {
    log_fact += std::log(static_cast<double>(n - 1));
    CHECK(std::fabs(qe::sts::log_gamma(n) - log_fact) < 1e-13 * std::max(1.0, log_fact));
  }
  CHECK(std::isnan(qe::sts::log_gamma(0)));
}
