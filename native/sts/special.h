// Special functions for the NIST SP 800-22 P-values, written for accuracy in the tails:
// the incomplete gamma functions keep ~1e-14 relative error even for large `a` (serial
// with m = 16 asks for a = 2^14) because their prefactor x^a e^-x / Gamma(a) is computed
// from a*(x/a - 1 - log(x/a)) and Stirling's correction instead of from a*log(x) - x -
// lgamma(a), which loses ~a*eps to cancellation.
//
// All functions are pure and thread-safe (no lgamma/signgam global).
#pragma once

namespace qe::sts {

// Regularized upper incomplete gamma Q(a, x) = Gamma(a, x) / Gamma(a), a > 0, x >= 0.
// (cephes' igamc, which the NIST reference calls.) Returns NaN for a <= 0, x < 0 or NaN
// input; Q(a, 0) = 1, Q(a, +inf) = 0.
double igamc(double a, double x);

// Regularized lower incomplete gamma P(a, x) = 1 - Q(a, x), accurate when small.
double igam(double a, double x);

// Standard normal distribution function Phi(x) = P(Z <= x), accurate in both tails
// (Phi(-40) ~ 3.7e-350 underflows to 0; Phi(-30) ~ 4.9e-198 is returned with full
// relative precision).
double normal_cdf(double x);

// Complementary error function; std::erfc, named here so every test takes its special
// functions from one place.
double erfc(double x);

// log(Gamma(x)) for x > 0, without touching the global `signgam`.
double log_gamma(double x);

}  // namespace qe::sts
