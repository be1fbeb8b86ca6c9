#include "ea/bzip2_size.h"

#include "common/cpu.h"
#include "common/populated.h"
#include "ea/bzip2.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace qe::ea {
namespace {

// bzip2's constants (compress.c / bzlib_private.h): symbols 0 and 1 code runs of the
// front symbol, 50 symbols share a Huffman table, 4 refinement rounds, codes ≤ 17 bits.
constexpr uint8_t kRunA = 0, kRunB = 1;
constexpr size_t kGroupSize = 50;
constexpr int kRefinements = 4;
constexpr int kMaxCodeLength = 17;
constexpr int kMaxTables = 6;
constexpr uint8_t kLesserCost = 0, kGreaterCost = 15;
// Fixed fields: "BZh" + level; per block magic (48) + CRC (32) + randomised (1) + origPtr (24)
// + the 16-bit range map + table count (3) + selector count (15); end magic (48) + CRC (32).
constexpr uint64_t kStreamHeaderBits = 32, kBlockHeaderBits = 48 + 32 + 1 + 24 + 16 + 3 + 15, kStreamTrailerBits = 48 + 32;

// The alphabet: ' ' and the ten digits, in byte order (' ' < '0'). Symbol numbers are bzip2's
// "seq" numbers only after the unused characters are squeezed out (see block_bits).
constexpr int kChars = 11;
int char_index(char c) { return c == ' ' ? 0 : c - '0' + 1; }
constexpr size_t kAlphabetSlots = 16;  // ≥ bzip2's alphaSize: the characters in use + 2 (≤ 13)

// A token is a digit string followed by one space. Tokens of up to three digits (all a
// sample can produce) are numbered directly: 0 for "", 1-10 for one digit, 11-110 for two,
// 111-1110 for three. Longer ones exist only where a block's end meets its start.
constexpr uint32_t kShortTypes = 1111;
constexpr uint32_t kTypeBase[4] = {0, 1, 11, 111};
constexpr size_t kMaxDigits = 14;  // key: (digits + space) as 4-bit codes in 64 bits
constexpr size_t kNaiveSortLimit = 4096;

struct Span {
  size_t start, size;
};

struct TokenType {
  uint8_t length = 0;  // digits
  char digits[kMaxDigits] = {};
  uint64_t key = 0;  // left-aligned codes, ' ' = 1, '0'..'9' = 2..11: orders as the strings do
  std::array<uint32_t, kMaxDigits + 1> suffix_type{};  // type of the token without its first d digits
};

uint64_t key_of(const char* digits, size_t length) {
  uint64_t key = 0;
  int shift = 60;
  for (size_t i = 0; i < length; ++i, shift -= 4) key |= static_cast<uint64_t>(digits[i] - '0' + 2) << shift;
  return key | (uint64_t{1} << shift);
}

uint32_t short_type(const char* digits, size_t length) {
  uint32_t v = 0;
  for (size_t i = 0; i < length; ++i) v = v * 10 + static_cast<uint32_t>(digits[i] - '0');
  return kTypeBase[length] + v;
}

TokenType make_type(const char* digits, size_t length) {
  TokenType t;
  t.length = static_cast<uint8_t>(length);
  std::copy(digits, digits + length, t.digits);
  t.key = key_of(digits, length);
  return t;
}

const std::vector<TokenType>& short_types() {
  static const std::vector<TokenType> types = [] {
    std::vector<TokenType> v;
    v.reserve(kShortTypes);
    char d[3];
    v.push_back(make_type(d, 0));
    for (size_t length = 1; length <= 3; ++length) {
      uint32_t limit = 1;
      for (size_t i = 0; i < length; ++i) limit *= 10;
      for (uint32_t x = 0; x < limit; ++x) {
        uint32_t y = x;
        for (size_t i = length; i-- > 0; y /= 10) d[i] = static_cast<char>('0' + y % 10);
        v.push_back(make_type(d, length));
      }
    }
    for (TokenType& t : v)
      for (size_t s = 0; s <= t.length; ++s) t.suffix_type[s] = short_type(t.digits + s, t.length - s);
    return v;
  }();
  return types;
}

// bzip2's Huffman code lengths (huffman.c, BZ2_hbMakeCodeLengths): a binary heap of weights
// whose low 8 bits carry the subtree depth, so equal frequencies merge shallow trees first;
// if a code exceeds max_length, every frequency is halved (plus one) and the tree rebuilt.
// The heap discipline is reproduced exactly because ties decide the lengths.
void make_code_lengths(uint8_t* length, const uint32_t* freq, int alpha, int max_length) {
  constexpr int kNodes = 2 * static_cast<int>(kAlphabetSlots);
  int32_t heap[kNodes + 2], weight[kNodes * 2], parent[kNodes * 2];
  for (int i = 0; i < alpha; ++i) weight[i + 1] = static_cast<int32_t>((freq[i] == 0 ? 1 : freq[i]) << 8);
  auto weight_of = [](int32_t w) { return w & ~0xff; };
  auto depth_of = [](int32_t w) { return w & 0xff; };
  while (true) {
    int nodes = alpha, n = 0;
    heap[0] = 0;
    weight[0] = 0;
    parent[0] = -2;
    auto up = [&](int z) {
      const int32_t tmp = heap[z];
      while (weight[tmp] < weight[heap[z >> 1]]) {
        heap[z] = heap[z >> 1];
        z >>= 1;
      }
      heap[z] = tmp;
    };
    auto down = [&](int z) {
      const int32_t tmp = heap[z];
      while (true) {
        int y = z << 1;
        if (y > n) break;
        if (y < n && weight[heap[y + 1]] < weight[heap[y]]) ++y;
        if (weight[tmp] < weight[heap[y]]) break;
        heap[z] = heap[y];
        z = y;
      }
      heap[z] = tmp;
    };
    for (int i = 1; i <= alpha; ++i) {
      parent[i] = -1;
      heap[++n] = i;
      up(n);
    }
    while (n > 1) {
      const int32_t a = heap[1];
      heap[1] = heap[n--];
      down(1);
      const int32_t b = heap[1];
      heap[1] = heap[n--];
      down(1);
      ++nodes;
      parent[a] = parent[b] = nodes;
      weight[nodes] = (weight_of(weight[a]) + weight_of(weight[b])) | (1 + std::max(depth_of(weight[a]), depth_of(weight[b])));
      parent[nodes] = -1;
      heap[++n] = nodes;
      up(n);
    }
    bool too_long = false;
    for (int i = 1; i <= alpha; ++i) {
      int depth = 0;
      for (int k = i; parent[k] >= 0; k = parent[k]) ++depth;
      length[i - 1] = static_cast<uint8_t>(depth);
      too_long = too_long || depth > max_length;
    }
    if (!too_long) return;
    for (int i = 1; i <= alpha; ++i) weight[i] = (1 + (weight[i] >> 8) / 2) << 8;
  }
}

// Per token type, what the fill writes: the symbol before its space, and for each other
// position it writes, the bucket of the suffix there and the symbol before it.
struct Fill {
  uint32_t bucket[kMaxDigits + 1];
  uint8_t before[kMaxDigits + 1];
  uint8_t before_space;
  uint8_t writes;     // positions in bucket/before (the fill loop's slots for a short type)
  uint8_t positions;  // digits + 1 (the space)
};

}  // namespace

// Buffers reused across calls (a block of the 8-bit samples' text holds ~140,000 tokens,
// ~500,000 characters). Those that grow with the data are populated up front
// (common/populated.h): they are written in full on the first call.
struct Bzip2Size::Workspace {
  std::vector<char> rotated;
  PopulatedVector<uint8_t> symbols, mtf, coded;  // last column as symbol numbers; its move-to-front indices; coded
  std::vector<uint32_t> token_type, sa, next_sa, head, next_head, cursor;
  PopulatedVector<uint64_t> keyed, keyed_tmp;  // sorted rotations: (key << 32 | token before << 20 | index)
  std::vector<uint32_t> radix_count, radix_start, dense;
  std::vector<Span> tied, next_tied;      // groups of sa not yet in order
  std::vector<std::array<uint8_t, kAlphabetSlots>> group_counts;  // per 50 coded symbols
  std::vector<uint8_t> selector;
  std::vector<TokenType> long_types;
  std::vector<Fill> fill_rows;
  std::vector<int> bucket_symbol;  // per suffix bucket: the symbol every position has before it, if one
  bool in_use[kChars];
};

