// The bit-sliced Berlekamp-Massey (bitsliced_bm.h), compiled once per build from this one
// text: for any CPU in bitsliced_bm.cc, and with AVX2 in bitsliced_bm_avx2.cc, picked at
// run time. The loops over polynomial words are the work; the compiler vectorises them,
// four words a step with AVX2. Everything is in an anonymous namespace, so each
// translation unit has its own copy and no instantiation is shared between builds.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bitsliced_bm/bitsliced_bm.h"
#include "common/msb_bits.h"

#if defined(QE_BITSLICED_BM_AVX2) || defined(QE_BITSLICED_BM_AVX512)
#include <immintrin.h>
#endif

namespace qe::bitsliced_bm {
namespace {

// The 64 bits from bit `offset` of a stream, first bit most significant; bits past the
// end read as 0.
struct WordReader {
  WordStream s;
  uint64_t bits_at(size_t offset) const { return msb_bits::bits_at(s.words, s.nwords, offset); }
};

struct ByteReader {
  ByteStream s;
  uint64_t bits_at(size_t offset) const { return msb_bits::bits_at(s.bytes, s.nbytes, offset); }
};

// In-place transpose of a 64x64 bit matrix, element (i, j) = bit 63 - j of a[i].
void transpose64(uint64_t a[64]) {
  uint64_t mask = 0x00000000ffffffffull;
  for (unsigned j = 32; j != 0; j >>= 1, mask ^= mask << j) {
    for (unsigned k = 0; k < 64; k = ((k | j) + 1) & ~j) {
      const uint64_t t = (a[k] ^ (a[k | j] >> j)) & mask;
      a[k] ^= t;
      a[k | j] ^= t << j;
    }
  }
}

// The 64 lanes' lengths L. Lane b is bit 63 - b of every mask. Each step asks which lanes
// have 2L <= N (at_most), changes L to N + 1 - L in some (set_to_difference), and now and
// then their shortest; at the end, each lane's L.
//
// Bit-sliced (any CPU): bit q of every lane's L in one word, so each question is a pass
// over the log2(M) planes, a chain of dependent word operations on every step's critical
// path. With vectors, each lane's L is a 16-bit element (element p for mask bit p, i.e.
// lane 63 - p): a compare gives the mask, a masked subtract the change. On a Cascade Lake
// core the whole batch ran 300 -> 430 MB/s (AVX-512) with lengths as elements.
class SlicedLengths {
 public:
  explicit SlicedLengths(size_t M) : planes_(static_cast<unsigned>(std::bit_width(M))) {}

  // Lanes whose length is at most `bound`: the comparison done bit-sliced, high bit first.
  uint64_t at_most(size_t bound) const {
    uint64_t less = 0, equal = ~uint64_t{0};
    for (unsigned q = planes_; q-- > 0;) {
      const uint64_t bound_bit = uint64_t{0} - ((bound >> q) & 1);
      less |= equal & bound_bit & ~plane_[q];
      equal &= ~(plane_[q] ^ bound_bit);
    }
    return less | equal;
  }

  // L = k - L in the lanes of `lanes` (k >= L there): a bit-sliced ripple subtraction.
  void set_to_difference(size_t k, uint64_t lanes) {
    uint64_t borrow = 0;
    for (unsigned q = 0; q < planes_; ++q) {
      const uint64_t k_bit = uint64_t{0} - ((k >> q) & 1);
      const uint64_t l = plane_[q];
      const uint64_t difference = l ^ borrow ^ k_bit;
      borrow = (l & borrow) | (~k_bit & (l | borrow));
      plane_[q] = (lanes & difference) | (~lanes & l);
    }
  }

