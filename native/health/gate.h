// The health gate's per-block tests in one object (issue 30): SP 800-90B RCT/APT, the
// repeated-block check and the pattern check, run on a batch of 1,024-byte blocks in
// stream order. The rules that act on the verdicts (start-up, failure counts, out of
// service) stay with the caller (src/sources/health-gate.ts); this is the part worth
// running on a worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "health/health.h"
#include "health/pattern.h"

namespace qe::gate {

inline constexpr size_t kBlockBytes = 1024;

struct Verdict {
  health::BlockResult health;      // RCT/APT, with start-up readiness
  bool repeated = false;           // the block equals the one before it
  pattern::BlockReport pattern;    // repeats within the history, linear complexity
};

class Gate {
 public:
  // Throws std::invalid_argument for a bad health config.
  explicit Gate(const health::Config& health, const pattern::Config& pattern = {},
                bm::Kernel kernel = bm::Kernel::Best);
  // Tests `blocks` consecutive 1,024-byte blocks of `data`, appending one verdict each.
  void test(const uint8_t* data, size_t blocks, std::vector<Verdict>& out);
  // For benchmarks: the plain per-sample and portable code paths.
  void use_word_parallel(bool on) { health_.use_word_parallel(on); }
  ~Gate();

 private:
  health::Tester health_;
  pattern::Tester pattern_;
  std::vector<pattern::BlockReport> patterns_;  // test()'s working memory
  bool have_previous_ = false;
  uint8_t previous_[kBlockBytes] = {};
};

}  // namespace qe::gate
