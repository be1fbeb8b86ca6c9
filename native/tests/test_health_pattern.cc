// The pattern check: Berlekamp-Massey on sequences whose linear complexity is known by
// construction (and SP 800-22's worked example), NIST's SHA-1 generator output passing
// block after block, and the deterministic streams the per-sample health tests let
// through (a byte counter, a replayed 1 KiB block, a period that is not a multiple of the
// chunk size, a xorshift/LFSR generator) failing on their first usable block.
#include <cstdint>
#include <string>
#include <vector>

#include "health/pattern.h"
#include "tests/check.h"

using qe::pattern::BlockReport;
using qe::pattern::linear_complexity;
using qe::pattern::Tester;

namespace {

std::vector<uint8_t> sha1_data() {
  const std::string s = qe::check::read_file(qe::check::vector_path("data.sha1"));
  return std::vector<uint8_t>(s.begin(), s.end());
}

// Bits (MSB first) packed into bytes.
std::vector<uint8_t> pack(const std::vector<int>& bits) {
  std::vector<uint8_t> out((bits.size() + 7) / 8, 0);
  for (size_t i = 0; i < bits.size(); ++i)
    if (bits[i]) out[i / 8] |= uint8_t(0x80u >> (i % 8));
  return out;
}

// n bits of the LFSR s_k = s_(k-17) ^ s_(k-14) (x^17 + x^3 + 1 is primitive).
std::vector<int> lfsr17(size_t n) {
  std::vector<int> s(n, 0);
  s[0] = 1;
  s[5] = 1;
  s[16] = 1;
  for (size_t k = 17; k < n; ++k) s[k] = s[k - 17] ^ s[k - 14];
  return s;
}

}  // namespace

QE_TEST(linear_complexity_of_known_sequences) {
  // SP 800-22 rev1a §2.10.4, step 2: the linear complexity of 1101011110001 is 4.
  CHECK_EQ(linear_complexity(pack({1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 0, 1}).data(), 13), size_t(4));
  // All zeros: 0. A single one at position k (0-based) of n bits: k + 1.
  std::vector<int> bits(2048, 0);
  CHECK_EQ(linear_complexity(pack(bits).data(), 2048), size_t(0));
  for (size_t k : {size_t(0), size_t(63), size_t(64), size_t(1000), size_t(2047)}) {
    std::vector<int> impulse(2048, 0);
    impulse[k] = 1;
    CHECK_EQ(linear_complexity(pack(impulse).data(), 2048), k + 1);
  }
  // An LFSR of degree 17, seen over 40 bits and over 2,048 bits: 17.
  CHECK_EQ(linear_complexity(pack(lfsr17(40)).data(), 40), size_t(17));
  CHECK_EQ(linear_complexity(pack(lfsr17(2048)).data(), 2048), size_t(17));
  // The same sequence with its last bit (index n - 1) flipped: (n - 1) + 1 - 17.
  auto flipped = lfsr17(2048);
  flipped.back() ^= 1;
  CHECK_EQ(linear_complexity(pack(flipped).data(), 2048), size_t(2048 - 17));
}

QE_TEST(random_data_passes_block_after_block) {
  const auto data = sha1_data();
  Tester t;
  size_t blocks = 0;
  for (size_t off = 0; off + 1024 <= data.size(); off += 1024, ++blocks) {
    const BlockReport r = t.test_block(data.data() + off, 1024);
    if (!r.passed) qe::check::fail(__FILE__, __LINE__, r.describe());
    // Random bits: within a few bits of half the length.
    CHECK(r.linear_complexity >= 640 - 8 && r.linear_complexity <= 640 + 8);
    CHECK_EQ(r.linear_bits, size_t(1280));
  }
  CHECK_EQ(blocks, size_t(122));
}

QE_TEST(byte_counter_fails_in_its_first_block) {
  std::vector<uint8_t> block(1024);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i);
  Tester t;
  const BlockReport r = t.test_block(block.data(), block.size());
  CHECK(!r.passed);
  CHECK_EQ(r.repeat_distance, size_t(256));
  CHECK(r.describe().find("256 bytes earlier") != std::string::npos);
}

QE_TEST(replayed_block_fails_on_its_first_replay) {
  const auto data = sha1_data();
  Tester t;
  CHECK(t.test_block(data.data(), 1024).passed);
  CHECK(t.test_block(data.data() + 1024, 1024).passed);
  const BlockReport r = t.test_block(data.data(), 1024);
  CHECK(!r.passed);
  CHECK_EQ(r.repeat_distance, size_t(2048));
  CHECK(!r.linear);
}

