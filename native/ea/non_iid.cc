// The non-IID track (§6.3): which estimators run on what, and how their results combine.
//
// As in NIST's tool: the literal symbols get every estimator except collision, Markov and
// compression, which are defined for binary data and run on the literal symbols only when
// there are exactly two of them. The bitstring gets all ten whenever the symbols are not
// binary, or always when assessing conditioned output (-c, which skips the literal track).
// H_original and H_bitstring are the minima over their tracks (capped at the symbol width
// and at 1); the assessed value is min(H_original, bits_per_symbol x H_bitstring).
#include <algorithm>
#include <functional>

#include "ea/ea.h"
#include "ea/parallel.h"

namespace qe::ea {

const char* const kEstimatorKeys[kEstimatorCount] = {
    "most_common_value", "collision", "markov", "compression", "t_tuple",
    "lrs",               "multi_mcw", "lag",    "multi_mmc",   "lz78y",
};

namespace {

using Slots = std::array<double, kEstimatorCount>;

double& slot(Slots& s, Estimator e) { return s[static_cast<size_t>(e)]; }

struct Job {
  double cost;  // expected nanoseconds, for ordering
  std::function<void()> run;
};

// Jobs for one track. Costs are rough nanoseconds per sample measured on 10^6 8-bit samples
// and their 8*10^6-bit bitstring (context tables on wide symbols dominate); they only order
// the jobs, longest first, so the pool's threads finish together.
void add_track(std::vector<Job>& jobs, const uint8_t* s, size_t n, int k, bool binary_estimators, Slots& out) {
  const auto size = static_cast<double>(n);
  const bool wide = k > 2;
  jobs.push_back({size * 16, [=, &out] {
                    const TupleEstimates t = tuple_estimates(s, n);
                    slot(out, Estimator::t_tuple) = t.t_tuple;
                    slot(out, Estimator::lrs) = t.lrs;
                  }});
  jobs.push_back({size * (wide ? 160 : 32), [=, &out] { slot(out, Estimator::multi_mmc) = multi_mmc_estimate(s, n, k); }});
  jobs.push_back({size * (wide ? 34 : 8), [=, &out] { slot(out, Estimator::lz78y) = lz78y_estimate(s, n, k); }});
  jobs.push_back({size * (wide ? 43 : 11), [=, &out] { slot(out, Estimator::lag) = lag_estimate(s, n, k); }});
  jobs.push_back({size * (wide ? 25 : 9), [=, &out] { slot(out, Estimator::multi_mcw) = multi_mcw_estimate(s, n, k); }});
  if (binary_estimators) {
    jobs.push_back({size * 3, [=, &out] { slot(out, Estimator::compression) = compression_estimate(s, n); }});
    jobs.push_back({size * 2, [=, &out] { slot(out, Estimator::collision) = collision_estimate(s, n); }});
    jobs.push_back({size * 1, [=, &out] { slot(out, Estimator::markov) = markov_estimate(s, n); }});
  }
  jobs.push_back({size * 1, [=, &out] { slot(out, Estimator::most_common_value) = most_common_value(s, n, k); }});
}

double minimum(const Slots& s, double cap) {
  double m = cap;
  for (double v : s)
    if (!std::isnan(v)) m = std::min(m, v);
  return m;
}

}  // namespace

NonIidResult assess_non_iid(const Samples& s, const NonIidOptions& options) {
  NonIidResult r;
  r.literal.fill(kNotApplicable);
  r.bitstring.fill(kNotApplicable);
  r.has_literal = !options.conditioned;
  r.has_bitstring = s.alphabet_size > 2 || options.conditioned;
  const size_t nbits = options.truncate ? std::min(s.bit_count(), kMinSamples) : s.bit_count();
  const PopulatedVector<uint8_t> bits = r.has_bitstring ? bitstring(s, nbits) : PopulatedVector<uint8_t>{};
  std::vector<Job> planned;
  if (r.has_bitstring) add_track(planned, bits.data(), bits.size(), 2, true, r.bitstring);
  if (r.has_literal)
    add_track(planned, s.symbols.data(), s.symbols.size(), s.alphabet_size, s.alphabet_size == 2, r.literal);
  std::stable_sort(planned.begin(), planned.end(), [](const Job& a, const Job& b) { return a.cost > b.cost; });
  std::vector<std::function<void()>> jobs;
  for (Job& j : planned) jobs.push_back(std::move(j.run));
  detail::run_jobs(jobs, std::max(1u, options.threads), options.progress);
  r.h_assessed = s.bits_per_symbol;
  if (r.has_bitstring) {
    r.h_bitstring = minimum(r.bitstring, 1.0);
    r.h_assessed = std::min(r.h_assessed, r.h_bitstring * s.bits_per_symbol);
  }
  if (r.has_literal) {
    r.h_original = minimum(r.literal, s.bits_per_symbol);
    r.h_assessed = std::min(r.h_assessed, r.h_original);
  }
  return r;
}

}  // namespace qe::ea
