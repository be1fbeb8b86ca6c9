// Keeps a buffer of entropy out of swap: mlock(2)/munlock(2) on the pages it spans.
// Node cannot do this itself. Locking needs RLIMIT_MEMLOCK room (8 MiB by default on
// current kernels) or CAP_IPC_LOCK; callers treat failure as "not locked" and go on.
#pragma once

#include <cstddef>

namespace qe::memlock {

// Locks the pages covering [data, data + size). Returns 0 or an errno value.
int lock(const void* data, std::size_t size);
// Unlocks them. Returns 0 or an errno value.
int unlock(const void* data, std::size_t size);
// Marks the pages so they are left out of core dumps (MADV_DONTDUMP); 0 or errno.
// Only whole pages inside the range are marked, so neighbouring memory keeps its setting.
int exclude_from_core_dumps(const void* data, std::size_t size);

}  // namespace qe::memlock
