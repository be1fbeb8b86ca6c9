// An exclusive advisory lock on an open file: flock(2), which Node cannot call itself.
// The lock belongs to the open file description, so it goes away when the descriptor is
// closed or the process dies (no stale lock files after a crash), and a second open() of
// the same file, in this process or another, cannot take it meanwhile.
#pragma once

namespace qe::filelock {

// Takes the lock without waiting. Returns 0 when taken, EWOULDBLOCK when another open
// description holds it, or another errno value (EBADF, ENOLCK, ...).
int try_lock_exclusive(int fd);

// Gives the lock back (closing the descriptor does too). Returns 0 or an errno value.
int unlock(int fd);

}  // namespace qe::filelock
