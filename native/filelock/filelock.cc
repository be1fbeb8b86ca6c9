#include "filelock/filelock.h"

#include <sys/file.h>

#include <cerrno>

namespace qe::filelock {

int try_lock_exclusive(int fd) {
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

int unlock(int fd) {
  for (;;) {
    if (::flock(fd, LOCK_UN) == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

}  // namespace qe::filelock
