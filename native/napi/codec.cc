// Bindings for the base64 block codec (native/codec). Every call is well under a
// millisecond even for 512 blocks, so all of them run synchronously on the calling thread.
//   decodeEntropyResponse(body: Buffer|string, opts?: {simd?}) -> Buffer
//   encodeEntropyResponse(bytes: Buffer, opts?: {simd?}) -> Buffer (the body)
//   decodeApplianceResponse(body, opts?: {blockSize?, blockCount?, simd?})
//       -> {data: Buffer, blockSize, blockCount}
//   encodeApplianceResponse(bytes, blockSize, opts?: {simd?}) -> Buffer (the body)
//   decodeEntropyResponseInto(body, target: Uint8Array, opts?) -> bytes written
//   encodeEntropyResponseInto(bytes, target: Uint8Array, opts?) -> body bytes written
//   entropyResponseLength(blocks) -> exact body size
//   codecKernel: 'avx2' | 'scalar' (what the calls use unless told simd: false)
// Codec errors become JS Errors with `code` ('EBLOCKSIZE', 'EBASE64', ...) and, where they
// apply, `blockIndex`, `position` (character in the block) and `offset` (byte in the body).
#include <napi.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "codec/codec.h"
#include "napi/registry.h"

namespace {

using qe::codec::CodecError;
using qe::codec::Kernel;

constexpr size_t kScratchLimit = 4u << 20;

// The body as bytes: a Buffer/Uint8Array is used in place; a string is converted to UTF-8.
struct BodyArg {
  const uint8_t* data = nullptr;
  size_t len = 0;
  std::string utf8;
};

// Fills `b` in place (its data may point into its own string, which must not move).
void body_arg(const Napi::CallbackInfo& info, const char* fn, bool allow_string, BodyArg& b) {
  if (info.Length() >= 1 && info[0].IsTypedArray()) {
    auto view = info[0].As<Napi::TypedArray>();
    if (view.TypedArrayType() == napi_uint8_array) {
      auto u8 = view.As<Napi::Uint8Array>();
      b.data = u8.Data();
      b.len = u8.ByteLength();
      return;
    }
  }
  if (allow_string && info.Length() >= 1 && info[0].IsString()) {
    // Converted into a per-thread scratch buffer that is reused, so a string body costs
    // the UTF-8 transcoding but not fresh pages every call (large ones use a temporary).
    thread_local std::string scratch;
    const napi_env env = info.Env();
    size_t len = 0;
    NAPI_THROW_IF_FAILED_VOID(env, napi_get_value_string_utf8(env, info[0], nullptr, 0, &len));
    std::string& dest = len <= kScratchLimit ? scratch : b.utf8;
    if (dest.size() < len + 1) dest.resize(len + 1);
    size_t copied = 0;
    NAPI_THROW_IF_FAILED_VOID(env, napi_get_value_string_utf8(env, info[0], dest.data(), len + 1, &copied));
    b.data = reinterpret_cast<const uint8_t*>(dest.data());
    b.len = copied;
    return;
  }
  throw Napi::TypeError::New(info.Env(), std::string(fn) + (allow_string ? ": body must be a Buffer, Uint8Array or string"
                                                                         : ": bytes must be a Buffer or Uint8Array"));
}

Napi::Object options_arg(const Napi::CallbackInfo& info, size_t index) {
  if (info.Length() > index && info[index].IsObject()) return info[index].As<Napi::Object>();
  return Napi::Object::New(info.Env());
}

Kernel kernel_option(const Napi::Object& opts) {
  const Napi::Value simd = opts.Get("simd");
  return simd.IsBoolean() && !simd.As<Napi::Boolean>().Value() ? Kernel::kScalar : Kernel::kAuto;
}

size_t size_option(const Napi::Object& opts, const char* name, const char* fn) {
  const Napi::Value v = opts.Get(name);
  if (v.IsUndefined()) return 0;
  if (!v.IsNumber()) throw Napi::TypeError::New(opts.Env(), std::string(fn) + ": " + name + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 1 && d <= 1024) || d != static_cast<double>(static_cast<size_t>(d))) {
    throw Napi::RangeError::New(opts.Env(), std::string(fn) + ": " + name + " must be an integer 1..1024");
  }
  return static_cast<size_t>(d);
}

// A caller-supplied output: a Uint8Array (Buffer) argument.
struct Target {
  uint8_t* data;
  size_t len;
};

