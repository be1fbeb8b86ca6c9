// Continuous health tests of SP 800-90B §4.4: the Repetition Count Test (RCT, §4.4.1)
// and the Adaptive Proportion Test (APT, §4.4.2), run on raw noise-source output before
// anything is used, plus the start-up test of §4.3 (the first 1,024 samples, and again
// after every failure).
//
// A tester is a stateful object: blocks are fed in stream order and the tests carry
// their state across block boundaries (a run of repeats may straddle two blocks, an APT
// window spans the end of one block and the start of the next).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qe::health {

// What one sample is: a whole byte (256 symbols, APT window 512) or one bit of it
// (most significant bit first, APT window 1,024), the two window sizes of §4.4.2.
enum class SymbolMode { Bytes, Bits };

inline constexpr uint32_t kByteWindow = 512;
inline constexpr uint32_t kBitWindow = 1024;
inline constexpr uint32_t kStartupSamples = 1024;
inline constexpr double kDefaultAlphaLog2 = 20.0;  // false-alarm probability 2^-20

// P(X >= c) for X ~ Binomial(n, p), summed in log space from the far tail inwards so
// that terms far below DBL_MIN and terms near 1 are both handled without overflow.
double binomial_upper_tail(uint32_t n, double p, uint32_t c);

// RCT cutoff of §4.4.1: C = 1 + ceil(-log2(alpha) / H). `alpha_log2` is -log2(alpha).
uint32_t rct_cutoff(double min_entropy, double alpha_log2 = kDefaultAlphaLog2);

// APT cutoff of §4.4.2: C = 1 + CRITBINOM(W, 2^-H, 1 - alpha), i.e. the smallest c with
// P(X >= c) <= alpha for X ~ Binomial(W, 2^-H). Capped at W (a count can never exceed
// the window, so a larger cutoff could never fire).
uint32_t apt_cutoff(uint32_t window, double min_entropy, double alpha_log2 = kDefaultAlphaLog2);

struct Config {
  SymbolMode mode = SymbolMode::Bytes;
  // Assessed min-entropy per sample: bits per byte in byte mode (0 < H <= 8), per bit in
  // bit mode (0 < H <= 1).
  double min_entropy = 8.0;
  // -log2 of the false-alarm probability of each test (20 means alpha = 2^-20).
  double alpha_log2 = kDefaultAlphaLog2;
  // Consecutive samples that must pass before output is trusted (SP 800-90B: >= 1024).
  uint32_t startup_samples = kStartupSamples;
};

// Throws std::invalid_argument naming the bad field.
void validate(const Config& config);

enum class Test { RepetitionCount, AdaptiveProportion };
const char* test_name(Test test);  // "repetition-count" / "adaptive-proportion"

// Where a test fired. `sample_index` counts samples (bytes or bits) since the tester was
// created or reset; `block_offset` is the byte offset inside the block being fed.
struct Failure {
  Test test;
  uint64_t sample_index = 0;
  size_t block_offset = 0;
  uint32_t symbol = 0;  // the repeated value (RCT) or the window's first value (APT)
  uint32_t count = 0;   // the count that reached the cutoff
  uint32_t cutoff = 0;
  std::string describe() const;  // one line for logs
};

struct BlockResult {
  bool passed = true;  // no test fired anywhere in this block
  // Start-up is complete: at least `startup_samples` consecutive samples have passed
  // (counted up to the end of this block). Output should be used only when true.
  bool ready = false;
  // New failure events in the block (one per RCT run, one per APT window). A block can
  // fail with 0 here when it lies inside a stuck run already reported.
  uint32_t failures = 0;
  std::optional<Failure> first_failure;  // the first bad sample of the block
};

struct Stats {
  uint64_t samples = 0;
  uint64_t rct_failures = 0;
  uint64_t apt_failures = 0;
  uint64_t blocks_passed = 0;
  uint64_t blocks_failed = 0;
};

class Tester {
 public:
  explicit Tester(const Config& config);

  BlockResult feed(const uint8_t* data, size_t size);
  // Back to the freshly created state (start-up tests run again).
  void reset();

  const Config& config() const { return config_; }
  uint32_t rct_cutoff() const { return rct_cutoff_; }
  uint32_t apt_cutoff() const { return apt_cutoff_; }
  uint32_t window() const { return window_; }
  bool ready() const { return clean_samples_ >= config_.startup_samples; }
  const Stats& stats() const { return stats_; }
  // Byte mode checks whole blocks with vector compares and runs the per-sample loop only
  // on a block where a sample may fail (the default), or runs the loop on every block
  // (for tests and benchmarks: the two give identical results).
  void use_word_parallel(bool on) { word_parallel_ = on; }

 private:
  // Runs both tests on one sample; returns a failure when one fires.
  void sample(uint32_t symbol, size_t block_offset, BlockResult& result);
  void record(const Failure& failure, bool new_event, BlockResult& result);
  bool feed_clean_bytes(const uint8_t* data, size_t size);

  Config config_;
  uint32_t rct_cutoff_;
  uint32_t apt_cutoff_;
  uint32_t window_;

  // RCT state.
  bool rct_started_ = false;
  uint32_t rct_value_ = 0;
  uint32_t rct_count_ = 0;
  bool rct_reported_ = false;  // this run already produced a failure
  // APT state.
  uint32_t apt_value_ = 0;
  uint32_t apt_count_ = 0;
  uint32_t apt_position_ = 0;  // samples seen in the current window (0 = none yet)
  bool apt_reported_ = false;  // this window already produced a failure

  uint64_t clean_samples_ = 0;  // consecutive samples since the last failure
  Stats stats_;
  bool word_parallel_ = true;
  std::vector<uint64_t> eq_, run_;  // working memory of feed_clean_bytes

};

}  // namespace qe::health
