#include "health/health.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "common/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QE_HEALTH_X86 1
#endif

namespace qe::health {

namespace {

// tails[c] = P(X >= c) for X ~ Binomial(n, p), c = 0..n+1, for 0 < p < 1.
// log pmf(k) comes from the recurrence pmf(k+1)/pmf(k) = (n-k)/(k+1) * p/(1-p), starting
// at log pmf(0) = n log(1-p); kept in log space because pmf(0) alone underflows for
// n = 1024, p = 1/2. The tail is summed from the far end inwards (smallest terms first),
// so a tail near alpha is exact to rounding and terms below DBL_MIN only drop out where
// they cannot matter.
std::vector<double> upper_tails(uint32_t n, double p) {
  const double log_ratio = std::log(p) - std::log1p(-p);
  std::vector<double> log_pmf(n + 1);
  log_pmf[0] = n * std::log1p(-p);
  for (uint32_t k = 0; k < n; ++k)
    log_pmf[k + 1] = log_pmf[k] + std::log(double(n - k)) - std::log(double(k + 1)) + log_ratio;
  std::vector<double> tails(n + 2, 0.0);
  for (uint32_t k = n + 1; k-- > 0;) tails[k] = tails[k + 1] + std::exp(log_pmf[k]);
  for (double& t : tails) t = std::min(t, 1.0);
  return tails;
}

}  // namespace

double binomial_upper_tail(uint32_t n, double p, uint32_t c) {
  if (c == 0) return 1.0;
  if (c > n) return 0.0;
  if (!(p > 0.0)) return 0.0;
  if (!(p < 1.0)) return 1.0;
  return upper_tails(n, p)[c];
}

namespace {

// -log2(alpha)/H rounded up, treating a quotient within rounding noise of an integer as
// that integer (20 / 5 must give 4, not 5, even if H arrived as 4.9999999999999).
uint32_t ceil_ratio(double a, double h) {
  const double q = a / h;
  const double nearest = std::round(q);
  if (std::fabs(q - nearest) < 1e-9) return static_cast<uint32_t>(nearest);
  return static_cast<uint32_t>(std::ceil(q));
}

void check_entropy(double h, double max, const char* what) {
  if (!(h > 0.0) || !(h <= max) || !std::isfinite(h)) {
    std::ostringstream os;
    os << "min_entropy must be in (0, " << max << "] bits per " << what << ", got " << h;
    throw std::invalid_argument(os.str());
  }
}

void check_alpha(double alpha_log2) {
  if (!(alpha_log2 >= 1.0) || !(alpha_log2 <= 64.0))
    throw std::invalid_argument("alpha_log2 (-log2 of the false-alarm probability) must be in [1, 64]");
}

}  // namespace

uint32_t rct_cutoff(double min_entropy, double alpha_log2) {
  check_entropy(min_entropy, 8.0, "sample");
  check_alpha(alpha_log2);
  return 1 + ceil_ratio(alpha_log2, min_entropy);
}

uint32_t apt_cutoff(uint32_t window, double min_entropy, double alpha_log2) {
  check_entropy(min_entropy, 8.0, "sample");
  check_alpha(alpha_log2);
  if (window < 2) throw std::invalid_argument("APT window must be at least 2 samples");
  const double alpha = std::exp2(-alpha_log2);
  const std::vector<double> tails = upper_tails(window, std::exp2(-min_entropy));
  // The tail grows as c falls; the cutoff is the smallest c still within alpha.
  uint32_t c = window;
  if (tails[c] > alpha) return window;
  while (c > 1 && tails[c - 1] <= alpha) --c;
  return c;
}

void validate(const Config& config) {
  if (config.mode == SymbolMode::Bytes)
    check_entropy(config.min_entropy, 8.0, "byte");
  else
    check_entropy(config.min_entropy, 1.0, "bit");
  check_alpha(config.alpha_log2);
  if (config.startup_samples < kStartupSamples)
    throw std::invalid_argument("startup_samples must be at least 1024 (SP 800-90B §4.3)");
}

const char* test_name(Test test) {
  return test == Test::RepetitionCount ? "repetition-count" : "adaptive-proportion";
}

std::string Failure::describe() const {
  std::ostringstream os;
  os << test_name(test) << " test failed at sample " << sample_index << " (block offset " << block_offset
     << "): value " << symbol << " seen " << count << " times, cutoff " << cutoff;
  if (test == Test::RepetitionCount)
    os << " in a row";
  else
    os << " in one window";
  return os.str();
}

Tester::Tester(const Config& config) : config_(config) {
  validate(config_);
  window_ = config_.mode == SymbolMode::Bytes ? kByteWindow : kBitWindow;
  rct_cutoff_ = health::rct_cutoff(config_.min_entropy, config_.alpha_log2);
  apt_cutoff_ = health::apt_cutoff(window_, config_.min_entropy, config_.alpha_log2);
}

void Tester::reset() {
  rct_started_ = false;
  rct_value_ = rct_count_ = 0;
  rct_reported_ = false;
  apt_value_ = apt_count_ = apt_position_ = 0;
  apt_reported_ = false;
  clean_samples_ = 0;
  stats_ = Stats{};
}

// Every bad sample fails its block; only the first bad sample of a run (RCT) or window
// (APT) is a new failure event. A block inside a long stuck run therefore still fails and
// names the test, even though the event was counted in an earlier block.
void Tester::record(const Failure& failure, bool new_event, BlockResult& result) {
  result.passed = false;
  if (!result.first_failure) result.first_failure = failure;
  if (!new_event) return;
  ++result.failures;
  if (failure.test == Test::RepetitionCount)
    ++stats_.rct_failures;
  else
    ++stats_.apt_failures;
}

void Tester::sample(uint32_t symbol, size_t block_offset, BlockResult& result) {
  const uint64_t index = stats_.samples++;
  bool bad = false;

  // §4.4.1: count identical consecutive samples; C in a row is a failure. One failure
  // is reported per run, but every further repeat still counts as a bad sample.
  if (rct_started_ && symbol == rct_value_) {
    ++rct_count_;
    if (rct_count_ >= rct_cutoff_) {
      bad = true;
      record({Test::RepetitionCount, index, block_offset, symbol, rct_count_, rct_cutoff_}, !rct_reported_, result);
      rct_reported_ = true;
    }
  } else {
    rct_started_ = true;
    rct_value_ = symbol;
    rct_count_ = 1;
    rct_reported_ = false;
  }

  // §4.4.2: the first sample of each window of W is the reference; count how often it
  // occurs in the window (itself included); reaching C is a failure.
  if (apt_position_ == 0) {
    apt_value_ = symbol;
    apt_count_ = 1;
    apt_reported_ = false;
  } else if (symbol == apt_value_) {
    ++apt_count_;
    if (apt_count_ >= apt_cutoff_) {
      bad = true;
      record({Test::AdaptiveProportion, index, block_offset, symbol, apt_count_, apt_cutoff_}, !apt_reported_,
             result);
      apt_reported_ = true;
    }
  }
  if (++apt_position_ == window_) apt_position_ = 0;

  clean_samples_ = bad ? 0 : clean_samples_ + 1;
}

namespace {

// Bit i of the result (bits packed into 64-bit words, LSB first) is set when
// data[i] == data[i + 1], for i < size - 1. `out` holds size / 64 + 1 words.
void equal_neighbours_portable(const uint8_t* data, size_t size, uint64_t* out) {
  std::fill(out, out + size / 64 + 1, 0);
  for (size_t i = 0; i + 1 < size; ++i) out[i / 64] |= uint64_t{data[i] == data[i + 1]} << (i % 64);
}

size_t count_equal_portable(const uint8_t* data, size_t size, uint8_t value) {
  size_t n = 0;
  for (size_t i = 0; i < size; ++i) n += data[i] == value;
  return n;
}

#ifdef QE_HEALTH_X86
__attribute__((target("avx2"))) void equal_neighbours_avx2(const uint8_t* data, size_t size, uint64_t* out) {
  std::fill(out, out + size / 64 + 1, 0);
  size_t i = 0;
  for (; i + 33 <= size; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i + 1));
    const auto bits = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, b)));
    out[i / 64] |= uint64_t{bits} << (i % 64);
  }
  for (; i + 1 < size; ++i) out[i / 64] |= uint64_t{data[i] == data[i + 1]} << (i % 64);
}

