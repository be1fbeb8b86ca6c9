// The non-IID track against NIST's own reference outputs: every estimator on the literal
// symbols and on the bitstring, H_original, H_bitstring and the assessed min-entropy, to
// 1e-6 (the tolerance of NIST's self-test).
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ea/ea.h"
#include "tests/check.h"
#include "tests/ea_reference.h"

using qe::check::read_ea_reference;
using qe::check::read_samples;

namespace {

constexpr double kTolerance = 1e-6;

void check_file(const std::string& name, unsigned threads) {
  const auto ref = read_ea_reference(name + ".non_iid.res");
  const std::vector<uint8_t> data = read_samples(name + ".bin");
  const qe::ea::Samples s = qe::ea::prepare(data.data(), data.size(), 0);
  qe::ea::NonIidOptions opt;
  opt.threads = threads;
  const qe::ea::NonIidResult r = qe::ea::assess_non_iid(s, opt);
  int compared = 0;
  for (int e = 0; e < qe::ea::kEstimatorCount; ++e) {
    for (const auto& [track, values] : {std::pair{std::string("Literal"), &r.literal}, std::pair{std::string("Bitstring"), &r.bitstring}}) {
      const std::string key = track + " " + qe::ea::kEstimatorKeys[e];
      const double ours = (*values)[static_cast<size_t>(e)];
      if (ref.has(key)) {
        ++compared;
        if (!(std::fabs(ours - ref.at(key)) <= kTolerance))
          qe::check::fail(__FILE__, __LINE__, name + " " + key + ": " + qe::check::show(ours) + " vs NIST " + qe::check::show(ref.at(key)));
      } else if (!std::isnan(ours)) {
        qe::check::fail(__FILE__, __LINE__, name + " " + key + ": NIST does not run it, we gave " + qe::check::show(ours));
      }
    }
  }
  CHECK(compared >= 10);
  if (ref.has("H_bitstring")) CHECK_NEAR(r.h_bitstring, ref.at("H_bitstring"), kTolerance);
  else CHECK(std::isnan(r.h_bitstring));
  CHECK_NEAR(r.h_original, ref.at("H_original"), kTolerance);
  CHECK_NEAR(r.h_assessed, ref.at("H_assessed"), kTolerance);
}

// Binary LZ78Y step by step as SP 800-90B §6.3.10 and NIST's tool state it: every step
// looks up all 16 context lengths, the longest context with the strictly largest best count
// guesses (the larger follower wins only when strictly more frequent), every present context
// counts the symbol, and absent ones join while the dictionary has fewer than 65,536.
double plain_binary_lz78y(const std::vector<uint8_t>& s) {
  constexpr int kB = 16;
  std::vector<std::vector<std::array<uint32_t, 2>>> dict(kB + 1);
  for (int j = 1; j <= kB; ++j) dict[static_cast<size_t>(j)].assign(size_t{1} << j, {0, 0});
  auto context = [&s](long i, int j) {  // s[i-j .. i-1], s[i-1] lowest
    uint32_t c = 0;
    for (int b = j; b >= 1; --b) c = (c << 1) | s[static_cast<size_t>(i - b)];
    return c;
  };
  long size = 0;
  for (int j = 1; j <= kB; ++j, ++size) dict[static_cast<size_t>(j)][context(kB, j)][s[kB]] = 1;
  long correct = 0, run = 0, longest = 0;
  const long n = static_cast<long>(s.size());
  for (long i = kB + 1; i < n; ++i) {
    const unsigned y = s[static_cast<size_t>(i)];
    uint32_t best = 0;
    int guess = -1;
    for (int j = kB; j >= 1; --j) {
      auto& e = dict[static_cast<size_t>(j)][context(i, j)];
      if (e[0] + e[1] > 0) {
        const int g = e[0] > e[1] ? 0 : 1;
        if (e[static_cast<size_t>(g)] > best) {
          best = e[static_cast<size_t>(g)];
          guess = g;
        }
        ++e[y];
      } else if (size < 65536) {
        e[y] = 1;
        ++size;
      }
    }
    if (guess == static_cast<int>(y)) {
      ++correct;
      longest = std::max(longest, ++run);
    } else {
      run = 0;
    }
  }
  return qe::ea::prediction_estimate(correct, n - kB - 1, longest, 2);
}

}  // namespace

// Once its dictionary is full, binary LZ78Y counts only the shortest context every step and
// brings longer ones up to date when they could tie (predictors.cc). Random, biased, periodic,
// sticky and half-constant bits, long enough to fill the dictionary and to reach ties.
QE_TEST(ea_binary_lz78y_matches_the_step_by_step_rule) {
  std::mt19937_64 rng(90);
  for (int trial = 0; trial < 30; ++trial) {
    const size_t n = 30000 + rng() % 120000;
    const unsigned period = 1 + static_cast<unsigned>(rng() % 40);
    const uint64_t bias = rng() % 1000;
    std::vector<uint8_t> s(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = rng();
      switch (trial % 5) {
        case 0: s[i] = r & 1; break;
        case 1: s[i] = r % 1000 < bias; break;
        case 2: s[i] = i % period < period / 2; break;
        case 3: s[i] = i > 0 && r % 100 < 90 ? s[i - 1] : (r >> 32) & 1; break;
        default: s[i] = i < n / 2 ? 0 : r & 1; break;
      }
    }
    const double plain = plain_binary_lz78y(s), ours = qe::ea::lz78y_estimate(s.data(), n, 2);
    if (!(plain == ours))
      qe::check::fail(__FILE__, __LINE__, "trial " + std::to_string(trial) + ": " + qe::check::show(ours) + " vs " + qe::check::show(plain));
  }
}

QE_TEST(ea_non_iid_short_files) {
  for (const char* name : {"rand1_short", "rand4_short", "rand8_short"}) check_file(name, 2);
}

#if !defined(__SANITIZE_ADDRESS__)  // minutes under ASan; the short files cover the code there
QE_TEST(ea_non_iid_million_sample_files) {
  for (const char* name : {"truerand_1bit", "truerand_4bit", "truerand_8bit", "biased-random-bits", "biased-random-bytes",
                           "normal", "ringOsc-nist", "data.pi"})
    check_file(name, 2);
}
#endif
