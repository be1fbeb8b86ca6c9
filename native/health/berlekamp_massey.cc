// See berlekamp_massey.h.
#include "health/berlekamp_massey.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/cpu.h"
#include "health/bit_order.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QE_BM_X86 1
#endif

namespace qe::bm {
namespace {

// Word w of (the bit vector `hi_word`/`lo_word` come from) shifted up by s bits, s < 64.
inline uint64_t funnel(uint64_t hi_word, uint64_t lo_word, unsigned s) {
  return s == 0 ? hi_word : (hi_word << s) | (lo_word >> (64 - s));
}

}  // namespace

const char* kernel_name(Kernel kernel) {
  switch (kernel) {
    case Kernel::Portable: return "portable";
    case Kernel::Avx2: return "avx2";
    case Kernel::Avx512: return "avx512";
    case Kernel::Best: return kernel_name(best_kernel());
  }
  return "portable";
}

bool kernel_available(Kernel kernel) {
#ifdef QE_BM_X86
  if (kernel == Kernel::Avx2) return cpu::has_avx2();
  // Through qe::cpu, so QENTROPY_SIMD can hold the gate to the AVX2 kernel (BW implies F).
  if (kernel == Kernel::Avx512) return cpu::has_avx512bw();
#endif
  return kernel == Kernel::Portable || kernel == Kernel::Best;
}

Kernel best_kernel() {
  static const Kernel best = kernel_available(Kernel::Avx512) ? Kernel::Avx512
                             : kernel_available(Kernel::Avx2) ? Kernel::Avx2
                                                              : Kernel::Portable;
  return best;
}

namespace detail {

void apply_portable(uint64_t* dc, uint64_t* db, size_t from, size_t to, const Update* updates, size_t count) {
  const auto lo_end = static_cast<ptrdiff_t>(from);
  for (size_t i = 0; i < count; ++i) {
    const Update& u = updates[i];
    db[from - 1] = u.db_word;
    const ptrdiff_t q = u.shift >> 6;
    const unsigned s = u.shift & 63;
    // Top word first: a word of D_B is rewritten (grow) only after the words above it,
    // which read it, are done.
    for (auto w = static_cast<ptrdiff_t>(to) - 1; w >= lo_end; --w) {
      const uint64_t old = dc[w];
      dc[w] = old ^ funnel(db[w - q], db[w - q - 1], s);
      if (u.grow) db[w] = old;
    }
  }
}

#ifdef QE_BM_X86
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() (`__m512i __Y = __Y;`), and
// -Wmaybe-uninitialized then reports at every use (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx2"))) void apply_avx2(uint64_t* dc, uint64_t* db, size_t from, size_t to,
                                                const Update* updates, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const Update& u = updates[i];
    db[from - 1] = u.db_word;
    const ptrdiff_t q = u.shift >> 6;
    const unsigned s = u.shift & 63;
    const __m128i up = _mm_cvtsi32_si128(static_cast<int>(s));
    const __m128i down = _mm_cvtsi32_si128(static_cast<int>(64 - s));  // 64: all zero
    auto w = static_cast<ptrdiff_t>(to);
    for (; w - 4 >= static_cast<ptrdiff_t>(from); w -= 4) {
      const ptrdiff_t b = w - 4;
      const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(db + b - q));
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(db + b - q - 1));
      const __m256i sh = _mm256_or_si256(_mm256_sll_epi64(hi, up), _mm256_srl_epi64(lo, down));
      const __m256i old = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dc + b));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dc + b), _mm256_xor_si256(old, sh));
      if (u.grow) _mm256_storeu_si256(reinterpret_cast<__m256i*>(db + b), old);
    }
    for (--w; w >= static_cast<ptrdiff_t>(from); --w) {
      const uint64_t old = dc[w];
      dc[w] = old ^ funnel(db[w - q], db[w - q - 1], s);
      if (u.grow) db[w] = old;
    }
  }
}

