// sd_notify(3) without libsystemd: one datagram to the unix socket systemd names in
// $NOTIFY_SOCKET. Node has no unix datagram sockets, so the daemon's readiness
// (READY=1), watchdog pings (WATCHDOG=1) and status lines go through here.
#pragma once

#include <string>

namespace qe::sdnotify {

// Sends `state` (e.g. "READY=1\nSTATUS=feeding") to `socket_path`. A leading '@' names
// an abstract socket. Returns 0 on success or an errno value (ENAMETOOLONG for a path
// that does not fit sockaddr_un, EINVAL for an empty or relative path).
int notify(const std::string& socket_path, const std::string& state);

}  // namespace qe::sdnotify
