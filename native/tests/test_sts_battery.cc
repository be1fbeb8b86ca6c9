// The STS battery: NIST's per-sub-test statistics (histogram, uniformity P_T, proportion),
// the criteria of product.md §5.2 on hand-made P-value sets, repetition detection,
// threading, cancellation, and the battery on NIST's own data against NIST's P-values.
//
// Every expected number below is computed by hand in the comments (closed forms), never
// taken from this code's output.
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "sts/battery.h"
#include "sts/sts.h"
#include "tests/check.h"
#include "tests/reference.h"

using namespace qe::sts;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// P-values in the middle of each bin: `counts[b]` values at 0.1 b + 0.05.
std::vector<double> values_with_histogram(const std::array<size_t, 10>& counts) {
  std::vector<double> v;
  for (size_t b = 0; b < 10; ++b)
    for (size_t i = 0; i < counts[b]; ++i) v.push_back(0.1 * static_cast<double>(b) + 0.05);
  return v;
}

// A P-value table (rows = streams) built column by column.
struct Table {
  std::vector<SubTest> columns;
  std::vector<TestId> tests;
  std::vector<std::vector<double>> cols;  // per column, per stream

  void add(TestId t, int index, std::vector<double> values) {
    if (tests.empty() || tests.back() != t) tests.push_back(t);
    columns.push_back({t, index, std::to_string(index)});
    cols.push_back(std::move(values));
  }
  std::vector<double> rows(size_t streams) const {
    std::vector<double> out(streams * cols.size());
    for (size_t s = 0; s < streams; ++s)
      for (size_t c = 0; c < cols.size(); ++c) out[s * cols.size() + c] = cols[c][s];
    return out;
  }
  BatterySummary summarize(size_t streams) const {
    const std::vector<double> pv = rows(streams);
    return qe::sts::summarize(columns, tests, pv.data(), streams, {});
  }
};

// Deterministic pseudo-random bytes (splitmix64) for synthetic streams.
std::vector<uint8_t> pseudo_random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  uint64_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    out[i] = static_cast<uint8_t>((z ^ (z >> 31)) >> 56);
  }
  return out;
}

int get_bit(const std::vector<uint8_t>& b, size_t i) { return (b[i >> 3] >> (7 - (i & 7))) & 1; }
void set_bit(std::vector<uint8_t>& b, size_t i, int v) {
  const auto mask = static_cast<uint8_t>(0x80u >> (i & 7));
  b[i >> 3] = static_cast<uint8_t>(v ? (b[i >> 3] | mask) : (b[i >> 3] & ~mask));
}

std::vector<uint8_t> pack(const Bits& bits) {
  std::vector<uint8_t> out((bits.n + 7) / 8);
  for (size_t i = 0; i < bits.n; ++i) set_bit(out, i, bits.bit(i));
  return out;
}

}  // namespace

// SP 800-22 §4.2.1: the acceptable proportion is p̂ ± 3 sqrt(p̂ (1 - p̂) / K), p̂ = 0.99.
// K = 100:  sqrt(0.0099 / 100)  = 0.00994987437, x3 = 0.0298496231 -> 0.9601503769
// K = 1000: sqrt(0.0099 / 1000) = 0.00314642654, x3 = 0.0094392796 -> 0.9805607204
// K = 8828 (the provider's example run, 8742 passes + 86 fails):
//           sqrt(0.0099 / 8828) = 0.00105898...,  x3 = 0.0031769303 -> 0.9868230697
QE_TEST(min_pass_proportion_matches_sp800_22) {
  CHECK_NEAR(min_pass_proportion(100), 0.9601503769, 1e-10);
  CHECK_NEAR(min_pass_proportion(1000), 0.9805607204, 1e-10);
  CHECK_NEAR(min_pass_proportion(8828), 0.9868230697, 1e-10);
  CHECK(std::isnan(min_pass_proportion(0)));
}

QE_TEST(histogram_bins_are_nist_tenths) {
  CHECK_EQ(histogram_bin(0.0), 0);
  CHECK_EQ(histogram_bin(0.0999999), 0);
  CHECK_EQ(histogram_bin(0.1), 1);
  CHECK_EQ(histogram_bin(0.95), 9);
  CHECK_EQ(histogram_bin(1.0), 9);  // assess: pos == 10 -> pos--
}

