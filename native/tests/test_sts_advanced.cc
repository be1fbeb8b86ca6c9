// The second half of the NIST SP 800-22 tests (non-overlapping and overlapping template,
// approximate entropy, random excursions and its variant, serial, linear complexity)
// against NIST's own numbers: the P-values the reference implementation sts-2.1.2 prints
// for data.e and data.sha1 (../shared/vectors), the worked examples of SP 800-22 rev1a,
// and the reference's template file and template counts. The word-level fast paths are
// also cross-checked against a plain bit-by-bit transcription of the reference's loops
// on slices whose length and offset are not multiples of 64.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "sts/special.h"
#include "sts/sts.h"
#include "tests/check.h"
#include "tests/reference.h"
#include "tests/sts_vectors.h"

using namespace qe::sts;

namespace {

using qe::check::e_bits;
using qe::check::sha1_bits;

Bits from_string(const std::string& s) { return bits_from_ascii(s); }

Bits constant_bits(size_t n, int bit) {
  Bits b;
  b.n = n;
  b.words.assign((n + 63) / 64, bit ? ~uint64_t{0} : 0);
  if (bit && n % 64 != 0) b.words.back() = ~uint64_t{0} << (64 - n % 64);
  return b;
}

// Compares every P-value of one test with a reference file, NaN (JSON null) included.
void check_against(const std::string& file, const std::string& test, const TestResult& got, double tol,
                   const std::string& object = "tests") {
  const std::vector<double> want = qe::check::reference_pvalues(file, test, object);
  CHECK_EQ(got.p_values.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.p_values.size(); ++i) {
    if (std::isnan(want[i])) {
      if (!std::isnan(got.p_values[i])) {
        qe::check::fail(__FILE__, __LINE__, file + " " + test + "[" + std::to_string(i) + "]: expected null, got " +
                                                qe::check::show(got.p_values[i]));
      }
    } else if (!(std::fabs(got.p_values[i] - want[i]) <= tol)) {
      qe::check::fail(__FILE__, __LINE__, file + " " + test + "[" + std::to_string(i) + "]: " +
                                              qe::check::show(got.p_values[i]) + " vs " + qe::check::show(want[i]));
    }
  }
}

// ---- bit-by-bit transcriptions of the reference's loops (an independent oracle for the
// word-level code on awkward lengths; they share no code with the implementation) ----

double ref_igamc(double a, double x) { return x <= 0 ? 1.0 : igamc(a, x); }

std::vector<double> naive_non_overlapping(const Bits& bits, int m) {
  const std::vector<uint32_t> templates = aperiodic_templates(m);
  const int N = 8;
  const int M = static_cast<int>(bits.n / N);
  const double lambda = (M - m + 1) / std::pow(2, m);
  const double var = M * (1.0 / std::pow(2.0, m) - (2.0 * m - 1.0) / std::pow(2.0, 2.0 * m));
  std::vector<double> out;
  for (const uint32_t t : templates) {
    double chi2 = 0;
    for (int i = 0; i < N; ++i) {
      unsigned w = 0;
      for (int j = 0; j < M - m + 1; ++j) {
        bool match = true;
        for (int k = 0; k < m && match; ++k) match = bits.bit(i * M + j + k) == static_cast<int>((t >> (m - 1 - k)) & 1);
        if (match) {
          ++w;
          j += m - 1;
        }
      }
      chi2 += std::pow((w - lambda) / std::pow(var, 0.5), 2);
    }
    out.push_back(ref_igamc(N / 2.0, chi2 / 2.0));
  }
  return out;
}

int naive_linear_complexity_of(const std::vector<int>& s) {
  const int M = static_cast<int>(s.size());
  std::vector<int> B(M + 1, 0), C(M + 1, 0), T(M + 1, 0);
  int L = 0, m = -1;
  C[0] = B[0] = 1;
  for (int N = 0; N < M; ++N) {
    int d = s[N];
    for (int i = 1; i <= L; ++i) d += C[i] * s[N - i];
    if (d % 2 == 1) {
      T = C;
      for (int j = 0; j + N - m <= M; ++j)
        if (B[j]) C[j + N - m] ^= 1;
      if (L <= N / 2) {
        L = N + 1 - L;
        m = N;
        B = T;
      }
    }
  }
  return L;
}

double naive_linear_complexity(const Bits& bits, int M) {
  const int N = static_cast<int>(bits.n / M);
  const double pi[7] = {0.01047, 0.03125, 0.12500, 0.50000, 0.25000, 0.06250, 0.020833};
  double nu[7] = {0};
  for (int ii = 0; ii < N; ++ii) {
    std::vector<int> s(M);
    for (int k = 0; k < M; ++k) s[k] = bits.bit(ii * M + k);
    const int L = naive_linear_complexity_of(s);
    const int sign1 = (M + 1) % 2 == 0 ? -1 : 1;
    const double mean = M / 2.0 + (9.0 + sign1) / 36.0 - 1.0 / std::pow(2, M) * (M / 3.0 + 2.0 / 9.0);
    const int sign2 = M % 2 == 0 ? 1 : -1;
    const double t = sign2 * (L - mean) + 2.0 / 9.0;
    int cls = 6;
    const double bounds[6] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5};
    for (int c = 0; c < 6; ++c)
      if (t <= bounds[c]) {
        cls = c;
        break;
      }
    nu[cls]++;
  }
  double chi2 = 0;
  for (int i = 0; i < 7; ++i) chi2 += std::pow(nu[i] - N * pi[i], 2) / (N * pi[i]);
  return ref_igamc(3.0, chi2 / 2.0);
}

