// The non-IID track against NIST's own reference outputs: every estimator on the literal
// symbols and on the bitstring, H_original, H_bitstring and the assessed min-entropy, to
// 1e-6 (the tolerance of NIST's self-test).
#include <cmath>
#include <string>
#include <vector>

#include "ea/ea.h"
#include "tests/check.h"
#include "tests/ea_reference.h"

using qe::check::read_ea_reference;
using qe::check::read_samples;

namespace {

constexpr double kTolerance = 1e-6;

void check_file(const std::string& name, unsigned threads) {
  const auto ref = read_ea_reference(name + ".non_iid.res");
  const std::vector<uint8_t> data = read_samples(name + ".bin");
  const qe::ea::Samples s = qe::ea::prepare(data.data(), data.size(), 0);
  qe::ea::NonIidOptions opt;
  opt.threads = threads;
  const qe::ea::NonIidResult r = qe::ea::assess_non_iid(s, opt);
  int compared = 0;
  for (int e = 0; e < qe::ea::kEstimatorCount; ++e) {
    for (const auto& [track, values] : {std::pair{std::string("Literal"), &r.literal}, std::pair{std::string("Bitstring"), &r.bitstring}}) {
      const std::string key = track + " " + qe::ea::kEstimatorKeys[e];
      const double ours = (*values)[static_cast<size_t>(e)];
      if (ref.has(key)) {
        ++compared;
        if (!(std::fabs(ours - ref.at(key)) <= kTolerance))
          qe::check::fail(__FILE__, __LINE__, name + " " + key + ": " + qe::check::show(ours) + " vs NIST " + qe::check::show(ref.at(key)));
      } else if (!std::isnan(ours)) {
        qe::check::fail(__FILE__, __LINE__, name + " " + key + ": NIST does not run it, we gave " + qe::check::show(ours));
      }
    }
  }
  CHECK(compared >= 10);
  if (ref.has("H_bitstring")) CHECK_NEAR(r.h_bitstring, ref.at("H_bitstring"), kTolerance);
  else CHECK(std::isnan(r.h_bitstring));
  CHECK_NEAR(r.h_original, ref.at("H_original"), kTolerance);
  CHECK_NEAR(r.h_assessed, ref.at("H_assessed"), kTolerance);
}

}  // namespace

QE_TEST(ea_non_iid_short_files) {
  for (const char* name : {"rand1_short", "rand4_short", "rand8_short"}) check_file(name, 2);
}

#if !defined(__SANITIZE_ADDRESS__)  // minutes under ASan; the short files cover the code there
QE_TEST(ea_non_iid_million_sample_files) {
  for (const char* name : {"truerand_1bit", "truerand_4bit", "truerand_8bit", "biased-random-bits", "biased-random-bytes",
                           "normal", "ringOsc-nist", "data.pi"})
    check_file(name, 2);
}
#endif
