// Response bodies <-> bytes. The decoder is a strict single-pass JSON scanner specialised
// for two object shapes; see codec.h and docs/codec.md for what it accepts.
#include "codec/codec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

#include "codec/base64_kernels.h"

namespace qe::codec {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBlockSize: return "EBLOCKSIZE";
    case ErrorCode::kBase64: return "EBASE64";
    case ErrorCode::kPadding: return "EPADDING";
    case ErrorCode::kSize: return "ESIZE";
    case ErrorCode::kCount: return "ECOUNT";
    case ErrorCode::kShape: return "ESHAPE";
    case ErrorCode::kInvalidArgument: return "EINVAL";
  }
  return "ESHAPE";
}

const char* active_kernel_name() { return detail::best_kernels().name; }

namespace {

using detail::BulkKernels;
using detail::kDecodeTable;
using detail::kInvalid;

const BulkKernels& kernels_for(Kernel kernel) {
  return kernel == Kernel::kScalar ? detail::scalar_kernels() : detail::best_kernels();
}

MallocBytes allocate(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return MallocBytes(static_cast<uint8_t*>(p));
}

// Gives back the unused tail of an over-sized allocation (glibc shrinks in place).
void shrink(Bytes& b, size_t capacity) {
  if (b.size == capacity || b.size == 0) return;
  if (void* p = std::realloc(b.data.get(), b.size)) {
    (void)b.data.release();
    b.data.reset(static_cast<uint8_t*>(p));
  }
}

std::string describe_char(unsigned c) {
  char buf[32];
  if (c >= 0x20 && c < 0x7F)
    std::snprintf(buf, sizeof buf, "'%c' (0x%02X)", static_cast<char>(c), c);
  else if (c <= 0xFF)
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  else
    std::snprintf(buf, sizeof buf, "U+%04X", c);
  return buf;
}

// Errors of the standalone base64_decode() carry block index -1 and no "block" prefix.
std::string block_prefix(long index) { return index < 0 ? "" : "block " + std::to_string(index) + ": "; }

// The members a shape interprets. Any other member is validated and skipped.
struct Shape {
  const char* array_key;  // "random" | "entropy"
  const char* size_key;   // "size" | nullptr
  const char* extra_key;  // nullptr | "extensions" (optional, must be an array)
  size_t max_block;       // the largest block the array may hold
};

constexpr Shape kEntropyShape{"random", "size", nullptr, kEntropyBlockBytes};
constexpr Shape kApplianceShape{"entropy", nullptr, "extensions", kMaxApplianceBlockBytes};

// A key decoded just far enough to compare it with the few names a shape knows.
struct Key {
  char text[16];
  size_t len = 0;
  bool comparable = true;  // false: longer than 16 or holds non-ASCII: matches no known name
  bool is(const char* name) const {
    return name != nullptr && comparable && std::strlen(name) == len && std::memcmp(text, name, len) == 0;
  }
};

class Scanner {
 public:
  // offset_bias: subtracted from reported offsets (base64_decode() wraps its text in quotes).
  Scanner(const uint8_t* body, size_t len, long offset_bias = 0)
      : begin_(body), p_(body), end_(body + len), bias_(offset_bias) {}

  long offset() const { return static_cast<long>(p_ - begin_) - bias_; }
  bool at_end() const { return p_ == end_; }
  int peek() const { return p_ < end_ ? *p_ : -1; }

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  [[noreturn]] void shape_error(const std::string& what) const {
    throw CodecError(ErrorCode::kShape,
                     "response body is not valid: " + what + " at offset " + std::to_string(offset()),
                     -1, -1, offset());
  }

  void expect(char c, const char* what) {
    if (peek() != c) shape_error(std::string("expected ") + what);
    ++p_;
  }

  // p_ is just past a backslash inside a string; consumes the escape, returns the UTF-16
  // code unit it stands for (surrogates are returned as is, like JSON.parse does).
  unsigned read_escape() {
    if (p_ >= end_) shape_error("unterminated string");
    switch (*p_++) {
      case '"': return '"';
      case '\\': return '\\';
      case '/': return '/';
      case 'b': return '\b';
      case 'f': return '\f';
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case 'u': {
        if (end_ - p_ < 4) shape_error("truncated \\u escape");
        unsigned u = 0;
        for (int i = 0; i < 4; ++i) {
          const unsigned c = *p_;
          unsigned d;
          if (c >= '0' && c <= '9') d = c - '0';
          else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
          else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
          else shape_error("bad hex digit in \\u escape");
          u = u << 4 | d;
          ++p_;
        }
        return u;
      }
      default:
        --p_;
        shape_error("invalid escape in string");
    }
  }

