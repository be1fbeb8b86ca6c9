#include "ea/shuffle.h"

#include <utility>

#include "common/cpu.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace qe::ea {
namespace {

__extension__ typedef unsigned __int128 uint128;  // GCC/Clang: the 64x64->128 product

// Lemire's rejection test, for a product m = draw x bound (bound ≤ 2^32) whose low half
// fell under bound: its high half is the answer unless the low half is under 2^32 mod bound,
// then new draws from rng.
uint32_t finish_below32(uint64_t m, uint64_t bound, Xoshiro& rng) {
  const auto threshold = static_cast<uint32_t>((uint64_t{1} << 32) % bound);
  while (static_cast<uint32_t>(m) < threshold) m = (rng.next() >> 32) * bound;
  return static_cast<uint32_t>(m >> 32);
}

// Uniform in [0, bound) for bound ≤ 2^32, from the 32 random bits in `bits` (more drawn from
// rng in the rare case of a rejection): the high half of bits x bound.
inline uint32_t below32(uint32_t bits, uint64_t bound, Xoshiro& rng) {
  const uint64_t m = bits * bound;
  return static_cast<uint32_t>(m) < bound ? finish_below32(m, bound, rng) : static_cast<uint32_t>(m >> 32);
}

// The same for bounds past 2^32, with full-width draws.
uint64_t below64(uint64_t bound, Xoshiro& rng) {
  uint128 m = static_cast<uint128>(rng.next()) * bound;
  if (static_cast<uint64_t>(m) < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (static_cast<uint64_t>(m) < threshold) m = static_cast<uint128>(rng.next()) * bound;
  }
  return static_cast<uint64_t>(m >> 64);
}

// One Fisher-Yates step at a time down to position `stop`: position i - 1 swaps with one
// drawn from [0, i), two positions per generator call. Returns where it stopped.
size_t shuffle_steps(uint8_t* a, size_t i, size_t stop, Xoshiro& rng) {
  for (; i > (uint64_t{1} << 32) && i > stop; --i) std::swap(a[i - 1], a[below64(i, rng)]);
  while (i > stop + 1) {
    const uint64_t r = rng.next();
    std::swap(a[i - 1], a[below32(static_cast<uint32_t>(r), i, rng)]);
    --i;
    std::swap(a[i - 1], a[below32(static_cast<uint32_t>(r >> 32), i, rng)]);
    --i;
  }
  if (i == stop + 1 && i > 1) {
    std::swap(a[i - 1], a[below32(static_cast<uint32_t>(rng.next()), i, rng)]);
    --i;
  }
  return i;
}

#if defined(__x86_64__)
// The same steps in batches of 64 with AVX2: the 64 positions are drawn first, from four
// xoshiro256** streams (seeded from rng) run in the lanes of vector registers, each 64-bit
// output giving two 32-bit draws and Lemire's multiplies done four at a time; then the 64
// swaps run. A draw whose low product half falls under its bound goes through the
// rejection test alone (finish_below32). The swaps, random accesses into a 1 MB array, stay the
// bulk of the time; the draws go from about a third of it to a tenth.
constexpr size_t kBatch = 64;

// Four and eight xoshiro256** streams, one per 64-bit lane (GCC vectors, which take the
// shift, add and xor operators xoshiro_step uses).
using Streams4 = uint64_t __attribute__((vector_size(32)));
using Streams8 = uint64_t __attribute__((vector_size(64)));

// product[k] = draw x (i - k) for k < 64; true if any of them may need the rejection test
// (redraw_rejected then checks each exactly). Rather than comparing every draw's low product
// half with its own bound (three operations per four draws), the batch keeps the smallest low
// half and compares it once with the largest bound, i: a batch passes that test unless one
// low half falls under i, which happens in ~64 x i / 2^32 of batches (1.5 % for 10^6
// samples). Fisher-Yates over 10^6 bytes on Zen 5 capped at AVX2: 0.83-0.90 -> 0.78-0.82 ms,
// level with the AVX-512 path (0.77-0.79).
__attribute__((target("avx2"))) bool draw_batch(Streams4 (&s)[4], uint64_t i, uint64_t* product) {
  const __m256i eight = _mm256_set1_epi64x(8);
  __m256i bound_a = _mm256_sub_epi64(_mm256_set1_epi64x(static_cast<long long>(i)), _mm256_setr_epi64x(0, 1, 2, 3));
  __m256i bound_b = _mm256_sub_epi64(bound_a, _mm256_set1_epi64x(4));
  __m256i lowest = _mm256_set1_epi32(-1);
  Streams4 state[4] = {s[0], s[1], s[2], s[3]};
  for (size_t k = 0; k < kBatch; k += 8) {
    Streams4 output;
    xoshiro_step(state, output);
    const auto r = reinterpret_cast<__m256i>(output);
    const __m256i a = _mm256_mul_epu32(r, bound_a), b = _mm256_mul_epu32(_mm256_srli_epi64(r, 32), bound_b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(product + k), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(product + k + 4), b);
    // a's low halves in the even 32-bit lanes, b's moved up into the odd ones.
    lowest = _mm256_min_epu32(lowest, _mm256_blend_epi32(a, _mm256_slli_epi64(b, 32), 0xAA));
    bound_a = _mm256_sub_epi64(bound_a, eight);
    bound_b = _mm256_sub_epi64(bound_b, eight);
  }
  for (int w = 0; w < 4; ++w) s[w] = state[w];
  if (i > 0xFFFFFFFF) return true;  // i = 2^32: every low half is under it
  // lowest >= i (unsigned) in every lane exactly where max(lowest, i) == lowest.
  const __m256i largest_bound = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(i)));
  const __m256i clear = _mm256_cmpeq_epi32(_mm256_max_epu32(lowest, largest_bound), lowest);
  return _mm256_movemask_epi8(clear) != -1;
}