namespace {

// One prefix-doubling round over the whole array (Manber-Myers with group heads): from sa
// and head ordered by h-token prefixes to the order by 2h-token prefixes. Returns the number
// of groups.
size_t doubling_round(size_t h, Bzip2Size::Workspace& w) {
  auto& sa = w.sa;
  auto& head = w.head;
  const size_t m = sa.size();
  w.next_sa.resize(m);
  w.next_head.resize(m);
  w.cursor.resize(m);
  for (size_t k = 0; k < m; ++k) w.cursor[k] = static_cast<uint32_t>(k);
  // Walking sa visits i + h in order of its head, so each group of head[i] fills in order
  // of (head[i], head[i + h]).
  for (size_t k = 0; k < m; ++k) {
    const size_t j = sa[k];
    const size_t i = j >= h ? j - h : j + m - h;
    w.next_sa[w.cursor[head[i]]++] = static_cast<uint32_t>(i);
  }
  size_t groups = 0;
  uint32_t start = 0, prev_first = 0, prev_second = 0;
  for (size_t k = 0; k < m; ++k) {
    const size_t i = w.next_sa[k];
    const uint32_t first = head[i], second = head[i + h < m ? i + h : i + h - m];
    if (k == 0 || first != prev_first || second != prev_second) {
      start = static_cast<uint32_t>(k);
      ++groups;
    }
    w.next_head[i] = start;
    prev_first = first;
    prev_second = second;
  }
  sa.swap(w.next_sa);
  head.swap(w.next_head);
  return groups;
}

// Splits sa[from, to), already in order of key(k), into its runs of equal key: runs of two
// or more are added to `tied`, and each element's head becomes its run's start. Returns how
// many elements the runs added hold.
template <typename Key>
size_t split_groups(size_t from, size_t to, Key key, Bzip2Size::Workspace& w, std::vector<Span>& tied) {
  size_t in_ties = 0;
  for (size_t k = from, start = from; k <= to; ++k) {
    if (k == to || (k > from && key(k) != key(k - 1))) {
      if (k - start > 1) {
        tied.push_back({start, k - start});
        in_ties += k - start;
      }
      start = k;
    }
    if (k < to) w.head[w.sa[k]] = static_cast<uint32_t>(start);
  }
  return in_ties;
}

// The runs of two or more equal keys (keyed[k] >> 32) in the sorted keys, added to `tied`;
// returns how many elements they hold. After the radix sort almost no neighbours tie, so
// 64 neighbours are checked at a time (a compare-and-or loop the compiler vectorises) and
// only a block with a tie is walked.
size_t tied_key_runs(const uint64_t* keyed, size_t m, std::vector<Span>& tied) {
  const auto key = [keyed](size_t k) { return keyed[k] >> 32; };
  size_t in_ties = 0;
  for (size_t k = 1; k < m;) {
    const size_t end = std::min(m, k + 64);
    bool any = false;
    for (size_t j = k; j < end; ++j) any |= key(j) == key(j - 1);
    if (!any) {
      k = end;
      continue;
    }
    while (key(k) != key(k - 1)) ++k;
    const size_t start = k - 1;
    size_t stop = k + 1;
    while (stop < m && key(stop) == key(start)) ++stop;
    tied.push_back({start, stop - start});
    in_ties += stop - start;
    k = stop + 1;  // key(stop) differs from key(stop - 1): the next tie can start at stop
  }
  return in_ties;
}

// An entry of the sorted rotations as the fill reads it: the rotation's index and the dense
// rank of the token before it.
constexpr uint32_t kIndexBits = 20, kIndexMask = (1u << kIndexBits) - 1, kBeforeMask = (1u << (32 - kIndexBits)) - 1;
inline uint32_t sorted_entry(size_t i, const std::vector<uint32_t>& dense) {
  const size_t before = i == 0 ? dense.size() - 1 : i - 1;
  return (dense[before] << kIndexBits) | static_cast<uint32_t>(i);
}

void prefix_doubling(size_t h0, size_t tied_elements, Bzip2Size::Workspace& w);

// Orders the tied groups of sa (equal in their first `from` tokens) by comparing the tokens
// after that directly, at most kDirectTokens of them: on data with any entropy two
// rotations differ within a few tokens, and no group ranks need computing. False, with sa
// reordered only within its groups, if two rotations agree that far (a long repeat).
constexpr size_t kDirectTokens = 48;
bool order_ties_directly(size_t from, const std::vector<uint32_t>& dense, Bzip2Size::Workspace& w) {
  const size_t m = dense.size();
  const uint32_t* d = dense.data();
  bool resolved = true;
  auto less = [&](uint32_t a, uint32_t b) {
    size_t i = (a + from) % m, j = (b + from) % m;
    for (size_t k = 0; k < kDirectTokens; ++k) {
      if (d[i] != d[j]) return d[i] < d[j];
      if (++i == m) i = 0;
      if (++j == m) j = 0;
    }
    resolved = false;
    return false;
  };
  for (const Span& g : w.tied) {
    const auto first = w.sa.begin() + static_cast<std::ptrdiff_t>(g.start);
    std::sort(first, first + static_cast<std::ptrdiff_t>(g.size), less);
    if (!resolved) return false;
  }
  return true;
}

// Sorts the token rotations: sa = token indices in order of the cyclic token sequences that
// start there. First an LSD radix sort on the first K tokens packed into at most 32 bits
// (for random samples K = 3 for 8-bit samples, 6 for 4-bit, 22 for bits; see the pass count
// below) in digits of whole tokens, so every pass takes
// its counts from one histogram (the keys are cyclic windows: each digit position sees
// every window of its width once). The ties left are few on data with any entropy and are
// ordered by comparing the following tokens directly; where that meets a long repeat,
// prefix doubling (head = start of an element's group in sa, i.e. its rank among h-token
// prefixes) finishes the job, over the tied groups only while they are few, over
// everything otherwise. Equal rotations (a periodic block) end up adjacent in any order,
// which leaves the last column unchanged.
//
// dense holds each token's rank among the `distinct` types present, in string order.
void sort_token_rotations(const std::vector<uint32_t>& dense, uint32_t distinct, Bzip2Size::Workspace& w) {
  const size_t m = dense.size();
  unsigned bits = 1;  // what a rank takes
  while ((1u << bits) < distinct) ++bits;
  // Digits of up to 11 bits holding whole tokens; as many digits as fit 32 bits.
  constexpr unsigned kMaxDigitBits = 11;
  const unsigned per_digit = bits >= kMaxDigitBits ? 1 : kMaxDigitBits / bits;
  const unsigned digit_bits = per_digit * bits;
  // Each pass scatters the whole array, so only as many as leave few ties among m random
  // rotations: keys of at least log2(m) + 6 bits (an expected tied fraction m / 2^bits of at
  // most 1/64), which the direct comparisons then order cheaply. For the text of 8-bit
  // samples that is three tokens, not four. (Less random data ties more and is still exact.)
  const unsigned max_passes = std::max(1u, 32 / digit_bits);
  unsigned passes = 1;
  while (passes < max_passes && (uint64_t{1} << (passes * digit_bits)) < uint64_t{m} * 64) ++passes;
  const size_t per_key = size_t{passes} * per_digit;
  const unsigned key_bits = passes * digit_bits;
  // Keys as (prefix << 32 | the token before | index), the prefix rolled from the end:
  // key(i) drops token i + K from key(i + 1) and takes token i in front. The token before
  // rides along so the fill reads it in sa order without a random access per rotation.
  if (m > kIndexMask + 1 || distinct > kBeforeMask + 1) throw std::logic_error("bzip2 size: block too large for the rotation sort");
  auto& keyed = w.keyed;
  keyed.resize(m);
  uint64_t prefix = 0;
  for (size_t j = 0; j < per_key; ++j) prefix = (prefix << bits) | dense[(m - 1 + j) % m];
  prefix &= (uint64_t{1} << key_bits) - 1;
  // The histogram of the last digit, counted as the keys are made, serves every pass.
  const uint64_t digit_mask = (uint64_t{1} << digit_bits) - 1;
  std::vector<uint32_t>& count = w.radix_count;
  count.assign(size_t{1} << digit_bits, 0);
  for (size_t i = m; i-- > 0;) {
    if (i < m - 1) prefix = (uint64_t{dense[i]} << (key_bits - bits)) | (prefix >> bits);
    keyed[i] = (prefix << 32) | sorted_entry(i, dense);
    ++count[prefix & digit_mask];
  }
  w.keyed_tmp.resize(m);
  std::vector<uint32_t>& start = w.radix_start;
  start.resize(count.size());
  for (unsigned p = 0; p < passes; ++p) {
    uint32_t sum = 0;
    for (size_t b = 0; b <= digit_mask; ++b) {
      start[b] = sum;
      sum += count[b];
    }
    const unsigned shift = 32 + p * digit_bits;
    for (uint64_t x : keyed) w.keyed_tmp[start[(x >> shift) & digit_mask]++] = x;
    keyed.swap(w.keyed_tmp);
  }
  // The groups of equal keys (no heads yet: a random write per rotation, needed only below).
  w.tied.clear();
  size_t tied_elements = tied_key_runs(keyed.data(), m, w.tied);
  if (w.tied.empty()) return;
  // sa (rotation indices in sorted order) is what the tie-breakers work on; the rotations
  // already in place need none.
  auto& sa = w.sa;
  sa.resize(m);
  const auto index_at = [&keyed](size_t k) { return static_cast<uint32_t>(keyed[k]) & kIndexMask; };
  for (const Span& g : w.tied)
    for (size_t k = g.start; k < g.start + g.size; ++k) sa[k] = index_at(k);
  if (tied_elements <= m / 4 && order_ties_directly(per_key, dense, w)) {
    for (const Span& g : w.tied)
      for (size_t k = g.start; k < g.start + g.size; ++k) keyed[k] = (keyed[k] & ~uint64_t{0xFFFFFFFF}) | sorted_entry(sa[k], dense);
    return;
  }
  // A long repeat: all of sa, in key order (whatever order the direct comparisons left
  // within groups of equal keys is as good), and the same groups again, now with every
  // element's head.
  for (size_t k = 0; k < m; ++k) sa[k] = index_at(k);
  w.head.resize(m);
  w.tied.clear();
  tied_elements = split_groups(0, m, [&keyed](size_t k) { return keyed[k] >> 32; }, w, w.tied);
  prefix_doubling(per_key, tied_elements, w);
  for (size_t k = 0; k < m; ++k) keyed[k] = sorted_entry(sa[k], dense);
}

// Prefix doubling from h-token groups (sa, head, tied) to the full order.
void prefix_doubling(size_t h0, size_t tied_elements, Bzip2Size::Workspace& w) {
  auto& sa = w.sa;
  auto& keyed = w.keyed;
  const size_t m = sa.size();

  for (size_t h = h0; !w.tied.empty() && h < m; h *= 2) {
    if (tied_elements > m / 4) {
      // Many ties (little entropy): a whole round is cheaper than sorting groups.
      const size_t groups = doubling_round(h, w);
      w.tied.clear();
      if (groups == m) break;
      tied_elements = split_groups(0, m, [&w](size_t k) { return w.head[w.sa[k]]; }, w, w.tied);
      continue;
    }
    // Few ties: sort each tied group by the head h tokens on. The keys are all read before
    // any group is split, so every comparison is by the same h-token prefixes.
    for (const Span& g : w.tied)
      for (size_t k = g.start; k < g.start + g.size; ++k) {
        const size_t i = sa[k];
        keyed[k] = (uint64_t{w.head[i + h < m ? i + h : i + h - m]} << 32) | i;
      }
    w.next_tied.clear();
    tied_elements = 0;
    for (const Span& g : w.tied) {
      const auto first = keyed.begin() + static_cast<std::ptrdiff_t>(g.start);
      std::sort(first, first + static_cast<std::ptrdiff_t>(g.size));
      for (size_t k = g.start; k < g.start + g.size; ++k) sa[k] = static_cast<uint32_t>(keyed[k]);
      tied_elements += split_groups(g.start, g.start + g.size, [&keyed](size_t k) { return keyed[k] >> 32; }, w, w.next_tied);
    }
    w.tied.swap(w.next_tied);
  }
}

// bzip2 numbers only the bytes that occur in a block, in byte order: the symbol number of
// each character in use (by char_index).
class SymbolNumbers {
 public:
  explicit SymbolNumbers(const bool* in_use) {
    uint8_t used = 0;
    for (int c = 0; c < kChars; ++c) number_[c] = in_use[c] ? used++ : 0;
  }
  uint8_t operator[](int c) const { return number_[c]; }