// The reference's psi2 and ApEn loops (cyclic pattern counts, bit by bit).
std::vector<unsigned> naive_cyclic_counts(const Bits& bits, int k) {
  std::vector<unsigned> P(size_t{1} << k, 0);
  for (size_t i = 0; i < bits.n; ++i) {
    unsigned v = 0;
    for (int j = 0; j < k; ++j) v = (v << 1) | static_cast<unsigned>(bits.bit((i + j) % bits.n));
    P[v]++;
  }
  return P;
}

double naive_psi2(const Bits& bits, int m) {
  if (m <= 0) return 0;
  double sum = 0;
  for (const unsigned p : naive_cyclic_counts(bits, m)) sum += std::pow(p, 2);
  return sum * std::pow(2, m) / static_cast<double>(bits.n) - static_cast<double>(bits.n);
}

std::vector<double> naive_serial(const Bits& bits, int m) {
  const double p0 = naive_psi2(bits, m), p1 = naive_psi2(bits, m - 1), p2 = naive_psi2(bits, m - 2);
  return {ref_igamc(std::pow(2, m - 1) / 2, (p0 - p1) / 2.0), ref_igamc(std::pow(2, m - 2) / 2, (p0 - 2 * p1 + p2) / 2.0)};
}

double naive_apen(const Bits& bits, int m) {
  double apen[2];
  for (int r = 0; r < 2; ++r) {
    const int k = m + r;
    if (k == 0) {
      apen[r] = 0;
      continue;
    }
    double sum = 0;
    const double n = static_cast<double>(bits.n);
    for (const unsigned p : naive_cyclic_counts(bits, k))
      if (p > 0) sum += p * std::log(p / n);
    apen[r] = sum / n;
  }
  const double chi = 2.0 * static_cast<double>(bits.n) * (std::log(2) - (apen[0] - apen[1]));
  return ref_igamc(std::pow(2, m - 1), chi / 2.0);
}

// The reference's random excursions loops over the stored walk S_k.
struct NaiveExcursions {
  std::vector<double> excursions, variant;
  long J = 0;
};

