// The IID track's parts and its thread scaling at fixed work (issue 31 item 2), in process:
//
//   benchmarks/ea/iid.sh FILE [SEEDS] [REPEAT]    (QENTROPY_SIMD=avx2 for an AVX2-only host's paths)
//
// 1. Per part, on the file's 8-bit samples: one Fisher-Yates shuffle of 10^6 symbols, and one
//    compression statistic (the bzip2 length of the shuffled samples' text), the best of REPEAT.
// 2. assess_iid with one thread and with two, on the same SEEDS fixed seeds (the shuffles
//    of thread 0 are the one-thread run's shuffles; thread 1 draws its own), the two
//    alternated seed by seed. How many shuffles and compressions the counting rule asks
//    for depends on the seed, so the line that matters is the last: both thread counts priced
//    at the same work, each run's time taken as fixed + a x compressions + b x shuffles
//    (least squares over its own runs).
// No NIST code here: benchmarks/ea/run.js runs NIST's tool beside the CLI.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/cpu.h"
#include "ea/bzip2_size.h"
#include "ea/ea.h"
#include "ea/shuffle.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Run {
  double seconds;
  double shuffles;
  double compressions;
};

struct Fit {
  double fixed, per_compression, per_shuffle;
  bool ok;
};

double det3(const double m[3][3]) {
  return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

// seconds ~ fixed + a x compressions + b x shuffles, by the normal equations.
Fit fit(const std::vector<Run>& runs) {
  double m[3][3] = {}, v[3] = {};
  for (const Run& r : runs) {
    const double row[3] = {1, r.compressions, r.shuffles};
    for (int i = 0; i < 3; ++i) {
      v[i] += row[i] * r.seconds;
      for (int j = 0; j < 3; ++j) m[i][j] += row[i] * row[j];
    }
  }
  const double d = det3(m);
  if (runs.size() < 4 || std::abs(d) < 1e-9) return {0, 0, 0, false};
  double out[3];
  for (int c = 0; c < 3; ++c) {
    double mc[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) mc[i][j] = j == c ? v[i] : m[i][j];
    out[c] = det3(mc) / d;
  }
  return {out[0], out[1], out[2], true};
}

double mean_of(const std::vector<Run>& runs, double Run::*field) {
  double s = 0;
  for (const Run& r : runs) s += r.*field;
  return s / static_cast<double>(runs.size());
}

Run assess(const qe::ea::Samples& samples, unsigned threads, unsigned seed) {
  qe::ea::IidOptions options;
  options.threads = threads;
  options.seed.assign(32, 0);
  for (size_t i = 0; i < 4; ++i) options.seed[i] = static_cast<uint8_t>(seed >> (8 * i));
  const auto start = Clock::now();
  const qe::ea::IidResult r = qe::ea::assess_iid(samples, options);
  const double t = seconds_since(start);
  double compressions = 0;
  for (long c : r.counts[qe::ea::kPermutationStatistics - 1]) compressions += static_cast<double>(c);
  return {t, static_cast<double>(r.shuffles_run), compressions};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: iid_bench FILE [SEEDS] [REPEAT]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) {
    std::fprintf(stderr, "iid_bench: cannot read %s\n", argv[1]);
    return 2;
  }
  const unsigned seeds = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 8;
  const int repeat = argc > 3 ? std::atoi(argv[3]) : 20;
  const qe::ea::Samples samples = qe::ea::prepare(bytes.data(), bytes.size(), 0);
  const char* cap = std::getenv("QENTROPY_SIMD");
  std::printf("%zu samples, %d bits; cpu:", samples.raw.size(), samples.bits_per_symbol);
  for (const auto& f : qe::cpu::feature_names()) std::printf(" %s", f.c_str());
  std::printf("%s%s\n", cap ? " (QENTROPY_SIMD=" : "", cap ? (std::string(cap) + ")").c_str() : "");

  // 1. The parts.
  qe::ea::Xoshiro rng;
  for (int i = 0; i < 4; ++i) rng.s[i] = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
  std::vector<uint8_t> shuffled(samples.raw);
  double best_shuffle = 1e9, best_compression = 1e9;
  qe::ea::Bzip2Size bzip2;
  size_t length = 0;
  for (int r = 0; r < repeat; ++r) {
    auto start = Clock::now();
    qe::ea::shuffle(shuffled, rng);
    best_shuffle = std::min(best_shuffle, seconds_since(start));
    start = Clock::now();
    length += bzip2.of_decimal_samples(shuffled.data(), shuffled.size(), 9);
    best_compression = std::min(best_compression, seconds_since(start));
  }
  std::printf("shuffle %.3f ms, compression statistic %.2f ms (best of %d; %zu bytes on average)\n", best_shuffle * 1e3,
              best_compression * 1e3, repeat, length / static_cast<size_t>(std::max(repeat, 1)));

  // 2. One thread against two, seed by seed.
  std::vector<Run> one, two;
  for (unsigned s = 1; s <= seeds; ++s) {
    if (s % 2) {
      one.push_back(assess(samples, 1, s));
      two.push_back(assess(samples, 2, s));
    } else {
      two.push_back(assess(samples, 2, s));
      one.push_back(assess(samples, 1, s));
    }
    std::printf("seed %2u   1 thread %.3f s (%4.0f shuffles, %3.0f compressions)   2 threads %.3f s (%4.0f, %3.0f)\n", s,
                one.back().seconds, one.back().shuffles, one.back().compressions, two.back().seconds, two.back().shuffles,
                two.back().compressions);
  }
  std::printf("mean      1 thread %.3f s (%4.0f shuffles, %3.0f compressions)   2 threads %.3f s (%4.0f, %3.0f)   %.2fx\n",
              mean_of(one, &Run::seconds), mean_of(one, &Run::shuffles), mean_of(one, &Run::compressions),
              mean_of(two, &Run::seconds), mean_of(two, &Run::shuffles), mean_of(two, &Run::compressions),
              mean_of(one, &Run::seconds) / mean_of(two, &Run::seconds));
  const Fit f1 = fit(one), f2 = fit(two);
  if (f1.ok && f2.ok) {
    std::vector<Run> all(one);
    all.insert(all.end(), two.begin(), two.end());
    const double c = mean_of(all, &Run::compressions), s = mean_of(all, &Run::shuffles);
    const double t1 = f1.fixed + f1.per_compression * c + f1.per_shuffle * s;
    const double t2 = f2.fixed + f2.per_compression * c + f2.per_shuffle * s;
    std::printf(
        "at equal work (%.0f compressions, %.0f shuffles): 1 thread %.3f s, 2 threads %.3f s, %.2fx"
        "   [fixed %.0f / %.0f ms, per compression %.1f / %.1f ms, per shuffle %.2f / %.2f ms]\n",
        c, s, t1, t2, t1 / t2, f1.fixed * 1e3, f2.fixed * 1e3, f1.per_compression * 1e3, f2.per_compression * 1e3,
        f1.per_shuffle * 1e3, f2.per_shuffle * 1e3);
  } else {
    std::printf("at equal work: not enough spread in the seeds' work to fit (more SEEDS)\n");
  }
  return 0;
}