  // One logical character of a string: its code unit, or -1 for the closing quote (consumed).
  // Bytes >= 0x80 are returned as themselves: they are never base64 and never end a string.
  long next_char() {
    if (p_ >= end_) shape_error("unterminated string");
    const uint8_t c = *p_;
    if (c == '"') {
      ++p_;
      return -1;
    }
    if (c == '\\') {
      ++p_;
      return static_cast<long>(read_escape());
    }
    if (c < 0x20) shape_error("control character in string");
    ++p_;
    return c;
  }

  Key read_key() {
    if (peek() != '"') shape_error("expected a string key");
    ++p_;
    Key key;
    for (long c; (c = next_char()) >= 0;) {
      if (c >= 0x80 || key.len == sizeof key.text) {
        key.comparable = false;
        continue;
      }
      key.text[key.len++] = static_cast<char>(c);
    }
    return key;
  }

  void skip_string() {
    ++p_;  // opening quote
    for (;;) {
      // Fast path over plain characters; next_char() does escapes, the end and errors.
      while (p_ < end_ && *p_ >= 0x20 && *p_ != '"' && *p_ != '\\') ++p_;
      if (next_char() < 0) return;
    }
  }

  // Validates a JSON number and returns its value rounded to double (as JSON.parse does).
  double read_number() {
    const uint8_t* start = p_;
    auto digit = [this] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
    if (peek() == '-') ++p_;
    if (peek() == '0') {
      ++p_;
    } else if (digit()) {
      while (digit()) ++p_;
    } else {
      shape_error("invalid number");
    }
    if (peek() == '.') {
      ++p_;
      if (!digit()) shape_error("invalid number");
      while (digit()) ++p_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++p_;
      if (peek() == '+' || peek() == '-') ++p_;
      if (!digit()) shape_error("invalid number");
      while (digit()) ++p_;
    }
    double value = 0;
    const auto [ptr, ec] = std::from_chars(reinterpret_cast<const char*>(start),
                                           reinterpret_cast<const char*>(p_), value);
    if (ec == std::errc::result_out_of_range) {
      // Overflow is +-Infinity and underflow is 0 for JSON.parse: neither equals a count.
      return std::numeric_limits<double>::infinity();
    }
    if (ec != std::errc() || ptr != reinterpret_cast<const char*>(p_)) shape_error("invalid number");
    return value;
  }

