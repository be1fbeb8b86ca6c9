#include "common/cpu.h"
#include "tests/check.h"

// AVX2 implies POPCNT on every x86 CPU that has it; a detection that says otherwise is broken.
QE_TEST(avx2_implies_popcnt) {
  if (qe::cpu::has_avx2()) CHECK(qe::cpu::has_popcnt());
}

QE_TEST(feature_names_match_predicates) {
  const auto names = qe::cpu::feature_names();
  bool listed_avx2 = false;
  for (const auto& n : names) listed_avx2 |= (n == "avx2");
  CHECK_EQ(listed_avx2, qe::cpu::has_avx2());
}