// chi2 = sum (C_i - 10)^2 / 10 for K = 100, P_T = Q(9/2, chi2/2). For half-integer a the
// regularized upper incomplete gamma has the closed form
//   Q(4.5, x) = erfc(sqrt x) + e^-x (x^0.5/G(1.5) + x^1.5/G(2.5) + x^2.5/G(3.5) + x^3.5/G(4.5)).
//  {12,8,10,11,9,10,7,13,10,10}: chi2 = (4+4+0+1+1+0+9+9+0+0)/10 = 2.8 -> Q(4.5,1.4)  = 0.97169915710
//  {20,10,10,10,10,10,10,10,5,5}: chi2 = (100+25+25)/10 = 15         -> Q(4.5,7.5)  = 0.09093597658
//  {25,10,10,10,10,10,10,5,5,5}:  chi2 = (225+3*25)/10 = 30          -> Q(4.5,15)   = 4.3872177098e-4
//  {30,10,10,10,10,10,5,5,5,5}:   chi2 = (400+4*25)/10 = 50          -> Q(4.5,25)   = 1.0772382023e-7
//  all 100 in one bin:            chi2 = (90^2 + 9*10^2)/10 = 900    -> Q(4.5,450)  = 6.1868010324e-188
QE_TEST(uniformity_p_value_on_known_histograms) {
  CHECK_NEAR(uniformity_p_value({12, 8, 10, 11, 9, 10, 7, 13, 10, 10}), 0.97169915710, 1e-10);
  CHECK_NEAR(uniformity_p_value({20, 10, 10, 10, 10, 10, 10, 10, 5, 5}), 0.09093597658, 1e-10);
  CHECK_NEAR(uniformity_p_value({25, 10, 10, 10, 10, 10, 10, 5, 5, 5}), 4.3872177098e-4, 1e-13);
  CHECK_NEAR(uniformity_p_value({30, 10, 10, 10, 10, 10, 5, 5, 5, 5}) / 1.0772382023e-7, 1.0, 1e-8);
  CHECK_NEAR(uniformity_p_value({0, 0, 0, 0, 0, 100, 0, 0, 0, 0}) / 6.1868010324e-188, 1.0, 1e-8);
  CHECK_NEAR(uniformity_p_value({10, 10, 10, 10, 10, 10, 10, 10, 10, 10}), 1.0, 1e-15);
}

// assess computes the expected count as `sampleSize / 10` in integer arithmetic: for K = 62
// (a typical random excursions sample) E = 6, not 6.2.
//  {7,6,6,6,6,6,6,6,6,7}: chi2 = (1 + 0*8 + 1)/6 = 1/3 -> Q(4.5, 1/6) = 0.99999474733
// Fewer than 10 values: E = 0, NIST prints "----": NaN.
QE_TEST(uniformity_uses_nists_integer_expected_count) {
  CHECK_NEAR(uniformity_p_value({7, 6, 6, 6, 6, 6, 6, 6, 6, 7}), 0.99999474733, 1e-10);
  CHECK(std::isnan(uniformity_p_value({9, 0, 0, 0, 0, 0, 0, 0, 0, 0})));
}

