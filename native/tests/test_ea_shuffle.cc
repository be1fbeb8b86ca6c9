// The permutation test's shuffle must make every permutation equally likely. Checked by
// counting every permutation of 5 (and 4) elements over many shuffles (chi-square), the
// final position of one element of a large input, and of the ends of a 64-step batch.
#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <vector>

#include "ea/shuffle.h"
#include "sts/special.h"
#include "tests/check.h"

namespace {

qe::ea::Xoshiro seeded(uint64_t seed) {
  qe::ea::Xoshiro g{};
  for (auto& w : g.s) w = seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return g;
}

// P-value of Pearson's chi-square for counts that should all equal their mean.
double uniformity_p(const std::vector<long>& counts) {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const double expected = total / static_cast<double>(counts.size());
  double t = 0;
  for (long c : counts) t += (static_cast<double>(c) - expected) * (static_cast<double>(c) - expected) / expected;
  return qe::sts::igamc((static_cast<double>(counts.size()) - 1) / 2, t / 2);
}

void every_permutation_equally_likely(size_t n) {
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i);
  size_t permutations = 1;
  for (size_t i = 2; i <= n; ++i) permutations *= i;
  qe::ea::Xoshiro g = seeded(n);
  std::map<uint32_t, long> seen;  // permutation as a base-5 number
  for (size_t i = 0; i < permutations * 400; ++i) {
    qe::ea::shuffle(data, g);
    uint32_t key = 0;
    for (uint8_t v : data) key = key * 5 + v;
    ++seen[key];
  }
  CHECK_EQ(seen.size(), permutations);
  std::vector<long> counts;
  for (const auto& [perm, c] : seen) counts.push_back(c);
  CHECK(uniformity_p(counts) > 1e-4);
}

}  // namespace

QE_TEST(shuffle_makes_every_permutation_equally_likely) {
  every_permutation_equally_likely(5);  // odd: the last step draws alone
  every_permutation_equally_likely(4);
}

namespace {

using Shuffle = void (*)(std::vector<uint8_t>&, qe::ea::Xoshiro&);

// Every path (the portable one, and the AVX2 and AVX-512 batches where the CPU has them), on
// an input long enough for many batches plus a tail.
void sends_an_element_anywhere_and_keeps_the_rest(Shuffle shuffle) {
  std::vector<uint8_t> data(100003);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i % 200);
  data[0] = 255;  // the one element tracked
  std::vector<uint8_t> sorted = data;
  std::sort(sorted.begin(), sorted.end());
  qe::ea::Xoshiro g = seeded(7);
  std::vector<long> decile(10, 0);
  for (int i = 0; i < 4000; ++i) {
    shuffle(data, g);
    const size_t at = static_cast<size_t>(std::find(data.begin(), data.end(), 255) - data.begin());
    ++decile[at * 10 / data.size()];
  }
  CHECK(uniformity_p(decile) > 1e-4);
  std::vector<uint8_t> now = data;
  std::sort(now.begin(), now.end());
  CHECK(now == sorted);
}

// Every position of a 67-element input (one batch of 64 and a tail of 3) equally likely for
// its first and last elements.
void first_and_last_go_anywhere(Shuffle shuffle) {
  constexpr size_t n = 67;
  std::vector<uint8_t> data(n);
  qe::ea::Xoshiro g = seeded(11);
  std::vector<long> first(n, 0), last(n, 0);
  for (int i = 0; i < 67000; ++i) {
    for (size_t k = 0; k < n; ++k) data[k] = static_cast<uint8_t>(k);
    shuffle(data, g);
    for (size_t k = 0; k < n; ++k) {
      if (data[k] == 0) ++first[k];
      if (data[k] == n - 1) ++last[k];
    }
  }
  CHECK(uniformity_p(first) > 1e-4);
  CHECK(uniformity_p(last) > 1e-4);
}

// The paths this CPU has, each alone.
std::vector<Shuffle> paths() {
  std::vector<Shuffle> all = {qe::ea::shuffle, qe::ea::detail::shuffle_portable};
  std::vector<uint8_t> probe(1);
  qe::ea::Xoshiro g = seeded(1);
  if (qe::ea::detail::shuffle_avx2(probe, g))
    all.push_back([](std::vector<uint8_t>& d, qe::ea::Xoshiro& r) { qe::ea::detail::shuffle_avx2(d, r); });
  if (qe::ea::detail::shuffle_avx512(probe, g))
    all.push_back([](std::vector<uint8_t>& d, qe::ea::Xoshiro& r) { qe::ea::detail::shuffle_avx512(d, r); });
  return all;
}

}  // namespace

