#include "health/fips140.h"

#include "common/cpu.h"
#include "health/fips140_counts.h"

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

enum class Resolved { Words, Avx512bw, Avx512Popcnt };

Resolved resolve(Kernel kernel) {
  if (kernel == Kernel::Words || !detail::avx512_built() || !cpu::has_avx512bw()) return Resolved::Words;
  if (kernel == Kernel::Avx512bw) return Resolved::Avx512bw;
  return cpu::has_avx512vpopcntdq() && cpu::has_avx512vbmi2() ? Resolved::Avx512Popcnt : Resolved::Avx512bw;
}

// The longest run of set bits in `words` (bit order as sequence words), across words,
// visiting only the words that `nonzero` marks (bit w % 8 of byte w / 8).
uint32_t longest_run_in(const uint64_t* words, const uint8_t* nonzero, size_t count) {
  size_t best = 0, carried = 0;  // carried: the set bits that end the word before
  size_t previous = 0;           // the last word visited, plus one
  for (size_t byte = 0; byte < count / 8; ++byte)
    for (unsigned marks = nonzero[byte]; marks != 0; marks &= marks - 1) {
      const size_t w = 8 * byte + static_cast<size_t>(std::countr_zero(marks));
      if (w != previous) carried = 0;  // a zero word between
      previous = w + 1;
      const uint64_t v = words[w];
      if (v == ~uint64_t{0}) {
        carried += 64;
        best = std::max(best, carried);
        continue;
      }
      best = std::max(best, carried + static_cast<size_t>(std::countl_one(v)));
      size_t inside = 0;  // each step shortens every run in v by one
      for (uint64_t u = v; u != 0; u &= u << 1) ++inside;
      best = std::max(best, inside);
      carried = static_cast<size_t>(std::countr_one(v));
    }
  return static_cast<uint32_t>(best);
}

// Run lengths of bit value v from the kernel's windows (fips140_counts.h): runs of length
// >= k are W(k) - W(k+1), so runs of exactly k are W(k) - 2 W(k+1) + W(k+2).
void runs_of(const detail::Counts& c, int v, std::array<uint32_t, 6>& runs, uint32_t& longest) {
  const auto& W = c.windows[static_cast<size_t>(v)];
  for (size_t k = 1; k <= 5; ++k) runs[k - 1] = W[k] - 2 * W[k + 1] + W[k + 2];
  runs[5] = W[6] - W[7];
  // The longest window that exists: counted up to 7 bits, only looked for up to kDeep.
  uint32_t reach = 0;
  for (uint32_t k = 1; k < 8; ++k)
    if (W[k] > 0) reach = k;
  for (uint32_t k = 8; k <= detail::kDeep; ++k)
    if (c.longer[static_cast<size_t>(v)][k - 8]) reach = k;
  longest = reach < detail::kDeep ? reach
                                  : detail::kDeep - 1 +
                                        longest_run_in(c.deep[static_cast<size_t>(v)].data(),
                                                       c.nonzero_deep[static_cast<size_t>(v)].data(), detail::kVectorWords);
}

}  // namespace

const char* kernel_name(Kernel kernel) {
  if (kernel == Kernel::BitByBit) return "bit-by-bit";
  switch (resolve(kernel)) {
    case Resolved::Words: return "words";
    case Resolved::Avx512bw: return "avx512bw";
    case Resolved::Avx512Popcnt: return "avx512-vpopcntdq";
  }
  return "words";
}

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

// The same counts by one of the kernels of fips140_counts.h, on a zero-padded copy.
void Tester::count_with_kernel(const uint8_t* block, BlockReport& report) {
  alignas(64) uint8_t padded[detail::kPaddedBytes];
  std::memcpy(padded, block, kBlockBytes);
  std::memset(padded + kBlockBytes, 0, sizeof padded - kBlockBytes);
  detail::Counts counts;
  switch (resolve(kernel_)) {
    case Resolved::Words: detail::count_words(padded, counts); break;
    case Resolved::Avx512bw: detail::count_avx512bw(padded, counts); break;
    case Resolved::Avx512Popcnt: detail::count_avx512_popcnt(padded, counts); break;
  }
  report.ones = counts.windows[1][1];
  uint32_t longest_ones = 0, longest_zeros = 0;
  runs_of(counts, 1, report.runs[1], longest_ones);
  runs_of(counts, 0, report.runs[0], longest_zeros);
  report.longest_run = std::max(longest_ones, longest_zeros);
  poker_x5000_ = poker_x5000(counts.nibbles);
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

  // Continuous test: each 32-bit word against the one before it, the first against the
  // previous block's last. Words are compared as they lie in memory (equal bytes, equal
  // words), counted without a branch so that the loop vectorises.
  auto word_at = [block](size_t i) {
    uint32_t w;
    std::memcpy(&w, block + i, 4);
    return w;
  };
  uint32_t repeats = have_previous_word_ && word_at(0) == previous_word_ ? 1 : 0;
  for (size_t i = 4; i < size; i += 4) repeats += word_at(i) == word_at(i - 4) ? 1 : 0;
  if (repeats > 0) report.failed |= kContinuousRun;
  previous_word_ = word_at(size - 4);
  have_previous_word_ = true;

  if (kernel_ == Kernel::BitByBit)
    count_bit_by_bit(block, report);
  else
    count_with_kernel(block, report);

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
