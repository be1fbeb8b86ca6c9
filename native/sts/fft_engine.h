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
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>
#include "sts/bitwords.h"
#include "sts/sts.h"

namespace qe::sts {
namespace {

struct Cx {
  double re;
  double im;
};
inline Cx operator+(Cx a, Cx b) { return {a.re + b.re, a.im + b.im}; }
inline Cx operator-(Cx a, Cx b) { return {a.re - b.re, a.im - b.im}; }
inline Cx operator*(Cx a, Cx b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
inline Cx operator*(double s, Cx a) { return {s * a.re, s * a.im}; }
inline Cx conj(Cx a) { return {a.re, -a.im}; }
inline Cx times_minus_i(Cx a) { return {a.im, -a.re}; }  // -i * a

// exp(-2 pi i t / M) for t in [0, M), as hi[t >> shift] * lo[t & mask] (the block size a
// power of two near sqrt(M), so a look-up is two loads and one complex product).
class RootTable {
 public:
  explicit RootTable(size_t M) : M_(M) {
    while ((size_t{1} << (2 * shift_)) < M) ++shift_;
    const size_t block = size_t{1} << shift_;
    lo_.resize(block);
    hi_.resize((M >> shift_) + 1);
    for (size_t i = 0; i < lo_.size(); ++i) lo_[i] = direct(i);
    for (size_t j = 0; j < hi_.size(); ++j) hi_[j] = direct(j << shift_);
  }
  Cx operator()(size_t t) const { return hi_[t >> shift_] * lo_[t & ((size_t{1} << shift_) - 1)]; }

 private:
  Cx direct(size_t t) const {
    const double angle = -2.0 * std::numbers::pi * (static_cast<double>(t % M_) / static_cast<double>(M_));
    return {std::cos(angle), std::sin(angle)};
  }
  size_t M_;
  unsigned shift_ = 0;
  std::vector<Cx> lo_;
  std::vector<Cx> hi_;
};

// In-place DFTs of 2, 3, 4 and 5 values (forward sign), on named values rather than an
// array so they stay in registers (an array filled per component and read back as a
// whole stalls on store forwarding).
inline void butterfly2(Cx& a0, Cx& a1) {
  const Cx t = a0 - a1;
  a0 = a0 + a1;
  a1 = t;
}

inline void butterfly3(Cx& a0, Cx& a1, Cx& a2) {
  constexpr double h = 0.86602540378443864676372317075294;  // sin(2 pi / 3)
  const Cx t = a1 + a2;
  const Cx c = a0 - 0.5 * t;
  const Cx d = times_minus_i(h * (a1 - a2));
  a0 = a0 + t;
  a1 = c + d;
  a2 = c - d;
}

inline void butterfly4(Cx& a0, Cx& a1, Cx& a2, Cx& a3) {
  const Cx s02 = a0 + a2;
  const Cx d02 = a0 - a2;
  const Cx s13 = a1 + a3;
  const Cx d13 = times_minus_i(a1 - a3);
  a0 = s02 + s13;
  a1 = d02 + d13;
  a2 = s02 - s13;
  a3 = d02 - d13;
}

inline void butterfly5(Cx& a0, Cx& a1, Cx& a2, Cx& a3, Cx& a4) {
  constexpr double c1 = 0.30901699437494742410229341718282;   // cos(2 pi / 5)
  constexpr double c2 = -0.80901699437494742410229341718282;  // cos(4 pi / 5)
  constexpr double s1 = 0.95105651629515357211643933337938;   // sin(2 pi / 5)
  constexpr double s2 = 0.58778525229247312916870595463907;   // sin(4 pi / 5)
  const Cx t1 = a1 + a4;
  const Cx t2 = a2 + a3;
  const Cx d1 = a1 - a4;
  const Cx d2 = a2 - a3;
  const Cx r1 = a0 + c1 * t1 + c2 * t2;
  const Cx r2 = a0 + c2 * t1 + c1 * t2;
  const Cx i1 = times_minus_i(s1 * d1 + s2 * d2);
  const Cx i2 = times_minus_i(s2 * d1 - s1 * d2);
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
  const Cx* p;
  Cx operator()(size_t i) const { return p[i]; }
};

// x_i = (2 bit_2i - 1) + i (2 bit_2i+1 - 1): the even-n packing, read straight from the
// 64-bit words. The leaves gather with large strides, and the bit array (n/8 bytes)
// stays in cache where an array of complex values (16 n/2 bytes) would not.
struct BitPairSource {
  const uint64_t* words;
  Cx operator()(size_t i) const {
    static constexpr Cx kValues[4] = {{-1, -1}, {-1, 1}, {1, -1}, {1, 1}};
    return kValues[(words[i >> 5] >> (62 - 2 * (i & 31))) & 3];
  }
};

// x_i = 2 bit_i - 1 as a complex value with zero imaginary part (odd n).
struct BitSource {
  const uint64_t* words;
  Cx operator()(size_t i) const { return {((words[i >> 6] >> (63 - (i & 63))) & 1) ? 1.0 : -1.0, 0.0}; }
};

// Forward complex DFT of a fixed length N: X_k = sum_j x_j exp(-2 pi i jk / N).
//
// Recursive decimation in time, depth first: a length-L problem with radix p first
// transforms its p decimated subsequences (stride * p apart in the input) into p
// consecutive output blocks of length L/p, then combines them in place with twiddles
// exp(-2 pi i rk / L). Depth first keeps the small levels inside the caches, so only the
// top levels stream through memory. Lengths with a prime factor above 31 use Bluestein.
class ComplexFft {
 public:
  explicit ComplexFft(size_t N) : N_(N), roots_(N) {
    size_t rest = N;
    std::vector<size_t> radices;
    while (rest % 4 == 0) radices.push_back(4), rest /= 4;
    for (size_t p = 2; p <= kMaxGenericRadix; ++p) {
      while (rest % p == 0) radices.push_back(p), rest /= p;
    }
    if (rest != 1) {
      setup_bluestein();
      return;
    }
    if (radices.empty()) radices.push_back(1);  // N = 1
    // Levels from the whole length down. The twiddles of the small levels (which run
    // many times, from cache) are stored; the few large top levels would stream
    // megabytes of table per transform, so they compute theirs from the root table.
    const RootTable& roots = roots_;
    size_t len = N;
    for (size_t p : radices) {
      Level level{len, p, len / p, N / len, kNoTable};
      if (level.m <= kMaxTabulatedM) {
        level.tw_at = twiddles_.size();
        for (size_t k = 0; k < level.m; ++k)
          for (size_t r = 1; r < p; ++r) twiddles_.push_back(roots(level.step * r * k));
      }
      levels_.push_back(level);
      len /= p;
      if (p > 5 && generic_w_[p].empty()) {
        for (size_t k = 0; k < p; ++k) generic_w_[p].push_back(roots((N / p) * k));
      }
    }
  }

  // out[0..N) = DFT(x), where x_j = in(j) for a source such as ArraySource.
  template <typename Source>
  void forward(const Source& in, Cx* out) const {
    if (bluestein_) {
      bluestein(in, out);
      return;
    }
    recurse(in, 0, 1, out, 0);
  }

 private:
  static constexpr size_t kNoTable = ~size_t{0};
  static constexpr size_t kMaxTabulatedM = 8192;

  struct Level {
    size_t len;    // transform length at this level
    size_t p;      // radix
    size_t m;      // len / p
    size_t step;   // N / len: exp(-2 pi i t / len) = roots_(step * t)
    size_t tw_at;  // twiddles exp(-2 pi i rk / len) at tw_at + k (p - 1) + r - 1, or kNoTable
  };

  // The p - 1 twiddles of column k: from the table, or as powers of roots_(step * k).
  void load_twiddles(const Level& L, size_t k, Cx* w) const {
    if (L.tw_at != kNoTable) {
      const Cx* tw = twiddles_.data() + L.tw_at + k * (L.p - 1);
      for (size_t r = 1; r < L.p; ++r) w[r] = tw[r - 1];
    } else {
      w[1] = roots_(L.step * k);
      for (size_t r = 2; r < L.p; ++r) w[r] = w[r - 1] * w[1];
    }
  }

  // Transform of the subsequence in(offset + j * stride), j < levels_[depth].len, into out.
  template <typename Source>
  void recurse(const Source& in, size_t offset, size_t stride, Cx* out, size_t depth) const {
    const Level& L = levels_[depth];
    if (L.m == 1) {  // leaf: one butterfly straight from the source
      switch (L.p) {
        case 1: out[0] = in(offset); break;
        case 2: leaf<2>(in, offset, stride, out); break;
        case 3: leaf<3>(in, offset, stride, out); break;
        case 4: leaf<4>(in, offset, stride, out); break;
        case 5: leaf<5>(in, offset, stride, out); break;
        default: {
          Cx a[kMaxGenericRadix];
          for (size_t r = 0; r < L.p; ++r) a[r] = in(offset + r * stride);
          butterfly_generic(a, L.p, generic_w_[L.p].data());
          std::copy(a, a + L.p, out);
        }
      }
      return;
    }
    for (size_t r = 0; r < L.p; ++r) recurse(in, offset + r * stride, stride * L.p, out + r * L.m, depth + 1);
    switch (L.p) {
      case 2: combine<2>(L, out); break;
      case 3: combine<3>(L, out); break;
      case 4: combine<4>(L, out); break;
      case 5: combine<5>(L, out); break;
      default: combine_generic(L, out); break;
    }
  }

  template <size_t P, typename Source>
  static void leaf(const Source& in, size_t offset, size_t stride, Cx* out) {
    Cx a0 = in(offset);
    Cx a1 = in(offset + stride);
    if constexpr (P == 2) {
      butterfly2(a0, a1);
      out[0] = a0, out[1] = a1;
    } else if constexpr (P == 3) {
      Cx a2 = in(offset + 2 * stride);
      butterfly3(a0, a1, a2);
      out[0] = a0, out[1] = a1, out[2] = a2;
    } else if constexpr (P == 4) {
      Cx a2 = in(offset + 2 * stride);
      Cx a3 = in(offset + 3 * stride);
      butterfly4(a0, a1, a2, a3);
      out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3;
    } else {
      static_assert(P == 5);
      Cx a2 = in(offset + 2 * stride);
      Cx a3 = in(offset + 3 * stride);
      Cx a4 = in(offset + 4 * stride);
      butterfly5(a0, a1, a2, a3, a4);
      out[0] = a0, out[1] = a1, out[2] = a2, out[3] = a3, out[4] = a4;
    }
  }

  // One level with radix P: the P sub-results already in out[] (blocks of m) are
  // twiddled and combined in place, with the butterfly inlined.
  template <size_t P>
  void combine(const Level& L, Cx* out) const {
    const size_t m = L.m;
    const Cx* tw = L.tw_at != kNoTable ? twiddles_.data() + L.tw_at : nullptr;
    for (size_t k = 0; k < m; ++k) {
      Cx w1, w2, w3, w4;
      if (tw != nullptr) {
        const Cx* t = tw + k * (P - 1);
        w1 = t[0];
        if constexpr (P > 2) w2 = t[1];
        if constexpr (P > 3) w3 = t[2];
        if constexpr (P > 4) w4 = t[3];
      } else {
        w1 = roots_(L.step * k);
        if constexpr (P > 2) w2 = w1 * w1;
        if constexpr (P > 3) w3 = w2 * w1;
        if constexpr (P > 4) w4 = w2 * w2;
      }
      Cx* x = out + k;
      Cx a0 = x[0];
      Cx a1 = x[m] * w1;
      if constexpr (P == 2) {
        butterfly2(a0, a1);
        x[0] = a0, x[m] = a1;
      } else if constexpr (P == 3) {
        Cx a2 = x[2 * m] * w2;
        butterfly3(a0, a1, a2);
        x[0] = a0, x[m] = a1, x[2 * m] = a2;
      } else if constexpr (P == 4) {
        Cx a2 = x[2 * m] * w2;
        Cx a3 = x[3 * m] * w3;
        butterfly4(a0, a1, a2, a3);
        x[0] = a0, x[m] = a1, x[2 * m] = a2, x[3 * m] = a3;
      } else {
        static_assert(P == 5);
        Cx a2 = x[2 * m] * w2;
        Cx a3 = x[3 * m] * w3;
        Cx a4 = x[4 * m] * w4;
        butterfly5(a0, a1, a2, a3, a4);
        x[0] = a0, x[m] = a1, x[2 * m] = a2, x[3 * m] = a3, x[4 * m] = a4;
      }
    }
  }

  void combine_generic(const Level& L, Cx* out) const {
    const size_t p = L.p;
    const Cx* w = generic_w_[p].data();
    Cx a[kMaxGenericRadix];
    Cx tw[kMaxGenericRadix];
    for (size_t k = 0; k < L.m; ++k) {
      load_twiddles(L, k, tw);
      a[0] = out[k];
      for (size_t r = 1; r < p; ++r) a[r] = out[k + r * L.m] * tw[r];
      butterfly_generic(a, p, w);
      for (size_t q = 0; q < p; ++q) out[k + q * L.m] = a[q];
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
    std::vector<Cx> b(M, Cx{0, 0});
    b[0] = conj(chirp_[0]);
    for (size_t j = 1; j < N_; ++j) b[j] = b[M - j] = conj(chirp_[j]);
    kernel_.resize(M);
    inner_->forward(ArraySource{b.data()}, kernel_.data());
    bluestein_ = true;
  }

  template <typename Source>
  void bluestein(const Source& in, Cx* out) const {
    const size_t M = inner_->N_;
    // Work buffers live with the plan (each thread has its own plan): allocating 2 x 16 M
    // bytes per call would cost more in page faults than the transforms.
    std::vector<Cx>& a = work_a_;
    std::vector<Cx>& fa = work_b_;
    a.resize(M);
    fa.resize(M);
    for (size_t j = 0; j < N_; ++j) a[j] = in(j) * chirp_[j];
    std::fill(a.begin() + static_cast<std::ptrdiff_t>(N_), a.end(), Cx{0, 0});
    inner_->forward(ArraySource{a.data()}, fa.data());
    // Inverse transform as conj(forward(conj(.))) / M.
    for (size_t k = 0; k < M; ++k) fa[k] = conj(fa[k] * kernel_[k]);
    inner_->forward(ArraySource{fa.data()}, a.data());
    const double scale = 1.0 / static_cast<double>(M);
    for (size_t k = 0; k < N_; ++k) out[k] = chirp_[k] * (scale * conj(a[k]));
  }

  size_t N_;
  RootTable roots_;
  std::vector<Level> levels_;
  std::vector<Cx> twiddles_;
  std::vector<Cx> generic_w_[kMaxGenericRadix + 1];
  bool bluestein_ = false;
  std::unique_ptr<ComplexFft> inner_;
  std::vector<Cx> chirp_;
  std::vector<Cx> kernel_;
  mutable std::vector<Cx> work_a_;
  mutable std::vector<Cx> work_b_;
};

// Per-thread workspace for the last length seen: a battery tests many sequences of the
// same n, so the plan and the buffers are built once per thread.
struct Workspace {
  size_t n = 0;
  std::unique_ptr<ComplexFft> fft;
  std::unique_ptr<RootTable> split_roots;  // exp(-2 pi i k / n), for the even-n split step
  std::vector<Cx> scratch;
};

Workspace& workspace_for(size_t n) {
  thread_local Workspace ws;
  if (ws.n != n || !ws.fft) {
    const bool even = n % 2 == 0;
    const size_t N = even ? n / 2 : n;
    ws.fft = std::make_unique<ComplexFft>(N);
    ws.split_roots = even ? std::make_unique<RootTable>(n) : nullptr;
    ws.scratch.assign(N, Cx{0, 0});
    ws.n = n;
  }
  return ws;
}


// |F_k|^2 for k < floor(n/2) into out[] (which must hold that many values).
void half_squared_moduli_into(const Bits& bits, double* out) {
  const size_t n = bits.n;
  const size_t half = n / 2;
  if (n < 2) return;
  Workspace& ws = workspace_for(n);
  const uint64_t* w = bits.words.data();
  if (n % 2 == 0) {
    const size_t N = half;
    ws.fft->forward(BitPairSource{w}, ws.scratch.data());
    const Cx* Z = ws.scratch.data();
    const RootTable& roots = *ws.split_roots;
    // E_k = (Z_k + conj Z_{N-k}) / 2 and O_k = (Z_k - conj Z_{N-k}) / 2i are the
    // transforms of the even and odd samples; F_k = E_k + w^k O_k, and, because E and O
    // are transforms of real data and w^(N-k) = -conj(w^k), F_{N-k} = conj(E_k - w^k O_k).
    // So one twiddle serves k and N - k.
    const Cx z0 = Z[0];
    out[0] = (z0.re + z0.im) * (z0.re + z0.im);  // F_0 = E_0 + O_0 = re + im
    for (size_t k = 1; k <= N / 2; ++k) {
      const Cx zk = Z[k];
      const Cx zc = conj(Z[N - k]);
      const Cx even_part = 0.5 * (zk + zc);
      const Cx odd_part = times_minus_i(0.5 * (zk - zc));
      const Cx t = roots(k) * odd_part;
      const Cx f = even_part + t;
      const Cx g = even_part - t;
      out[k] = f.re * f.re + f.im * f.im;
      out[N - k] = g.re * g.re + g.im * g.im;
    }
  } else {
    ws.fft->forward(BitSource{w}, ws.scratch.data());
    const Cx* X = ws.scratch.data();
    for (size_t k = 0; k < half; ++k) out[k] = X[k].re * X[k].re + X[k].im * X[k].im;
  }
}

}  // namespace
}  // namespace qe::sts