NaiveExcursions naive_excursions(const Bits& bits) {
  const long n = static_cast<long>(bits.n);
  std::vector<long> S(n);
  std::vector<long> cycle_end;  // index of each zero
  S[0] = 2 * bits.bit(0) - 1;
  for (long i = 1; i < n; ++i) {
    S[i] = S[i - 1] + 2 * bits.bit(i) - 1;
    if (S[i] == 0) cycle_end.push_back(i);
  }
  long J = static_cast<long>(cycle_end.size());
  if (S[n - 1] != 0) {
    ++J;
    cycle_end.push_back(n);
  } else {
    cycle_end.back() = n;
  }
  NaiveExcursions out;
  out.J = J;
  const double pi[5][6] = {{0, 0, 0, 0, 0, 0},
                           {0.5000000000, 0.25000000000, 0.12500000000, 0.06250000000, 0.03125000000, 0.0312500000},
                           {0.7500000000, 0.06250000000, 0.04687500000, 0.03515625000, 0.02636718750, 0.0791015625},
                           {0.8333333333, 0.02777777778, 0.02314814815, 0.01929012346, 0.01607510288, 0.0803755144},
                           {0.8750000000, 0.01562500000, 0.01367187500, 0.01196289063, 0.01046752930, 0.0732727051}};
  const int states[8] = {-4, -3, -2, -1, 1, 2, 3, 4};
  double nu[6][8] = {};
  long start = 0;
  for (long j = 0; j < J; ++j) {
    int counter[8] = {0};
    for (long i = start; i < cycle_end[j]; ++i)
      for (int s = 0; s < 8; ++s)
        if (S[i] == states[s]) counter[s]++;
    start = cycle_end[j] + 1;
    for (int s = 0; s < 8; ++s) nu[std::min(counter[s], 5)][s]++;
  }
  for (int s = 0; s < 8; ++s) {
    double sum = 0;
    for (int k = 0; k < 6; ++k) {
      const double e = J * pi[std::abs(states[s])][k];
      sum += std::pow(nu[k][s] - e, 2) / e;
    }
    out.excursions.push_back(ref_igamc(2.5, sum / 2.0));
  }
  for (int x = -9; x <= 9; ++x) {
    if (x == 0) continue;
    long count = 0;
    for (long i = 0; i < n; ++i) count += S[i] == x;
    out.variant.push_back(std::erfc(std::fabs(static_cast<double>(count - J)) / std::sqrt(2.0 * J * (4.0 * std::abs(x) - 2))));
  }
  return out;
}

double naive_overlapping(const Bits& bits, int m) {
  const int M = 1032, K = 5;
  const int N = static_cast<int>(bits.n / M);
  const double lambda = (M - m + 1) / std::pow(2, m), eta = lambda / 2.0;
  double pi[6], sum = 0;
  for (int u = 0; u < K; ++u) {
    double p = std::exp(-eta);
    if (u > 0) {
      p = 0;
      for (int l = 1; l <= u; ++l)
        p += std::exp(-eta - u * std::log(2) + l * std::log(eta) - std::lgamma(l + 1) + std::lgamma(u) -
                      std::lgamma(l) - std::lgamma(u - l + 1));
    }
    pi[u] = p;
    sum += p;
  }
  pi[K] = 1 - sum;
  unsigned nu[6] = {0};
  for (int i = 0; i < N; ++i) {
    int w = 0;
    for (int j = 0; j < M - m + 1; ++j) {
      bool all = true;
      for (int k = 0; k < m; ++k) all = all && bits.bit(i * M + j + k) == 1;
      w += all;
    }
    nu[std::min(w, 5)]++;
  }
  double chi2 = 0;
  for (int i = 0; i <= K; ++i) chi2 += std::pow(nu[i] - N * pi[i], 2) / (N * pi[i]);
  return ref_igamc(K / 2.0, chi2 / 2.0);
}

void check_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  if (got.size() != want.size()) {
    qe::check::fail(__FILE__, __LINE__, what + ": " + std::to_string(got.size()) + " P-values, expected " +
                                            std::to_string(want.size()));
    return;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-12)) {
      qe::check::fail(__FILE__, __LINE__, what + "[" + std::to_string(i) + "]: " + qe::check::show(got[i]) + " vs " +
                                              qe::check::show(want[i]));
    }
  }
}

// The popcount ceiling: one pass of the POPCNT instruction (where the CPU has it) over the words.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
uint64_t popcount_pass(const std::vector<uint64_t>& words) {
  uint64_t ones = 0;
  for (const uint64_t w : words) ones += static_cast<uint64_t>(__builtin_popcountll(w));
  return ones;
}

bool sane(const TestResult& r) {
  bool ok = !r.p_values.empty();
  bool any_nan = false;
  for (const double p : r.p_values) {
    if (std::isnan(p)) any_nan = true;
    else ok = ok && p >= 0 && p <= 1;
  }
  return ok && (!any_nan || !r.note.empty());
}

}  // namespace

// ---- templates ----

