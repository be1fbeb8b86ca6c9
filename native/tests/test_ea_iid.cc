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
  // With 5 shuffles or fewer no statistic can settle, so the first shuffle decides "failed"
  // (or the chi-square test, failing first on the second thread, ends the shuffling).
  CHECK(r.shuffles_run <= std::min(shuffles, 1u));
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

qe::ea::IidResult shuffled(const std::vector<uint8_t>& data, unsigned threads, unsigned shuffles = 10000,
                           qe::ea::IidOptions opt = {}) {
  const qe::ea::Samples s = qe::ea::prepare(data.data(), data.size(), 0);
  opt.threads = threads;
  opt.shuffles = shuffles;
  return qe::ea::assess_iid(s, opt);
}

// The verdict lines of NIST's ea_iid output ("Chi square tests: Passed").
[[maybe_unused]] bool nist_passed(const std::string& name, const std::string& test) {  // unused under ASan
  const std::string text = qe::check::read_file(qe::check::vector_path("sp800-90b/" + name + ".iid.res"));
  if (text.find(test + ": Passed") != std::string::npos) return true;
  if (text.find(test + ": Failed") != std::string::npos) return false;
  qe::check::fail(__FILE__, __LINE__, name + ": no verdict for " + test);
  return false;
}

// A random walk mod 256, steps -3..3: every sample is near the one before, which the
// chi-square independence test sees at once (and no shuffle comes near its statistics).
std::vector<uint8_t> random_walk(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  unsigned x = 0;
  for (auto& s : v) s = static_cast<uint8_t>(x += rng() % 7 + 253);  // mod 256: -3..3
  return v;
}

// Uniform 4-bit samples, each a copy of the one 8 back with probability 1/20: adjacent
// samples stay independent and repeats stay short, so the chi-square and LRS tests pass,
// but periodicity(8) is far above any shuffle's (27 standard deviations on 20,000 samples).
std::vector<uint8_t> echo_at_lag_8(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i >= 8 && rng() % 20 == 0 ? v[i - 8] : rng() % 16);
  return v;
}

std::vector<uint8_t> fixed_seed(uint8_t b) { return std::vector<uint8_t>(32, b); }

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
  // 10,000 shuffles on IID data. (Its chi-square test fails, which alone would end the
  // shuffling: run the permutation test to its own verdict as the tool does.)
  qe::ea::IidOptions full;
  full.stop_on_failed_tests = false;
  const qe::ea::IidResult r = shuffled(read_samples("rand8_short.bin"), 2, 10000, full);
  CHECK(r.permutation_passed);
  CHECK(r.permutation_decided);
  CHECK(r.shuffles_run < 10000);
  for (const auto& c : r.counts) CHECK(c[0] + c[1] > 5 && c[1] + c[2] > 5);
}

QE_TEST(ea_iid_permutation_test_rejects_a_ramp) {
  // 0, 1, 2, ... 255, 0, 1, ...: every sample follows from the one before. No shuffle comes
  // near its run and periodicity statistics, so they stay unsettled through every shuffle
  // (300 here rather than 10,000, to keep the test short) and the test fails.
  std::vector<uint8_t> ramp(4096);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<uint8_t>(i);
  qe::ea::IidOptions full;
  full.stop_on_failed_tests = false;  // the chi-square test fails too
  full.stop_on_failed_statistic = false;
  const qe::ea::IidResult r = shuffled(ramp, 2, 300, full);
  CHECK(!r.permutation_passed);
  CHECK(r.permutation_decided);
  CHECK(!r.passed);
  CHECK_EQ(r.shuffles_run, 300u);
  CHECK(r.counts[8][1] + r.counts[8][2] <= 5);  // periodicity(1): no shuffle repeats as often
  CHECK(r.outcomes[8] == qe::ea::StatisticOutcome::failed);
}

