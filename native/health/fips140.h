// The FIPS 140-2 power-up statistical tests (§4.9.1 as amended by the change notice of
// 2001-10-10) on 20,000-bit blocks, plus the continuous random number generator test of
// §4.9.2 on 32-bit words: the checks rngd (rng-tools) runs before feeding the kernel,
// offered so users coming from rngd keep what they trust.
//
// Bounds (a block fails a test outside them):
//   monobit   9,725 < ones < 10,275
//   poker     2.16 < X < 46.17, X = 16/5000 * sum(f_i^2) - 5000 over the 5,000 nibbles
//   runs      per bit value, runs of length 1..5 and 6+ within
//             [2315,2685] [1114,1386] [527,723] [240,384] [103,209] [103,209]
//   long run  no run of 26 or more equal bits
//   continuous no 32-bit word equal to the word before it (across blocks too)
// Bits are taken most significant first within each byte, as rngd does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qe::fips140 {

inline constexpr size_t kBlockBytes = 2500;  // 20,000 bits

enum TestBit : uint32_t {
  kMonobit = 1u << 0,
  kPoker = 1u << 1,
  kRuns = 1u << 2,
  kLongRun = 1u << 3,
  kContinuousRun = 1u << 4,
};
inline constexpr int kTestCount = 5;
// "monobit", "poker", "runs", "long-run", "continuous-run" for bit i of the mask.
const char* test_name(int index);

struct BlockReport {
  uint32_t failed = 0;  // TestBit mask of the tests that failed; 0 = the block passed
  uint32_t ones = 0;
  double poker = 0.0;  // the X statistic
  // runs[v][i]: runs of bit value v of length i+1 (i = 5: length 6 or more).
  std::array<std::array<uint32_t, 6>, 2> runs{};
  uint32_t longest_run = 0;
  bool passed() const { return failed == 0; }
  std::string describe() const;  // names the failed tests and their statistics
};

struct Stats {
  uint64_t blocks = 0;
  uint64_t blocks_failed = 0;
  std::array<uint64_t, kTestCount> failures{};  // per test, indexed like test_name
};

// How a Tester counts ones, nibbles and runs; every kernel gives identical reports.
enum class Kernel {
  BitByBit,  // every bit visited once: the reference the others are tested against
  Words,     // 64-bit words, no SIMD
  Avx512bw,  // AVX-512 F + BW alone where the CPU has them, else Words (for tests: Best may skip it)
  Best,      // AVX-512 where the CPU has F + BW (with VPOPCNTDQ + VBMI2 where present), else Words
};
// "bit-by-bit", "words", "avx512bw" or "avx512-vpopcntdq": what `kernel` runs on this CPU.
const char* kernel_name(Kernel kernel);

// Stateful only for the continuous test (the last 32-bit word of the previous block).
class Tester {
 public:
  // `block` must hold exactly kBlockBytes bytes; throws std::invalid_argument otherwise.
  BlockReport test_block(const uint8_t* block, size_t size);
  // Tests `blocks` consecutive 2,500-byte blocks of `data` in stream order (exactly as many
  // test_block calls would), appending one report each: a whole response in one call, so a
  // binding can run it on a worker thread.
  void test_blocks(const uint8_t* data, size_t blocks, std::vector<BlockReport>& out);
  void reset();
  const Stats& stats() const { return stats_; }
  // Kernel::Best unless told otherwise (tests and benchmarks).
  void use_kernel(Kernel kernel) { kernel_ = kernel; }
  void use_word_parallel(bool on) { kernel_ = on ? Kernel::Best : Kernel::BitByBit; }

 private:
  void count_with_kernel(const uint8_t* block, BlockReport& report);
  void count_bit_by_bit(const uint8_t* block, BlockReport& report);
  Kernel kernel_ = Kernel::Best;
  int64_t poker_x5000_ = 0;
  bool have_previous_word_ = false;
  uint32_t previous_word_ = 0;
  Stats stats_;
};

}  // namespace qe::fips140
