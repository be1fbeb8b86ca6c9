// The non-IID track against NIST's own reference outputs: every estimator on the literal
// symbols and on the bitstring, H_original, H_bitstring and the assessed min-entropy, to
// 1e-6 (the tolerance of NIST's self-test).
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <unordered_map>
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

// LZ78Y step by step as SP 800-90B §6.3.10 and NIST's tool state it: every step looks up all
// 16 context lengths; the longest context with the strictly largest best count guesses (its
// most frequent follower, the larger symbol on ties); every present context counts the
// symbol, and absent ones join while the dictionary holds fewer than 65,536.
double plain_lz78y(const std::vector<uint8_t>& s, int k) {
  constexpr int kB = 16;
  std::vector<std::unordered_map<std::string, std::vector<uint32_t>>> dict(kB + 1);
  auto context = [&s](long i, int j) { return std::string(s.begin() + i - j, s.begin() + i); };
  long size = 0;
  for (int j = 1; j <= kB; ++j, ++size) {
    auto& counts = dict[static_cast<size_t>(j)][context(kB, j)];
    counts.assign(static_cast<size_t>(k), 0);
    counts[s[kB]] = 1;
  }
  long correct = 0, run = 0, longest = 0;
  const long n = static_cast<long>(s.size());
  for (long i = kB + 1; i < n; ++i) {
    const uint8_t y = s[static_cast<size_t>(i)];
    uint32_t best = 0;
    int guess = -1;
    for (int j = kB; j >= 1; --j) {
      auto& d = dict[static_cast<size_t>(j)];
      const auto found = d.find(context(i, j));
      if (found != d.end()) {
        std::vector<uint32_t>& counts = found->second;
        int g = 0;
        for (int x = 1; x < k; ++x)
          if (counts[static_cast<size_t>(x)] >= counts[static_cast<size_t>(g)]) g = x;
        if (counts[static_cast<size_t>(g)] > best) {
          best = counts[static_cast<size_t>(g)];
          guess = g;
        }
        ++counts[y];
      } else if (size < 65536) {
        std::vector<uint32_t>& counts = d[context(i, j)];
        counts.assign(static_cast<size_t>(k), 0);
        counts[y] = 1;
        ++size;
      }
    }
    if (guess == y) {
      ++correct;
      longest = std::max(longest, ++run);
    } else {
      run = 0;
    }
  }
  return qe::ea::prediction_estimate(correct, n - kB - 1, longest, k);
}

// Binary MultiMMC step by step as SP 800-90B §6.3.9 and NIST's tool state it: Markov models
// of orders 1..16 each predict the most frequent follower of their context (1 on ties), and
// only after a shorter model found its context is a longer one looked up; every model counts
// the step, making new (context, follower) pairs while it has fewer than 100,000; the best
// scorer so far (the longer on ties) makes the guess, and a step it cannot predict leaves the
// run of correct guesses as it was.
double plain_binary_multi_mmc(const std::vector<uint8_t>& s) {
  constexpr int kD = 16;
  constexpr long kCap = 100000;
  std::vector<std::vector<std::array<uint32_t, 2>>> counts(kD);
  for (int d = 0; d < kD; ++d) counts[static_cast<size_t>(d)].assign(size_t{2} << d, {0, 0});
  auto context = [&s](long i, int len) {  // s[i-len .. i-1], s[i-1] lowest
    uint32_t c = 0;
    for (int b = len; b >= 1; --b) c = (c << 1) | s[static_cast<size_t>(i - b)];
    return c;
  };
  const long n = static_cast<long>(s.size());
  std::array<long, kD> made{}, score{};
  for (int d = 0; d < kD && d + 1 < n; ++d) {
    counts[static_cast<size_t>(d)][context(d + 1, d + 1)][s[static_cast<size_t>(d + 1)]] = 1;
    made[static_cast<size_t>(d)] = 1;
  }
  int winner = 0;
  long correct = 0, run = 0, longest = 0;
  for (long i = 2; i < n; ++i) {
    const unsigned y = s[static_cast<size_t>(i)];
    const int current = winner;
    bool found = false;
    for (int d = 0; d < kD && d < i - 1; ++d) {
      const auto du = static_cast<size_t>(d);
      auto& e = counts[du][context(i, d + 1)];
      if (d == 0 || found) found = e[0] + e[1] > 0;
      if (found) {
        const unsigned guess = e[0] > e[1] ? 0 : 1;
        if (guess == y) {
          if (++score[du] >= score[static_cast<size_t>(winner)]) winner = d;
          if (d == current) {
            ++correct;
            longest = std::max(longest, ++run);
          }
        } else if (d == current) {
          run = 0;
        }
      }
      if (e[y] > 0) {
        ++e[y];
      } else if (made[du] < kCap) {
        e[y] = 1;
        ++made[du];
      }
    }
  }
  return qe::ea::prediction_estimate(correct, n - 2, longest, 2);
}