 private:
  uint8_t number_[kChars];
};

// The type of the token "<digits> ": numbered directly up to three digits; a longer one (only
// where a block's end meets its start) and its suffixes longer than three digits get types
// of their own. nullopt when longer than a key holds.
std::optional<uint32_t> token_type(const char* digits, size_t length, Bzip2Size::Workspace& w) {
  if (length <= 3) return short_type(digits, length);
  if (length > kMaxDigits) return std::nullopt;
  TokenType t = make_type(digits, length);
  for (size_t s = 0; s <= length; ++s) {
    if (length - s <= 3) {
      t.suffix_type[s] = short_type(digits + s, length - s);
      continue;
    }
    const uint64_t key = key_of(digits + s, length - s);
    auto it = std::find_if(w.long_types.begin(), w.long_types.end(), [key](const TokenType& x) { return x.key == key; });
    if (it == w.long_types.end()) {
      w.long_types.push_back(make_type(digits + s, length - s));
      it = w.long_types.end() - 1;
    }
    t.suffix_type[s] = kShortTypes + static_cast<uint32_t>(it - w.long_types.begin());
  }
  // The suffix types of the long suffixes themselves follow from the token's.
  for (size_t s = 1; s <= length; ++s) {
    if (length - s <= 3) continue;
    TokenType& sub = w.long_types[t.suffix_type[s] - kShortTypes];
    for (size_t q = 0; q <= sub.length; ++q) sub.suffix_type[q] = t.suffix_type[s + q];
  }
  w.long_types[t.suffix_type[0] - kShortTypes] = t;
  return t.suffix_type[0];
}

// The block's tokens in cyclic order, read from its characters: rotated to start after the
// first space (the sorted rotations are the same set). False if the block has no space or a
// digit string too long for a key.
bool tokens_of_text(const char* block, size_t n, Bzip2Size::Workspace& w) {
  const char* first_space = std::find(block, block + n, ' ');
  if (first_space == block + n) return false;
  const size_t f = static_cast<size_t>(first_space - block) + 1;
  w.rotated.resize(n);
  std::copy(block + f, block + n, w.rotated.begin());
  std::copy(block, block + f, w.rotated.begin() + static_cast<std::ptrdiff_t>(n - f));
  const char* r = w.rotated.data();
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (r[j] != ' ') ++j;
    const std::optional<uint32_t> type = token_type(r + i, j - i, w);
    if (!type) return false;
    w.token_type.push_back(*type);
    i = j + 1;
  }
  return true;
}

// The last column by sorting the rotations directly: for the odd small block the token
// method cannot take (no space in it, or a digit string too long for a key).
bool naive_last_column(const char* block, size_t n, Bzip2Size::Workspace& w) {
  if (n > kNaiveSortLimit) return false;
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    for (size_t k = 0; k < n; ++k) {
      const char x = block[(a + k) % n], y = block[(b + k) % n];
      if (x != y) return x < y;
    }
    return false;
  });
  std::fill(std::begin(w.in_use), std::end(w.in_use), false);
  for (size_t i = 0; i < n; ++i) w.in_use[char_index(block[i])] = true;
  const SymbolNumbers symbol_of(w.in_use);
  w.symbols.resize(n);
  for (size_t k = 0; k < n; ++k) w.symbols[k] = symbol_of[char_index(block[(order[k] + n - 1) % n])];
  return true;
}

// The fill: the k-th rotation in sorted order starts at the token after a token whose row
// is rows[...]: its space's position goes to place k of the " " bucket, its other positions
// to the next places of their buckets.
template <size_t Slots>
void fill_last_column(const Fill* rows, const uint64_t* sorted, size_t m, uint32_t* bucket, uint8_t* last) {
  for (size_t k = 0; k < m; ++k) {
    const Fill& f = rows[static_cast<uint32_t>(sorted[k]) >> kIndexBits];
    last[k] = f.before_space;
    if (f.positions > 4) [[unlikely]] {
      for (size_t d = 0; d < f.writes; ++d) last[bucket[f.bucket[d]]++] = f.before[d];
      continue;
    }
    for (size_t d = 0; d < Slots; ++d) last[bucket[f.bucket[d]]++] = f.before[d];
  }
}

// The last column of the sorted rotations of a block given as its cyclic token sequence
// (w.token_type), as symbol numbers (w.symbols, w.in_use). Every position in a token
// "<d1..dL> " starts a rotation that reads (the token's digits from there on) + ' ' + (the
// rotation at the next token); such suffix strings are prefix-free, so rotations sort by
// (suffix string, next token's rotation). Filling per suffix string in the order of the next
// token's rotation places every position; its last-column character is the one before it.
void last_column_of_tokens(size_t n, Bzip2Size::Workspace& w) {
  const std::vector<TokenType>& shorts = short_types();
  const size_t types = kShortTypes + w.long_types.size();
  auto type_at = [&](uint32_t t) -> const TokenType& { return t < kShortTypes ? shorts[t] : w.long_types[t - kShortTypes]; };
  // Ranks of every type in string order (the short types' order is fixed).
  static const std::vector<uint32_t> short_order = [&] {
    std::vector<uint32_t> order(kShortTypes);
    for (uint32_t t = 0; t < kShortTypes; ++t) order[t] = t;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return shorts[a].key < shorts[b].key; });
    return order;
  }();
  std::vector<uint32_t> order(short_order);
  for (uint32_t t = kShortTypes; t < types; ++t) {
    const uint64_t key = type_at(t).key;
    order.insert(std::upper_bound(order.begin(), order.end(), key, [&](uint64_t k, uint32_t x) { return k < type_at(x).key; }), t);
  }
  std::vector<uint32_t> rank_of(types);
  for (uint32_t k = 0; k < types; ++k) rank_of[order[k]] = k;

  // Each token's rank among the types present (dense ranks: the sort packs them in keys).
  const size_t m = w.token_type.size();
  std::vector<uint32_t> tokens_of_type(types, 0);
  for (uint32_t t : w.token_type) ++tokens_of_type[t];
  std::vector<uint32_t> dense_of(types, 0);
  uint32_t distinct = 0;
  for (uint32_t k = 0; k < types; ++k)
    if (tokens_of_type[order[k]] > 0) dense_of[order[k]] = distinct++;
  w.dense.resize(m);
  for (size_t t = 0; t < m; ++t) w.dense[t] = dense_of[w.token_type[t]];
  sort_token_rotations(w.dense, distinct, w);

  // Characters in use, and their symbol numbers (bzip2 numbers only the bytes that occur).
  std::fill(std::begin(w.in_use), std::end(w.in_use), false);
  w.in_use[0] = true;  // every token ends in a space
  for (uint32_t t = 0; t < types; ++t)
    if (tokens_of_type[t] > 0)
      for (size_t d = 0; d < type_at(t).length; ++d) w.in_use[char_index(type_at(t).digits[d])] = true;
  const SymbolNumbers symbol_of(w.in_use);

  // Bucket starts: how many positions begin with each suffix string.
  std::vector<uint32_t> bucket(types + 1 + kShortTypes, 0);
  for (uint32_t t = 0; t < types; ++t) {
    if (tokens_of_type[t] == 0) continue;
    const TokenType& tt = type_at(t);
    for (size_t s = 0; s <= tt.length; ++s) bucket[rank_of[tt.suffix_type[s]] + 1] += tokens_of_type[t];
  }
  for (size_t k = 0; k < types; ++k) bucket[k + 1] += bucket[k];
  // The positions at a token's space begin the suffix " ", the first bucket; they sort by
  // the rotation at the next token alone, so the k-th in sa order goes to place k, with no
  // counter (a shared one would chain every token's update through memory).
  if (bucket[rank_of[0]] != 0 || bucket[rank_of[0] + 1] != m) throw std::logic_error("bzip2 size: the space bucket is not first");
  // A bucket is constant where every position that lands in it has the same symbol before
  // it: the suffix "abc " of the three-digit tokens, for one, comes only from the token
  // "abc" itself, after a space. Such buckets are filled in one go and their positions
  // dropped from the fill loop (for the text of 8-bit samples, a third of its writes).
  constexpr int kNoSymbol = -1, kMixed = -2;
  std::vector<int>& bucket_symbol = w.bucket_symbol;
  bucket_symbol.assign(types, kNoSymbol);
  // Position d of a token: preceded by the previous token's space (d = 0) or digit d-1.
  const auto symbol_before = [&](const TokenType& tt, size_t d) { return d == 0 ? symbol_of[0] : symbol_of[char_index(tt.digits[d - 1])]; };
  for (uint32_t t = 0; t < types; ++t) {
    if (tokens_of_type[t] == 0) continue;
    const TokenType& tt = type_at(t);
    for (size_t d = 0; d < tt.length; ++d) {
      int& b = bucket_symbol[rank_of[tt.suffix_type[d]]];
      const int before = symbol_before(tt, d);
      b = b == kNoSymbol || b == before ? before : kMixed;
    }
  }
  w.symbols.resize(n + 3 * m + 4);
  uint8_t* last = w.symbols.data();
  for (uint32_t r = 0; r < types; ++r)
    if (bucket_symbol[r] >= 0) std::memset(last + bucket[r], bucket_symbol[r], bucket[r + 1] - bucket[r]);
  // Per type present, the bucket of each position still to write and the symbol before it,
  // so the fill reads one row, found by the dense rank the sort carries for the token before
  // each rotation. Short tokens write a fixed number of slots each (two where no type needs
  // three), the unused ones into a spill area after the block (so the loop has no
  // data-dependent branch); the odd long token loops over all its positions (those in a
  // constant bucket write the same symbol again). Each type spills into a counter of its
  // own, for the same reason.
  std::vector<Fill>& rows = w.fill_rows;
  rows.resize(distinct);
  size_t slots = 0;
  for (uint32_t t = 0; t < types; ++t) {
    if (tokens_of_type[t] == 0) continue;
    const TokenType& tt = type_at(t);
    Fill& f = rows[dense_of[t]];
    f.positions = static_cast<uint8_t>(tt.length + 1);
    f.before_space = symbol_before(tt, tt.length);
    f.writes = 0;
    for (size_t d = 0; d < tt.length; ++d) {
      const uint32_t r = rank_of[tt.suffix_type[d]];
      if (t < kShortTypes && bucket_symbol[r] >= 0) continue;
      f.bucket[f.writes] = r;
      f.before[f.writes++] = symbol_before(tt, d);
    }
    if (t < kShortTypes) slots = std::max<size_t>(slots, f.writes);
  }
  slots = std::max<size_t>(slots, 2);
  uint32_t spill_at = static_cast<uint32_t>(n);
  for (uint32_t t = 0; t < kShortTypes; ++t) {
    if (tokens_of_type[t] == 0) continue;
    Fill& f = rows[dense_of[t]];
    const uint32_t spill = static_cast<uint32_t>(types + 1 + t);
    bucket[spill] = spill_at;
    spill_at += tokens_of_type[t] * static_cast<uint32_t>(slots - f.writes);
    for (size_t d = f.writes; d < slots; ++d) f.bucket[d] = spill;
  }
  if (slots == 2) fill_last_column<2>(rows.data(), w.keyed.data(), m, bucket.data(), last);
  else fill_last_column<3>(rows.data(), w.keyed.data(), m, bucket.data(), last);
  w.symbols.resize(n);
}

