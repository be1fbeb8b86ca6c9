// The FIPS 140-2 counting kernel (fips140_avx512_body.h) built twice: for AVX-512 F + BW,
// with popcounts by nibble lookup and two-shift windows (Skylake-SP, Cascade Lake), and
// with VPOPCNTDQ + VBMI2 for vpopcntq and vpshldq (Ice Lake, Zen 4). fips140.cc picks one
// at run time. The standard headers come first, under the default target.
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "health/fips140_counts.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QE_FIPS140_AVX512 1
#include <immintrin.h>

namespace qe::fips140::detail {

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw")
// GCC 12's AVX-512 intrinsics pass a deliberately undefined register through, which its own
// -Wmaybe-uninitialized (here also -Wuninitialized) then reports at every use (a known false
// positive; pattern.cc too).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace bw {
inline __m512i popcount64(__m512i v) {
  const __m512i nibble_ones = _mm512_set4_epi32(0x04030302, 0x03020201, 0x03020201, 0x02010100);
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i lo = _mm512_shuffle_epi8(nibble_ones, _mm512_and_si512(v, low4));
  const __m512i hi = _mm512_shuffle_epi8(nibble_ones, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
  return _mm512_sad_epu8(_mm512_add_epi8(lo, hi), _mm512_setzero_si512());
}
template <int k>
inline __m512i window(__m512i x0, __m512i x1) {
  return _mm512_or_si512(_mm512_slli_epi64(x0, k), _mm512_srli_epi64(x1, 64 - k));
}
#include "health/fips140_avx512_body.h"
}  // namespace bw
void count_avx512bw(const uint8_t* padded, Counts& out) { bw::count(padded, out); }
#pragma GCC diagnostic pop
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vpopcntdq,avx512vbmi2")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace popcnt {
inline __m512i popcount64(__m512i v) { return _mm512_popcnt_epi64(v); }
template <int k>
inline __m512i window(__m512i x0, __m512i x1) {
  return _mm512_shldi_epi64(x0, x1, k);
}
#include "health/fips140_avx512_body.h"
}  // namespace popcnt
void count_avx512_popcnt(const uint8_t* padded, Counts& out) { popcnt::count(padded, out); }
#pragma GCC diagnostic pop
#pragma GCC pop_options

bool avx512_built() { return true; }

}  // namespace qe::fips140::detail

#else
namespace qe::fips140::detail {
void count_avx512bw(const uint8_t* padded, Counts& out) { count_words(padded, out); }
void count_avx512_popcnt(const uint8_t* padded, Counts& out) { count_words(padded, out); }
bool avx512_built() { return false; }
}  // namespace qe::fips140::detail
#endif
