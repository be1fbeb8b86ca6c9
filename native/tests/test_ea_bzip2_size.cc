// bzip2_size_of_decimal_text against libbz2 itself: the IID compression statistic must be
// the length libbz2 produces, so every case here compresses the same text with libbz2 and
// compares. Texts: NIST's sample files and shuffles of them, random samples of every width,
// lengths that end blocks mid-token, constant and periodic data, all block sizes.
#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ea/bzip2.h"
#include "common/cpu.h"
#include "ea/bzip2_size.h"
#include "tests/check.h"
#include "tests/ea_reference.h"

namespace {

std::string decimal_text(const std::vector<uint8_t>& samples) {
  std::string text;
  for (uint8_t v : samples) text += std::to_string(v) + " ";
  if (!text.empty()) text.pop_back();
  return text;
}

size_t libbz2_size(std::string text, int level) {
  qe::ea::require_bzip2();
  auto len = static_cast<unsigned>(text.size() + text.size() / 50 + 700);
  std::vector<char> out(len);
  if (!qe::ea::bzip2_compress(out.data(), &len, text.data(), static_cast<unsigned>(text.size()), level))
    throw std::runtime_error("libbz2 failed");
  return len;
}

void same_as_libbz2(const std::string& what, const std::string& text, int level) {
  qe::ea::Bzip2Size model;
  const std::optional<size_t> ours = model.of_decimal_text(text.data(), text.size(), level);
  const size_t theirs = libbz2_size(text, level);
  if (!ours) {
    qe::check::fail(__FILE__, __LINE__, what + ": not computed (libbz2: " + std::to_string(theirs) + ")");
    return;
  }
  if (*ours != theirs)
    qe::check::fail(__FILE__, __LINE__, what + " level " + std::to_string(level) + ": " + std::to_string(*ours) + " vs libbz2 " + std::to_string(theirs));
}

// Both ways in: the text itself, and the samples it was written from.
void same_as_libbz2(const std::string& what, const std::vector<uint8_t>& samples, int level) {
  const std::string text = decimal_text(samples);
  same_as_libbz2(what, text, level);
  qe::ea::Bzip2Size model;
  const std::optional<size_t> ours = model.model_of_decimal_samples(samples.data(), samples.size(), level);
  const size_t theirs = libbz2_size(text, level);
  if (ours != std::optional<size_t>(theirs))
    qe::check::fail(__FILE__, __LINE__, what + " (from samples) level " + std::to_string(level) + ": " + (ours ? std::to_string(*ours) : "none") + " vs libbz2 " + std::to_string(theirs));
}

std::vector<uint8_t> random_samples(size_t n, unsigned bits, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
  return v;
}

}  // namespace

QE_TEST(bzip2_size_matches_libbz2_on_nists_files_and_their_shuffles) {
  std::mt19937_64 rng(15);
#if defined(__SANITIZE_ADDRESS__)
  const size_t limit = 200000;  // the whole files take minutes under ASan
  const int shuffles = 1;
#else
  const size_t limit = SIZE_MAX;
  const int shuffles = 3;
#endif
  for (const char* name : {"truerand_8bit.bin", "truerand_4bit.bin", "truerand_1bit.bin", "normal.bin", "rand8_short.bin"}) {
    std::vector<uint8_t> data = qe::check::read_samples(name);
    if (data.size() > limit) data.resize(limit);
    same_as_libbz2(name, data, 5);
    for (int s = 0; s < shuffles; ++s) {
      std::shuffle(data.begin(), data.end(), rng);
      same_as_libbz2(std::string(name) + " shuffled", data, 5);
    }
  }
}