  void skip_literal() {
    static constexpr const char* kLiterals[] = {"true", "false", "null"};
    for (const char* lit : kLiterals) {
      const size_t n = std::strlen(lit);
      if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, lit, n) == 0) {
        p_ += n;
        return;
      }
    }
    shape_error("invalid value");
  }

  // Validates and skips any JSON value, iteratively (no recursion, so depth cannot
  // overflow the native stack).
  void skip_value() {
    std::string open;  // '{' or '[' per nesting level
    for (;;) {
      // A value starts here.
      skip_ws();
      bool scalar_done = true;
      switch (peek()) {
        case '"': skip_string(); break;
        case 't': case 'f': case 'n': skip_literal(); break;
        case '{':
          ++p_;
          skip_ws();
          if (peek() == '}') {
            ++p_;
          } else {
            open.push_back('{');
            member_name();
            scalar_done = false;
          }
          break;
        case '[':
          ++p_;
          skip_ws();
          if (peek() == ']') {
            ++p_;
          } else {
            open.push_back('[');
            scalar_done = false;
          }
          break;
        default:
          if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
            (void)read_number();
          } else {
            shape_error("invalid value");
          }
      }
      if (!scalar_done) continue;  // read the first element/member value
      // After a complete value: close containers or move to the next element.
      for (;;) {
        if (open.empty()) return;
        skip_ws();
        const int c = peek();
        if (c == ',') {
          ++p_;
          if (open.back() == '{') {
            skip_ws();
            member_name();
          }
          break;
        }
        if ((c == '}' && open.back() == '{') || (c == ']' && open.back() == '[')) {
          ++p_;
          open.pop_back();
          continue;
        }
        shape_error(open.back() == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
  }

  // A member name and its colon, inside a skipped object.
  void member_name() {
    if (peek() != '"') shape_error("expected a string key");
    skip_string();
    skip_ws();
    expect(':', "':'");
  }

  // p_ is at the opening quote of block `index`. Decodes it into out (room for `room`
  // bytes) and returns the number of bytes it decodes to.
  size_t decode_block(uint8_t* out, size_t room, long index, const BulkKernels& kernels) {
    ++p_;  // opening quote
    size_t n = 0;         // bytes written
    long chars = 0;       // logical base64 characters consumed
    uint32_t acc = 0;     // bits of the current quad
    int in_quad = 0;      // characters in the current quad
    const uint8_t* bulk_from = p_;
    for (;;) {
      if (in_quad == 0 && p_ >= bulk_from) {
        const size_t used = kernels.decode(p_, static_cast<size_t>(end_ - p_), out + n, room - n);
        p_ += used;
        chars += static_cast<long>(used);
        n += used / 4 * 3;
        // The kernel stopped at a group it cannot take (padding, an escape, the end, an
        // error): let the scalar code get past that group before trying again.
        bulk_from = end_ - p_ > 32 ? p_ + 32 : end_;  // (never form a pointer past the end)
      }
      if (in_quad == 0) n = plain_quads(out, room, n, chars);
      const long at = offset();
      const long c = next_char();
      if (c < 0) break;  // closing quote
      const uint8_t v = c < 0x100 ? kDecodeTable[static_cast<size_t>(c)] : kInvalid;
      if (v == kInvalid) {
        if (c == '=') {
          n = finish_padding(out, room, n, acc, in_quad, chars, at, index);
          in_quad = 0;
          break;
        }
        throw CodecError(ErrorCode::kBase64,
                         block_prefix(index) + "non-base64 character " + describe_char(static_cast<unsigned>(c)) +
                             " at position " + std::to_string(chars) + " (offset " + std::to_string(at) + ")",
                         index, chars, at);
      }
      acc = acc << 6 | v;
      ++chars;
      if (++in_quad == 4) {
        if (room - n < 3) too_long(index, room);
        out[n] = static_cast<uint8_t>(acc >> 16);
        out[n + 1] = static_cast<uint8_t>(acc >> 8);
        out[n + 2] = static_cast<uint8_t>(acc);
        n += 3;
        acc = 0;
        in_quad = 0;
      }
    }
    if (in_quad != 0) {
      throw CodecError(ErrorCode::kPadding,
                       block_prefix(index) + "length " + std::to_string(chars) +
                           " is not a multiple of 4 (missing '=' padding)",
                       index, chars, offset() - 1);
    }
    return n;
  }

 private:
  // Scalar fast path: whole quads of four plain alphabet characters. Stops before anything
  // else (padding, escapes, the closing quote, errors), which the per-character loop handles.
  size_t plain_quads(uint8_t* out, size_t room, size_t n, long& chars) {
    while (end_ - p_ >= 4 && room - n >= 3) {
      const uint32_t a = kDecodeTable[p_[0]];
      const uint32_t b = kDecodeTable[p_[1]];
      const uint32_t c = kDecodeTable[p_[2]];
      const uint32_t d = kDecodeTable[p_[3]];
      if (((a | b | c | d) & 0x80u) != 0) break;  // kInvalid has the top bit set
      const uint32_t v = a << 18 | b << 12 | c << 6 | d;
      out[n] = static_cast<uint8_t>(v >> 16);
      out[n + 1] = static_cast<uint8_t>(v >> 8);
      out[n + 2] = static_cast<uint8_t>(v);
      n += 3;
      p_ += 4;
      chars += 4;
    }
    return n;
  }

  [[noreturn]] static void too_long(long index, size_t room) {
    throw CodecError(ErrorCode::kBlockSize,
                     block_prefix(index) + "decodes to more than " + std::to_string(room) + " bytes", index);
  }

  // Called after the first '=' (at body offset `at`, logical position `chars`); consumes the
  // rest of the padding and the closing quote, writes the final bytes, returns the new n.
  size_t finish_padding(uint8_t* out, size_t room, size_t n, uint32_t acc, int in_quad, long chars,
                        long at, long index) {
    auto padding_error = [&](const std::string& why, long pos, long off) {
      throw CodecError(ErrorCode::kPadding,
                       block_prefix(index) + why + " at position " + std::to_string(pos) + " (offset " +
                           std::to_string(off) + ")",
                       index, pos, off);
    };
    if (in_quad < 2) padding_error("'=' where data is required", chars, at);
    long pos = chars + 1;
    if (in_quad == 2) {
      const long at2 = offset();
      const long c = next_char();
      if (c != '=') {
        if (c < 0) padding_error("incomplete padding (expected '==')", pos, at2);
        padding_error("expected '=' after '='", pos, at2);
      }
      ++pos;
    }
    const long at_end = offset();
    const long c = next_char();
    if (c >= 0) {
      const bool base64ish = c == '=' || (c < 0x100 && kDecodeTable[static_cast<size_t>(c)] != kInvalid);
      if (!base64ish) {
        throw CodecError(ErrorCode::kBase64,
                         block_prefix(index) + "non-base64 character " + describe_char(static_cast<unsigned>(c)) +
                             " at position " + std::to_string(pos) + " (offset " + std::to_string(at_end) + ")",
                         index, pos, at_end);
      }
      padding_error("characters after padding", pos, at_end);
    }
    // Canonical form: the bits the padding drops must be zero.
    if (in_quad == 2) {
      if ((acc & 0x0F) != 0) padding_error("non-zero bits before '=='", chars - 1, at - 1);
      if (room - n < 1) too_long(index, room);
      out[n] = static_cast<uint8_t>(acc >> 4);
      return n + 1;
    }
    if ((acc & 0x03) != 0) padding_error("non-zero bits before '='", chars - 1, at - 1);
    if (room - n < 2) too_long(index, room);
    out[n] = static_cast<uint8_t>(acc >> 10);
    out[n + 1] = static_cast<uint8_t>(acc >> 2);
    return n + 2;
  }

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  long bias_;
};

struct DecodeLimits {
  size_t block_size = 0;  // required bytes per block; 0 = set by the first block
  size_t block_count = 0; // required count; 0 = any 1..512
};

// Every decoded byte needs at least 4/3 body bytes, so 3/4 of the body bounds the output;
// 512 blocks of the largest size bound it too.
size_t capacity_for(size_t len, const Shape& shape) {
  return std::min(len / 4 * 3 + 3, kMaxBlocks * shape.max_block);
}

DecodeResult decode_body(const uint8_t* body, size_t len, const Shape& shape, DecodeLimits limits,
                         const BulkKernels& kernels, uint8_t* const target, const size_t capacity) {
  uint8_t* out = target;

  Scanner s(body, len);
  bool have_array = false;
  bool have_size = false;
  bool have_extra = false;
  double size_value = 0;
  long size_offset = -1;
  size_t count = 0;
  size_t block_size = limits.block_size;

  s.skip_ws();
  s.expect('{', "'{' (the body must be a JSON object)");
  s.skip_ws();
  if (s.peek() == '}') {
    s.expect('}', "'}'");
  } else {
    for (;;) {
      s.skip_ws();
      const long key_offset = s.offset();
      const Key key = s.read_key();
      s.skip_ws();
      s.expect(':', "':'");
      s.skip_ws();
      auto duplicate = [&](const char* name) {
        throw CodecError(ErrorCode::kShape, std::string("response body is not valid: duplicate key \"") + name +
                                                "\" at offset " + std::to_string(key_offset),
                         -1, -1, key_offset);
      };
      if (key.is(shape.array_key)) {
        if (have_array) duplicate(shape.array_key);
        have_array = true;
        if (s.peek() != '[') s.shape_error(std::string("\"") + shape.array_key + "\" must be an array");
        s.expect('[', "'['");
        s.skip_ws();
        if (s.peek() == ']') {
          throw CodecError(ErrorCode::kCount, std::string("\"") + shape.array_key + "\" is empty", -1, -1, s.offset());
        }
        for (;;) {
          s.skip_ws();
          const long index = static_cast<long>(count);
          if (count == kMaxBlocks) {
            throw CodecError(ErrorCode::kCount,
                             block_prefix(index) + "\"" + shape.array_key + "\" has more than " +
                                 std::to_string(kMaxBlocks) + " blocks",
                             index, -1, s.offset());
          }
          if (s.peek() != '"') s.shape_error(block_prefix(index) + "not a string");
          const size_t want = block_size != 0 ? block_size : shape.max_block;
          const size_t written = static_cast<size_t>(out - target);
          const size_t room = std::min(want, capacity - written);
          size_t n = 0;
          try {
            n = s.decode_block(out, room, index, kernels);
          } catch (const CodecError& e) {
            // Only a caller-supplied target can be too small (capacity_for() never is).
            if (e.code() != ErrorCode::kBlockSize || room == want) throw;
            throw CodecError(ErrorCode::kInvalidArgument,
                             "target of " + std::to_string(capacity) + " bytes is too small", index);
          }
          if (n == 0) throw CodecError(ErrorCode::kBlockSize, block_prefix(index) + "empty block", index);
          if (block_size == 0) block_size = n;  // the appliance's first block sets the size
          if (n != block_size) {
            throw CodecError(ErrorCode::kBlockSize,
                             block_prefix(index) + "decodes to " + std::to_string(n) + " bytes, expected " +
                                 std::to_string(block_size == 0 ? want : block_size),
                             index);
          }
          out += n;
          ++count;
          s.skip_ws();
          if (s.peek() == ',') {
            s.expect(',', "','");
            continue;
          }
          s.expect(']', "',' or ']' after a block");
          break;
        }
      } else if (key.is(shape.size_key)) {
        if (have_size) duplicate(shape.size_key);
        have_size = true;
        size_offset = s.offset();
        const int c = s.peek();
        if (c == '-' || (c >= '0' && c <= '9')) {
          size_value = s.read_number();
        } else {
          s.skip_value();
          throw CodecError(ErrorCode::kSize, "\"size\" is not a number", -1, -1, size_offset);
        }
      } else if (key.is(shape.extra_key)) {
        if (have_extra) duplicate(shape.extra_key);
        have_extra = true;
        if (s.peek() != '[') s.shape_error(std::string("\"") + shape.extra_key + "\" must be an array");
        s.skip_value();
      } else {
        s.skip_value();
      }
      s.skip_ws();
      if (s.peek() == ',') {
        s.expect(',', "','");
        continue;
      }
      s.expect('}', "',' or '}' after a member");
      break;
    }
  }
  s.skip_ws();
  if (!s.at_end()) s.shape_error("trailing data after the JSON object");

  if (!have_array) {
    throw CodecError(ErrorCode::kShape, std::string("response body is not valid: no \"") + shape.array_key + "\" array");
  }
  if (shape.size_key != nullptr) {
    if (!have_size) throw CodecError(ErrorCode::kSize, "\"size\" is missing");
    if (!std::isfinite(size_value) || std::trunc(size_value) != size_value) {
      throw CodecError(ErrorCode::kSize, "\"size\" is not an integer", -1, -1, size_offset);
    }
    if (size_value != static_cast<double>(count)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", size_value);
      throw CodecError(ErrorCode::kSize,
                       std::string("\"size\" is ") + buf + " but the array holds " + std::to_string(count) + " blocks",
                       -1, -1, size_offset);
    }
  }
  if (limits.block_count != 0 && count != limits.block_count) {
    throw CodecError(ErrorCode::kCount, "expected " + std::to_string(limits.block_count) + " blocks, got " +
                                            std::to_string(count));
  }
  return DecodeResult{static_cast<size_t>(out - target), block_size, count};
}

char* put(char* out, const char* text) {
  const size_t n = std::strlen(text);
  std::memcpy(out, text, n);
  return out + n;
}

// Encodes one block at `in` (readable up to `in_end`) as base64; returns the end of output.
char* encode_block(const uint8_t* in, size_t len, const uint8_t* in_end, char* out, const BulkKernels& kernels) {
  const size_t bulk = kernels.encode(in, len, static_cast<size_t>(in_end - in), out);
  detail::encode_scalar(in + bulk, len - bulk, out + bulk / 3 * 4);
  return out + (len + 2) / 3 * 4;
}

size_t body_length(size_t block_size, size_t count, const char* prefix, const std::string& suffix) {
  const size_t per_block = (block_size + 2) / 3 * 4 + 2;  // quotes included
  return std::strlen(prefix) + count * per_block + (count - 1) + suffix.size();
}

size_t encode_body(const uint8_t* bytes, size_t len, size_t block_size, const char* prefix, const std::string& suffix,
                   const BulkKernels& kernels, uint8_t* target, size_t capacity) {
  const size_t count = len / block_size;
  const size_t total = body_length(block_size, count, prefix, suffix);
  if (capacity < total) {
    throw CodecError(ErrorCode::kInvalidArgument, "target of " + std::to_string(capacity) +
                                                      " bytes is too small for a body of " + std::to_string(total));
  }
  char* out = reinterpret_cast<char*>(target);
  out = put(out, prefix);
  const uint8_t* end = bytes + len;
  for (size_t i = 0; i < count; ++i) {
    if (i != 0) *out++ = ',';
    *out++ = '"';
    out = encode_block(bytes + i * block_size, block_size, end, out, kernels);
    *out++ = '"';
  }
  std::memcpy(out, suffix.data(), suffix.size());
  return total;
}

void check_encoder_input(size_t len, size_t block_size) {
  if (len % block_size != 0) {
    throw CodecError(ErrorCode::kInvalidArgument, "input of " + std::to_string(len) +
                                                      " bytes is not a whole number of " +
                                                      std::to_string(block_size) + "-byte blocks");
  }
  const size_t count = len / block_size;
  if (count < 1 || count > kMaxBlocks) {
    throw CodecError(ErrorCode::kInvalidArgument,
                     "block count " + std::to_string(count) + " is outside 1.." + std::to_string(kMaxBlocks));
  }
}


std::string entropy_suffix(size_t count) { return "],\"size\":" + std::to_string(count) + "}"; }
constexpr const char* kEntropyPrefix = "{\"random\":[";
constexpr const char* kAppliancePrefix = "{\"entropy\":[";
const std::string kApplianceSuffix = "],\"extensions\":[]}";

void check_expect(const ApplianceExpect& expect) {
  if (expect.block_size > kMaxApplianceBlockBytes) {
    throw CodecError(ErrorCode::kInvalidArgument, "expected block size " + std::to_string(expect.block_size) +
                                                      " is outside 1..1024");
  }
  if (expect.block_count > kMaxBlocks) {
    throw CodecError(ErrorCode::kInvalidArgument, "expected block count " + std::to_string(expect.block_count) +
                                                      " is outside 1..512");
  }
}

void check_appliance_block_size(size_t block_size) {
  if (block_size < 1 || block_size > kMaxApplianceBlockBytes) {
    throw CodecError(ErrorCode::kInvalidArgument,
                     "block size " + std::to_string(block_size) + " is outside 1.." +
                         std::to_string(kMaxApplianceBlockBytes));
  }
}

Bytes allocating_decode(const uint8_t* body, size_t len, const Shape& shape, DecodeLimits limits,
                        const BulkKernels& kernels) {
  const size_t capacity = capacity_for(len, shape);
  Bytes b;
  b.data = allocate(capacity);
  const DecodeResult r = decode_body(body, len, shape, limits, kernels, b.data.get(), capacity);
  b.size = r.size;
  b.block_size = r.block_size;
  b.block_count = r.block_count;
  shrink(b, capacity);
  return b;
}

}  // namespace

