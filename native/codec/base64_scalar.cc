// Portable base64 pieces and the run-time choice of bulk kernels.
#include "codec/base64_kernels.h"
#include "common/cpu.h"

namespace qe::codec::detail {

const char kEncodeAlphabet[65] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static constexpr std::array<uint8_t, 256> make_decode_table() {
  std::array<uint8_t, 256> t{};
  for (auto& v : t) v = kInvalid;
  constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (uint8_t i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = i;
  return t;
}
const std::array<uint8_t, 256> kDecodeTable = make_decode_table();

void encode_scalar(const uint8_t* in, size_t len, char* out) {
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    *out++ = kEncodeAlphabet[v >> 18];
    *out++ = kEncodeAlphabet[(v >> 12) & 63];
    *out++ = kEncodeAlphabet[(v >> 6) & 63];
    *out++ = kEncodeAlphabet[v & 63];
  }
  if (len - i == 1) {
    const uint32_t v = uint32_t{in[i]} << 16;
    *out++ = kEncodeAlphabet[v >> 18];
    *out++ = kEncodeAlphabet[(v >> 12) & 63];
    *out++ = '=';
    *out++ = '=';
  } else if (len - i == 2) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8);
    *out++ = kEncodeAlphabet[v >> 18];
    *out++ = kEncodeAlphabet[(v >> 12) & 63];
    *out++ = kEncodeAlphabet[(v >> 6) & 63];
    *out++ = '=';
  }
}

static size_t decode_none(const uint8_t*, size_t, uint8_t*, size_t) { return 0; }
static size_t encode_none(const uint8_t*, size_t, size_t, char*) { return 0; }

const BulkKernels& scalar_kernels() {
  static const BulkKernels k{&decode_none, &encode_none, "scalar"};
  return k;
}

const BulkKernels& best_kernels() {
  static const BulkKernels& chosen = [&]() -> const BulkKernels& {
    if (avx2_compiled() && qe::cpu::has_avx2()) {
      static const BulkKernels avx2{&decode_avx2, &encode_avx2, "avx2"};
      return avx2;
    }
    return scalar_kernels();
  }();
  return chosen;
}

}  // namespace qe::codec::detail
