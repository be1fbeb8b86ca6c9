// Random excursions (SP 800-22 rev1a section 2.14) and random excursions variant
// (section 2.15), matched to the reference implementation sts-2.1.2.
//
// Both follow the walk S_k = sum of (2 eps_i - 1) and look only at the states near 0:
// the cycles (stretches between zeros of the walk) and the visits to x = -9..9. A random
// walk of 10^6 steps spends most of its time far from 0, so the walk is taken a 64-bit
// word at a time (S += 2 popcount - 64) whenever no state of interest is in reach, a
// byte at a time when closer, and bit by bit only within 8 steps of the states counted.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "sts/special.h"
#include "sts/bitwords.h"
#include "sts/sts.h"

namespace qe::sts {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxState = 9;  // the variant's states are -9..9; the excursions' -4..4

// cephes_igamc as the reference calls it: Q(a, x) with Q = 1 for x <= 0.
double reference_igamc(double a, double x) { return x <= 0 ? 1.0 : igamc(a, x); }

struct WalkCounts {
  uint64_t cycles = 0;                 // J: zeros of the walk, plus one if it does not end at 0
  std::array<uint64_t, 19> visits{};   // visits to x = -9..9 over the whole walk (index x + 9)
  // cycles_with[k][s]: cycles with exactly k visits (k = 5: five or more) to state s of
  // -4..-1, 1..4 (index 0..7).
  std::array<std::array<uint64_t, 8>, 6> cycles_with{};
};

class Walker {
 public:
  explicit Walker(WalkCounts& out) : out_(out) {}

  // One step of the walk: +1 for a one, -1 for a zero.
  void step(int bit) {
    s_ += bit ? 1 : -1;
    if (s_ == 0) {
      end_cycle();
    } else if (s_ >= -kMaxState && s_ <= kMaxState) {
      ++cycle_visits_[static_cast<size_t>(s_ + kMaxState)];
    }
  }
  void jump(int64_t delta) { s_ += delta; }
  int64_t position() const { return s_; }
  // Called once after the last bit: the reference counts a final cycle that does not
  // return to 0.
  void finish() {
    if (s_ != 0) end_cycle();
  }

 private:
  void end_cycle() {
    ++out_.cycles;
    static constexpr int kStates[8] = {-4, -3, -2, -1, 1, 2, 3, 4};
    for (int i = 0; i < 8; ++i) {
      const uint64_t k = cycle_visits_[static_cast<size_t>(kStates[i] + kMaxState)];
      ++out_.cycles_with[std::min<uint64_t>(k, 5)][static_cast<size_t>(i)];
    }
    for (size_t i = 0; i < cycle_visits_.size(); ++i) out_.visits[i] += cycle_visits_[i];
    cycle_visits_.fill(0);
  }

  WalkCounts& out_;
  int64_t s_ = 0;
  std::array<uint64_t, 19> cycle_visits_{};
};

QE_POPCNT_CLONES WalkCounts walk(const Bits& bits) {
  WalkCounts counts;
  Walker walker(counts);
  const size_t n = bits.n;
  for (size_t q = 0, done = 0; done < n; ++q) {
    const uint64_t word = bits.words[q];
    const unsigned len = static_cast<unsigned>(std::min<size_t>(64, n - done));
    const uint64_t used = len == 64 ? word : word & (~uint64_t{0} << (64 - len));
    // Far from every counted state (and from 0) for the whole word: jump over it.
    if (std::llabs(walker.position()) > 64 + kMaxState) {
      walker.jump(2 * static_cast<int64_t>(__builtin_popcountll(used)) - static_cast<int64_t>(len));
    } else {
      for (unsigned b = 0; b < len; b += 8) {
        const unsigned blen = std::min(8u, len - b);
        const unsigned byte = static_cast<unsigned>((used >> (56 - b)) & 0xff);
        if (std::llabs(walker.position()) > 8 + kMaxState) {
          walker.jump(2 * __builtin_popcount(byte) - static_cast<int>(blen));
        } else {
          for (unsigned i = 0; i < blen; ++i) walker.step(static_cast<int>((byte >> (7 - i)) & 1u));
        }
      }
    }
    done += len;
  }
  walker.finish();
  return counts;
}

// The reference's applicability bound max(0.005 sqrt(n), 500).
double cycle_constraint(size_t n) { return std::max(0.005 * std::sqrt(static_cast<double>(n)), 500.0); }

std::string too_few_cycles(uint64_t cycles, double constraint) {
  return "insufficient number of cycles: J = " + std::to_string(cycles) + " < " +
         std::to_string(static_cast<uint64_t>(std::ceil(constraint))) +
         " (max(0.005 sqrt(n), 500)); test not applicable";
}

}  // namespace

TestResult random_excursions(const Bits& bits) {
  TestResult result;
  if (bits.n == 0) {
    result.p_values.assign(8, kNaN);
    result.note = "empty sequence; test not applicable";
    return result;
  }
  const WalkCounts counts = walk(bits);
  const double constraint = cycle_constraint(bits.n);
  const auto J = static_cast<double>(counts.cycles);
  if (J < constraint) {
    result.p_values.assign(8, kNaN);
    result.note = too_few_cycles(counts.cycles, constraint);
    return result;
  }
  // The reference's table of P(a cycle visits state |x| exactly k times), k = 5: >= 5.
  static constexpr double kPi[5][6] = {
      {0.0000000000, 0.00000000000, 0.00000000000, 0.00000000000, 0.00000000000, 0.0000000000},
      {0.5000000000, 0.25000000000, 0.12500000000, 0.06250000000, 0.03125000000, 0.0312500000},
      {0.7500000000, 0.06250000000, 0.04687500000, 0.03515625000, 0.02636718750, 0.0791015625},
      {0.8333333333, 0.02777777778, 0.02314814815, 0.01929012346, 0.01607510288, 0.0803755144},
      {0.8750000000, 0.01562500000, 0.01367187500, 0.01196289063, 0.01046752930, 0.0732727051}};
  static constexpr int kStates[8] = {-4, -3, -2, -1, 1, 2, 3, 4};
  for (int i = 0; i < 8; ++i) {
    const int x = std::abs(kStates[i]);
    double sum = 0.0;
    for (int k = 0; k < 6; ++k) {
      const double expected = J * kPi[x][k];
      const double diff = static_cast<double>(counts.cycles_with[static_cast<size_t>(k)][static_cast<size_t>(i)]) - expected;
      sum += diff * diff / expected;
    }
    result.p_values.push_back(reference_igamc(2.5, sum / 2.0));
  }
  return result;
}

TestResult random_excursions_variant(const Bits& bits) {
  TestResult result;
  if (bits.n == 0) {
    result.p_values.assign(18, kNaN);
    result.note = "empty sequence; test not applicable";
    return result;
  }
  const WalkCounts counts = walk(bits);
  // The variant truncates the bound to an integer (the excursions test does not).
  const auto constraint = static_cast<double>(static_cast<int64_t>(cycle_constraint(bits.n)));
  const auto J = static_cast<double>(counts.cycles);
  if (J < constraint) {
    result.p_values.assign(18, kNaN);
    result.note = too_few_cycles(counts.cycles, constraint);
    return result;
  }
  for (int x = -kMaxState; x <= kMaxState; ++x) {
    if (x == 0) continue;
    const auto count = static_cast<double>(counts.visits[static_cast<size_t>(x + kMaxState)]);
    const double ax = std::fabs(static_cast<double>(x));
    result.p_values.push_back(erfc(std::fabs(count - J) / std::sqrt(2.0 * J * (4.0 * ax - 2))));
  }
  return result;
}

}  // namespace qe::sts
