// The FFT behind the spectral test (fft.cc): the plan, the mixed-radix transform and the
// real-input split, compiled twice from this one text: once for any x86-64 (fft.cc) and
// once with AVX2 + FMA enabled (fft_fma.cc, picked at run time when the CPU has both).
// Everything here is in an anonymous namespace, so each translation unit has its own copy
// and no template instantiation is shared (and so possibly mis-targeted) between them.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>
#include "sts/bitwords.h"
#include "sts/sts.h"

// The 32-byte vectors below are returned by value between functions of this file only
// (internal linkage, inlined), so the ABI warning GCC gives for them without AVX does not
// apply (arguments go by reference, which keeps GCC's ABI note quiet). GCC reports it at
// the end of the translation unit, so it stays off to there (the two files that include
// this header include nothing after it that could be affected).
#if defined(__GNUC__)  // GCC, and Clang, which takes the same pragma
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace qe::sts {
namespace {

// A complex value: one (T = double, Cx) or four side by side (T = V4, Cx4: real parts in
// one vector, imaginary parts in another). The transform keeps its data that way too
// (real parts in one array, imaginary parts in another), so four butterflies run side by
// side on whole vectors. V4 is GCC's and Clang's vector extension: one AVX register in
// the AVX2 + FMA build, two SSE2 (or NEON) registers in the portable one.
typedef double V4 __attribute__((vector_size(32)));

template <typename T>
struct Complex {
  T re;
  T im;
};
using Cx = Complex<double>;
using Cx4 = Complex<V4>;

template <typename T>
inline Complex<T> operator+(const Complex<T>& a, const Complex<T>& b) { return {a.re + b.re, a.im + b.im}; }
template <typename T>
inline Complex<T> operator-(const Complex<T>& a, const Complex<T>& b) { return {a.re - b.re, a.im - b.im}; }
template <typename T>
inline Complex<T> operator*(const Complex<T>& a, const Complex<T>& b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <typename T>
inline Complex<T> operator*(double s, const Complex<T>& a) { return {s * a.re, s * a.im}; }
template <typename T>
inline Complex<T> conj(const Complex<T>& a) { return {a.re, -a.im}; }
template <typename T>
inline Complex<T> times_minus_i(const Complex<T>& a) { return {a.im, -a.re}; }  // -i * a

inline V4 reversed(const V4& v) { return V4{v[3], v[2], v[1], v[0]}; }
inline Cx4 broadcast(Cx a) { return {V4{a.re, a.re, a.re, a.re}, V4{a.im, a.im, a.im, a.im}}; }

// One complex value, or four consecutive ones, at index i of split arrays (re[], im[]).
inline void load(const double* re, const double* im, size_t i, Cx& v) { v = {re[i], im[i]}; }
inline void store(double* re, double* im, size_t i, Cx v) { re[i] = v.re, im[i] = v.im; }
inline void load(const double* re, const double* im, size_t i, Cx4& v) {
  std::memcpy(&v.re, re + i, sizeof(V4));
  std::memcpy(&v.im, im + i, sizeof(V4));
}
inline void store(double* re, double* im, size_t i, const Cx4& v) {
  std::memcpy(re + i, &v.re, sizeof(V4));
  std::memcpy(im + i, &v.im, sizeof(V4));
}

// exp(-2 pi i t / M) for t in [0, M), as hi[t >> shift] * lo[t & mask] (the block size a
// power of two near sqrt(M), so a look-up is two loads and one complex product).
class RootTable {
 public:
  explicit RootTable(size_t M) : M_(M) {
    while ((size_t{1} << (2 * shift_)) < M) ++shift_;
    const size_t block = size_t{1} << shift_;
    lo_re_.resize(block);
    lo_im_.resize(block);
    hi_.resize((M >> shift_) + 1);
    for (size_t i = 0; i < block; ++i) {
      const Cx w = direct(i);
      lo_re_[i] = w.re, lo_im_[i] = w.im;
    }
    for (size_t j = 0; j < hi_.size(); ++j) hi_[j] = direct(j << shift_);
  }
  Cx operator()(size_t t) const {
    const size_t i = t & ((size_t{1} << shift_) - 1);
    return hi_[t >> shift_] * Cx{lo_re_[i], lo_im_[i]};
  }
  // Roots t .. t + 3, for t a multiple of 4: one block, so one hi value, when blocks hold 4+.
  Cx4 four(size_t t) const {
    if (shift_ < 2) return {V4{(*this)(t).re, (*this)(t + 1).re, (*this)(t + 2).re, (*this)(t + 3).re},
                            V4{(*this)(t).im, (*this)(t + 1).im, (*this)(t + 2).im, (*this)(t + 3).im}};
    Cx4 lo;
    load(lo_re_.data(), lo_im_.data(), t & ((size_t{1} << shift_) - 1), lo);
    return broadcast(hi_[t >> shift_]) * lo;
  }

 private:
  Cx direct(size_t t) const {
    const double angle = -2.0 * std::numbers::pi * (static_cast<double>(t % M_) / static_cast<double>(M_));
    return {std::cos(angle), std::sin(angle)};
  }
  size_t M_;
  unsigned shift_ = 0;
  std::vector<double> lo_re_;
  std::vector<double> lo_im_;
  std::vector<Cx> hi_;
};

// In-place DFTs of 2, 3, 4 and 5 values (forward sign), for one complex value (Cx) or
// four side by side (Cx4), on named values rather than an array so they stay in
// registers (an array filled per component and read back as a whole stalls on store
// forwarding).
template <typename C>
inline void butterfly2(C& a0, C& a1) {
  const C t = a0 - a1;
  a0 = a0 + a1;
  a1 = t;
}

template <typename C>
inline void butterfly3(C& a0, C& a1, C& a2) {
  constexpr double h = 0.86602540378443864676372317075294;  // sin(2 pi / 3)
  const C t = a1 + a2;
  const C c = a0 - 0.5 * t;
  const C d = times_minus_i(h * (a1 - a2));
  a0 = a0 + t;
  a1 = c + d;
  a2 = c - d;
}

template <typename C>
inline void butterfly4(C& a0, C& a1, C& a2, C& a3) {
  const C s02 = a0 + a2;
  const C d02 = a0 - a2;
  const C s13 = a1 + a3;
  const C d13 = times_minus_i(a1 - a3);
  a0 = s02 + s13;
  a1 = d02 + d13;
  a2 = s02 - s13;
  a3 = d02 - d13;
}

template <typename C>
inline void butterfly5(C& a0, C& a1, C& a2, C& a3, C& a4) {
  constexpr double c1 = 0.30901699437494742410229341718282;   // cos(2 pi / 5)
  constexpr double c2 = -0.80901699437494742410229341718282;  // cos(4 pi / 5)
  constexpr double s1 = 0.95105651629515357211643933337938;   // sin(2 pi / 5)
  constexpr double s2 = 0.58778525229247312916870595463907;   // sin(4 pi / 5)
  const C t1 = a1 + a4;
  const C t2 = a2 + a3;
  const C d1 = a1 - a4;
  const C d2 = a2 - a3;
  const C r1 = a0 + c1 * t1 + c2 * t2;
  const C r2 = a0 + c2 * t1 + c1 * t2;
  const C i1 = times_minus_i(s1 * d1 + s2 * d2);
  const C i2 = times_minus_i(s2 * d1 - s1 * d2);
  a0 = a0 + t1 + t2;
  a1 = r1 + i1;
  a2 = r2 + i2;
  a3 = r2 - i2;
  a4 = r1 - i1;
}

constexpr size_t kMaxGenericRadix = 31;

void butterfly_generic(Cx* a, size_t p, const Cx* w) {
  Cx b[kMaxGenericRadix];
  for (size_t k = 0; k < p; ++k) {
    Cx sum = a[0];
    for (size_t r = 1; r < p; ++r) sum = sum + a[r] * w[(r * k) % p];
    b[k] = sum;
  }
  std::copy(b, b + p, a);
}

// Inputs of the transform, read element by element by the leaves of the recursion.
struct ArraySource {
  const double* re;
  const double* im;
  Cx operator()(size_t i) const { return {re[i], im[i]}; }
};

// x_i = (2 bit_2i - 1) + i (2 bit_2i+1 - 1): the even-n packing, read straight from the
// 64-bit words. The leaves gather with large strides, and the bit array (n/8 bytes)
// stays in cache where an array of complex values (16 n/2 bytes) would not.
struct BitPairSource {
  const uint64_t* words;
  static constexpr Cx kValues[4] = {{-1, -1}, {-1, 1}, {1, -1}, {1, 1}};

  Cx operator()(size_t i) const { return kValues[(words[i >> 5] >> (62 - 2 * (i & 31))) & 3]; }
};

// The same even-n packing, for a transform whose leaves have radix 4 (N a multiple of 4).
// Leaf j (j < N/4) takes x_j, x_{j+N/4}, x_{j+N/2}, x_{j+3N/4}: four inputs spread over
// the whole bit array, four cache misses a leaf. So one sequential pass first gathers
// their four 2-bit codes into byte j of `quads`, and a leaf then reads that one byte and
// copies its DFT from a table: the 4^4 DFTs of four values in {+-1 +-i}, small integers
// computed exactly by the same butterfly.
struct QuadCodeSource {
  struct Leaf4 {
    double re[4];
    double im[4];
  };

  const uint8_t* quads;
  size_t quarter;  // N / 4
  const Leaf4* table;

  Cx operator()(size_t i) const {
    const size_t q = i / quarter;
    return BitPairSource::kValues[(quads[i - q * quarter] >> (2 * q)) & 3];
  }
  void leaf4(size_t offset, double* re, double* im) const {
    const Leaf4& t = table[quads[offset]];
    std::memcpy(re, t.re, sizeof t.re);
    std::memcpy(im, t.im, sizeof t.im);
  }

  static const Leaf4* leaf4_table() {
    static const std::vector<Leaf4> dfts = [] {
      std::vector<Leaf4> t(256);
      for (unsigned code = 0; code < 256; ++code) {
        Cx a0 = BitPairSource::kValues[code & 3], a1 = BitPairSource::kValues[(code >> 2) & 3];
        Cx a2 = BitPairSource::kValues[(code >> 4) & 3], a3 = BitPairSource::kValues[code >> 6];
        butterfly4(a0, a1, a2, a3);
        t[code] = {{a0.re, a1.re, a2.re, a3.re}, {a0.im, a1.im, a2.im, a3.im}};
      }
      return t;
    }();
    return dfts.data();
  }

  // quads[j] = code(j) | code(j + N/4) << 2 | code(j + N/2) << 4 | code(j + 3N/4) << 6, for
  // j < N/4, where code(i) is x_i's two bits (bits 2i and 2i + 1 of the sequence).
  static void gather(const Bits& bits, size_t N, uint8_t* quads) {
    // spread[b]: byte b's four codes (first code in the top bits) one per byte, first
    // code in the lowest byte, each in its byte's two low bits.
    static const std::array<uint32_t, 256> spread = [] {
      std::array<uint32_t, 256> t{};
      for (unsigned b = 0; b < 256; ++b) {
        for (unsigned k = 0; k < 4; ++k) t[b] |= ((b >> (6 - 2 * k)) & 3u) << (8 * k);
      }
      return t;
    }();
    const size_t quarter = N / 4;
    const uint64_t* w = bits.words.data();
    const size_t nwords = bits.words.size();
    size_t j = 0;
    for (; j + 32 <= quarter; j += 32) {  // 32 codes = 64 bits from each quarter
      uint64_t chunk[4];
      for (size_t q = 0; q < 4; ++q) chunk[q] = detail::bits_at(w, nwords, 2 * (j + q * quarter));
      for (unsigned byte = 0; byte < 8; ++byte) {
        const unsigned shift = 56 - 8 * byte;
        const uint32_t four = spread[(chunk[0] >> shift) & 0xff] | spread[(chunk[1] >> shift) & 0xff] << 2 |
                              spread[(chunk[2] >> shift) & 0xff] << 4 | spread[(chunk[3] >> shift) & 0xff] << 6;
        for (unsigned k = 0; k < 4; ++k) quads[j + 4 * byte + k] = static_cast<uint8_t>(four >> (8 * k));
      }
    }
    const auto code = [w](size_t i) { return static_cast<unsigned>(w[i >> 5] >> (62 - 2 * (i & 31))) & 3u; };
    for (; j < quarter; ++j) {
      quads[j] = static_cast<uint8_t>(code(j) | code(j + quarter) << 2 | code(j + 2 * quarter) << 4 |
                                      code(j + 3 * quarter) << 6);
    }
  }
};

// x_i = 2 bit_i - 1 as a complex value with zero imaginary part (odd n).
struct BitSource {
  const uint64_t* words;
  Cx operator()(size_t i) const { return {((words[i >> 6] >> (63 - (i & 63))) & 1) ? 1.0 : -1.0, 0.0}; }
};

// Forward complex DFT of a fixed length N: X_k = sum_j x_j exp(-2 pi i jk / N), into
// split arrays (real parts, imaginary parts).
//
// Recursive decimation in time, depth first: a length-L problem with radix p first
// transforms its p decimated subsequences (stride * p apart in the input) into p
// consecutive output blocks of length L/p, then combines them in place with twiddles
// exp(-2 pi i rk / L), four columns k at a time. Depth first keeps the small levels inside
// the caches, so only the top levels stream through memory. The radices run large to
// small from the leaves up (the 4s and 2s nearest the leaves), so every level above the
// leaves has a multiple of 4 columns whenever N is a multiple of 16. Lengths with a prime
// factor above 31 use Bluestein.
class ComplexFft {
 public:
  explicit ComplexFft(size_t N) : N_(N), roots_(N) {
    size_t rest = N;
    std::vector<size_t> radices;  // leaf first
    while (rest % 4 == 0) radices.push_back(4), rest /= 4;
    for (size_t p = 2; p <= kMaxGenericRadix; ++p) {
      while (rest % p == 0) radices.push_back(p), rest /= p;
    }
    if (rest != 1) {
      setup_bluestein();
      return;
    }
    if (radices.empty()) radices.push_back(1);  // N = 1
    std::reverse(radices.begin(), radices.end());  // the whole length first
    // Levels from the whole length down. The small levels (which run many times, from
    // cache) store all p - 1 twiddles of each column; the large ones store only the first
    // and square it up, so their table streams a sixth of what the data does.
    const RootTable& roots = roots_;
    size_t len = N;
    for (size_t p : radices) {
      const size_t m = len / p;
      const Level level{len, p, m, N / len, tw_re_.size(), m <= kMaxFullTableM};
      const size_t stored = level.full_table ? p - 1 : std::min<size_t>(p - 1, 1);
      for (size_t r = 1; r <= stored; ++r) {
        for (size_t k = 0; k < level.m; ++k) {
          const Cx w = roots(level.step * r * k);
          tw_re_.push_back(w.re);
          tw_im_.push_back(w.im);
        }
      }
      levels_.push_back(level);
      len /= p;
      if (p > 5 && generic_w_[p].empty()) {
        for (size_t k = 0; k < p; ++k) generic_w_[p].push_back(roots((N / p) * k));
      }
    }
  }

  // The radix of the leaves (1 for N = 1).
  size_t leaf_radix() const { return bluestein_ ? 0 : levels_.back().p; }

  // (re, im)[0..N) = DFT(x), where x_j = in(j) for a source such as ArraySource.
  template <typename Source>
  void forward(const Source& in, double* re, double* im) const {
    if (bluestein_) {
      bluestein(in, re, im);
      return;
    }
    recurse(in, 0, 1, re, im, 0);
  }

 private:
  static constexpr size_t kMaxFullTableM = 8192;

  struct Level {
    size_t len;       // transform length at this level
    size_t p;         // radix
    size_t m;         // len / p
    size_t step;      // N / len: exp(-2 pi i t / len) = roots_(step * t)
    size_t tw_at;     // twiddle r of column k, exp(-2 pi i rk / len), at tw_at + (r - 1) m + k
    bool full_table;  // every r stored, or only r = 1 (the rest are its powers)
  };

  // The twiddles of column k (or of the four columns k .. k + 3), w1 .. w[P-1].
  template <size_t P, typename C>
  void load_twiddles(const Level& L, size_t k, C& w1, C& w2, C& w3, C& w4) const {
    const double* re = tw_re_.data() + L.tw_at;
    const double* im = tw_im_.data() + L.tw_at;
    load(re, im, k, w1);
    if (L.full_table) {
      if constexpr (P > 2) load(re + L.m, im + L.m, k, w2);
      if constexpr (P > 3) load(re + 2 * L.m, im + 2 * L.m, k, w3);
      if constexpr (P > 4) load(re + 3 * L.m, im + 3 * L.m, k, w4);
    } else {
      if constexpr (P > 2) w2 = w1 * w1;
      if constexpr (P > 3) w3 = w2 * w1;
      if constexpr (P > 4) w4 = w2 * w2;
    }
  }

  // Transform of the subsequence in(offset + j * stride), j < levels_[depth].len, into
  // (re, im)[0 .. len).
  template <typename Source>
  void recurse(const Source& in, size_t offset, size_t stride, double* re, double* im, size_t depth) const {
    const Level& L = levels_[depth];
    if (L.m == 1) {
      leaf_level(L.p, in, offset, stride, re, im);
      return;
    }
    // The level above the leaves runs its leaves itself: one call per leaf, which is most
    // of the calls, costs more than a small leaf's own work.
    const size_t child_p = levels_[depth + 1].p;
    const bool children_are_leaves = levels_[depth + 1].m == 1;
    for (size_t r = 0; r < L.p; ++r) {
      if (children_are_leaves) {
        leaf_level(child_p, in, offset + r * stride, stride * L.p, re + r * L.m, im + r * L.m);
      } else {
        recurse(in, offset + r * stride, stride * L.p, re + r * L.m, im + r * L.m, depth + 1);
      }
    }
    switch (L.p) {
      case 2: combine<2>(L, re, im); break;
      case 3: combine<3>(L, re, im); break;
      case 4: combine<4>(L, re, im); break;
      case 5: combine<5>(L, re, im); break;
      default: combine_generic(L, re, im); break;
    }
  }

  // One leaf: a butterfly of radix p straight from the source.
  template <typename Source>
  void leaf_level(size_t p, const Source& in, size_t offset, size_t stride, double* re, double* im) const {
    switch (p) {
      case 1: store(re, im, 0, in(offset)); break;
      case 2: leaf<2>(in, offset, stride, re, im); break;
      case 3: leaf<3>(in, offset, stride, re, im); break;
      case 4:
        if constexpr (requires { in.leaf4(offset, re, im); }) {
          in.leaf4(offset, re, im);  // the plan's leaf stride is N/4, the source's quarter
        } else {
          leaf<4>(in, offset, stride, re, im);
        }
        break;
      case 5: leaf<5>(in, offset, stride, re, im); break;
      default: {
        Cx a[kMaxGenericRadix];
        for (size_t r = 0; r < p; ++r) a[r] = in(offset + r * stride);
        butterfly_generic(a, p, generic_w_[p].data());
        for (size_t r = 0; r < p; ++r) store(re, im, r, a[r]);
      }
    }
  }

  template <size_t P, typename Source>
  static void leaf(const Source& in, size_t offset, size_t stride, double* re, double* im) {
    Cx a0 = in(offset);
    Cx a1 = in(offset + stride);
    if constexpr (P == 2) {
      butterfly2(a0, a1);
    } else if constexpr (P == 3) {
      Cx a2 = in(offset + 2 * stride);
      butterfly3(a0, a1, a2);
      store(re, im, 2, a2);
    } else if constexpr (P == 4) {
      Cx a2 = in(offset + 2 * stride);
      Cx a3 = in(offset + 3 * stride);
      butterfly4(a0, a1, a2, a3);
      store(re, im, 2, a2), store(re, im, 3, a3);
    } else {
      static_assert(P == 5);
      Cx a2 = in(offset + 2 * stride);
      Cx a3 = in(offset + 3 * stride);
      Cx a4 = in(offset + 4 * stride);
      butterfly5(a0, a1, a2, a3, a4);
      store(re, im, 2, a2), store(re, im, 3, a3), store(re, im, 4, a4);
    }
    store(re, im, 0, a0), store(re, im, 1, a1);
  }

  // One level with radix P: the P sub-results already in (re, im) (blocks of m) are
  // twiddled and combined in place, four columns at a time, then one at a time for the
  // last m mod 4.
  template <size_t P>
  void combine(const Level& L, double* re, double* im) const {
    size_t k = 0;
    for (; k + 4 <= L.m; k += 4) combine_columns<P, Cx4>(L, re, im, k);
    for (; k < L.m; ++k) combine_columns<P, Cx>(L, re, im, k);
  }

  template <size_t P, typename C>
  void combine_columns(const Level& L, double* re, double* im, size_t k) const {
    const size_t m = L.m;
    C w1, w2, w3, w4;
    load_twiddles<P>(L, k, w1, w2, w3, w4);
    C a0, a1, a2, a3, a4;
    load(re, im, k, a0);
    load(re, im, k + m, a1);
    a1 = a1 * w1;
    if constexpr (P == 2) {
      butterfly2(a0, a1);
    } else if constexpr (P == 3) {
      load(re, im, k + 2 * m, a2);
      a2 = a2 * w2;
      butterfly3(a0, a1, a2);
      store(re, im, k + 2 * m, a2);
    } else if constexpr (P == 4) {
      load(re, im, k + 2 * m, a2);
      load(re, im, k + 3 * m, a3);
      a2 = a2 * w2;
      a3 = a3 * w3;
      butterfly4(a0, a1, a2, a3);
      store(re, im, k + 2 * m, a2), store(re, im, k + 3 * m, a3);
    } else {
      static_assert(P == 5);
      load(re, im, k + 2 * m, a2);
      load(re, im, k + 3 * m, a3);
      load(re, im, k + 4 * m, a4);
      a2 = a2 * w2;
      a3 = a3 * w3;
      a4 = a4 * w4;
      butterfly5(a0, a1, a2, a3, a4);
      store(re, im, k + 2 * m, a2), store(re, im, k + 3 * m, a3), store(re, im, k + 4 * m, a4);
    }
    store(re, im, k, a0), store(re, im, k + m, a1);
  }

  void combine_generic(const Level& L, double* re, double* im) const {
    const size_t p = L.p;
    const Cx* w = generic_w_[p].data();
    Cx a[kMaxGenericRadix];
    Cx tw[kMaxGenericRadix];
    for (size_t k = 0; k < L.m; ++k) {
      load(tw_re_.data() + L.tw_at, tw_im_.data() + L.tw_at, k, tw[1]);
      for (size_t r = 2; r < p; ++r) {
        if (L.full_table) {
          load(tw_re_.data() + L.tw_at + (r - 1) * L.m, tw_im_.data() + L.tw_at + (r - 1) * L.m, k, tw[r]);
        } else {
          tw[r] = tw[r - 1] * tw[1];
        }
      }
      load(re, im, k, a[0]);
      for (size_t r = 1; r < p; ++r) {
        load(re, im, k + r * L.m, a[r]);
        a[r] = a[r] * tw[r];
      }
      butterfly_generic(a, p, w);
      for (size_t q = 0; q < p; ++q) store(re, im, k + q * L.m, a[q]);
    }
  }

  // Bluestein: jk = (j^2 + k^2 - (k-j)^2) / 2 turns the DFT into a cyclic convolution
  // of length M >= 2N - 1 (a power of two) with the chirp exp(-pi i j^2 / N).
  void setup_bluestein() {
    size_t M = 1;
    while (M < 2 * N_ - 1) M *= 2;
    inner_ = std::make_unique<ComplexFft>(M);
    const RootTable half_turns(2 * N_);  // exp(-pi i t / N)
    chirp_.resize(N_);
    size_t square = 0;  // j^2 mod 2N, stepped by (j+1)^2 - j^2 = 2j + 1 to avoid overflow
    for (size_t j = 0; j < N_; ++j) {
      chirp_[j] = half_turns(square);
      square = (square + 2 * j + 1) % (2 * N_);
    }
    std::vector<double> b_re(M, 0.0), b_im(M, 0.0);
    const auto put = [&](size_t i, Cx v) { b_re[i] = v.re, b_im[i] = v.im; };
    put(0, conj(chirp_[0]));
    for (size_t j = 1; j < N_; ++j) put(j, conj(chirp_[j])), put(M - j, conj(chirp_[j]));
    kernel_re_.resize(M);
    kernel_im_.resize(M);
    inner_->forward(ArraySource{b_re.data(), b_im.data()}, kernel_re_.data(), kernel_im_.data());
    bluestein_ = true;
  }

  template <typename Source>
  void bluestein(const Source& in, double* re, double* im) const {
    const size_t M = inner_->N_;
    // Work buffers live with the plan (each thread has its own plan): allocating 4 x 8 M
    // bytes per call would cost more in page faults than the transforms.
    for (std::vector<double>* v : {&work_re_, &work_im_, &freq_re_, &freq_im_}) v->assign(M, 0.0);
    for (size_t j = 0; j < N_; ++j) store(work_re_.data(), work_im_.data(), j, in(j) * chirp_[j]);
    inner_->forward(ArraySource{work_re_.data(), work_im_.data()}, freq_re_.data(), freq_im_.data());
    // Inverse transform as conj(forward(conj(.))) / M.
    for (size_t k = 0; k < M; ++k) {
      const Cx f{freq_re_[k], freq_im_[k]};
      store(freq_re_.data(), freq_im_.data(), k, conj(f * Cx{kernel_re_[k], kernel_im_[k]}));
    }
    inner_->forward(ArraySource{freq_re_.data(), freq_im_.data()}, work_re_.data(), work_im_.data());
    const double scale = 1.0 / static_cast<double>(M);
    for (size_t k = 0; k < N_; ++k) {
      store(re, im, k, chirp_[k] * (scale * conj(Cx{work_re_[k], work_im_[k]})));
    }
  }

  size_t N_;
  RootTable roots_;
  std::vector<Level> levels_;
  std::vector<double> tw_re_;
  std::vector<double> tw_im_;
  std::vector<Cx> generic_w_[kMaxGenericRadix + 1];
  bool bluestein_ = false;
  std::unique_ptr<ComplexFft> inner_;
  std::vector<Cx> chirp_;
  std::vector<double> kernel_re_;
  std::vector<double> kernel_im_;
  mutable std::vector<double> work_re_;
  mutable std::vector<double> work_im_;
  mutable std::vector<double> freq_re_;
  mutable std::vector<double> freq_im_;
};

// Per-thread workspace for the last length seen: a battery tests many sequences of the
// same n, so the plan and the buffers are built once per thread.
struct Workspace {
  size_t n = 0;
  std::unique_ptr<ComplexFft> fft;
  std::unique_ptr<RootTable> split_roots;  // exp(-2 pi i k / n), for the even-n split step
  std::vector<double> re;
  std::vector<double> im;
  std::vector<uint8_t> quads;  // QuadCodeSource's bytes, when the leaves have radix 4
};

Workspace& workspace_for(size_t n) {
  thread_local Workspace ws;
  if (ws.n != n || !ws.fft) {
    const bool even = n % 2 == 0;
    const size_t N = even ? n / 2 : n;
    ws.fft = std::make_unique<ComplexFft>(N);
    ws.split_roots = even ? std::make_unique<RootTable>(n) : nullptr;
    ws.re.assign(N, 0.0);
    ws.im.assign(N, 0.0);
    ws.quads.assign(even && ws.fft->leaf_radix() == 4 ? N / 4 : 0, 0);
    ws.n = n;
  }
  return ws;
}

// Where |F_k|^2 goes: an array, or a count of the values below a bound (the spectral
// test needs only that count, so it need not write 4 MB and read it back).
struct ArraySink {
  double* out;
  void put(size_t k, double m2) { out[k] = m2; }
  void put4(size_t k, const V4& m2) { std::memcpy(out + k, &m2, sizeof m2); }  // k .. k + 3
};

struct CountBelowSink {  // index 0 is left out: the caller takes it exactly
  double bound;
  size_t count = 0;
  typedef int64_t I4 __attribute__((vector_size(32)));
  I4 lanes{0, 0, 0, 0};  // minus the count so far, per lane (a true comparison is -1)
  void put(size_t k, double m2) { count += k != 0 && m2 < bound; }
  void put4(size_t, const V4& m2) { lanes += (m2 < bound); }
  size_t total() const { return count + static_cast<size_t>(-(lanes[0] + lanes[1] + lanes[2] + lanes[3])); }
};

// The even-n split step for the columns k (and N - k) of one Cx, or of four Cx4 side by
// side (k .. k + 3 and N - k - 3 .. N - k, the latter loaded and put lane-reversed).
//
// E_k = (Z_k + conj Z_{N-k}) / 2 and O_k = (Z_k - conj Z_{N-k}) / 2i are the transforms of
// the even and odd samples; F_k = E_k + w^k O_k, and, because E and O are transforms of
// real data and w^(N-k) = -conj(w^k), F_{N-k} = conj(E_k - w^k O_k). So one twiddle serves
// k and N - k. At k = N/2 (N even) both name one value: only the second is put.
// |F_k|^2 and |F_{N-k}|^2 from Z_k, conj Z_{N-k} and w^k, for one k or four.
template <typename C, typename T = decltype(C::re)>
void split_moduli(const C& zk, const C& zc, const C& w, T& f2, T& g2) {
  const C even_part = 0.5 * (zk + zc);
  const C odd_part = times_minus_i(0.5 * (zk - zc));
  const C t = w * odd_part;
  const C f = even_part + t;
  const C g = even_part - t;
  f2 = f.re * f.re + f.im * f.im;
  g2 = g.re * g.re + g.im * g.im;
}

template <typename Sink>
void split_one(const double* Zr, const double* Zi, size_t N, size_t k, Cx w, Sink& sink) {
  Cx zk, zc;
  load(Zr, Zi, k, zk);
  load(Zr, Zi, N - k, zc);
  double f2, g2;
  split_moduli(zk, conj(zc), w, f2, g2);
  if (2 * k != N) sink.put(k, f2);
  sink.put(N - k, g2);
}

template <typename Sink>
void split_four(const double* Zr, const double* Zi, size_t N, size_t k, const Cx4& w, Sink& sink) {
  Cx4 zk, zc;
  load(Zr, Zi, k, zk);
  load(Zr, Zi, N - k - 3, zc);
  V4 f2, g2;
  split_moduli(zk, conj(Cx4{reversed(zc.re), reversed(zc.im)}), w, f2, g2);
  sink.put4(k, f2);
  sink.put4(N - k - 3, reversed(g2));
}

// |F_k|^2 for k < floor(n/2), each into the sink once.
template <typename Sink>
void half_squared_moduli(const Bits& bits, Sink& sink) {
  const size_t n = bits.n;
  const size_t half = n / 2;
  if (n < 2) return;
  Workspace& ws = workspace_for(n);
  const uint64_t* w = bits.words.data();
  double* re = ws.re.data();
  double* im = ws.im.data();
  if (n % 2 == 0) {
    const size_t N = half;
    if (!ws.quads.empty()) {
      QuadCodeSource::gather(bits, N, ws.quads.data());
      ws.fft->forward(QuadCodeSource{ws.quads.data(), N / 4, QuadCodeSource::leaf4_table()}, re, im);
    } else {
      ws.fft->forward(BitPairSource{w}, re, im);
    }
    const RootTable& roots = *ws.split_roots;
    sink.put(0, (re[0] + im[0]) * (re[0] + im[0]));  // F_0 = E_0 + O_0 = re + im
    // Columns 1 .. N/2: singly up to the first multiple of 4 (where the root table's
    // four-wide look-up starts), then four at a time while no lane reaches N/2, then
    // singly again.
    size_t k = 1;
    for (; k <= N / 2 && k < 4; ++k) split_one(re, im, N, k, roots(k), sink);
    for (; 2 * (k + 3) < N; k += 4) split_four(re, im, N, k, roots.four(k), sink);
    for (; k <= N / 2; ++k) split_one(re, im, N, k, roots(k), sink);
  } else {
    ws.fft->forward(BitSource{w}, re, im);
    for (size_t k = 0; k < half; ++k) sink.put(k, re[k] * re[k] + im[k] * im[k]);
  }
}

// |F_k|^2 for k < floor(n/2) into out[] (which must hold that many values).
void half_squared_moduli_into(const Bits& bits, double* out) {
  ArraySink sink{out};
  half_squared_moduli(bits, sink);
}

// How many k in 1 .. floor(n/2) - 1 have |F_k|^2 < bound.
size_t count_squared_moduli_below(const Bits& bits, double bound) {
  CountBelowSink sink{bound};
  half_squared_moduli(bits, sink);
  return sink.total();
}

}  // namespace
}  // namespace qe::sts
