// The fast paths of the health gate (issue 30) against the plain code they replace:
// Berlekamp-Massey's vector kernels against its portable one (and against the earlier
// bit-packed algorithm) on >= 10^5 random and structured bit strings of every length
// 1..4096; the word-parallel RCT/APT block check and FIPS 140-2 counts against the
// per-sample loops; and pattern testers of every kernel on the same streams.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "health/berlekamp_massey.h"
#include "health/fips140.h"
#include "health/health.h"
#include "health/pattern.h"
#include "tests/bm_reference.h"
#include "tests/check.h"

using qe::bm::Kernel;

namespace {

// Structured strings: all zeros, all ones, an impulse, periodic, LFSR-like, sparse, and
// random with a long stretch copied (each stresses a different path of the updates).
void fill(std::vector<uint8_t>& buf, size_t nbytes, unsigned kind, std::mt19937_64& rng) {
  buf.assign(nbytes + 8, 0);
  for (size_t i = 0; i < nbytes; ++i) buf[i] = static_cast<uint8_t>(rng());
  switch (kind % 8) {
    case 0: break;  // random
    case 1: std::fill(buf.begin(), buf.end(), 0); break;
    case 2: std::fill(buf.begin(), buf.end(), 0xff); break;
    case 3: {  // one bit set
      std::fill(buf.begin(), buf.end(), 0);
      const size_t bit = rng() % (nbytes * 8);
      buf[bit / 8] = static_cast<uint8_t>(0x80u >> (bit % 8));
      break;
    }
    case 4: {  // periodic with a random period
      const size_t period = 1 + rng() % 97;
      for (size_t i = period; i < nbytes; ++i) buf[i] = buf[i - period];
      break;
    }
    case 5: {  // an LFSR of random degree and taps, one bit at a time
      const size_t degree = 1 + rng() % 700;
      std::vector<uint8_t> s(nbytes * 8);
      std::vector<size_t> taps{degree};
      for (int t = 0; t < 3; ++t) taps.push_back(1 + rng() % degree);
      for (size_t i = 0; i < s.size(); ++i) {
        if (i < degree) {
          s[i] = rng() & 1;
        } else {
          uint8_t v = 0;
          for (size_t t : taps) v ^= s[i - t];
          s[i] = v;
        }
      }
      std::fill(buf.begin(), buf.end(), 0);
      for (size_t i = 0; i < s.size(); ++i) buf[i / 8] |= static_cast<uint8_t>(s[i] << (7 - i % 8));
      break;
    }
    case 6:  // sparse
      for (size_t i = 0; i < nbytes; ++i) buf[i] = (rng() % 16 == 0) ? static_cast<uint8_t>(1u << (rng() % 8)) : 0;
      break;
    case 7: {  // random, then a long copy of an earlier part
      const size_t from = rng() % (nbytes / 2 + 1);
      for (size_t i = nbytes / 2; i < nbytes; ++i) buf[i] = buf[from + (i - nbytes / 2) % (nbytes / 2 - from + 1)];
      break;
    }
  }
}

}  // namespace

