// SP 800-22 tests frequency, block frequency, cumulative sums, runs, longest run, rank,
// DFT and universal, and the bit-sequence builders. Checked against NIST's own numbers:
// the worked examples of SP 800-22 rev1a and the P-values printed by the reference
// implementation sts-2.1.2 for data.e and data.sha1 (../shared/vectors). Word-level
// shortcuts are also cross-checked against bit-at-a-time statistics written straight
// from the SP 800-22 text, on lengths that are not multiples of 64 and unaligned slices.
#include <algorithm>
#include <ctime>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sts/bitwords.h"
#include "sts/fft_detail.h"
#include "sts/special.h"
#include "sts/sts.h"
#include "tests/check.h"
#include "tests/reference.h"
#include "tests/sts_vectors.h"

namespace {

using namespace qe::sts;

// The first 100 bits of pi, used by most "n = 100" examples in SP 800-22.
const char* const kPi100 =
    "11001001000011111101101010100010001000010110100011"
    "00001000110100110001001100011001100010100010111000";

Bits from(const char* s) { return bits_from_ascii(s); }

using qe::check::e_bits;
using qe::check::sha1_bits;

double p0(const TestResult& r) { return r.p_values.at(0); }

Bits constant_bits(size_t n, bool one) {
  std::string s(n, one ? '1' : '0');
  return bits_from_ascii(s);
}

// Compares every P-value of `test` with the reference file's list for it.
void check_against_reference(const char* file, const char* test, const TestResult& got, const char* object,
                             double tol) {
  const std::vector<double> want = qe::check::reference_pvalues(file, test, object);
  CHECK_EQ(got.p_values.size(), want.size());
  for (size_t i = 0; i < std::min(got.p_values.size(), want.size()); ++i) {
    if (std::fabs(got.p_values[i] - want[i]) > tol) {
      qe::check::fail(__FILE__, __LINE__,
                      std::string(file) + " " + object + " " + test + "[" + std::to_string(i) +
                          "]: got " + qe::check::show(got.p_values[i]) + ", reference " + qe::check::show(want[i]));
    }
  }
}

// ---- bit-at-a-time statistics, straight from the SP 800-22 text ----------------------

size_t naive_ones(const Bits& b) {
  size_t ones = 0;
  for (size_t i = 0; i < b.n; ++i) ones += b.bit(i);
  return ones;
}

double naive_frequency(const Bits& b) {
  const double s = 2.0 * static_cast<double>(naive_ones(b)) - static_cast<double>(b.n);
  return std::erfc(std::fabs(s) / std::sqrt(static_cast<double>(b.n)) / std::sqrt(2.0));
}

double naive_runs(const Bits& b) {
  const double n = static_cast<double>(b.n);
  const double pi = static_cast<double>(naive_ones(b)) / n;
  if (std::fabs(pi - 0.5) > 2 / std::sqrt(n)) return 0.0;
  double v = 1;
  for (size_t k = 1; k < b.n; ++k) v += b.bit(k) != b.bit(k - 1);
  return std::erfc(std::fabs(v - 2 * n * pi * (1 - pi)) / (2 * std::sqrt(2 * n) * pi * (1 - pi)));
}

std::vector<int> naive_block_longest_runs(const Bits& b, size_t M) {
  std::vector<int> out;
  for (size_t blk = 0; blk < b.n / M; ++blk) {
    int run = 0, best = 0;
    for (size_t j = 0; j < M; ++j) {
      run = b.bit(blk * M + j) ? run + 1 : 0;
      best = std::max(best, run);
    }
    out.push_back(best);
  }
  return out;
}

// Max |S_k| forward and max |S_n - S_k| (the backward walk), k over 0..n.
std::pair<long, long> naive_cusum_extremes(const Bits& b) {
  std::vector<long> s(b.n + 1, 0);
  for (size_t k = 0; k < b.n; ++k) s[k + 1] = s[k] + (b.bit(k) ? 1 : -1);
  long fwd = 0, bwd = 0;
  for (size_t k = 0; k <= b.n; ++k) {
    fwd = std::max(fwd, std::labs(s[k]));
    bwd = std::max(bwd, std::labs(s[b.n] - s[k]));
  }
  return {fwd, bwd};
}

// The SP 800-22 2.13 P-value for excursion z (as the reference evaluates its bounds).
double cusum_p(long n, long z) {
  double sum1 = 0, sum2 = 0;
  const double sn = std::sqrt(static_cast<double>(n));
  for (long k = (-n / z + 1) / 4; k <= (n / z - 1) / 4; ++k)
    sum1 += normal_cdf((4 * k + 1) * z / sn) - normal_cdf((4 * k - 1) * z / sn);
  for (long k = (-n / z - 3) / 4; k <= (n / z - 1) / 4; ++k)
    sum2 += normal_cdf((4 * k + 3) * z / sn) - normal_cdf((4 * k + 1) * z / sn);
  return 1.0 - sum1 + sum2;
}

// ---- timing --------------------------------------------------------------------------

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

// CPU time of this thread, best of several rounds: the machine is shared by parallel
// builds, so wall time mostly measures the scheduler.
template <typename F>
double millis_per_call(F&& f, int reps) {
  double best = 1e300;
  for (int round = 0; round < 7; ++round) {
    const double t0 = thread_cpu_ms();
    for (int i = 0; i < reps; ++i) f();
    best = std::min(best, (thread_cpu_ms() - t0) / reps);
  }
  return best;
}

}  // namespace

