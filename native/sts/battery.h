// The NIST SP 800-22 battery over many sequences: runs the selected tests on M sequences
// of N bits each (split across threads by sequence), then judges the batch the way NIST's
// `assess` does in finalAnalysisReport.txt (per sub-test: 10-bin histogram, uniformity
// P-value P_T, pass proportion) and by the two published criteria of product.md §5.2
// (share of passing individual results; uniformity per test), plus a check for identical
// or periodic sequences inside the batch, which both criteria miss.
//
// Plain C++ (no Node-API types). The summary is a pure function of the per-sequence
// P-values, so callers that test a file chunk by chunk keep the (small) P-values and
// summarize once at the end (`summarize`).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sts/sts.h"

namespace qe::sts {

// NIST's significance level for individual results (assess's ALPHA).
inline constexpr double kAlpha = 0.01;
// A sub-test's P-values are uniform when P_T >= this (SP 800-22 §4.2.2).
inline constexpr double kUniformityThreshold = 0.0001;
// SP 800-22 §4.2.2: the uniformity check needs at least this many P-values.
inline constexpr size_t kUniformityMinSequences = 55;

// Thrown by run_battery when the cancel flag was raised.
struct BatteryCancelled : std::runtime_error {
  BatteryCancelled() : std::runtime_error("sts battery cancelled") {}
};

// One column of the result table: one sub-test of one test.
struct SubTest {
  TestId test;
  int index;          // position among the test's P-values (0-based)
  std::string label;  // e.g. "forward", "x = -4", "000000001" (template), "1" (serial)
};

// The sub-tests of `test` with these parameters, in NIST's order.
std::vector<SubTest> sub_tests(TestId test, const Params& params);

struct BatteryOptions {
  size_t streams = 1;          // M
  size_t bits_per_stream = 0;  // N (0 = all bits / M)
  Params params;
  std::vector<TestId> tests;  // empty = all 15, always run and reported in NIST's order
  unsigned threads = 1;       // 0 = every hardware thread
  double alpha = kAlpha;
  // Raised by another thread to stop; checked between sequences (run_battery then throws
  // BatteryCancelled).
  const std::atomic<bool>* cancel = nullptr;
  // Called with the number of sequences completed so far, from worker threads but never
  // concurrently. Must not throw.
  std::function<void(size_t completed, size_t total)> progress;
  // Skip the batch summary (chunked callers summarize all chunks at the end).
  bool summarize = true;
  // Fingerprint every sequence and look for a period in the stream (RepetitionCheck).
  // Off only to time single tests; then `fingerprints` is empty and nothing is flagged.
  bool repetition_check = true;
};

// 128-bit fingerprint of a sequence's bits (not cryptographic: detects accidental
// repetition, e.g. a source that replays a buffer).
struct Fingerprint {
  uint64_t lo = 0, hi = 0;
  bool operator==(const Fingerprint&) const = default;
};
Fingerprint fingerprint(const Bits& bits);

// Histogram, uniformity and proportion of one sub-test over the batch, as NIST's
// finalAnalysisReport prints them.
struct SubTestSummary {
  std::array<size_t, 10> histogram{};  // C1..C10: P in [0, 0.1), ..., [0.9, 1.0]
  size_t sample_size = 0;              // sequences where the sub-test applies
  size_t passed = 0;                   // of those, P >= alpha
  // igamc(9/2, chi2/2) with NIST's expected count floor(K/10); NaN when K < 10
  // (NIST prints "----").
  double uniformity_p = 0;
  bool uniformity_assessed = false;  // K >= 55 (SP 800-22 §4.2.2)
  bool uniformity_ok = false;        // assessed and P_T >= 0.0001
  // NIST's proportion check: the pass count lies inside
  // (1 - a ± 3 sqrt(a (1 - a) / K)) K, both bounds truncated to integers as assess does.
  bool proportion_ok = false;
};

enum class UniformityVerdict { passed, failed, excluded };

struct TestUniformity {
  TestId test;
  UniformityVerdict verdict = UniformityVerdict::excluded;
  std::string reason;  // why it failed or why it was left out
};

// Identical or periodic sequences inside the batch.
struct RepetitionCheck {
  // Each pair (i, j), i < j: sequence j has exactly the bits of sequence i (j listed once,
  // with the first i it repeats).
  std::vector<std::pair<size_t, size_t>> identical;
  // Smallest p > 0 such that the tested bit stream (the M*N bits as given) repeats with
  // period p bits (bit k == bit k + p for every k), found when the stream's first 64 bits
  // recur; 0 when it does not repeat. Only periods up to half the stream are looked for.
  size_t period_bits = 0;
  bool flagged() const { return !identical.empty() || period_bits != 0; }
};

// The criteria of product.md §5.2 (α = 0.01).
struct Criteria {
  size_t nist_passes = 0;          // individual (sub-test, sequence) results with P >= alpha
  size_t nist_fails = 0;           // ... with P < alpha (not-applicable results not counted)
  double nist_success_rate = 0;    // passes / (passes + fails); NaN when there are none
  double min_pass_proportion = 0;  // (1 - a) - 3 sqrt(a (1 - a) / K), K = passes + fails
  bool nist_all_passed = false;    // success rate >= min_pass_proportion (K > 0)
  size_t uniformity_passes = 0;    // tests whose every sub-test has P_T >= 0.0001
  size_t uniformity_fails = 0;     // tests with a sub-test below
  size_t uniformity_excluded = 0;  // tests left out (too few applicable sequences)
  double uniformity_success_rate = 0;  // passes / (passes + fails); NaN when none judged
  bool uniformity_all_passed = false;  // at least one test judged and none failed
  bool tests_passed = false;           // nist_all_passed || uniformity_all_passed
  bool strictly_failing = false;       // both criteria failed
  bool loosely_failing = false;        // at least one criterion failed
};

struct BatterySummary {
  size_t streams = 0;
  double alpha = kAlpha;
  std::vector<SubTestSummary> sub_tests;  // parallel to BatteryResult::columns
  std::vector<TestUniformity> uniformity;  // one per test run, in NIST's order
  Criteria criteria;
  // Sub-tests whose NIST proportion check fails ("*" in the report).
  size_t proportion_flags = 0;
  // Sub-tests whose uniformity was judged and failed ("*" in the report).
  size_t uniformity_flags = 0;
  RepetitionCheck repetition;
};

struct BatteryResult {
  size_t streams = 0;
  size_t bits_per_stream = 0;
  Params params;
  std::vector<TestId> tests;     // the tests run, in NIST's order
  std::vector<SubTest> columns;  // every sub-test of those tests, in NIST's order
  // P-values, row-major: p_values[s * columns.size() + c]; NaN = not applicable.
  std::vector<double> p_values;
  // Per sequence and test (index into `tests`): the test's note, "" when none.
  std::vector<std::vector<std::string>> notes;
  std::vector<Fingerprint> fingerprints;  // per sequence (empty without repetition_check)
  size_t period_bits = 0;                 // stream_period of the M*N tested bits
  BatterySummary summary;                 // empty when options.summarize is false
};

// Min pass proportion of NIST for K results: (1 - alpha) - 3 sqrt(alpha (1 - alpha) / K).
double min_pass_proportion(size_t k, double alpha = kAlpha);
// NIST's uniformity P-value for a 10-bin histogram: chi2 = sum (C_i - E)^2 / E with
// E = floor(K / 10) as assess computes it; igamc(9/2, chi2/2). NaN when E == 0.
double uniformity_p_value(const std::array<size_t, 10>& histogram);
// Bin of a P-value (floor(10 P), with P = 1 in the last bin).
int histogram_bin(double p);

// Runs the battery on `nbits` bits packed MSB first in `data` (raw bytes are the same
// thing): sequence s is bits [s N, (s + 1) N). Throws std::invalid_argument for options
// that do not fit the data, BatteryCancelled on cancellation, and whatever a test throws
// for invalid parameters.
BatteryResult run_battery(const uint8_t* data, size_t nbits, const BatteryOptions& options);

// The summary of a batch from its P-values (row-major, rows = streams) and the
// sequences' fingerprints (for identical-sequence detection; may be empty).
BatterySummary summarize(const std::vector<SubTest>& columns, const std::vector<TestId>& tests,
                         const double* p_values, size_t streams,
                         const std::vector<Fingerprint>& fingerprints, double alpha = kAlpha);

// Pairs of identical sequences by fingerprint (see RepetitionCheck::identical).
std::vector<std::pair<size_t, size_t>> identical_sequences(const std::vector<Fingerprint>& fps);
// The period of the bit stream (see RepetitionCheck::period_bits).
size_t stream_period(const uint8_t* data, size_t nbits);

// Bits [start, start + count) of packed MSB-first bytes as a sequence.
Bits extract_bits(const uint8_t* data, size_t start, size_t count);

// "frequency" -> TestId; throws std::invalid_argument naming the unknown test.
TestId test_id_from_name(const std::string& name);

}  // namespace qe::sts
