// libFuzzer target for the checks that run on every block a source delivers, before
// anything reaches the pool: the SP 800-90B continuous health tests (RCT and APT, byte
// and bit mode, with an assessed entropy chosen by the input), the pattern check
// (repetition and linear complexity) and the FIPS 140-2 block tests. The input's first
// bytes choose the configuration and how the rest is cut into blocks, so state carried
// across block boundaries is exercised.
//
// Properties checked, beyond "no crash, no sanitizer report":
//  * feeding the same stream cut into different blocks gives the same failure counts
//    (the tests are stream tests, the cut is not visible);
//  * a failure's sample index and block offset lie inside the stream and the block;
//  * the pattern check's linear complexity is at most the bits it looked at.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "health/fips140.h"
#include "health/health.h"
#include "health/pattern.h"
#include "fuzz/require.h"

namespace {

qe::health::Stats feed_in_blocks(const qe::health::Config& config, const uint8_t* data, size_t size, size_t block) {
  qe::health::Tester tester(config);
  const uint64_t per_byte = config.mode == qe::health::SymbolMode::Bits ? 8 : 1;
  for (size_t at = 0; at < size; at += block) {
    const size_t len = std::min(block, size - at);
    const qe::health::BlockResult r = tester.feed(data + at, len);
    if (r.failures > 0 || r.first_failure) REQUIRE(!r.passed);
    if (r.first_failure) {
      REQUIRE(r.first_failure->block_offset < len);
      REQUIRE(r.first_failure->sample_index < (at + len) * per_byte);
      REQUIRE(r.first_failure->count >= r.first_failure->cutoff);
    }
  }
  REQUIRE(tester.stats().samples == size * per_byte);
  return tester.stats();
}

void health_tests(const uint8_t* cfg, const uint8_t* data, size_t size) {
  qe::health::Config config;
  config.mode = cfg[0] & 1 ? qe::health::SymbolMode::Bits : qe::health::SymbolMode::Bytes;
  const double top = config.mode == qe::health::SymbolMode::Bits ? 1.0 : 8.0;
  config.min_entropy = top * (1 + cfg[1]) / 256.0;  // (0, top]
  config.alpha_log2 = 1 + cfg[2] % 40;
  config.startup_samples = qe::health::kStartupSamples + cfg[3] * 16u;
  try {
    qe::health::validate(config);
  } catch (const std::invalid_argument&) {
    return;
  }
  const qe::health::Stats whole = feed_in_blocks(config, data, size, std::max<size_t>(size, 1));
  const qe::health::Stats cut = feed_in_blocks(config, data, size, 1 + cfg[0] / 2);
  REQUIRE(whole.rct_failures == cut.rct_failures && whole.apt_failures == cut.apt_failures);
}

void pattern_check(const uint8_t* cfg, const uint8_t* data, size_t size) {
  qe::pattern::Config config;
  config.history_bytes = 32 * (1 + cfg[0] % 64);
  config.linear_bits = cfg[1] % 4 == 0 ? 0 : 8 * (1 + cfg[1]);
  config.linear_margin = cfg[2] % 64;
  if (config.linear_bits != 0 && config.linear_margin >= config.linear_bits / 2) return;  // refused by the constructor
  qe::pattern::Tester tester(config);
  const size_t block = 64 + 32 * (cfg[3] % 8);
  for (size_t at = 0; at + block <= size; at += block) {
    const qe::pattern::BlockReport r = tester.test_block(data + at, block);
    REQUIRE(r.linear_bits <= block * 8 && r.linear_complexity <= r.linear_bits);
    REQUIRE(r.repeat_distance <= at + block);
  }
  bool threw = false;
  try {
    if (size >= 65) (void)tester.test_block(data, 65);  // not a multiple of 32
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  REQUIRE(threw || size < 65);
  // Berlekamp-Massey is quadratic: a prefix up to 4,096 bits covers it without slowing the search.
  const size_t nbits = std::min<size_t>(size * 8, 4096 - cfg[1]);
  REQUIRE(qe::pattern::linear_complexity(data, nbits) <= nbits);
}

void fips_tests(const uint8_t* data, size_t size) {
  qe::fips140::Tester tester;
  for (size_t at = 0; at + qe::fips140::kBlockBytes <= size; at += qe::fips140::kBlockBytes) {
    const qe::fips140::BlockReport r = tester.test_block(data + at, qe::fips140::kBlockBytes);
    REQUIRE(r.ones <= qe::fips140::kBlockBytes * 8);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  health_tests(data, data + 4, size - 4);
  pattern_check(data, data + 4, size - 4);
  fips_tests(data + 4, size - 4);
  return 0;
}