QE_TEST(bzip2_size_matches_libbz2_for_every_sample_width_length_and_level) {
  // Lengths around block boundaries (so blocks end inside a token, on a space, and so the
  // wrap-around joins digits), tiny texts, and every level.
  for (unsigned bits : {1u, 2u, 3u, 4u, 6u, 7u, 8u})
    for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{17}, size_t{1000}, size_t{25000}, size_t{28571}, size_t{28572}, size_t{120001}})
      same_as_libbz2("random " + std::to_string(bits) + "-bit x" + std::to_string(n), random_samples(n, bits, bits * 7919 + n), 1);
  const std::vector<uint8_t> wide = random_samples(300000, 8, 42);
  for (int level = 1; level <= 9; ++level) same_as_libbz2("random 8-bit x300000", wide, level);
}

QE_TEST(bzip2_size_matches_libbz2_on_constant_periodic_and_skewed_data) {
  same_as_libbz2("constant 0", std::vector<uint8_t>(200000, 0), 5);
  same_as_libbz2("constant 255", std::vector<uint8_t>(200000, 255), 1);
  std::vector<uint8_t> ramp(300000), pair(300000), skewed = random_samples(300000, 8, 7);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < pair.size(); ++i) pair[i] = static_cast<uint8_t>(i % 2 == 0 ? 100 : 1);
  for (auto& x : skewed) x = x < 200 ? 0 : x;  // 78% zeros: long zero runs after the sort
  same_as_libbz2("ramp", ramp, 5);
  same_as_libbz2("two values alternating", pair, 2);
  same_as_libbz2("skewed", skewed, 5);
  // Characters that occur in one half of the sorted block only: the move-to-front runs the
  // two halves side by side and mends the second from the first (here '0' precedes only the
  // rotations that start with a space, all in the first half).
  std::vector<uint8_t> tens = random_samples(300000, 1, 11);
  for (auto& x : tens) x = x ? 20 : 10;
  same_as_libbz2("tens and twenties", tens, 5);
  // Random data with a long repeat in one block: few ties, but two rotations that agree far
  // beyond the tokens compared directly (the sort then falls back to prefix doubling).
  std::vector<uint8_t> repeat = random_samples(100000, 8, 13);
  std::copy(repeat.begin(), repeat.begin() + 3000, repeat.begin() + 60000);
  same_as_libbz2("random with a 3,000-sample repeat", repeat, 5);
  // Digit strings longer than a sample's: the tokens a block's wrap-around can make.
  same_as_libbz2("long numbers", std::string("123 4567890123 45 12345678901234"), 1);
}

QE_TEST(bzip2_size_of_samples_ending_blocks_at_every_offset) {
  // Every way a level-1 block (99,981 bytes) can end: a growing prefix of one-digit values
  // moves the cut through the one-, two- and three-digit tokens after it and their spaces.
  const std::vector<uint8_t> body = random_samples(30000, 8, 3);
  for (size_t prefix = 0; prefix < 8; ++prefix) {
    std::vector<uint8_t> v(prefix, 5);
    v.insert(v.end(), body.begin(), body.end());
    same_as_libbz2("random 8-bit after " + std::to_string(prefix) + " fives", v, 1);
  }
  // Texts ending just before, at and just after the cut ("7 7 ... 7" is 2n - 1 bytes).
  for (size_t n = 49989; n <= 49994; ++n) same_as_libbz2("sevens x" + std::to_string(n), std::vector<uint8_t>(n, 7), 1);
  same_as_libbz2("empty", std::vector<uint8_t>{}, 5);
}

QE_TEST(bzip2_size_declines_text_it_does_not_model) {
  qe::ea::Bzip2Size model;
  const std::string letters = "12 ab 7", run = "1111 2";
  CHECK(!model.of_decimal_text(letters.data(), letters.size(), 5));
  CHECK(!model.of_decimal_text(run.data(), run.size(), 5));  // bzip2 run-length codes 4+ repeats
  CHECK(!model.of_decimal_text(run.data(), run.size(), 0));
  const std::string empty;
  CHECK(model.of_decimal_text(empty.data(), 0, 5) == std::optional<size_t>(libbz2_size(empty, 5)));
}

