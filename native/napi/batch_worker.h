// A tester's batch of bytes tested on a libuv worker thread, as a Promise: the health
// gate's and the FIPS 140-2 tester's. The worker keeps the tester's handle and the bytes
// alive until it settles; just before it settles, on the event loop, `released()` tells the
// tester it may take its next batch.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>

namespace qe::napi {

template <typename Holder>
class BatchWorker : public Napi::AsyncWorker {
 public:
  BatchWorker(Napi::Env env, const char* resource_name, Napi::External<Holder> handle, Napi::Uint8Array data)
      : Napi::AsyncWorker(env, resource_name),
        holder_(*handle.Data()),
        bytes_(data.Data()),
        length_(data.ElementLength()),
        deferred_(Napi::Promise::Deferred::New(env)),
        handle_ref_(Napi::Persistent(handle)),
        data_ref_(Napi::Persistent(data)) {}

  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  // The promise's value, built on the event loop from what Execute() left.
  virtual Napi::Value result(Napi::Env env) = 0;
  // The batch is done with the tester (settled either way).
  virtual void released() = 0;

  void OnOK() final {
    Napi::Value value = result(Env());
    release();
    deferred_.Resolve(value);
  }

  void OnError(const Napi::Error& e) final {
    Napi::Error err = Napi::Error::New(Env(), e.Message());
    release();
    deferred_.Reject(err.Value());
  }

  Holder& holder_;
  const uint8_t* const bytes_;
  const size_t length_;

 private:
  void release() {
    released();
    data_ref_.Reset();
    handle_ref_.Reset();
  }

  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::External<Holder>> handle_ref_;  // keeps the tester alive while it works
  Napi::Reference<Napi::Uint8Array> data_ref_;
};

}  // namespace qe::napi
