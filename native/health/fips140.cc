#include "health/fips140.h"

#include "common/cpu.h"
#include "health/bit_order.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>
#include <vector>
#include <stdexcept>

namespace qe::fips140 {

namespace {

// X * 5000 = 16 * sum(f^2) - 5000^2, compared in integers so the bounds are exact.
int64_t poker_x5000(const std::array<uint32_t, 16>& nibbles) {
  int64_t sum_sq = 0;
  for (uint32_t f : nibbles) sum_sq += int64_t(f) * f;
  return 16 * sum_sq - 25'000'000;
}

constexpr std::array<uint32_t, 6> kRunMin = {2315, 1114, 527, 240, 103, 103};
constexpr std::array<uint32_t, 6> kRunMax = {2685, 1386, 723, 384, 209, 209};
constexpr uint32_t kLongRunLength = 26;

}  // namespace

const char* test_name(int index) {
  static constexpr const char* kNames[kTestCount] = {"monobit", "poker", "runs", "long-run", "continuous-run"};
  return index >= 0 && index < kTestCount ? kNames[index] : "unknown";
}

std::string BlockReport::describe() const {
  if (failed == 0) return "FIPS 140-2 tests passed";
  std::ostringstream os;
  os << "FIPS 140-2 failed:";
  if (failed & kMonobit) os << " monobit (ones " << ones << ", allowed 9726..10274)";
  if (failed & kPoker) os << " poker (X " << poker << ", allowed 2.16..46.17)";
  if (failed & kRuns) os << " runs (a run-length count out of bounds)";
  if (failed & kLongRun) os << " long-run (run of " << longest_run << " equal bits, limit 25)";
  if (failed & kContinuousRun) os << " continuous-run (a 32-bit word repeated)";
  return os.str();
}


namespace {

constexpr size_t kWords = (kBlockBytes * 8 + 63) / 64;  // 313; the last holds 32 bits
using BitBlock = std::array<uint64_t, kWords + 1>;     // one zero word past the end

// 64 bits of `b` from bit `pos` on (zero past the end).
inline uint64_t bits_from(const BitBlock& b, size_t pos) {
  const size_t q = pos / 64;
  if (q >= kWords) return 0;
  const unsigned r = pos % 64;
  return r == 0 ? b[q] : (b[q] >> r) | (b[q + 1] << (64 - r));
}

QE_POPCNT_CLONES uint32_t ones_in(const BitBlock& b) {
  uint32_t n = 0;
  for (size_t w = 0; w < kWords; ++w) n += static_cast<uint32_t>(std::popcount(b[w]));
  return n;
}

// Runs of set bits in `y` (zero past the block): counts of lengths 1..5 and 6+, and the
// longest. A run of length >= k starts at bit i when i starts a run (y_i set, y_(i-1)
// clear) and y_i .. y_(i+k-1) are all set: for each word, five shifted ANDs and six
// popcounts. The longest run is measured from each start of a run of 6 or more (a few
// dozen per block), or is the longest of the short ones.
QE_POPCNT_CLONES void runs_of(const BitBlock& y, std::array<uint32_t, 6>& counts, uint32_t& longest) {
  uint32_t ge[7] = {};
  uint64_t carry = 0;
  size_t longest_run = 0;
  for (size_t w = 0; w < kWords; ++w) {
    const uint64_t x0 = y[w], x1 = y[w + 1];
    const uint64_t start = x0 & ~((x0 << 1) | carry);
    carry = x0 >> 63;
    uint64_t at_least = x0;  // bit i: y_i .. y_(i+k-1) all set
    ge[1] += static_cast<uint32_t>(std::popcount(start));
    for (unsigned t = 1; t <= 5; ++t) {
      at_least &= (x0 >> t) | (x1 << (64 - t));
      ge[t + 1] += static_cast<uint32_t>(std::popcount(start & at_least));
    }
    for (uint64_t long_starts = start & at_least; long_starts != 0; long_starts &= long_starts - 1) {
      const size_t from = 64 * w + static_cast<size_t>(std::countr_zero(long_starts));
      size_t len = 0;
      for (;;) {
        const uint64_t v = bits_from(y, from + len);
        if (v != ~uint64_t{0}) {
          len += static_cast<size_t>(std::countr_one(v));
          break;
        }
        len += 64;
      }
      longest_run = std::max(longest_run, len);
    }
  }
  for (size_t k = 1; k <= 5; ++k) counts[k - 1] = ge[k] - ge[k + 1];
  counts[5] = ge[6];
  if (longest_run == 0)
    for (size_t k = 1; k <= 5; ++k)
      if (ge[k] > 0) longest_run = k;
  longest = static_cast<uint32_t>(longest_run);
}

}  // namespace

// The per-bit loop: every bit visited once (the reference the word-parallel count is
// tested against).
void Tester::count_bit_by_bit(const uint8_t* block, BlockReport& report) {
  std::array<uint32_t, 16> nibbles{};
  int run_bit = -1;
  uint32_t run_length = 0;
  auto close_run = [&] {
    if (run_bit < 0) return;
    report.runs[run_bit][run_length >= 6 ? 5 : run_length - 1]++;
    if (run_length > report.longest_run) report.longest_run = run_length;
  };
  for (size_t i = 0; i < kBlockBytes; ++i) {
    const uint8_t byte = block[i];
    ++nibbles[byte >> 4];
    ++nibbles[byte & 15];
    for (int b = 7; b >= 0; --b) {
      const int bit = (byte >> b) & 1;
      report.ones += bit;
      if (bit == run_bit) {
        ++run_length;
      } else {
        close_run();
        run_bit = bit;
        run_length = 1;
      }
    }
  }
  close_run();
  report.poker = poker_x5000(nibbles) / 5000.0;
  poker_x5000_ = poker_x5000(nibbles);
}

// The same counts on 64 bits at a time: ones by popcount, runs by shifted ANDs.
QE_POPCNT_CLONES void Tester::count_word_parallel(const uint8_t* block, BlockReport& report) {
  std::array<uint32_t, 16> nibbles{};
  // Four histograms, so consecutive bytes do not wait on each other's increments.
  std::array<std::array<uint32_t, 16>, 4> h{};
  for (size_t i = 0; i < kBlockBytes; i += 4)
    for (size_t t = 0; t < 4; ++t) {
      ++h[t][block[i + t] >> 4];
      ++h[t][block[i + t] & 15];
    }
  for (size_t v = 0; v < 16; ++v) nibbles[v] = h[0][v] + h[1][v] + h[2][v] + h[3][v];
  BitBlock x{}, zeros{};
  for (size_t w = 0; w < kWords; ++w) {
    x[w] = health::sequence_word(block, kBlockBytes, w);
    zeros[w] = ~x[w];
  }
  zeros[kWords - 1] &= 0xffffffffull;  // 20,000 = 312 * 64 + 32
  report.ones = ones_in(x);
  uint32_t longest_ones = 0, longest_zeros = 0;
  runs_of(x, report.runs[1], longest_ones);
  runs_of(zeros, report.runs[0], longest_zeros);
  report.longest_run = std::max(longest_ones, longest_zeros);
  poker_x5000_ = poker_x5000(nibbles);
  report.poker = poker_x5000_ / 5000.0;
}

void Tester::reset() {
  have_previous_word_ = false;
  previous_word_ = 0;
  stats_ = Stats{};
}

BlockReport Tester::test_block(const uint8_t* block, size_t size) {
  if (size != kBlockBytes) throw std::invalid_argument("FIPS 140-2 tests need blocks of exactly 2,500 bytes");
  BlockReport report;

  // Continuous test: compare each 32-bit word with the one before it.
  for (size_t i = 0; i < size; i += 4) {
    const uint32_t word = uint32_t(block[i]) | uint32_t(block[i + 1]) << 8 | uint32_t(block[i + 2]) << 16 |
                          uint32_t(block[i + 3]) << 24;
    if (have_previous_word_ && word == previous_word_) report.failed |= kContinuousRun;
    previous_word_ = word;
    have_previous_word_ = true;
  }

  if (word_parallel_)
    count_word_parallel(block, report);
  else
    count_bit_by_bit(block, report);

  if (!(report.ones > 9725 && report.ones < 10275)) report.failed |= kMonobit;

  const int64_t x5000 = poker_x5000_;
  if (!(x5000 > 10'800 && x5000 < 230'850)) report.failed |= kPoker;

  for (int v = 0; v < 2; ++v)
    for (int i = 0; i < 6; ++i)
      if (report.runs[v][i] < kRunMin[i] || report.runs[v][i] > kRunMax[i]) report.failed |= kRuns;

  if (report.longest_run >= kLongRunLength) report.failed |= kLongRun;

  ++stats_.blocks;
  if (report.failed) {
    ++stats_.blocks_failed;
    for (int t = 0; t < kTestCount; ++t)
      if (report.failed & (1u << t)) ++stats_.failures[t];
  }
  return report;
}

void Tester::test_blocks(const uint8_t* data, size_t blocks, std::vector<BlockReport>& out) {
  out.reserve(out.size() + blocks);
  for (size_t b = 0; b < blocks; ++b) out.push_back(test_block(data + b * kBlockBytes, kBlockBytes));
}

}  // namespace qe::fips140
