// Incomplete gamma and normal distribution functions for the SP 800-22 P-values.
//
// Q(a, x) and P(a, x) follow the textbook split: for x < a + 1 the power series of the
// lower function converges quickly and P is computed from it (Q = 1 - P, which loses
// nothing because P < ~0.6 there); otherwise the Legendre continued fraction of the upper
// function gives Q directly (P = 1 - Q). Both are multiplied by the prefactor
// D(a, x) = x^a e^-x / Gamma(a), and that is where accuracy for large a is won or lost:
// log D = a*log(x) - x - lgamma(a) subtracts numbers of size ~a*log(a) to get a result of
// size ~1, so it is computed instead as
//     log D = -a * phi((x - a) / a) + 0.5*log(a / (2 pi)) - stirling_error(a),
//     phi(u) = u - log(1 + u) >= 0,
// where every term is small or computed without cancellation.
#include "sts/special.h"

#include <cmath>
#include <limits>

namespace qe::sts {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kHalfLog2Pi = 0.91893853320467274178032973640562;  // log(2 pi) / 2
constexpr double kEps = 1e-17;                                      // below double's ulp
constexpr long kMaxIterations = 100'000'000;

// Stirling's series for log Gamma(x) - [(x - 1/2) log x - x + log(2 pi)/2], x >= 15:
// sum of B_2k / (2k (2k-1) x^(2k-1)); the first omitted term is < 1e-19 at x = 15.
double stirling_series(double x) {
  const double r = 1.0 / x;
  const double r2 = r * r;
  return r * (1.0 / 12 +
              r2 * (-1.0 / 360 +
                    r2 * (1.0 / 1260 +
                          r2 * (-1.0 / 1680 + r2 * (1.0 / 1188 + r2 * (-691.0 / 360360 + r2 * (1.0 / 156)))))));
}

// The Stirling error log Gamma(a) - [(a - 1/2) log a - a + log(2 pi)/2].
double stirling_error(double a) {
  if (a >= 15) return stirling_series(a);
  return log_gamma(a) - ((a - 0.5) * std::log(a) - a + kHalfLog2Pi);
}

// log(1 + u) - u for |u| <= 1/2, accurate also for small |u| (where it is ~ -u^2/2).
double log1p_minus_x(double u) {
  // log(1 + u) = 2 atanh(w) with w = u / (2 + u); 2w - u = -u^2 / (2 + u).
  const double w = u / (2 + u);
  const double w2 = w * w;
  double term = w * w2;  // w^3
  double sum = 0;
  for (int k = 3; k < 200; k += 2) {
    const double add = term / k;
    sum += add;
    if (std::fabs(add) <= std::fabs(sum) * kEps) break;
    term *= w2;
  }
  return -u * u / (2 + u) + 2 * sum;
}

// D(a, x) = x^a e^-x / Gamma(a).
double prefactor(double a, double x) {
  if (x == 0) return 0;
  // Small a: three factors, each within an ulp or two, and no exponent to round (for
  // a = 1, x = 700 the log form would carry an absolute error of ~700 eps into exp()).
  if (a < 20 && x < 708) return std::exp(-x) * std::pow(x, a) / std::tgamma(a);
  // Otherwise through phi(u) = u - log(1 + u), u = (x - a) / a: by series near u = 0,
  // and with log(x / a) taken directly away from it (1 + u would lose x/a's digits).
  const double u = (x - a) / a;
  const double phi = std::fabs(u) <= 0.5 ? -log1p_minus_x(u) : u - std::log(x / a);
  return std::exp(-a * phi + 0.5 * std::log(a) - kHalfLog2Pi - stirling_error(a));
}

// Sum of the series P(a, x) / D(a, x) = sum_n x^n / (a (a+1) ... (a+n)).
double lower_series(double a, double x) {
  double term = 1.0 / a;
  double sum = term;
  for (long n = 1; n < kMaxIterations; ++n) {
    term *= x / (a + static_cast<double>(n));
    sum += term;
    if (term <= sum * kEps) break;
  }
  return sum;
}

// Q(a, x) / D(a, x) by the continued fraction
//   1 / (x+1-a - 1(1-a) / (x+3-a - 2(2-a) / (x+5-a - ...))), modified Lentz evaluation.
double upper_fraction(double a, double x) {
  constexpr double tiny = 1e-300;
  double b = x + 1 - a;
  double c = 1 / tiny;
  double d = 1 / b;
  double f = d;
  for (long n = 1; n < kMaxIterations; ++n) {
    const double an = -static_cast<double>(n) * (static_cast<double>(n) - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    f *= delta;
    if (std::fabs(delta - 1) <= 1e-16) break;
  }
  return f;
}

bool bad_arguments(double a, double x) { return std::isnan(a) || std::isnan(x) || a <= 0 || x < 0; }

}  // namespace

double log_gamma(double x) {
  if (std::isnan(x) || x <= 0) return kNaN;
  if (std::isinf(x)) return x;
  // Below 15, Gamma itself is well within range and accurate to an ulp or two, so its
  // log has an absolute error of ~1e-16 (exact 0 at x = 1 and 2). Near 0, Gamma(x) ~ 1/x.
  if (x < 1e-12) return -std::log(x) - 0.57721566490153286 * x;
  if (x < 15) return std::log(std::tgamma(x));
  return (x - 0.5) * std::log(x) - x + kHalfLog2Pi + stirling_series(x);
}

double igam(double a, double x) {
  if (bad_arguments(a, x)) return kNaN;
  if (x == 0) return 0;
  if (std::isinf(x)) return 1;
  if (x < a + 1) return prefactor(a, x) * lower_series(a, x);
  return 1 - prefactor(a, x) * upper_fraction(a, x);
}

double igamc(double a, double x) {
  if (bad_arguments(a, x)) return kNaN;
  if (x == 0) return 1;
  if (std::isinf(x)) return 0;
  if (x < a + 1) return 1 - prefactor(a, x) * lower_series(a, x);
  return prefactor(a, x) * upper_fraction(a, x);
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x * 0.70710678118654752440084436210485); }

double erfc(double x) { return std::erfc(x); }

}  // namespace qe::sts