// A run of r > 0 zero indices in bijective base 2, least significant digit first: RUNA
// for digit 1, RUNB for digit 2 (bzip2 writes r - 1 that way). Empty for r = 0.
std::vector<uint8_t> run_code(size_t r) {
  std::vector<uint8_t> code;
  if (r == 0) return code;
  for (--r;; r = (r - 2) / 2) {
    code.push_back((r & 1) ? kRunB : kRunA);
    if (r < 2) break;
  }
  return code;
}

// Codes of runs shorter than 64, packed into the low bytes of a word (at most 6 digits,
// leaving a byte for the symbol that ends the run).
struct RunCodes {
  static constexpr size_t kRuns = 64;
  uint64_t word[kRuns];
  uint8_t length[kRuns];
};

const RunCodes& run_codes() {
  static const RunCodes table = [] {
    RunCodes t{};
    for (size_t r = 0; r < RunCodes::kRuns; ++r) {
      const std::vector<uint8_t> code = run_code(r);
      t.length[r] = static_cast<uint8_t>(code.size());
      t.word[r] = 0;
      for (size_t k = 0; k < code.size(); ++k) t.word[r] |= uint64_t{code[k]} << (8 * k);
    }
    return t;
  }();
  return table;
}

// Move-to-front: the index of symbols[i] is how many distinct symbols came since it last did
// (its place in the list). position[s] is symbol s's place, held in one 16-byte vector: a
// step broadcasts position[s] to every lane (a byte shuffle), adds one to the places before
// it and clears lane s, so a step is a chain of three vector instructions and no memory
// round trip. Four such chains run side by side, one over each quarter of the block, so the
// steps do not wait on each other (two chains took 4.2 ms per compression of the 8-bit
// file's text, four take 2.8).
// Each chain starts from the initial list rather than from where the one before ends, which
// leaves wrong only the index of each symbol's first occurrence in its quarter, mended
// afterwards. The run coding is a pass of its own (run_code_indices): fused into this loop
// its bookkeeping per index cost more than the two passes together.
using Lanes = int8_t __attribute__((vector_size(kAlphabetSlots)));  // signed: one-instruction compare

// Where symbol s stands once the `distinct` symbols marked seen have moved to the front of a
// list that was `before`: behind them, in its order among the others in `before`.
int place_behind_seen(const Lanes& before, const bool (&seen)[kAlphabetSlots], int used, int distinct, int s) {
  int place = distinct;
  for (int x = 0; x < used; ++x) place += !seen[x] && before[x] < before[s];
  return place;
}

// The list at the end of a quarter, from the list at its start (`before`) and the quarter's
// chain run from the initial list (`chain`): the symbols the quarter used come first, as the
// chain has them; the others follow in their order in `before`.
Lanes list_after(const Lanes& before, const Lanes& chain, const bool (&seen)[kAlphabetSlots], int used) {
  Lanes after = chain;
  int distinct = 0;
  for (int x = 0; x < used; ++x) distinct += seen[x];
  for (int x = 0; x < used; ++x)
    if (!seen[x]) after[x] = static_cast<int8_t>(place_behind_seen(before, seen, used, distinct, x));
  return after;
}

// Mends the indices of a quarter [from, to) whose chain started from the initial list, given
// the true list at its start (`before`): where symbol s first occurs there, the distinct
// symbols seen since the quarter began stand in front of it. Fills `seen` with the symbols
// the quarter used.
void mend_quarter(const uint8_t* symbols, size_t from, size_t to, int used, const Lanes& before, uint8_t* index,
                  bool (&seen)[kAlphabetSlots]) {
  std::fill(std::begin(seen), std::end(seen), false);
  int distinct = 0;
  for (size_t i = from; i < to && distinct < used; ++i) {
    const uint8_t s = symbols[i];
    if (seen[s]) continue;
    index[i] = static_cast<uint8_t>(place_behind_seen(before, seen, used, distinct, s));
    seen[s] = true;
    ++distinct;
  }
}

inline __attribute__((always_inline)) void mtf_indices_body(const uint8_t* symbols, size_t n, int used, uint8_t* index) {
  Lanes initial, clear[kAlphabetSlots], splat[kAlphabetSlots];  // splat[s]: s in every lane
  for (size_t s = 0; s < kAlphabetSlots; ++s) {
    initial[s] = static_cast<int8_t>(s < static_cast<size_t>(used) ? s : 0x7F);  // unused lanes never move
    for (size_t k = 0; k < kAlphabetSlots; ++k) clear[s][k] = static_cast<int8_t>(k == s ? 0 : -1);
    splat[s] = Lanes{} + static_cast<int8_t>(s);
  }
  auto step = [&clear, &splat](Lanes& position, uint8_t s) {
#if defined(__clang__)
    // clang has no variable-index shuffle builtin; the broadcast of lane s is the same
    // vector (the fuzz build uses clang, docs/fuzzing.md).
    const Lanes here = Lanes{} + position[s];
    (void)splat;
#else
    const Lanes here = __builtin_shuffle(position, splat[s]);
#endif
    // Lane s is cleared off the chain through `here`; it compares equal, so it stays 0.
    position = (position & clear[s]) - (position < here);  // true lanes are -1: adds one
    return static_cast<uint8_t>(here[0]);
  };
  const size_t q = n / 4;
  Lanes a = initial, b = initial, c = initial, d = initial;
  for (size_t i = 0; i < q; ++i) {
    index[i] = step(a, symbols[i]);
    index[q + i] = step(b, symbols[q + i]);
    index[2 * q + i] = step(c, symbols[2 * q + i]);
    index[3 * q + i] = step(d, symbols[3 * q + i]);
  }
  for (size_t i = 4 * q; i < n; ++i) index[i] = step(d, symbols[i]);  // the last quarter takes the rest
  // a is the true list at the end of the first quarter; each later quarter is mended from
  // the true list at its start, and gives the next quarter its own.
  bool seen[kAlphabetSlots];
  Lanes list = a;
  const Lanes* chains[] = {&b, &c, &d};
  for (size_t k = 1; k < 4; ++k) {
    mend_quarter(symbols, k * q, k == 3 ? n : (k + 1) * q, used, list, index, seen);
    if (k < 3) list = list_after(list, *chains[k - 1], seen, used);
  }
}

