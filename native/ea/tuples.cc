// t-tuple (§6.3.5) and longest repeated substring (§6.3.6) estimates, both from one pass over
// the suffix array's LCP intervals.
#include <cmath>

#include "ea/ea.h"
#include "ea/search.h"
#include "ea/suffix_array.h"

namespace qe::ea {

namespace {

// The t-tuple estimate uses tuple lengths whose most common tuple occurs at least this often.
constexpr uint64_t kTupleCutoff = 35;

long double bounded(long double p, size_t n) {
  const long double pu = p + detail::kZAlphaL * sqrtl(p * (1.0L - p) / static_cast<long double>(n - 1));
  return pu > 1.0L ? 1.0L : pu;
}

}  // namespace

TupleEstimates tuple_estimates(const uint8_t* s, size_t n) {
  TupleEstimates out;
  const detail::TupleCounts c = detail::tuple_counts(s, n);
  const size_t v = c.longest_repeat;
  if (v == 0) return out;
  size_t u = 1;  // the first length whose most common tuple is rarer than the cutoff
  while (u <= v && c.max_count[u] >= kTupleCutoff) ++u;
  if (u > 1) {
    long double p_max = -1;
    for (size_t i = 1; i < u; ++i) {
      const long double p = static_cast<long double>(c.max_count[i]) / static_cast<long double>(n - i + 1);
      p_max = std::max(p_max, powl(p, 1.0L / static_cast<long double>(i)));
    }
    out.t_tuple = static_cast<double>(-log2l(bounded(p_max, n)));
  }
  if (v >= u) {
    long double p_max = 0;
    for (size_t i = u; i <= v; ++i) {
      const long double pairs_possible = static_cast<long double>(n - i) * static_cast<long double>(n - i + 1) / 2.0L;
      const long double p = static_cast<long double>(c.pairs[i]) / pairs_possible;
      p_max = std::max(p_max, powl(p, 1.0L / static_cast<long double>(i)));
    }
    out.lrs = static_cast<double>(-log2l(bounded(p_max, n)));
  }
  return out;
}

}  // namespace qe::ea
