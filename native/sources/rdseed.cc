#include "sources/rdseed.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "common/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace qe::sources {

bool rdseed_available() { return qe::cpu::has_rdseed(); }

#if defined(__x86_64__)
namespace {

// Compiled for RDSEED only here, so the rest of the core stays runnable on any x86-64;
// callers check rdseed_available() first.
__attribute__((target("rdseed"))) bool rdseed_word(uint64_t& word) {
  for (unsigned attempt = 0; attempt < kRdseedRetries; ++attempt) {
    unsigned long long value = 0;
    if (_rdseed64_step(&value)) {
      word = static_cast<uint64_t>(value);
      return true;
    }
    _mm_pause();
  }
  return false;
}

}  // namespace
#endif

void rdseed_fill(uint8_t* out, size_t size) {
#if defined(__x86_64__)
  if (!rdseed_available()) throw std::runtime_error("rdseed: this CPU has no RDSEED instruction");
  size_t offset = 0;
  while (offset < size) {
    uint64_t word = 0;
    if (!rdseed_word(word)) {
      throw std::runtime_error("rdseed: no data after " + std::to_string(kRdseedRetries) + " attempts");
    }
    const size_t count = size - offset < sizeof word ? size - offset : sizeof word;
    std::memcpy(out + offset, &word, count);
    offset += count;
    word = 0;
  }
#else
  (void)out;
  (void)size;
  throw std::runtime_error("rdseed: only available on x86-64");
#endif
}

}  // namespace qe::sources
