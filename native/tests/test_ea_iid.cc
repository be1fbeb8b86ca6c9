// The IID track against the outputs of NIST's ea_iid: every deterministic value (most common
// value estimates, chi-square statistics, degrees of freedom and P-values, the longest
// repeated substring test and the 19 unpermuted statistics) to 1e-6. The shuffle counts are
// random by design; the permutation test is checked on its verdicts instead.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ea/ea.h"
#include "tests/check.h"
#include "tests/ea_reference.h"

using qe::check::read_ea_reference;
using qe::check::read_samples;

namespace {

constexpr double kTolerance = 1e-6;

void near(const std::string& what, double ours, double nist) {
  // Relative for the big statistics (covariance sums reach 10^10), absolute below 1.
  const double tol = kTolerance * std::max(1.0, std::fabs(nist));
  if (!(std::fabs(ours - nist) <= tol))
    qe::check::fail(__FILE__, __LINE__, what + ": " + qe::check::show(ours) + " vs NIST " + qe::check::show(nist));
}

// With shuffles, the chi-square and LRS tests run on the second thread while the first
// shuffles (threads >= 2) or before the shuffles (one thread): the values must not change.
void check_file(const std::string& name, unsigned threads = 1, unsigned shuffles = 0) {
  const auto ref = read_ea_reference(name + ".iid.res");
  const std::vector<uint8_t> data = read_samples(name + ".bin");
  const qe::ea::Samples s = qe::ea::prepare(data.data(), data.size(), 0);
  qe::ea::IidOptions opt;
  opt.threads = threads;
  opt.shuffles = shuffles;  // verdicts are tested below
  const qe::ea::IidResult r = qe::ea::assess_iid(s, opt);
  CHECK_EQ(r.shuffles_run, shuffles);
  const std::string n = name + " (" + std::to_string(threads) + " threads) ";
  near(n + "literal MCV", r.most_common_literal, ref.at("Literal most_common_value"));
  if (ref.has("Bitstring most_common_value")) {
    near(n + "bitstring MCV", r.most_common_bitstring, ref.at("Bitstring most_common_value"));
    near(n + "H_bitstring", r.h_bitstring, ref.at("H_bitstring"));
  } else {
    CHECK(std::isnan(r.h_bitstring));
  }
  near(n + "H_original", r.h_original, ref.at("H_original"));
  near(n + "assessed", r.h_assessed, ref.at("H_assessed"));
  near(n + "independence T", r.independence.statistic, ref.at("Chi square independence: T"));
  CHECK_EQ(static_cast<double>(r.independence.df), ref.at("Chi square independence: df"));
  near(n + "independence P", r.independence.p_value, ref.at("Chi square independence: P-value"));
  near(n + "goodness T", r.goodness_of_fit.statistic, ref.at("Chi square goodness of fit: T"));
  CHECK_EQ(static_cast<double>(r.goodness_of_fit.df), ref.at("Chi square goodness of fit: df"));
  near(n + "goodness P", r.goodness_of_fit.p_value, ref.at("Chi square goodness of fit: P-value"));
  near(n + "P_col", r.lrs_collision_probability, ref.at("Literal Longest Repeated Substring results: P_col"));
  CHECK_EQ(static_cast<double>(r.lrs_length), ref.at("Literal Longest Repeated Substring results: W"));
  near(n + "Pr(X >= 1)", r.lrs_probability, ref.at("Literal Longest Repeated Substring results: Pr(X >= 1)"));
  for (int i = 0; i < qe::ea::kPermutationStatistics; ++i) {
    const std::string key = std::string("Permutation testing: Unpermuted result ") + qe::ea::kPermutationStatisticNames[i];
    near(n + qe::ea::kPermutationStatisticNames[i], r.unpermuted[static_cast<size_t>(i)], ref.at(key));
  }
}

qe::ea::IidResult shuffled(const std::vector<uint8_t>& data, unsigned threads, unsigned shuffles = 10000) {
  const qe::ea::Samples s = qe::ea::prepare(data.data(), data.size(), 0);
  qe::ea::IidOptions opt;
  opt.threads = threads;
  opt.shuffles = shuffles;
  return qe::ea::assess_iid(s, opt);
}

// The excursion and run statistics (§5.1.1-6) by their definitions, one element at a time: the number of
// runs and the longest run of the bits bit(0) .. bit(length - 1).
template <typename Bit>
std::pair<double, double> runs_by_definition(size_t length, Bit bit) {
  if (length == 0) return {0, 0};
  double runs = 1, longest = 1, run = 1;
  for (size_t i = 1; i < length; ++i) {
    if (bit(i) == bit(i - 1)) {
      longest = std::max(longest, ++run);
    } else {
      ++runs;
      run = 1;
    }
  }
  return {runs, longest};
}

// Non-binary symbols: the excursion (statistic 0), directional runs (1-3) and runs about
// the median (4-5).
void runs_match_their_definitions(const std::string& what, const std::vector<uint8_t>& v, double median) {
  const size_t n = v.size();
  double sum = 0;
  for (uint8_t x : v) sum += x;
  const double mean = sum / static_cast<double>(n);
  const auto t = qe::ea::permutation_statistics(v.data(), v.data(), n, 256, mean, median);
  // The excursion (§5.1.1) exactly as the tool computes it, a running double sum.
  double running = 0, excursion = 0;
  for (size_t i = 0; i < n; ++i) {
    running += v[i];
    excursion = std::max(excursion, std::fabs(running - static_cast<double>(i + 1) * mean));
  }
  CHECK_EQ(t[0], excursion);
  const auto up = [&](size_t i) { return v[i] <= v[i + 1]; };
  const auto [runs, longest] = runs_by_definition(n - 1, up);
  double ups = 0;
  for (size_t i = 0; i + 1 < n; ++i) ups += up(i);
  CHECK_EQ(t[1], runs);
  CHECK_EQ(t[2], longest);
  CHECK_EQ(t[3], std::max(ups, static_cast<double>(n - 1) - ups));
  const auto [median_runs, median_longest] = runs_by_definition(n, [&](size_t i) { return v[i] < median; });
  if (t[4] != median_runs || t[5] != median_longest) qe::check::fail(__FILE__, __LINE__, what + ": median runs differ");
}

}  // namespace