// Table assignment has an SSE4.1 version (used wherever the CPU has it, so by every libbz2
// comparison above on x86) and a portable one (every other CPU). They must agree exactly:
// random group counts against 2 to 6 random tables, some of them equal so that ties occur,
// over enough groups to pass the SSE4.1 version's 16-bit fold.
QE_TEST(bzip2_size_table_assignment_is_the_same_with_and_without_sse41) {
  using qe::ea::detail::GroupCounts;
  if (!qe::cpu::has_sse41()) {
    GroupCounts none{};
    uint8_t length[6][16] = {}, selector[1];
    uint32_t freq[6][16] = {};
    CHECK(!qe::ea::detail::assign_tables_sse41(&none, 1, length, 2, selector, freq));
    return;
  }
  std::mt19937_64 rng(2026);
  for (int trial = 0; trial < 40; ++trial) {
    const int tables = 2 + trial % 5;
    const int alpha = 3 + static_cast<int>(rng() % 14);  // symbols in use
    uint8_t length[6][16] = {};
    for (int t = 0; t < tables; ++t)
      for (int v = 0; v < alpha; ++v) length[t][v] = static_cast<uint8_t>(1 + rng() % 17);
    if (trial % 3 == 0) std::copy(length[0], length[0] + 16, length[tables - 1]);  // a tie everywhere
    const size_t groups = 1 + rng() % 2500;
    std::vector<GroupCounts> counts(groups);
    for (GroupCounts& c : counts) {
      c.fill(0);
      const int size = rng() % 8 == 0 ? 1 + static_cast<int>(rng() % 50) : 50;  // a block's last group is short
      for (int k = 0; k < size; ++k) ++c[static_cast<size_t>(rng() % static_cast<uint64_t>(alpha))];
    }
    std::vector<uint8_t> portable_selector(groups), sse41_selector(groups);
    uint32_t portable_freq[6][16] = {}, sse41_freq[6][16] = {};
    qe::ea::detail::assign_tables_portable(counts.data(), groups, length, tables, portable_selector.data(), portable_freq);
    CHECK(qe::ea::detail::assign_tables_sse41(counts.data(), groups, length, tables, sse41_selector.data(), sse41_freq));
    CHECK(portable_selector == sse41_selector);
    for (int t = 0; t < 6; ++t)
      for (int v = 0; v < 16; ++v) CHECK_EQ(portable_freq[t][v], sse41_freq[t][v]);
  }
}