__attribute__((target("avx512f"))) void apply_avx512(uint64_t* dc, uint64_t* db, size_t from, size_t to,
                                                    const Update* updates, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const Update& u = updates[i];
    db[from - 1] = u.db_word;
    const ptrdiff_t q = u.shift >> 6;
    const __m128i up = _mm_cvtsi32_si128(static_cast<int>(u.shift & 63));
    const __m128i down = _mm_cvtsi32_si128(static_cast<int>(64 - (u.shift & 63)));  // 64: all zero
    auto w = static_cast<ptrdiff_t>(to);
    while (w > static_cast<ptrdiff_t>(from)) {
      // Eight words at a time from the top; the last group (the lowest words) is masked.
      const ptrdiff_t n = std::min<ptrdiff_t>(8, w - static_cast<ptrdiff_t>(from));
      const ptrdiff_t b = w - n;
      const auto k = static_cast<__mmask8>((1u << n) - 1);
      const __m512i hi = _mm512_maskz_loadu_epi64(k, db + b - q);
      const __m512i lo = _mm512_maskz_loadu_epi64(k, db + b - q - 1);
      const __m512i sh = _mm512_or_si512(_mm512_sll_epi64(hi, up), _mm512_srl_epi64(lo, down));
      const __m512i old = _mm512_maskz_loadu_epi64(k, dc + b);
      _mm512_mask_storeu_epi64(dc + b, k, _mm512_xor_si512(old, sh));
      if (u.grow) _mm512_mask_storeu_epi64(db + b, k, old);
      w = b;
    }
  }
}

// The same for D_C and D_B of at most 8 * R words, held in R registers each for the
// whole batch of updates: no store is ever reloaded at another offset (the memory
// kernels pay a store-forwarding stall per update for that). Updates with a shift of 64
// or more (rare: m only grows that far when the length has not changed for 64 steps)
// go through the memory kernel.
template <int R>
__attribute__((target("avx512f"))) void apply_avx512_registers(uint64_t* dc, uint64_t* db, size_t from, size_t to,
                                                              const Update* updates, size_t count) {
  const size_t k = from - 1;  // the word the updates' db_word belongs to
  __m512i c[R], b[R];
  __mmask8 lanes[R];
  for (int j = 0; j < R; ++j) {
    const size_t first = 8 * static_cast<size_t>(j);
    lanes[j] = static_cast<__mmask8>(to <= first ? 0 : to - first >= 8 ? 0xff : (1u << (to - first)) - 1);
  }
#define QE_BM_LOAD                                           \
  for (int j = 0; j < R; ++j) {                              \
    c[j] = _mm512_maskz_loadu_epi64(lanes[j], dc + 8 * j); \
    b[j] = _mm512_maskz_loadu_epi64(lanes[j], db + 8 * j); \
  }
#define QE_BM_STORE                                          \
  for (int j = 0; j < R; ++j) {                              \
    _mm512_mask_storeu_epi64(dc + 8 * j, lanes[j], c[j]);  \
    _mm512_mask_storeu_epi64(db + 8 * j, lanes[j], b[j]);  \
  }
  QE_BM_LOAD
  const int kj = static_cast<int>(k / 8);
  const auto klane = static_cast<__mmask8>(1u << (k % 8));
  for (size_t i = 0; i < count; ++i) {
    const Update& u = updates[i];
    if (u.shift >= 64) {
      QE_BM_STORE
      apply_avx512(dc, db, from, to, &u, 1);
      QE_BM_LOAD
      continue;
    }
    // Words below `from` of D_C and D_B are updated too: their bits lie below every step
    // still to come and are never read as meaningful again (berlekamp_massey.h).
    const __m128i up = _mm_cvtsi32_si128(static_cast<int>(u.shift));
    const __m128i down = _mm_cvtsi32_si128(static_cast<int>(64 - u.shift));
    const auto grow = static_cast<__mmask8>(u.grow ? 0xff : 0);
    const __m512i dbk = _mm512_set1_epi64(static_cast<long long>(u.db_word));
    // Registers wholly below word k hold nothing that matters any more. (Indices stay
    // compile-time constants so that c and b live in registers.)
    __m512i below = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int j = 0; j < R; ++j) {
      if (j == kj) b[j] = _mm512_mask_mov_epi64(b[j], klane, dbk);
      if (j < kj) {
        below = b[j];
        continue;
      }
      const __m512i lo = _mm512_alignr_epi64(b[j], below, 7);  // each word's next lower word
      below = b[j];
      const __m512i sh = _mm512_or_si512(_mm512_sll_epi64(b[j], up), _mm512_srl_epi64(lo, down));
      const __m512i old = c[j];
      c[j] = _mm512_xor_si512(old, sh);
      b[j] = _mm512_mask_mov_epi64(b[j], grow, old);
    }
  }
  QE_BM_STORE
#undef QE_BM_LOAD
#undef QE_BM_STORE
}

