// SP 800-90B §4.4 health tests: cutoffs against the standard's own published numbers,
// and the tests' behaviour on streams whose verdict is known by construction.
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "health/health.h"
#include "tests/check.h"

using qe::health::Config;
using qe::health::SymbolMode;
using qe::health::Test;
using qe::health::Tester;

namespace {

// The first 1,000,000 bits of NIST's data.e packed into bytes, most significant bit first:
// a fixed, public, random-looking input.
std::vector<uint8_t> e_bytes() {
  const std::string text = qe::check::read_file(qe::check::vector_path("data.e"));
  std::vector<uint8_t> out;
  uint8_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c != '0' && c != '1') continue;
    acc = uint8_t(acc << 1 | (c == '1'));
    if (++bits % 8 == 0) out.push_back(acc);
    if (bits == 1'000'000) break;
  }
  return out;
}

Config bytes_config(double h) {
  Config c;
  c.mode = SymbolMode::Bytes;
  c.min_entropy = h;
  return c;
}

}  // namespace

// SP 800-90B §4.4.1 gives the worked example H = 2, alpha = 2^-20: C = 1 + ceil(20/2) = 11.
QE_TEST(rct_cutoff_matches_the_standard) {
  CHECK_EQ(qe::health::rct_cutoff(2.0), 11u);
  // product.md §6 (bytes, alpha = 2^-20).
  CHECK_EQ(qe::health::rct_cutoff(8.0), 4u);
  CHECK_EQ(qe::health::rct_cutoff(7.9), 4u);
  CHECK_EQ(qe::health::rct_cutoff(7.5), 4u);
  CHECK_EQ(qe::health::rct_cutoff(7.0), 4u);
  CHECK_EQ(qe::health::rct_cutoff(6.0), 5u);
  // An exact quotient is not rounded up: 20 / 5 = 4, so C = 5.
  CHECK_EQ(qe::health::rct_cutoff(5.0), 5u);
  CHECK_EQ(qe::health::rct_cutoff(1.0), 21u);
}

// SP 800-90B Table 2 (alpha = 2^-20): W = 512 for non-binary and W = 1024 for binary data.
QE_TEST(apt_cutoff_matches_sp800_90b_table_2) {
  CHECK_EQ(qe::health::apt_cutoff(512, 0.5), 410u);
  CHECK_EQ(qe::health::apt_cutoff(512, 1.0), 311u);
  CHECK_EQ(qe::health::apt_cutoff(512, 2.0), 177u);
  CHECK_EQ(qe::health::apt_cutoff(512, 4.0), 62u);
  CHECK_EQ(qe::health::apt_cutoff(512, 8.0), 13u);
  CHECK_EQ(qe::health::apt_cutoff(1024, 0.2), 941u);
  CHECK_EQ(qe::health::apt_cutoff(1024, 0.4), 840u);
  CHECK_EQ(qe::health::apt_cutoff(1024, 0.6), 748u);
  CHECK_EQ(qe::health::apt_cutoff(1024, 0.8), 664u);
  CHECK_EQ(qe::health::apt_cutoff(1024, 1.0), 589u);
}

QE_TEST(apt_cutoff_matches_product_table) {
  CHECK_EQ(qe::health::apt_cutoff(512, 7.9), 13u);
  CHECK_EQ(qe::health::apt_cutoff(512, 7.5), 15u);
  CHECK_EQ(qe::health::apt_cutoff(512, 7.0), 18u);
  CHECK_EQ(qe::health::apt_cutoff(512, 6.0), 25u);
}

