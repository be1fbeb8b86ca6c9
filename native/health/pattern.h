// A check for deterministic streams that pass the per-sample health tests. SP 800-90B's
// RCT and APT look at runs and proportions of symbols, so a byte counter (00..ff again and
// again), an LFSR or a buffer replayed over and over passes them, and FIPS 140-2's block
// tests fail only some windows of such a stream. This tester looks for the structure
// itself, block by block, in stream order:
//
//  - Repetition: any 64 bytes of the block that already occurred, byte-aligned, within
//    the last `history_bytes` of the stream (or earlier in the same block). A source
//    repeating with any period up to the history (a counter's 256 bytes, a replayed
//    1 KiB block, a bit period up to 8 x history bits) is caught on its first repeat. The
//    history keeps 64-bit fingerprints of 32-byte chunks, never the bytes themselves.
//  - Linear complexity: Berlekamp-Massey over GF(2) on the block's first `linear_bits`
//    bits (most significant bit of each byte first; default 1,280). Random bits have a linear complexity
//    within a few bits of half their length; an LFSR of degree L, or a generator that
//    outputs bytes of one (complexity up to 8L), has L. The block fails when the
//    complexity is `linear_margin` or more below half.
//
// False alarms: a repeat needs two 32-byte windows both matching fingerprints (about
// 2^-100 per block for random data); a linear-complexity deficit of 32 bits has
// probability about 2^-64. So one failure is evidence, not noise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bitsliced_bm/bitsliced_bm.h"
#include "health/berlekamp_massey.h"

namespace qe::pattern {

struct Config {
  size_t history_bytes = 65536;  // how far back repeats are looked for (multiple of 32)
  // Bits per block given to Berlekamp-Massey (0 = off). 1,280 bits fail at 608 or less: every
  // linear generator of up to 76 bits of state read a byte at a time, and any LFSR of degree
  // up to 608 read a bit at a time. (2,048 bits would catch more and cost 2.4 times as much.)
  size_t linear_bits = 1280;
  size_t linear_margin = 32;     // fail when complexity <= linear_bits / 2 - margin
};

struct BlockReport {
  bool passed = true;
  // Nearest distance in bytes back to an earlier occurrence of 64 of the block's bytes
  // (0: none found).
  size_t repeat_distance = 0;
  // Linear complexity of the block's first `linear_bits` bits, and how many bits that was.
  size_t linear_complexity = 0;
  size_t linear_bits = 0;
  // The linear complexity was `linear_margin` or more below half of `linear_bits`.
  bool linear = false;
  bool repeated() const { return repeat_distance != 0; }
  std::string describe() const;  // one line for logs
};

// Berlekamp-Massey: the linear complexity of bits [0, nbits) of `data`, most significant
// bit of each byte first. `data` holds at least ceil(nbits / 8) bytes.
size_t linear_complexity(const uint8_t* data, size_t nbits);

// The same, keeping its working memory between calls (a tester runs it on every block);
// see berlekamp_massey.h for how it is computed.
using LinearComplexity = bm::LinearComplexity;

class Tester {
 public:
  // Throws std::invalid_argument for a history that is not a positive multiple of 32.
  // `kernel` picks the SIMD code (Kernel::Portable: plain 64-bit code only, for tests
  // and benchmarks); every kernel gives the same reports.
  explicit Tester(Config config = {}, bm::Kernel kernel = bm::Kernel::Best);
  // `size` must be a multiple of 32 and at least 64 bytes; throws std::invalid_argument.
  BlockReport test_block(const uint8_t* block, size_t size);
  // The same for `count` consecutive blocks of `size` bytes, in stream order, into
  // out[0 .. count): the same reports as test_block one by one. Batches of 28 blocks or
  // more take their linear complexities 64 at a time, bit-sliced (bitsliced_bm.h), at
  // about 2.3 times the one-at-a-time speed.
  void test_blocks(const uint8_t* data, size_t size, size_t count, BlockReport* out);
  // Forgets the stream seen so far (after a source was out of service).
  void reset();

 private:
  // The repeat search of test_block: the nearest earlier occurrence, 0 for none. Adds the
  // block's chunks to the history.
  size_t repeat_distance(const uint8_t* block, size_t size);
  // The fingerprint of the 32 bytes at each of the first `windows` offsets of `block`.
  void fingerprints(const uint8_t* block, size_t windows, uint64_t* out) const;
  void insert(uint64_t fp, uint64_t chunk);
  bool use_avx512_ = false;  // fingerprints eight windows a vector with byte permutes (VBMI)
  bool use_avx512_strided_ = false;  // else (no VBMI) lanes eight windows apart

  Config config_;
  LinearComplexity linear_;
  bitsliced_bm::Build sliced_build_;
  std::vector<size_t> complexities_;  // test_blocks' working memory
  uint64_t key_[4];
  // Fingerprints of the stream's aligned 32-byte chunks, oldest first, as a ring, with
  // an open-addressing table from fingerprint to chunk number for the lookups.
  // Fingerprints of the stream's aligned 32-byte chunks (chunk k covers stream bytes
  // [32k, 32k + 32)), the last history_bytes / 32 of them, in a ring indexed by k.
  std::vector<uint64_t> ring_;
  uint64_t chunks_seen_ = 0;  // number of the next chunk
  size_t ring_slot_ = 0;      // chunks_seen_ % ring_.size()
  // A direct-mapped index from fingerprint to chunk number (see lookup()). A collision
  // overwrites; a periodic stream repeats dozens of chunks per block, so losing one
  // index entry never hides it.
  std::vector<uint64_t> index_;
  bool live(uint64_t chunk) const;
  // The live chunk whose fingerprint is `fp`, as number + 1, or 0.
  uint64_t lookup(uint64_t fp) const;
  uint64_t chunk_fingerprint(uint64_t chunk) const { return ring_[chunk % ring_.size()]; }
  // Working memory of test_block, kept between blocks.
  std::vector<uint64_t> window_fps_;
  std::vector<std::pair<size_t, uint64_t>> candidates_;
};

}  // namespace qe::pattern
