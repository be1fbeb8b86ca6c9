// See pattern.h.
#include "health/pattern.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <utility>

#include "common/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QE_PATTERN_X86 1
#define QE_PATTERN_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi")))
#define QE_PATTERN_AVX512_DQ __attribute__((target("avx512f,avx512dq")))
// GCC 12's AVX-512 intrinsics pass a deliberately undefined register through, which its own
// -Wmaybe-uninitialized then reports at every use (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace qe::pattern {

using bm::Kernel;

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

}  // namespace

size_t linear_complexity(const uint8_t* data, size_t nbits) { return LinearComplexity{}(data, nbits); }

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

Tester::Tester(Config config, Kernel kernel)
    : config_(config),
      linear_(kernel),
      sliced_build_(kernel == Kernel::Portable ? bitsliced_bm::Build::Portable
                    : kernel == Kernel::Avx2   ? bitsliced_bm::Build::Avx2
                                               : bitsliced_bm::Build::Best) {
  if (config_.history_bytes == 0 || config_.history_bytes % kChunk != 0)
    throw std::invalid_argument("pattern history must be a positive multiple of 32 bytes");
  if (config_.linear_bits != 0 && config_.linear_bits / 2 <= config_.linear_margin)
    throw std::invalid_argument("pattern linear_margin must be below half of linear_bits");
#ifdef QE_PATTERN_X86
  // has_avx512bw() is where QENTROPY_SIMD caps the choice; DQ and VBMI are checked here.
  // Kernel::Avx2 keeps to AVX2, as it does for Berlekamp-Massey.
  const bool avx512_dq = kernel != Kernel::Portable && kernel != Kernel::Avx2 && cpu::has_avx512bw() &&
                         __builtin_cpu_supports("avx512dq");
  use_avx512_ = avx512_dq && __builtin_cpu_supports("avx512vbmi");
  use_avx512_strided_ = avx512_dq && !use_avx512_;
#endif
  std::random_device rd;
  for (auto& k : key_) k = ((uint64_t{rd()} << 32) ^ rd()) | 1u;
  ring_.assign(config_.history_bytes / kChunk, 0);
  // About four index slots per live chunk, a power of two.
  size_t slots = 1;
  while (slots < 4 * ring_.size()) slots <<= 1;
  index_.assign(slots, 0);
}

// Multilinear hashing with random odd keys, then one finalizer: cheap enough to run at
// every byte offset of every block. Inlined into the scalar loop below: as a call per
// window (GCC did not inline the member) with the keys reloaded through `this` each time,
// it was three quarters of the repeat search on CPUs without the vector fingerprints.
[[gnu::always_inline]] static inline uint64_t fingerprint_with(const uint64_t (&key)[4], const uint8_t* bytes32) {
  return fmix64(load64(bytes32) * key[0] + load64(bytes32 + 8) * key[1] + load64(bytes32 + 16) * key[2] +
                load64(bytes32 + 24) * key[3]);
}

#ifdef QE_PATTERN_X86
// Eight windows at a time: one 64-byte load holds the 39 bytes they span, byte permutes
// cut out each window's four 64-bit words, and the multiplies are 64-bit vector ones.
QE_PATTERN_AVX512 static void fingerprints_avx512(const uint8_t* block, size_t windows, const uint64_t key[4],
                                                 uint64_t* out, size_t& done) {
  const size_t size = windows + kChunk - 1;
  alignas(64) uint8_t index[4][64];
  for (int w = 0; w < 4; ++w)
    for (int lane = 0; lane < 8; ++lane)
      for (int b = 0; b < 8; ++b) index[w][8 * lane + b] = static_cast<uint8_t>(lane + 8 * w + b);
  __m512i idx[4], k[4];
  for (int w = 0; w < 4; ++w) {
    idx[w] = _mm512_load_si512(index[w]);
    k[w] = _mm512_set1_epi64(static_cast<long long>(key[w]));
  }
  const __m512i c1 = _mm512_set1_epi64(static_cast<long long>(0xff51afd7ed558ccdull));
  const __m512i c2 = _mm512_set1_epi64(static_cast<long long>(0xc4ceb9fe1a85ec53ull));
  size_t j = 0;
  for (; j + 8 <= windows; j += 8) {
    const size_t avail = size - j;
    const __mmask64 m = avail >= 64 ? ~__mmask64{0} : (__mmask64{1} << avail) - 1;
    const __m512i bytes = _mm512_maskz_loadu_epi8(m, block + j);
    __m512i h = _mm512_mullo_epi64(_mm512_permutexvar_epi8(idx[0], bytes), k[0]);
    for (int w = 1; w < 4; ++w) h = _mm512_add_epi64(h, _mm512_mullo_epi64(_mm512_permutexvar_epi8(idx[w], bytes), k[w]));
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
    h = _mm512_mullo_epi64(h, c1);
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
    h = _mm512_mullo_epi64(h, c2);
    h = _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
    _mm512_storeu_si512(out + j, h);
  }
  done = j;
}