#if defined(__x86_64__) || defined(__i386__)
// pshufb (SSSE3) is the one-instruction broadcast; plain SSE2 builds would spill the vector.
__attribute__((target("ssse3"))) void mtf_indices_ssse3(const uint8_t* symbols, size_t n, int used, uint8_t* index) {
  mtf_indices_body(symbols, n, used, index);
}
// The same 16-byte code in VEX encoding, whose three-operand forms drop the register copies
// the two-operand SSE forms need: the four chains are bound by instruction count.
__attribute__((target("avx"))) void mtf_indices_avx(const uint8_t* symbols, size_t n, int used, uint8_t* index) {
  mtf_indices_body(symbols, n, used, index);
}
#endif

void mtf_indices(const uint8_t* symbols, size_t n, int used, uint8_t* index) {
#if defined(__x86_64__) || defined(__i386__)
  static const bool avx = qe::cpu::has_avx2();  // AVX2 implies AVX
  if (avx) return mtf_indices_avx(symbols, n, used, index);
  static const bool ssse3 = qe::cpu::has_ssse3();
  if (ssse3) return mtf_indices_ssse3(symbols, n, used, index);
#endif
  mtf_indices_body(symbols, n, used, index);
}

// Bit k set where index[k] != 0, for k < count ≤ 64.
inline uint64_t nonzero_bits(const uint8_t* index, size_t count) {
#if defined(__SSE2__)
  if (count == 64) {
    const __m128i zero = _mm_setzero_si128();
    uint64_t zeros = 0;
    for (int q = 0; q < 4; ++q) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(index + 16 * q));
      zeros |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)))) << (16 * q);
    }
    return ~zeros;
  }
#endif
  uint64_t bits = 0;
  for (size_t k = 0; k < count; ++k) bits |= uint64_t{index[k] != 0} << k;
  return bits;
}

// Writes the code of a run of r zero indices (see run_code) at out: 8 bytes written for a
// short run, its code's length returned.
inline size_t write_run_code(size_t r, uint8_t* out) {
  if (r < RunCodes::kRuns) {
    const RunCodes& codes = run_codes();
    std::memcpy(out, &codes.word[r], sizeof codes.word[r]);
    return codes.length[r];
  }
  size_t k = 0;
  for (const uint8_t code : run_code(r)) out[k++] = code;
  return k;
}

#if defined(__x86_64__)
// For the vector coders, which take 64 indices a block (zeros: bit q set where index q is 0,
// not every bit set): the zeros of runs that start and end within the block. A run carried
// in from earlier blocks (carry zeros) ends at the block's first non-zero index; its code is
// written here. The block's trailing zeros become the new carry.
inline uint64_t inner_zero_runs(uint64_t zeros, size_t& carry, uint8_t* out, size_t& symbols) {
  constexpr uint64_t kAll = ~uint64_t{0};
  uint64_t inner = zeros;
  if (carry > 0) {
    const auto lead = static_cast<unsigned>(__builtin_ctzll(~zeros));
    symbols += write_run_code(carry + lead, out + symbols);
    inner &= lead == 0 ? kAll : kAll << lead;
  }
  const auto trail = static_cast<unsigned>(__builtin_clzll(~zeros));
  inner &= trail == 0 ? kAll : kAll >> trail;
  carry = trail;
  return inner;
}

// The vector coders' end: the last (fewer than 64) indices one at a time, then the run still
// open and the end-of-block symbol. Returns the total count of symbols written.
inline size_t finish_run_code(const uint8_t* index, size_t n, size_t carry, int used, uint8_t* out, size_t symbols) {
  for (size_t k = 0; k < n; ++k) {
    if (index[k] == 0) {
      ++carry;
      continue;
    }
    symbols += write_run_code(carry, out + symbols);
    carry = 0;
    out[symbols++] = static_cast<uint8_t>(index[k] + 1);
  }
  symbols += write_run_code(carry, out + symbols);
  out[symbols++] = static_cast<uint8_t>(used + 1);
  return symbols;
}
#endif

#if defined(__x86_64__)
// What the AVX-512 run coder looks up per byte lane, for runs of 1..63 zeros (vpermb reads a
// 64-entry table): the code's length; its digits last first, RUNB as a 1 bit (bit k is the
// digit written k places before the run's end); 1 << k; and lane indices q + 2^s, q - 2^s.
struct RunLaneTables {
  alignas(64) uint8_t length[64];
  alignas(64) uint8_t runb_from_end[64];
  alignas(64) uint8_t bit[64];
  alignas(64) uint8_t ahead[6][64];
  alignas(64) uint8_t behind[6][64];
};

const RunLaneTables& run_lane_tables() {
  static const RunLaneTables table = [] {
    RunLaneTables t{};
    for (size_t r = 1; r < 64; ++r) {
      const std::vector<uint8_t> code = run_code(r);
      t.length[r] = static_cast<uint8_t>(code.size());
      for (size_t k = 0; k < code.size(); ++k) t.runb_from_end[r] |= static_cast<uint8_t>((code[code.size() - 1 - k] == kRunB) << k);
    }
    for (size_t k = 0; k < 8; ++k) t.bit[k] = static_cast<uint8_t>(1u << k);
    for (int s = 0; s < 6; ++s)
      for (int q = 0; q < 64; ++q) {
        t.ahead[s][q] = static_cast<uint8_t>((q + (1 << s)) & 63);
        t.behind[s][q] = static_cast<uint8_t>((q - (1 << s)) & 63);
      }
    return t;
  }();
  return table;
}
#endif

}  // namespace

