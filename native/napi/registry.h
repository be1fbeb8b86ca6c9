// Each binding file (native/napi/*.cc) registers a function that adds its exports;
// addon.cc calls them all. Bindings only convert arguments and dispatch into the core.
#pragma once

#include <napi.h>

#include <vector>

namespace qe::napi {

using ExportFn = void (*)(Napi::Env env, Napi::Object exports);

std::vector<ExportFn>& export_functions();

struct RegisterExports {
  explicit RegisterExports(ExportFn fn) { export_functions().push_back(fn); }
};

}  // namespace qe::napi
