// The length of bzip2's output, computed without running bzip2, for the one kind of text the
// IID track compresses: samples written in decimal, separated by single spaces (§5.1.11).
//
// The permutation test needs that length for every shuffle whose compression statistic is
// still unsettled, and libbz2 spends ~0.3 s on the 3.6 MB text of 10^6 bytes, almost all of
// it sorting the rotations of each block. Every step of bzip2 after the sort is fixed by the
// sorted order alone (move-to-front, zero-run coding, the four rounds of Huffman table
// refinement, the selectors), so only the sort is done differently here: the text is made of
// tokens "<digits> ", so the rotations are first sorted as sequences of tokens (a radix
// sort over ~1.4 x 10^5 tokens per block instead of 5 x 10^5 characters, prefix doubling
// only where long repeats leave ties) and each character position then takes its place
// from its token's order. The rest follows bzip2 1.0.x (1.0.3 and later: 17-bit code length
// limit) step for step, counting bits instead of writing them: 15-25 ms for the text of
// 10^6 8-bit samples on the machines measured (benchmarks/README.md, ea). The tests compare the result with libbz2 itself on shuffled 1-, 4- and
// 8-bit data, periodic and constant data, long repeats and every way a block can end.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace qe::ea {

// Exactly what BZ2_bzBuffToBuffCompress(dest, &len, text, size, block_size_100k, 0, 0) sets
// len to. One object per thread: it keeps its buffers between calls.
class Bzip2Size {
 public:
  Bzip2Size();
  ~Bzip2Size();
  Bzip2Size(Bzip2Size&&) noexcept;
  Bzip2Size& operator=(Bzip2Size&&) noexcept;

  // For text of ASCII digits and spaces in which no character repeats more than three times
  // in a row (bzip2's first stage would insert run-length bytes there). nullopt for any other
  // text, or block_size_100k outside 1..9: the caller then runs libbz2.
  std::optional<size_t> of_decimal_text(const char* text, size_t size, int block_size_100k);
  // For the samples written in decimal, separated by single spaces: "v0 v1 ... vn-1". The
  // model answers for every such text; were it ever to decline, libbz2 compresses the text
  // instead (std::runtime_error if libbz2 cannot be loaded or the level is outside 1..9).
  size_t of_decimal_samples(const uint8_t* samples, size_t n, int block_size_100k);
  // The same from the model alone (nullopt where it declines), for the tests.
  std::optional<size_t> model_of_decimal_samples(const uint8_t* samples, size_t n, int block_size_100k);

  struct Workspace;

 private:
  std::unique_ptr<Workspace> w_;
};

namespace detail {

// One round of bzip2's Huffman table refinement: each group of 50 coded symbols, given by its
// counts of the 16 symbol slots, goes to the table that codes it in the fewest bits (the
// first such, as bzip2 picks); selector[g] records the table and table_freq[t] adds up the
// counts of its groups. The SSE4.1 version runs wherever the CPU has SSE4.1 and returns false,
// writing nothing, elsewhere; both are here so the tests can hold one to the other.
using GroupCounts = std::array<uint8_t, 16>;
void assign_tables_portable(const GroupCounts* counts, size_t groups, const uint8_t (*length)[16], int tables, uint8_t* selector,
                            uint32_t (*table_freq)[16]);
bool assign_tables_sse41(const GroupCounts* counts, size_t groups, const uint8_t (*length)[16], int tables, uint8_t* selector,
                         uint32_t (*table_freq)[16]);

// The symbol counts of each group of 50 coded symbols (the last group may be shorter; every
// symbol below 16). The AVX-512 and AVX2 versions run wherever the CPU has AVX-512 BW or
// AVX2 and return false, writing nothing, elsewhere.
void count_groups_portable(const uint8_t* coded, size_t symbols, GroupCounts* counts);
bool count_groups_avx2(const uint8_t* coded, size_t symbols, GroupCounts* counts);
bool count_groups_avx512(const uint8_t* coded, size_t symbols, GroupCounts* counts);

// bzip2's coding of the move-to-front indices (runs of zeros in bijective base 2, others as
// index + 1, then the end-of-block symbol used + 1) into out, which needs room for
// n + kRunCodeSlack bytes; returns how many symbols it wrote. The AVX-512 (VBMI2) and AVX2
// versions run wherever the CPU has them and return false, writing nothing, elsewhere.
constexpr size_t kRunCodeSlack = 64;
size_t run_code_indices_portable(const uint8_t* index, size_t n, int used, uint8_t* out);
bool run_code_indices_avx2(const uint8_t* index, size_t n, int used, uint8_t* out, size_t& symbols);
bool run_code_indices_avx512(const uint8_t* index, size_t n, int used, uint8_t* out, size_t& symbols);

}  // namespace detail

}  // namespace qe::ea