// The batch's 64 swaps: position i - 1 - k with the high half of product[k] (read as the
// 32-bit word it is, little-endian, rather than shifted out of the 64-bit product).
inline void swap_batch(uint8_t* a, size_t i, const uint64_t* product) {
  const auto* position = reinterpret_cast<const uint32_t*>(product) + 1;
  for (size_t k = 0; k < kBatch; ++k) std::swap(a[i - 1 - k], a[position[2 * k]]);
}

// Draws that fell in Lemire's rejection zone, redrawn one by one (rare: a batch has one
// with probability ~64 x i / 2^32).
void redraw_rejected(uint64_t* product, uint64_t i, Xoshiro& rng) {
  for (size_t k = 0; k < kBatch; ++k) {
    const uint64_t bound = i - k;
    if (static_cast<uint32_t>(product[k]) < bound) product[k] = uint64_t{finish_below32(product[k], bound, rng)} << 32;
  }
}

// The batches, at either width: the streams seeded from rng, then per batch the 64 positions
// drawn, the rare rejected ones redrawn, and the swaps. Inlined into each width's function,
// so it compiles with that ISA.
template <typename Streams, bool (*Draw)(Streams (&)[4], uint64_t, uint64_t*)>
[[gnu::always_inline]] inline size_t shuffle_batches(uint8_t* a, size_t i, Xoshiro& rng) {
  Streams s[4];
  for (Streams& word : s)
    for (size_t lane = 0; lane < sizeof(Streams) / sizeof(uint64_t); ++lane) word[lane] = rng.next();
  alignas(64) uint64_t product[kBatch];
  for (; i > kBatch + 1 && i <= (uint64_t{1} << 32); i -= kBatch) {
    if (Draw(s, i, product)) [[unlikely]]
      redraw_rejected(product, i, rng);
    swap_batch(a, i, product);
  }
  return i;
}

__attribute__((target("avx2"))) size_t shuffle_in_batches(uint8_t* a, size_t i, Xoshiro& rng) {
  return shuffle_batches<Streams4, draw_batch>(a, i, rng);
}

