// Bindings for the health tests (SP 800-90B RCT/APT and the FIPS 140-2 block tests).
// Testers are native objects held by a JS External. Feeding one block is a few
// microseconds, so it runs on the calling thread; a whole response of FIPS blocks (a
// 512 KiB response is 3-9 ms of them) goes to a libuv worker thread instead.
//   healthCutoffs(mode, minEntropy, alphaLog2) -> {rct, apt, window}
//   healthCreate({mode, minEntropy, alphaLog2, startupSamples}) -> handle
//   healthFeed(handle, bytes) -> {passed, ready, failures, firstFailure?}
//   healthStats(handle), healthReset(handle)
//   fipsCreate() -> handle; fipsTestBlock(handle, bytes) -> report; fipsStats, fipsReset
//   fipsTestBlocks(handle, bytes) -> Promise<{passed: Uint8Array, failures: [{index, failed, message}]}>
//     whole 2,500-byte blocks (at most 16 MiB) on a worker thread; one batch at a time per
//     tester, and `bytes` must not be changed until the promise settles.
#include <napi.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "health/fips140.h"
#include "health/health.h"
#include "napi/batch_worker.h"
#include "napi/registry.h"

namespace {

// An External whose pointee is checked by tag before use, so a wrong handle is a
// TypeError and never a wild cast.
template <typename T, uint32_t Tag>
struct Holder {
  uint32_t tag = Tag;
  T value;
  template <typename... A>
  explicit Holder(A&&... a) : value(std::forward<A>(a)...) {}
};

template <typename T, uint32_t Tag>
Napi::External<Holder<T, Tag>> make_handle(Napi::Env env, std::unique_ptr<Holder<T, Tag>> h) {
  return Napi::External<Holder<T, Tag>>::New(env, h.release(), [](Napi::Env, Holder<T, Tag>* p) { delete p; });
}

template <typename T, uint32_t Tag>
T& unwrap(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  auto* h = info[0].As<Napi::External<Holder<T, Tag>>>().Data();
  if (!h || h->tag != Tag) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  return h->value;
}

constexpr uint32_t kHealthTag = 0x48454c54;  // "HELT"
constexpr uint32_t kFipsTag = 0x46495053;    // "FIPS"
using HealthHolder = Holder<qe::health::Tester, kHealthTag>;
// `busy` (event loop only): a batch is on a worker thread, so nothing else may touch the tester.
struct FipsState {
  qe::fips140::Tester tester;
  bool busy = false;
};
using FipsHolder = Holder<FipsState, kFipsTag>;
constexpr size_t kMaxFipsBatchBytes = 16u << 20;

qe::fips140::Tester& idle_fips(const Napi::CallbackInfo& info, const char* fn) {
  FipsState& state = unwrap<FipsState, kFipsTag>(info, fn);
  if (state.busy) throw Napi::Error::New(info.Env(), std::string(fn) + ": the tester is testing a batch");
  return state.tester;
}

Napi::Array failed_names(Napi::Env env, uint32_t mask) {
  Napi::Array failed = Napi::Array::New(env);
  uint32_t n = 0;
  for (int t = 0; t < qe::fips140::kTestCount; ++t)
    if (mask & (1u << t)) failed.Set(n++, qe::fips140::test_name(t));
  return failed;
}

Napi::Uint8Array bytes_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (info.Length() <= i || !info[i].IsTypedArray() ||
      info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(info.Env(), std::string(fn) + ": data must be a Uint8Array or Buffer");
  return info[i].As<Napi::Uint8Array>();
}

qe::health::Config config_from(const Napi::Env& env, const Napi::Object& o) {
  qe::health::Config c;
  if (o.Has("mode")) {
    const std::string mode = o.Get("mode").ToString();
    if (mode == "bytes")
      c.mode = qe::health::SymbolMode::Bytes;
    else if (mode == "bits")
      c.mode = qe::health::SymbolMode::Bits;
    else
      throw Napi::TypeError::New(env, "mode must be 'bytes' or 'bits'");
  }
  c.min_entropy = c.mode == qe::health::SymbolMode::Bytes ? 8.0 : 1.0;
  if (o.Has("minEntropy") && !o.Get("minEntropy").IsUndefined()) c.min_entropy = o.Get("minEntropy").ToNumber();
  if (o.Has("alphaLog2") && !o.Get("alphaLog2").IsUndefined()) c.alpha_log2 = o.Get("alphaLog2").ToNumber();
  if (o.Has("startupSamples") && !o.Get("startupSamples").IsUndefined())
    c.startup_samples = o.Get("startupSamples").ToNumber().Uint32Value();
  return c;
}

Napi::Value HealthCutoffs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object opts = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
  try {
    qe::health::Tester t(config_from(env, opts));
    Napi::Object out = Napi::Object::New(env);
    out.Set("rct", t.rct_cutoff());
    out.Set("apt", t.apt_cutoff());
    out.Set("window", t.window());
    return out;
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

Napi::Value HealthCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object opts = info.Length() > 0 && info[0].IsObject() ? info[0].As<Napi::Object>() : Napi::Object::New(env);
  try {
    return make_handle(env, std::make_unique<HealthHolder>(config_from(env, opts)));
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

Napi::Object failure_object(Napi::Env env, const qe::health::Failure& f) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("test", qe::health::test_name(f.test));
  o.Set("sampleIndex", static_cast<double>(f.sample_index));
  o.Set("blockOffset", static_cast<double>(f.block_offset));
  o.Set("symbol", f.symbol);
  o.Set("count", f.count);
  o.Set("cutoff", f.cutoff);
  o.Set("message", f.describe());
  return o;
}

Napi::Value HealthFeed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& tester = unwrap<qe::health::Tester, kHealthTag>(info, "healthFeed");
  Napi::Uint8Array data = bytes_arg(info, 1, "healthFeed");
  const qe::health::BlockResult r = tester.feed(data.Data(), data.ElementLength());
  Napi::Object out = Napi::Object::New(env);
  out.Set("passed", r.passed);
  out.Set("ready", r.ready);
  out.Set("failures", r.failures);
  if (r.first_failure) out.Set("firstFailure", failure_object(env, *r.first_failure));
  return out;
}

Napi::Value HealthStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& tester = unwrap<qe::health::Tester, kHealthTag>(info, "healthStats");
  const auto& s = tester.stats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("samples", static_cast<double>(s.samples));
  out.Set("rctFailures", static_cast<double>(s.rct_failures));
  out.Set("aptFailures", static_cast<double>(s.apt_failures));
  out.Set("blocksPassed", static_cast<double>(s.blocks_passed));
  out.Set("blocksFailed", static_cast<double>(s.blocks_failed));
  out.Set("ready", tester.ready());
  out.Set("rctCutoff", tester.rct_cutoff());
  out.Set("aptCutoff", tester.apt_cutoff());
  out.Set("window", tester.window());
  return out;
}

