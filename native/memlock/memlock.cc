#include "memlock/memlock.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace qe::memlock {

int lock(const void* data, std::size_t size) {
  if (size == 0) return 0;
  return ::mlock(data, size) == 0 ? 0 : errno;
}

int unlock(const void* data, std::size_t size) {
  if (size == 0) return 0;
  return ::munlock(data, size) == 0 ? 0 : errno;
}

int exclude_from_core_dumps(const void* data, std::size_t size) {
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return EINVAL;
  const auto page = static_cast<std::uintptr_t>(page_size);
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + size) / page * page;
  if (last <= first) return 0;  // no whole page inside the range
  return ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTDUMP) == 0 ? 0 : errno;
}

}  // namespace qe::memlock
