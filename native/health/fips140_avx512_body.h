// The AVX-512 counting kernel of fips140_counts.h, included by fips140_avx512.cc once per
// target inside a namespace that first defines, for that target,
//   __m512i popcount64(__m512i)                         per 64-bit lane
//   template <int k> __m512i window(__m512i x0, __m512i x1)   (x0 << k) | (x1 >> (64 - k)) per lane
// No include guard, on purpose.

// One value's windows of eight words: counts for k = 1..7 into count[k], then on to kDeep
// bits, OR-ed into any[k], with the kDeep-bit windows stored at `deep`. Returns which of
// the eight deep words are not zero.
inline __mmask8 windows_of(__m512i x0, __m512i x1, __m512i (&count)[8], __m512i (&any)[3], uint64_t* deep) {
  static_assert(kDeep == 10, "any[] holds the windows of 8..kDeep bits");
  __m512i a = x0;
  count[1] = _mm512_add_epi64(count[1], popcount64(a));
  // Window k + 1 from window k; the shifts must be constants, hence the fold.
  [&]<int... k>(std::integer_sequence<int, k...>) {
    ((a = _mm512_and_si512(a, window<k + 1>(x0, x1)), count[k + 2] = _mm512_add_epi64(count[k + 2], popcount64(a))),
     ...);
  }(std::make_integer_sequence<int, 6>{});
  [&]<int... k>(std::integer_sequence<int, k...>) {
    ((a = _mm512_and_si512(a, window<k + 7>(x0, x1)), any[k] = _mm512_or_si512(any[k], a)), ...);
  }(std::make_integer_sequence<int, 3>{});
  _mm512_storeu_si512(deep, a);
  return _mm512_test_epi64_mask(a, a);
}

inline void count(const uint8_t* padded, Counts& out) {
  // vpshufb reverses the bytes of each 64-bit lane: little-endian loads become sequence words.
  const __m512i to_sequence_words = _mm512_set_epi64(0x08090a0b0c0d0e0f, 0x0001020304050607, 0x08090a0b0c0d0e0f,
                                                     0x0001020304050607, 0x08090a0b0c0d0e0f, 0x0001020304050607,
                                                     0x08090a0b0c0d0e0f, 0x0001020304050607);
  __m512i ones[8], zeros[8], any_ones[3], any_zeros[3];
  for (int k = 0; k < 8; ++k) ones[k] = zeros[k] = _mm512_setzero_si512();
  for (int k = 0; k < 3; ++k) any_ones[k] = any_zeros[k] = _mm512_setzero_si512();
  for (size_t i = 0; i < kVectorWords / 8; ++i) {
    const __m512i x0 = _mm512_shuffle_epi8(_mm512_loadu_si512(padded + 64 * i), to_sequence_words);
    const __m512i x1 = _mm512_shuffle_epi8(_mm512_loadu_si512(padded + 64 * i + 8), to_sequence_words);
    const __m512i z0 = _mm512_andnot_si512(x0, _mm512_loadu_si512(kValidBits.data() + 8 * i));
    const __m512i z1 = _mm512_andnot_si512(x1, _mm512_loadu_si512(kValidBits.data() + 8 * i + 1));
    out.nonzero_deep[1][i] = windows_of(x0, x1, ones, any_ones, out.deep[1].data() + 8 * i);
    out.nonzero_deep[0][i] = windows_of(z0, z1, zeros, any_zeros, out.deep[0].data() + 8 * i);
  }
  out.windows[0][0] = out.windows[1][0] = 0;
  for (int k = 1; k < 8; ++k) {
    out.windows[1][k] = static_cast<uint32_t>(_mm512_reduce_add_epi64(ones[k]));
    out.windows[0][k] = static_cast<uint32_t>(_mm512_reduce_add_epi64(zeros[k]));
  }
  for (size_t k = 0; k < kDeep - 7; ++k) {
    out.longer[1][k] = _mm512_test_epi64_mask(any_ones[k], any_ones[k]) != 0;
    out.longer[0][k] = _mm512_test_epi64_mask(any_zeros[k], any_zeros[k]) != 0;
  }

  // Nibbles: a byte counter per lane and value, +1 where the nibble equals it (at most 80
  // per lane), summed across lanes by vpsadbw at the end.
  __m512i counters[16];
  for (auto& c : counters) c = _mm512_setzero_si512();
  const __m512i low4 = _mm512_set1_epi8(0x0f), one = _mm512_set1_epi8(1);
  for (size_t i = 0; i < kVectorWords / 8; ++i) {
    const __m512i bytes = _mm512_loadu_si512(padded + 64 * i);
    const __m512i lo = _mm512_and_si512(bytes, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4);
    for (int v = 0; v < 16; ++v) {
      const __m512i value = _mm512_set1_epi8(static_cast<char>(v));
      counters[v] = _mm512_mask_add_epi8(counters[v], _mm512_cmpeq_epi8_mask(lo, value), counters[v], one);
      counters[v] = _mm512_mask_add_epi8(counters[v], _mm512_cmpeq_epi8_mask(hi, value), counters[v], one);
    }
  }
  for (int v = 0; v < 16; ++v)
    out.nibbles[static_cast<size_t>(v)] =
        static_cast<uint32_t>(_mm512_reduce_add_epi64(_mm512_sad_epu8(counters[v], _mm512_setzero_si512())));
  out.nibbles[0] -= static_cast<uint32_t>(kPaddingNibbles);
}
