// AVX2 base64 bulk kernels, compiled with a per-function target attribute so the one binary
// runs everywhere and uses them only when qe::cpu::has_avx2() says so.
//
// Decode, 32 characters -> 24 bytes:
//  1. Validate with two nibble lookups. Each low nibble belongs to one of five classes
//     (0 | 1-9 | A | B,F | C-E); for each high nibble a second table lists the classes that
//     are NOT alphabet characters under it. A byte is invalid iff the two masks intersect.
//  2. Translate to 6-bit values by adding an offset chosen by the high nibble ('/' is moved
//     to the unused slot 1 so it gets its own offset, apart from '+').
//  3. Pack 4 x 6 bits into 24 bits per 32-bit lane with two multiply-adds, reorder the three
//     bytes big-endian with a byte shuffle, and close the gap between the two 128-bit lanes
//     with a cross-lane dword permute.
// Encode, 24 bytes -> 32 characters: spread each 3-byte group into a 32-bit lane as
// [b1 b0 b2 b1], pull the four 6-bit fields into byte positions with one 16-bit high
// multiply (right shifts) and one 16-bit low multiply (left shifts), then map values to
// ASCII with an offset looked up by value range.
#include "codec/base64_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace qe::codec::detail {

bool avx2_compiled() { return true; }

#define QE_AVX2 __attribute__((target("avx2")))

QE_AVX2 static inline __m256i lanes(const __m128i table) { return _mm256_broadcastsi128_si256(table); }

struct DecodeTables {
  __m256i lo_class_lut, hi_invalid_lut, offset_lut, nibble, slash, pair_mul, quad_mul, order, compact;
};

QE_AVX2 static inline DecodeTables decode_tables() {
  DecodeTables t;
  // Classes of the low nibble: 0x01 = 0, 0x02 = 1..9, 0x04 = A, 0x08 = B or F, 0x10 = C..E.
  t.lo_class_lut = lanes(_mm_setr_epi8(0x01, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x04, 0x08,
                                       0x10, 0x10, 0x10, 0x08));
  // Invalid classes under each high nibble: 2x valid only B,F ('+','/'); 3x valid 0..9;
  // 4x and 6x valid 1..F; 5x and 7x valid 0..A; every other high nibble: nothing valid.
  t.hi_invalid_lut = lanes(_mm_setr_epi8(0x1F, 0x1F, 0x17, 0x1C, 0x01, 0x18, 0x01, 0x18, 0x1F, 0x1F, 0x1F, 0x1F,
                                         0x1F, 0x1F, 0x1F, 0x1F));
  // Offset to add, by high nibble (slot 1 = '/').
  t.offset_lut = lanes(_mm_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0));
  t.nibble = _mm256_set1_epi8(0x0F);
  t.slash = _mm256_set1_epi8('/');
  t.pair_mul = _mm256_set1_epi32(0x01400140);  // [a b] -> a<<6 | b
  t.quad_mul = _mm256_set1_epi32(0x00011000);  // [w0 w1] -> w0<<12 | w1
  t.order = lanes(_mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1));
  t.compact = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 3, 7);
  return t;
}

// Non-zero in some byte iff some character of v is outside the alphabet.
QE_AVX2 static inline __m256i invalid_mask(const DecodeTables& t, __m256i v, __m256i* hi_out) {
  const __m256i lo = _mm256_and_si256(v, t.nibble);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), t.nibble);
  *hi_out = hi;
  return _mm256_and_si256(_mm256_shuffle_epi8(t.lo_class_lut, lo), _mm256_shuffle_epi8(t.hi_invalid_lut, hi));
}

// 32 valid characters -> 12 bytes at the bottom of each 128-bit lane.
QE_AVX2 static inline __m256i translate_lanes(const DecodeTables& t, __m256i v, __m256i hi) {
  const __m256i index = _mm256_add_epi8(hi, _mm256_cmpeq_epi8(v, t.slash));  // '/' -> slot 1
  const __m256i sextets = _mm256_add_epi8(v, _mm256_shuffle_epi8(t.offset_lut, index));
  const __m256i pairs = _mm256_maddubs_epi16(sextets, t.pair_mul);
  const __m256i quads = _mm256_madd_epi16(pairs, t.quad_mul);
  return _mm256_shuffle_epi8(quads, t.order);
}

