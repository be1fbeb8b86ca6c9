// Bindings for native/memlock: memLock(buffer) / memUnlock(buffer) / memDontDump(buffer),
// each returning 0 or an errno value (never throwing for the system's refusal: an unlocked
// buffer is a degraded state the caller reports, not an error).
#include <napi.h>

#include <string>

#include "memlock/memlock.h"
#include "napi/registry.h"

namespace {

Napi::Uint8Array buffer_arg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(info.Env(), std::string(fn) + "(buffer): buffer must be a Uint8Array");
  return info[0].As<Napi::Uint8Array>();
}

Napi::Value MemLock(const Napi::CallbackInfo& info) {
  auto b = buffer_arg(info, "memLock");
  return Napi::Number::New(info.Env(), qe::memlock::lock(b.Data(), b.ElementLength()));
}

Napi::Value MemUnlock(const Napi::CallbackInfo& info) {
  auto b = buffer_arg(info, "memUnlock");
  return Napi::Number::New(info.Env(), qe::memlock::unlock(b.Data(), b.ElementLength()));
}

Napi::Value MemDontDump(const Napi::CallbackInfo& info) {
  auto b = buffer_arg(info, "memDontDump");
  return Napi::Number::New(info.Env(), qe::memlock::exclude_from_core_dumps(b.Data(), b.ElementLength()));
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("memLock", Napi::Function::New(env, MemLock, "memLock"));
  exports.Set("memUnlock", Napi::Function::New(env, MemUnlock, "memUnlock"));
  exports.Set("memDontDump", Napi::Function::New(env, MemDontDump, "memDontDump"));
});

}  // namespace
