// The binary searches of §6.3.4 (compression) and §6.3.7-10 (P_local of the predictors).
#include "ea/search.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace qe::ea::detail {

namespace {

// Equal to within a relative DBL_EPSILON, or four units in the last place: as close as two
// doubles computed along different paths can be expected to get.
bool close_enough(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return false;
  if (a == b) return true;
  if (std::isinf(a) || std::isinf(b)) return false;
  const double diff = std::fabs(a - b);
  const double big = std::fmax(std::fabs(a), std::fabs(b));
  const double small = std::fmin(std::fabs(a), std::fabs(b));
  if (small < DBL_MIN || diff < DBL_MIN || big * DBL_EPSILON < DBL_MIN) return diff <= DBL_MIN;
  if (diff <= big * DBL_EPSILON) return true;
  if (std::signbit(a) != std::signbit(b)) return false;
  double as = std::fabs(a), bs = std::fabs(b);
  uint64_t ai, bi;
  std::memcpy(&ai, &as, sizeof ai);
  std::memcpy(&bi, &bs, sizeof bi);
  return (ai > bi ? ai - bi : bi - ai) <= 4;
}

bool between(double x, double a, double b) { return a > b ? (x >= b && x <= a) : (x >= a && x <= b); }

}  // namespace

double bisect_decreasing(const std::function<double(double)>& f, double target, double lo, double hi,
                         double on_failure) {
  const double domain_lo = lo, domain_hi = hi;
  double value_lo = INFINITY, value_hi = -INFINITY;  // f at the bounds (unknown yet)
  double p = (lo + hi) / 2.0;
  double v = f(p);
  for (int step = 0; step < 1076; ++step) {  // 1076 halvings exhaust every double in [0, 1]
    if (close_enough(v, target)) return p;
    if (target < v) {
      lo = p;
      value_lo = v;
    } else {
      hi = p;
      value_hi = v;
    }
    if (lo >= hi) return std::fmin(std::fmax(lo, hi), domain_hi);
    if (!between(lo, domain_lo, domain_hi) || !between(hi, domain_lo, domain_hi)) return on_failure;
    if (!between(target, value_lo, value_hi)) return on_failure;
    const double last = p;
    p = (lo + hi) / 2.0;
    if (!(p > lo && p < hi) || p == last) return hi;
    v = f(p);
    if (!between(v, value_lo, value_hi)) return hi;
  }
  return p;
}

}  // namespace qe::ea::detail