Target target_arg(const Napi::CallbackInfo& info, size_t index, const char* fn) {
  if (info.Length() > index && info[index].IsTypedArray()) {
    auto view = info[index].As<Napi::TypedArray>();
    if (view.TypedArrayType() == napi_uint8_array) {
      auto u8 = view.As<Napi::Uint8Array>();
      return {u8.Data(), u8.ByteLength()};
    }
  }
  throw Napi::TypeError::New(info.Env(), std::string(fn) + ": target must be a Buffer or Uint8Array");
}

// Results are written straight into V8-allocated Buffers (no copy, no external-memory
// finalizers). A decoded result smaller than its capacity is returned as a view when the
// slack is small (at most 1/8), else copied to a right-sized Buffer.
Napi::Value fit(Napi::Env env, Napi::Buffer<uint8_t> buf, size_t size) {
  if (size == buf.Length()) return buf;
  if (size >= buf.Length() - buf.Length() / 8) {
    return buf.Get("subarray").As<Napi::Function>().Call(buf, {Napi::Number::New(env, 0), Napi::Number::New(env, static_cast<double>(size))});
  }
  return Napi::Buffer<uint8_t>::Copy(env, buf.Data(), size);
}

[[noreturn]] void throw_js(Napi::Env env, const CodecError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  Napi::Object obj = err.Value();
  obj.Set("code", qe::codec::error_code_name(e.code()));
  if (e.block_index() >= 0) obj.Set("blockIndex", static_cast<double>(e.block_index()));
  if (e.position() >= 0) obj.Set("position", static_cast<double>(e.position()));
  if (e.offset() >= 0) obj.Set("offset", static_cast<double>(e.offset()));
  throw err;
}

Napi::Value DecodeEntropyResponse(const Napi::CallbackInfo& info) {
  BodyArg body;
  body_arg(info, "decodeEntropyResponse", true, body);
  const Kernel kernel = kernel_option(options_arg(info, 1));
  try {
    auto buf = Napi::Buffer<uint8_t>::New(info.Env(), qe::codec::decode_capacity(body.len, false));
    const auto r = qe::codec::decode_entropy_response_into(body.data, body.len, buf.Data(), buf.Length(), kernel);
    return fit(info.Env(), buf, r.size);
  } catch (const CodecError& e) {
    throw_js(info.Env(), e);
  }
}

Napi::Value EncodeEntropyResponse(const Napi::CallbackInfo& info) {
  BodyArg bytes;
  body_arg(info, "encodeEntropyResponse", false, bytes);
  const Kernel kernel = kernel_option(options_arg(info, 1));
  try {
    if (bytes.len % 1024 != 0 || bytes.len == 0 || bytes.len > 512 * 1024) {
      (void)qe::codec::encode_entropy_response_into(bytes.data, bytes.len, nullptr, 0, kernel);  // throws EINVAL
    }
    auto buf = Napi::Buffer<uint8_t>::New(info.Env(), qe::codec::entropy_response_length(bytes.len / 1024));
    qe::codec::encode_entropy_response_into(bytes.data, bytes.len, buf.Data(), buf.Length(), kernel);
    return buf;
  } catch (const CodecError& e) {
    throw_js(info.Env(), e);
  }
}

Napi::Value DecodeApplianceResponse(const Napi::CallbackInfo& info) {
  BodyArg body;
  body_arg(info, "decodeApplianceResponse", true, body);
  const Napi::Object opts = options_arg(info, 1);
  qe::codec::ApplianceExpect expect;
  expect.block_size = size_option(opts, "blockSize", "decodeApplianceResponse");
  const Napi::Value count = opts.Get("blockCount");
  if (!count.IsUndefined()) {
    const double d = count.IsNumber() ? count.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 1 && d <= 512) || d != static_cast<double>(static_cast<size_t>(d))) {
      throw Napi::RangeError::New(info.Env(), "decodeApplianceResponse: blockCount must be an integer 1..512");
    }
    expect.block_count = static_cast<size_t>(d);
  }
  const Kernel kernel = kernel_option(opts);
  try {
    auto buf = Napi::Buffer<uint8_t>::New(info.Env(), qe::codec::decode_capacity(body.len, true));
    const auto r = qe::codec::decode_appliance_response_into(body.data, body.len, buf.Data(), buf.Length(), expect,
                                                             kernel);
    Napi::Object result = Napi::Object::New(info.Env());
    result.Set("blockSize", static_cast<double>(r.block_size));
    result.Set("blockCount", static_cast<double>(r.block_count));
    result.Set("data", fit(info.Env(), buf, r.size));
    return result;
  } catch (const CodecError& e) {
    throw_js(info.Env(), e);
  }
}

