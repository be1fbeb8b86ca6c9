// SP 800-90B entropy assessment: the estimators of §6.3 (non-IID track), the IID tests of
// §5 and the restart tests of §3.1.4, in plain C++ with no Node-API types.
//
// The reference is NIST's own tool (usnistgov/SP800-90B_EntropyAssessment, commit 68ed165):
// every estimator follows the rules that tool applies (which estimators run on the literal
// symbols and which on the bitstring, how ties are broken, the binary searches and their
// failure rules), so the results agree with its output to 1e-6. Where the tool and the text
// of SP 800-90B differ, the tool wins and docs/ea.md says so.
#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/populated.h"

namespace qe::ea {

// Not applicable / not computed (an estimator the tool does not run for this data, or one
// that found too little data to run). JSON null.
inline constexpr double kNotApplicable = std::numeric_limits<double>::quiet_NaN();

// The tool's default minimum (10^6 samples; `-t` truncates the bitstring to this many bits).
inline constexpr size_t kMinSamples = 1000000;

// A data set ready for assessment: the literal symbols translated down to 0..alphabet-1
// (ascending order of the raw values, as the tool does). Its bitstring is made only where a
// track reads it (bitstring() below): eight bytes a sample that the IID track, which only
// counts its ones, never needs.
struct Samples {
  int bits_per_symbol = 0;
  int alphabet_size = 0;       // distinct symbols present
  std::vector<uint8_t> raw;    // the symbols as read, masked to bits_per_symbol
  std::vector<uint8_t> symbols;
  size_t bit_count() const { return raw.size() * static_cast<size_t>(bits_per_symbol); }
};

// Bad input (empty data, symbols wider than K bits, K outside 1..8): one readable sentence.
struct InputError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Prepares `n` samples, one per byte, whose low `bits_per_symbol` bits are the symbol.
// bits_per_symbol == 0 infers the width from the highest bit set anywhere in the data.
Samples prepare(const uint8_t* data, size_t n, int bits_per_symbol);

// The first `bits` bits of the bitstring of the raw symbols (bits <= s.bit_count()), most
// significant of each symbol's `bits_per_symbol` bits first, one bit per byte.
PopulatedVector<uint8_t> bitstring(const Samples& s, size_t bits);
// How many of those bits are 1, without writing them out.
size_t bitstring_ones(const Samples& s, size_t bits);

// ---- Individual estimators (§6.3). Each returns min-entropy per sample of its input, or
// kNotApplicable when the input is too short for it. `k` is the alphabet size (symbols are
// 0..k-1); "binary" estimators take 0/1 values.
double most_common_value(const uint8_t* s, size_t n, int k);
// The same from the count of the most common value among n samples.
double most_common_value_of_mode(size_t mode, size_t n);
double collision_estimate(const uint8_t* bits, size_t n);
double markov_estimate(const uint8_t* bits, size_t n);
double compression_estimate(const uint8_t* bits, size_t n);
struct TupleEstimates {
  double t_tuple = kNotApplicable;
  double lrs = kNotApplicable;
};
TupleEstimates tuple_estimates(const uint8_t* s, size_t n);
double multi_mcw_estimate(const uint8_t* s, size_t n, int k);
double lag_estimate(const uint8_t* s, size_t n, int k);
double multi_mmc_estimate(const uint8_t* s, size_t n, int k);
double lz78y_estimate(const uint8_t* s, size_t n, int k);

// The predictor estimate shared by the last four (§6.3.7 step 10 onwards): C correct
// predictions out of N, longest run of correct predictions r-1, alphabet size k.
double prediction_estimate(long correct, long n, long longest_run, int k);

// ---- Non-IID track.
enum class Estimator : int {
  most_common_value,
  collision,
  markov,
  compression,
  t_tuple,
  lrs,
  multi_mcw,
  lag,
  multi_mmc,
  lz78y,
};
inline constexpr int kEstimatorCount = 10;
// The JSON key of each estimator (`qentropy ea --json`).
extern const char* const kEstimatorKeys[kEstimatorCount];

using Progress = std::function<void(size_t done, size_t total)>;

struct NonIidOptions {
  bool conditioned = false;  // -c: assess the bitstring only (h')
  bool truncate = false;     // -t: the bitstring is cut to 10^6 bits
  unsigned threads = 1;
  Progress progress;         // called from worker threads
};

struct NonIidResult {
  std::array<double, kEstimatorCount> literal;    // NaN where not run
  std::array<double, kEstimatorCount> bitstring;  // NaN where not run
  bool has_literal = false;
  bool has_bitstring = false;
  double h_original = kNotApplicable;
  double h_bitstring = kNotApplicable;  // per bit
  double h_assessed = 0;
};

NonIidResult assess_non_iid(const Samples& s, const NonIidOptions& options);

// ---- IID track (§5).
inline constexpr int kPermutationStatistics = 19;  // the 11 tests, periodicity/covariance at 5 lags
extern const char* const kPermutationStatisticNames[kPermutationStatistics];

struct ChiSquare {
  double statistic = 0;
  long df = 0;
  double p_value = 1;
};

struct IidOptions {
  bool conditioned = false;
  bool truncate = false;
  unsigned threads = 1;
  unsigned shuffles = 10000;
  Progress progress;
  // 32 bytes seeding the shuffles; empty = fresh bytes from the OS CSPRNG.
  std::vector<uint8_t> seed;
  // Stop shuffling once a statistic can no longer settle within `shuffles`: it fails, and
  // with it the permutation test, whatever more shuffles show. (false: NIST's tool's loop,
  // to the last shuffle; the tests compare the two.)
  bool stop_on_failed_statistic = true;
  // Stop shuffling once the chi-square or LRS test has failed: the verdict is "not IID"
  // whatever the permutation test shows, which is then left undecided. (false: run the
  // permutation test to its own verdict, as NIST's tool does.)
  bool stop_on_failed_tests = true;
};

// A permutation statistic's fate under the counting rule (§5.1): passed once more than 5
// shuffles came out >= it and more than 5 <= it; failed once that can no longer happen
// within the shuffles left; open while neither (shuffling stopped because the verdict was
// settled by another test or statistic).
enum class StatisticOutcome : uint8_t { open, passed, failed };

struct IidResult {
  double h_original = kNotApplicable;
  double h_bitstring = kNotApplicable;
  double h_assessed = 0;
  double most_common_literal = kNotApplicable;
  double most_common_bitstring = kNotApplicable;
  ChiSquare independence, goodness_of_fit;
  bool chi_square_passed = false;
  double lrs_collision_probability = 0;  // P_col
  long lrs_length = 0;                   // W
  double lrs_probability = 0;            // Pr(X >= 1)
  bool lrs_passed = false;
  std::array<double, kPermutationStatistics> unpermuted{};
  std::array<std::array<long, 3>, kPermutationStatistics> counts{};  // C[i][0..2]
  std::array<StatisticOutcome, kPermutationStatistics> outcomes{};
  unsigned shuffles_run = 0;
  bool permutation_passed = false;
  // false when shuffling stopped before the permutation test had a verdict of its own
  // (the chi-square or LRS test had already failed), or ran no shuffles.
  bool permutation_decided = false;
  bool passed = false;  // all three
};

IidResult assess_iid(const Samples& s, const IidOptions& options);

// Pieces of the IID track callable alone (tests, the restart sanity check).
std::array<double, kPermutationStatistics> permutation_statistics(const uint8_t* symbols, const uint8_t* raw,
                                                                  size_t n, int alphabet_size, double raw_mean,
                                                                  double median);

// ---- Restart tests (§3.1.4): `matrix` holds 1000 restarts of 1000 samples, row-major.
struct RestartResult {
  double h_row = kNotApplicable, h_column = kNotApplicable;  // min over the row / column tracks
  bool sanity_passed = false;
  long max_count = 0;       // largest symbol count in any row or column
  long cutoff = 0;          // the sanity-check cutoff for that count
  bool validated = false;   // min(H_r, H_c) >= H_I / 2 and the sanity check passed
  double h_min = kNotApplicable;
};

RestartResult assess_restart(const Samples& matrix, double h_initial, bool iid, const NonIidOptions& options);

}  // namespace qe::ea
