// FIPS 140-2 block tests: verdicts on blocks whose statistics are known by construction,
// and agreement with Debian's own `rngtest` (rng-tools5) on the same bytes when it is
// installed.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "health/fips140.h"
#include "tests/check.h"

using qe::fips140::BlockReport;
using qe::fips140::kBlockBytes;
using qe::fips140::Tester;

namespace {

std::vector<uint8_t> sha1_data() {
  const std::string s = qe::check::read_file(qe::check::vector_path("data.sha1"));
  return std::vector<uint8_t>(s.begin(), s.end());
}

BlockReport run(const std::vector<uint8_t>& block) {
  Tester t;
  return t.test_block(block.data(), block.size());
}

// Sets bit `i` (most significant first) of the block to `v`.
void set_bit(std::vector<uint8_t>& b, size_t i, int v) {
  const uint8_t mask = uint8_t(0x80u >> (i % 8));
  if (v)
    b[i / 8] |= mask;
  else
    b[i / 8] &= uint8_t(~mask);
}

}  // namespace

QE_TEST(rejects_wrong_block_size) {
  Tester t;
  std::vector<uint8_t> b(100);
  CHECK_THROWS(std::invalid_argument, t.test_block(b.data(), b.size()));
}

// NIST's SHA-1 generator output (125,000 bytes = 50 blocks) passes every block.
QE_TEST(sha1_generator_output_passes) {
  const auto data = sha1_data();
  Tester t;
  for (size_t off = 0; off + kBlockBytes <= data.size(); off += kBlockBytes) {
    const auto r = t.test_block(data.data() + off, kBlockBytes);
    if (!r.passed()) qe::check::fail(__FILE__, __LINE__, r.describe());
  }
  CHECK_EQ(t.stats().blocks, uint64_t(50));
  CHECK_EQ(t.stats().blocks_failed, uint64_t(0));
}

// All zeros: 0 ones, X = 16/5000 * 5000^2 - 5000 = 75,000, one run of 20,000 zeros and
// every 32-bit word equal to the previous one. Every test fails.
QE_TEST(zeros_fail_every_test) {
  const auto r = run(std::vector<uint8_t>(kBlockBytes, 0));
  CHECK_EQ(r.failed, uint32_t(qe::fips140::kMonobit | qe::fips140::kPoker | qe::fips140::kRuns |
                              qe::fips140::kLongRun | qe::fips140::kContinuousRun));
  CHECK_EQ(r.ones, 0u);
  CHECK_NEAR(r.poker, 75000.0, 0.0);
  CHECK_EQ(r.longest_run, 20000u);
  CHECK(r.describe().find("monobit") != std::string::npos);
}

// Monobit bounds are strict: 9,725 ones fails, 9,726 passes; 10,274 passes, 10,275 fails.
// Blocks built as "the first k bits set" (runs and poker fail there; only monobit is
// asserted).
QE_TEST(monobit_bounds_are_exclusive) {
  auto with_ones = [](size_t k) {
    std::vector<uint8_t> b(kBlockBytes, 0);
    for (size_t i = 0; i < k; ++i) set_bit(b, i, 1);
    return b;
  };
  CHECK(run(with_ones(9725)).failed & qe::fips140::kMonobit);
  CHECK(!(run(with_ones(9726)).failed & qe::fips140::kMonobit));
  CHECK(!(run(with_ones(10274)).failed & qe::fips140::kMonobit));
  CHECK(run(with_ones(10275)).failed & qe::fips140::kMonobit);
  CHECK_EQ(run(with_ones(9725)).ones, 9725u);
}

// Poker: 5,000 nibbles spread as evenly as possible (312 or 313 of each value) give
// sum f^2 = 8*312^2 + 8*313^2 = 1,562,504 and X = 0.0128: too uniform, fails (< 2.16).
QE_TEST(poker_rejects_too_uniform_nibbles) {
  std::vector<uint8_t> b(kBlockBytes);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(((2 * i) % 16) << 4 | ((2 * i + 1) % 16));
  const auto r = run(b);
  CHECK(r.failed & qe::fips140::kPoker);
  CHECK_NEAR(r.poker, 0.0128, 1e-9);
}

// A run of 26 equal bits fails the long-run test, 25 does not. Written into the middle
// of a passing block from NIST's SHA-1 data.
QE_TEST(long_run_limit_is_26) {
  const auto data = sha1_data();
  std::vector<uint8_t> base(data.begin(), data.begin() + kBlockBytes);
  CHECK(run(base).passed());
  auto with_run = [&](size_t len) {
    auto b = base;
    set_bit(b, 9999, 0);
    for (size_t i = 0; i < len; ++i) set_bit(b, 10000 + i, 1);
    set_bit(b, 10000 + len, 0);
    return b;
  };
  const auto r25 = run(with_run(25));
  CHECK(!(r25.failed & qe::fips140::kLongRun));
  CHECK_EQ(r25.longest_run, 25u);
  const auto r26 = run(with_run(26));
  CHECK(r26.failed & qe::fips140::kLongRun);
}

// The continuous test compares each 32-bit word with the one before it, across blocks.
QE_TEST(continuous_test_spans_blocks) {
  const auto data = sha1_data();
  Tester t;
  std::vector<uint8_t> a(data.begin(), data.begin() + kBlockBytes);
  std::vector<uint8_t> b(data.begin() + kBlockBytes, data.begin() + 2 * kBlockBytes);
  CHECK(t.test_block(a.data(), a.size()).passed());
  std::copy(a.end() - 4, a.end(), b.begin());  // b starts with a's last word
  const auto r = t.test_block(b.data(), b.size());
  CHECK_EQ(r.failed, uint32_t(qe::fips140::kContinuousRun));
  CHECK_EQ(t.stats().failures[4], uint64_t(1));
}