size_t decode_capacity(size_t body_len, bool appliance) {
  return capacity_for(body_len, appliance ? kApplianceShape : kEntropyShape);
}

size_t entropy_response_length(size_t block_count) {
  check_encoder_input(block_count * kEntropyBlockBytes, kEntropyBlockBytes);
  return body_length(kEntropyBlockBytes, block_count, kEntropyPrefix, entropy_suffix(block_count));
}

size_t appliance_response_length(size_t block_size, size_t block_count) {
  check_appliance_block_size(block_size);
  check_encoder_input(block_size * block_count, block_size);
  return body_length(block_size, block_count, kAppliancePrefix, kApplianceSuffix);
}

DecodeResult decode_entropy_response_into(const uint8_t* body, size_t len, uint8_t* out, size_t out_cap,
                                          Kernel kernel) {
  return decode_body(body, len, kEntropyShape, DecodeLimits{kEntropyBlockBytes, 0}, kernels_for(kernel), out,
                     out_cap);
}

DecodeResult decode_appliance_response_into(const uint8_t* body, size_t len, uint8_t* out, size_t out_cap,
                                            ApplianceExpect expect, Kernel kernel) {
  check_expect(expect);
  return decode_body(body, len, kApplianceShape, DecodeLimits{expect.block_size, expect.block_count},
                     kernels_for(kernel), out, out_cap);
}

