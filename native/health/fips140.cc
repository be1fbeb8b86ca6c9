#include "health/fips140.h"

#include <sstream>
#include <stdexcept>

namespace qe::fips140 {

namespace {

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

  // Monobit, poker and runs in one pass.
  std::array<uint32_t, 16> nibbles{};
  int run_bit = -1;
  uint32_t run_length = 0;
  auto close_run = [&] {
    if (run_bit < 0) return;
    report.runs[run_bit][run_length >= 6 ? 5 : run_length - 1]++;
    if (run_length > report.longest_run) report.longest_run = run_length;
  };
  for (size_t i = 0; i < size; ++i) {
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

  if (!(report.ones > 9725 && report.ones < 10275)) report.failed |= kMonobit;

  // X * 5000 = 16 * sum(f^2) - 5000^2, compared in integers so the bounds are exact.
  int64_t sum_sq = 0;
  for (uint32_t f : nibbles) sum_sq += int64_t(f) * f;
  const int64_t x5000 = 16 * sum_sq - 25'000'000;
  report.poker = double(x5000) / 5000.0;
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

}  // namespace qe::fips140