// GCC 12's AVX-512 intrinsics pass a deliberately undefined register through, which its own
// -Wmaybe-uninitialized then reports at every use (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The same with AVX-512: eight streams, sixteen draws a round, half the instructions per
// draw. Fisher-Yates over 10^6 bytes: 1.04 -> 0.83 ms on Zen 4 (the swaps alone, with
// positions drawn beforehand, take 0.78).
__attribute__((target("avx512f"))) bool draw_batch_avx512(Streams8 (&s)[4], uint64_t i, uint64_t* product) {
  const __m512i step = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), eight = _mm512_set1_epi64(8);
  const __m512i low = _mm512_set1_epi64(0xFFFFFFFF);
  __mmask8 reject = 0;
  Streams8 state[4] = {s[0], s[1], s[2], s[3]};
  for (size_t k = 0; k < kBatch; k += 16) {
    Streams8 output;
    xoshiro_step(state, output);
    const auto r = reinterpret_cast<__m512i>(output);
    const __m512i bound_a = _mm512_sub_epi64(_mm512_set1_epi64(static_cast<long long>(i - k)), step);
    const __m512i bound_b = _mm512_sub_epi64(bound_a, eight);
    const __m512i a = _mm512_mul_epu32(r, bound_a), b = _mm512_mul_epu32(_mm512_srli_epi64(r, 32), bound_b);
    _mm512_storeu_si512(product + k, a);
    _mm512_storeu_si512(product + k + 8, b);
    reject |= _mm512_cmplt_epu64_mask(_mm512_and_si512(a, low), bound_a) | _mm512_cmplt_epu64_mask(_mm512_and_si512(b, low), bound_b);
  }
  for (int w = 0; w < 4; ++w) s[w] = state[w];
  return reject != 0;
}

__attribute__((target("avx512f"))) size_t shuffle_in_batches_avx512(uint8_t* a, size_t i, Xoshiro& rng) {
  return shuffle_batches<Streams8, draw_batch_avx512>(a, i, rng);
}
#pragma GCC diagnostic pop
#endif

enum class Path { kPortable, kAvx2, kAvx512 };

void shuffle_on(Path path, std::vector<uint8_t>& data, Xoshiro& rng) {
  uint8_t* a = data.data();
  size_t i = data.size();
#if defined(__x86_64__)
  if (path != Path::kPortable) {
    i = shuffle_steps(a, i, uint64_t{1} << 32, rng);
    i = path == Path::kAvx512 ? shuffle_in_batches_avx512(a, i, rng) : shuffle_in_batches(a, i, rng);
  }
#else
  (void)path;
#endif
  shuffle_steps(a, i, 1, rng);
}

bool has_avx2() {
#if defined(__x86_64__)
  static const bool avx2 = qe::cpu::has_avx2();
  return avx2;
#else
  return false;
#endif
}

bool has_avx512() {
#if defined(__x86_64__)
  static const bool avx512 = qe::cpu::has_avx512bw();
  return avx512;
#else
  return false;
#endif
}

}  // namespace

void shuffle(std::vector<uint8_t>& data, Xoshiro& rng) {
  shuffle_on(has_avx512() ? Path::kAvx512 : has_avx2() ? Path::kAvx2 : Path::kPortable, data, rng);
}

namespace detail {
void shuffle_portable(std::vector<uint8_t>& data, Xoshiro& rng) { shuffle_on(Path::kPortable, data, rng); }
bool shuffle_avx2(std::vector<uint8_t>& data, Xoshiro& rng) {
  if (!has_avx2()) return false;
  shuffle_on(Path::kAvx2, data, rng);
  return true;
}
bool shuffle_avx512(std::vector<uint8_t>& data, Xoshiro& rng) {
  if (!has_avx512()) return false;
  shuffle_on(Path::kAvx512, data, rng);
  return true;
}
}  // namespace detail

}  // namespace qe::ea