size_t encode_entropy_response_into(const uint8_t* bytes, size_t len, uint8_t* out, size_t out_cap, Kernel kernel) {
  check_encoder_input(len, kEntropyBlockBytes);
  return encode_body(bytes, len, kEntropyBlockBytes, kEntropyPrefix, entropy_suffix(len / kEntropyBlockBytes),
                     kernels_for(kernel), out, out_cap);
}

size_t encode_appliance_response_into(const uint8_t* bytes, size_t len, size_t block_size, uint8_t* out,
                                      size_t out_cap, Kernel kernel) {
  check_appliance_block_size(block_size);
  check_encoder_input(len, block_size);
  return encode_body(bytes, len, block_size, kAppliancePrefix, kApplianceSuffix, kernels_for(kernel), out, out_cap);
}

Bytes decode_entropy_response(const uint8_t* body, size_t len, Kernel kernel) {
  return allocating_decode(body, len, kEntropyShape, DecodeLimits{kEntropyBlockBytes, 0}, kernels_for(kernel));
}

Bytes decode_appliance_response(const uint8_t* body, size_t len, ApplianceExpect expect, Kernel kernel) {
  check_expect(expect);
  return allocating_decode(body, len, kApplianceShape, DecodeLimits{expect.block_size, expect.block_count},
                           kernels_for(kernel));
}

