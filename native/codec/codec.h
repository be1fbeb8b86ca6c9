// The base64 block codec: entropy API response bodies <-> raw bytes, in one pass each way.
//
// Two response shapes are understood:
//   * the entropy service:   {"random": ["<base64>", ...], "size": N}
//     every block decodes to exactly 1,024 bytes, 1 <= N <= 512;
//   * the provider's appliance: {"entropy": ["<base64>", ...], "extensions": [...]}
//     every block decodes to the same size, 1..1,024 bytes, 1..512 blocks.
//
// The decoder is a small strict JSON scanner, not a DOM: it walks the body once, writes
// each block's bytes straight into the result buffer, and skips (while validating) any
// other member. Base64 is RFC 4648 §4, padded and canonical. Errors are thrown as
// CodecError; no partial result ever escapes. See docs/codec.md for the exact grammar.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qe::codec {

inline constexpr size_t kEntropyBlockBytes = 1024;
inline constexpr size_t kMaxBlocks = 512;
inline constexpr size_t kMaxApplianceBlockBytes = 1024;

enum class ErrorCode {
  kBlockSize,  // a block does not decode to the required number of bytes
  kBase64,     // a character outside the base64 alphabet inside a block
  kPadding,    // missing, misplaced or non-canonical '=' padding
  kSize,       // `size` missing, not an integer, or not the array length
  kCount,      // the block array is empty or longer than 512
  kShape,      // not JSON, not an object of the expected shape, duplicate key, trailing data
  kInvalidArgument,  // encoder input of the wrong length / block size out of range
};

// "EBLOCKSIZE", "EBASE64", ... : the `code` the JavaScript error carries.
const char* error_code_name(ErrorCode code);

class CodecError : public std::runtime_error {
 public:
  CodecError(ErrorCode code, std::string message, long block_index = -1, long position = -1,
             long offset = -1)
      : std::runtime_error(std::move(message)),
        code_(code),
        block_index_(block_index),
        position_(position),
        offset_(offset) {}
  ErrorCode code() const { return code_; }
  // Index of the offending block in the array, or -1 when the error is not about one block.
  long block_index() const { return block_index_; }
  // Index of the offending character within the block's base64 text (after JSON
  // unescaping), or -1.
  long position() const { return position_; }
  // Byte offset in the body where the problem was found, or -1.
  long offset() const { return offset_; }

 private:
  ErrorCode code_;
  long block_index_;
  long position_;
  long offset_;
};

// Which base64 kernels a call may use. kAuto picks the fastest this CPU supports;
// kScalar forces the portable path (it produces identical bytes; tests compare them).
enum class Kernel { kAuto, kScalar };

// The kernel kAuto resolves to on this host: "avx2" or "scalar".
const char* active_kernel_name();

// A malloc'ed byte buffer (so the Node binding can hand it to an external Buffer and
// free() it in the finalizer without a copy).
struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};
using MallocBytes = std::unique_ptr<uint8_t, FreeDeleter>;

struct Bytes {
  MallocBytes data;
  size_t size = 0;
  size_t block_size = 0;  // bytes per block (1024 for the entropy shape)
  size_t block_count = 0;
};

// {"random": [...], "size": N}  ->  N x 1024 bytes.
Bytes decode_entropy_response(const uint8_t* body, size_t len, Kernel kernel = Kernel::kAuto);

// N x 1024 bytes (1 <= N <= 512)  ->  {"random":["...",...],"size":N}
Bytes encode_entropy_response(const uint8_t* bytes, size_t len, Kernel kernel = Kernel::kAuto);

struct ApplianceExpect {
  size_t block_size = 0;   // 0: taken from the first block; otherwise every block must match
  size_t block_count = 0;  // 0: any count 1..512; otherwise the array length must match
};

// {"entropy": [...], "extensions": [...]}  ->  blocks concatenated, plus the block size.
Bytes decode_appliance_response(const uint8_t* body, size_t len, ApplianceExpect expect = {},
                                Kernel kernel = Kernel::kAuto);

// bytes (block_count x block_size, block_size 1..1024, count 1..512)
//   ->  {"entropy":["...",...],"extensions":[]}
Bytes encode_appliance_response(const uint8_t* bytes, size_t len, size_t block_size,
                                Kernel kernel = Kernel::kAuto);

// The same, writing into caller memory (e.g. a pool slot or a reused send buffer), so
// no allocation is on the path. On error the target's contents are unspecified; nothing
// is reported as decoded. A target too small for the result is kInvalidArgument.
struct DecodeResult {
  size_t size = 0;
  size_t block_size = 0;
  size_t block_count = 0;
};
// An output size that always suffices for a body of body_len bytes (<= 512 KiB).
size_t decode_capacity(size_t body_len, bool appliance);
DecodeResult decode_entropy_response_into(const uint8_t* body, size_t len, uint8_t* out, size_t out_cap,
                                          Kernel kernel = Kernel::kAuto);
DecodeResult decode_appliance_response_into(const uint8_t* body, size_t len, uint8_t* out, size_t out_cap,
                                            ApplianceExpect expect = {}, Kernel kernel = Kernel::kAuto);
// Exact body sizes (throw kInvalidArgument outside 1..512 blocks / 1..1024 bytes).
size_t entropy_response_length(size_t block_count);
size_t appliance_response_length(size_t block_size, size_t block_count);
// Return the number of body bytes written.
size_t encode_entropy_response_into(const uint8_t* bytes, size_t len, uint8_t* out, size_t out_cap,
                                    Kernel kernel = Kernel::kAuto);
size_t encode_appliance_response_into(const uint8_t* bytes, size_t len, size_t block_size, uint8_t* out,
                                      size_t out_cap, Kernel kernel = Kernel::kAuto);

// Plain strict base64 (RFC 4648 §4, padded, canonical), for other modules and the tests.
std::string base64_encode(const uint8_t* data, size_t len, Kernel kernel = Kernel::kAuto);
// Throws CodecError (kBase64 / kPadding) on anything but canonical padded base64.
std::vector<uint8_t> base64_decode(std::string_view text, Kernel kernel = Kernel::kAuto);

}  // namespace qe::codec
