// See pattern.h.
#include "health/pattern.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>

namespace qe::pattern {
namespace {

constexpr size_t kChunk = 32;

// MurmurHash3's 64-bit finalizer: every input bit affects every output bit.
inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// 64 bits of an LSB-first bit array starting at bit `pos` (the array is zero-padded).
inline uint64_t bits_from(const std::vector<uint64_t>& r, size_t pos) {
  const size_t q = pos >> 6;
  const unsigned s = static_cast<unsigned>(pos & 63);
  return s == 0 ? r[q] : (r[q] >> s) | (r[q + 1] << (64 - s));
}

}  // namespace

// Bit-packed Berlekamp-Massey for one sequence. (The STS battery's version in
// sts/linear_complexity.cc runs 64 sequences bit-sliced, which costs the same for one
// sequence as for 64; here there is one block at a time.) Connection polynomials are
// words with bit i = coefficient of x^i; the sequence is kept reversed, so the
// discrepancy sum_i C_i s_(n-i) is an AND of C with 64-bit slices of it.
size_t linear_complexity(const uint8_t* data, size_t nbits) { return LinearComplexity{}(data, nbits); }

size_t LinearComplexity::operator()(const uint8_t* data, size_t nbits) {
  if (nbits == 0) return 0;
  const size_t words = nbits / 64 + 2;
  rev_.assign(2 * words + 2, 0);
  c_.assign(words, 0);
  b_.assign(words, 0);
  t_.assign(words, 0);
  for (size_t k = 0; k < nbits; ++k) {
    const uint64_t bit = (data[k >> 3] >> (7 - (k & 7))) & 1u;
    const size_t j = nbits - 1 - k;  // rev bit j = s_(nbits-1-j)
    rev_[j >> 6] |= bit << (j & 63);
  }
  // shifted_[r * words + w] = 64 bits of rev from bit 64w + r: every slice the discrepancy
  // needs is then one aligned load, and its loop is a plain AND-XOR reduction.
  shifted_.resize(64 * words);
  for (size_t r = 0; r < 64; ++r)
    for (size_t w = 0; w < words; ++w) shifted_[r * words + w] = bits_from(rev_, 64 * w + r);
  uint64_t* const c = c_.data();
  c[0] = 1;
  b_[0] = 1;
  size_t L = 0;
  size_t m = 1;  // C is updated with x^m B
  for (size_t n = 0; n < nbits; ++n) {
    // s_(n-i) is rev bit (nbits-1-n+i); deg C <= L, so words 0 .. L/64 of C suffice.
    const size_t off = nbits - 1 - n;
    const uint64_t* slice = shifted_.data() + (off & 63) * words + (off >> 6);
    uint64_t acc = 0;
    const size_t used = L / 64 + 1;
    for (size_t w = 0; w < used; ++w) acc ^= c[w] & slice[w];
    if ((__builtin_popcountll(acc) & 1) == 0) {
      ++m;
      continue;
    }
    const bool grows = 2 * L <= n;
    if (grows) std::copy(c, c + used, t_.begin());
    // C ^= x^m B, over the words the new polynomial can reach (degree <= n + 1).
    const uint64_t* const b = b_.data();
    const size_t q = m / 64;
    const unsigned s = static_cast<unsigned>(m % 64);
    const size_t top = std::min(words - 1, (n + 1) / 64 + 1);
    if (s == 0) {
      for (size_t w = q; w <= top; ++w) c[w] ^= b[w - q];
    } else {
      c[q] ^= b[0] << s;
      for (size_t w = q + 1; w <= top; ++w) c[w] ^= (b[w - q] << s) | (b[w - q - 1] >> (64 - s));
    }
    if (grows) {
      // B = the old C (its words above `used` are zero, as deg C <= L).
      std::fill(t_.begin() + static_cast<std::ptrdiff_t>(used), t_.end(), 0);
      L = n + 1 - L;
      b_.swap(t_);
      m = 1;
    } else {
      ++m;
    }
  }
  return L;
}

std::string BlockReport::describe() const {
  std::string out;
  if (repeated()) {
    out = "output repeats: 64 bytes of this block occurred " + std::to_string(repeat_distance) +
          " bytes earlier in the stream (a counter, a replayed buffer or another periodic source)";
  }
  if (linear) {
    if (!out.empty()) out += "; ";
    out += "linear complexity " + std::to_string(linear_complexity) + " of " + std::to_string(linear_bits) +
           " bits (random data: about " + std::to_string(linear_bits / 2) +
           "): the output of a linear generator such as an LFSR";
  }
  return out.empty() ? "no pattern found" : out;
}

Tester::Tester(Config config) : config_(config) {
  if (config_.history_bytes == 0 || config_.history_bytes % kChunk != 0)
    throw std::invalid_argument("pattern history must be a positive multiple of 32 bytes");
  if (config_.linear_bits != 0 && config_.linear_bits / 2 <= config_.linear_margin)
    throw std::invalid_argument("pattern linear_margin must be below half of linear_bits");
  std::random_device rd;
  for (auto& k : key_) k = ((uint64_t{rd()} << 32) ^ rd()) | 1u;
  ring_.assign(config_.history_bytes / kChunk, 0);
  // About four index slots per live chunk, a power of two.
  size_t slots = 1;
  while (slots < 4 * ring_.size()) slots <<= 1;
  index_.assign(slots, 0);
}

// Multilinear hashing with random odd keys, then one finalizer: cheap enough to run at
// every byte offset of every block.
uint64_t Tester::fingerprint(const uint8_t* bytes32) const {
  return fmix64(load64(bytes32) * key_[0] + load64(bytes32 + 8) * key_[1] + load64(bytes32 + 16) * key_[2] +
                load64(bytes32 + 24) * key_[3]);
}

bool Tester::live(uint64_t chunk) const { return chunk < chunks_seen_ && chunks_seen_ - chunk <= ring_.size(); }

uint64_t Tester::lookup(uint64_t fp) const {
  const uint64_t entry = index_[fp & (index_.size() - 1)];
  if (entry == 0 || !live(entry - 1) || chunk_fingerprint(entry - 1) != fp) return 0;
  return entry;
}

BlockReport Tester::test_block(const uint8_t* block, size_t size) {
  if (size < 2 * kChunk || size % kChunk != 0)
    throw std::invalid_argument("pattern blocks must be a multiple of 32 bytes, at least 64");
  BlockReport report;
  const size_t windows = size - kChunk + 1;
  std::vector<uint64_t>& fps = window_fps_;  // of the 32 bytes at every byte offset
  fps.resize(windows);
  for (size_t j = 0; j < windows; ++j) fps[j] = fingerprint(block + j);
  const uint64_t start = chunks_seen_ * kChunk;  // stream position of the block
  // Candidate repeats (window offset, earlier chunk). An aligned window is looked up
  // before its own chunk joins the index (which keeps the newest chunk per fingerprint),
  // so it finds an earlier copy, also one earlier in this block; unaligned windows are
  // looked up once the whole block is in.
  std::vector<std::pair<size_t, uint64_t>>& candidates = candidates_;
  candidates.clear();
  for (size_t j = 0; j < windows; j += kChunk) {
    if (const uint64_t entry = lookup(fps[j])) candidates.emplace_back(j, entry - 1);
    const uint64_t chunk = chunks_seen_++;
    ring_[chunk % ring_.size()] = fps[j];
    index_[fps[j] & (index_.size() - 1)] = chunk + 1;
  }
  for (size_t j = 0; j < windows; ++j) {
    if (j % kChunk == 0) continue;
    if (const uint64_t entry = lookup(fps[j])) candidates.emplace_back(j, entry - 1);
  }
  // A match counts when the next (or, at the block's end, the previous) 32 bytes match
  // the next (previous) chunk too: 64 bytes in all.
  size_t nearest = 0;
  for (const auto& [j, chunk] : candidates) {
    bool confirmed = false;
    if (j + kChunk < windows)
      confirmed = live(chunk + 1) && chunk_fingerprint(chunk + 1) == fps[j + kChunk];
    else if (j >= kChunk && chunk > 0)
      confirmed = live(chunk - 1) && chunk_fingerprint(chunk - 1) == fps[j - kChunk];
    if (!confirmed) continue;
    const uint64_t pos = chunk * kChunk;
    const uint64_t distance = pos > start + j ? pos - (start + j) : start + j - pos;
    if (nearest == 0 || distance < nearest) nearest = static_cast<size_t>(distance);
  }
  report.repeat_distance = nearest;
  if (config_.linear_bits != 0) {
    const size_t nbits = std::min(config_.linear_bits, size * 8);
    report.linear_bits = nbits;
    report.linear_complexity = linear_(block, nbits);
    report.linear = report.linear_complexity + config_.linear_margin <= nbits / 2;
  }
  report.passed = !report.repeated() && !report.linear;
  return report;
}

void Tester::reset() {
  std::fill(ring_.begin(), ring_.end(), 0);
  std::fill(index_.begin(), index_.end(), 0);
  chunks_seen_ = 0;
}

}  // namespace qe::pattern