namespace detail {

// The move-to-front indices as bzip2 writes them: runs of index 0 in bijective base 2
// (RUNA = 1, RUNB = 2 times the place value), other indices j as j + 1, then the end-of-block
// symbol used + 1. Only the non-zero indices are visited (a third of the indices of shuffled
// samples are 0, at random, which no branch predicts): each one writes the code of the zeros
// before it and its own symbol as one 8-byte word.
size_t run_code_indices_portable(const uint8_t* index, size_t n, int used, uint8_t* out) {
  const RunCodes& codes = run_codes();
  size_t symbols = 0;
  size_t previous = SIZE_MAX;  // the last non-zero index's position (wraps to 0 below)
  for (size_t base = 0; base < n; base += 64) {
    for (uint64_t bits = nonzero_bits(index + base, std::min<size_t>(64, n - base)); bits != 0; bits &= bits - 1) {
      const size_t at = base + static_cast<size_t>(__builtin_ctzll(bits));
      const size_t zeros = at - previous - 1;
      previous = at;
      const auto symbol = static_cast<uint8_t>(index[at] + 1);
      if (zeros >= RunCodes::kRuns) [[unlikely]] {
        for (const uint8_t code : run_code(zeros)) out[symbols++] = code;
        out[symbols++] = symbol;
        continue;
      }
      const uint64_t word = codes.word[zeros] | (uint64_t{symbol} << (8 * codes.length[zeros]));
      std::memcpy(out + symbols, &word, sizeof word);
      symbols += codes.length[zeros] + 1u;
    }
  }
  symbols += write_run_code(n - previous - 1, out + symbols);
  out[symbols++] = static_cast<uint8_t>(used + 1);
  return symbols;
}

#if defined(__x86_64__)
// The same 64 indices at a time, with no branch per index. A run of r zeros writes
// L(r) = floor(log2(r + 1)) ≤ r digits, so they can stand in the places of the run's last
// L(r) zeros: each lane becomes its output symbol (index + 1, or its digit of the run's code)
// or nothing, and one byte compress (vpcompressb) writes the block's output in order. Per
// lane that needs the length r of its run and its distance k from the run's end, which two
// scans of six doubling steps give (zeros ahead of and behind each lane, within the 64). A
// run that reaches the block's end is held over (carry); one that came from earlier blocks
// writes its code before the block's other symbols, as the scalar coder would. On the
// samples' text this takes ~0.24 ns an index against ~1 for the portable coder (Zen 4).
#define QE_RUN_CODE_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi,lzcnt,popcnt")))
// table[lane] in every byte lane (the zero-masked form: GCC 12's plain one warns of an
// undefined register it passes through).
QE_RUN_CODE_TARGET static inline __m512i lookup(__m512i table, __m512i lane) {
  return _mm512_maskz_permutexvar_epi8(~__mmask64{0}, lane, table);
}

QE_RUN_CODE_TARGET size_t run_code_indices_avx512_kernel(
    const uint8_t* index, size_t n, int used, uint8_t* out) {
  const RunLaneTables& t = run_lane_tables();
  const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi8(1);
  const __m512i length = _mm512_load_si512(t.length), runb_from_end = _mm512_load_si512(t.runb_from_end);
  const __m512i bit = _mm512_load_si512(t.bit);
  __m512i ahead[6], behind[6], step[6];
  for (int s = 0; s < 6; ++s) {
    ahead[s] = _mm512_load_si512(t.ahead[s]);
    behind[s] = _mm512_load_si512(t.behind[s]);
    step[s] = _mm512_set1_epi8(static_cast<char>(1 << s));
  }
  constexpr __mmask64 kAll = ~__mmask64{0};
  size_t symbols = 0, carry = 0, base = 0;  // carry: zeros held over from earlier blocks
  for (; base + 64 <= n; base += 64) {
    const __m512i v = _mm512_loadu_si512(index + base);
    const __mmask64 zeros = _mm512_cmpeq_epi8_mask(v, zero);
    if (zeros == kAll) {
      carry += 64;
      continue;
    }
    const __mmask64 inner = inner_zero_runs(zeros, carry, out, symbols);
    __mmask64 keep = ~zeros;
    __m512i symbol = _mm512_add_epi8(v, one);
    if (inner != 0) {
      // ahead_run[q]: zeros from q to its run's end; behind_run[q]: from its run's start to q.
      __m512i ahead_run = _mm512_maskz_mov_epi8(zeros, one), behind_run = ahead_run;
      for (int s = 0; s < 6; ++s) {
        const __m512i further = _mm512_maskz_permutexvar_epi8(kAll >> (1 << s), ahead[s], ahead_run);
        const __m512i earlier = _mm512_maskz_permutexvar_epi8(kAll << (1 << s), behind[s], behind_run);
        ahead_run = _mm512_mask_add_epi8(ahead_run, _mm512_cmpeq_epi8_mask(ahead_run, step[s]), ahead_run, further);
        behind_run = _mm512_mask_add_epi8(behind_run, _mm512_cmpeq_epi8_mask(behind_run, step[s]), behind_run, earlier);
      }
      const __m512i run = _mm512_sub_epi8(_mm512_add_epi8(ahead_run, behind_run), one);
      const __m512i from_end = _mm512_sub_epi8(ahead_run, one);
      keep |= _mm512_mask_cmplt_epu8_mask(inner, from_end, lookup(length, run));
      const __mmask64 runb = _mm512_test_epi8_mask(lookup(runb_from_end, run), lookup(bit, from_end));
      symbol = _mm512_mask_mov_epi8(symbol, zeros, _mm512_maskz_mov_epi8(runb, one));  // RUNA = 0, RUNB = 1
    }
    // The register form: compress-to-memory is microcoded and slow on Zen 4.
    _mm512_storeu_si512(out + symbols, _mm512_maskz_compress_epi8(keep, symbol));
    symbols += static_cast<size_t>(__builtin_popcountll(keep));
  }
  return finish_run_code(index + base, n - base, carry, used, out, symbols);
}
#undef QE_RUN_CODE_TARGET
#endif

#if defined(__x86_64__)
// pshufb controls that gather the bytes of an 8-byte chunk whose bits are set in k (k < 256),
// in order, to the chunk's front: AVX2's stand-in for vpcompressb.
struct ChunkCompressTable {
  alignas(64) uint64_t control[256];
};

const ChunkCompressTable& chunk_compress_table() {
  static const ChunkCompressTable table = [] {
    ChunkCompressTable t{};
    for (unsigned k = 0; k < 256; ++k) {
      uint64_t control = 0;
      unsigned at = 0;
      for (unsigned lane = 0; lane < 8; ++lane)
        if ((k >> lane) & 1u) control |= uint64_t{lane} << (8 * at++);
      t.control[k] = control;
    }
    return t;
  }();
  return table;
}

#define QE_RUN_CODE_TARGET __attribute__((target("avx2,bmi,lzcnt,popcnt")))
// 0xFF in byte lane q where bit q of m is set, for the 32 lanes of a register.
QE_RUN_CODE_TARGET static inline __m256i bytes_of_bits(uint32_t m) {
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(m)),
                                             _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// The same 64 indices at a time with AVX2, which has neither byte permutes across the
// register nor a byte compress: the zero runs inside the block are walked as bit masks (a
// run of r zeros ending at lane e keeps its last L(r) = floor(log2(r + 1)) lanes, and digit
// i of its code, bit i of r + 1 with RUNB as 1, goes to lane e + 1 - L + i), so the work is
// per run rather than per index; the block's symbols are then packed 8 lanes at a time with
// one byte shuffle each. Runs that cross the block's edges are carried as in the AVX-512 coder.
QE_RUN_CODE_TARGET size_t run_code_indices_avx2_kernel(const uint8_t* index, size_t n, int used, uint8_t* out) {
  const ChunkCompressTable& packing = chunk_compress_table();
  const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi8(1);
  constexpr uint64_t kAll = ~uint64_t{0};
  alignas(32) uint8_t lane[64];
  size_t symbols = 0, carry = 0, base = 0;  // carry: zeros held over from earlier blocks
  for (; base + 64 <= n; base += 64) {
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index + base));
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index + base + 32));
    const uint64_t zeros = uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(low, zero)))} |
                           uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(high, zero)))} << 32;
    if (zeros == kAll) {
      carry += 64;
      continue;
    }
    const uint64_t inner = inner_zero_runs(zeros, carry, out, symbols);
    uint64_t keep = ~zeros, runb = 0;
    for (uint64_t starts = inner & ~(inner << 1), ends = inner & ~(inner >> 1); starts != 0; starts &= starts - 1, ends &= ends - 1) {
      const auto first = static_cast<unsigned>(__builtin_ctzll(starts)), last = static_cast<unsigned>(__builtin_ctzll(ends));
      const unsigned value = last - first + 2;  // r + 1
      const auto digits = static_cast<unsigned>(31 - __builtin_clz(value));  // L(r) >= 1
      const unsigned at = last + 1 - digits;
      keep |= ((uint64_t{1} << digits) - 1) << at;
      runb |= uint64_t{value & ((1u << digits) - 1)} << at;
    }
    // Non-zero lanes: index + 1; zero lanes: 1 for RUNB, 0 for RUNA (adding 0xFF to the 1).
    const uint64_t runa = zeros & ~runb;
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane),
                       _mm256_add_epi8(_mm256_add_epi8(low, one), bytes_of_bits(static_cast<uint32_t>(runa))));
    _mm256_store_si256(reinterpret_cast<__m256i*>(lane + 32),
                       _mm256_add_epi8(_mm256_add_epi8(high, one), bytes_of_bits(static_cast<uint32_t>(runa >> 32))));
    for (unsigned chunk = 0; chunk < 8; ++chunk) {
      const auto k = static_cast<unsigned>((keep >> (8 * chunk)) & 0xFF);
      const __m128i packed = _mm_shuffle_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(lane + 8 * chunk)),
                                              _mm_cvtsi64_si128(static_cast<long long>(packing.control[k])));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + symbols), packed);
      symbols += static_cast<size_t>(__builtin_popcount(k));
    }
  }
  return finish_run_code(index + base, n - base, carry, used, out, symbols);
}
#undef QE_RUN_CODE_TARGET
#endif

bool run_code_indices_avx2(const uint8_t* index, size_t n, int used, uint8_t* out, size_t& symbols) {
#if defined(__x86_64__)
  static const bool avx2 = qe::cpu::has_avx2();
  if (!avx2) return false;
  symbols = run_code_indices_avx2_kernel(index, n, used, out);
  return true;
#else
  (void)index, (void)n, (void)used, (void)out, (void)symbols;
  return false;
#endif
}

bool run_code_indices_avx512(const uint8_t* index, size_t n, int used, uint8_t* out, size_t& symbols) {
#if defined(__x86_64__)
  static const bool vbmi2 = qe::cpu::has_avx512vbmi2();
  if (!vbmi2) return false;
  symbols = run_code_indices_avx512_kernel(index, n, used, out);
  return true;
#else
  (void)index, (void)n, (void)used, (void)out, (void)symbols;
  return false;
#endif
}

// One refinement round's assignment: each group of 50 coded symbols (its symbol counts) goes
// to the table that codes it in the fewest bits, the first such as bzip2 picks, and adds its
// counts to that table's frequencies. Symbols at or past alpha never occur (count 0).

// Every table's cost at once: lane t of cost_of[v] is table t's code length for symbol v, so
// a group's costs are 16 multiply-adds of 8-lane vectors. Lanes past the last table cost more
// than any real table (a group costs at most 50 x 17; 50 x 1000 still fits 16 bits).
void assign_tables_portable(const GroupCounts* counts, size_t groups, const uint8_t (*length)[kAlphabetSlots], int tables,
                           uint8_t* selector, uint32_t (*table_freq)[kAlphabetSlots]) {
  using Costs = uint16_t __attribute__((vector_size(16)));
  constexpr uint16_t kNoTable = 1000;
  Costs cost_of[kAlphabetSlots];
  for (size_t v = 0; v < kAlphabetSlots; ++v)
    for (int t = 0; t < 8; ++t) cost_of[v][t] = t < tables ? length[t][v] : kNoTable;
  for (size_t g = 0; g < groups; ++g) {
    const GroupCounts& c = counts[g];
    Costs cost{};
    for (size_t v = 0; v < kAlphabetSlots; ++v) cost += static_cast<uint16_t>(c[v]) * cost_of[v];
    int best = 0;
    for (int t = 1; t < tables; ++t)
      if (cost[t] < cost[best]) best = t;
    selector[g] = static_cast<uint8_t>(best);
    for (size_t v = 0; v < kAlphabetSlots; ++v) table_freq[best][v] += c[v];
  }
}

#if defined(__x86_64__) || defined(__i386__)
// The same in a few instructions a group: pmaddubsw multiplies the 16 counts by a table's 16
// lengths and adds pairs, three rounds of phaddw finish all eight tables' sums in one vector,
// and phminposuw returns the first cheapest table. The chosen table's counts are added as
// 16-bit lanes, folded into the 32-bit frequencies before they could overflow.
__attribute__((target("sse4.1"))) void assign_tables_sse41_kernel(const GroupCounts* counts, size_t groups, const uint8_t (*length)[kAlphabetSlots],
                                                           int tables, uint8_t* selector, uint32_t (*table_freq)[kAlphabetSlots]) {
  __m128i lengths[8];
  for (int t = 0; t < 8; ++t)
    lengths[t] = t < tables ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(length[t])) : _mm_setzero_si128();
  // Lanes past the last table: all ones, so they are never the minimum.
  alignas(16) uint16_t absent[8];
  for (int t = 0; t < 8; ++t) absent[t] = t < tables ? 0 : 0xFFFF;
  const __m128i no_table = _mm_load_si128(reinterpret_cast<const __m128i*>(absent));
  constexpr size_t kFold = 1000;  // 1000 groups x 50 < 2^16
  __m128i low[kMaxTables], high[kMaxTables];
  auto fold = [&] {
    for (int t = 0; t < tables; ++t) {
      alignas(16) uint16_t lanes[kAlphabetSlots];
      _mm_store_si128(reinterpret_cast<__m128i*>(lanes), low[t]);
      _mm_store_si128(reinterpret_cast<__m128i*>(lanes + 8), high[t]);
      for (size_t v = 0; v < kAlphabetSlots; ++v) table_freq[t][v] += lanes[v];
    }
  };
  for (size_t from = 0; from < groups; from += kFold) {
    for (int t = 0; t < kMaxTables; ++t) low[t] = high[t] = _mm_setzero_si128();
    const size_t to = std::min(groups, from + kFold);
    for (size_t g = from; g < to; ++g) {
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(counts[g].data()));
      __m128i sums[8];
      for (int t = 0; t < 8; ++t) sums[t] = _mm_maddubs_epi16(c, lengths[t]);
      const __m128i s01 = _mm_hadd_epi16(sums[0], sums[1]), s23 = _mm_hadd_epi16(sums[2], sums[3]);
      const __m128i s45 = _mm_hadd_epi16(sums[4], sums[5]), s67 = _mm_hadd_epi16(sums[6], sums[7]);
      const __m128i cost = _mm_or_si128(_mm_hadd_epi16(_mm_hadd_epi16(s01, s23), _mm_hadd_epi16(s45, s67)), no_table);
      const int best = _mm_extract_epi16(_mm_minpos_epu16(cost), 1) & 7;
      selector[g] = static_cast<uint8_t>(best);
      low[best] = _mm_add_epi16(low[best], _mm_cvtepu8_epi16(c));
      high[best] = _mm_add_epi16(high[best], _mm_cvtepu8_epi16(_mm_srli_si128(c, 8)));
    }
    fold();
  }
}
#endif

