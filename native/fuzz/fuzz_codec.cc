// libFuzzer target for the response decoders (needs clang; CMake option QENTROPY_FUZZ):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Inative
//       native/fuzz/fuzz_codec.cc native/codec/*.cc native/common/cpu.cc -o fuzz_codec
//   ./fuzz_codec -max_len=800000 corpus/
// A seed corpus is any set of response bodies (e.g. written by encodeEntropyResponse).
//
// Properties checked, beyond "no crash, no sanitizer report":
//  * the scalar and the SIMD kernels agree exactly (same bytes, or the same error);
//  * anything accepted re-encodes to a body that decodes to the same bytes;
//  * the entropy shape only ever returns whole 1,024-byte blocks.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "codec/codec.h"

namespace {

struct Outcome {
  bool ok = false;
  int code = -1;
  long block = -1;
  long position = -1;
  std::string bytes;
  size_t block_size = 0;
};

template <typename F>
Outcome run(F&& f) {
  Outcome o;
  try {
    qe::codec::Bytes b = f();
    o.ok = true;
    o.bytes.assign(reinterpret_cast<const char*>(b.data.get()), b.size);
    o.block_size = b.block_size;
  } catch (const qe::codec::CodecError& e) {
    o.code = static_cast<int>(e.code());
    o.block = e.block_index();
    o.position = e.position();
  }
  return o;
}

void require(bool cond) {
  if (!cond) std::abort();
}

void same(const Outcome& a, const Outcome& b) {
  require(a.ok == b.ok && a.code == b.code && a.block == b.block && a.position == b.position && a.bytes == b.bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using qe::codec::Kernel;
  const Outcome scalar = run([&] { return qe::codec::decode_entropy_response(data, size, Kernel::kScalar); });
  const Outcome simd = run([&] { return qe::codec::decode_entropy_response(data, size, Kernel::kAuto); });
  same(scalar, simd);
  if (simd.ok) {
    require(!simd.bytes.empty() && simd.bytes.size() % 1024 == 0);
    const auto* raw = reinterpret_cast<const uint8_t*>(simd.bytes.data());
    qe::codec::Bytes body = qe::codec::encode_entropy_response(raw, simd.bytes.size());
    const Outcome again = run([&] { return qe::codec::decode_entropy_response(body.data.get(), body.size); });
    require(again.ok && again.bytes == simd.bytes);
  }

  const Outcome a_scalar = run([&] { return qe::codec::decode_appliance_response(data, size, {}, Kernel::kScalar); });
  const Outcome a_simd = run([&] { return qe::codec::decode_appliance_response(data, size, {}, Kernel::kAuto); });
  same(a_scalar, a_simd);
  if (a_simd.ok) {
    require(a_simd.block_size >= 1 && a_simd.block_size <= 1024 && a_simd.bytes.size() % a_simd.block_size == 0);
    const auto* raw = reinterpret_cast<const uint8_t*>(a_simd.bytes.data());
    qe::codec::Bytes body = qe::codec::encode_appliance_response(raw, a_simd.bytes.size(), a_simd.block_size);
    const Outcome again = run([&] { return qe::codec::decode_appliance_response(body.data.get(), body.size); });
    require(again.ok && again.bytes == a_simd.bytes);
  }
  return 0;
}
