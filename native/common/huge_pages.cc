#include "common/huge_pages.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace qe::detail {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
// Below a few huge pages the saving is small and the rounding up wastes memory.
constexpr size_t kWorthIt = 4 * kHugePage;
}  // namespace

void* huge_page_allocation(size_t bytes) {
  if (bytes < kWorthIt) return std::malloc(bytes == 0 ? 1 : bytes);
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: without transparent huge pages the array simply has ordinary pages.
  if (p != nullptr) (void)::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace qe::detail
