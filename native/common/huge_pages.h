// Large scratch arrays on transparent huge pages.
//
// An array of tens of megabytes, written once in a scattered order, costs a page fault per
// 4 KiB page: for the 64 MB of window keys the bitstring's tuple estimates sort, the faults
// were an eighth of the estimate's time. Where the kernel offers transparent huge pages on
// request (the usual "madvise" setting), a 2 MiB-aligned block asked for with MADV_HUGEPAGE
// faults once per 2 MiB instead. Elsewhere, or for small arrays, it is an ordinary array.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace qe {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
using HugeArray = std::unique_ptr<T[], FreeDeleter>;

namespace detail {
// Aligned storage of `bytes` (rounded up to whole huge pages when large); nullptr on failure.
void* huge_page_allocation(size_t bytes);
}  // namespace detail

// n uninitialised elements of a trivial type.
template <typename T>
HugeArray<T> huge_array(size_t n) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>);
  if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
  void* p = detail::huge_page_allocation(n * sizeof(T));
  if (p == nullptr) throw std::bad_alloc();
  return HugeArray<T>(static_cast<T*>(p));
}

}  // namespace qe