// ---- bit sequences ---------------------------------------------------------------------

QE_TEST(bits_from_ascii_packs_msb_first_and_skips_whitespace) {
  const Bits b = bits_from_ascii(" 10\n1\t1\r\n0");
  CHECK_EQ(b.n, size_t{5});
  CHECK_EQ(b.words.size(), size_t{1});
  CHECK_EQ(b.words[0], uint64_t{0b10110} << 59);
  const Bits limited = bits_from_ascii("1111 0000", 6);
  CHECK_EQ(limited.n, size_t{6});
  CHECK_EQ(limited.words[0], uint64_t{0b111100} << 58);
  CHECK_EQ(e_bits().n, size_t{1000000});
}

QE_TEST(bits_from_ascii_rejects_other_characters_with_offset) {
  try {
    (void)bits_from_ascii("01 1x0");
    CHECK(false);
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    CHECK(msg.find("offset 4") != std::string::npos);
    CHECK(msg.find("'x'") != std::string::npos);
  }
  CHECK_THROWS(std::invalid_argument, bits_from_ascii(std::string_view("01\0" "1", 4)));
  CHECK_THROWS(std::invalid_argument, bits_from_ascii("0,1"));
}

QE_TEST(bits_from_ascii_word_path_matches_character_path) {
  // The parser takes 8 characters at a time when it can; whitespace at every alignment
  // and a limit that is not a multiple of 8 exercise the switches between both paths.
  const Bits& e = e_bits();
  std::string text;
  for (size_t i = 0; i < 200000; ++i) {
    text += e.bit(i) ? '1' : '0';
    if (i % 13 == 5) text += ' ';
    if (i % 101 == 7) text += "\r\n";
  }
  const Bits parsed = bits_from_ascii(text, 199997);
  CHECK_EQ(parsed.n, size_t{199997});
  bool same = true;
  for (size_t i = 0; i < parsed.n; ++i) same &= parsed.bit(i) == e.bit(i);
  CHECK(same);
  CHECK_EQ(parsed.words.back() & (~uint64_t{0} >> (199997 % 64)), uint64_t{0});
  // A bad byte inside an 8-character group is still reported at its own offset.
  try {
    (void)bits_from_ascii("0101010101012101");
    CHECK(false);
  } catch (const std::invalid_argument& err) {
    CHECK(std::string(err.what()).find("offset 12") != std::string::npos);
  }
}

QE_TEST(bits_from_bytes_is_msb_first_with_clean_tail) {
  const uint8_t data[] = {0xad, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80};
  const Bits b = bits_from_bytes(data, sizeof data, 10);
  CHECK_EQ(b.n, size_t{10});
  CHECK_EQ(b.words.size(), size_t{1});
  // 1010 1101 00 -> "1011010101" is not it; check bit by bit against the bytes.
  for (size_t i = 0; i < 10; ++i) CHECK_EQ(b.bit(i), (data[i / 8] >> (7 - i % 8)) & 1);
  CHECK_EQ(b.words[0] & (~uint64_t{0} >> 10), uint64_t{0});  // bits past n are zero
  const Bits all = bits_from_bytes(data, sizeof data, 73);
  CHECK_EQ(all.words.size(), size_t{2});
  for (size_t i = 0; i < 73; ++i) CHECK_EQ(all.bit(i), (data[i / 8] >> (7 - i % 8)) & 1);
  CHECK_EQ(all.words[1] & (~uint64_t{0} >> 9), uint64_t{0});
  CHECK_THROWS(std::invalid_argument, bits_from_bytes(data, sizeof data, 81));
  // data.sha1's first byte, read MSB first.
  const std::string raw = qe::check::read_file(qe::check::vector_path("data.sha1"));
  for (size_t i = 0; i < 16; ++i) CHECK_EQ(sha1_bits().bit(i), (static_cast<uint8_t>(raw[i / 8]) >> (7 - i % 8)) & 1);
}

