// Entry point of qentropy.node: collects the exports of every binding file.
#include <string>

#include "common/cpu.h"
#include "napi/registry.h"

namespace qe::napi {

std::vector<ExportFn>& export_functions() {
  static std::vector<ExportFn> fns;
  return fns;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("addonVersion", Napi::String::New(env, QENTROPY_VERSION));
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
