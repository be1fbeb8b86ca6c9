// Internal base64 building blocks shared by the JSON codec and the tests. The SIMD kernels
// only handle the bulk (whole groups of plain alphabet characters); the scalar code around
// them handles padding, JSON escapes and errors, so every path yields the same bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace qe::codec::detail {

// 6-bit value of each byte, or kInvalid for bytes outside the alphabet (including '=').
inline constexpr uint8_t kInvalid = 0xFF;
extern const std::array<uint8_t, 256> kDecodeTable;
extern const char kEncodeAlphabet[65];

// Encodes len bytes as padded base64 into out (4 * ceil(len / 3) chars). Scalar.
void encode_scalar(const uint8_t* in, size_t len, char* out);

// Bulk kernels. Each returns how much it did and leaves the rest to the scalar code.
struct BulkKernels {
  // Decodes whole 32-character groups from in[0, in_len) into out while every character of
  // the group is in the alphabet and at least `out_room` bytes remain (24 per group). Stops
  // at the first group holding anything else. Returns characters consumed (multiple of 32);
  // the bytes written are consumed / 4 * 3. Never writes past out + out_room.
  size_t (*decode)(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_room);
  // Encodes whole 24-byte groups of in[0, len) while `readable` bytes (>= len) may be read
  // from `in` (the kernel loads 4 bytes beyond each group). Returns bytes consumed (multiple
  // of 24); it wrote consumed / 3 * 4 characters.
  size_t (*encode)(const uint8_t* in, size_t len, size_t readable, char* out);
  const char* name;
};

// The kernels: scalar ones that do nothing (the scalar loops then do all the work), and
// AVX2 ones when this CPU has AVX2.
const BulkKernels& scalar_kernels();
const BulkKernels& best_kernels();

// AVX2 kernels, exposed for the tests; only call them when qe::cpu::has_avx2().
size_t decode_avx2(const uint8_t* in, size_t in_len, uint8_t* out, size_t out_room);
size_t encode_avx2(const uint8_t* in, size_t len, size_t readable, char* out);
bool avx2_compiled();

}  // namespace qe::codec::detail
