// Large buffers that the kernel faults in all at once (mmap with MAP_POPULATE) instead of a
// page at a time on first touch. Each first touch of a 4 KiB page is a trap into the kernel:
// on the virtual machines measured here it cost ~15 µs a page, so the ~30 MB an SP 800-90B
// assessment writes cost more in faults than in work; populated up front, the same pages
// cost ~4 µs each. Only for buffers that are written in full soon after they are made (a
// populated page that is never used is memory spent for nothing).
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace qe {

// Counts the large buffers made, whatever their element type (see allocate).
inline std::atomic<unsigned> populated_colour{0};

template <typename T>
struct PopulatedAllocator {
  using value_type = T;
  // Below this, malloc's own pools serve (and usually hand back pages already faulted in).
  static constexpr size_t kMinBytes = size_t{256} << 10;
  static constexpr size_t kPage = 4096, kLine = 64;

  PopulatedAllocator() = default;
  template <typename U>
  PopulatedAllocator(const PopulatedAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > (static_cast<size_t>(-1) - kPage) / sizeof(T)) throw std::bad_alloc();
    const size_t bytes = n * sizeof(T);
    if (bytes < kMinBytes) return static_cast<T*>(::operator new(bytes));
    // Each buffer starts a different number of cache lines into its first page. Buffers that
    // all start on a page boundary put element i of every one of them in the same L1 set and
    // give loads and stores at equal offsets the same low 12 address bits, which the CPU
    // may take for a dependency (4K aliasing). (A first measurement blamed this for a 60%
    // slower bzip2 model; it was taken before we knew this VM's two vCPUs differ that much
    // in speed, so it is unconfirmed. The offsets cost under a page per buffer.) 29 is
    // prime to the 63 line offsets, so consecutive buffers start far apart in the page.
    const size_t offset = kLine * (1 + populated_colour.fetch_add(1, std::memory_order_relaxed) * 29 % (kPage / kLine - 1));
    void* p = mmap(nullptr, bytes + offset, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return reinterpret_cast<T*>(static_cast<char*>(p) + offset);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kMinBytes) {
      ::operator delete(p);
      return;
    }
    char* const start = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{kPage - 1});  // offset < kPage
    munmap(start, bytes + static_cast<size_t>(reinterpret_cast<char*>(p) - start));
  }
  template <typename U>
  bool operator==(const PopulatedAllocator<U>&) const noexcept { return true; }
};

// A std::vector whose large allocations are populated up front.
template <typename T>
using PopulatedVector = std::vector<T, PopulatedAllocator<T>>;

// A fixed-size array of trivial T, left as the allocator gives it (zero pages from the
// kernel when large, uninitialised when small): for buffers written in full before they
// are read, which a vector would zero first in one more pass over memory.
template <typename T>
class PopulatedArray {
  static_assert(std::is_trivial_v<T>);

 public:
  explicit PopulatedArray(size_t n) : data_(PopulatedAllocator<T>().allocate(n)), size_(n) {}
  ~PopulatedArray() { PopulatedAllocator<T>().deallocate(data_, size_); }
  PopulatedArray(const PopulatedArray&) = delete;
  PopulatedArray& operator=(const PopulatedArray&) = delete;
  PopulatedArray(PopulatedArray&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }

  T* get() { return data_; }
  const T* get() const { return data_; }
  size_t size() const { return size_; }

 private:
  T* data_;
  size_t size_;
};

}  // namespace qe
