// libFuzzer target for the SP 800-22 battery on arbitrary sequences: every test, with
// parameters and a sequence count chosen by the input's first bytes, run on the rest as
// packed bits (the form the file readers and the quality service hand it). Short
// sequences are the interesting ones: each test must say "not applicable" or give P-values
// in [0, 1] (NIST's own out-of-range cumulative sums value excepted, below), never crash,
// read out of bounds or divide by zero (UBSan).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "sts/battery.h"
#include "fuzz/require.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  qe::sts::BatteryOptions options;
  options.streams = 1 + data[0] % 4;
  // Small parameters, some out of NIST's ranges (those must throw invalid_argument).
  options.params.block_frequency_M = 1 + data[1];
  options.params.serial_m = 1 + data[2] % 20;
  options.params.approximate_entropy_m = 1 + data[2] / 20 % 16;
  options.params.linear_complexity_M = 1 + data[3] * 4;
  options.params.non_overlapping_template_m = 2 + data[3] % 10;
  options.params.overlapping_template_m = 2 + data[3] / 10 % 10;
  const uint8_t* bits = data + 4;
  const size_t nbits = (size - 4) * 8;
  if (nbits < options.streams) return 0;
  options.bits_per_stream = nbits / options.streams;
  try {
    const qe::sts::BatteryResult r = qe::sts::run_battery(bits, nbits, options);
    REQUIRE(r.p_values.size() == r.columns.size() * options.streams);
    for (size_t i = 0; i < r.p_values.size(); ++i) {
      const double p = r.p_values[i];
      const qe::sts::SubTest& column = r.columns[i % r.columns.size()];
      // NIST's cumulative sums formula exceeds 1 on very short sequences (assess prints
      // "P_VALUE IS OUT OF RANGE" and reports it, e.g. 1.100536 for the 4 bits 1010); we
      // report NIST's value, so only there is P > 1 expected.
      const double top = column.test == qe::sts::TestId::cumulative_sums ? 2.0 : 1.0;
      if (!(std::isnan(p) || (p >= 0.0 && p <= top))) {
        std::fprintf(stderr, "%s %s of a %zu-bit sequence: P = %.17g\n", qe::sts::kTestNames[static_cast<int>(column.test)],
                     column.label.c_str(), options.bits_per_stream, p);
      }
      REQUIRE(std::isnan(p) || (p >= 0.0 && p <= top));
    }
  } catch (const std::invalid_argument&) {
    // Parameters that do not fit the sequence: the caller's one-line error.
  } catch (const std::out_of_range&) {
  }
  return 0;
}
