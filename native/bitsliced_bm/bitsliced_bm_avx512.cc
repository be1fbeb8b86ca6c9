// The bit-sliced Berlekamp-Massey (engine.h) compiled with AVX2 + AVX-512 F/VL/BW, for CPUs
// that have them (bitsliced_bm.cc decides at run time). The vectors stay 256-bit; what
// AVX-512 adds is vpternlog, one instruction for each loop's and/xor/blend, and (BW) the
// 16-bit compares and masked subtracts that keep the lanes' lengths. The standard
// headers come first, under the default target, so only this file's own
// anonymous-namespace code is built for AVX-512.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bitsliced_bm/bitsliced_bm.h"
#include "common/msb_bits.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QE_BITSLICED_BM_AVX512 1
#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512vl,avx512bw")
// GCC 12's AVX-512 intrinsics pass a deliberately undefined register through, which its own
// -Wmaybe-uninitialized then reports at every use (a known false positive; pattern.cc too).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "bitsliced_bm/engine.h"

namespace qe::bitsliced_bm::detail {
void words_avx512(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  complexities_into(WordReader{stream}, first, stride, M, count, complexity);
}
void bytes_avx512(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  complexities_into(ByteReader{stream}, first, stride, M, count, complexity);
}
}  // namespace qe::bitsliced_bm::detail
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

namespace qe::bitsliced_bm::detail {

#ifdef QE_BITSLICED_BM_AVX512
bool avx512_built() { return true; }
#else
bool avx512_built() { return false; }
void words_avx512(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  words_portable(stream, first, stride, M, count, complexity);
}
void bytes_avx512(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  bytes_portable(stream, first, stride, M, count, complexity);
}
#endif

}  // namespace qe::bitsliced_bm::detail
