// Binding for the health gate (health/gate.h): its tests run on libuv worker threads, so
// the event loop only converts the verdicts. A gate takes a second batch while it tests the
// first, and tests them in the order given: the worker goes on to the next batch as soon as
// one is done, instead of idling while the event loop takes the verdicts and hands over the
// next (about a third of each round trip at 64 KiB batches on this project's 2-core machines).
//   gateCreate({minEntropy, alphaLog2, startupSamples, historyBytes, linearBits, linearMargin}) -> handle
//   gateTest(handle, bytes) -> Promise<{flags: Uint8Array, failures: [{index, test?, detail?, pattern?}]}>
// `bytes` is whole 1,024-byte blocks and must not be changed until the promise settles.
// flags per block: 1 RCT/APT passed, 2 start-up complete, 4 pattern check passed,
// 8 equal to the block before it.
#include <napi.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "health/gate.h"
#include "napi/batch_worker.h"
#include "napi/registry.h"

namespace {

constexpr uint32_t kGateTag = 0x47415445;  // "GATE"
// A batch is at most 16 MiB, and a gate holds at most two: the one being tested and the next.
constexpr size_t kMaxBatchBytes = 16u << 20;
constexpr unsigned kMaxBatchesQueued = 2;

struct GateHolder {
  uint32_t tag = kGateTag;
  qe::gate::Gate gate;
  // Batches handed over and not yet settled (event loop only).
  unsigned queued = 0;
  // Turns: each batch takes a ticket when handed over (event loop) and is tested when
  // `serving` reaches it, so the gate's state sees the stream in order even when two worker
  // threads hold a batch each.
  uint64_t next_ticket = 0;
  std::mutex turn_lock;
  std::condition_variable turn_taken;
  uint64_t serving = 0;  // guarded by turn_lock
  GateHolder(const qe::health::Config& h, const qe::pattern::Config& p) : gate(h, p) {}
};

GateHolder& unwrap(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  auto* h = info[0].As<Napi::External<GateHolder>>().Data();
  if (!h || h->tag != kGateTag) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  return *h;
}

Napi::Value GateCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
  auto given = [&](const char* key) { return o.Has(key) && !o.Get(key).IsUndefined(); };
  qe::health::Config h;
  h.mode = qe::health::SymbolMode::Bytes;
  if (given("minEntropy")) h.min_entropy = o.Get("minEntropy").ToNumber();
  if (given("alphaLog2")) h.alpha_log2 = o.Get("alphaLog2").ToNumber();
  if (given("startupSamples")) h.startup_samples = o.Get("startupSamples").ToNumber().Uint32Value();
  qe::pattern::Config p;
  auto size = [&](const char* key, size_t& field) {
    if (given(key)) field = static_cast<size_t>(o.Get(key).ToNumber().Int64Value());
  };
  size("historyBytes", p.history_bytes);
  size("linearBits", p.linear_bits);
  size("linearMargin", p.linear_margin);
  try {
    auto holder = std::make_unique<GateHolder>(h, p);
    return Napi::External<GateHolder>::New(env, holder.release(), [](Napi::Env, GateHolder* g) { delete g; });
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

class GateWorker : public qe::napi::BatchWorker<GateHolder> {
 public:
  GateWorker(Napi::Env env, Napi::External<GateHolder> handle, Napi::Uint8Array data)
      : BatchWorker(env, "qentropy:gate", handle, data), ticket_(holder_.next_ticket++) {}

 protected:
  void Execute() override {
    {
      std::unique_lock<std::mutex> turn(holder_.turn_lock);
      holder_.turn_taken.wait(turn, [this] { return holder_.serving == ticket_; });
    }
    try {
      const size_t blocks = length_ / qe::gate::kBlockBytes;
      verdicts_.reserve(blocks);
      holder_.gate.test(bytes_, blocks, verdicts_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
    {
      const std::lock_guard<std::mutex> turn(holder_.turn_lock);
      ++holder_.serving;
    }
    holder_.turn_taken.notify_all();
  }

  Napi::Value result(Napi::Env env) override {
    Napi::Uint8Array flags = Napi::Uint8Array::New(env, verdicts_.size());
    Napi::Array failures = Napi::Array::New(env);
    uint32_t n = 0;
    for (size_t i = 0; i < verdicts_.size(); ++i) {
      const qe::gate::Verdict& v = verdicts_[i];
      flags[i] = static_cast<uint8_t>((v.health.passed ? 1 : 0) | (v.health.ready ? 2 : 0) | (v.pattern.passed ? 4 : 0) |
                                      (v.repeated ? 8 : 0));
      if (v.health.passed && v.pattern.passed && !v.repeated) continue;
      // Only failing blocks cost an object; a healthy source produces none.
      Napi::Object f = Napi::Object::New(env);
      f.Set("index", static_cast<double>(i));
      if (v.health.first_failure) {
        f.Set("test", qe::health::test_name(v.health.first_failure->test));
        f.Set("detail", v.health.first_failure->describe());
      }
      if (!v.pattern.passed) f.Set("pattern", v.pattern.describe());
      failures.Set(n++, f);
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("flags", flags);
    out.Set("failures", failures);
    return out;
  }

  void released() override { --holder_.queued; }

 private:
  const uint64_t ticket_;
  std::vector<qe::gate::Verdict> verdicts_;
};

Napi::Value GateTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  GateHolder& holder = unwrap(info, "gateTest");
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "gateTest: data must be a Uint8Array or Buffer");
  Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
  const size_t length = data.ElementLength();
  if (length == 0 || length % qe::gate::kBlockBytes != 0 || length > kMaxBatchBytes)
    throw Napi::RangeError::New(env, "gateTest: data must be whole 1024-byte blocks, at most 16 MiB");
  if (holder.queued >= kMaxBatchesQueued)
    throw Napi::Error::New(env, "gateTest: this gate already holds two batches (the one being tested and the next)");
  auto* worker = new GateWorker(env, info[0].As<Napi::External<GateHolder>>(), data);
  ++holder.queued;
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("gateCreate", Napi::Function::New(env, GateCreate, "gateCreate"));
  exports.Set("gateTest", Napi::Function::New(env, GateTest, "gateTest"));
});

}  // namespace
