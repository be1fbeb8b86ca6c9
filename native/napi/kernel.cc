// Bindings for the kernel sink (random(4) ioctls on /dev/random). Each ioctl is a
// short system call (microseconds for a 4 KiB add), so they run on the calling thread.
//   kernelOpen(path?) -> handle
//   kernelAddEntropy(handle, bytes, creditBitsPerByte) -> bits credited
//   kernelReseedCrng(handle), kernelEntropyCount(handle) -> bits, kernelClose(handle)
//   kernelRelease() -> string, kernelPoolWakesWriters() -> boolean
// Failures throw an Error with `code` (the errno symbol, e.g. 'EPERM'), `errno` and
// `operation`, and a message that says what to do about it.
#include <napi.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "kernel/random_ioctl.h"
#include "napi/registry.h"

namespace {

constexpr uint32_t kTag = 0x4b524e4c;  // "KRNL"
struct Holder {
  uint32_t tag = kTag;
  qe::kernel::RandomDevice device;
  explicit Holder(const std::string& path) : device(path) {}
};

qe::kernel::RandomDevice& unwrap(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  auto* h = info[0].As<Napi::External<Holder>>().Data();
  if (!h || h->tag != kTag) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  return h->device;
}

[[noreturn]] void throw_kernel_error(Napi::Env env, const qe::kernel::KernelError& e) {
  Napi::Error err = Napi::Error::New(env, e.what());
  err.Set("code", Napi::String::New(env, e.code()));
  err.Set("errno", Napi::Number::New(env, e.error_number()));
  err.Set("operation", Napi::String::New(env, e.operation()));
  throw err;
}

Napi::Value KernelOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "/dev/random";
  try {
    auto h = std::make_unique<Holder>(path);
    return Napi::External<Holder>::New(env, h.release(), [](Napi::Env, Holder* p) { delete p; });
  } catch (const qe::kernel::KernelError& e) {
    throw_kernel_error(env, e);
  }
}

Napi::Value KernelAddEntropy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& dev = unwrap(info, "kernelAddEntropy");
  if (info.Length() < 3 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "kernelAddEntropy(handle, bytes, creditBitsPerByte): bytes must be a Uint8Array");
  if (!info[2].IsNumber()) throw Napi::TypeError::New(env, "kernelAddEntropy: creditBitsPerByte must be a number");
  const double credit = info[2].As<Napi::Number>().DoubleValue();
  if (!(credit >= 0 && credit <= qe::kernel::kMaxCreditPerByte) || credit != static_cast<double>(static_cast<uint32_t>(credit)))
    throw Napi::RangeError::New(env, "creditBitsPerByte must be an integer from 0 to 8");
  Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
  try {
    const uint64_t bits = dev.add_entropy(data.Data(), data.ElementLength(), static_cast<uint32_t>(credit));
    return Napi::Number::New(env, static_cast<double>(bits));
  } catch (const qe::kernel::KernelError& e) {
    throw_kernel_error(env, e);
  }
}

Napi::Value KernelReseedCrng(const Napi::CallbackInfo& info) {
  auto& dev = unwrap(info, "kernelReseedCrng");
  try {
    dev.reseed_crng();
  } catch (const qe::kernel::KernelError& e) {
    throw_kernel_error(info.Env(), e);
  }
  return info.Env().Undefined();
}

Napi::Value KernelEntropyCount(const Napi::CallbackInfo& info) {
  auto& dev = unwrap(info, "kernelEntropyCount");
  try {
    return Napi::Number::New(info.Env(), dev.entropy_count());
  } catch (const qe::kernel::KernelError& e) {
    throw_kernel_error(info.Env(), e);
  }
}

Napi::Value KernelClose(const Napi::CallbackInfo& info) {
  unwrap(info, "kernelClose").close();
  return info.Env().Undefined();
}

Napi::Value KernelRelease(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), qe::kernel::kernel_release());
}

Napi::Value KernelPoolWakesWriters(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), qe::kernel::pool_wakes_writers());
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("kernelOpen", Napi::Function::New(env, KernelOpen, "kernelOpen"));
  exports.Set("kernelAddEntropy", Napi::Function::New(env, KernelAddEntropy, "kernelAddEntropy"));
  exports.Set("kernelReseedCrng", Napi::Function::New(env, KernelReseedCrng, "kernelReseedCrng"));
  exports.Set("kernelEntropyCount", Napi::Function::New(env, KernelEntropyCount, "kernelEntropyCount"));
  exports.Set("kernelClose", Napi::Function::New(env, KernelClose, "kernelClose"));
  exports.Set("kernelRelease", Napi::Function::New(env, KernelRelease, "kernelRelease"));
  exports.Set("kernelPoolWakesWriters", Napi::Function::New(env, KernelPoolWakesWriters, "kernelPoolWakesWriters"));
});

}  // namespace
