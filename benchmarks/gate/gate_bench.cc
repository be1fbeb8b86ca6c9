// The health gate's throughput, test by test, plain code against the vector code, beside
// memcpy and rngd's own FIPS 140-2 test (rngtest from rng-tools) on the same bytes.
// benchmarks/gate/run.sh builds and runs it; see benchmarks/README.md.
//
// Times are CPU time of this thread (CLOCK_THREAD_CPUTIME_ID), best of several rounds,
// so other processes on the machine matter less than for wall time; the ratios between
// rows measured in one run are the figures to compare.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "bitsliced_bm/bitsliced_bm.h"
#include "health/berlekamp_massey.h"
#include "health/fips140.h"
#include "health/gate.h"
#include "health/health.h"
#include "health/pattern.h"

namespace {

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// MB/s (10^6 bytes per CPU second) of `run` over `bytes`, best of `rounds`.
double rate(size_t bytes, const std::function<void()>& run, int rounds = 3) {
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = thread_seconds();
    run();
    best = std::min(best, thread_seconds() - t0);
  }
  return double(bytes) / best / 1e6;
}

void row(const char* name, double plain, double vector) {
  if (plain > 0)
    std::printf("%-38s %10.1f %10.1f %7.1fx\n", name, plain, vector, vector / plain);
  else
    std::printf("%-38s %10s %10.1f\n", name, "", vector);
}

