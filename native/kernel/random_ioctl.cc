#include "kernel/random_ioctl.h"

#include <fcntl.h>
#include <linux/random.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace qe::kernel {

namespace {

std::string advice(const std::string& operation, int e) {
  switch (e) {
    case EPERM:
      return operation +
             ": permission denied (EPERM): adding entropy to the kernel pool needs root with "
             "CAP_SYS_ADMIN in the initial user namespace; a process in a user namespace "
             "(rootless containers, systemd PrivateUsers=) is refused even as uid 0";
    case EACCES:
      return operation + ": access denied (EACCES): the device cannot be opened for writing by this user";
    case ENOTTY:
      return operation + ": not a random device (ENOTTY): the path does not accept random(4) ioctls" +
             (operation.find("RNDRESEEDCRNG") != std::string::npos ? " (RNDRESEEDCRNG needs Linux 4.17 or later)"
                                                                   : "");
    case EINVAL:
      return operation + ": invalid argument (EINVAL)";
    case ENOENT:
      return operation + ": no such device (ENOENT)";
    case EFAULT:
      return operation + ": bad address (EFAULT)";
    default:
      return operation + ": " + std::strerror(e) + " (" + errno_name(e) + ")";
  }
}

}  // namespace

const char* errno_name(int e) {
  switch (e) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case ENOTTY: return "ENOTTY";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case EFAULT: return "EFAULT";
    case EBADF: return "EBADF";
    case EINTR: return "EINTR";
    case ENOMEM: return "ENOMEM";
    case EROFS: return "EROFS";
    case ENXIO: return "ENXIO";
    case ENODEV: return "ENODEV";
    case EISDIR: return "EISDIR";
    default: return "EUNKNOWN";
  }
}

KernelError::KernelError(std::string operation, int error_number)
    : std::runtime_error(advice(operation, error_number)), operation_(std::move(operation)), errno_(error_number) {}

const char* KernelError::code() const { return errno_name(errno_); }

void wipe(void* data, size_t size) {
  if (data && size) explicit_bzero(data, size);
}

RandomDevice::RandomDevice(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) throw KernelError("open " + path, errno);
}

RandomDevice::~RandomDevice() { close(); }

void RandomDevice::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

uint64_t RandomDevice::add_entropy(const uint8_t* data, size_t size, uint32_t credit_bits_per_byte) {
  if (credit_bits_per_byte > kMaxCreditPerByte)
    throw std::invalid_argument("entropy credit must be 0..8 bits per byte");
  if (fd_ < 0) throw KernelError("RNDADDENTROPY on " + path_, EBADF);
  constexpr size_t kChunk = 4096;
  // struct rand_pool_info ends in a flexible array; one allocation holds header and bytes.
  const size_t capacity = sizeof(rand_pool_info) + kChunk;
  struct Deleter {
    size_t n;
    void operator()(void* p) const {
      wipe(p, n);
      std::free(p);
    }
  };
  std::unique_ptr<void, Deleter> storage(std::calloc(1, capacity), Deleter{capacity});
  if (!storage) throw std::bad_alloc();
  auto* info = static_cast<rand_pool_info*>(storage.get());
  uint64_t credited = 0;
  for (size_t off = 0; off < size; off += kChunk) {
    const size_t n = std::min(kChunk, size - off);
    info->buf_size = static_cast<int>(n);
    info->entropy_count = static_cast<int>(n * credit_bits_per_byte);
    std::memcpy(reinterpret_cast<uint8_t*>(info->buf), data + off, n);
    const int rc = ::ioctl(fd_, RNDADDENTROPY, info);
    const int e = errno;
    wipe(info->buf, n);
    if (rc < 0) throw KernelError("RNDADDENTROPY on " + path_, e);
    credited += uint64_t(n) * credit_bits_per_byte;
  }
  return credited;
}

void RandomDevice::reseed_crng() {
  if (fd_ < 0) throw KernelError("RNDRESEEDCRNG on " + path_, EBADF);
  if (::ioctl(fd_, RNDRESEEDCRNG) < 0) throw KernelError("RNDRESEEDCRNG on " + path_, errno);
}

int RandomDevice::entropy_count() {
  if (fd_ < 0) throw KernelError("RNDGETENTCNT on " + path_, EBADF);
  int count = 0;
  if (::ioctl(fd_, RNDGETENTCNT, &count) < 0) throw KernelError("RNDGETENTCNT on " + path_, errno);
  return count;
}

std::string kernel_release() {
  struct utsname u {};
  if (uname(&u) != 0) return "";
  return u.release;
}

bool pool_wakes_writers() {
  const std::string r = kernel_release();
  int major = 0, minor = 0;
  if (std::sscanf(r.c_str(), "%d.%d", &major, &minor) != 2) return false;
  return major < 5 || (major == 5 && minor < 18);
}

}  // namespace qe::kernel