// Sequences of `k` symbols: random, biased, periodic, sticky and half-constant.
std::vector<uint8_t> varied_symbols(std::mt19937_64& rng, int kind, size_t n, int k) {
  const unsigned period = 1 + static_cast<unsigned>(rng() % 40);
  const uint64_t bias = rng() % 1000;
  const auto ks = static_cast<uint64_t>(k);
  std::vector<uint8_t> s(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    switch (kind % 5) {
      case 0: s[i] = static_cast<uint8_t>(r % ks); break;
      case 1: s[i] = static_cast<uint8_t>(r % 1000 < bias ? 0 : (r >> 32) % ks); break;
      case 2: s[i] = static_cast<uint8_t>(i % period * ks / period); break;
      case 3: s[i] = i > 0 && r % 100 < 90 ? s[i - 1] : static_cast<uint8_t>((r >> 32) % ks); break;
      default: s[i] = static_cast<uint8_t>(i < n / 2 ? 0 : r % ks); break;
    }
  }
  return s;
}

// MultiMCW as SP 800-90B §6.3.7 states it: window j predicts the most common value of the
// w_j samples before, the most recent of them on ties, scanning all k counts every step.
double plain_multi_mcw(const std::vector<uint8_t>& s, int k) {
  constexpr std::array<long, 4> kW = {63, 255, 1023, 4095};
  const auto n = static_cast<long>(s.size());
  std::array<std::vector<long>, 4> count;
  for (auto& c : count) c.assign(static_cast<size_t>(k), 0);
  std::vector<long> last(static_cast<size_t>(k), -1);  // the same for every window that holds it
  auto mode = [&](size_t j) {
    int best = 0;
    for (int c = 1; c < k; ++c) {
      const auto cu = static_cast<size_t>(c), bu = static_cast<size_t>(best);
      if (count[j][cu] > count[j][bu] || (count[j][cu] == count[j][bu] && last[cu] > last[bu])) best = c;
    }
    return best;
  };
  std::array<long, 4> score{};
  size_t winner = 0;
  long correct = 0, run = 0, longest = 0;
  for (long i = 0; i < n; ++i) {
    const auto x = s[static_cast<size_t>(i)];
    if (i >= kW[0]) {
      const bool hit = mode(winner) == x;
      correct += hit;
      run = hit ? run + 1 : 0;
      longest = std::max(longest, run);
      std::array<bool, 4> right{};
      for (size_t j = 0; j < 4; ++j) right[j] = i >= kW[j] && mode(j) == x;
      for (size_t j = 0; j < 4; ++j)
        if (right[j] && ++score[j] >= score[winner]) winner = j;
    }
    for (size_t j = 0; j < 4; ++j) {
      if (i >= kW[j]) --count[j][s[static_cast<size_t>(i - kW[j])]];
      ++count[j][x];
    }
    last[x] = i;
  }
  return qe::ea::prediction_estimate(correct, n - kW[0], longest, k);
}