QE_TEST(aperiodic_templates_m9_is_nists_template9_file) {
  const std::string text = qe::check::read_file(qe::check::vector_path("template9"));
  std::vector<uint32_t> file;
  uint32_t value = 0;
  int digits = 0;
  for (const char c : text) {
    if (c == '0' || c == '1') {
      value = (value << 1) | static_cast<uint32_t>(c - '0');
      if (++digits == 9) {
        file.push_back(value);
        value = 0;
        digits = 0;
      }
    }
  }
  CHECK_EQ(file.size(), size_t{148});
  CHECK(aperiodic_templates(9) == file);
}

QE_TEST(aperiodic_template_counts_are_nists) {
  // numOfTemplates[] of the reference's nonOverlappingTemplateMatchings.c (m = 2..21).
  const size_t counts[22] = {0, 0, 2, 4, 6, 12, 20, 40, 74, 148, 284, 568, 1116,
                             2232, 4424, 8848, 17622, 35244, 70340, 140680, 281076, 562152};
  for (int m = 2; m <= 21; ++m) CHECK_EQ(aperiodic_templates(m).size(), counts[m]);
  // Small cases by hand: the words with no proper border.
  CHECK((aperiodic_templates(2) == std::vector<uint32_t>{0b01, 0b10}));
  CHECK((aperiodic_templates(3) == std::vector<uint32_t>{0b001, 0b011, 0b100, 0b110}));
  CHECK_THROWS(std::invalid_argument, aperiodic_templates(1));
  CHECK_THROWS(std::invalid_argument, aperiodic_templates(22));
}

QE_TEST(tested_templates_follow_the_reference_cap) {
  // sts-2.1.2 tests MAXNUMOFTEMPLATES = 148 at most: all for m <= 9, the first 148 of 284
  // for m = 10, every floor(count/148)-th from m = 11 (568/148 = 3 for m = 11).
  CHECK(tested_templates(9) == aperiodic_templates(9));
  CHECK_EQ(tested_templates(5).size(), size_t{12});
  const auto all10 = aperiodic_templates(10);
  CHECK((tested_templates(10) == std::vector<uint32_t>(all10.begin(), all10.begin() + 148)));
  const auto all11 = aperiodic_templates(11);
  const auto t11 = tested_templates(11);
  CHECK_EQ(t11.size(), size_t{148});
  CHECK_EQ(t11[1], all11[3]);
  CHECK_EQ(t11[147], all11[147 * 3]);
  CHECK_EQ(non_overlapping_template(slice(e_bits(), 0, 100000), 11).p_values.size(), size_t{148});
}

QE_TEST(non_overlapping_template_matches_reference_e) {
  check_against("reference-pvalues-e.json", "non_overlapping_template", non_overlapping_template(e_bits(), 9), 1e-6);
}

QE_TEST(non_overlapping_template_matches_reference_sha1) {
  const TestResult r = non_overlapping_template(sha1_bits(), 9);
  check_against("reference-pvalues-sha1.json", "non_overlapping_template", r, 1e-6);
  check_against("reference-pvalues-sha1.json", "non_overlapping_template", r, 1e-9, "tests_full_precision");
}

QE_TEST(overlapping_template_matches_reference) {
  // Also SP 800-22 rev1a section 2.8.8 (e, n = 10^6, m = 9): P-value = 0.110434.
  check_against("reference-pvalues-e.json", "overlapping_template", overlapping_template(e_bits(), 9), 1e-6);
  const TestResult r = overlapping_template(sha1_bits(), 9);
  check_against("reference-pvalues-sha1.json", "overlapping_template", r, 1e-6);
  check_against("reference-pvalues-sha1.json", "overlapping_template", r, 1e-9, "tests_full_precision");
}

// ---- approximate entropy and serial ----

QE_TEST(approximate_entropy_matches_reference) {
  check_against("reference-pvalues-e.json", "approximate_entropy", approximate_entropy(e_bits(), 10), 1e-6);
  const TestResult r = approximate_entropy(sha1_bits(), 10);
  check_against("reference-pvalues-sha1.json", "approximate_entropy", r, 1e-6);
  check_against("reference-pvalues-sha1.json", "approximate_entropy", r, 1e-9, "tests_full_precision");
}