// The zero-run coding has an AVX-512 version (used wherever the CPU has VBMI2, so by every
// libbz2 comparison above on such a CPU), an AVX2 one and a portable one. Each must write what bzip2's
// rule gives, checked here against the rule written plainly: runs of every length up to
// past two 64-index blocks, runs that cross block boundaries or fill whole blocks, streams
// with no zeros or only zeros, and lengths that leave a partial block.
QE_TEST(bzip2_size_zero_run_coding_follows_bzip2s_rule_on_every_path) {
  const auto by_the_rule = [](const std::vector<uint8_t>& index, int used) {
    std::vector<uint8_t> out;
    size_t zeros = 0;
    const auto flush = [&] {
      for (size_t r = zeros; r > 0; r = (r - 1) / 2) out.push_back((r - 1) % 2 == 0 ? 0 : 1);  // RUNA 0, RUNB 1
      zeros = 0;
    };
    for (uint8_t j : index) {
      if (j == 0) {
        ++zeros;
        continue;
      }
      flush();
      out.push_back(static_cast<uint8_t>(j + 1));
    }
    flush();
    out.push_back(static_cast<uint8_t>(used + 1));
    return out;
  };
  std::mt19937_64 rng(90);
  const bool avx512 = qe::cpu::has_avx512vbmi2(), avx2 = qe::cpu::has_avx2();
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<uint8_t> index;
    const size_t n = trial < 8 ? trial * 37 : trial % 50 == 0 ? 200000 : rng() % 3000;
    const int style = trial % 5;
    while (index.size() < n) {
      if (style == 0) {  // shuffled samples' indices: a third zeros, at random
        index.push_back(rng() % 3 == 0 ? 0 : static_cast<uint8_t>(1 + rng() % 10));
      } else if (style == 1) {  // runs of every length around the block size
        index.insert(index.end(), rng() % 140, 0);
        index.push_back(static_cast<uint8_t>(1 + rng() % 10));
      } else if (style == 2) {  // long runs, some past the end
        index.insert(index.end(), rng() % 5000, 0);
        if (rng() % 2) index.push_back(static_cast<uint8_t>(1 + rng() % 14));
      } else if (style == 3) {  // no zeros
        index.push_back(static_cast<uint8_t>(1 + rng() % 14));
      } else {  // zeros but for the odd index
        index.push_back(rng() % 100 == 0 ? static_cast<uint8_t>(1 + rng() % 14) : 0);
      }
    }
    index.resize(n);
    const int used = 11 + trial % 5;
    const std::vector<uint8_t> expected = by_the_rule(index, used);
    std::vector<uint8_t> out(n + qe::ea::detail::kRunCodeSlack);
    out.resize(qe::ea::detail::run_code_indices_portable(index.data(), n, used, out.data()));
    CHECK(out == expected);
    out.assign(n + qe::ea::detail::kRunCodeSlack, 0xEE);
    size_t symbols = 0;
    CHECK_EQ(qe::ea::detail::run_code_indices_avx512(index.data(), n, used, out.data(), symbols), avx512);
    if (avx512) {
      out.resize(symbols);
      CHECK(out == expected);
    }
    out.assign(n + qe::ea::detail::kRunCodeSlack, 0xEE);
    CHECK_EQ(qe::ea::detail::run_code_indices_avx2(index.data(), n, used, out.data(), symbols), avx2);
    if (avx2) {
      out.resize(symbols);
      CHECK(out == expected);
    }
  }
}

// The group counts have an AVX-512 version (used wherever the CPU has AVX-512 BW, so by every
// libbz2 comparison above on such a CPU), an AVX2 one and a portable one. Each must give every group's
// count of each of the 16 symbols, checked against counting one symbol at a time: streams
// of every length from 0 to past 200 groups (a short last group), skewed towards RUNA and
// RUNB as coded text is, and made of one symbol only.
QE_TEST(bzip2_size_group_counts_are_the_same_on_every_path) {
  using qe::ea::detail::GroupCounts;
  std::mt19937_64 rng(50);
  const bool avx512 = qe::cpu::has_avx512bw(), avx2 = qe::cpu::has_avx2();
  for (int trial = 0; trial < 400; ++trial) {
    const size_t symbols = trial < 120 ? static_cast<size_t>(trial) : rng() % 10050;
    std::vector<uint8_t> coded(symbols + 64);
    for (size_t i = 0; i < symbols; ++i)
      coded[i] = trial % 7 == 0 ? 15 : static_cast<uint8_t>(rng() % 3 == 0 ? rng() % 16 : rng() % 2);
    const size_t groups = (symbols + 49) / 50;
    std::vector<GroupCounts> expected(groups);
    for (size_t g = 0; g < groups; ++g)
      for (size_t v = 0; v < 16; ++v)
        expected[g][v] = static_cast<uint8_t>(std::count(coded.begin() + static_cast<std::ptrdiff_t>(g * 50),
                                                         coded.begin() + static_cast<std::ptrdiff_t>(std::min(symbols, g * 50 + 50)), v));
    std::vector<GroupCounts> portable(groups), vector(groups);
    qe::ea::detail::count_groups_portable(coded.data(), symbols, portable.data());
    CHECK(portable == expected);
    CHECK_EQ(qe::ea::detail::count_groups_avx512(coded.data(), symbols, vector.data()), avx512);
    if (avx512) CHECK(vector == expected);
    std::vector<GroupCounts> narrower(groups);
    CHECK_EQ(qe::ea::detail::count_groups_avx2(coded.data(), symbols, narrower.data()), avx2);
    if (avx2) CHECK(narrower == expected);
  }
}