QE_TEST(shuffle_sends_an_element_anywhere_and_keeps_the_rest) {
  for (Shuffle path : paths()) sends_an_element_anywhere_and_keeps_the_rest(path);
}

QE_TEST(shuffle_sends_the_ends_of_a_batch_anywhere) {
  for (Shuffle path : paths()) first_and_last_go_anywhere(path);
}

namespace {

// Lemire's draw as shuffle.cc makes it: the high half of bits x bound, the product redrawn
// (from the top 32 bits of new outputs) while its low half is under 2^32 mod bound. Counts
// the draws that needed a redraw in `rejections`.
uint32_t lemire(uint32_t bits, uint64_t bound, qe::ea::Xoshiro& rng, long& rejections) {
  uint64_t m = bits * bound;
  const auto threshold = static_cast<uint32_t>((uint64_t{1} << 32) % bound);
  if (static_cast<uint32_t>(m) < threshold) ++rejections;
  while (static_cast<uint32_t>(m) < threshold) m = (rng.next() >> 32) * bound;
  return static_cast<uint32_t>(m >> 32);
}

// The AVX2 path, one draw at a time: four xoshiro256** streams seeded from rng (word by word,
// lane by lane), each round's four outputs giving the draws for bounds i-k .. i-k-3 from
// their low halves and i-k-4 .. i-k-7 from their high halves, batches of 64 down to 65,
// then the scalar steps, two draws per output of rng.
void avx2_model(std::vector<uint8_t>& data, qe::ea::Xoshiro& rng, long& rejections) {
  uint8_t* a = data.data();
  size_t i = data.size();
  uint64_t lane[4][4];  // [lane][word]
  for (size_t w = 0; w < 4; ++w)
    for (auto& l : lane) l[w] = rng.next();
  for (; i > 65; i -= 64) {
    uint32_t position[64];
    uint64_t bits[64];
    for (size_t k = 0; k < 64; k += 8)
      for (size_t l = 0; l < 4; ++l) {
        uint64_t out;
        qe::ea::xoshiro_step(lane[l], out);
        bits[k + l] = out & 0xFFFFFFFF;
        bits[k + 4 + l] = out >> 32;
      }
    for (size_t k = 0; k < 64; ++k) position[k] = lemire(static_cast<uint32_t>(bits[k]), i - k, rng, rejections);
    for (size_t k = 0; k < 64; ++k) std::swap(a[i - 1 - k], a[position[k]]);
  }
  while (i > 2) {
    const uint64_t r = rng.next();
    std::swap(a[i - 1], a[lemire(static_cast<uint32_t>(r), i, rng, rejections)]);
    --i;
    std::swap(a[i - 1], a[lemire(static_cast<uint32_t>(r >> 32), i, rng, rejections)]);
    --i;
  }
  if (i == 2) std::swap(a[1], a[lemire(static_cast<uint32_t>(rng.next()), 2, rng, rejections)]);
}

}  // namespace

// The AVX2 batches skip the exact rejection test unless the batch's smallest low product half
// falls under its largest bound; a draw that needed the test and did not get it would bias
// the permutation by ~bound / 2^32, far too little for the counting tests above to see. So
// the path is held to its one-draw-at-a-time model, permutation for permutation, on inputs
// large enough that Lemire's rejection happens many times.
QE_TEST(shuffle_avx2_batches_equal_their_model_rejections_included) {
  std::vector<uint8_t> probe(1);
  qe::ea::Xoshiro g = seeded(1);
  if (!qe::ea::detail::shuffle_avx2(probe, g)) return;  // no AVX2 here
  long rejections = 0;
  for (size_t n : {size_t{67}, size_t{130}, size_t{1000003}}) {
    std::vector<uint8_t> data(n), model(n);
    for (size_t k = 0; k < n; ++k) data[k] = model[k] = static_cast<uint8_t>(k * 7 + k / 256);
    qe::ea::Xoshiro rng = seeded(n), model_rng = seeded(n);
    for (int round = 0; round < (n > 1000 ? 40 : 200); ++round) {
      qe::ea::detail::shuffle_avx2(data, rng);
      avx2_model(model, model_rng, rejections);
      CHECK(data == model);
    }
  }
  CHECK(rejections > 1000);  // expected ~2,300: 40 shuffles of 10^6, each ~n^2 / 2^34 rejections
}
