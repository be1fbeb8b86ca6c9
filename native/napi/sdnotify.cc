// Binding for native/sdnotify: sdNotify(socketPath, state) -> 0 or an errno value.
// One sendto(2) on a datagram socket: microseconds, so it runs on the calling thread.
#include <napi.h>

#include "napi/registry.h"
#include "sdnotify/sdnotify.h"

namespace {

Napi::Value SdNotify(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString())
    throw Napi::TypeError::New(env, "sdNotify(socketPath, state): both must be strings");
  return Napi::Number::New(env, qe::sdnotify::notify(info[0].As<Napi::String>().Utf8Value(), info[1].As<Napi::String>().Utf8Value()));
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("sdNotify", Napi::Function::New(env, SdNotify, "sdNotify"));
});

}  // namespace