__attribute__((target("avx2,popcnt"))) size_t count_equal_avx2(const uint8_t* data, size_t size, uint8_t value) {
  const __m256i v = _mm256_set1_epi8(static_cast<char>(value));
  size_t n = 0, i = 0;
  for (; i + 32 <= size; i += 32) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
    n += static_cast<size_t>(std::popcount(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, v)))));
  }
  return n + count_equal_portable(data + i, size - i, value);
}
#endif

struct ByteKernels {
  void (*equal_neighbours)(const uint8_t*, size_t, uint64_t*);
  size_t (*count_equal)(const uint8_t*, size_t, uint8_t);
};

const ByteKernels& byte_kernels() {
#ifdef QE_HEALTH_X86
  static const ByteKernels k = cpu::has_avx2() ? ByteKernels{equal_neighbours_avx2, count_equal_avx2}
                                               : ByteKernels{equal_neighbours_portable, count_equal_portable};
#else
  static const ByteKernels k{equal_neighbours_portable, count_equal_portable};
#endif
  return k;
}

// Bit i of a packed bit array (false past its end).
inline bool bit_at(const uint64_t* bits, size_t nbits, size_t i) { return i < nbits && ((bits[i / 64] >> (i % 64)) & 1); }

}  // namespace

// Byte mode, whole block at once: decides with word-parallel compares whether any sample
// of the block would fail, and if none would, moves the state on as the per-sample loop
// would have. Returns false (state untouched) when a sample might fail, or when the
// cutoffs are too large for this path; the per-sample loop then does the block, so every
// failure is still reported exactly as before.
bool Tester::feed_clean_bytes(const uint8_t* data, size_t size) {
  if (!word_parallel_ || size == 0 || rct_cutoff_ < 2 || rct_cutoff_ > 64 || apt_cutoff_ < 2) return false;
  const ByteKernels& k = byte_kernels();
  // RCT: a run of C equal bytes is C - 1 equal neighbours in a row.
  eq_.resize(size / 64 + 2);
  uint64_t* const eq = eq_.data();
  k.equal_neighbours(data, size, eq);
  const size_t pairs = size - 1;
  const size_t words = size / 64 + 1;
  eq[words] = 0;
  run_.assign(eq, eq + words);
  for (uint32_t t = 1; t + 1 < rct_cutoff_; ++t)  // run_ bit i: eq bits i .. i + t all set
    for (size_t w = 0; w < words; ++w) run_[w] &= (eq[w] >> t) | (eq[w + 1] << (64 - t));
  for (size_t w = 0; w < words; ++w)
    if (run_[w]) return false;
  // The run the previous block ended with, continued by this block's first bytes.
  size_t lead = 1;
  while (lead < size && bit_at(eq, pairs, lead - 1)) ++lead;
  const bool continues = rct_started_ && data[0] == rct_value_;
  if (continues && rct_count_ + lead >= rct_cutoff_) return false;
  // APT: the windows this block touches, each counted at once.
  uint32_t value = apt_value_, count = apt_count_, position = apt_position_;
  bool new_window = false;
  for (size_t i = 0; i < size;) {
    if (position == 0) {
      value = data[i];
      count = 0;
      new_window = true;
    }
    const size_t seg = std::min<size_t>(size - i, window_ - position);
    count += static_cast<uint32_t>(k.count_equal(data + i, seg, static_cast<uint8_t>(value)));
    if (count >= apt_cutoff_) return false;
    position = static_cast<uint32_t>((position + seg) % window_);
    i += seg;
  }
  // No sample fails: commit what the per-sample loop would have left.
  apt_value_ = value;
  apt_count_ = count;
  apt_position_ = position;
  size_t trail = 1;
  while (trail < size && bit_at(eq, pairs, size - 1 - trail)) ++trail;
  if (trail == size && continues) {
    rct_count_ += static_cast<uint32_t>(size);
  } else {
    rct_value_ = data[size - 1];
    rct_count_ = static_cast<uint32_t>(trail);
    rct_reported_ = false;
  }
  rct_started_ = true;
  if (new_window) apt_reported_ = false;
  stats_.samples += size;
  clean_samples_ += size;
  return true;
}

BlockResult Tester::feed(const uint8_t* data, size_t size) {
  BlockResult result;
  if (config_.mode == SymbolMode::Bytes && feed_clean_bytes(data, size)) {
    // Every sample passed.
  } else if (config_.mode == SymbolMode::Bytes) {
    for (size_t i = 0; i < size; ++i) sample(data[i], i, result);
  } else {
    for (size_t i = 0; i < size; ++i)
      for (int bit = 7; bit >= 0; --bit) sample((data[i] >> bit) & 1u, i, result);
  }
  result.ready = ready();
  if (result.passed)
    ++stats_.blocks_passed;
  else
    ++stats_.blocks_failed;
  return result;
}

}  // namespace qe::health
