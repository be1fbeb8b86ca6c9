// The battery: many sequences, many threads, and NIST's judgement of the batch.
#include "sts/battery.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "common/msb_bits.h"
#include "sts/special.h"

namespace qe::sts {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<TestId> all_tests() {
  std::vector<TestId> ids;
  for (int i = 0; i < kTestCount; ++i) ids.push_back(static_cast<TestId>(i));
  return ids;
}

// The requested tests in NIST's order, each once.
std::vector<TestId> normalized_tests(const std::vector<TestId>& requested) {
  if (requested.empty()) return all_tests();
  std::vector<TestId> ids = requested;
  for (TestId id : ids) {
    const int i = static_cast<int>(id);
    if (i < 0 || i >= kTestCount) throw std::invalid_argument("sts: unknown test id " + std::to_string(i));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string template_label(uint32_t t, int m) {
  std::string s(static_cast<size_t>(m), '0');
  for (int b = 0; b < m; ++b)
    if ((t >> (m - 1 - b)) & 1u) s[static_cast<size_t>(b)] = '1';
  return s;
}


inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

std::vector<SubTest> sub_tests(TestId test, const Params& params) {
  std::vector<SubTest> out;
  auto add = [&](int index, std::string label) { out.push_back({test, index, std::move(label)}); };
  switch (test) {
    case TestId::cumulative_sums:
      add(0, "forward");
      add(1, "backward");
      break;
    case TestId::non_overlapping_template: {
      const int m = params.non_overlapping_template_m;
      const std::vector<uint32_t> templates = tested_templates(m);
      for (size_t i = 0; i < templates.size(); ++i) add(static_cast<int>(i), template_label(templates[i], m));
      break;
    }
    case TestId::random_excursions: {
      int i = 0;
      for (int x : {-4, -3, -2, -1, 1, 2, 3, 4}) add(i++, "x = " + std::to_string(x));
      break;
    }
    case TestId::random_excursions_variant: {
      int i = 0;
      for (int x = -9; x <= 9; ++x)
        if (x != 0) add(i++, "x = " + std::to_string(x));
      break;
    }
    case TestId::serial:
      add(0, "1");
      add(1, "2");
      break;
    default:
      add(0, "");
      break;
  }
  return out;
}

TestId test_id_from_name(const std::string& name) {
  for (int i = 0; i < kTestCount; ++i)
    if (name == kTestNames[i]) return static_cast<TestId>(i);
  throw std::invalid_argument("unknown test '" + name + "'");
}

Fingerprint fingerprint(const Bits& bits) {
  // Four independent lanes, each acc = rotl(acc + w * K1, 31) * K2 over every fourth word
  // (the rotate carries high-bit differences back down so they cannot cancel), then the
  // lanes and the length are mixed into 128 bits. Independent lanes keep the multiply
  // latency off the critical path: about a cycle per word.
  constexpr uint64_t k1 = 0xbf58476d1ce4e5b9ULL;
  constexpr uint64_t k2 = 0x94d049bb133111ebULL;
  uint64_t lane[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
  auto round = [](uint64_t acc, uint64_t w) { return std::rotl(acc + w * k1, 31) * k2; };
  const size_t nw = bits.words.size();
  size_t i = 0;
  for (; i + 4 <= nw; i += 4)
    for (int l = 0; l < 4; ++l) lane[l] = round(lane[l], bits.words[i + static_cast<size_t>(l)]);
  for (int l = 0; i < nw; ++i, ++l) lane[l] = round(lane[l], bits.words[i]);
  const uint64_t lo = mix64(lane[0] ^ std::rotl(lane[1], 17) ^ mix64(bits.n));
  const uint64_t hi = mix64(lane[2] ^ std::rotl(lane[3], 29) ^ lo);
  return {mix64(lo + lane[3]), hi};
}

Bits extract_bits(const uint8_t* data, size_t start, size_t count) {
  Bits bits;
  bits.n = count;
  const size_t nwords = (count + 63) / 64;
  bits.words.resize(nwords);
  const size_t limit = (start + count + 7) / 8;  // bytes that belong to the range
  for (size_t k = 0; k < nwords; ++k) bits.words[k] = msb_bits::bits_at(data, limit, start + 64 * k);
  const unsigned tail = count & 63;
  if (tail != 0) bits.words.back() &= ~uint64_t{0} << (64 - tail);
  return bits;
}

double min_pass_proportion(size_t k, double alpha) {
  if (k == 0) return kNaN;
  return (1.0 - alpha) - 3.0 * std::sqrt(alpha * (1.0 - alpha) / static_cast<double>(k));
}

int histogram_bin(double p) {
  int bin = static_cast<int>(std::floor(p * 10.0));
  return std::clamp(bin, 0, 9);
}

double uniformity_p_value(const std::array<size_t, 10>& histogram) {
  const size_t k = std::accumulate(histogram.begin(), histogram.end(), size_t{0});
  // assess: `expCount = sampleSize / 10` in integer arithmetic (equal to SP 800-22's s/10
  // when K is a multiple of 10).
  const size_t expected = k / 10;
  if (expected == 0) return kNaN;
  const double e = static_cast<double>(expected);
  double chi2 = 0;
  for (size_t c : histogram) {
    const double d = static_cast<double>(c) - e;
    chi2 += d * d / e;
  }
  return igamc(9.0 / 2.0, chi2 / 2.0);
}

std::vector<std::pair<size_t, size_t>> identical_sequences(const std::vector<Fingerprint>& fps) {
  std::vector<size_t> order(fps.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto less = [&](size_t x, size_t y) {
    if (fps[x].hi != fps[y].hi) return fps[x].hi < fps[y].hi;
    if (fps[x].lo != fps[y].lo) return fps[x].lo < fps[y].lo;
    return x < y;
  };
  std::sort(order.begin(), order.end(), less);
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t k = 1; k < order.size(); ++k) {
    // `first` is the smallest index of the run of equal fingerprints that order[k] is in.
    size_t first = k;
    while (first > 0 && fps[order[first - 1]] == fps[order[k]]) --first;
    if (first != k) pairs.emplace_back(order[first], order[k]);
  }
  std::sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  return pairs;
}

size_t stream_period(const uint8_t* data, size_t nbits) {
  if (nbits < 128) return 0;
  const size_t limit = (nbits + 7) / 8;
  const uint64_t key = msb_bits::bits_at(data, limit, 0);
  // A candidate p has the first 64 bits again at offset p; it is a period when every bit
  // k < nbits - p equals bit k + p. Verification stops at the first difference; a cap on
  // failed verifications keeps pathological streams (long constant runs) linear.
  constexpr int kMaxFailedVerifications = 16;
  int failed = 0;
  const size_t max_period = nbits / 2;
  auto verify = [&](size_t p) {
    const size_t span = nbits - p;
    for (size_t k = 0; k < span; k += 64) {
      const size_t len = std::min<size_t>(64, span - k);
      const uint64_t mask = len == 64 ? ~uint64_t{0} : ~uint64_t{0} << (64 - len);
      if ((msb_bits::bits_at(data, limit, k) ^ msb_bits::bits_at(data, limit, k + p)) & mask) return false;
    }
    return true;
  };
  // Candidates are found a byte at a time: a window starting at bit 8j (s = 0) or at bit
  // 8j - 8 + s (s = 1..7) has its first whole byte at j, and that byte must equal the
  // matching 8 bits of the key. One table lookup per byte filters all eight offsets.
  std::array<uint8_t, 256> offsets_for_byte{};
  for (unsigned sh = 0; sh < 8; ++sh) {
    const auto b = static_cast<uint8_t>(sh == 0 ? key >> 56 : key >> (48 + sh));
    offsets_for_byte[b] = static_cast<uint8_t>(offsets_for_byte[b] | (1u << sh));
  }
  const size_t last_byte = std::min(limit, max_period / 8 + 2);
  for (size_t j = 0; j < last_byte; ++j) {
    const unsigned mask = offsets_for_byte[data[j]];
    if (mask == 0) continue;
    // Ascending offsets: 8j - 7 .. 8j - 1 (s = 1..7), then 8j (s = 0).
    for (unsigned k = 1; k <= 8; ++k) {
      const unsigned sh = k & 7;
      if (!(mask & (1u << sh))) continue;
      if (sh != 0 && j == 0) continue;
      const size_t p = sh == 0 ? 8 * j : 8 * j - 8 + sh;
      if (p == 0 || p > max_period) continue;
      if (msb_bits::bits_at(data, limit, p) != key) continue;
      if (verify(p)) return p;
      if (++failed >= kMaxFailedVerifications) return 0;
    }
  }
  return 0;
}

BatterySummary summarize(const std::vector<SubTest>& columns, const std::vector<TestId>& tests,
                         const double* p_values, size_t streams,
                         const std::vector<Fingerprint>& fingerprints, double alpha) {
  BatterySummary summary;
  summary.streams = streams;
  summary.alpha = alpha;
  const size_t ncols = columns.size();
  summary.sub_tests.resize(ncols);
  Criteria& cr = summary.criteria;

  for (size_t c = 0; c < ncols; ++c) {
    SubTestSummary& st = summary.sub_tests[c];
    for (size_t s = 0; s < streams; ++s) {
      const double p = p_values[s * ncols + c];
      if (std::isnan(p)) continue;
      ++st.sample_size;
      if (p >= alpha) ++st.passed;
      ++st.histogram[static_cast<size_t>(histogram_bin(p))];
    }
    cr.nist_passes += st.passed;
    cr.nist_fails += st.sample_size - st.passed;
    st.uniformity_p = uniformity_p_value(st.histogram);
    st.uniformity_assessed = st.sample_size >= kUniformityMinSequences;
    st.uniformity_ok = st.uniformity_assessed && st.uniformity_p >= kUniformityThreshold;
    if (st.uniformity_assessed && !st.uniformity_ok) ++summary.uniformity_flags;
    if (st.sample_size > 0) {
      // assess keeps both bounds in `int` variables, which truncates them.
      const double k = static_cast<double>(st.sample_size);
      const double p_hat = 1.0 - alpha;
      const double half = 3.0 * std::sqrt(p_hat * alpha / k);
      const auto lo = static_cast<long long>((p_hat - half) * k);
      const auto hi = static_cast<long long>((p_hat + half) * k);
      const auto passed = static_cast<long long>(st.passed);
      st.proportion_ok = passed >= lo && passed <= hi;
      if (!st.proportion_ok) ++summary.proportion_flags;
    }
  }

  for (TestId test : tests) {
    TestUniformity tu{test, UniformityVerdict::passed, ""};
    std::string unassessed;
    for (size_t c = 0; c < ncols; ++c) {
      if (columns[c].test != test) continue;
      const SubTestSummary& st = summary.sub_tests[c];
      const std::string name =
          std::string(kTestNames[static_cast<int>(test)]) + (columns[c].label.empty() ? "" : " " + columns[c].label);
      if (st.uniformity_assessed && !st.uniformity_ok && tu.verdict != UniformityVerdict::failed) {
        tu.verdict = UniformityVerdict::failed;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6g", st.uniformity_p);
        tu.reason = name + ": P-value of uniformity " + buf + " < 0.0001";
      } else if (!st.uniformity_assessed && unassessed.empty()) {
        unassessed = name + ": " + std::to_string(st.sample_size) + " of " + std::to_string(streams) +
                     " sequences applicable";
        if (test == TestId::random_excursions || test == TestId::random_excursions_variant)
          unassessed += " (J >= 500 cycles)";
        unassessed += "; uniformity needs at least 55";
      }
    }
    if (tu.verdict != UniformityVerdict::failed && !unassessed.empty()) {
      tu.verdict = UniformityVerdict::excluded;
      tu.reason = unassessed;
    }
    switch (tu.verdict) {
      case UniformityVerdict::passed: ++cr.uniformity_passes; break;
      case UniformityVerdict::failed: ++cr.uniformity_fails; break;
      case UniformityVerdict::excluded: ++cr.uniformity_excluded; break;
    }
    summary.uniformity.push_back(std::move(tu));
  }

  const size_t k = cr.nist_passes + cr.nist_fails;
  cr.nist_success_rate = k ? static_cast<double>(cr.nist_passes) / static_cast<double>(k) : kNaN;
  cr.min_pass_proportion = min_pass_proportion(k, alpha);
  cr.nist_all_passed = k > 0 && cr.nist_success_rate >= cr.min_pass_proportion;
  const size_t judged = cr.uniformity_passes + cr.uniformity_fails;
  cr.uniformity_success_rate = judged ? static_cast<double>(cr.uniformity_passes) / static_cast<double>(judged) : kNaN;
  cr.uniformity_all_passed = judged > 0 && cr.uniformity_fails == 0;
  cr.tests_passed = cr.nist_all_passed || cr.uniformity_all_passed;
  cr.strictly_failing = !cr.nist_all_passed && !cr.uniformity_all_passed;
  cr.loosely_failing = !cr.nist_all_passed || !cr.uniformity_all_passed;

  summary.repetition.identical = identical_sequences(fingerprints);
  return summary;
}

BatteryResult run_battery(const uint8_t* data, size_t nbits, const BatteryOptions& options) {
  if (options.streams == 0) throw std::invalid_argument("sts: streams must be at least 1");
  const size_t m = options.streams;
  const size_t n = options.bits_per_stream ? options.bits_per_stream : nbits / m;
  if (n == 0) throw std::invalid_argument("sts: no bits to test (" + std::to_string(nbits) + " bits for " +
                                          std::to_string(m) + " streams)");
  if (n > nbits / m)
    throw std::invalid_argument("sts: " + std::to_string(m) + " streams of " + std::to_string(n) +
                                " bits need more than the " + std::to_string(nbits) + " bits given");
  if (data == nullptr) throw std::invalid_argument("sts: no data");
  if (!(options.alpha > 0 && options.alpha < 1)) throw std::invalid_argument("sts: alpha must be in (0, 1)");

  BatteryResult result;
  result.streams = m;
  result.bits_per_stream = n;
  result.params = options.params;
  result.tests = normalized_tests(options.tests);
  std::vector<size_t> first_column;  // per test index: its first column
  for (TestId t : result.tests) {
    first_column.push_back(result.columns.size());
    for (SubTest& st : sub_tests(t, options.params)) result.columns.push_back(std::move(st));
  }
  const size_t ncols = result.columns.size();
  const size_t ntests = result.tests.size();
  result.p_values.assign(m * ncols, kNaN);
  result.notes.assign(m, std::vector<std::string>(ntests));
  result.fingerprints.resize(m);

  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  // Few sequences and several threads: split by (sequence, test) instead, with each
  // sequence unpacked once up front (only then is more than one sequence held).
  const bool split_tests = m < threads && ntests > 1;
  std::vector<Bits> unpacked;
  if (split_tests) {
    for (size_t s = 0; s < m; ++s) unpacked.push_back(extract_bits(data, s * n, n));
    if (options.repetition_check)
      for (size_t s = 0; s < m; ++s) result.fingerprints[s] = fingerprint(unpacked[s]);
  }
  const size_t items = split_tests ? m * ntests : m;
  threads = static_cast<unsigned>(std::min<size_t>(threads, items));

  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> cancelled{false};
  std::mutex progress_mutex;
  size_t completed = 0;
  std::exception_ptr error;
  std::vector<std::atomic<size_t>> tests_left(split_tests ? m : 0);
  for (auto& left : tests_left) left.store(ntests);

  auto store = [&](size_t s, size_t ti, TestResult r) {
    const size_t want = ti + 1 < ntests ? first_column[ti + 1] - first_column[ti] : ncols - first_column[ti];
    if (!r.p_values.empty() && r.p_values.size() != want)
      throw std::logic_error(std::string("sts: ") + kTestNames[static_cast<int>(result.tests[ti])] + " returned " +
                             std::to_string(r.p_values.size()) + " P-values, expected " + std::to_string(want));
    double* row = result.p_values.data() + s * ncols + first_column[ti];
    for (size_t k = 0; k < r.p_values.size(); ++k) row[k] = r.p_values[k];
    result.notes[s][ti] = std::move(r.note);
  };
  auto run_one = [&](size_t s, size_t ti, const Bits& bits) { store(s, ti, run_test(result.tests[ti], bits, options.params)); };
  // Serial and approximate entropy share one pass over a sequence's windows when a worker
  // runs both on it.
  const auto position = [&](TestId id) {
    return static_cast<size_t>(std::find(result.tests.begin(), result.tests.end(), id) - result.tests.begin());
  };
  const size_t serial_at = position(TestId::serial);
  const size_t apen_at = position(TestId::approximate_entropy);
  const bool share_windows = serial_at < ntests && apen_at < ntests;
  auto run_sequence = [&](size_t s, const Bits& bits) {
    for (size_t ti = 0; ti < ntests && !stop.load(std::memory_order_relaxed); ++ti) {
      if (!share_windows || (ti != serial_at && ti != apen_at)) {
        run_one(s, ti, bits);
      } else if (ti == serial_at) {  // both results, at serial's turn; ApEn's turn is then skipped
        SerialAndApproximateEntropy both = serial_and_approximate_entropy(
            bits, options.params.serial_m, options.params.approximate_entropy_m);
        store(s, serial_at, std::move(both.serial));
        store(s, apen_at, std::move(both.approximate_entropy));
      }
    }
  };
  auto sequence_done = [&] {
    std::lock_guard<std::mutex> lock(progress_mutex);
    ++completed;
    if (options.progress) options.progress(completed, m);
  };
  auto worker = [&] {
    try {
      while (!stop.load(std::memory_order_relaxed)) {
        if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
          cancelled = true;
          stop = true;
          break;
        }
        const size_t item = next.fetch_add(1);
        if (item >= items) break;
        if (split_tests) {
          const size_t s = item / ntests;
          run_one(s, item % ntests, unpacked[s]);
          if (tests_left[s].fetch_sub(1) == 1) sequence_done();
        } else {
          const Bits bits = extract_bits(data, item * n, n);
          if (options.repetition_check) result.fingerprints[item] = fingerprint(bits);
          run_sequence(item, bits);
          sequence_done();
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      if (!error) error = std::current_exception();
      stop = true;
    }
  };

  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  if (cancelled && completed < m) throw BatteryCancelled();

  if (options.repetition_check) {
    result.period_bits = stream_period(data, m * n);
  } else {
    result.fingerprints.clear();
  }
  if (options.summarize) {
    result.summary = summarize(result.columns, result.tests, result.p_values.data(), m, result.fingerprints,
                               options.alpha);
    result.summary.repetition.period_bits = result.period_bits;
  }
  return result;
}

}  // namespace qe::sts
