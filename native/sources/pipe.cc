#include "sources/pipe.h"

#include <fcntl.h>

#include <cerrno>
#include <climits>

namespace qe::sources {

long grow_pipe(int fd, size_t bytes) {
  const int current = fcntl(fd, F_GETPIPE_SZ);
  if (current < 0) return -errno;
  if (static_cast<size_t>(current) >= bytes) return current;
  if (bytes > static_cast<size_t>(INT_MAX)) return -EINVAL;
  const int grown = fcntl(fd, F_SETPIPE_SZ, static_cast<int>(bytes));
  return grown < 0 ? -errno : grown;
}

}  // namespace qe::sources