// Small cases summed by hand: Binomial(10, 1/2): P(X >= 8) = (45 + 10 + 1) / 1024.
QE_TEST(binomial_tail_exact_small_cases) {
  CHECK_NEAR(qe::health::binomial_upper_tail(10, 0.5, 8), 56.0 / 1024.0, 1e-15);
  CHECK_NEAR(qe::health::binomial_upper_tail(10, 0.5, 0), 1.0, 0.0);
  CHECK_NEAR(qe::health::binomial_upper_tail(10, 0.5, 11), 0.0, 0.0);
  // P(X >= 1) = 1 - (1 - p)^n.
  CHECK_NEAR(qe::health::binomial_upper_tail(512, 1.0 / 256, 1), 1.0 - std::pow(255.0 / 256, 512), 1e-13);
  // P(X = n) = p^n, far below DBL_MIN for the full window of bits: no NaN, no garbage.
  CHECK_NEAR(qe::health::binomial_upper_tail(1024, 0.5, 1024), 0.0, 1e-300);
}

QE_TEST(config_is_validated) {
  CHECK_THROWS(std::invalid_argument, Tester(bytes_config(0.0)));
  CHECK_THROWS(std::invalid_argument, Tester(bytes_config(8.5)));
  CHECK_THROWS(std::invalid_argument, Tester(bytes_config(std::nan(""))));
  Config bits;
  bits.mode = SymbolMode::Bits;
  bits.min_entropy = 2.0;  // a bit cannot carry 2 bits
  CHECK_THROWS(std::invalid_argument, Tester(bits));
  Config short_startup = bytes_config(8);
  short_startup.startup_samples = 100;
  CHECK_THROWS(std::invalid_argument, Tester(short_startup));
}

// With H = 8 the RCT cutoff is 4: three equal bytes in a row pass, four fail, and the
// failure names the test, the value and the sample where the run reached the cutoff.
QE_TEST(rct_fires_at_the_cutoff_and_names_the_place) {
  Tester t(bytes_config(8));
  std::vector<uint8_t> block(64);
  for (size_t i = 0; i < block.size(); ++i) block[i] = uint8_t(i);
  block[10] = block[11] = block[12] = 0xAA;  // three in a row: fine
  auto r = t.feed(block.data(), block.size());
  CHECK(r.passed);
  block[20] = block[21] = block[22] = block[23] = 0xBB;  // four in a row
  r = t.feed(block.data(), block.size());
  CHECK(!r.passed);
  CHECK_EQ(r.failures, 1u);
  CHECK(r.first_failure.has_value());
  CHECK(r.first_failure->test == Test::RepetitionCount);
  CHECK_EQ(r.first_failure->block_offset, size_t(23));
  CHECK_EQ(r.first_failure->sample_index, uint64_t(64 + 23));
  CHECK_EQ(r.first_failure->symbol, 0xBBu);
  CHECK_EQ(r.first_failure->count, 4u);
  CHECK(r.first_failure->describe().find("repetition-count") != std::string::npos);
  CHECK_EQ(t.stats().rct_failures, uint64_t(1));
}

// A run that straddles two blocks is one run.
QE_TEST(rct_run_straddles_blocks) {
  Tester t(bytes_config(8));
  std::vector<uint8_t> a = {1, 2, 3, 7, 7};
  std::vector<uint8_t> b = {7, 7, 9};
  CHECK(t.feed(a.data(), a.size()).passed);
  auto r = t.feed(b.data(), b.size());
  CHECK(!r.passed);
  CHECK_EQ(r.first_failure->block_offset, size_t(1));
}

// A long run is one failure event, not one per repeat.
QE_TEST(rct_reports_a_long_run_once) {
  Tester t(bytes_config(8));
  std::vector<uint8_t> block(100, 0x42);
  for (size_t i = 0; i < block.size(); i += 2) block[i] = uint8_t(i + 1);  // no APT trigger
  for (size_t i = 30; i < 60; ++i) block[i] = 0x42;
  auto r = t.feed(block.data(), block.size());
  CHECK(!r.passed);
  CHECK_EQ(t.stats().rct_failures, uint64_t(1));
  CHECK(r.first_failure->test == Test::RepetitionCount);
}

