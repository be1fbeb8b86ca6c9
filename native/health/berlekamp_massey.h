// Berlekamp-Massey over GF(2) on one bit string, fast enough to run on every block a
// QRNG card delivers (issue 30).
//
// The classic algorithm keeps the connection polynomial C and the previous one B and, at
// step n, computes the discrepancy d_n = sum_i C_i s_(n-i), a dot product over up to n
// bits on the critical path of every step. This one keeps, instead of C and B, their
// *discrepancy sequences*: D_C(n') = sum_i C_i s_(n'-i) for every future n' (a bit vector
// indexed by n'). The algorithm's updates are linear in C, so they carry over:
//   C ^= x^m B      becomes   D_C ^= D_B shifted up by m bits,
//   B  = old C      becomes   D_B  = old D_C,
// and the discrepancy of step n is simply bit n of D_C. The linear complexity L needs
// nothing else (the polynomials themselves are never formed). Initially C = B = 1, so
// D_C = D_B = the sequence.
//
// The steps of one 64-bit word of D_C (64 steps) run in registers, with one word of D_B;
// the updates they imply for the words above are recorded and then applied in bulk,
// word-parallel: on 64-bit words (portable), 256-bit (AVX2) or 512-bit (AVX-512) vectors,
// picked at run time. Every kernel gives the same L; tests compare them on >= 10^5 strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qe::bm {

enum class Kernel { Portable, Avx2, Avx512, Best };

// The kernel Kernel::Best resolves to on this CPU, and whether a kernel runs here.
Kernel best_kernel();
bool kernel_available(Kernel kernel);
const char* kernel_name(Kernel kernel);  // "portable", "avx2", "avx512"

// One update to apply to the words above the current one: D_C ^= D_B << shift, and when
// `grow`, D_B = the old D_C. `db_word` is D_B's word at the current position at that time.
struct Update {
  uint32_t shift;
  uint32_t grow;
  uint64_t db_word;
};

namespace detail {
// dc, db: D_C and D_B words; db[-1 .. -(to + 1)] must be readable zeros (D_B is zero
// below bit 0). Applies `updates` in order to words [from, to) of D_C and D_B; the word
// below `from` of D_B is taken from each update's db_word.
void apply_portable(uint64_t* dc, uint64_t* db, size_t from, size_t to, const Update* updates, size_t count);
void apply_avx2(uint64_t* dc, uint64_t* db, size_t from, size_t to, const Update* updates, size_t count);
void apply_avx512(uint64_t* dc, uint64_t* db, size_t from, size_t to, const Update* updates, size_t count);
using ApplyFn = void (*)(uint64_t*, uint64_t*, size_t, size_t, const Update*, size_t);
// For D_C and D_B of `words` words: up to 24 words (AVX-512) or 20 (AVX2), a kernel that
// keeps them in registers; past that, the memory kernel.
ApplyFn avx512_apply_for(size_t words);
ApplyFn avx2_apply_for(size_t words);
}  // namespace detail

// Computes linear complexities, keeping its working memory between calls.
class LinearComplexity {
 public:
  explicit LinearComplexity(Kernel kernel = Kernel::Best);
  // The linear complexity of bits [0, nbits) of `data`, most significant bit of each byte
  // first. `data` holds at least ceil(nbits / 8) bytes.
  size_t operator()(const uint8_t* data, size_t nbits);
  Kernel kernel() const { return kernel_; }

 private:
  Kernel kernel_;
  std::vector<uint64_t> dc_, db_;
  std::vector<Update> updates_;
};


}  // namespace qe::bm
