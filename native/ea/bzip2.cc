#include "ea/bzip2.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>

namespace qe::ea {
namespace {

// libbz2's exported entry point (bzlib.h, stable since bzip2 1.0): dest, destLen, source,
// sourceLen, blockSize100k, verbosity, workFactor. BZ_OK is 0.
using BuffToBuffCompress = int (*)(char*, unsigned*, char*, unsigned, int, int, int);
constexpr int kBzOk = 0;

BuffToBuffCompress compress_fn = nullptr;
std::string load_error;

void load() {
  // The soname Debian and most distributions ship, then the upstream and development names.
  for (const char* name : {"libbz2.so.1.0", "libbz2.so.1", "libbz2.so"}) {
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    compress_fn = reinterpret_cast<BuffToBuffCompress>(dlsym(handle, "BZ2_bzBuffToBuffCompress"));
    if (compress_fn != nullptr) return;
    dlclose(handle);
  }
  const char* why = dlerror();
  load_error = std::string("the IID track's compression statistic needs libbz2 (Debian/Ubuntu: libbz2-1.0), which could not be loaded") +
               (why != nullptr ? std::string(": ") + why : std::string());
}

}  // namespace

void require_bzip2() {
  static std::once_flag once;
  std::call_once(once, load);
  if (compress_fn == nullptr) throw std::runtime_error(load_error);
}

bool bzip2_compress(char* dest, unsigned* dest_len, char* source, unsigned source_len, int block_size_100k) {
  return compress_fn(dest, dest_len, source, source_len, block_size_100k, 0, 0) == kBzOk;
}

}  // namespace qe::ea