bool assign_tables_sse41(const GroupCounts* counts, size_t groups, const uint8_t (*length)[kAlphabetSlots], int tables, uint8_t* selector,
                         uint32_t (*table_freq)[kAlphabetSlots]) {
#if defined(__x86_64__) || defined(__i386__)
  static const bool sse41 = qe::cpu::has_sse41();
  if (!sse41) return false;
  assign_tables_sse41_kernel(counts, groups, length, tables, selector, table_freq);
  return true;
#else
  (void)counts, (void)groups, (void)length, (void)tables, (void)selector, (void)table_freq;
  return false;
#endif
}

// The symbol counts of each group of 50 coded symbols. Two interleaved rows, so repeats do
// not wait on each other.
void count_groups_portable(const uint8_t* coded, size_t symbols, GroupCounts* counts) {
  for (size_t g = 0; g * kGroupSize < symbols; ++g) {
    const uint8_t* x = coded + g * kGroupSize;
    const size_t size = std::min(kGroupSize, symbols - g * kGroupSize);
    uint8_t a[kAlphabetSlots] = {}, b[kAlphabetSlots] = {};
    size_t k = 0;
    for (; k + 1 < size; k += 2) {
      ++a[x[k]];
      ++b[x[k + 1]];
    }
    if (k < size) ++a[x[k]];
    for (size_t v = 0; v < kAlphabetSlots; ++v) counts[g][v] = static_cast<uint8_t>(a[v] + b[v]);
  }
}

#if defined(__x86_64__)
// The same with no memory round trip per symbol: the group's 50 bytes in one register, and
// each count the population of one compare mask. The portable rows still wait on each other
// wherever a symbol repeats, which in coded text is most of the time (RUNA, RUNB).
__attribute__((target("avx512f,avx512bw,popcnt"))) void count_groups_avx512_kernel(const uint8_t* coded, size_t symbols,
                                                                                  GroupCounts* counts) {
  for (size_t g = 0; g * kGroupSize < symbols; ++g) {
    const size_t size = std::min(kGroupSize, symbols - g * kGroupSize);
    const __mmask64 in_group = ~__mmask64{0} >> (64 - size);
    const __m512i x = _mm512_maskz_loadu_epi8(in_group, coded + g * kGroupSize);
    for (size_t v = 0; v < kAlphabetSlots; ++v)
      counts[g][v] = static_cast<uint8_t>(__builtin_popcountll(_mm512_mask_cmpeq_epi8_mask(in_group, x, _mm512_set1_epi8(static_cast<char>(v)))));
  }
}

// The same with AVX2, which has no byte masks: a full group is two overlapping loads (bytes
// 0-31 and 18-49), and each count the population of two compare masks, the second cut to the
// 18 bytes the first did not cover. A short last group is counted the portable way.
__attribute__((target("avx2,popcnt"))) void count_groups_avx2_kernel(const uint8_t* coded, size_t symbols, GroupCounts* counts) {
  static_assert(kGroupSize > 32 && kGroupSize <= 64);
  constexpr unsigned kOverlap = 64 - kGroupSize;  // bytes of the second load that the first counted
  const size_t full = symbols / kGroupSize;
  for (size_t g = 0; g < full; ++g) {
    const uint8_t* x = coded + g * kGroupSize;
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + kGroupSize - 32));
    for (size_t v = 0; v < kAlphabetSlots; ++v) {
      const __m256i value = _mm256_set1_epi8(static_cast<char>(v));
      const auto a = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(low, value)));
      const auto b = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(high, value))) >> kOverlap;
      counts[g][v] = static_cast<uint8_t>(__builtin_popcount(a) + __builtin_popcount(b));
    }
  }
  if (full * kGroupSize < symbols) count_groups_portable(coded + full * kGroupSize, symbols - full * kGroupSize, counts + full);
}
#endif

bool count_groups_avx2(const uint8_t* coded, size_t symbols, GroupCounts* counts) {
#if defined(__x86_64__)
  static const bool avx2 = qe::cpu::has_avx2();
  if (!avx2) return false;
  count_groups_avx2_kernel(coded, symbols, counts);
  return true;
#else
  (void)coded, (void)symbols, (void)counts;
  return false;
#endif
}

bool count_groups_avx512(const uint8_t* coded, size_t symbols, GroupCounts* counts) {
#if defined(__x86_64__)
  static const bool avx512 = qe::cpu::has_avx512bw();
  if (!avx512) return false;
  count_groups_avx512_kernel(coded, symbols, counts);
  return true;
#else
  (void)coded, (void)symbols, (void)counts;
  return false;
#endif
}

}  // namespace detail

namespace {

using detail::GroupCounts;
static_assert(std::tuple_size_v<GroupCounts> == kAlphabetSlots);

void assign_tables(const GroupCounts* counts, size_t groups, const uint8_t (*length)[kAlphabetSlots], int tables, uint8_t* selector,
                   uint32_t (*table_freq)[kAlphabetSlots]) {
  if (!detail::assign_tables_sse41(counts, groups, length, tables, selector, table_freq))
    detail::assign_tables_portable(counts, groups, length, tables, selector, table_freq);
}

void count_groups(const uint8_t* coded, size_t symbols, GroupCounts* counts) {
  if (!detail::count_groups_avx512(coded, symbols, counts) && !detail::count_groups_avx2(coded, symbols, counts))
    detail::count_groups_portable(coded, symbols, counts);
}

size_t run_code_indices(const uint8_t* index, size_t n, int used, uint8_t* out) {
  size_t symbols = 0;
  if (detail::run_code_indices_avx512(index, n, used, out, symbols) || detail::run_code_indices_avx2(index, n, used, out, symbols))
    return symbols;
  return detail::run_code_indices_portable(index, n, used, out);
}

// bzip2's block coding (compress.c: generateMTFValues, sendMTFValues), counting bits instead
// of writing them.
uint64_t block_bits(size_t n, Bzip2Size::Workspace& w) {
  const bool* in_use = w.in_use;
  const int used = static_cast<int>(std::count(in_use, in_use + kChars, true));
  const int ranges = (in_use[0] ? 1 : 0) + (std::any_of(in_use + 1, in_use + kChars, [](bool b) { return b; }) ? 1 : 0);
  const int alpha = used + 2;  // RUNA, RUNB, indices 1..used-1 as 2..used, end of block

  w.mtf.resize(n);
  mtf_indices(w.symbols.data(), n, used, w.mtf.data());
  w.coded.resize(n + detail::kRunCodeSlack);
  uint8_t* out = w.coded.data();
  const size_t symbols = run_code_indices(w.mtf.data(), n, used, out);

  // Symbol counts per group of 50: every cost and frequency below is a sum over them.
  const size_t groups = (symbols + kGroupSize - 1) / kGroupSize;
  auto& counts = w.group_counts;
  counts.resize(groups);  // every entry written below
  count_groups(out, symbols, counts.data());
  uint32_t freq[kAlphabetSlots] = {};
  for (size_t g = 0; g < groups; ++g)
    for (size_t v = 0; v < kAlphabetSlots; ++v) freq[v] += counts[g][v];

  const int tables = symbols < 200 ? 2 : symbols < 600 ? 3 : symbols < 1200 ? 4 : symbols < 2400 ? 5 : kMaxTables;
  uint8_t length[kMaxTables][kAlphabetSlots];
  for (auto& row : length) std::fill(std::begin(row), std::end(row), kGreaterCost);
  // Initial tables: split the symbol range into runs of roughly equal total frequency.
  {
    int parts = tables, gs = 0;
    uint32_t remaining = static_cast<uint32_t>(symbols);
    while (parts > 0) {
      const uint32_t target = remaining / static_cast<uint32_t>(parts);
      int ge = gs - 1;
      uint32_t got = 0;
      while (got < target && ge < alpha - 1) got += freq[++ge];
      if (ge > gs && parts != tables && parts != 1 && ((tables - parts) % 2 == 1)) got -= freq[ge--];
      for (int v = 0; v < alpha; ++v) length[parts - 1][v] = (v >= gs && v <= ge) ? kLesserCost : kGreaterCost;
      --parts;
      gs = ge + 1;
      remaining -= got;
    }
  }
  w.selector.resize(groups);
  for (int round = 0; round < kRefinements; ++round) {
    uint32_t table_freq[kMaxTables][kAlphabetSlots] = {};
    assign_tables(counts.data(), groups, length, tables, w.selector.data(), table_freq);
    for (int t = 0; t < tables; ++t) make_code_lengths(length[t], table_freq[t], alpha, kMaxCodeLength);
  }

  uint64_t bits = kBlockHeaderBits + 16 * static_cast<uint64_t>(ranges);
  // Selectors, move-to-front coded in unary.
  uint8_t table_order[kMaxTables];
  for (int t = 0; t < tables; ++t) table_order[t] = static_cast<uint8_t>(t);
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t s = w.selector[g];
    int j = 0;
    while (table_order[j] != s) ++j;
    bits += static_cast<uint64_t>(j) + 1;
    for (; j > 0; --j) table_order[j] = table_order[j - 1];
    table_order[0] = s;
  }
  // Code lengths, delta coded: 5 bits, then per symbol 2 bits per step and a stop bit.
  for (int t = 0; t < tables; ++t) {
    int current = length[t][0];
    bits += 5;
    for (int v = 0; v < alpha; ++v) {
      bits += 2 * static_cast<uint64_t>(std::abs(length[t][v] - current)) + 1;
      current = length[t][v];
    }
  }
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t* len = length[w.selector[g]];
    for (int v = 0; v < alpha; ++v) bits += static_cast<uint64_t>(counts[g][v]) * len[v];
  }
  return bits;
}