QE_TEST(slice_at_unaligned_offsets) {
  const Bits& e = e_bits();
  for (size_t start : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{999937}}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{129}, size_t{63}}) {
      if (start + count > e.n) continue;
      const Bits s = slice(e, start, count);
      CHECK_EQ(s.n, count);
      CHECK_EQ(s.words.size(), (count + 63) / 64);
      bool same = true;
      for (size_t i = 0; i < count; ++i) same &= s.bit(i) == e.bit(start + i);
      CHECK(same);
      if (count % 64) CHECK_EQ(s.words.back() & (~uint64_t{0} >> (count % 64)), uint64_t{0});
    }
  }
  const Bits tail = slice(e, e.n - 5, 5);
  CHECK_EQ(tail.n, size_t{5});
  CHECK_THROWS(std::out_of_range, slice(e, e.n - 5, 6));
  CHECK_THROWS(std::out_of_range, slice(e, e.n + 1, 0));
}

// ---- SP 800-22 rev1a worked examples -----------------------------------------------------

QE_TEST(frequency_sp800_22_examples) {
  CHECK_NEAR(p0(frequency(from("1011010101"))), 0.527089, 1e-6);  // 2.1.4
  CHECK_NEAR(p0(frequency(from(kPi100))), 0.109599, 1e-6);       // 2.1.8
}

QE_TEST(block_frequency_sp800_22_examples) {
  CHECK_NEAR(p0(block_frequency(from("0110011010"), 3)), 0.801252, 1e-6);  // 2.2.4
  CHECK_NEAR(p0(block_frequency(from(kPi100), 10)), 0.706438, 1e-6);      // 2.2.8
}

QE_TEST(runs_sp800_22_examples) {
  CHECK_NEAR(p0(runs(from("1001101011"))), 0.147232, 1e-6);  // 2.3.4
  CHECK_NEAR(p0(runs(from(kPi100))), 0.500798, 1e-6);       // 2.3.8
}

QE_TEST(longest_run_sp800_22_example) {
  // 2.4.8: n = 128, M = 8, nu = (4, 9, 3, 0). SP 800-22 prints P = 0.180609 from its
  // four-decimal table of pi_i; the reference code (and we) use the exact pi_i
  // (0.21484375, ...), which gives 0.180598 - within 2e-5 of the printed value.
  const char* eps =
      "11001100000101010110110001001100111000000000001001"
      "00110101010001000100111101011010000000110101111100"
      "1100111001101101100010110010";
  const double p = p0(longest_run(from(eps)));
  CHECK_NEAR(p, 0.180609, 2e-5);
  // chi^2 from nu = (4, 9, 3, 0) with the exact class probabilities of M = 8:
  const double pis[4] = {0.21484375, 0.3671875, 0.23046875, 0.1875};
  const double nu[4] = {4, 9, 3, 0};
  double chi2 = 0;
  for (int i = 0; i < 4; ++i) chi2 += (nu[i] - 16 * pis[i]) * (nu[i] - 16 * pis[i]) / (16 * pis[i]);
  CHECK_NEAR(p, igamc(1.5, chi2 / 2), 1e-12);
}

QE_TEST(rank_sp800_22_example) {
  CHECK_NEAR(p0(rank(slice(e_bits(), 0, 100000))), 0.532069, 1e-6);  // 2.5.8: first 100,000 bits of e
}

QE_TEST(cumulative_sums_sp800_22_examples) {
  CHECK_NEAR(cumulative_sums(from("1011010111")).p_values[0], 0.4116588, 1e-6);  // 2.13.4 (forward)
  const TestResult pi = cumulative_sums(from(kPi100));                           // 2.13.8
  CHECK_NEAR(pi.p_values[0], 0.219194, 1e-6);
  CHECK_NEAR(pi.p_values[1], 0.114866, 1e-6);
}