QE_TEST(approximate_entropy_sp800_22_examples) {
  // Section 2.12.4: epsilon = 0100110101, m = 3 -> P-value = 0.261961.
  CHECK_NEAR(approximate_entropy(from_string("0100110101"), 3).p_values.at(0), 0.261961, 1e-6);
  // Section 2.12.8: the first 100 bits of pi's expansion, m = 2 -> P-value = 0.235301.
  const Bits pi100 = from_string(
      "1100100100001111110110101010001000100001011010001100001000110100110001001100011001100010100010111000");
  CHECK_NEAR(approximate_entropy(pi100, 2).p_values.at(0), 0.235301, 1e-6);
}

QE_TEST(serial_matches_reference) {
  check_against("reference-pvalues-e.json", "serial", serial(e_bits(), 16), 1e-6);
  const TestResult r = serial(sha1_bits(), 16);
  check_against("reference-pvalues-sha1.json", "serial", r, 1e-6);
  check_against("reference-pvalues-sha1.json", "serial", r, 1e-9, "tests_full_precision");
}

QE_TEST(serial_sp800_22_examples) {
  // Section 2.11.4/2.11.6: epsilon = 0011011101, m = 3 -> P-value1 = igamc(2, 0.8) =
  // 0.808792, P-value2 = igamc(1, 0.4) = 0.670320 (the 0.9057 / 0.8805 printed in step 5
  // of 2.11.4 are a known erratum of the paper; 2.11.6 gives these).
  const TestResult small = serial(from_string("0011011101"), 3);
  CHECK_NEAR(small.p_values.at(0), 0.808792, 1e-6);
  CHECK_NEAR(small.p_values.at(1), 0.670320, 1e-6);
  // Section 2.11.8: e, n = 10^6, m = 2 -> P-value1 = 0.843764, P-value2 = 0.561915.
  const TestResult e = serial(e_bits(), 2);
  CHECK_NEAR(e.p_values.at(0), 0.843764, 1e-6);
  CHECK_NEAR(e.p_values.at(1), 0.561915, 1e-6);
}

// ---- random excursions ----

QE_TEST(random_excursions_matches_reference_e) {
  // Also SP 800-22 rev1a section 2.14.8 / 2.15.8 (e, n = 10^6, J = 1490).
  check_against("reference-pvalues-e.json", "random_excursions", random_excursions(e_bits()), 1e-6);
  check_against("reference-pvalues-e.json", "random_excursions_variant", random_excursions_variant(e_bits()), 1e-6);
}

QE_TEST(random_excursions_not_applicable_with_412_cycles) {
  // data.sha1 has J = 412 < 500 cycles: the reference reports the test as not applicable.
  const TestResult r = random_excursions(sha1_bits());
  const TestResult v = random_excursions_variant(sha1_bits());
  check_against("reference-pvalues-sha1.json", "random_excursions", r, 1e-6);
  check_against("reference-pvalues-sha1.json", "random_excursions_variant", v, 1e-6);
  CHECK(r.note.find("J = 412") != std::string::npos);
  CHECK(v.note.find("J = 412") != std::string::npos);
}

// ---- serial and approximate entropy from one pass ----

QE_TEST(serial_and_approximate_entropy_together_equal_each_alone) {
  // Either window length may be the longer, equal lengths, m at the low ends, lengths
  // that do not fit n (each test then says so alone), on sequences of several lengths.
  const std::pair<int, int> params[] = {{16, 10}, {5, 10}, {11, 10}, {10, 10}, {3, 0}, {1, 0},
                                        {2, 1},   {20, 3}, {3, 20}, {0, 2},   {4, -1}};
  for (const size_t n : {size_t{999989}, size_t{100003}, size_t{1000}, size_t{37}}) {
    const Bits b = slice(e_bits(), 11, n);
    for (const auto& [serial_m, apen_m] : params) {
      const qe::sts::SerialAndApproximateEntropy both = qe::sts::serial_and_approximate_entropy(b, serial_m, apen_m);
      const TestResult s = serial(b, serial_m);
      const TestResult a = approximate_entropy(b, apen_m);
      const std::string where =
          " (n " + std::to_string(n) + ", serial m " + std::to_string(serial_m) + ", apen m " + std::to_string(apen_m) + ")";
      const auto identical = [](const TestResult& x, const TestResult& y) {
        if (x.p_values.size() != y.p_values.size() || x.note != y.note) return false;
        for (size_t i = 0; i < x.p_values.size(); ++i) {
          const bool both_nan = std::isnan(x.p_values[i]) && std::isnan(y.p_values[i]);
          if (!both_nan && x.p_values[i] != y.p_values[i]) return false;
        }
        return true;
      };
      if (!identical(both.serial, s)) qe::check::fail(__FILE__, __LINE__, "serial differs" + where);
      if (!identical(both.approximate_entropy, a)) qe::check::fail(__FILE__, __LINE__, "approximate entropy differs" + where);
    }
  }
}