Napi::Value HealthReset(const Napi::CallbackInfo& info) {
  unwrap<qe::health::Tester, kHealthTag>(info, "healthReset").reset();
  return info.Env().Undefined();
}

Napi::Value FipsCreate(const Napi::CallbackInfo& info) {
  return make_handle(info.Env(), std::make_unique<FipsHolder>());
}

Napi::Value FipsTestBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& tester = idle_fips(info, "fipsTestBlock");
  Napi::Uint8Array data = bytes_arg(info, 1, "fipsTestBlock");
  if (data.ElementLength() != qe::fips140::kBlockBytes)
    throw Napi::RangeError::New(env, "fipsTestBlock: blocks are exactly 2500 bytes (20,000 bits)");
  const qe::fips140::BlockReport r = tester.test_block(data.Data(), data.ElementLength());
  Napi::Object out = Napi::Object::New(env);
  out.Set("passed", r.passed());
  out.Set("failed", failed_names(env, r.failed));
  out.Set("ones", r.ones);
  out.Set("poker", r.poker);
  out.Set("longestRun", r.longest_run);
  Napi::Array runs = Napi::Array::New(env);
  for (uint32_t v = 0; v < 2; ++v) {
    Napi::Array row = Napi::Array::New(env);
    for (uint32_t i = 0; i < 6; ++i) row.Set(i, r.runs[v][i]);
    runs.Set(v, row);
  }
  out.Set("runs", runs);
  out.Set("message", r.describe());
  return out;
}