Napi::Value EncodeApplianceResponse(const Napi::CallbackInfo& info) {
  BodyArg bytes;
  body_arg(info, "encodeApplianceResponse", false, bytes);
  if (info.Length() < 2 || !info[1].IsNumber()) {
    throw Napi::TypeError::New(info.Env(), "encodeApplianceResponse: blockSize must be a number");
  }
  const double bs = info[1].As<Napi::Number>().DoubleValue();
  if (!(bs >= 1 && bs <= 1024) || bs != static_cast<double>(static_cast<size_t>(bs))) {
    throw Napi::RangeError::New(info.Env(), "encodeApplianceResponse: blockSize must be an integer 1..1024");
  }
  const Kernel kernel = kernel_option(options_arg(info, 2));
  try {
    const size_t block_size = static_cast<size_t>(bs);
    if (bytes.len % block_size != 0 || bytes.len == 0 || bytes.len / block_size > 512) {
      (void)qe::codec::encode_appliance_response_into(bytes.data, bytes.len, block_size, nullptr, 0, kernel);  // throws
    }
    auto buf = Napi::Buffer<uint8_t>::New(
        info.Env(), qe::codec::appliance_response_length(block_size, bytes.len / block_size));
    qe::codec::encode_appliance_response_into(bytes.data, bytes.len, block_size, buf.Data(), buf.Length(), kernel);
    return buf;
  } catch (const CodecError& e) {
    throw_js(info.Env(), e);
  }
}

Napi::Value DecodeEntropyResponseInto(const Napi::CallbackInfo& info) {
  BodyArg body;
  body_arg(info, "decodeEntropyResponseInto", true, body);
  const Target target = target_arg(info, 1, "decodeEntropyResponseInto");
  const Kernel kernel = kernel_option(options_arg(info, 2));
  try {
    const auto r = qe::codec::decode_entropy_response_into(body.data, body.len, target.data, target.len, kernel);
    return Napi::Number::New(info.Env(), static_cast<double>(r.size));
  } catch (const CodecError& e) {
    throw_js(info.Env(), e);
  }
}

Napi::Value EncodeEntropyResponseInto(const Napi::CallbackInfo& info) {
  BodyArg bytes;
  body_arg(info, "encodeEntropyResponseInto", false, bytes);
  const Target target = target_arg(info, 1, "encodeEntropyResponseInto");
  const Kernel kernel = kernel_option(options_arg(info, 2));
  try {
    const size_t n = qe::codec::encode_entropy_response_into(bytes.data, bytes.len, target.data, target.len, kernel);
    return Napi::Number::New(info.Env(), static_cast<double>(n));
  } catch (const CodecError& e) {
    throw_js(info.Env(), e);
  }
}

Napi::Value EntropyResponseLength(const Napi::CallbackInfo& info) {
  const double blocks = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : -1;
  if (!(blocks >= 1 && blocks <= 512) || blocks != static_cast<double>(static_cast<size_t>(blocks))) {
    throw Napi::RangeError::New(info.Env(), "entropyResponseLength: blocks must be an integer 1..512");
  }
  return Napi::Number::New(info.Env(),
                           static_cast<double>(qe::codec::entropy_response_length(static_cast<size_t>(blocks))));
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("decodeEntropyResponse", Napi::Function::New(env, DecodeEntropyResponse, "decodeEntropyResponse"));
  exports.Set("encodeEntropyResponse", Napi::Function::New(env, EncodeEntropyResponse, "encodeEntropyResponse"));
  exports.Set("decodeApplianceResponse", Napi::Function::New(env, DecodeApplianceResponse, "decodeApplianceResponse"));
  exports.Set("encodeApplianceResponse", Napi::Function::New(env, EncodeApplianceResponse, "encodeApplianceResponse"));
  exports.Set("decodeEntropyResponseInto",
              Napi::Function::New(env, DecodeEntropyResponseInto, "decodeEntropyResponseInto"));
  exports.Set("encodeEntropyResponseInto",
              Napi::Function::New(env, EncodeEntropyResponseInto, "encodeEntropyResponseInto"));
  exports.Set("entropyResponseLength", Napi::Function::New(env, EntropyResponseLength, "entropyResponseLength"));
  exports.Set("codecKernel", Napi::String::New(env, qe::codec::active_kernel_name()));
});

}  // namespace