// A whole response in one call equals the blocks one at a time: the same reports, in order,
// the continuous test carried from block to block and from call to call.
QE_TEST(test_blocks_equals_one_block_at_a_time) {
  const auto sha1 = sha1_data();
  std::vector<uint8_t> data(sha1.begin(), sha1.begin() + 12 * kBlockBytes);
  // Block 3 fails monobit (all ones), block 7 starts with block 6's last word (continuous).
  std::fill(data.begin() + 3 * kBlockBytes, data.begin() + 4 * kBlockBytes, uint8_t(0xff));
  std::copy(data.begin() + 7 * kBlockBytes - 4, data.begin() + 7 * kBlockBytes, data.begin() + 7 * kBlockBytes);
  Tester one, batch;
  std::vector<BlockReport> reports;
  batch.test_blocks(data.data(), 5, reports);
  batch.test_blocks(data.data() + 5 * kBlockBytes, 7, reports);
  CHECK_EQ(reports.size(), size_t(12));
  for (size_t b = 0; b < 12; ++b) {
    const BlockReport r = one.test_block(data.data() + b * kBlockBytes, kBlockBytes);
    CHECK_EQ(reports[b].failed, r.failed);
    CHECK_EQ(reports[b].ones, r.ones);
    CHECK_EQ(reports[b].poker, r.poker);
    CHECK_EQ(reports[b].longest_run, r.longest_run);
    CHECK(reports[b].runs == r.runs);
  }
  CHECK(reports[3].failed & qe::fips140::kMonobit);
  CHECK_EQ(reports[7].failed, uint32_t(qe::fips140::kContinuousRun));
  CHECK_EQ(batch.stats().blocks_failed, uint64_t(2));
}

// Cross-check with rngtest (rng-tools5) when installed: the same bytes, the same
// per-test failure totals. rngtest takes the first 32 bits to prime its continuous test,
// so it is fed 4 bytes of priming (different from the first data word) and then the blocks.
QE_TEST(agrees_with_rngtest) {
  if (std::system("command -v rngtest >/dev/null 2>&1") != 0) {
    std::printf("  skipped: rngtest (Debian rng-tools5) is not installed\n");
    return;
  }
  // A deterministic mix: good blocks, biased blocks (P(1) = 0.52), blocks with a planted
  // long run, blocks with planted repeated words, and nibble-biased blocks.
  const auto sha1 = sha1_data();
  std::vector<uint8_t> stream;
  std::mt19937_64 rng(20240611);
  std::bernoulli_distribution biased(0.52);
  for (int blk = 0; blk < 40; ++blk) {
    std::vector<uint8_t> b(sha1.begin() + (blk % 50) * kBlockBytes, sha1.begin() + (blk % 50 + 1) * kBlockBytes);
    switch (blk % 5) {
      case 1:
        for (size_t i = 0; i < 20000; ++i) set_bit(b, i, biased(rng));
        break;
      case 2:
        for (size_t i = 0; i < 30; ++i) set_bit(b, 5000 + i + blk, 1);
        break;
      case 3:
        std::copy(b.begin() + 400, b.begin() + 404, b.begin() + 404);
        break;
      case 4:
        for (size_t i = 0; i < b.size(); i += 7) b[i] = uint8_t((b[i] & 0xF0) | 0x0A);
        break;
      default:
        break;
    }
    stream.insert(stream.end(), b.begin(), b.end());
  }
  Tester ours;
  for (size_t off = 0; off < stream.size(); off += kBlockBytes) ours.test_block(stream.data() + off, kBlockBytes);

  char path[] = "/tmp/qe-fips-XXXXXX";
  const int fd = mkstemp(path);
  CHECK(fd >= 0);
  const uint8_t prime[4] = {0x01, 0x02, 0x03, 0x04};
  CHECK(write(fd, prime, 4) == 4);
  CHECK(write(fd, stream.data(), stream.size()) == ssize_t(stream.size()));
  close(fd);
  const std::string cmd = std::string("rngtest < ") + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  CHECK(p != nullptr);
  std::string out;
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) out += line;
  if (p) pclose(p);
  unlink(path);

  auto count_of = [&](const char* label) -> long {
    const std::string key = std::string(label) + ": ";
    const auto at = out.find(key);
    if (at == std::string::npos) return -1;
    return std::strtol(out.c_str() + at + key.size(), nullptr, 10);
  };
  const auto& s = ours.stats();
  CHECK_EQ(count_of("FIPS 140-2 failures"), long(s.blocks_failed));
  CHECK_EQ(count_of("FIPS 140-2 successes"), long(s.blocks - s.blocks_failed));
  CHECK_EQ(count_of("Monobit"), long(s.failures[0]));
  CHECK_EQ(count_of("Poker"), long(s.failures[1]));
  CHECK_EQ(count_of("Runs"), long(s.failures[2]));
  CHECK_EQ(count_of("Long run"), long(s.failures[3]));
  CHECK_EQ(count_of("Continuous run"), long(s.failures[4]));
  // The mix exercises every test.
  for (int t = 0; t < qe::fips140::kTestCount; ++t) CHECK(s.failures[size_t(t)] > 0);
}