Napi::Value FipsStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& tester = idle_fips(info, "fipsStats");
  const auto& s = tester.stats();
  Napi::Object out = Napi::Object::New(env);
  out.Set("blocks", static_cast<double>(s.blocks));
  out.Set("blocksFailed", static_cast<double>(s.blocks_failed));
  Napi::Object per = Napi::Object::New(env);
  for (int t = 0; t < qe::fips140::kTestCount; ++t)
    per.Set(qe::fips140::test_name(t), static_cast<double>(s.failures[static_cast<size_t>(t)]));
  out.Set("failures", per);
  return out;
}

Napi::Value FipsReset(const Napi::CallbackInfo& info) {
  idle_fips(info, "fipsReset").reset();
  return info.Env().Undefined();
}

class FipsWorker : public qe::napi::BatchWorker<FipsHolder> {
 public:
  FipsWorker(Napi::Env env, Napi::External<FipsHolder> handle, Napi::Uint8Array data)
      : BatchWorker(env, "qentropy:fips140", handle, data) {}

 protected:
  void Execute() override {
    try {
      holder_.value.tester.test_blocks(bytes_, length_ / qe::fips140::kBlockBytes, reports_);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }

  Napi::Value result(Napi::Env env) override {
    Napi::Uint8Array passed = Napi::Uint8Array::New(env, reports_.size());
    Napi::Array failures = Napi::Array::New(env);
    uint32_t n = 0;
    for (size_t i = 0; i < reports_.size(); ++i) {
      const qe::fips140::BlockReport& r = reports_[i];
      passed[i] = r.passed() ? 1 : 0;
      if (r.passed()) continue;
      // Only failing blocks cost an object; a healthy source fails about 1 in 1,250.
      Napi::Object f = Napi::Object::New(env);
      f.Set("index", static_cast<double>(i));
      f.Set("failed", failed_names(env, r.failed));
      f.Set("message", r.describe());
      failures.Set(n++, f);
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("passed", passed);
    out.Set("failures", failures);
    return out;
  }

  void released() override { holder_.value.busy = false; }

 private:
  std::vector<qe::fips140::BlockReport> reports_;
};

Napi::Value FipsTestBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  FipsState& state = unwrap<FipsState, kFipsTag>(info, "fipsTestBlocks");
  Napi::Uint8Array data = bytes_arg(info, 1, "fipsTestBlocks");
  const size_t length = data.ElementLength();
  if (length == 0 || length % qe::fips140::kBlockBytes != 0 || length > kMaxFipsBatchBytes)
    throw Napi::RangeError::New(env, "fipsTestBlocks: data must be whole 2500-byte blocks, at most 16 MiB");
  if (state.busy) throw Napi::Error::New(env, "fipsTestBlocks: the tester is testing a batch (one at a time)");
  auto* worker = new FipsWorker(env, info[0].As<Napi::External<FipsHolder>>(), data);
  state.busy = true;
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("healthCutoffs", Napi::Function::New(env, HealthCutoffs, "healthCutoffs"));
  exports.Set("healthCreate", Napi::Function::New(env, HealthCreate, "healthCreate"));
  exports.Set("healthFeed", Napi::Function::New(env, HealthFeed, "healthFeed"));
  exports.Set("healthStats", Napi::Function::New(env, HealthStats, "healthStats"));
  exports.Set("healthReset", Napi::Function::New(env, HealthReset, "healthReset"));
  exports.Set("fipsCreate", Napi::Function::New(env, FipsCreate, "fipsCreate"));
  exports.Set("fipsTestBlock", Napi::Function::New(env, FipsTestBlock, "fipsTestBlock"));
  exports.Set("fipsTestBlocks", Napi::Function::New(env, FipsTestBlocks, "fipsTestBlocks"));
  exports.Set("fipsStats", Napi::Function::New(env, FipsStats, "fipsStats"));
  exports.Set("fipsReset", Napi::Function::New(env, FipsReset, "fipsReset"));
});

}  // namespace
