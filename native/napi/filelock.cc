// Bindings for native/filelock: tryLockFile(fd) / unlockFile(fd), each returning 0 or an
// errno value (EWOULDBLOCK: another holder), never throwing for the system's answer.
#include <napi.h>

#include <string>

#include "filelock/filelock.h"
#include "napi/registry.h"

namespace {

int fd_arg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsNumber())
    throw Napi::TypeError::New(info.Env(), std::string(fn) + "(fd): fd must be a file descriptor number");
  return info[0].As<Napi::Number>().Int32Value();
}

Napi::Value TryLockFile(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), qe::filelock::try_lock_exclusive(fd_arg(info, "tryLockFile")));
}

Napi::Value UnlockFile(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), qe::filelock::unlock(fd_arg(info, "unlockFile")));
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("tryLockFile", Napi::Function::New(env, TryLockFile, "tryLockFile"));
  exports.Set("unlockFile", Napi::Function::New(env, UnlockFile, "unlockFile"));
});

}  // namespace
