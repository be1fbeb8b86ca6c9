// grow_pipe on real pipes: the size it reports is the kernel's, one read then takes what
// the larger pipe holds, and what is not a pipe is refused, not mistaken for one.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "sources/pipe.h"
#include "tests/check.h"

using qe::sources::grow_pipe;

QE_TEST(grow_pipe_grows_and_never_shrinks) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  const long before = fcntl(fds[0], F_GETPIPE_SZ);
  CHECK(before > 0);
  CHECK_EQ(grow_pipe(fds[0], 1), before);  // asked for less: left as it is
  const long grown = grow_pipe(fds[0], 256 * 1024);
  CHECK(grown >= 256 * 1024);
  CHECK_EQ(fcntl(fds[1], F_GETPIPE_SZ), grown);  // one pipe, seen from either end
  // What the writer put in meanwhile comes back in one read, past the old 64 KiB.
  std::vector<char> out(200 * 1024, 'q'), in(256 * 1024);
  CHECK_EQ(write(fds[1], out.data(), out.size()), static_cast<ssize_t>(out.size()));
  CHECK_EQ(read(fds[0], in.data(), in.size()), static_cast<ssize_t>(out.size()));
  close(fds[0]);
  close(fds[1]);
}

QE_TEST(grow_pipe_refuses_what_is_not_a_pipe) {
  const int fd = open("/dev/null", O_RDONLY);
  CHECK(fd >= 0);
  CHECK_EQ(grow_pipe(fd, 1024 * 1024), -EBADF);
  close(fd);
  CHECK_EQ(grow_pipe(-1, 1024 * 1024), -EBADF);
}
