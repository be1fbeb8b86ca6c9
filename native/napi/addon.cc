// Entry point of qentropy.node: collects the exports of every binding file.
#include <cstddef>
#include <string>

#include "common/cpu.h"
#include "napi/registry.h"

namespace qe::napi {

std::vector<ExportFn>& export_functions() {
  static std::vector<ExportFn> fns;
  return fns;
}

// The version stamp, also readable in the file itself (stripped or not, any architecture):
// test/package.test.ts reads it from each prebuild without loading it.
constexpr char kVersionStamp[] = "qentropy-addon-version=" QENTROPY_VERSION;
constexpr std::size_t kStampPrefix = sizeof("qentropy-addon-version=") - 1;

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("addonVersion", Napi::String::New(env, kVersionStamp + kStampPrefix));
  Napi::Array features = Napi::Array::New(env);
  uint32_t i = 0;
  for (const auto& name : qe::cpu::feature_names()) features.Set(i++, Napi::String::New(env, name));
  exports.Set("cpuFeatures", features);
  for (ExportFn fn : export_functions()) fn(env, exports);
  return exports;
}

}  // namespace qe::napi

static Napi::Object InitQentropy(Napi::Env env, Napi::Object exports) { return qe::napi::Init(env, exports); }

NODE_API_MODULE(qentropy, InitQentropy)