// The lag predictor as SP 800-90B §6.3.8 states it: lag d guesses the symbol d places back;
// each step every lag that guessed right scores, and the last to reach the top score leads.
double plain_lag(const std::vector<uint8_t>& s, int k) {
  constexpr long kLags = 128;
  const auto n = static_cast<long>(s.size());
  std::array<long, kLags> score{};
  long winner = 0, high = 0, correct = 0, run = 0, longest = 0;
  for (long i = 1; i < n; ++i) {
    const auto x = s[static_cast<size_t>(i)];
    const bool hit = x == s[static_cast<size_t>(i - winner - 1)];
    correct += hit;
    run = hit ? run + 1 : 0;
    longest = std::max(longest, run);
    for (long d = 0; d < kLags && d < i; ++d)
      if (s[static_cast<size_t>(i - d - 1)] == x && ++score[static_cast<size_t>(d)] >= high) {
        winner = d;
        high = score[static_cast<size_t>(d)];
      }
  }
  return qe::ea::prediction_estimate(correct, n - 1, longest, k);
}

}  // namespace

// Binary lag scores 64 steps a word and replays only lags near the leader, scoring the
// leader alone without a branch per step when no other can catch up (predictors.cc).
QE_TEST(ea_binary_lag_matches_the_step_by_step_rule) {
  std::mt19937_64 rng(128);
  for (int trial = 0; trial < 15; ++trial) {
    const size_t n = 1000 + rng() % 80000;
    const std::vector<uint8_t> s = varied_symbols(rng, trial, n, 2);
    const double plain = plain_lag(s, 2), ours = qe::ea::lag_estimate(s.data(), n, 2);
    if (!(plain == ours))
      qe::check::fail(__FILE__, __LINE__, "trial " + std::to_string(trial) + ": " + qe::check::show(ours) + " vs " + qe::check::show(plain));
  }
}

// MultiMCW keeps each window's mode without rescanning the counts while one value stays
// ahead alone (predictors.cc). Against the plain rule on random, biased, periodic, sticky
// and half-constant data over alphabets of 3 to 200 symbols.
QE_TEST(ea_multi_mcw_matches_the_step_by_step_rule) {
  std::mt19937_64 rng(63);
  for (int trial = 0; trial < 15; ++trial) {
    const int k = 3 + static_cast<int>(rng() % 198);
    const size_t n = 5000 + rng() % 25000;
    const std::vector<uint8_t> s = varied_symbols(rng, trial, n, k);
    const double plain = plain_multi_mcw(s, k), ours = qe::ea::multi_mcw_estimate(s.data(), n, k);
    if (!(plain == ours))
      qe::check::fail(__FILE__, __LINE__, "trial " + std::to_string(trial) + " (k = " + std::to_string(k) + "): " + qe::check::show(ours) + " vs " + qe::check::show(plain));
  }
}

// Once its dictionary is full, LZ78Y counts only the shortest context every step and brings
// longer ones up to date when they could tie (predictors.cc). Binary data (direct tables) and
// wider alphabets (hash tables), long enough to fill the dictionary and to reach ties.
QE_TEST(ea_lz78y_matches_the_step_by_step_rule) {
  std::mt19937_64 rng(90);
  for (int trial = 0; trial < 20; ++trial) {
    const int k = trial < 10 ? 2 : 3 + static_cast<int>(rng() % 120);
    const size_t n = 30000 + rng() % 60000;
    const std::vector<uint8_t> s = varied_symbols(rng, trial, n, k);
    const double plain = plain_lz78y(s, k), ours = qe::ea::lz78y_estimate(s.data(), n, k);
    if (!(plain == ours))
      qe::check::fail(__FILE__, __LINE__, "trial " + std::to_string(trial) + " (k = " + std::to_string(k) + "): " + qe::check::show(ours) + " vs " + qe::check::show(plain));
  }
}