// Frequency: 100 sequences with P = (s + 0.5)/100: ten per bin, one below 0.01 (s = 0).
// Random excursions: applicable for 40 of the 100 sequences only, P = (s + 0.5)/40 >= 0.0125.
//   nist_passes = 99 + 40*8 = 419, nist_fails = 1, K = 420, rate = 419/420 = 0.99761904762
//   min for K = 420: 0.99 - 3 sqrt(0.0099/420) = 0.97543487531 -> nist_all_passed
//   uniformity: frequency chi2 = 0 -> P_T = 1, passes; random excursions 40 < 55: left out.
QE_TEST(criteria_on_a_good_batch_leave_random_excursions_out) {
  Table t;
  std::vector<double> freq;
  for (int s = 0; s < 100; ++s) freq.push_back((s + 0.5) / 100);
  t.add(TestId::frequency, 0, freq);
  for (int x = 0; x < 8; ++x) {
    std::vector<double> re(100, kNaN);
    for (int s = 0; s < 40; ++s) re[static_cast<size_t>(s)] = (s + 0.5) / 40;
    t.add(TestId::random_excursions, x, re);
  }
  const BatterySummary sum = t.summarize(100);
  const Criteria& c = sum.criteria;
  CHECK_EQ(c.nist_passes, size_t{419});
  CHECK_EQ(c.nist_fails, size_t{1});
  CHECK_NEAR(c.nist_success_rate, 0.99761904762, 1e-10);
  CHECK_NEAR(c.min_pass_proportion, 0.97543487531, 1e-10);
  CHECK(c.nist_all_passed);
  CHECK_EQ(c.uniformity_passes, size_t{1});
  CHECK_EQ(c.uniformity_fails, size_t{0});
  CHECK_EQ(c.uniformity_excluded, size_t{1});
  CHECK_NEAR(c.uniformity_success_rate, 1.0, 0);
  CHECK(c.uniformity_all_passed);
  CHECK(c.tests_passed);
  CHECK(!c.strictly_failing);
  CHECK(!c.loosely_failing);
  CHECK(sum.uniformity[1].verdict == UniformityVerdict::excluded);
  CHECK(sum.uniformity[1].reason.find("40 of 100") != std::string::npos);
  CHECK_EQ(sum.sub_tests[0].sample_size, size_t{100});
  CHECK_EQ(sum.sub_tests[0].passed, size_t{99});
  CHECK_EQ(sum.sub_tests[1].sample_size, size_t{40});
  CHECK_EQ(sum.sub_tests[0].histogram[3], size_t{10});
  CHECK_NEAR(sum.sub_tests[0].uniformity_p, 1.0, 1e-15);
}

// The defect the spec describes: the same sequence 100 times. Every P-value is 0.5, so all
// 300 individual results pass (rate 1 >= 0.99 - 3 sqrt(0.0099/300) = 0.97276...), while
// each histogram has all 100 in bin 6: chi2 = 900, P_T = 6.19e-188 < 0.0001: all three
// tests fail uniformity. tests_passed (share criterion), loosely but not strictly failing.
QE_TEST(criteria_identical_sequences_pass_share_fail_uniformity) {
  Table t;
  t.add(TestId::frequency, 0, std::vector<double>(100, 0.5));
  t.add(TestId::runs, 0, std::vector<double>(100, 0.5));
  t.add(TestId::serial, 0, std::vector<double>(100, 0.5));
  t.add(TestId::serial, 1, std::vector<double>(100, 0.5));
  const Criteria c = t.summarize(100).criteria;
  CHECK_EQ(c.nist_passes, size_t{400});
  CHECK_EQ(c.nist_fails, size_t{0});
  CHECK(c.nist_all_passed);
  CHECK_EQ(c.uniformity_passes, size_t{0});
  CHECK_EQ(c.uniformity_fails, size_t{3});
  CHECK_NEAR(c.uniformity_success_rate, 0.0, 0);
  CHECK(!c.uniformity_all_passed);
  CHECK(c.tests_passed);
  CHECK(c.loosely_failing);
  CHECK(!c.strictly_failing);
}

// A biased source: every P-value 0.001: 0 passes, 200 fails; histograms all in bin 1.
QE_TEST(criteria_biased_source_fails_both) {
  Table t;
  t.add(TestId::frequency, 0, std::vector<double>(100, 0.001));
  t.add(TestId::block_frequency, 0, std::vector<double>(100, 0.001));
  const BatterySummary s = t.summarize(100);
  CHECK_EQ(s.criteria.nist_passes, size_t{0});
  CHECK_EQ(s.criteria.nist_fails, size_t{200});
  CHECK(!s.criteria.nist_all_passed);
  CHECK_EQ(s.criteria.uniformity_fails, size_t{2});
  CHECK(!s.criteria.tests_passed);
  CHECK(s.criteria.strictly_failing);
  CHECK(s.criteria.loosely_failing);
  CHECK_EQ(s.proportion_flags, size_t{2});
  CHECK_EQ(s.uniformity_flags, size_t{2});
}