QE_TEST(ea_iid_run_statistics_match_their_definitions) {
  // Lengths around the 64-bit words the runs are counted in, runs that cross words, one run
  // over everything, and medians of 0, a half and 255.
  std::mt19937 rng(5);
  for (size_t n : {2, 3, 63, 64, 65, 127, 128, 129, 1000, 4099}) {
    std::vector<uint8_t> v(n);
    for (auto& x : v) x = static_cast<uint8_t>(rng() % 7);
    runs_match_their_definitions("random length " + std::to_string(n), v, 3);
    runs_match_their_definitions("random length " + std::to_string(n) + ", median 2.5", v, 2.5);
  }
  std::vector<uint8_t> blocks(1000);
  for (size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<uint8_t>((i / 150) % 2 ? 200 : 10);
  runs_match_their_definitions("runs of 150", blocks, 100);
  runs_match_their_definitions("constant", std::vector<uint8_t>(300, 9), 9);
  std::vector<uint8_t> mostly_zero(500, 0);
  for (size_t i = 0; i < mostly_zero.size(); i += 3) mostly_zero[i] = 4;
  runs_match_their_definitions("median 0", mostly_zero, 0);
  std::vector<uint8_t> high(300, 255);
  high[7] = 254;
  runs_match_their_definitions("median 255", high, 255);
}

QE_TEST(ea_iid_short_file_deterministic_values) {
  check_file("rand8_short");
  check_file("rand8_short", 1, 3);
  check_file("rand8_short", 2, 4);
}

#if !defined(__SANITIZE_ADDRESS__)  // minutes under ASan; the short file covers the code there
QE_TEST(ea_iid_million_sample_deterministic_values) {
  for (const char* name : {"truerand_1bit", "truerand_4bit", "truerand_8bit", "biased-random-bytes", "normal"}) {
    check_file(name);
    check_file(name, 2, 2);
  }
}
#endif

QE_TEST(ea_iid_permutation_test_passes_nists_iid_sample_and_stops_early) {
  // NIST's tool passes this file; the counting rule settles every statistic long before
  // 10,000 shuffles on IID data.
  const qe::ea::IidResult r = shuffled(read_samples("rand8_short.bin"), 2);
  CHECK(r.permutation_passed);
  CHECK(r.shuffles_run < 10000);
  for (const auto& c : r.counts) CHECK(c[0] + c[1] > 5 && c[1] + c[2] > 5);
}

QE_TEST(ea_iid_permutation_test_rejects_a_ramp) {
  // 0, 1, 2, ... 255, 0, 1, ...: every sample follows from the one before. No shuffle comes
  // near its run and periodicity statistics, so they stay unsettled through every shuffle
  // (300 here rather than 10,000, to keep the test short) and the test fails.
  std::vector<uint8_t> ramp(4096);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<uint8_t>(i);
  const qe::ea::IidResult r = shuffled(ramp, 2, 300);
  CHECK(!r.permutation_passed);
  CHECK(!r.passed);
  CHECK_EQ(r.shuffles_run, 300u);
  CHECK(r.counts[8][1] + r.counts[8][2] <= 5);  // periodicity(1): no shuffle repeats as often
}