// Ties between context lengths after the dictionary is full, where they decide the guess.
// In "a b c e b d" repeated, context "b" is followed by c and by d equally often, so before
// each "a b c" its best count ties and it would guess d (the larger symbol); context "a b"
// has seen only c, as often, so as the longer of the tied contexts it guesses c, rightly.
// Three filler symbols first make the first step the tool scores see "a b" followed by c,
// so that "b" and "a b" start counting together. The motif then makes every context it
// needs, random symbols fill the dictionary, and the motif returns: its longer contexts'
// counts must be brought up to date for the ties to be found.
QE_TEST(ea_lz78y_finds_ties_between_lengths_after_the_dictionary_fills) {
  constexpr int k = 200;
  const std::vector<uint8_t> motif = {1, 2, 3, 4, 2, 5};  // a b c e b d
  std::vector<uint8_t> s = {6, 7, 8};
  for (int r = 0; r < 10; ++r) s.insert(s.end(), motif.begin(), motif.end());
  std::mt19937_64 rng(6);
  for (int i = 0; i < 8000; ++i) s.push_back(static_cast<uint8_t>(6 + rng() % (k - 6)));
  for (int r = 0; r < 2000; ++r) s.insert(s.end(), motif.begin(), motif.end());
  CHECK_EQ(qe::ea::lz78y_estimate(s.data(), s.size(), k), plain_lz78y(s, k));
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

// Binary MultiMMC runs each order alone, the shortest orders 64 steps at a time by bit masks,
// and replays the scoreboard a block at a time (predictors.cc). Against the plain rule on
// random, biased, periodic, sticky and half-constant bits, some long enough for the order-16
// model to reach its cap of 100,000 pairs.
QE_TEST(ea_binary_multi_mmc_matches_the_step_by_step_rule) {
  std::mt19937_64 rng(16);
  for (int trial = 0; trial < 15; ++trial) {
    const size_t n = trial % 5 == 0 ? 150000 + rng() % 100000 : 2000 + rng() % 60000;
    const std::vector<uint8_t> s = varied_symbols(rng, trial, n, 2);
    const double plain = plain_binary_multi_mmc(s), ours = qe::ea::multi_mmc_estimate(s.data(), n, 2);
    if (!(plain == ours))
      qe::check::fail(__FILE__, __LINE__, "trial " + std::to_string(trial) + ": " + qe::check::show(ours) + " vs " + qe::check::show(plain));
  }
}

// The bitstring both tracks read: each raw symbol's bits_per_symbol bits, most significant
// first, cut after any number of bits (-t keeps 10^6, mid-symbol for widths that do not
// divide it), and its count of ones as the IID track takes it without writing the bits out.
QE_TEST(ea_bitstring_is_each_symbols_bits_most_significant_first) {
  std::mt19937 gen(90);
  for (int k = 1; k <= 8; ++k) {
    std::vector<uint8_t> data(1001);
    for (auto& v : data) v = static_cast<uint8_t>(gen() & ((1u << k) - 1));
    data[0] = static_cast<uint8_t>((1u << k) - 1);  // the width is k, whatever the draws
    const qe::ea::Samples s = qe::ea::prepare(data.data(), data.size(), k);
    std::vector<uint8_t> expected;
    for (uint8_t v : data)
      for (int j = k - 1; j >= 0; --j) expected.push_back(static_cast<uint8_t>((v >> j) & 1));
    CHECK_EQ(s.bit_count(), expected.size());
    for (size_t cut : {expected.size(), expected.size() - 1, size_t{1000}, size_t{7}, size_t{1}}) {
      const auto bits = qe::ea::bitstring(s, cut);
      CHECK(std::vector<uint8_t>(bits.begin(), bits.end()) == std::vector<uint8_t>(expected.begin(), expected.begin() + static_cast<long>(cut)));
      size_t ones = 0;
      for (size_t i = 0; i < cut; ++i) ones += expected[i];
      CHECK_EQ(qe::ea::bitstring_ones(s, cut), ones);
    }
  }
}