  // The smallest length of all lanes, high bit first: keep the lanes that lack the bit,
  // where any do.
  size_t shortest() const {
    uint64_t lanes = ~uint64_t{0};
    size_t value = 0;
    for (unsigned q = planes_; q-- > 0;) {
      const uint64_t without_bit = lanes & ~plane_[q];
      const uint64_t found = uint64_t{0} - static_cast<uint64_t>(without_bit != 0);
      lanes = (without_bit & found) | (lanes & ~found);
      value |= static_cast<size_t>(~found & 1) << q;
    }
    return value;
  }

  size_t of_lane(size_t b) const {
    size_t L = 0;
    for (unsigned q = 0; q < planes_; ++q) L |= static_cast<size_t>((plane_[q] >> (63 - b)) & 1) << q;
    return L;
  }

 private:
  unsigned planes_;  // bits of a length (lengths are at most M)
  uint64_t plane_[64] = {};
};

#if defined(QE_BITSLICED_BM_AVX512)
// AVX-512 BW: the 64 elements in two registers, masks straight from the compares.
class LaneLengths {
 public:
  explicit LaneLengths(size_t) {}

  uint64_t at_most(size_t bound) const {
    const __m512i b = _mm512_set1_epi16(static_cast<short>(bound));
    return uint64_t{_mm512_cmple_epu16_mask(low_, b)} | (uint64_t{_mm512_cmple_epu16_mask(high_, b)} << 32);
  }

  void set_to_difference(size_t k, uint64_t lanes) {
    const __m512i kk = _mm512_set1_epi16(static_cast<short>(k));
    low_ = _mm512_mask_sub_epi16(low_, static_cast<__mmask32>(lanes), kk, low_);
    high_ = _mm512_mask_sub_epi16(high_, static_cast<__mmask32>(lanes >> 32), kk, high_);
  }

  size_t shortest() const {
    const __m512i m = _mm512_min_epu16(low_, high_);
    const __m256i m2 = _mm256_min_epu16(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
    const __m128i m3 = _mm_min_epu16(_mm256_castsi256_si128(m2), _mm256_extracti128_si256(m2, 1));
    return static_cast<size_t>(_mm_extract_epi16(_mm_minpos_epu16(m3), 0));
  }

  size_t of_lane(size_t b) const {
    alignas(64) uint16_t element[64];
    _mm512_store_si512(element, low_);
    _mm512_store_si512(element + 32, high_);
    return element[63 - b];
  }

 private:
  __m512i low_ = _mm512_setzero_si512(), high_ = _mm512_setzero_si512();  // elements 0-31, 32-63
};
#elif defined(QE_BITSLICED_BM_AVX2)
// AVX2: four registers of 16 elements. Lengths stay below 2^15 (M <= 32,767 is checked),
// so the signed compare serves; its byte mask is packed to one bit per element.
class LaneLengths {
 public:
  explicit LaneLengths(size_t) {}

  uint64_t at_most(size_t bound) const {
    const __m256i b = _mm256_set1_epi16(static_cast<short>(bound));
    uint64_t above = 0;
    for (int i = 0; i < 4; i += 2) {
      // packs interleaves the two registers' 128-bit halves; the permute restores order.
      const __m256i packed = _mm256_packs_epi16(_mm256_cmpgt_epi16(v_[i], b), _mm256_cmpgt_epi16(v_[i + 1], b));
      const auto bits = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_permute4x64_epi64(packed, 0xd8)));
      above |= uint64_t{bits} << (16 * i);
    }
    return ~above;
  }

  void set_to_difference(size_t k, uint64_t lanes) {
    const __m256i kk = _mm256_set1_epi16(static_cast<short>(k));
    // Element p's own bit, 1 << p.
    const __m256i bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
                                          static_cast<short>(0x8000));
    for (int i = 0; i < 4; ++i) {
      // Element p of register i takes the change when bit 16i + p of `lanes` is set.
      const __m256i chosen = _mm256_and_si256(_mm256_set1_epi16(static_cast<short>(lanes >> (16 * i))), bit);
      const __m256i mask = _mm256_cmpeq_epi16(chosen, bit);
      v_[i] = _mm256_blendv_epi8(v_[i], _mm256_sub_epi16(kk, v_[i]), mask);
    }
  }