// Without VBMI's byte permute (Skylake-SP and Cascade Lake servers, common in clouds),
// lanes eight windows apart: lane L of one unaligned 64-byte load at block + j + r + 8w is
// word w of window j + r + 8L, so 32 loads (r = 0..7, w = 0..3) hold the words of 64
// windows and no byte is shuffled; an 8x8 transpose puts the results back in window order.
// (On such a CPU the scalar code was about 60 % of the repeat search. The same scheme on
// AVX2, with each 64-bit multiply made of three 32-bit ones, ran slower than the scalar
// code on this VM's Cascade Lake, 290 against 350 MB/s: no AVX2 kernel.)
QE_PATTERN_AVX512_DQ static inline void store_transposed_avx512(const __m512i h[8], uint64_t* out) {
  // h[r] holds windows r, r + 8, ..., r + 56 (relative to out); out[8L + r] = h[r][L].
  __m512i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm512_unpacklo_epi64(h[i], h[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi64(h[i], h[i + 1]);
  }
  // 128-bit lanes: 0x88 takes lanes 0 and 2 of each operand, 0xdd lanes 1 and 3.
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm512_shuffle_i64x2(t[i], t[i + 2], 0x88);
    u[i + 1] = _mm512_shuffle_i64x2(t[i], t[i + 2], 0xdd);
    u[i + 2] = _mm512_shuffle_i64x2(t[i + 1], t[i + 3], 0x88);
    u[i + 3] = _mm512_shuffle_i64x2(t[i + 1], t[i + 3], 0xdd);
  }
  // u[0] holds column 0 and 4 of rows 0-3, u[1] columns 2 and 6, u[2] 1 and 5, u[3] 3 and 7.
  constexpr int kColumn[4] = {0, 2, 1, 3};
  for (int i = 0; i < 4; ++i) {
    _mm512_storeu_si512(out + 8 * kColumn[i], _mm512_shuffle_i64x2(u[i], u[i + 4], 0x88));
    _mm512_storeu_si512(out + 8 * (kColumn[i] + 4), _mm512_shuffle_i64x2(u[i], u[i + 4], 0xdd));
  }
}

QE_PATTERN_AVX512_DQ static void fingerprints_avx512_strided(const uint8_t* block, size_t windows, const uint64_t key[4],
                                                            uint64_t* out, size_t& done) {
  __m512i k[4];
  for (int w = 0; w < 4; ++w) k[w] = _mm512_set1_epi64(static_cast<long long>(key[w]));
  const __m512i c1 = _mm512_set1_epi64(static_cast<long long>(0xff51afd7ed558ccdull));
  const __m512i c2 = _mm512_set1_epi64(static_cast<long long>(0xc4ceb9fe1a85ec53ull));
  // The last load of a group ends at byte j + 7 + 24 + 63 = j + 94, inside the block
  // (windows + 31 bytes) while j + 64 <= windows. The last group starts at windows - 64,
  // overlapping the one before rather than leaving up to 63 windows to the scalar code
  // (the overlapped windows get the same fingerprints again).
  if (windows < 64) {
    done = 0;
    return;
  }
  for (size_t j = 0;; j = std::min(j + 64, windows - 64)) {
    __m512i h[8];
    for (int r = 0; r < 8; ++r) {
      __m512i x = _mm512_mullo_epi64(_mm512_loadu_si512(block + j + r), k[0]);
      for (int w = 1; w < 4; ++w) x = _mm512_add_epi64(x, _mm512_mullo_epi64(_mm512_loadu_si512(block + j + r + 8 * w), k[w]));
      x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
      x = _mm512_mullo_epi64(x, c1);
      x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
      x = _mm512_mullo_epi64(x, c2);
      h[r] = _mm512_xor_si512(x, _mm512_srli_epi64(x, 33));
    }
    store_transposed_avx512(h, out + j);
    if (j == windows - 64) break;
  }
  done = windows;
}
#endif

void Tester::fingerprints(const uint8_t* block, size_t windows, uint64_t* out) const {
  size_t j = 0;
#ifdef QE_PATTERN_X86
  if (use_avx512_)
    fingerprints_avx512(block, windows, key_, out, j);
  else if (use_avx512_strided_)
    fingerprints_avx512_strided(block, windows, key_, out, j);
#endif
  const uint64_t key[4] = {key_[0], key_[1], key_[2], key_[3]};
  for (; j < windows; ++j) out[j] = fingerprint_with(key, block + j);
}

bool Tester::live(uint64_t chunk) const { return chunk < chunks_seen_ && chunks_seen_ - chunk <= ring_.size(); }

