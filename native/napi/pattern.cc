// Bindings for the pattern check (health/pattern.h): a tester is a native object held
// by a JS External; a 1 KiB block takes tens of microseconds, so it runs on the calling
// thread like the other health tests.
//   patternCreate({historyBytes, linearBits, linearMargin}) -> handle
//   patternTestBlock(handle, bytes) -> {passed, repeatDistance, linearComplexity, linearBits, linear, message}
//   patternReset(handle)
#include <napi.h>

#include <memory>
#include <stdexcept>
#include <string>

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

Napi::Value PatternTestBlock(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& tester = unwrap(info, "patternTestBlock");
  if (info.Length() < 2 || !info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "patternTestBlock: data must be a Uint8Array or Buffer");
  Napi::Uint8Array data = info[1].As<Napi::Uint8Array>();
  qe::pattern::BlockReport r;
  try {
    r = tester.test_block(data.Data(), data.ElementLength());
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("passed", r.passed);
  out.Set("repeatDistance", static_cast<double>(r.repeat_distance));
  out.Set("linearComplexity", static_cast<double>(r.linear_complexity));
  out.Set("linearBits", static_cast<double>(r.linear_bits));
  out.Set("linear", r.linear);
  out.Set("message", r.describe());
  return out;
}

Napi::Value PatternReset(const Napi::CallbackInfo& info) {
  unwrap(info, "patternReset").reset();
  return info.Env().Undefined();
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("patternCreate", Napi::Function::New(env, PatternCreate, "patternCreate"));
  exports.Set("patternTestBlock", Napi::Function::New(env, PatternTestBlock, "patternTestBlock"));
  exports.Set("patternReset", Napi::Function::New(env, PatternReset, "patternReset"));
});

}  // namespace
