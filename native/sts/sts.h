// NIST SP 800-22 rev1a statistical tests, matched to the reference implementation
// (sts-2.1.2) to 1e-6 on every P-value. Plain C++: no Node-API types.
//
// Conventions shared by every test:
//  * A sequence is `Bits`: n bits packed most-significant-bit first into 64-bit words.
//  * A test returns its P-values in NIST's order. A sub-test that is not applicable to
//    this sequence (e.g. random excursions with fewer than 500 cycles, universal with n
//    too small) has NaN as its P-value and the reason in `note`, as NIST prints it.
//  * Every test is a pure function of (bits, params): thread-safe, no global state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qe::sts {

// n bits; bit i is (words[i / 64] >> (63 - i % 64)) & 1. Bits past n in the last word are 0.
struct Bits {
  std::vector<uint64_t> words;
  size_t n = 0;

  int bit(size_t i) const { return static_cast<int>((words[i >> 6] >> (63 - (i & 63))) & 1u); }
};

// '0'/'1' characters; any other byte is an error (std::invalid_argument naming the offset),
// except ASCII whitespace, which is skipped. Takes at most max_bits bits (0 = all).
Bits bits_from_ascii(std::string_view text, size_t max_bits = 0);
// Raw bytes, most significant bit of each byte first (NIST's input mode 1).
Bits bits_from_bytes(const uint8_t* data, size_t nbytes, size_t nbits);
// Bits [start, start + count) of `src` as a new sequence.
Bits slice(const Bits& src, size_t start, size_t count);

// Parameters as NIST's `assess` lets you set them; defaults are NIST's.
struct Params {
  int block_frequency_M = 128;
  int non_overlapping_template_m = 9;
  int overlapping_template_m = 9;
  int approximate_entropy_m = 10;
  int serial_m = 16;
  int linear_complexity_M = 500;
};

struct TestResult {
  std::vector<double> p_values;  // NIST's order; NaN = not applicable
  std::string note;              // why a sub-test is not applicable, empty otherwise

  // `count` sub-tests, none applicable to this sequence, for the reason `why`.
  static TestResult not_applicable(size_t count, std::string why) {
    return TestResult{std::vector<double>(count, std::numeric_limits<double>::quiet_NaN()), std::move(why)};
  }
};

// The 15 tests, in NIST's order (this is also the order of TestId and of kTestNames).
enum class TestId : int {
  frequency = 0,
  block_frequency,
  cumulative_sums,
  runs,
  longest_run,
  rank,
  fft,
  non_overlapping_template,
  overlapping_template,
  universal,
  approximate_entropy,
  random_excursions,
  random_excursions_variant,
  serial,
  linear_complexity,
};
inline constexpr int kTestCount = 15;
// snake_case names used in JSON and on the CLI, indexed by TestId.
extern const char* const kTestNames[kTestCount];

TestResult frequency(const Bits& bits);
TestResult block_frequency(const Bits& bits, int M);
TestResult cumulative_sums(const Bits& bits);  // [forward, backward]
TestResult runs(const Bits& bits);
TestResult longest_run(const Bits& bits);
TestResult rank(const Bits& bits);
TestResult fft(const Bits& bits);
TestResult non_overlapping_template(const Bits& bits, int m);  // one P-value per tested_templates(m) entry
TestResult overlapping_template(const Bits& bits, int m);
TestResult universal(const Bits& bits);
TestResult approximate_entropy(const Bits& bits, int m);
TestResult random_excursions(const Bits& bits);          // x = -4..-1, 1..4
TestResult random_excursions_variant(const Bits& bits);  // x = -9..-1, 1..9
TestResult serial(const Bits& bits, int m);              // [P-value1 (del psi^2), P-value2 (del^2 psi^2)]
TestResult linear_complexity(const Bits& bits, int M);

// Serial and approximate entropy on one sequence, with one pass over its windows (both
// count cyclic windows; each takes the marginal counts of the longer one): the same
// results as serial(bits, serial_m) and approximate_entropy(bits, approximate_entropy_m).
struct SerialAndApproximateEntropy {
  TestResult serial;
  TestResult approximate_entropy;
};
SerialAndApproximateEntropy serial_and_approximate_entropy(const Bits& bits, int serial_m, int approximate_entropy_m);

// Runs one test with its parameters from `params`.
TestResult run_test(TestId id, const Bits& bits, const Params& params);

// The aperiodic templates of length m (2..21) in NIST's order (for m = 9, the 148 of
// the reference's template9 file), each as an m-bit integer, first bit most significant.
std::vector<uint32_t> aperiodic_templates(int m);
// The templates the reference actually tests, in order: all aperiodic templates up to
// m = 10 (at most 148), then every (count / 148)-th one, 148 in all.
std::vector<uint32_t> tested_templates(int m);

}  // namespace qe::sts