// ---- the reference implementation's printed P-values ---------------------------------

QE_TEST(matches_reference_on_data_e) {
  const Bits& e = e_bits();
  const char* f = "reference-pvalues-e.json";
  check_against_reference(f, "frequency", frequency(e), "tests", 1e-6);
  check_against_reference(f, "block_frequency", block_frequency(e, 128), "tests", 1e-6);
  check_against_reference(f, "cumulative_sums", cumulative_sums(e), "tests", 1e-6);
  check_against_reference(f, "runs", runs(e), "tests", 1e-6);
  check_against_reference(f, "longest_run", longest_run(e), "tests", 1e-6);
  check_against_reference(f, "rank", rank(e), "tests", 1e-6);
  check_against_reference(f, "fft", fft(e), "tests", 1e-6);
  check_against_reference(f, "universal", universal(e), "tests", 1e-6);
}

QE_TEST(matches_reference_on_data_sha1) {
  const Bits& s = sha1_bits();
  for (const char* object : {"tests", "tests_full_precision"}) {
    // The printed values carry 6 decimals; the full-precision ones must agree far closer.
    const double tol = std::strcmp(object, "tests") == 0 ? 1e-6 : 1e-9;
    const char* f = "reference-pvalues-sha1.json";
    check_against_reference(f, "frequency", frequency(s), object, tol);
    check_against_reference(f, "block_frequency", block_frequency(s, 128), object, tol);
    check_against_reference(f, "cumulative_sums", cumulative_sums(s), object, tol);
    check_against_reference(f, "runs", runs(s), object, tol);
    check_against_reference(f, "longest_run", longest_run(s), object, tol);
    check_against_reference(f, "rank", rank(s), object, tol);
    check_against_reference(f, "fft", fft(s), object, tol);
    check_against_reference(f, "universal", universal(s), object, tol);
  }
}

QE_TEST(run_test_dispatches_and_names_match_reference_keys) {
  const Bits e = slice(e_bits(), 0, 400000);
  Params params;
  params.block_frequency_M = 1000;
  CHECK_EQ(p0(run_test(TestId::block_frequency, e, params)), p0(block_frequency(e, 1000)));
  CHECK_EQ(p0(run_test(TestId::frequency, e, params)), p0(frequency(e)));
  CHECK_EQ(p0(run_test(TestId::universal, e, params)), p0(universal(e)));
  CHECK(run_test(TestId::cumulative_sums, e, params).p_values == cumulative_sums(e).p_values);
  // Every name is a key of NIST's reference file, in NIST's order.
  const std::string json = qe::check::read_file(qe::check::vector_path("reference-pvalues-e.json"));
  size_t last = 0;
  for (int i = 0; i < kTestCount; ++i) {
    const size_t at = json.find(std::string("\"") + kTestNames[i] + "\": [", last);
    CHECK(at != std::string::npos);
    if (at != std::string::npos) last = at;
  }
}

// ---- word-level shortcuts vs bit-at-a-time statistics ---------------------------------

QE_TEST(word_level_counts_match_bit_by_bit_on_odd_lengths) {
  const Bits& e = e_bits();
  const size_t cases[][2] = {{0, 100}, {3, 1000}, {61, 4097}, {127, 6271}, {5, 6273}, {999, 70001}, {12345, 250003}};
  for (const auto& c : cases) {
    const Bits b = slice(e, c[0], c[1]);
    CHECK_NEAR(p0(frequency(b)), naive_frequency(b), 1e-13);
    CHECK_NEAR(p0(runs(b)), naive_runs(b), 1e-12);
    const auto [fwd, bwd] = naive_cusum_extremes(b);
    const TestResult cs = cumulative_sums(b);
    CHECK_NEAR(cs.p_values[0], cusum_p(static_cast<long>(b.n), fwd), 1e-12);
    CHECK_NEAR(cs.p_values[1], cusum_p(static_cast<long>(b.n), bwd), 1e-12);
    // Block frequency with an awkward M: chi^2 from bit-by-bit block counts.
    for (int M : {7, 100, 129}) {
      const size_t N = b.n / static_cast<size_t>(M);
      double sum = 0;
      for (size_t i = 0; i < N; ++i) {
        size_t ones = 0;
        for (int j = 0; j < M; ++j) ones += b.bit(i * static_cast<size_t>(M) + static_cast<size_t>(j));
        const double v = static_cast<double>(ones) / M - 0.5;
        sum += v * v;
      }
      if (N == 0) {
        CHECK(std::isnan(p0(block_frequency(b, M))));
      } else {
        CHECK_NEAR(p0(block_frequency(b, M)), igamc(static_cast<double>(N) / 2, 2.0 * M * sum), 1e-12);
      }
    }
  }
}