Bytes encode_entropy_response(const uint8_t* bytes, size_t len, Kernel kernel) {
  check_encoder_input(len, kEntropyBlockBytes);
  Bytes b;
  b.block_size = kEntropyBlockBytes;
  b.block_count = len / kEntropyBlockBytes;
  const size_t total = entropy_response_length(b.block_count);
  b.data = allocate(total);
  b.size = encode_entropy_response_into(bytes, len, b.data.get(), total, kernel);
  return b;
}

Bytes encode_appliance_response(const uint8_t* bytes, size_t len, size_t block_size, Kernel kernel) {
  check_appliance_block_size(block_size);
  check_encoder_input(len, block_size);
  Bytes b;
  b.block_size = block_size;
  b.block_count = len / block_size;
  const size_t total = appliance_response_length(block_size, b.block_count);
  b.data = allocate(total);
  b.size = encode_appliance_response_into(bytes, len, block_size, b.data.get(), total, kernel);
  return b;
}

std::string base64_encode(const uint8_t* data, size_t len, Kernel kernel) {
  std::string out((len + 2) / 3 * 4, '\0');
  encode_block(data, len, data + len, out.data(), kernels_for(kernel));
  return out;
}

std::vector<uint8_t> base64_decode(std::string_view text, Kernel kernel) {
  // Reuse the block decoder by viewing the text as the inside of a JSON string: a quote or
  // backslash in the text is rejected first, so the scanner sees exactly these characters.
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\' || c < 0x20) {
      throw CodecError(ErrorCode::kBase64,
                       "non-base64 character " + describe_char(c) + " at position " + std::to_string(i), -1,
                       static_cast<long>(i), static_cast<long>(i));
    }
  }
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted.push_back('"');
  quoted.append(text);
  quoted.push_back('"');
  std::vector<uint8_t> out(text.size() / 4 * 3 + 3);
  Scanner s(reinterpret_cast<const uint8_t*>(quoted.data()), quoted.size(), 1);
  const size_t n = s.decode_block(out.data(), out.size(), -1, kernels_for(kernel));
  out.resize(n);
  return out;
}

}  // namespace qe::codec
