#include "common/cpu.h"

namespace qe::cpu {

#if defined(__x86_64__) || defined(__i386__)
bool has_avx2() { return __builtin_cpu_supports("avx2"); }
bool has_fma() { return __builtin_cpu_supports("fma"); }
bool has_avx512bw() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }
bool has_avx512vbmi2() {
  return has_avx512bw() && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2");
}
bool has_popcnt() { return __builtin_cpu_supports("popcnt"); }
bool has_ssse3() { return __builtin_cpu_supports("ssse3"); }
bool has_sse41() { return __builtin_cpu_supports("sse4.1"); }
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
bool has_avx512vbmi2() { return false; }
bool has_popcnt() { return false; }
bool has_ssse3() { return false; }
bool has_sse41() { return false; }
bool has_rdseed() { return false; }
bool has_rdrand() { return false; }
#endif

std::vector<std::string> feature_names() {
  std::vector<std::string> names;
  if (has_popcnt()) names.emplace_back("popcnt");
  if (has_avx2()) names.emplace_back("avx2");
  if (has_avx512bw()) names.emplace_back("avx512bw");
  if (has_avx512vbmi2()) names.emplace_back("avx512vbmi2");
  if (has_rdrand()) names.emplace_back("rdrand");
  if (has_rdseed()) names.emplace_back("rdseed");
  return names;
}

}  // namespace qe::cpu