// ---- linear complexity ----

QE_TEST(linear_complexity_matches_reference) {
  check_against("reference-pvalues-e.json", "linear_complexity", linear_complexity(e_bits(), 500), 1e-6);
  const TestResult r = linear_complexity(sha1_bits(), 500);
  check_against("reference-pvalues-sha1.json", "linear_complexity", r, 1e-6);
  check_against("reference-pvalues-sha1.json", "linear_complexity", r, 1e-9, "tests_full_precision");
}

QE_TEST(linear_complexity_sp800_22_example) {
  // Section 2.10.8: e, n = 10^6, M = 1000 -> P-value = 0.845406.
  CHECK_NEAR(linear_complexity(e_bits(), 1000).p_values.at(0), 0.845406, 1e-6);
}

// ---- word-level code against the bit-by-bit reference loops on awkward slices ----

QE_TEST(fast_paths_agree_with_bitwise_reference_loops) {
  const size_t offsets[] = {0, 1, 63, 64, 1001};
  const size_t lengths[] = {20000, 20011, 33027, 64 * 500 + 37};
  for (const size_t off : offsets) {
    for (const size_t len : lengths) {
      const Bits b = slice(e_bits(), off, len);
      const std::string where = " (offset " + std::to_string(off) + ", n " + std::to_string(len) + ")";
      check_same(non_overlapping_template(b, 9).p_values, naive_non_overlapping(b, 9), "non_overlapping m=9" + where);
      check_same(non_overlapping_template(b, 4).p_values, naive_non_overlapping(b, 4), "non_overlapping m=4" + where);
      check_same(overlapping_template(b, 9).p_values, {naive_overlapping(b, 9)}, "overlapping m=9" + where);
      check_same(overlapping_template(b, 5).p_values, {naive_overlapping(b, 5)}, "overlapping m=5" + where);
      check_same(overlapping_template(b, 12).p_values, {naive_overlapping(b, 12)}, "overlapping m=12" + where);
      check_same(approximate_entropy(b, 5).p_values, {naive_apen(b, 5)}, "apen m=5" + where);
      check_same(serial(b, 7).p_values, naive_serial(b, 7), "serial m=7" + where);
      check_same(linear_complexity(b, 500).p_values, {naive_linear_complexity(b, 500)}, "linear complexity M=500" + where);
      check_same(linear_complexity(b, 67).p_values, {naive_linear_complexity(b, 67)}, "linear complexity M=67" + where);
    }
  }
  // Random excursions need >= 500 cycles to report P-values: use the whole e sequence and
  // a long slice of it that does not start on a word boundary.
  for (const size_t off : {size_t{0}, size_t{3}}) {
    const Bits b = slice(e_bits(), off, e_bits().n - off - 5);
    const NaiveExcursions want = naive_excursions(b);
    CHECK(want.J >= 500);
    check_same(random_excursions(b).p_values, want.excursions, "random excursions");
    check_same(random_excursions_variant(b).p_values, want.variant, "random excursions variant");
  }
}

// ---- edge cases: never a crash, P-values in [0, 1] or NaN with a reason ----