// A source that fails only some tests, judged per test over all of a test's sub-tests:
//  frequency: histogram {10 x 10}: chi2 = 0, P_T = 1 -> uniform;
//  runs:      histogram {30,10,10,10,10,10,5,5,5,5}: P_T = 1.08e-7 -> fails;
//  serial:    sub-test 1 uniform, sub-test 2 {25,10,10,10,10,10,10,5,5,5}: P_T = 4.39e-4 >=
//             0.0001 -> the test is uniform (every sub-test >= 0.0001).
// Mid-bin values (0.05, 0.15, ...) are all >= 0.01: nist_passes = 400, fails = 0.
//  uniformity_passes = 2 (frequency, serial), fails = 1 (runs), rate 2/3.
QE_TEST(criteria_count_uniformity_per_test) {
  Table t;
  t.add(TestId::frequency, 0, values_with_histogram({10, 10, 10, 10, 10, 10, 10, 10, 10, 10}));
  t.add(TestId::runs, 0, values_with_histogram({30, 10, 10, 10, 10, 10, 5, 5, 5, 5}));
  t.add(TestId::serial, 0, values_with_histogram({12, 8, 10, 11, 9, 10, 7, 13, 10, 10}));
  t.add(TestId::serial, 1, values_with_histogram({25, 10, 10, 10, 10, 10, 10, 5, 5, 5}));
  const BatterySummary s = t.summarize(100);
  CHECK_EQ(s.criteria.nist_passes, size_t{400});
  CHECK_EQ(s.criteria.uniformity_passes, size_t{2});
  CHECK_EQ(s.criteria.uniformity_fails, size_t{1});
  CHECK_NEAR(s.criteria.uniformity_success_rate, 2.0 / 3.0, 1e-15);
  CHECK(!s.criteria.uniformity_all_passed);
  CHECK(s.uniformity[0].verdict == UniformityVerdict::passed);
  CHECK(s.uniformity[1].verdict == UniformityVerdict::failed);
  CHECK(s.uniformity[2].verdict == UniformityVerdict::passed);
  CHECK_NEAR(s.sub_tests[1].uniformity_p / 1.0772382023e-7, 1.0, 1e-8);
  CHECK_EQ(s.uniformity_flags, size_t{1});
}

// assess's proportion check: flagged when the pass count is outside
// [int((p̂ - 3 sqrt(p̂ a / K)) K), int((p̂ + 3 sqrt(p̂ a / K)) K)].
//  K = 100:  [int(96.015), int(101.985)] = [96, 101]: 96 passes ok, 95 flagged.
//  K = 1000: [int(980.561), int(999.439)] = [980, 999]: 980 ok, 979 flagged, and 1000 of
//            1000 flagged as too many (NIST's two-sided range).
QE_TEST(proportion_check_uses_nists_truncated_bounds) {
  auto summary_for = [](size_t k, size_t fails) {
    std::vector<double> v(k, 0.5);
    for (size_t i = 0; i < fails; ++i) v[i] = 0.005;
    Table t;
    t.add(TestId::frequency, 0, v);
    return t.summarize(k).sub_tests[0];
  };
  CHECK(summary_for(100, 4).proportion_ok);
  CHECK(!summary_for(100, 5).proportion_ok);
  CHECK(summary_for(1000, 20).proportion_ok);
  CHECK(!summary_for(1000, 21).proportion_ok);
  CHECK(!summary_for(1000, 0).proportion_ok);
  CHECK(summary_for(1000, 1).proportion_ok);
}

// Not applicable everywhere: nothing to count, no criterion can pass.
QE_TEST(criteria_with_no_results) {
  Table t;
  t.add(TestId::universal, 0, std::vector<double>(3, kNaN));
  const Criteria c = t.summarize(3).criteria;
  CHECK_EQ(c.nist_passes + c.nist_fails, size_t{0});
  CHECK(std::isnan(c.nist_success_rate));
  CHECK(!c.nist_all_passed);
  CHECK(!c.uniformity_all_passed);
  CHECK(c.strictly_failing);
}