// An index entry is the fingerprint's top 32 bits (a tag: a lookup of a fingerprint that
// is not there nearly always stops at the tag, a well-predicted branch and no second
// load) and the chunk number modulo 2^32, which names one chunk among the live ones.
uint64_t Tester::lookup(uint64_t fp) const {
  const uint64_t entry = index_[fp & (index_.size() - 1)];
  if ((entry ^ fp) >> 32) [[likely]]
    return 0;
  const auto age = static_cast<uint32_t>(static_cast<uint32_t>(chunks_seen_) - static_cast<uint32_t>(entry));
  if (age == 0 || age > ring_.size()) return 0;
  const uint64_t chunk = chunks_seen_ - age;
  if (chunk_fingerprint(chunk) != fp) return 0;
  return chunk + 1;
}

void Tester::insert(uint64_t fp, uint64_t chunk) {
  index_[fp & (index_.size() - 1)] = (fp & ~uint64_t{0xffffffff}) | static_cast<uint32_t>(chunk);
}

namespace {

// Below this many blocks a batch of 64 bit-sliced lanes costs about as much as the blocks
// one at a time or more. Per 1,280-bit block on the development VM (gate_bench): 2.0 us in
// a 64-lane batch with AVX-512, 2.4 us with AVX2, 3.8 us portable, against 4.2 / 4.2 /
// 6.7 us one at a time, so the break-even is 30 blocks (AVX-512) to 36 (AVX2, portable).
// Near it the two cost nearly the same either way.
constexpr size_t kMinSlicedBlocks = 28;

}  // namespace

BlockReport Tester::test_block(const uint8_t* block, size_t size) {
  BlockReport report;
  test_blocks(block, size, 1, &report);
  return report;
}

void Tester::test_blocks(const uint8_t* data, size_t size, size_t count, BlockReport* out) {
  if (size < 2 * kChunk || size % kChunk != 0)
    throw std::invalid_argument("pattern blocks must be a multiple of 32 bytes, at least 64");
  const size_t nbits = std::min(config_.linear_bits, size * 8);
  // Linear complexities first (they depend on nothing but the block), bit-sliced for the
  // full groups of 64 and for a remainder big enough to pay for its lanes.
  complexities_.assign(count, 0);
  if (config_.linear_bits != 0) {
    const size_t sliced = count / 64 * 64 + (count % 64 >= kMinSlicedBlocks ? count % 64 : 0);
    bitsliced_bm::linear_complexities(bitsliced_bm::ByteStream{data, count * size}, 0, size * 8, nbits, sliced,
                                      complexities_.data(), sliced_build_);
    for (size_t b = sliced; b < count; ++b) complexities_[b] = linear_(data + b * size, nbits);
  }
  for (size_t b = 0; b < count; ++b) {
    BlockReport& report = out[b];
    report = BlockReport{};
    report.repeat_distance = repeat_distance(data + b * size, size);
    if (config_.linear_bits != 0) {
      report.linear_bits = nbits;
      report.linear_complexity = complexities_[b];
      report.linear = complexities_[b] + config_.linear_margin <= nbits / 2;
    }
    report.passed = !report.repeated() && !report.linear;
  }
}

size_t Tester::repeat_distance(const uint8_t* block, size_t size) {
  const size_t windows = size - kChunk + 1;
  std::vector<uint64_t>& fps = window_fps_;  // of the 32 bytes at every byte offset
  fps.resize(windows);
  fingerprints(block, windows, fps.data());
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
    // The ring's slot kept as a counter: chunk % ring_.size() (not a power of two in
    // general) was a 64-bit division per chunk, 31 a block; the counter made the repeat
    // search about 12 % faster on a Cascade Lake core.
    ring_[ring_slot_] = fps[j];
    if (++ring_slot_ == ring_.size()) ring_slot_ = 0;
    insert(fps[j], chunk);
  }
  // The unaligned windows, nearly all misses: the index entry's tag is checked here, in
  // the loop (a load, a compare and a branch per window, the loads independent of each
  // other), and only a matching tag takes the full lookup. As a call per window, the
  // lookup was 60 % of the repeat search.
  const uint64_t* const index = index_.data();
  const uint64_t slot_mask = index_.size() - 1;
  for (size_t j = 0; j < windows; ++j) {
    const uint64_t fp = fps[j];
    if (((index[fp & slot_mask] ^ fp) >> 32) != 0 || j % kChunk == 0) [[likely]]
      continue;
    if (const uint64_t entry = lookup(fp)) candidates.emplace_back(j, entry - 1);
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
  return nearest;
}

void Tester::reset() {
  std::fill(ring_.begin(), ring_.end(), 0);
  std::fill(index_.begin(), index_.end(), 0);
  chunks_seen_ = 0;
  ring_slot_ = 0;
}

}  // namespace qe::pattern
