// common/populated.h: large buffers mapped and faulted in up front. They must behave as
// ordinary vectors (grow, shrink, move, hold what was written), start on a different cache
// line of their page from one buffer to the next, and unmap exactly what they mapped.
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdint>
#include <set>
#include <vector>

#include "common/populated.h"
#include "tests/check.h"

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

}  // namespace

QE_TEST(populated_vectors_hold_what_is_written_at_every_size) {
  for (size_t n : {size_t{10}, size_t{65535}, size_t{65536}, size_t{1} << 20, (size_t{3} << 20) + 7}) {
    qe::PopulatedVector<uint32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i * 2654435761u);
    v.resize(n + n / 2 + 1);  // grows into a new mapping and copies
    bool same = true;
    for (size_t i = 0; i < n; ++i) same = same && v[i] == static_cast<uint32_t>(i * 2654435761u);
    CHECK(same);
    CHECK_EQ(v[n + n / 2], 0u);
    qe::PopulatedVector<uint32_t> moved = std::move(v);
    CHECK_EQ(moved.size(), n + n / 2 + 1);
    CHECK_EQ(reinterpret_cast<uintptr_t>(moved.data()) % alignof(uint32_t), 0u);
  }
}

QE_TEST(populated_buffers_start_on_different_cache_lines) {
  std::vector<qe::PopulatedVector<uint8_t>> buffers;
  std::set<uintptr_t> offsets;
  for (int i = 0; i < 63; ++i) {  // as many buffers as a page has lines past its first
    buffers.emplace_back(size_t{256} << 10);
    const auto at = reinterpret_cast<uintptr_t>(buffers.back().data());
    CHECK_EQ(at % 64, 0u);
    offsets.insert(at % 4096);
  }
  CHECK_EQ(offsets.size(), 63u);
}

namespace {

// Faults taken while writing one word per page of n words at p.
long faults_writing(uint64_t* p, size_t n) {
  const long before = minor_faults();
  for (size_t i = 0; i < n; i += 512) p[i] = i;
  return minor_faults() - before;
}

}  // namespace

QE_TEST(populated_arrays_are_faulted_in_when_made) {
  constexpr size_t n = size_t{4} << 20;  // 32 MiB of words
  // The baseline: a plain mapping takes its faults when first written (one per page, and
  // under AddressSanitizer some more for its shadow memory, in both cases).
  void* plain = mmap(nullptr, n * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(plain != MAP_FAILED);
  const long plain_faults = faults_writing(static_cast<uint64_t*>(plain), n);
  munmap(plain, n * 8);
  qe::PopulatedArray<uint64_t> a(n);
  const long populated_faults = faults_writing(a.get(), n);
  CHECK(plain_faults >= static_cast<long>(n / 512));
  CHECK(populated_faults < plain_faults / 4);
}