// 32 valid characters -> 24 bytes in the low 24 bytes of the result.
QE_AVX2 static inline __m256i translate(const DecodeTables& t, __m256i v, __m256i hi) {
  return _mm256_permutevar8x32_epi32(translate_lanes(t, v, hi), t.compact);
}

// Stores the two 12-byte lane halves as two overlapping 16-byte stores (writes 28 bytes:
// 24 of output, then 4 that the next group or the scalar code overwrites).
QE_AVX2 static inline void store_lanes(uint8_t* out, __m256i lanes12) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(lanes12));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 12), _mm256_extracti128_si256(lanes12, 1));
}

QE_AVX2 static inline void store24(uint8_t* out, __m256i packed) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 16), _mm256_extracti128_si256(packed, 1));
}

QE_AVX2 size_t decode_avx2(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_room) {
  const DecodeTables t = decode_tables();
  size_t done = 0;
  // Two groups per step, one validity test for both. The lane-wise stores write 52 bytes
  // for 48 of output, so the loop keeps 52 bytes of room.
  while (in_len - done >= 64 && out_room >= 52) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + done));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + done + 32));
    __m256i hi_a, hi_b;
    const __m256i bad = _mm256_or_si256(invalid_mask(t, a, &hi_a), invalid_mask(t, b, &hi_b));
    if (!_mm256_testz_si256(bad, bad)) break;
    store_lanes(out, translate_lanes(t, a, hi_a));
    store_lanes(out + 24, translate_lanes(t, b, hi_b));
    done += 64;
    out += 48;
    out_room -= 48;
  }
  while (in_len - done >= 32 && out_room >= 24) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + done));
    __m256i hi_a;
    const __m256i bad = invalid_mask(t, a, &hi_a);
    if (!_mm256_testz_si256(bad, bad)) break;
    store24(out, translate(t, a, hi_a));
    done += 32;
    out += 24;
    out_room -= 24;
  }
  return done;
}

QE_AVX2 static inline void encode24(const uint8_t* in, char* out) {
  // Lane 0 takes in[0..11], lane 1 takes in[12..23] (each load reads 16 bytes).
  const __m256i raw = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 12)), 1);
  const __m256i spread = _mm256_shuffle_epi8(
      raw, lanes(_mm_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10)));
  // Low word b0<<8|b1: field 0 = bits 10..15 (>>10), field 1 = bits 4..9 (<<4 to 8..13).
  // High word b1<<8|b2: field 2 = bits 6..11 (>>6), field 3 = bits 0..5 (<<8 to 8..13).
  const __m256i right = _mm256_mulhi_epu16(_mm256_and_si256(spread, _mm256_set1_epi32(0x0FC0FC00)),
                                           _mm256_set1_epi32(0x04000040));
  const __m256i left = _mm256_mullo_epi16(_mm256_and_si256(spread, _mm256_set1_epi32(0x003F03F0)),
                                          _mm256_set1_epi32(0x01000010));
  const __m256i sextets = _mm256_or_si256(right, left);
  // Range index: 0 for 26..51, 1..12 for 52..63, 13 for 0..25.
  const __m256i index = _mm256_or_si256(
      _mm256_subs_epu8(sextets, _mm256_set1_epi8(51)),
      _mm256_and_si256(_mm256_cmpgt_epi8(_mm256_set1_epi8(26), sextets), _mm256_set1_epi8(13)));
  const __m256i offset_lut =
      lanes(_mm_setr_epi8(71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 65, 0, 0));
  const __m256i ascii = _mm256_add_epi8(sextets, _mm256_shuffle_epi8(offset_lut, index));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ascii);
}

QE_AVX2 size_t encode_avx2(const uint8_t* in, size_t len, size_t readable, char* out) {
  size_t done = 0;
  while (done + 24 <= len && done + 28 <= readable) {
    encode24(in + done, out);
    done += 24;
    out += 32;
  }
  return done;
}

}  // namespace qe::codec::detail

#else  // not x86-64: the scalar code does everything

namespace qe::codec::detail {
bool avx2_compiled() { return false; }
size_t decode_avx2(const uint8_t*, size_t, uint8_t*, size_t) { return 0; }
size_t encode_avx2(const uint8_t*, size_t, size_t, char*) { return 0; }
}  // namespace qe::codec::detail

#endif
