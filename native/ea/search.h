// Internal helpers shared by the estimators (not part of the public API).
#pragma once

#include <cmath>
#include <functional>

namespace qe::ea::detail {

// The 99.5th percentile of the standard normal distribution: every upper bound in
// SP 800-90B is p + Z_alpha * sigma with alpha = 0.005.
inline constexpr double kZAlpha = 2.5758293035489008;
inline constexpr long double kZAlphaL = 2.575829303548900384158L;

// Upper confidence bound on a proportion p measured over n samples, capped at 1.
inline double upper_bound(double p, double n) { return std::fmin(1.0, p + kZAlpha * std::sqrt(p * (1.0 - p) / (n - 1.0))); }

// Bisection for f(p) == target on [lo, hi], f non-increasing. Stops when f(p) equals the
// target to a few ulps, or when the interval cannot shrink further (then returns the upper
// end, the conservative choice: a larger p means less entropy). Returns `on_failure` when
// f turns out not to be monotone on the interval, as SP 800-90B's searches prescribe.
double bisect_decreasing(const std::function<double(double)>& f, double target, double lo, double hi,
                         double on_failure);

}  // namespace qe::ea::detail
