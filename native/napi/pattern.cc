// Bindings for the pattern check (health/pattern.h): a tester is a native object held
// by a JS External; a 1 KiB block takes tens of microseconds, so it runs on the calling
// thread like the other health tests.
//   patternCreate({historyBytes, linearBits, linearMargin}) -> handle
//   patternTestBlock(handle, bytes) -> {passed, repeatDistance, linearComplexity, linearBits, linear, message}
//   patternTestBlocks(handle, bytes, blockSize) -> [{index, passed, ...}] for the blocks that failed
//     (the linear complexities of a batch run bit-sliced, 64 blocks at once)
//   patternReset(handle)
#include <napi.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "health/pattern.h"
#include "napi/registry.h"

namespace {

constexpr uint32_t kPatternTag = 0x50415454;  // "PATT"

struct Holder {
  uint32_t tag = kPatternTag;
  qe::pattern::Tester tester;
  explicit Holder(const qe::pattern::Config& c) : tester(c) {}
};

qe::pattern::Tester& unwrap(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  auto* h = info[0].As<Napi::External<Holder>>().Data();
  if (!h || h->tag != kPatternTag) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  return h->tester;
}

Napi::Value PatternCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  qe::pattern::Config c;
  if (info.Length() > 0 && info[0].IsObject()) {
    Napi::Object o = info[0].As<Napi::Object>();
    auto size = [&](const char* key, size_t& field) {
      if (o.Has(key) && !o.Get(key).IsUndefined()) field = static_cast<size_t>(o.Get(key).ToNumber().Int64Value());
    };
    size("historyBytes", c.history_bytes);
    size("linearBits", c.linear_bits);
    size("linearMargin", c.linear_margin);
  }
  try {
    auto h = std::make_unique<Holder>(c);
    return Napi::External<Holder>::New(env, h.release(), [](Napi::Env, Holder* p) { delete p; });
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

Napi::Uint8Array data_argument(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(info.Env(), std::string(fn) + ": data must be a Uint8Array or Buffer");
  return info[1].As<Napi::Uint8Array>();
}

Napi::Object report_object(Napi::Env env, const qe::pattern::BlockReport& r) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("passed", r.passed);
  out.Set("repeatDistance", static_cast<double>(r.repeat_distance));
  out.Set("linearComplexity", static_cast<double>(r.linear_complexity));
  out.Set("linearBits", static_cast<double>(r.linear_bits));
  out.Set("linear", r.linear);
  out.Set("message", r.describe());
  return out;
}

Napi::Value PatternTestBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& tester = unwrap(info, "patternTestBlock");
  Napi::Uint8Array data = data_argument(info, "patternTestBlock");
  qe::pattern::BlockReport r;
  try {
    r = tester.test_block(data.Data(), data.ElementLength());
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
  return report_object(env, r);
}

Napi::Value PatternTestBlocks(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& tester = unwrap(info, "patternTestBlocks");
  Napi::Uint8Array data = data_argument(info, "patternTestBlocks");
  const double block_size = info.Length() > 2 && info[2].IsNumber() ? info[2].As<Napi::Number>().DoubleValue() : 0;
  if (!(block_size >= 1 && block_size <= 1 << 20) || data.ElementLength() % static_cast<size_t>(block_size) != 0)
    throw Napi::RangeError::New(env, "patternTestBlocks: blockSize must divide the data's length");
  const size_t size = static_cast<size_t>(block_size);
  std::vector<qe::pattern::BlockReport> reports(data.ElementLength() / size);
  try {
    tester.test_blocks(data.Data(), size, reports.size(), reports.data());
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
  Napi::Array failures = Napi::Array::New(env);
  for (size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].passed) continue;
    Napi::Object f = report_object(env, reports[i]);
    f.Set("index", static_cast<double>(i));
    failures.Set(failures.Length(), f);
  }
  return failures;
}

Napi::Value PatternReset(const Napi::CallbackInfo& info) {
  unwrap(info, "patternReset").reset();
  return info.Env().Undefined();
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("patternCreate", Napi::Function::New(env, PatternCreate, "patternCreate"));
  exports.Set("patternTestBlock", Napi::Function::New(env, PatternTestBlock, "patternTestBlock"));
  exports.Set("patternTestBlocks", Napi::Function::New(env, PatternTestBlocks, "patternTestBlocks"));
  exports.Set("patternReset", Napi::Function::New(env, PatternReset, "patternReset"));
});

}  // namespace