QE_TEST(period_that_is_not_a_multiple_of_32_bytes) {
  const auto data = sha1_data();
  // 1,000 random bytes repeated: the second block already contains the repeat.
  std::vector<uint8_t> stream(4096);
  for (size_t i = 0; i < stream.size(); ++i) stream[i] = data[i % 1000];
  Tester t;
  // The first block holds only 24 bytes of the repeat (fewer than 64): not yet evidence.
  const BlockReport first = t.test_block(stream.data(), 1024);
  CHECK_EQ(first.repeat_distance, size_t(0));
  const BlockReport second = t.test_block(stream.data() + 1024, 1024);
  CHECK(!second.passed);
  CHECK_EQ(second.repeat_distance, size_t(1000));
}

QE_TEST(xorshift_generator_fails_linear_complexity) {
  // xorshift64 is linear over GF(2): its output bytes have linear complexity <= 8 x 64 = 512.
  uint64_t x = 0x9e3779b97f4a7c15ull;
  std::vector<uint8_t> block(1024);
  for (auto& b : block) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  Tester t;
  const BlockReport r = t.test_block(block.data(), block.size());
  CHECK(!r.passed);
  CHECK(r.linear);
  CHECK(r.linear_complexity <= 512);
  CHECK_EQ(r.repeat_distance, size_t(0));
}

QE_TEST(history_is_bounded_and_reset_forgets) {
  const auto data = sha1_data();
  Tester t({.history_bytes = 4096, .linear_bits = 2048, .linear_margin = 32});
  CHECK(t.test_block(data.data(), 1024).passed);
  for (size_t i = 1; i <= 4; ++i) CHECK(t.test_block(data.data() + 1024 * i, 1024).passed);
  // Block 0 is now 5 KiB back, beyond the 4 KiB history: not seen as a repeat.
  CHECK(t.test_block(data.data(), 1024).passed);
  t.reset();
  CHECK(t.test_block(data.data() + 1024, 1024).passed);
  CHECK(!t.test_block(data.data() + 1024, 1024).passed);
}

QE_TEST(rejects_bad_sizes) {
  CHECK_THROWS(std::invalid_argument, Tester({.history_bytes = 100, .linear_bits = 2048, .linear_margin = 32}));
  CHECK_THROWS(std::invalid_argument, Tester({.history_bytes = 4096, .linear_bits = 64, .linear_margin = 32}));
  Tester t;
  std::vector<uint8_t> b(100);
  CHECK_THROWS(std::invalid_argument, t.test_block(b.data(), b.size()));
  CHECK_THROWS(std::invalid_argument, t.test_block(b.data(), 32));
}

QE_TEST(a_batch_gives_the_reports_of_its_blocks_one_by_one) {
  // A stream that mixes random blocks (data.sha1), xorshift blocks (linear), LFSR bits, a
  // replayed block and an all-zero one, tested in batches of every size around the
  // bit-sliced thresholds, against a second tester given the same blocks one at a time.
  const auto data = sha1_data();
  std::vector<uint8_t> stream;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  const std::vector<uint8_t> lfsr = pack(lfsr17(8192));
  for (size_t b = 0; b < 300; ++b) {
    std::vector<uint8_t> block(1024);
    switch (b % 23) {
      case 5:
        for (auto& v : block) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          v = static_cast<uint8_t>(x);
        }
        break;
      case 11: block.assign(lfsr.begin(), lfsr.begin() + 1024); break;
      case 17: block.assign(stream.end() - 3 * 1024, stream.end() - 2 * 1024); break;  // replay
      case 19: break;  // zeros
      default: block.assign(data.begin() + static_cast<std::ptrdiff_t>(b * 1024 % 100000),
                            data.begin() + static_cast<std::ptrdiff_t>(b * 1024 % 100000 + 1024));
    }
    stream.insert(stream.end(), block.begin(), block.end());
  }
  for (const qe::bm::Kernel kernel : {qe::bm::Kernel::Portable, qe::bm::Kernel::Best}) {
    Tester batched({}, kernel), single({}, kernel);
    size_t at = 0, failures = 0;
    for (const size_t count : {size_t{1}, size_t{27}, size_t{28}, size_t{64}, size_t{65}, size_t{92}, size_t{23}}) {
      std::vector<BlockReport> reports(count);
      batched.test_blocks(stream.data() + at * 1024, 1024, count, reports.data());
      for (size_t b = 0; b < count; ++b, ++at) {
        const BlockReport want = single.test_block(stream.data() + at * 1024, 1024);
        const BlockReport& got = reports[b];
        if (got.passed != want.passed || got.repeat_distance != want.repeat_distance ||
            got.linear_complexity != want.linear_complexity || got.linear_bits != want.linear_bits ||
            got.linear != want.linear) {
          qe::check::fail(__FILE__, __LINE__, "block " + std::to_string(at) + ": " + got.describe() + " / " + want.describe());
          return;
        }
        failures += !want.passed;
      }
    }
    CHECK_EQ(at, size_t{300});
    CHECK(failures >= 30);  // the structured blocks were there to be found
  }
}
