// Bindings for the bit-string expansion (native/bitstring), used to stream the quality APIs'
// `random` field. A call expands one chunk (the caller bounds it; 64 KiB of input -> 512 KiB
// of text takes well under a millisecond), so it runs synchronously.
//   bitsToText(bytes: Uint8Array, nbits: number) -> Buffer of nbits '0'/'1' characters
//   textToBits(text: Uint8Array) -> Buffer of packed bits (MSB first); throws on other chars
#include <napi.h>

#include <cmath>
#include <cstdint>

#include "bitstring/bitstring.h"
#include "napi/registry.h"

namespace {

Napi::Uint8Array bytes_arg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() >= 1 && info[0].IsTypedArray()) {
    auto view = info[0].As<Napi::TypedArray>();
    if (view.TypedArrayType() == napi_uint8_array) return view.As<Napi::Uint8Array>();
  }
  throw Napi::TypeError::New(info.Env(), std::string(fn) + ": first argument must be a Buffer or Uint8Array");
}

Napi::Value BitsToText(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto bytes = bytes_arg(info, "bitsToText");
  const size_t available = bytes.ByteLength() * 8;
  size_t nbits = available;
  if (info.Length() >= 2 && !info[1].IsUndefined()) {
    if (!info[1].IsNumber()) throw Napi::TypeError::New(env, "bitsToText: nbits must be a number");
    const double d = info[1].As<Napi::Number>().DoubleValue();
    if (!(d >= 0) || d != std::floor(d) || d > static_cast<double>(available)) {
      throw Napi::RangeError::New(env, "bitsToText: nbits must be an integer from 0 to 8 x the byte length");
    }
    nbits = static_cast<size_t>(d);
  }
  auto out = Napi::Buffer<char>::New(env, nbits);
  qe::bitstring::expand_bits(bytes.Data(), nbits, out.Data());
  return out;
}

Napi::Value TextToBits(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto text = bytes_arg(info, "textToBits");
  const size_t n = text.ByteLength();
  auto out = Napi::Buffer<uint8_t>::New(env, (n + 7) / 8);
  if (!qe::bitstring::pack_bits(reinterpret_cast<const char*>(text.Data()), n, out.Data())) {
    throw Napi::RangeError::New(env, "textToBits: characters must be '0' or '1'");
  }
  return out;
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("bitsToText", Napi::Function::New(env, BitsToText, "bitsToText"));
  exports.Set("textToBits", Napi::Function::New(env, TextToBits, "textToBits"));
});

}  // namespace
