#include "common/cpu.h"

#include <cstdlib>
#include <cstring>

namespace qe::cpu {

#if defined(__x86_64__) || defined(__i386__)
namespace {

// How far up the vector extensions a kernel may go. QENTROPY_SIMD lowers it, so that one
// machine can run (and benchmark) the code paths of a smaller CPU: an AVX2-only host on an
// AVX-512 one, or the portable code anywhere. Read once; an unknown value leaves it unlimited
// (the addon has no channel for a warning this early, and the value is also echoed by
// `qentropy version` so a typo is visible there).
enum class Level { portable = 0, sse4 = 1, avx2 = 2, avx512 = 3 };

Level parse_level(const char* v) {
  if (v == nullptr) return Level::avx512;
  if (std::strcmp(v, "portable") == 0 || std::strcmp(v, "none") == 0) return Level::portable;
  if (std::strcmp(v, "sse4") == 0) return Level::sse4;
  if (std::strcmp(v, "avx2") == 0) return Level::avx2;
  return Level::avx512;
}

bool allowed(Level needed) {
  static const Level cap = parse_level(std::getenv("QENTROPY_SIMD"));
  return static_cast<int>(needed) <= static_cast<int>(cap);
}

}  // namespace

bool has_avx2() { return allowed(Level::avx2) && __builtin_cpu_supports("avx2"); }
bool has_fma() { return allowed(Level::avx2) && __builtin_cpu_supports("fma"); }
bool has_avx512bw() {
  return allowed(Level::avx512) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}
bool has_avx512vl() {
  return allowed(Level::avx512) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
}
bool has_avx512vbmi2() {
  return has_avx512bw() && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2");
}
bool has_avx512vpopcntdq() { return has_avx512bw() && __builtin_cpu_supports("avx512vpopcntdq"); }
bool has_popcnt() { return __builtin_cpu_supports("popcnt"); }
bool has_ssse3() { return allowed(Level::sse4) && __builtin_cpu_supports("ssse3"); }
bool has_sse41() { return allowed(Level::sse4) && __builtin_cpu_supports("sse4.1"); }
bool has_rdseed() {
  unsigned eax = 7, ebx = 0, ecx = 0, edx = 0;
  __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));
  return (ebx >> 18) & 1u;
}
bool has_rdrand() {
  unsigned eax = 1, ebx = 0, ecx = 0, edx = 0;
  __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));
  return (ecx >> 30) & 1u;
}
#else
bool has_avx2() { return false; }
bool has_fma() { return false; }
bool has_avx512bw() { return false; }
bool has_avx512vl() { return false; }
bool has_avx512vbmi2() { return false; }
bool has_avx512vpopcntdq() { return false; }
bool has_popcnt() { return false; }
bool has_ssse3() { return false; }
bool has_sse41() { return false; }
bool has_rdseed() { return false; }
bool has_rdrand() { return false; }
#endif

std::vector<std::string> feature_names() {
  std::vector<std::string> names;
  if (has_popcnt()) names.emplace_back("popcnt");
  if (has_ssse3()) names.emplace_back("ssse3");
  if (has_sse41()) names.emplace_back("sse4.1");
  if (has_avx2()) names.emplace_back("avx2");
  if (has_fma()) names.emplace_back("fma");
  if (has_avx512bw()) names.emplace_back("avx512bw");
  if (has_avx512vl()) names.emplace_back("avx512vl");
  if (has_avx512vbmi2()) names.emplace_back("avx512vbmi2");
  if (has_avx512vpopcntdq()) names.emplace_back("avx512vpopcntdq");
  if (has_rdrand()) names.emplace_back("rdrand");
  if (has_rdseed()) names.emplace_back("rdseed");
  return names;
}

}  // namespace qe::cpu
