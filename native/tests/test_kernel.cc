// The kernel sink against the real kernel: as root the ioctls must succeed; as an
// unprivileged user (a forked child that drops to nobody) RNDADDENTROPY must be refused
// with a clear EPERM.
#include <grp.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernel/random_ioctl.h"
#include "tests/check.h"

using qe::kernel::KernelError;
using qe::kernel::RandomDevice;

namespace {

std::vector<uint8_t> os_random(size_t n) {
  std::vector<uint8_t> b(n);
  CHECK_EQ(getrandom(b.data(), n, 0), ssize_t(n));
  return b;
}

bool is_root() { return geteuid() == 0; }

}  // namespace

QE_TEST(entropy_count_is_readable_by_anyone) {
  RandomDevice dev;
  const int count = dev.entropy_count();
  CHECK(count >= 0);
  CHECK(count <= 4096);
  // The ioctl and /proc agree.
  std::FILE* f = std::fopen("/proc/sys/kernel/random/entropy_avail", "r");
  if (f) {
    int proc = -1;
    CHECK(std::fscanf(f, "%d", &proc) == 1);
    std::fclose(f);
    if (!qe::kernel::pool_wakes_writers()) {
      CHECK_EQ(count, proc);  // 5.18+: both a constant 256 once ready
    }
  }
}

QE_TEST(root_adds_entropy_and_reseeds) {
  if (!is_root()) {
    std::printf("  skipped: needs root (CAP_SYS_ADMIN) to call RNDADDENTROPY\n");
    return;
  }
  RandomDevice dev;
  const int before = dev.entropy_count();
  auto bytes = os_random(1024);
  CHECK_EQ(dev.add_entropy(bytes.data(), bytes.size(), 0), uint64_t(0));
  CHECK_EQ(dev.add_entropy(bytes.data(), 64, 8), uint64_t(512));
  // More than one 4 KiB chunk.
  auto big = os_random(10000);
  CHECK_EQ(dev.add_entropy(big.data(), big.size(), 1), uint64_t(10000));
  dev.reseed_crng();
  const int after = dev.entropy_count();
  CHECK(after >= 0);
  CHECK(after <= 4096);
  // Credit never lowers the count (on 5.18+ it is pinned at 256 once the CRNG is ready).
  CHECK(after >= before || after == 256);
}

QE_TEST(credit_above_eight_bits_per_byte_is_rejected) {
  RandomDevice dev;
  uint8_t b[4] = {1, 2, 3, 4};
  CHECK_THROWS(std::invalid_argument, dev.add_entropy(b, sizeof b, 9));
}

// /dev/null opens fine for writing but is no random device: ENOTTY, said plainly.
QE_TEST(not_a_random_device_is_enotty) {
  RandomDevice dev("/dev/null");
  uint8_t b[8] = {};
  try {
    dev.add_entropy(b, sizeof b, 0);
    CHECK(false);
  } catch (const KernelError& e) {
    CHECK_EQ(e.error_number(), ENOTTY);
    CHECK_EQ(std::string(e.code()), std::string("ENOTTY"));
    CHECK(std::string(e.what()).find("not a random device") != std::string::npos);
  }
}

QE_TEST(missing_device_is_enoent) {
  try {
    RandomDevice dev("/nonexistent/random");
    CHECK(false);
  } catch (const KernelError& e) {
    CHECK_EQ(std::string(e.code()), std::string("ENOENT"));
  }
}

// As nobody (uid/gid 65534, no capabilities) the kernel refuses RNDADDENTROPY with EPERM
// and the message tells the operator why. Opening /dev/random for writing is allowed to
// everyone (mode 0666), so the refusal really comes from the ioctl.
QE_TEST(unprivileged_user_gets_a_clear_eperm) {
  if (!is_root()) {
    // Already unprivileged: test directly.
    RandomDevice dev;
    uint8_t b[8] = {};
    CHECK_THROWS(KernelError, dev.add_entropy(b, sizeof b, 0));
    return;
  }
  int pipefd[2];
  CHECK(pipe(pipefd) == 0);
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(pipefd[0]);
    std::string report;
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) {
      report = "setuid failed";
    } else {
      try {
        RandomDevice dev;
        uint8_t b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        dev.add_entropy(b, sizeof b, 8);
        report = "no error";
      } catch (const KernelError& e) {
        report = std::string(e.code()) + "|" + e.what();
      } catch (const std::exception& e) {
        report = std::string("other|") + e.what();
      }
    }
    (void)!write(pipefd[1], report.data(), report.size());
    _exit(0);
  }
  ::close(pipefd[1]);
  std::string got;
  char buf[512];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) got.append(buf, size_t(n));
  ::close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK_EQ(got.substr(0, 6), std::string("EPERM|"));
  CHECK(got.find("CAP_SYS_ADMIN") != std::string::npos);
  CHECK(got.find("user namespace") != std::string::npos);
}

QE_TEST(kernel_release_is_known) {
  const std::string r = qe::kernel::kernel_release();
  CHECK(!r.empty());
}