QE_TEST(ea_iid_failed_chi_square_test_ends_the_shuffling) {
  // Non-IID data, the common case for a raw noise source: the chi-square test rejects IID,
  // so no shuffle is needed for the verdict (NIST's tool would run all 10,000, each with a
  // bzip2 compression, since the data's statistics never settle).
  const std::vector<uint8_t> walk = random_walk(100000, 1);
  const qe::ea::IidResult one = shuffled(walk, 1);  // the test runs before the shuffles
  CHECK(!one.chi_square_passed);
  CHECK(!one.passed);
  CHECK_EQ(one.shuffles_run, 0u);
  CHECK(!one.permutation_decided);
  for (auto o : one.outcomes) CHECK(o == qe::ea::StatisticOutcome::open);
  // With two threads the first shuffles while the second runs the test: it stops on the
  // test's result, a few shuffles in (a 10^5-sample shuffle with its compression costs far
  // more than the test; 1,000 leaves room for any scheduling).
  const qe::ea::IidResult two = shuffled(walk, 2);
  CHECK(!two.passed);
  CHECK(two.shuffles_run < 1000);
  CHECK(!two.permutation_decided);
}

QE_TEST(ea_iid_statistic_that_cannot_settle_ends_the_shuffling) {
  // periodicity(8) of this data is above every shuffle's: after N - 5 shuffles it cannot
  // reach 6 at or above, so it has failed and the last 5 shuffles are not run.
  const std::vector<uint8_t> echo = echo_at_lag_8(20000, 2);
  qe::ea::IidOptions opt;
  opt.seed = fixed_seed(3);
  const qe::ea::IidResult r = shuffled(echo, 1, 300, opt);
  CHECK(r.chi_square_passed);
  CHECK(r.lrs_passed);
  CHECK_EQ(r.shuffles_run, 295u);
  CHECK(r.outcomes[10] == qe::ea::StatisticOutcome::failed);  // periodicity(8)
  CHECK(r.permutation_decided);
  CHECK(!r.permutation_passed);
  CHECK(!r.passed);
}

QE_TEST(ea_iid_early_stop_reaches_the_outcomes_of_the_full_loop) {
  // On the same shuffles (one thread, one seed), stopping early changes no statistic's
  // outcome, no settled statistic's counts and no verdict: IID data (every statistic
  // settles), the echo (periodicity(8) fails) and the walk (the chi-square test fails).
  const std::vector<std::vector<uint8_t>> inputs = {read_samples("rand8_short.bin"), echo_at_lag_8(20000, 2),
                                                    random_walk(20000, 4)};
  for (const auto& data : inputs) {
    qe::ea::IidOptions early, full;
    early.seed = full.seed = fixed_seed(5);
    full.stop_on_failed_statistic = full.stop_on_failed_tests = false;
    const qe::ea::IidResult a = shuffled(data, 1, 400, early), b = shuffled(data, 1, 400, full);
    CHECK_EQ(a.passed, b.passed);
    CHECK(a.shuffles_run <= b.shuffles_run);
    CHECK(b.permutation_decided);
    if (a.permutation_decided) CHECK_EQ(a.permutation_passed, b.permutation_passed);
    for (size_t j = 0; j < a.outcomes.size(); ++j) {
      if (a.outcomes[j] == qe::ea::StatisticOutcome::open) continue;
      CHECK(a.outcomes[j] == b.outcomes[j]);
      if (a.outcomes[j] == qe::ea::StatisticOutcome::passed) CHECK(a.counts[j] == b.counts[j]);
    }
  }
}

#if !defined(__SANITIZE_ADDRESS__)  // a minute under ASan
QE_TEST(ea_iid_verdicts_match_nists_on_its_files) {
  // NIST's verdicts for its six IID reference files: chi-square and LRS exactly; the
  // permutation test where it comes to a verdict (it does on IID data, every statistic
  // settling); and the track's verdict, which stopping early must never change.
  for (const char* name : {"rand8_short", "truerand_1bit", "truerand_4bit", "truerand_8bit", "biased-random-bytes", "normal"}) {
    const qe::ea::IidResult r = shuffled(read_samples(std::string(name) + ".bin"), 2);
    const bool chi = nist_passed(name, "Chi square tests"), lrs = nist_passed(name, "Length of longest repeated substring test"),
               perm = nist_passed(name, "IID permutation tests");
    CHECK_EQ(r.chi_square_passed, chi);
    CHECK_EQ(r.lrs_passed, lrs);
    if (r.permutation_decided) CHECK_EQ(r.permutation_passed, perm);
    CHECK_EQ(r.passed, chi && lrs && perm);
    CHECK(r.permutation_decided || !(chi && lrs));  // undecided only when the verdict was settled
  }
}
#endif