QE_TEST(longest_run_blocks_match_bit_by_bit) {
  // Long runs that cross word boundaries inside a block, in all three block sizes.
  std::string s;
  for (int i = 0; i < 2000; ++i) s += (i % 7 == 0) ? std::string(static_cast<size_t>(i % 61), '1') + "0" : "10";
  const Bits crafted = bits_from_ascii(s);
  for (const Bits& b : {crafted, slice(e_bits(), 17, 6300), slice(e_bits(), 3, 760001)}) {
    const size_t M = b.n < 6272 ? 8 : b.n < 750000 ? 128 : 10000;
    const std::vector<int> runs_per_block = naive_block_longest_runs(b, M);
    const int v0 = M == 8 ? 1 : M == 128 ? 4 : 10;
    const int K = M == 8 ? 3 : M == 128 ? 5 : 6;
    const std::vector<double> pis = M == 8     ? std::vector<double>{0.21484375, 0.3671875, 0.23046875, 0.1875}
                                    : M == 128 ? std::vector<double>{0.1174035788, 0.242955959, 0.249363483,
                                                                     0.17517706, 0.102701071, 0.112398847}
                                               : std::vector<double>{0.0882, 0.2092, 0.2483, 0.1933, 0.1208, 0.0675, 0.0727};
    std::vector<double> nu(static_cast<size_t>(K) + 1, 0);
    for (int r : runs_per_block) nu[static_cast<size_t>(std::clamp(r - v0, 0, K))] += 1;
    const double N = static_cast<double>(runs_per_block.size());
    double chi2 = 0;
    for (size_t i = 0; i < nu.size(); ++i) chi2 += (nu[i] - N * pis[i]) * (nu[i] - N * pis[i]) / (N * pis[i]);
    CHECK_NEAR(p0(longest_run(b)), igamc(K / 2.0, chi2 / 2), 1e-12);
  }
}

QE_TEST(dft_moduli_match_direct_dft) {
  // Lengths covering radix 4, 2, 3, 5, generic primes <= 31, Bluestein (97, 101, 2*89),
  // odd n, and tiny n.
  for (size_t n : {size_t{2}, size_t{3}, size_t{5}, size_t{10}, size_t{17}, size_t{64}, size_t{100}, size_t{210},
                   size_t{194}, size_t{202}, size_t{178}, size_t{1000}, size_t{1001}, size_t{2 * 3 * 5 * 7 * 11},
                   size_t{2 * 13 * 31}, size_t{4096}, size_t{1999}}) {
    const Bits b = slice(e_bits(), 1000 + n, n);
    const std::vector<double> got = qe::sts::detail::dft_half_moduli(b);
    CHECK_EQ(got.size(), n / 2);
    // Both builds of the transform (portable, AVX2 + FMA) are held to the same bound.
    std::vector<double> portable(n / 2), fma(n / 2);
    qe::sts::detail::half_squared_moduli_portable(b, portable.data());
    qe::sts::detail::half_squared_moduli_fma(b, fma.data());
    // exp(-2 pi i t / n) for t < n, in long double, indexed by (j k) mod n.
    std::vector<long double> cos_t(n), sin_t(n);
    for (size_t t = 0; t < n; ++t) {
      const long double angle =
          -2 * 3.14159265358979323846264338327950288L * static_cast<long double>(t) / static_cast<long double>(n);
      cos_t[t] = std::cos(angle);
      sin_t[t] = std::sin(angle);
    }
    double worst = 0;
    for (size_t k = 0; k < n / 2; ++k) {
      long double re = 0, im = 0;
      for (size_t j = 0; j < n; ++j) {
        const long double x = b.bit(j) ? 1 : -1;
        re += x * cos_t[(j * k) % n];
        im += x * sin_t[(j * k) % n];
      }
      const double exact = static_cast<double>(std::sqrt(re * re + im * im));
      worst = std::max(worst, std::fabs(got[k] - exact));
      worst = std::max(worst, std::fabs(std::sqrt(portable[k]) - exact));
      worst = std::max(worst, std::fabs(std::sqrt(fma[k]) - exact));
    }
    if (!(worst < 1e-9 * std::sqrt(static_cast<double>(n)))) {
      qe::check::fail(__FILE__, __LINE__, "n = " + std::to_string(n) + ": max error " + qe::check::show(worst));
    }
  }
}

