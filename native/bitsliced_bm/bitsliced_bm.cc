// See bitsliced_bm.h: the portable build of engine.h, and the choice between builds.
#include "bitsliced_bm/bitsliced_bm.h"

#include "bitsliced_bm/engine.h"
#include "common/cpu.h"

namespace qe::bitsliced_bm {

namespace detail {
void words_portable(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  complexities_into(WordReader{stream}, first, stride, M, count, complexity);
}
void bytes_portable(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity) {
  complexities_into(ByteReader{stream}, first, stride, M, count, complexity);
}
}  // namespace detail

bool available(Build build) {
  static const bool avx2 = detail::avx2_built() && cpu::has_avx2();
  static const bool avx512 = detail::avx512_built() && cpu::has_avx2() && cpu::has_avx512vl() && cpu::has_avx512bw();
  switch (build) {
    case Build::Avx2: return avx2;
    case Build::Avx512: return avx512;
    default: return true;
  }
}

namespace {

Build resolve(Build build) {
  if (build != Build::Best) return available(build) ? build : Build::Portable;
  if (available(Build::Avx512)) return Build::Avx512;
  return available(Build::Avx2) ? Build::Avx2 : Build::Portable;
}

template <typename Stream>
using EntryPoint = void (*)(Stream, size_t, size_t, size_t, size_t, size_t*);

// The vector builds keep each lane's length in a 16-bit element, compared signed with AVX2.
constexpr size_t kVectorBuildMaxM = 32767;

template <typename Stream>
EntryPoint<Stream> pick(Build build, size_t M, EntryPoint<Stream> portable, EntryPoint<Stream> avx2,
                        EntryPoint<Stream> avx512) {
  switch (resolve(M <= kVectorBuildMaxM ? build : Build::Portable)) {
    case Build::Avx512: return avx512;
    case Build::Avx2: return avx2;
    default: return portable;
  }
}

}  // namespace

void linear_complexities(WordStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity,
                         Build build) {
  pick<WordStream>(build, M, detail::words_portable, detail::words_avx2, detail::words_avx512)(stream, first, stride, M,
                                                                                            count, complexity);
}

void linear_complexities(ByteStream stream, size_t first, size_t stride, size_t M, size_t count, size_t* complexity,
                         Build build) {
  pick<ByteStream>(build, M, detail::bytes_portable, detail::bytes_avx2, detail::bytes_avx512)(stream, first, stride, M,
                                                                                            count, complexity);
}

}  // namespace qe::bitsliced_bm