  size_t shortest() const {
    const __m256i m = _mm256_min_epu16(_mm256_min_epu16(v_[0], v_[1]), _mm256_min_epu16(v_[2], v_[3]));
    const __m128i m2 = _mm_min_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    return static_cast<size_t>(_mm_extract_epi16(_mm_minpos_epu16(m2), 0));
  }

  size_t of_lane(size_t b) const {
    alignas(32) uint16_t element[64];
    for (int i = 0; i < 4; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(element + 16 * i), v_[i]);
    return element[63 - b];
  }

 private:
  __m256i v_[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
};
#else
using LaneLengths = SlicedLengths;
#endif

// Berlekamp-Massey on up to 64 blocks at once, bit-sliced: lane b (bit 63 - b of every
// word) is block b. A polynomial is an array of words indexed by degree, so every
// operation of the algorithm is the same word operation for all lanes; the lanes differ
// only in their discrepancy d and in whether their length L changes, and both are masks.
// B is kept pre-multiplied, Bs = x^(N-m) B, so the update is C ^= d & Bs and the
// "multiply by x" after each step is a move of Bs's base pointer.
class SlicedBerlekampMassey {
 public:
  explicit SlicedBerlekampMassey(size_t M) : M_(M) {
    // seq_, c_ and bs_buf_ in one buffer, laid out so that the update loop's stores to Bs
    // and its loads from the sequence never sit a multiple of 4 KiB apart. The two move
    // together (bs - r is the same on every step), and separately allocated they fell a
    // few dozen bytes from such a distance for M = 1,280: every load of r then waited on
    // an earlier store to Bs that only looked like the same address (4K aliasing), which
    // cost the whole batch 15-20 % on a Cascade Lake core.
    const size_t c_at = M + 8;
    size_t bs_at = c_at + M + 2 + 8;
    // bs - r = (bs_at - 0) + 3 words (bs at base M + 1 - N, r at M - 2 - N): half a page.
    while (((bs_at + 3) * sizeof(uint64_t)) % 4096 != 2048) ++bs_at;
    storage_.assign(bs_at + 2 * M + 4, 0);
    seq_ = storage_.data();
    c_ = storage_.data() + c_at;
    bs_buf_ = storage_.data() + bs_at;
  }
  // The blocks' bits (seq_) and what is derived from them may be entropy that is served
  // or fed onward: not left behind in freed memory.
  ~SlicedBerlekampMassey() {
    explicit_bzero(storage_.data(), storage_.size() * sizeof(uint64_t));
  }
  SlicedBerlekampMassey(const SlicedBerlekampMassey&) = delete;
  SlicedBerlekampMassey& operator=(const SlicedBerlekampMassey&) = delete;