// Where bzip2 ends each block. Its first stage holds back the current run of equal bytes
// until a different byte arrives, and a block is closed, before a byte is read, once the
// bytes handed on reach 100k x level - 19. So a block ends at the first start of a run at or
// past that size, provided a byte follows it (otherwise the rest is the last block). Assumes
// no run longer than 3 (there the first stage would insert a count byte).
// char_at(p) is the text's character at p; it is asked for positions in increasing order.
template <typename CharAt>
std::vector<Span> block_spans(CharAt char_at, size_t size, int block_size_100k) {
  const size_t block_max = 100000 * static_cast<size_t>(block_size_100k) - 19;
  std::vector<Span> blocks;
  for (size_t start = 0;;) {
    size_t end = start + block_max;
    if (end < size) {
      const char previous = char_at(end - 1);
      while (end < size && char_at(end) == previous) ++end;
    }
    if (end + 2 > size) {
      blocks.push_back({start, size - start});
      return blocks;
    }
    blocks.push_back({start, end - start});
    start = end;
  }
}

}  // namespace

Bzip2Size::Bzip2Size() : w_(std::make_unique<Workspace>()) {}
Bzip2Size::~Bzip2Size() = default;
Bzip2Size::Bzip2Size(Bzip2Size&&) noexcept = default;
Bzip2Size& Bzip2Size::operator=(Bzip2Size&&) noexcept = default;

std::optional<size_t> Bzip2Size::of_decimal_text(const char* text, size_t size, int block_size_100k) {
  if (block_size_100k < 1 || block_size_100k > 9) return std::nullopt;
  for (size_t i = 0, run = 0; i < size; ++i) {
    const char c = text[i];
    if (c != ' ' && (c < '0' || c > '9')) return std::nullopt;
    run = (i > 0 && c == text[i - 1]) ? run + 1 : 1;
    if (run > 3) return std::nullopt;
  }
  Workspace& w = *w_;
  uint64_t bits = kStreamHeaderBits + kStreamTrailerBits;
  for (const Span& b : block_spans([text](size_t p) { return text[p]; }, size, block_size_100k)) {
    if (b.size == 0) continue;
    w.token_type.clear();
    w.long_types.clear();
    if (tokens_of_text(text + b.start, b.size, w)) last_column_of_tokens(b.size, w);
    else if (!naive_last_column(text + b.start, b.size, w)) return std::nullopt;
    bits += block_bits(b.size, w);
  }
  return static_cast<size_t>((bits + 7) / 8);
}

namespace {

// Each byte value's decimal digits followed by a space, its length in characters and its
// token type.
struct DecimalTable {
  std::array<std::array<char, 4>, 256> chars{};
  std::array<uint8_t, 256> length{};
  std::array<uint32_t, 256> type{};
};

const DecimalTable& decimal_table() {
  static const DecimalTable table = [] {
    DecimalTable t;
    for (size_t v = 0; v < 256; ++v) {
      const std::string d = std::to_string(v);
      std::copy(d.begin(), d.end(), t.chars[v].begin());
      t.chars[v][d.size()] = ' ';
      t.length[v] = static_cast<uint8_t>(d.size() + 1);
      t.type[v] = short_type(d.data(), d.size());
    }
    return t;
  }();
  return table;
}

// Characters of "v0 v1 ... vn-1 " read from the samples without writing the text out (the
// model needs only a few of them: where blocks end and the tokens that wrap around), at
// positions that only move forward.
class DecimalText {
 public:
  DecimalText(const uint8_t* samples, size_t n) : samples_(samples), n_(n) {}

  // Characters in the text (n tokens, no space after the last one).
  size_t size() const { return n_ > 0 ? span(0, n_) - 1 : 0; }
  // Moves to the token holding position p (p at or after the current token's start).
  void seek(size_t p) {
    constexpr size_t kChunk = 64;
    for (size_t chunk; i_ + kChunk <= n_ && start_ + (chunk = span(i_, i_ + kChunk)) <= p; i_ += kChunk) start_ += chunk;
    while (start_ + length(i_) <= p) start_ += length(i_++);
  }
  size_t token() const { return i_; }
  size_t token_start() const { return start_; }
  char at(size_t p) {
    seek(p);
    return decimal_table().chars[samples_[i_]][p - start_];
  }

 private:
  // "v " takes 2 characters, 3 from 10 on, 4 from 100 on: a sum the compiler vectorises.
  size_t span(size_t from, size_t to) const {
    size_t chars = 0;
    for (size_t k = from; k < to; ++k) chars += 2u + (samples_[k] >= 10) + (samples_[k] >= 100);
    return chars;
  }
  size_t length(size_t k) const { return decimal_table().length[samples_[k]]; }

  const uint8_t* samples_;
  size_t n_;
  size_t i_ = 0, start_ = 0;
};

}  // namespace

size_t Bzip2Size::of_decimal_samples(const uint8_t* samples, size_t n, int block_size_100k) {
  if (const std::optional<size_t> size = model_of_decimal_samples(samples, n, block_size_100k)) return *size;
  // The model declines only what decimal samples never make; libbz2 answers then, on the
  // text itself, so a gap in the model costs time, never a wrong statistic.
  require_bzip2();
  const DecimalTable& table = decimal_table();
  std::vector<char> text(n * 4 + 4);
  size_t size = 0;
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(text.data() + size, table.chars[samples[i]].data(), 4);
    size += table.length[samples[i]];
  }
  size = n > 0 ? size - 1 : 0;  // no space after the last value
  auto length = static_cast<unsigned>(size + size / 50 + 700);
  std::vector<char> out(length);
  if (!bzip2_compress(out.data(), &length, text.data(), static_cast<unsigned>(size), block_size_100k))
    throw std::runtime_error("libbz2 could not compress the samples' decimal text");
  return length;
}

std::optional<size_t> Bzip2Size::model_of_decimal_samples(const uint8_t* samples, size_t n, int block_size_100k) {
  if (block_size_100k < 1 || block_size_100k > 9) return std::nullopt;
  const DecimalTable& table = decimal_table();
  Workspace& w = *w_;
  DecimalText ends(samples, n);
  const size_t size = ends.size();
  const std::vector<Span> blocks = block_spans([&ends](size_t p) { return ends.at(p); }, size, block_size_100k);

  DecimalText text(samples, n);
  uint64_t bits = kStreamHeaderBits + kStreamTrailerBits;
  for (const Span& b : blocks) {
    if (b.size == 0) continue;
    const size_t a = b.start, e = b.start + b.size;
    // Sample `first` holds the block's first character; the block's first space ends it.
    // Whole tokens follow up to sample `last - 1`; then the block's tail (digits of sample
    // `last`) wraps around to its head (the rest of sample `first`): one token, the junction.
    text.seek(a);
    const size_t first = text.token(), first_start = text.token_start();
    const size_t first_space = first_start + table.length[samples[first]] - 1;
    w.token_type.clear();
    w.long_types.clear();
    if (first_space >= e) {
      // No space in the block: only a short block can be so (its characters, then).
      if (b.size > kNaiveSortLimit) return std::nullopt;
      std::vector<char> chars(b.size);
      for (size_t p = a; p < e; ++p) chars[p - a] = text.at(p);
      if (!naive_last_column(chars.data(), b.size, w)) return std::nullopt;
    } else {
      // The last block ends with the text, in the last sample (which has no space after it).
      if (e < size) text.seek(e);
      const size_t last = e < size ? text.token() : n - 1;
      const size_t last_start = e < size ? text.token_start() : size + 1 - table.length[samples[n - 1]];
      w.token_type.resize(last > first + 1 ? last - first - 1 : 0);
      uint32_t* type_of = w.token_type.data();
      for (size_t i = first + 1; i < last; ++i) *type_of++ = table.type[samples[i]];
      char junction[2 * 3 + 1];
      const size_t tail = e - last_start, head = first_space - a;
      std::memcpy(junction, table.chars[samples[last]].data(), tail);
      std::memcpy(junction + tail, table.chars[samples[first]].data() + (a - first_start), head);
      const std::optional<uint32_t> type = token_type(junction, tail + head, w);
      if (!type) return std::nullopt;
      w.token_type.push_back(*type);
      last_column_of_tokens(b.size, w);
    }
    bits += block_bits(b.size, w);
  }
  return static_cast<size_t>((bits + 7) / 8);
}

}  // namespace qe::ea