QE_TEST(degenerate_sequences_fail_or_are_not_applicable) {
  for (const int bit : {0, 1}) {
    for (const size_t n : {size_t{100000}, size_t{100037}}) {
      const Bits b = constant_bits(n, bit);
      const TestResult results[] = {non_overlapping_template(b, 9), overlapping_template(b, 9),
                                    approximate_entropy(b, 10),      serial(b, 16),
                                    linear_complexity(b, 500),       random_excursions(b),
                                    random_excursions_variant(b)};
      for (const TestResult& r : results) {
        CHECK(sane(r));
        // A constant sequence must fail every test that applies to it.
        for (const double p : r.p_values)
          if (!std::isnan(p)) CHECK(p < 0.01);
      }
      // A constant walk never returns to 0: one cycle, so the excursion tests don't apply.
      CHECK(std::isnan(random_excursions(b).p_values.at(0)));
      CHECK(!random_excursions(b).note.empty());
    }
  }
}

QE_TEST(short_sequences_and_bad_parameters_give_nan_with_a_note) {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{63}, size_t{65}, size_t{1031}, size_t{1500}}) {
    const Bits b = slice(e_bits(), 5, n);
    for (const int m : {2, 9, 21}) CHECK(sane(non_overlapping_template(b, m)));
    CHECK(sane(overlapping_template(b, 9)));
    CHECK(sane(approximate_entropy(b, 10)));
    CHECK(sane(approximate_entropy(b, 1)));
    CHECK(sane(serial(b, 16)));
    CHECK(sane(serial(b, 2)));
    CHECK(sane(linear_complexity(b, 500)));
    CHECK(sane(random_excursions(b)));
    CHECK(sane(random_excursions_variant(b)));
    CHECK_EQ(random_excursions(b).p_values.size(), size_t{8});
    CHECK_EQ(random_excursions_variant(b).p_values.size(), size_t{18});
  }
  const Bits& e = e_bits();
  CHECK(std::isnan(overlapping_template(slice(e, 0, 1031), 9).p_values.at(0)));
  CHECK_EQ(non_overlapping_template(slice(e, 0, 64), 9).p_values.size(), size_t{148});
  CHECK(std::isnan(non_overlapping_template(slice(e, 0, 64), 9).p_values.at(0)));
  for (const int m : {1, 22, -3}) {
    const TestResult r = non_overlapping_template(e, m);
    CHECK(std::isnan(r.p_values.at(0)));
    CHECK(!r.note.empty());
  }
  for (const int m : {-1, 40}) CHECK(std::isnan(approximate_entropy(e, m).p_values.at(0)));
  for (const int m : {0, 40}) CHECK(std::isnan(serial(e, m).p_values.at(1)));
  for (const int M : {0, -5, 2000000}) CHECK(std::isnan(linear_complexity(e, M).p_values.at(0)));
  for (const int m : {0, 70, 2000}) {
    const TestResult r = overlapping_template(e, m);
    CHECK(std::isnan(r.p_values.at(0)));
    CHECK(!r.note.empty());
  }
  // Long templates stay bounded: m = 16 has 17622 templates.
  CHECK(sane(non_overlapping_template(slice(e, 0, 200000), 16)));
}

// ---- timing on 10^6 bits (printed, not asserted) ----

QE_TEST(timing_on_one_million_bits) {
  const Bits& b = e_bits();
  auto time_ms = [](const std::function<void()>& f) {
    f();  // warm up
    double best = 1e300;  // the fastest of several runs: the machine is shared
    for (int i = 0; i < 7; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  volatile uint64_t sink = 0;
  const double popcount = time_ms([&] { sink = sink + popcount_pass(b.words); });
  std::printf("  timing on n = 10^6 bits (fastest of 7 runs):\n");
  std::printf("    %-28s %9.3f ms\n", "popcount pass", popcount);
  const std::pair<const char*, std::function<void()>> tests[] = {
      {"non_overlapping_template", [&] { (void)non_overlapping_template(b, 9); }},
      {"overlapping_template", [&] { (void)overlapping_template(b, 9); }},
      {"approximate_entropy", [&] { (void)approximate_entropy(b, 10); }},
      {"random_excursions", [&] { (void)random_excursions(b); }},
      {"random_excursions_variant", [&] { (void)random_excursions_variant(b); }},
      {"serial", [&] { (void)serial(b, 16); }},
      {"linear_complexity", [&] { (void)linear_complexity(b, 500); }},
  };
  for (const auto& [name, fn] : tests) {
    const double ms = time_ms(fn);
    std::printf("    %-28s %9.3f ms  (%.0fx popcount)\n", name, ms, ms / popcount);
  }
}
