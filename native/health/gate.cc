// See gate.h.
#include "health/gate.h"

#include <cstring>

namespace qe::gate {

Gate::Gate(const health::Config& health, const pattern::Config& pattern, bm::Kernel kernel)
    : health_(health), pattern_(pattern, kernel) {}

Gate::~Gate() {
  // The last block of raw output: erased with the gate.
  volatile uint8_t* p = previous_;
  for (size_t i = 0; i < kBlockBytes; ++i) p[i] = 0;
}

void Gate::test(const uint8_t* data, size_t blocks, std::vector<Verdict>& out) {
  // Every tester sees every block, in stream order: their state spans blocks. The testers
  // are independent of each other, so the pattern check takes the whole batch at once
  // (its linear complexities run 64 blocks side by side).
  patterns_.resize(blocks);
  pattern_.test_blocks(data, kBlockBytes, blocks, patterns_.data());
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* block = data + b * kBlockBytes;
    Verdict v;
    v.health = health_.feed(block, kBlockBytes);
    v.repeated = have_previous_ && std::memcmp(previous_, block, kBlockBytes) == 0;
    std::memcpy(previous_, block, kBlockBytes);
    have_previous_ = true;
    v.pattern = std::move(patterns_[b]);
    out.push_back(std::move(v));
  }
}

}  // namespace qe::gate
