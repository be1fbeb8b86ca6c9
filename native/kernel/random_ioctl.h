// The kernel sink: feeds bytes into the Linux random pool through the ioctls of
// random(4) on /dev/random, as rngd does.
//
//   RNDADDENTROPY  mixes a buffer in and credits it with a number of bits of entropy
//                  (needs CAP_SYS_ADMIN in the initial user namespace);
//   RNDRESEEDCRNG  makes the kernel's generator reseed from the pool now (Linux >= 4.17),
//                  so what was just added is used at once;
//   RNDGETENTCNT   reads the pool's entropy count in bits (no privilege needed; since
//                  Linux 5.18 it stays at 256 once the generator is ready).
//
// Every buffer that held the caller's bytes is wiped before it is released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace qe::kernel {

// An ioctl or open that failed. `message()` is one line naming the operation, the errno
// symbol, and what to do about it (for EPERM: root, CAP_SYS_ADMIN, user namespaces).
class KernelError : public std::runtime_error {
 public:
  KernelError(std::string operation, int error_number);
  int error_number() const { return errno_; }
  const char* code() const;  // "EPERM", "ENOTTY", ... or "EUNKNOWN"
  const std::string& operation() const { return operation_; }

 private:
  std::string operation_;
  int errno_;
};

// errno symbol for the values the sink can meet ("EPERM", "ENOTTY", ...).
const char* errno_name(int error_number);

inline constexpr uint32_t kMaxCreditPerByte = 8;

class RandomDevice {
 public:
  // Opens `path` (normally /dev/random) for writing. Throws KernelError.
  explicit RandomDevice(const std::string& path = "/dev/random");
  ~RandomDevice();
  RandomDevice(const RandomDevice&) = delete;
  RandomDevice& operator=(const RandomDevice&) = delete;

  // RNDADDENTROPY: mixes `size` bytes in, crediting `credit_bits_per_byte` (0..8) bits per
  // byte. Large inputs go in chunks of at most 4 KiB. Returns the bits credited. Throws
  // std::invalid_argument for a credit outside 0..8, KernelError when the kernel refuses.
  uint64_t add_entropy(const uint8_t* data, size_t size, uint32_t credit_bits_per_byte);
  // RNDRESEEDCRNG. Throws KernelError (ENOTTY/EINVAL on kernels older than 4.17).
  void reseed_crng();
  // RNDGETENTCNT: the pool's entropy count in bits.
  int entropy_count();

  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// The running kernel's release ("6.18.44-...") and whether its pool still wakes writers
// when it runs low (Linux < 5.18); on newer kernels the feeder must be timer-driven.
std::string kernel_release();
bool pool_wakes_writers();

// Wipes memory in a way the compiler cannot drop.
void wipe(void* data, size_t size);

}  // namespace qe::kernel