QE_TEST(berlekamp_massey_kernels_agree_on_every_length) {
  std::mt19937_64 rng(30);
  std::vector<qe::bm::LinearComplexity> kernels;
  for (Kernel k : {Kernel::Portable, Kernel::Avx2, Kernel::Avx512})
    if (qe::bm::kernel_available(k)) kernels.emplace_back(k);
  CHECK(!kernels.empty());
  std::vector<uint8_t> buf;
  size_t strings = 0, mismatches = 0;
  // 10^5 strings: lengths 1..4096 in turn (each length ~25 times), kinds in turn.
  for (size_t i = 0; i < 100'000; ++i) {
    const size_t nbits = 1 + (i * 41) % 4096;
    fill(buf, (nbits + 7) / 8, static_cast<unsigned>(i % 8), rng);
    const size_t expected = kernels[0](buf.data(), nbits);
    for (size_t k = 1; k < kernels.size(); ++k) {
      const size_t got = kernels[k](buf.data(), nbits);
      if (got != expected && ++mismatches <= 5)
        CHECK_EQ(got, expected);  // reports the first few with their values
    }
    // The earlier algorithm is slower: every 50th string.
    if (i % 50 == 0) CHECK_EQ(expected, qe::test::reference_linear_complexity(buf.data(), nbits));
    ++strings;
  }
  CHECK_EQ(mismatches, size_t(0));
  CHECK_EQ(strings, size_t(100'000));
}

QE_TEST(rct_apt_block_check_matches_the_per_sample_loop) {
  std::mt19937_64 rng(7);
  for (double h : {8.0, 7.5, 6.0, 3.0, 1.0}) {
    qe::health::Config config;
    config.min_entropy = h;
    qe::health::Tester fast(config), slow(config);
    slow.use_word_parallel(false);
    for (int block = 0; block < 3000; ++block) {
      const size_t size = block % 5 == 0 ? 1 + rng() % 3000 : 1024;
      std::vector<uint8_t> data(size);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      // Now and then: a run (sometimes across the block boundary) or a biased stretch.
      const unsigned what = rng() % 12;
      if (what == 0) {
        const size_t at = rng() % size, len = 1 + rng() % 12;
        for (size_t i = at; i < std::min(size, at + len); ++i) data[i] = data[at];
      } else if (what == 1) {
        for (size_t i = size - std::min<size_t>(size, 3); i < size; ++i) data[i] = 0x5a;
      } else if (what == 2) {
        for (size_t i = 0; i < std::min<size_t>(size, 3); ++i) data[i] = 0x5a;
      } else if (what == 3) {
        for (auto& b : data)
          if (rng() % 4 == 0) b = 0x11;
      }
      const auto a = fast.feed(data.data(), size);
      const auto b = slow.feed(data.data(), size);
      CHECK_EQ(a.passed, b.passed);
      CHECK_EQ(a.ready, b.ready);
      CHECK_EQ(a.failures, b.failures);
      CHECK_EQ(a.first_failure.has_value(), b.first_failure.has_value());
      if (a.first_failure && b.first_failure) CHECK_EQ(a.first_failure->describe(), b.first_failure->describe());
    }
    CHECK_EQ(fast.stats().samples, slow.stats().samples);
    CHECK_EQ(fast.stats().rct_failures, slow.stats().rct_failures);
    CHECK_EQ(fast.stats().apt_failures, slow.stats().apt_failures);
    CHECK_EQ(fast.stats().blocks_failed, slow.stats().blocks_failed);
  }
}

QE_TEST(fips140_kernels_count_as_bit_by_bit) {
  using qe::fips140::Kernel;
  std::mt19937_64 rng(140);
  qe::fips140::Tester slow, words, bw, best;
  slow.use_kernel(Kernel::BitByBit);
  words.use_kernel(Kernel::Words);
  bw.use_kernel(Kernel::Avx512bw);
  std::printf("  (FIPS 140-2 kernels on this CPU: %s, %s)\n", qe::fips140::kernel_name(Kernel::Avx512bw),
              qe::fips140::kernel_name(Kernel::Best));
  std::vector<uint8_t> block(qe::fips140::kBlockBytes);
  for (int i = 0; i < 2000; ++i) {
    for (auto& b : block) b = static_cast<uint8_t>(rng());
    switch (i % 8) {
      case 1:  // a long run of zeros or ones somewhere, maybe at an end
        std::fill(block.begin() + static_cast<long>(rng() % 2000), block.begin() + static_cast<long>(2000 + rng() % 500),
                  (rng() & 1) ? 0xff : 0x00);
        break;
      case 2: std::fill(block.begin(), block.end(), i % 16 == 2 ? 0x00 : 0xff); break;
      case 3: std::fill(block.begin(), block.end(), 0xaa); break;
      case 4:
        for (auto& b : block) b &= static_cast<uint8_t>(rng());  // biased towards 0
        break;
      case 5: block[0] = 0xff, block[1] = 0xff, block[2498] = 0, block[2499] = 0; break;
      case 6: {  // runs of every length up to 70 bits, of both values, across word boundaries
        size_t bit = rng() % 64;
        int value = static_cast<int>(rng() & 1);
        while (bit < 20'000) {
          const size_t len = 1 + rng() % 70;
          for (size_t j = bit; j < std::min<size_t>(bit + len, 20'000); ++j) {
            const uint8_t mask = static_cast<uint8_t>(0x80u >> (j % 8));
            block[j / 8] = static_cast<uint8_t>(value ? block[j / 8] | mask : block[j / 8] & ~mask);
          }
          bit += len;
          value ^= 1;
        }
        break;
      }
      case 7:  // a run that ends exactly at the block's last bit or starts at its first
        std::fill(block.end() - static_cast<long>(1 + rng() % 40), block.end(), (i & 8) ? 0xff : 0x00);
        std::fill(block.begin(), block.begin() + static_cast<long>(1 + rng() % 40), (i & 16) ? 0xff : 0x00);
        break;
    }
    const auto expected = slow.test_block(block.data(), block.size());
    for (auto* tester : {&words, &bw, &best}) {
      const auto got = tester->test_block(block.data(), block.size());
      CHECK_EQ(got.failed, expected.failed);
      CHECK_EQ(got.ones, expected.ones);
      CHECK_EQ(got.poker, expected.poker);
      CHECK_EQ(got.longest_run, expected.longest_run);
      for (int v = 0; v < 2; ++v)
        for (int k = 0; k < 6; ++k) CHECK_EQ(got.runs[v][k], expected.runs[v][k]);
    }
  }
}

QE_TEST(pattern_testers_of_both_kernels_agree) {
  std::mt19937_64 rng(14);
  qe::pattern::Tester portable(qe::pattern::Config{}, Kernel::Portable), best(qe::pattern::Config{}, Kernel::Best);
  std::vector<uint8_t> stream(512 * 1024);
  for (auto& b : stream) b = static_cast<uint8_t>(rng());
  // Repeats at several distances, and a byte counter.
  std::copy(stream.begin() + 1000, stream.begin() + 3000, stream.begin() + 40'000);
  std::copy(stream.begin() + 100'000, stream.begin() + 100'500, stream.begin() + 150'013);
  for (size_t i = 300'000; i < 302'048; ++i) stream[i] = static_cast<uint8_t>(i);
  for (size_t off = 0; off < stream.size(); off += 1024) {
    const auto a = portable.test_block(stream.data() + off, 1024);
    const auto b = best.test_block(stream.data() + off, 1024);
    CHECK_EQ(a.passed, b.passed);
    CHECK_EQ(a.repeat_distance, b.repeat_distance);
    CHECK_EQ(a.linear_complexity, b.linear_complexity);
  }
}

// A repeat starting at every byte offset of a block, found at its exact distance by the
// tester of every kernel: the offset modulo 32 picks the lane of the vector fingerprint
// code that hashes the repeated windows, so a lane that hashed the wrong bytes misses
// them. (The copy holds eight aligned chunks: the index is direct-mapped, and a later
// chunk that overwrote one chunk's entry could hide a repeat of only two.)
QE_TEST(pattern_testers_of_every_kernel_find_a_repeat_at_every_offset) {
  constexpr size_t kBlock = 1024, kCopy = 288;
  std::vector<Kernel> kernels{Kernel::Portable};
  for (Kernel k : {Kernel::Avx2, Kernel::Avx512})
    if (qe::bm::kernel_available(k)) kernels.push_back(k);
  std::mt19937_64 rng(31);
  for (size_t offset = 0; offset + kCopy <= kBlock; ++offset) {
    // Eight random blocks; the last gets kCopy bytes from `distance` bytes before `offset`.
    std::vector<uint8_t> stream(8 * kBlock);
    for (auto& b : stream) b = static_cast<uint8_t>(rng());
    const size_t at = 7 * kBlock + offset;
    const size_t distance = kBlock + kCopy + rng() % (5 * kBlock);
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at - distance), kCopy, stream.begin() + static_cast<std::ptrdiff_t>(at));
    for (Kernel kernel : kernels) {
      qe::pattern::Config repeats_only;
      repeats_only.linear_bits = 0;
      qe::pattern::Tester tester(repeats_only, kernel);
      std::vector<qe::pattern::BlockReport> reports(7);
      tester.test_blocks(stream.data(), kBlock, 7, reports.data());
      for (size_t b = 0; b < 7; ++b) CHECK_EQ(reports[b].repeat_distance, size_t(0));
      const auto last = tester.test_block(stream.data() + 7 * kBlock, kBlock);
      if (last.repeat_distance != distance) {
        std::fprintf(stderr, "kernel %s, offset %zu\n", qe::bm::kernel_name(kernel), offset);
        CHECK_EQ(last.repeat_distance, distance);
        return;
      }
    }
  }
}
