// RDSEED: the CPU's conditioned entropy source (Intel DRNG / AMD equivalent), read 64 bits
// at a time. RDSEED may report "no data yet" when its buffer is drained, so every step is
// retried with a pause, up to a bounded number of attempts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qe::sources {

// True when this CPU has the RDSEED instruction.
bool rdseed_available();

// Attempts per 64-bit word before giving up (each attempt is followed by a PAUSE).
inline constexpr unsigned kRdseedRetries = 100000;

// Fills out[0..size) with RDSEED output. Throws std::runtime_error when the CPU lacks
// RDSEED or when a word could not be obtained within kRdseedRetries attempts.
void rdseed_fill(uint8_t* out, size_t size);

}  // namespace qe::sources