QE_TEST(spectral_count_is_the_same_on_both_fft_builds_for_every_shared_vector) {
  // The spectral test's P-value depends only on how many moduli fall below
  // sqrt(2.995732274 n); the AVX2 + FMA transform rounds differently from the portable
  // one, and must put every modulus of NIST's five sample files on the same side.
  std::vector<Bits> vectors{e_bits(), sha1_bits()};
  for (const char* name : {"data.pi", "data.sqrt2", "data.sqrt3"}) {
    vectors.push_back(qe::sts::bits_from_ascii(qe::check::read_file(qe::check::vector_path(name)), 1000000));
  }
  for (const Bits& b : vectors) {
    CHECK_EQ(b.n, size_t{1000000});
    std::vector<double> portable(b.n / 2), fma(b.n / 2);
    qe::sts::detail::half_squared_moduli_portable(b, portable.data());
    qe::sts::detail::half_squared_moduli_fma(b, fma.data());
    const double bound = 2.995732274 * static_cast<double>(b.n);
    size_t below_portable = 0, below_fma = 0;
    double closest = 1;  // smallest relative distance of a modulus^2 from the bound
    for (size_t k = 1; k < portable.size(); ++k) {
      below_portable += portable[k] < bound;
      below_fma += fma[k] < bound;
      closest = std::min(closest, std::fabs(portable[k] - bound) / bound);
    }
    CHECK_EQ(below_portable, below_fma);
    CHECK(closest > 1e-12);  // far above either transform's rounding error
    // The test itself counts without storing the moduli: the same count in each build.
    CHECK_EQ(qe::sts::detail::count_squared_moduli_below_portable(b, bound), below_portable);
    CHECK_EQ(qe::sts::detail::count_squared_moduli_below_fma(b, bound), below_fma);
  }
}

QE_TEST(spectral_count_without_stored_moduli_equals_count_of_stored_ones) {
  // Every length class (even/odd, radix-4 leaves or not, Bluestein, the middle column
  // k = n/4 falling in a four-wide step or not), bounds across the range of the moduli.
  std::vector<size_t> lengths;
  for (size_t n = 2; n <= 80; ++n) lengths.push_back(n);
  for (const size_t n : {4096, 4097, 4104, 4106, 2 * 4099, 100003, 200000}) lengths.push_back(n);
  for (const size_t len : lengths) {
    const Bits b = slice(e_bits(), 7, len);
    std::vector<double> portable(len / 2), fma(len / 2);
    qe::sts::detail::half_squared_moduli_portable(b, portable.data());
    qe::sts::detail::half_squared_moduli_fma(b, fma.data());
    for (const double factor : {0.5, 2.995732274, 8.0}) {
      const double bound = factor * static_cast<double>(len);
      size_t want_portable = 0, want_fma = 0;
      for (size_t k = 1; k < portable.size(); ++k) want_portable += portable[k] < bound, want_fma += fma[k] < bound;
      if (qe::sts::detail::count_squared_moduli_below_portable(b, bound) != want_portable ||
          qe::sts::detail::count_squared_moduli_below_fma(b, bound) != want_fma) {
        qe::check::fail(__FILE__, __LINE__, "n = " + std::to_string(len) + ", bound " + qe::check::show(bound));
        return;
      }
    }
  }
}

// ---- not applicable, degenerate and constant sequences -----------------------------------