QE_TEST(extract_bits_at_any_offset) {
  const std::vector<uint8_t> bytes = pseudo_random_bytes(64, 7);
  for (size_t start : {0u, 1u, 7u, 8u, 13u, 64u, 100u}) {
    for (size_t count : {1u, 63u, 64u, 65u, 200u, 300u}) {
      if (start + count > 512) continue;
      const Bits b = extract_bits(bytes.data(), start, count);
      CHECK_EQ(b.n, count);
      CHECK_EQ(b.words.size(), (count + 63) / 64);
      bool same = true;
      for (size_t i = 0; i < count; ++i) same = same && b.bit(i) == get_bit(bytes, start + i);
      CHECK(same);
      if (count % 64) CHECK_EQ(b.words.back() << (count % 64), uint64_t{0});
    }
  }
}

// Eight sequences of 1000 bits (not byte-aligned); sequence 5 is a copy of sequence 2.
QE_TEST(repetition_finds_identical_sequences) {
  const size_t n = 1000, m = 8;
  std::vector<uint8_t> data = pseudo_random_bytes(m * n / 8, 11);
  for (size_t i = 0; i < n; ++i) set_bit(data, 5 * n + i, get_bit(data, 2 * n + i));
  BatteryOptions opt;
  opt.streams = m;
  opt.bits_per_stream = n;
  opt.tests = {TestId::frequency};
  const BatteryResult r = run_battery(data.data(), m * n, opt);
  CHECK_EQ(r.summary.repetition.identical.size(), size_t{1});
  if (!r.summary.repetition.identical.empty()) {
    CHECK_EQ(r.summary.repetition.identical[0].first, size_t{2});
    CHECK_EQ(r.summary.repetition.identical[0].second, size_t{5});
  }
  CHECK_EQ(r.summary.repetition.period_bits, size_t{0});
  CHECK(r.summary.repetition.flagged());
  // Same P-values for the copy, as it must be.
  CHECK_EQ(r.p_values[2], r.p_values[5]);
}

// A stream that repeats every 1500 bits, cut into sequences of 1000: starts 3000, 6000 are
// 0 mod 1500 (= sequence 0), 4000 and 7000 are 1000 mod 1500 (= sequence 1), 5000 is
// 500 mod 1500 (= sequence 2). Period found: 1500.
QE_TEST(repetition_finds_periodic_stream) {
  const size_t n = 1000, m = 8, period = 1500;
  std::vector<uint8_t> data = pseudo_random_bytes(m * n / 8, 3);
  for (size_t i = period; i < m * n; ++i) set_bit(data, i, get_bit(data, i - period));
  BatteryOptions opt;
  opt.streams = m;
  opt.bits_per_stream = n;
  opt.tests = {TestId::frequency, TestId::runs};
  const BatteryResult r = run_battery(data.data(), m * n, opt);
  CHECK_EQ(r.summary.repetition.period_bits, period);
  const std::vector<std::pair<size_t, size_t>> want = {{0, 3}, {1, 4}, {2, 5}, {0, 6}, {1, 7}};
  CHECK(r.summary.repetition.identical == want);
}

QE_TEST(repetition_none_in_pseudo_random_data_and_constant_stream_has_period_1) {
  std::vector<uint8_t> data = pseudo_random_bytes(20000, 5);
  CHECK_EQ(stream_period(data.data(), data.size() * 8), size_t{0});
  std::vector<uint8_t> zeros(20000, 0);
  CHECK_EQ(stream_period(zeros.data(), zeros.size() * 8), size_t{1});
  std::vector<uint8_t> alternating(20000, 0xAA);
  CHECK_EQ(stream_period(alternating.data(), alternating.size() * 8), size_t{2});
  // A prime period (every bit offset within a byte is exercised by some multiple).
  std::vector<uint8_t> periodic = pseudo_random_bytes(20000, 8);
  for (size_t i = 1013; i < periodic.size() * 8; ++i) set_bit(periodic, i, get_bit(periodic, i - 1013));
  CHECK_EQ(stream_period(periodic.data(), periodic.size() * 8), size_t{1013});
  // Constant except the very last bit: never periodic, and the search stays bounded.
  zeros.back() = 1;
  CHECK_EQ(stream_period(zeros.data(), zeros.size() * 8), size_t{0});
}