// APT at H = 8: cutoff 13 in a window of 512. The window's first byte appearing 12 times
// passes, 13 times fails; occurrences are counted only inside one window.
QE_TEST(apt_fires_at_the_cutoff_within_one_window) {
  auto make_window = [](int copies_of_first) {
    std::vector<uint8_t> w(512);
    // Background: bytes 1..255 cycling, never 0, never repeating back to back.
    for (size_t i = 0; i < w.size(); ++i) w[i] = uint8_t(1 + i % 255);
    for (int k = 0; k < copies_of_first; ++k) w[size_t(k) * 40] = 0;  // spaced out: no RCT
    return w;
  };
  {
    Tester t(bytes_config(8));
    auto w = make_window(12);
    auto r = t.feed(w.data(), w.size());
    CHECK(r.passed);
  }
  {
    Tester t(bytes_config(8));
    auto w = make_window(13);
    auto r = t.feed(w.data(), w.size());
    CHECK(!r.passed);
    CHECK(r.first_failure->test == Test::AdaptiveProportion);
    CHECK_EQ(r.first_failure->count, 13u);
    CHECK_EQ(r.first_failure->block_offset, size_t(12 * 40));
    CHECK_EQ(r.first_failure->cutoff, 13u);
  }
  {
    // 8 copies at the end of one window and 8 at the start of the next (whose first
    // sample is the reference again): 8 + 8 split over two windows never reaches 13.
    Tester t(bytes_config(8));
    std::vector<uint8_t> two(1024);
    for (size_t i = 0; i < two.size(); ++i) two[i] = uint8_t(1 + i % 255);
    two[0] = 0;
    for (int k = 0; k < 8; ++k) two[512 - 1 - size_t(k) * 20] = 0;
    for (int k = 0; k < 8; ++k) two[512 + size_t(k) * 20] = 0;
    auto r = t.feed(two.data(), two.size());
    CHECK(r.passed);
  }
}

// Lower assessed entropy means looser cutoffs: 13 copies fail at H = 8 but pass at H = 7
// (APT cutoff 18 there).
QE_TEST(apt_cutoff_follows_configured_entropy) {
  std::vector<uint8_t> w(512);
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint8_t(1 + i % 255);
  for (int k = 0; k < 13; ++k) w[size_t(k) * 30] = 0;
  Tester strict(bytes_config(8));
  Tester loose(bytes_config(7));
  CHECK_EQ(loose.apt_cutoff(), 18u);
  CHECK(!strict.feed(w.data(), w.size()).passed);
  CHECK(loose.feed(w.data(), w.size()).passed);
}

// A stuck source (all zeros) fails at once, and never becomes ready.
QE_TEST(stuck_source_fails_and_is_never_ready) {
  Tester t(bytes_config(8));
  std::vector<uint8_t> zeros(1024, 0);
  for (int i = 0; i < 20; ++i) {
    auto r = t.feed(zeros.data(), zeros.size());
    CHECK(!r.passed);
    CHECK(!r.ready);
  }
  // Even a tiny block inside the stuck run fails and names the run's test.
  auto r = t.feed(zeros.data(), 3);
  CHECK(!r.passed);
  CHECK(r.first_failure->test == Test::RepetitionCount);
  CHECK_EQ(r.failures, 0u);  // the run was already reported
  CHECK_EQ(t.stats().rct_failures, uint64_t(1));
  CHECK_EQ(t.stats().blocks_failed, uint64_t(21));
}

// A short repeating pattern (period 4, no byte repeated back to back) passes the RCT
// but the APT catches it: the window's first byte recurs 128 times in 512.
QE_TEST(short_repeating_pattern_fails_apt) {
  Tester t(bytes_config(8));
  std::vector<uint8_t> block(1024);
  for (size_t i = 0; i < block.size(); ++i) block[i] = "qent"[i % 4];
  auto r = t.feed(block.data(), block.size());
  CHECK(!r.passed);
  CHECK(r.first_failure->test == Test::AdaptiveProportion);
  CHECK_EQ(t.stats().rct_failures, uint64_t(0));
}