// The register-resident kernel with AVX2: D_C and D_B of at most 4 * R words in R
// registers each (R <= 5 keeps them and the per-update values within the 16 YMM
// registers; 1,280 bits are 20 words). AVX2 has no lane-crossing align, so each word's next
// lower word is a 64-bit rotate of the register blended with the top word of the one below.
template <int R>
__attribute__((target("avx2"))) void apply_avx2_registers(uint64_t* dc, uint64_t* db, size_t from, size_t to,
                                                          const Update* updates, size_t count) {
  const size_t k = from - 1;  // the word the updates' db_word belongs to
  __m256i c[R], b[R], lanes[R];
  for (int j = 0; j < R; ++j) {
    const auto first = static_cast<long long>(4 * j);
    const auto words = static_cast<long long>(to);
    // All ones in the lanes below `to` (maskload/maskstore read each lane's top bit).
    lanes[j] = _mm256_cmpgt_epi64(_mm256_set1_epi64x(words), _mm256_setr_epi64x(first, first + 1, first + 2, first + 3));
  }
#define QE_BM_LOAD                                                                                  \
  for (int j = 0; j < R; ++j) {                                                                     \
    c[j] = _mm256_maskload_epi64(reinterpret_cast<const long long*>(dc + 4 * j), lanes[j]); \
    b[j] = _mm256_maskload_epi64(reinterpret_cast<const long long*>(db + 4 * j), lanes[j]); \
  }
#define QE_BM_STORE                                                                    \
  for (int j = 0; j < R; ++j) {                                                        \
    _mm256_maskstore_epi64(reinterpret_cast<long long*>(dc + 4 * j), lanes[j], c[j]); \
    _mm256_maskstore_epi64(reinterpret_cast<long long*>(db + 4 * j), lanes[j], b[j]); \
  }
  QE_BM_LOAD
  const int kj = static_cast<int>(k / 4);
  const auto kl = static_cast<long long>(k % 4);
  const __m256i klane = _mm256_cmpeq_epi64(_mm256_set1_epi64x(kl), _mm256_setr_epi64x(0, 1, 2, 3));
  for (size_t i = 0; i < count; ++i) {
    const Update& u = updates[i];
    if (u.shift >= 64) {
      QE_BM_STORE
      apply_avx2(dc, db, from, to, &u, 1);
      QE_BM_LOAD
      continue;
    }
    // As in the AVX-512 kernel, words below `from` are updated too and never read again.
    const __m128i up = _mm_cvtsi32_si128(static_cast<int>(u.shift));
    const __m128i down = _mm_cvtsi32_si128(static_cast<int>(64 - u.shift));
    const __m256i grow = _mm256_set1_epi64x(u.grow ? -1 : 0);
    const __m256i dbk = _mm256_set1_epi64x(static_cast<long long>(u.db_word));
    __m256i below = _mm256_setzero_si256();
#pragma GCC unroll 5
    for (int j = 0; j < R; ++j) {
      if (j == kj) b[j] = _mm256_blendv_epi8(b[j], dbk, klane);
      if (j < kj) {
        below = b[j];
        continue;
      }
      // [below3, b0, b1, b2]: each word's next lower word.
      const __m256i lo = _mm256_blend_epi32(_mm256_permute4x64_epi64(b[j], 0x93), _mm256_permute4x64_epi64(below, 0x93), 0x03);
      below = b[j];
      const __m256i sh = _mm256_or_si256(_mm256_sll_epi64(b[j], up), _mm256_srl_epi64(lo, down));
      const __m256i old = c[j];
      c[j] = _mm256_xor_si256(old, sh);
      b[j] = _mm256_blendv_epi8(b[j], old, grow);
    }
  }
  QE_BM_STORE
#undef QE_BM_LOAD
#undef QE_BM_STORE
}

ApplyFn avx2_apply_for(size_t words) {
  if (words <= 4) return apply_avx2_registers<1>;
  if (words <= 8) return apply_avx2_registers<2>;
  if (words <= 12) return apply_avx2_registers<3>;
  if (words <= 16) return apply_avx2_registers<4>;
  if (words <= 20) return apply_avx2_registers<5>;
  return apply_avx2;
}

ApplyFn avx512_apply_for(size_t words) {
  if (words <= 8) return apply_avx512_registers<1>;
  if (words <= 16) return apply_avx512_registers<2>;
  if (words <= 24) return apply_avx512_registers<3>;
  return apply_avx512;
}
#pragma GCC diagnostic pop
#else
ApplyFn avx512_apply_for(size_t) { return apply_portable; }
ApplyFn avx2_apply_for(size_t) { return apply_portable; }
void apply_avx2(uint64_t* dc, uint64_t* db, size_t from, size_t to, const Update* updates, size_t count) {
  apply_portable(dc, db, from, to, updates, count);
}
void apply_avx512(uint64_t* dc, uint64_t* db, size_t from, size_t to, const Update* updates, size_t count) {
  apply_portable(dc, db, from, to, updates, count);
}
#endif

}  // namespace detail