// Structured differences (single bits, pairs of bits in the same lane, the top bit, the
// length) must all change the fingerprint.
QE_TEST(fingerprints_separate_structured_differences) {
  const std::vector<uint8_t> bytes = pseudo_random_bytes(64 * 8, 12);
  const Bits base = extract_bits(bytes.data(), 0, 64 * 64);
  std::vector<Fingerprint> fps{fingerprint(base)};
  for (size_t w : {0u, 1u, 4u, 33u, 63u}) {
    for (unsigned b : {0u, 1u, 62u, 63u}) {
      Bits one = base;
      one.words[w] ^= uint64_t{1} << b;
      fps.push_back(fingerprint(one));
      Bits two = one;
      two.words[(w + 4) % 64] ^= uint64_t{1} << b;  // same lane, same bit
      fps.push_back(fingerprint(two));
    }
  }
  Bits shorter = base;
  shorter.n -= 1;
  shorter.words.back() &= ~uint64_t{1};
  fps.push_back(fingerprint(shorter));
  const Bits zeros = extract_bits(std::vector<uint8_t>(512, 0).data(), 0, 4096);
  Bits zeros_longer = extract_bits(std::vector<uint8_t>(520, 0).data(), 0, 4160);
  fps.push_back(fingerprint(zeros));
  fps.push_back(fingerprint(zeros_longer));
  CHECK(identical_sequences(fps).empty());
  CHECK(fingerprint(base) == fingerprint(extract_bits(bytes.data(), 0, 64 * 64)));
}

QE_TEST(repetition_check_can_be_turned_off) {
  const std::vector<uint8_t> one = pseudo_random_bytes(1250, 2);
  std::vector<uint8_t> data(one);
  data.insert(data.end(), one.begin(), one.end());
  BatteryOptions opt;
  opt.streams = 2;
  opt.tests = {TestId::frequency};
  CHECK(run_battery(data.data(), data.size() * 8, opt).summary.repetition.flagged());
  opt.repetition_check = false;
  const BatteryResult r = run_battery(data.data(), data.size() * 8, opt);
  CHECK(r.fingerprints.empty());
  CHECK(!r.summary.repetition.flagged());
}

QE_TEST(sub_tests_in_nist_order) {
  Params p;
  const std::vector<SubTest> templates = sub_tests(TestId::non_overlapping_template, p);
  const std::vector<SubTest> excursions = sub_tests(TestId::random_excursions, p);
  const std::vector<SubTest> variant = sub_tests(TestId::random_excursions_variant, p);
  CHECK_EQ(templates.size(), size_t{148});
  CHECK_EQ(excursions.size(), size_t{8});
  CHECK_EQ(variant.size(), size_t{18});
  if (templates.size() == 148 && excursions.size() == 8 && variant.size() == 18) {
    CHECK_EQ(templates[0].label, std::string("000000001"));
    CHECK_EQ(templates[147].label, std::string("111111110"));
    CHECK_EQ(excursions[0].label, std::string("x = -4"));
    CHECK_EQ(excursions[4].label, std::string("x = 1"));
    CHECK_EQ(variant[17].label, std::string("x = 9"));
  }
  // m = 10: the reference tests its first 148 templates of 284, and so does the battery.
  Params p10;
  p10.non_overlapping_template_m = 10;
  CHECK_EQ(sub_tests(TestId::non_overlapping_template, p10).size(), size_t{148});
  CHECK_THROWS(std::invalid_argument, [&] {
    Params bad;
    bad.non_overlapping_template_m = 22;
    return sub_tests(TestId::non_overlapping_template, bad);
  }());
  size_t total = 0;
  for (int i = 0; i < kTestCount; ++i) total += sub_tests(static_cast<TestId>(i), p).size();
  CHECK_EQ(total, size_t{188});  // product.md §5.1
  CHECK(test_id_from_name("linear_complexity") == TestId::linear_complexity);
  CHECK_THROWS(std::invalid_argument, test_id_from_name("monobit"));
}

QE_TEST(options_that_do_not_fit_are_rejected) {
  std::vector<uint8_t> data(1000, 0x5a);
  BatteryOptions opt;
  opt.streams = 3;
  opt.bits_per_stream = 3000;  // 9000 > 8000 bits
  CHECK_THROWS(std::invalid_argument, run_battery(data.data(), 8000, opt));
  opt.streams = 0;
  CHECK_THROWS(std::invalid_argument, run_battery(data.data(), 8000, opt));
  opt.streams = 9000;
  opt.bits_per_stream = 0;  // 8000 / 9000 = 0 bits per stream
  CHECK_THROWS(std::invalid_argument, run_battery(data.data(), 8000, opt));
}