QE_TEST(too_short_sequences_are_not_applicable_with_a_note) {
  const Bits short_u = slice(e_bits(), 0, 387839);
  const TestResult u = universal(short_u);
  CHECK_EQ(u.p_values.size(), size_t{1});
  CHECK(std::isnan(u.p_values[0]));
  CHECK(u.note.find("387,840") != std::string::npos);
  CHECK(!std::isnan(p0(universal(slice(e_bits(), 0, 387840)))));

  const TestResult lr = longest_run(slice(e_bits(), 0, 127));
  CHECK(std::isnan(p0(lr)) && !lr.note.empty());
  CHECK(!std::isnan(p0(longest_run(slice(e_bits(), 0, 128)))));
  const TestResult rk = rank(slice(e_bits(), 0, 1023));
  CHECK(std::isnan(p0(rk)) && !rk.note.empty());
  const TestResult bf = block_frequency(slice(e_bits(), 0, 127), 128);
  CHECK(std::isnan(p0(bf)) && !bf.note.empty());
  CHECK_THROWS(std::invalid_argument, block_frequency(e_bits(), 0));

  const Bits empty;
  for (const TestResult& r : {frequency(empty), block_frequency(empty, 128), cumulative_sums(empty), runs(empty),
                              longest_run(empty), rank(empty), fft(empty), universal(empty)}) {
    CHECK(!r.p_values.empty());
    for (double p : r.p_values) CHECK(std::isnan(p));
    CHECK(!r.note.empty());
  }
  CHECK_EQ(cumulative_sums(empty).p_values.size(), size_t{2});
}

QE_TEST(constant_sequences_fail_without_crashing) {
  for (bool one : {false, true}) {
    const Bits b = constant_bits(1000013, one);  // not a multiple of 64
    const std::vector<TestResult> results = {frequency(b), block_frequency(b, 128), cumulative_sums(b), runs(b),
                                             longest_run(b), rank(b), fft(b), universal(b)};
    for (const TestResult& r : results) {
      for (double p : r.p_values) {
        CHECK(p >= 0 && p < 1e-6);
      }
    }
    CHECK(!runs(b).note.empty());  // frequency prerequisite
  }
  // Alternating bits: perfectly balanced (frequency P = 1) but far too many runs.
  std::string alt;
  for (int i = 0; i < 100001; ++i) alt += (i & 1) ? '1' : '0';
  const Bits a = bits_from_ascii(alt);
  CHECK_NEAR(p0(frequency(a)), std::erfc(1 / std::sqrt(100001.0) / std::sqrt(2.0)), 1e-15);
  CHECK(p0(runs(a)) < 1e-6);
  for (double p : cumulative_sums(a).p_values) CHECK(p > 0.99);  // tiny excursions: not rejected
}

QE_TEST(tiny_sequences_give_finite_p_values) {
  for (const char* s : {"1", "0", "10", "011", "1011010101"}) {
    const Bits b = from(s);
    for (const TestResult& r : {frequency(b), runs(b), fft(b), block_frequency(b, 1)}) {
      for (double p : r.p_values) CHECK(p >= 0 && p <= 1);
    }
    // The reference's cumulative-sums series is an asymptotic formula: for tiny n it can
    // leave [0, 1] (n = 3, "011": 1.0441...), and sts-2.1.2 prints that value with a
    // "P_VALUE IS OUT OF RANGE" warning. We return the same number; it stays finite.
    for (double p : cumulative_sums(b).p_values) CHECK(std::isfinite(p) && p >= 0);
  }
  CHECK(cumulative_sums(from("011")).p_values[0] > 1);
}

// ---- timing (printed, not asserted) ------------------------------------------------------

QE_TEST(print_timings_on_one_million_bits) {
  const Bits& e = e_bits();
  volatile double sink = 0;
  const double popcount_ms =
      millis_per_call([&] { sink = sink + static_cast<double>(qe::sts::detail::count_ones(e, 0, e.n)); }, 200);
  struct Item {
    const char* name;
    std::function<double()> run;
  };
  const Item items[] = {
      {"frequency", [&] { return p0(frequency(e)); }},
      {"block_frequency", [&] { return p0(block_frequency(e, 128)); }},
      {"cumulative_sums", [&] { return p0(cumulative_sums(e)); }},
      {"runs", [&] { return p0(runs(e)); }},
      {"longest_run", [&] { return p0(longest_run(e)); }},
      {"rank", [&] { return p0(rank(e)); }},
      {"fft", [&] { return p0(fft(e)); }},
      {"universal", [&] { return p0(universal(e)); }},
  };
  std::printf("  timings on 10^6 bits (data.e), thread CPU ms per call (best of 7); plain popcount pass %.4f ms\n", popcount_ms);
  for (const Item& item : items) {
    item.run();  // warm-up (FFT plan, page faults)
    const double ms = millis_per_call([&] { sink = sink + item.run(); }, 3);
    std::printf("    %-16s %9.4f ms  (%6.1fx popcount)\n", item.name, ms, ms / popcount_ms);
  }
}
