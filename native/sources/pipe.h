// A FIFO standing in for a device (a vendor's daemon writing its QRNG's output into one, or
// a benchmark's generator) holds 64 KiB by default, so every read returns at most that and
// each one waits for the writer to be woken and refill it: at QRNG speeds the reader then
// spends more of its time on the hop per read than on the bytes. A larger pipe lets one
// read take what the writer has produced meanwhile.
#pragma once

#include <cstddef>

namespace qe::sources {

// Grows the pipe behind fd to at least `bytes` (F_SETPIPE_SZ; the kernel rounds up to a
// power-of-two number of pages), never shrinks it. Returns the pipe's size afterwards, or
// -errno when the kernel refused (EPERM past /proc/sys/fs/pipe-max-size for an
// unprivileged process; EBADF when fd is not a pipe).
long grow_pipe(int fd, size_t bytes);

}  // namespace qe::sources
