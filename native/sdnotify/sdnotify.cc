#include "sdnotify/sdnotify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace qe::sdnotify {

int notify(const std::string& socket_path, const std::string& state) {
  if (socket_path.empty() || (socket_path[0] != '/' && socket_path[0] != '@')) return EINVAL;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return ENAMETOOLONG;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  // Abstract namespace: the name starts with a NUL byte and is not NUL-terminated.
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_path.size() +
                                               (socket_path[0] == '@' ? 0 : 1));
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int result = 0;
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  if (sent < 0) result = errno;
  else if (static_cast<size_t>(sent) != state.size()) result = EMSGSIZE;
  ::close(fd);
  return result;
}

}  // namespace qe::sdnotify