LinearComplexity::LinearComplexity(Kernel kernel) : kernel_(kernel == Kernel::Best ? best_kernel() : kernel) {
  if (!kernel_available(kernel_)) kernel_ = Kernel::Portable;
  updates_.resize(64);
}

size_t LinearComplexity::operator()(const uint8_t* data, size_t nbits) {
  if (nbits == 0) return 0;
  const size_t words = (nbits + 63) / 64;
  // D_B reads up to words + 1 words below its bit 0 (a shift of up to nbits): zeros.
  const size_t pad = words + 2;
  dc_.assign(words, 0);
  db_.assign(pad + words, 0);
  uint64_t* const dc = dc_.data();
  uint64_t* const db = db_.data() + pad;
  const size_t nbytes = (nbits + 7) / 8;
  for (size_t w = 0; w < words; ++w) dc[w] = health::sequence_word(data, nbytes, w);
  if (nbits % 64) dc[words - 1] &= (uint64_t{1} << (nbits % 64)) - 1;
  std::copy(dc, dc + words, db);

  Update* const updates = updates_.data();
  // The vector kernels keep short strings in registers and fall back to their memory kernels.
  const detail::ApplyFn apply = kernel_ == Kernel::Avx512 ? detail::avx512_apply_for(words)
                                : kernel_ == Kernel::Avx2  ? detail::avx2_apply_for(words)
                                                           : detail::apply_portable;
  size_t L = 0;
  size_t m = 1;  // the update is C ^= x^m B
  for (size_t k = 0; k < words; ++k) {
    uint64_t cur = dc[k];   // word k of D_C: the discrepancies of steps 64k .. 64k + 63
    uint64_t dbk = db[k];   // word k of D_B
    size_t count = 0;
    const size_t end = std::min(nbits, 64 * k + 64);
    // Only steps with a discrepancy change anything but m, so the loop jumps from one set
    // bit of D_C's word to the next (the bits above the current step change as it goes).
    const size_t first = 64 * k;
    // D_B's two words below this one do not change while its steps run (the updates reach
    // them only after): the common shifts (m < 128) take them from registers, so no load
    // whose address depends on m sits in the chain from one discrepancy to the next.
    const uint64_t below1 = db[static_cast<ptrdiff_t>(k) - 1], below2 = db[static_cast<ptrdiff_t>(k) - 2];
    size_t n = first;
    for (;;) {
      const unsigned j = static_cast<unsigned>(n - first);
      const uint64_t rest = j < 64 ? cur >> j : 0;
      if (rest == 0) {
        m += end - n;
        break;
      }
      const auto zeros = static_cast<size_t>(std::countr_zero(rest));
      if (n + zeros >= end) {
        m += end - n;
        break;
      }
      n += zeros;
      m += zeros;
      // Step n has a discrepancy: C ^= x^m B, i.e. D_C ^= D_B shifted up by m.
      const auto q = static_cast<ptrdiff_t>(m >> 6);
      uint64_t hi = q == 0 ? dbk : below1, lo = q == 0 ? below1 : below2;
      if (q >= 2) [[unlikely]] {
        hi = db[static_cast<ptrdiff_t>(k) - q];
        lo = db[static_cast<ptrdiff_t>(k) - q - 1];
      }
      const auto s = static_cast<unsigned>(m & 63);
      const uint64_t sh = (hi << s) | ((lo >> 1) >> (63 - s));  // funnel(), without its branch
      // Whether the length changes is a coin flip on random data: masks, not a branch.
      const uint64_t gmask = 0 - static_cast<uint64_t>(2 * L <= n);
      updates[count++] = {static_cast<uint32_t>(m), static_cast<uint32_t>(gmask & 1), dbk};
      const uint64_t next = cur ^ sh;
      dbk ^= (dbk ^ cur) & gmask;
      L += gmask & (n + 1 - 2 * L);
      m = ((m + 1) & ~gmask) | (gmask & 1);
      cur = next;
      ++n;
    }
    dc[k] = cur;
    if (count != 0 && k + 1 < words) apply(dc, db, k + 1, words, updates, count);
    db[k] = dbk;
  }
  return L;
}

}  // namespace qe::bm
