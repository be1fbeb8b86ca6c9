// Test names (as in JSON and on the CLI) and the dispatcher from TestId to the test.
#include <stdexcept>
#include <string>

#include "sts/sts.h"

namespace qe::sts {

const char* const kTestNames[kTestCount] = {
    "frequency",
    "block_frequency",
    "cumulative_sums",
    "runs",
    "longest_run",
    "rank",
    "fft",
    "non_overlapping_template",
    "overlapping_template",
    "universal",
    "approximate_entropy",
    "random_excursions",
    "random_excursions_variant",
    "serial",
    "linear_complexity",
};

TestResult run_test(TestId id, const Bits& bits, const Params& params) {
  switch (id) {
    case TestId::frequency:
      return frequency(bits);
    case TestId::block_frequency:
      return block_frequency(bits, params.block_frequency_M);
    case TestId::cumulative_sums:
      return cumulative_sums(bits);
    case TestId::runs:
      return runs(bits);
    case TestId::longest_run:
      return longest_run(bits);
    case TestId::rank:
      return rank(bits);
    case TestId::fft:
      return fft(bits);
    case TestId::non_overlapping_template:
      return non_overlapping_template(bits, params.non_overlapping_template_m);
    case TestId::overlapping_template:
      return overlapping_template(bits, params.overlapping_template_m);
    case TestId::universal:
      return universal(bits);
    case TestId::approximate_entropy:
      return approximate_entropy(bits, params.approximate_entropy_m);
    case TestId::random_excursions:
      return random_excursions(bits);
    case TestId::random_excursions_variant:
      return random_excursions_variant(bits);
    case TestId::serial:
      return serial(bits, params.serial_m);
    case TestId::linear_complexity:
      return linear_complexity(bits, params.linear_complexity_M);
  }
  throw std::invalid_argument("run_test: unknown test id " + std::to_string(static_cast<int>(id)));
}

}  // namespace qe::sts