  // Linear complexity of blocks 0 .. count - 1 (count <= 64) of M bits each, block b
  // starting at bit first + b * stride of `stream`.
  template <typename Stream>
  void run(const Stream& stream, size_t first, size_t stride, size_t count, size_t* complexity) {
    load(stream, first, stride, count);
    std::fill(c_, c_ + M_ + 2, 0);
    std::fill(bs_buf_, bs_buf_ + 2 * M_ + 4, 0);
    size_t base = M_ + 1;          // Bs coefficient i lives at bs_buf_[base + i]
    c_[0] = ~uint64_t{0};          // C = 1
    bs_buf_[base + 1] = ~uint64_t{0};  // B = 1, m = -1: Bs = x
    LaneLengths length(M_);
    size_t lmin = 0, lmax = 0;  // bounds on the lanes' shortest and longest length
    uint64_t* const c = c_;
    // The discrepancy d_lane = sum_{i=0..L} C_i s_{N-i}; seq_[M-1-j] holds s_j, so
    // s_{N-i} = r[i] with r = seq_ + (M-1-N). Step 0's is s_0 (C = 1); each step's update
    // takes the next step's in the same pass over C.
    uint64_t d = seq_[M_ - 1];
    for (size_t N = 0; N < M_; ++N) {
      // Degrees that can be non-zero: C up to L, Bs up to N + 1 - L (per lane).
      const size_t hi = std::max(lmax, N + 1 - lmin);
      // A lane's length changes, to N + 1 - L, where d = 1 and 2L <= N (the reference's
      // L <= N/2).
      const uint64_t grow = d & length.at_most(N / 2);
      if (grow != 0) {
        length.set_to_difference(N + 1, grow);
        // lmax and lmin only bound the update loop, so bounds serve: a lane that grows
        // gets N + 1 - L <= N + 1 - lmin, and no length ever shrinks, so an lmin taken a
        // few steps ago is still a lower bound. Each exact one is another look at every
        // lane's length on the step's critical path; with lmin taken every 16th step the
        // loop covers at most a few words more. (Both exact on every step, with bit-sliced
        // lengths: 205 MB/s on a Cascade Lake core; this way 240-250.)
        lmax = std::max(lmax, N + 1 - lmin);
        if (N % 16 == 0) lmin = length.shortest();
      }
      // After the last step only the lengths are read: its C and B would serve no next step.
      if (N + 1 == M_) break;
      d = update(c, bs_buf_ + base, hi + 1, d, grow, seq_ + (M_ - 2 - N));
      --base;  // Bs *= x
      bs_buf_[base] = 0;
    }
    for (size_t b = 0; b < count; ++b) complexity[b] = length.of_lane(b);
  }

 private:
  // The loop over polynomial words, which is nearly all of the time.
  // C += d Bs, and on a length change (lanes of `grow`) B = the old C, for words < words;
  // returns the next step's discrepancy, sum over k of new C_k & r_next[k], taken in the
  // same pass over C. `words` covers every degree the new C can have (the step's hi + 1
  // bounds the new lengths), so the sum has every term of that discrepancy.
  static uint64_t update(uint64_t* c, uint64_t* bs, size_t words, uint64_t d, uint64_t grow, const uint64_t* r_next) {
    uint64_t next = 0;
    for (size_t k = 0; k < words; ++k) {
      const uint64_t old_c = c[k];
      const uint64_t new_c = old_c ^ (d & bs[k]);
      c[k] = new_c;
      bs[k] = (grow & old_c) | (~grow & bs[k]);
      next ^= new_c & r_next[k];
    }
    return next;
  }

  // seq_[M - 1 - j] = bit j of every block (block b in lane b); lanes past `count`
  // repeat block 0 so that they behave like real data (their results are unused).
  template <typename Stream>
  void load(const Stream& stream, size_t first, size_t stride, size_t count) {
    uint64_t rows[64];
    for (size_t j0 = 0; j0 < M_; j0 += 64) {
      for (size_t b = 0; b < 64; ++b) rows[b] = stream.bits_at(first + (b < count ? b : 0) * stride + j0);
      transpose64(rows);
      const size_t take = std::min<size_t>(64, M_ - j0);
      for (size_t t = 0; t < take; ++t) seq_[M_ - 1 - (j0 + t)] = rows[t];
    }
  }

  size_t M_;
  std::vector<uint64_t> storage_;
  uint64_t* seq_;     // M words: seq_[M - 1 - j] = bit j of every block
  uint64_t* c_;       // M + 2 words: C by degree
  uint64_t* bs_buf_;  // 2M + 4 words: Bs, its base moving down a word each step
};

template <typename Stream>
void complexities_into(const Stream& stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  if (M == 0) {
    std::fill(complexity, complexity + count, size_t{0});
    return;
  }
  SlicedBerlekampMassey bm(M);
  for (size_t done = 0; done < count; done += 64) {
    bm.run(stream, first + done * stride, stride, std::min<size_t>(64, count - done), complexity + done);
  }
}

}  // namespace
}  // namespace qe::bitsliced_bm