QE_TEST(cancel_flag_stops_between_sequences) {
  std::vector<uint8_t> data = pseudo_random_bytes(40 * 2500, 9);
  std::atomic<bool> cancel{false};
  BatteryOptions opt;
  opt.streams = 40;
  opt.tests = {TestId::frequency, TestId::runs};
  opt.cancel = &cancel;
  size_t seen = 0;
  opt.progress = [&](size_t done, size_t total) {
    CHECK_EQ(total, size_t{40});
    seen = done;
    if (done == 3) cancel = true;
  };
  CHECK_THROWS(BatteryCancelled, run_battery(data.data(), data.size() * 8, opt));
  CHECK(seen >= 3 && seen < 40);
  cancel = false;
  opt.progress = nullptr;
  const BatteryResult r = run_battery(data.data(), data.size() * 8, opt);
  CHECK_EQ(r.p_values.size(), size_t{80});
}

// The whole battery on NIST's own data: data.e (first 10^6 bits) as one sequence must give
// every P-value sts-2.1.2 prints, with one thread and split over two.
QE_TEST(battery_on_data_e_matches_nist_reference) {
  const Bits e = bits_from_ascii(qe::check::read_file(qe::check::vector_path("data.e")), 1000000);
  const std::vector<uint8_t> bytes = pack(e);
  for (unsigned threads : {1u, 2u}) {
    BatteryOptions opt;
    opt.threads = threads;
    const BatteryResult r = run_battery(bytes.data(), e.n, opt);
    CHECK_EQ(r.columns.size(), size_t{188});
    for (size_t c = 0; c < r.columns.size(); ++c) {
      const SubTest& st = r.columns[c];
      const std::vector<double> ref =
          qe::check::reference_pvalues("reference-pvalues-e.json", kTestNames[static_cast<int>(st.test)]);
      const double want = ref.at(static_cast<size_t>(st.index));
      if (std::isnan(want)) {
        CHECK(std::isnan(r.p_values[c]));
      } else {
        CHECK_NEAR(r.p_values[c], want, 1e-6);
      }
    }
  }
}

// Threads only change who computes what: identical P-values with 1 and 2 threads over
// several sequences (including a bit length that is not a multiple of 8).
QE_TEST(threads_give_identical_results) {
  const size_t m = 6, n = 200003;
  std::vector<uint8_t> data = pseudo_random_bytes((m * n + 7) / 8, 21);
  BatteryOptions opt;
  opt.streams = m;
  opt.bits_per_stream = n;
  opt.threads = 1;
  const BatteryResult one = run_battery(data.data(), m * n, opt);
  opt.threads = 2;
  const BatteryResult two = run_battery(data.data(), m * n, opt);
  CHECK_EQ(one.p_values.size(), two.p_values.size());
  bool same = one.p_values.size() == two.p_values.size();
  for (size_t i = 0; same && i < one.p_values.size(); ++i)
    same = (std::isnan(one.p_values[i]) && std::isnan(two.p_values[i])) || one.p_values[i] == two.p_values[i];
  CHECK(same);
  CHECK(one.fingerprints == two.fingerprints);
}

// Parameters reach the tests: template length 10 gives 148 P-values per sequence.
QE_TEST(params_reach_the_tests) {
  std::vector<uint8_t> data = pseudo_random_bytes(2 * 12500, 4);
  BatteryOptions opt;
  opt.streams = 2;
  opt.tests = {TestId::non_overlapping_template, TestId::serial};
  opt.params.non_overlapping_template_m = 10;
  opt.params.serial_m = 3;
  const BatteryResult r = run_battery(data.data(), data.size() * 8, opt);
  CHECK_EQ(r.columns.size(), size_t{150});
  CHECK_EQ(r.p_values.size(), size_t{300});
  bool all_numbers = true;
  for (double p : r.p_values) all_numbers = all_numbers && p >= 0 && p <= 1;
  CHECK(all_numbers);
}