// Start-up (§4.3): output is trusted only after 1,024 consecutive passing samples, and
// again only after 1,024 more once a test has fired.
QE_TEST(startup_needs_1024_clean_samples) {
  const std::vector<uint8_t> e = e_bytes();
  Tester t(bytes_config(8));
  auto r = t.feed(e.data(), 1000);
  CHECK(r.passed);
  CHECK(!r.ready);
  r = t.feed(e.data() + 1000, 24);
  CHECK(r.passed);
  CHECK(r.ready);
  const std::vector<uint8_t> stuck(8, 0x55);
  r = t.feed(stuck.data(), stuck.size());
  CHECK(!r.passed);
  CHECK(!r.ready);
  r = t.feed(e.data() + 2000, 1020);
  CHECK(!r.ready);
  r = t.feed(e.data() + 3020, 4);
  CHECK(r.ready);
}

// A million bits of e (public, fixed) pass byte-mode tests at H = 8 block after block.
QE_TEST(e_expansion_passes_byte_mode) {
  const std::vector<uint8_t> e = e_bytes();
  CHECK_EQ(e.size(), size_t(125'000));
  Tester t(bytes_config(8));
  for (size_t off = 0; off + 1024 <= e.size(); off += 1024) {
    auto r = t.feed(e.data() + off, 1024);
    if (!r.passed) qe::check::fail(__FILE__, __LINE__, r.first_failure->describe());
  }
  CHECK(t.ready());
}

// Bit mode: window 1024, H per bit. At H = 1, RCT cutoff 21 and APT cutoff 589.
QE_TEST(bit_mode_cutoffs_and_verdicts) {
  Config c;
  c.mode = SymbolMode::Bits;
  c.min_entropy = 1.0;
  Tester t(c);
  CHECK_EQ(t.window(), 1024u);
  CHECK_EQ(t.rct_cutoff(), 21u);
  CHECK_EQ(t.apt_cutoff(), 589u);
  const std::vector<uint8_t> e = e_bytes();
  auto r = t.feed(e.data(), 20'000);
  CHECK(r.passed);
  CHECK(r.ready);
  // 0xFF 0xFF 0xF0: a run of 20 one-bits passes, 0xFF 0xFF 0xF8: 21 fails.
  Tester u(c);
  const uint8_t twenty[] = {0x0F, 0xFF, 0xFF, 0x00 /* 4+16 = 20 ones */};
  CHECK(u.feed(twenty, sizeof twenty).passed);
  Tester v(c);
  const uint8_t twenty_one[] = {0x1F, 0xFF, 0xFF, 0x00 /* 5+16 = 21 ones */};
  auto f = v.feed(twenty_one, sizeof twenty_one);
  CHECK(!f.passed);
  CHECK(f.first_failure->test == Test::RepetitionCount);
  CHECK_EQ(f.first_failure->block_offset, size_t(2));  // the 21st one is in byte 2
  CHECK_EQ(f.first_failure->sample_index, uint64_t(23));
  // A biased bit source (7 of 8 bits set) fails the APT in bit mode.
  Tester w(c);
  std::vector<uint8_t> biased(256, 0xFE);
  for (size_t i = 0; i < biased.size(); i += 3) biased[i] = 0x7F;
  auto b = w.feed(biased.data(), biased.size());
  CHECK(!b.passed);
  CHECK(w.stats().apt_failures > 0);
}

QE_TEST(reset_starts_over) {
  Tester t(bytes_config(8));
  std::vector<uint8_t> zeros(600, 0);
  CHECK(!t.feed(zeros.data(), zeros.size()).passed);
  t.reset();
  CHECK_EQ(t.stats().samples, uint64_t(0));
  CHECK(!t.ready());
  const std::vector<uint8_t> e = e_bytes();
  CHECK(t.feed(e.data(), 2048).ready);
}