// rngtest (rng-tools) on the same bytes: its own "FIPS tests speed" line (avg, Mibit/s,
// converted to MB/s), and bytes per CPU second of the whole process. -1 if it cannot run.
std::pair<double, double> rngtest(const std::vector<uint8_t>& data) {
  const char* path = std::getenv("RNGTEST");
  if (!path || !*path) path = "rngtest";
  int in[2], err[2];
  if (pipe(in) != 0 || pipe(err) != 0) return {-1, -1};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(err[1], 2);
    close(in[1]);
    close(err[0]);
    execlp(path, path, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(err[1]);
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = write(in[1], data.data() + off, data.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(in[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(err[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 127) return {-1, -1};
  const double cpu = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  double own = -1;
  const size_t at = out.find("FIPS tests speed");
  if (at != std::string::npos) {
    const size_t avg = out.find("avg=", at);
    const size_t unit = out.find(')', at);
    if (avg != std::string::npos && unit != std::string::npos) {
      // rngtest scales its unit: bits/s, Kibits/s, Mibits/s, Gibits/s.
      const char prefix = out[unit + 1];
      const double scale = prefix == 'K' ? 1024.0 : prefix == 'M' ? 1048576.0 : prefix == 'G' ? 1073741824.0 : 1.0;
      own = std::atof(out.c_str() + avg + 4) * scale / 8.0 / 1e6;
    }
  }
  return {own, cpu > 0 ? double(data.size()) / cpu / 1e6 : -1};
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 16;
  std::vector<uint8_t> data(mib << 20);
  {
    const int fd = open("/dev/urandom", O_RDONLY);
    size_t off = 0;
    while (fd >= 0 && off < data.size()) {
      const ssize_t n = read(fd, data.data() + off, data.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    if (fd >= 0) close(fd);
  }
  const size_t blocks = data.size() / 1024;
  const size_t fips_bytes = data.size() / qe::fips140::kBlockBytes * qe::fips140::kBlockBytes;
  std::printf("health gate benchmark: %zu MiB of /dev/urandom, 1,024-byte blocks; MB/s of CPU time, best of 3\n", mib);
  std::printf("Berlekamp-Massey kernel: %s\n\n", qe::bm::kernel_name(qe::bm::Kernel::Best));
  std::printf("%-38s %10s %10s %8s\n", "test", "plain", "vector", "ratio");

  std::vector<uint8_t> copy(data.size());
  row("memcpy (ceiling)", 0, rate(data.size(), [&] { std::memcpy(copy.data(), data.data(), data.size()); }));

  qe::health::Config hc;
  hc.min_entropy = 7.5;  // the entropy service's default assessment
  auto rct_apt = [&](bool fast) {
    return rate(data.size(), [&] {
      qe::health::Tester t(hc);
      t.use_word_parallel(fast);
      for (size_t b = 0; b < blocks; ++b) t.feed(data.data() + b * 1024, 1024);
    });
  };
  row("RCT + APT", rct_apt(false), rct_apt(true));

  auto bm = [&](qe::bm::Kernel k) {
    qe::bm::LinearComplexity lc(k);
    return rate(data.size(), [&] {
      for (size_t b = 0; b < blocks; ++b) lc(data.data() + b * 1024, 1280);
    });
  };
  const double bm_plain = bm(qe::bm::Kernel::Portable);
  if (qe::bm::kernel_available(qe::bm::Kernel::Avx2)) row("Berlekamp-Massey 1,280 bits, AVX2", bm_plain, bm(qe::bm::Kernel::Avx2));
  if (qe::bm::kernel_available(qe::bm::Kernel::Avx512))
    row("Berlekamp-Massey 1,280 bits, AVX-512", bm_plain, bm(qe::bm::Kernel::Avx512));

  // 64 blocks side by side (what the gate runs on a batch of 28 or more blocks): the
  // portable build against the vector ones.
  auto sliced = [&](qe::bitsliced_bm::Build build) {
    std::vector<size_t> complexity(blocks);
    return rate(data.size(), [&] {
      qe::bitsliced_bm::linear_complexities(qe::bitsliced_bm::ByteStream{data.data(), data.size()}, 0, 8192, 1280,
                                            blocks, complexity.data(), build);
    });
  };
  const double sliced_plain = sliced(qe::bitsliced_bm::Build::Portable);
  if (qe::bitsliced_bm::available(qe::bitsliced_bm::Build::Avx2))
    row("Berlekamp-Massey 1,280 bits, sliced, AVX2", sliced_plain, sliced(qe::bitsliced_bm::Build::Avx2));
  if (qe::bitsliced_bm::available(qe::bitsliced_bm::Build::Avx512))
    row("Berlekamp-Massey 1,280 bits, sliced, AVX-512", sliced_plain, sliced(qe::bitsliced_bm::Build::Avx512));

  auto pattern = [&](qe::bm::Kernel k, size_t linear_bits) {
    qe::pattern::Config pc;
    pc.linear_bits = linear_bits;
    return rate(data.size(), [&] {
      qe::pattern::Tester t(pc, k);
      for (size_t b = 0; b < blocks; ++b) t.test_block(data.data() + b * 1024, 1024);
    });
  };
  row("pattern: repeats only", pattern(qe::bm::Kernel::Portable, 0), pattern(qe::bm::Kernel::Best, 0));
  row("pattern: repeats + linear, 1 block", pattern(qe::bm::Kernel::Portable, 1280),
      pattern(qe::bm::Kernel::Best, 1280));
  // As the gate calls it: 64 KiB at a time (a source's read), so the linear complexities
  // run bit-sliced.
  auto pattern_batched = [&](qe::bm::Kernel k) {
    std::vector<qe::pattern::BlockReport> reports(64);
    return rate(data.size(), [&] {
      qe::pattern::Tester t({}, k);
      for (size_t b = 0; b + 64 <= blocks; b += 64) t.test_blocks(data.data() + b * 1024, 1024, 64, reports.data());
    });
  };
  row("pattern: repeats + linear, 64 blocks", pattern_batched(qe::bm::Kernel::Portable),
      pattern_batched(qe::bm::Kernel::Best));

  auto fips = [&](qe::fips140::Kernel kernel) {
    return rate(fips_bytes, [&] {
      qe::fips140::Tester t;
      t.use_kernel(kernel);
      for (size_t off = 0; off < fips_bytes; off += qe::fips140::kBlockBytes) t.test_block(data.data() + off, qe::fips140::kBlockBytes);
    });
  };
  const double fips_plain = fips(qe::fips140::Kernel::BitByBit);
  row("FIPS 140-2, 64-bit words (no SIMD)", fips_plain, fips(qe::fips140::Kernel::Words));
  if (std::strcmp(qe::fips140::kernel_name(qe::fips140::Kernel::Avx512bw), "avx512bw") == 0)
    row("FIPS 140-2, AVX-512 BW", fips_plain, fips(qe::fips140::Kernel::Avx512bw));
  const double fips_fast = fips(qe::fips140::Kernel::Best);
  char fips_label[64];
  std::snprintf(fips_label, sizeof fips_label, "FIPS 140-2 (%s)", qe::fips140::kernel_name(qe::fips140::Kernel::Best));
  row(fips_label, fips_plain, fips_fast);

  std::vector<qe::gate::Verdict> verdicts;
  verdicts.reserve(blocks);
  auto gate = [&](bool fast, bool with_fips) {
    return rate(data.size(), [&] {
      qe::gate::Gate g(hc, {}, fast ? qe::bm::Kernel::Best : qe::bm::Kernel::Portable);
      g.use_word_parallel(fast);
      qe::fips140::Tester f;
      f.use_word_parallel(fast);
      verdicts.clear();
      g.test(data.data(), blocks, verdicts);
      if (with_fips)
        for (size_t off = 0; off < fips_bytes; off += qe::fips140::kBlockBytes) f.test_block(data.data() + off, qe::fips140::kBlockBytes);
    });
  };
  row("whole gate (RCT+APT+repeat+pattern)", gate(false, false), gate(true, false));
  row("whole gate + FIPS 140-2", gate(false, true), gate(true, true));

  const auto [own, process] = rngtest(data);
  std::printf("\n");
  if (own < 0 && process < 0) {
    std::printf("rngtest: not run (set RNGTEST to its path)\n");
  } else {
    std::printf("%-38s %10s %10.1f   (its own \"FIPS tests speed\" avg)\n", "rngtest FIPS 140-2", "", own);
    std::printf("%-38s %10s %10.1f   (bytes per CPU second of the process)\n", "rngtest FIPS 140-2, whole process", "",
                process);
    if (own > 0) std::printf("our FIPS 140-2 / rngtest's: %.1fx\n", fips_fast / own);
  }
  return 0;
}
