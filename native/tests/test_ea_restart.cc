// Restart tests (§3.1.4) on a 1000 x 1000 matrix of restarts.
#include <cmath>
#include <string>
#include <vector>

#include "ea/ea.h"
#include "tests/check.h"
#include "tests/ea_reference.h"

namespace {

qe::ea::Samples matrix_of(const std::vector<uint8_t>& data) { return qe::ea::prepare(data.data(), data.size(), 0); }

}  // namespace

QE_TEST(ea_restart_independent_restarts_validate_the_initial_estimate) {
  // NIST's 8-bit random file read as 1,000 restarts of 1,000 samples: rows and columns look
  // alike, the counts stay under the cutoff and the estimate H_I = 7 is validated.
  const qe::ea::RestartResult r = qe::ea::assess_restart(matrix_of(qe::check::read_samples("truerand_8bit.bin")), 7.0, true, {});
  CHECK(r.sanity_passed);
  CHECK(r.max_count <= r.cutoff);
  CHECK(r.validated);
  CHECK_NEAR(r.h_row, r.h_column, 0.2);
  CHECK(r.h_row > 7.0 && r.h_row <= 8.0);
  CHECK_EQ(r.h_min, 7.0);
}

QE_TEST(ea_restart_identical_restarts_fail_the_sanity_check) {
  // Every restart replays the same 1,000 samples: each column is one repeated symbol.
  const std::vector<uint8_t> nist = qe::check::read_samples("truerand_8bit.bin");
  std::vector<uint8_t> replay(1000000);
  for (size_t i = 0; i < replay.size(); ++i) replay[i] = nist[i % 1000];
  const qe::ea::RestartResult r = qe::ea::assess_restart(matrix_of(replay), 7.0, true, {});
  CHECK_EQ(r.max_count, 1000);
  CHECK(!r.sanity_passed);
  CHECK(!r.validated);
}

QE_TEST(ea_restart_cutoff_grows_as_the_claimed_entropy_falls) {
  // The cutoff bounds the most common symbol's count in 1,000 samples: about 1000 * 2^-H plus
  // a margin. With H_I = 1 (p = 1/2) it is a little above 500 + 3 sigma; with H_I = 7.9 it
  // is a few tens.
  const std::vector<uint8_t> nist = qe::check::read_samples("truerand_8bit.bin");
  const qe::ea::Samples m = matrix_of(nist);
  const qe::ea::RestartResult low = qe::ea::assess_restart(m, 1.0, true, {});
  const qe::ea::RestartResult high = qe::ea::assess_restart(m, 7.9, true, {});
  CHECK(low.cutoff > 550 && low.cutoff < 600);
  CHECK(high.cutoff > 10 && high.cutoff < 40);
}

QE_TEST(ea_restart_rejects_data_that_is_not_a_1000_by_1000_matrix) {
  std::vector<uint8_t> two(999999);
  for (size_t i = 0; i < two.size(); ++i) two[i] = static_cast<uint8_t>(i & 1);
  CHECK_THROWS(qe::ea::InputError, qe::ea::assess_restart(matrix_of(two), 1.0, true, {}));
}

#if !defined(__SANITIZE_ADDRESS__)  // the full non-IID estimators on 2 x 10^6 samples
QE_TEST(ea_restart_non_iid_rows_and_columns_match_nists_ea_restart) {
  // `ea_restart -v truerand_8bit.bin 8 7` (NIST's tool, commit 68ed165, run beside this
  // repository; it prints H_r and H_c to 6 decimals): X_max = 16 under its simulated cutoff
  // 27; H_r = 7.865118 (most common value on the rows) and H_c = 6.638405 (the lag predictor
  // on the columns: this file is not restart data, and the columns show it).
  const qe::ea::RestartResult r = qe::ea::assess_restart(matrix_of(qe::check::read_samples("truerand_8bit.bin")), 7.0, false, {});
  CHECK_EQ(r.max_count, 16);
  CHECK(r.cutoff >= 26 && r.cutoff <= 28);  // NIST's is a 5M-round simulation of this quantile
  CHECK_NEAR(r.h_row, 7.865118, 1e-6);
  CHECK_NEAR(r.h_column, 6.638405, 1e-6);
  CHECK(r.validated);  // 6.64 >= H_I / 2
  CHECK_NEAR(r.h_min, 6.638405, 1e-6);
}
#endif
