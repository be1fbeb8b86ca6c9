// Bindings for native entropy sources: rdseedAvailable() and rdseedFill(size) -> Promise<Buffer>.
// The fill runs on a worker thread (RDSEED delivers a few hundred MB/s at best and may
// stall when drained), so the event loop never waits for it. pipeGrow(fd, bytes) -> the
// pipe's size afterwards, or -errno (sources/pipe.h): one fcntl, done where it is called.
#include <napi.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "napi/registry.h"
#include "sources/pipe.h"
#include "sources/rdseed.h"

namespace {

class RdseedWorker : public Napi::AsyncWorker {
 public:
  RdseedWorker(Napi::Env env, size_t size)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), data_(size) {}

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      qe::sources::rdseed_fill(data_.data(), data_.size());
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::Copy(Env(), data_.data(), data_.size());
    std::memset(data_.data(), 0, data_.size());
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& error) override {
    std::memset(data_.data(), 0, data_.size());
    deferred_.Reject(error.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::vector<uint8_t> data_;
};

Napi::Value RdseedAvailable(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), qe::sources::rdseed_available());
}

Napi::Value RdseedFill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    throw Napi::TypeError::New(env, "rdseedFill(size): size must be a number");
  }
  const double requested = info[0].As<Napi::Number>().DoubleValue();
  if (!(requested >= 1 && requested <= 64.0 * 1024 * 1024) || requested != static_cast<double>(static_cast<size_t>(requested))) {
    throw Napi::RangeError::New(env, "rdseedFill(size): size must be an integer from 1 to 67108864");
  }
  auto* worker = new RdseedWorker(env, static_cast<size_t>(requested));
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

Napi::Value PipeGrow(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber()) throw Napi::TypeError::New(env, "pipeGrow(fd, bytes): two numbers");
  const double fd = info[0].As<Napi::Number>().DoubleValue(), bytes = info[1].As<Napi::Number>().DoubleValue();
  if (!(fd >= 0 && fd <= 2147483647.0 && fd == static_cast<double>(static_cast<int>(fd))))
    throw Napi::RangeError::New(env, "pipeGrow(fd, bytes): fd must be a file descriptor");
  if (!(bytes >= 1 && bytes <= 2147483647.0 && bytes == static_cast<double>(static_cast<size_t>(bytes))))
    throw Napi::RangeError::New(env, "pipeGrow(fd, bytes): bytes must be an integer from 1 to 2147483647");
  return Napi::Number::New(env, static_cast<double>(qe::sources::grow_pipe(static_cast<int>(fd), static_cast<size_t>(bytes))));
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("pipeGrow", Napi::Function::New(env, PipeGrow, "pipeGrow"));
  exports.Set("rdseedAvailable", Napi::Function::New(env, RdseedAvailable, "rdseedAvailable"));
  exports.Set("rdseedFill", Napi::Function::New(env, RdseedFill, "rdseedFill"));
});

}  // namespace
