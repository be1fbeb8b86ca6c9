// flock(2) through qe::filelock: a second open description of the file cannot take the
// lock while the first holds it, in this process or in a child, and can once it is
// released or its descriptor closed.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "filelock/filelock.h"
#include "tests/check.h"

namespace {

std::string temp_file() {
  char name[] = "/tmp/qe-filelock-XXXXXX";
  const int fd = ::mkstemp(name);
  CHECK(fd >= 0);
  ::close(fd);
  return name;
}

int open_rw(const std::string& path) { return ::open(path.c_str(), O_RDWR | O_CLOEXEC); }

// Runs try_lock_exclusive on a fresh descriptor in a forked child; returns its result.
int try_lock_in_child(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = open_rw(path);
    const int rc = fd < 0 ? errno : qe::filelock::try_lock_exclusive(fd);
    ::_exit(rc == 0 ? 0 : rc == EWOULDBLOCK ? 1 : 2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

// A held lock refuses a second description and another process until released.
QE_TEST(held_lock_refuses_others_until_released) {
  const std::string path = temp_file();
  const int first = open_rw(path);
  const int second = open_rw(path);
  CHECK(first >= 0 && second >= 0);
  CHECK_EQ(qe::filelock::try_lock_exclusive(first), 0);
  // Taking it again through the same description is allowed (flock semantics).
  CHECK_EQ(qe::filelock::try_lock_exclusive(first), 0);
  CHECK_EQ(qe::filelock::try_lock_exclusive(second), EWOULDBLOCK);
  CHECK_EQ(try_lock_in_child(path), 1);
  CHECK_EQ(qe::filelock::unlock(first), 0);
  CHECK_EQ(qe::filelock::try_lock_exclusive(second), 0);
  CHECK_EQ(try_lock_in_child(path), 1);
  ::close(second);  // closing the descriptor releases it too
  CHECK_EQ(try_lock_in_child(path), 0);
  ::close(first);
  ::unlink(path.c_str());
}

// A bad descriptor is reported, not crashed on.
QE_TEST(bad_descriptor_is_reported) {
  CHECK_EQ(qe::filelock::try_lock_exclusive(-1), EBADF);
  CHECK_EQ(qe::filelock::unlock(-1), EBADF);
}
