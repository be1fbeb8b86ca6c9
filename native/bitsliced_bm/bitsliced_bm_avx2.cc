// The bit-sliced Berlekamp-Massey (engine.h) compiled with AVX2, for CPUs that have it
// (bitsliced_bm.cc decides at run time). The standard headers come first, under the
// default target, so only this file's own anonymous-namespace code is built for AVX2.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bitsliced_bm/bitsliced_bm.h"
#include "common/msb_bits.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QE_BITSLICED_BM_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2")
#include "bitsliced_bm/engine.h"

namespace qe::bitsliced_bm::detail {
void words_avx2(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  complexities_into(WordReader{stream}, first, stride, M, count, complexity);
}
void bytes_avx2(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  complexities_into(ByteReader{stream}, first, stride, M, count, complexity);
}
}  // namespace qe::bitsliced_bm::detail
#pragma GCC pop_options
#endif

namespace qe::bitsliced_bm::detail {

#ifdef QE_BITSLICED_BM_AVX2
bool avx2_built() { return true; }
#else
bool avx2_built() { return false; }
void words_avx2(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  words_portable(stream, first, stride, M, count, complexity);
}
void bytes_avx2(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  bytes_portable(stream, first, stride, M, count, complexity);
}
#endif

}  // namespace qe::bitsliced_bm::detail
