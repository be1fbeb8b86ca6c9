// The predictor estimates: MultiMCW (§6.3.7), lag (§6.3.8), MultiMMC (§6.3.9) and LZ78Y
// (§6.3.10). Each replays the data through its predictors, counts the winner's correct
// guesses and longest run of them, and hands both to prediction_estimate().
//
// Binary inputs (the bitstring, or 2-symbol literal data) use direct tables indexed by the
// context bits; wider alphabets use hash tables of contexts. Both follow the same rules,
// including the tool's dictionary caps and tie-breaks.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/cpu.h"
#include "common/populated.h"
#include "ea/ea.h"

namespace qe::ea {

// The blocked scoreboards below count matches with one popcount per 64 steps, so they are
// compiled with QE_POPCNT_CLONES (common/cpu.h).


namespace {

// Scoring of the "winner" predictor and of the run of correct predictions it makes.
struct Tally {
  long correct = 0, run = 0, longest = 0;
  void hit() {
    ++correct;
    longest = std::max(longest, ++run);
  }
  void miss() { run = 0; }
  // hit() or miss() without branches (binary MultiMMC's scoreboard, whose guesses on random
  // data are right or wrong at random, mispredicted them every other step).
  void add(bool right) {
    correct += right;
    run = right ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  // `steps` (1..64) steps at once, the first in the top bit: step k was right where bit
  // 63 - k of `right` is set.
  void add_block(uint64_t right, int steps) {
    const uint64_t valid = steps == 64 ? ~uint64_t{0} : ~(~uint64_t{0} >> steps);
    right &= valid;
    correct += __builtin_popcountll(right);
    const uint64_t wrong = ~right & valid;
    if (wrong == 0) {
      run += steps;
      longest = std::max(longest, run);
      return;
    }
    long inside = 0;  // the longest run of set bits: each y &= y << 1 shortens every run by one
    for (uint64_t y = right; y != 0; y &= y << 1) ++inside;
    longest = std::max({longest, run + __builtin_clzll(wrong), inside});
    run = __builtin_ctzll(wrong) - (64 - steps);  // right after the last wrong step
  }
};

}  // namespace

// ---- MultiMCW: four sliding windows, each predicting its most common symbol (ties go to
// the symbol seen most recently); the window with the best score so far makes the guess.
namespace {

constexpr int kWindows = 4;
constexpr long kWidth[kWindows] = {63, 255, 1023, 4095};

// Binary data: every window width is odd, so a window's mode is simply its majority bit.
double binary_multi_mcw(const uint8_t* s, long n) {
  std::array<long, kWindows> ones{}, score{};
  std::array<uint8_t, kWindows> frequent{};
  for (int j = 0; j < kWindows; ++j) {
    for (long i = 0; i < kWidth[j]; ++i) ones[static_cast<size_t>(j)] += s[i] & 1;
    frequent[static_cast<size_t>(j)] = 2 * ones[static_cast<size_t>(j)] > kWidth[j];
  }
  // The rule with selects instead of branches (whether a window's bit matches, and whether
  // it takes the lead, are coin flips on random data). `high` is the winner's score as the
  // rule reads it, its own point of this step included. A window joins once it is full.
  int winner = 0;
  long high = 0;
  Tally tally;
  for (long i = kWidth[0]; i < n; ++i) {
    const uint8_t x = s[i] & 1;
    tally.add(frequent[static_cast<size_t>(winner)] == x);
    for (int j = 0; j < kWindows; ++j) {
      const auto ju = static_cast<size_t>(j);
      if (i < kWidth[j]) continue;
      const bool match = frequent[ju] == x;
      score[ju] += match;
      high = j == winner ? score[ju] : high;
      const bool lead = match && score[ju] >= high;
      winner = lead ? j : winner;
      high = lead ? score[ju] : high;
      ones[ju] += x - (s[i - kWidth[j]] & 1);
      frequent[ju] = 2 * ones[ju] > kWidth[j];
    }
  }
  return prediction_estimate(tally.correct, n - kWidth[0], tally.longest, 2);
}

}  // namespace

double multi_mcw_estimate(const uint8_t* s, size_t n, int k) {
  if (n < static_cast<size_t>(kWidth[kWindows - 1]) + 1) return kNotApplicable;
  if (k == 2) return binary_multi_mcw(s, static_cast<long>(n));
  struct Window {
    std::vector<long> count, last;
    std::vector<long> holding;  // holding[c]: how many symbols the window holds c times
    long best_count = 0;
    int frequent = 0;
  };
  std::array<Window, kWindows> win;
  for (size_t j = 0; j < win.size(); ++j) {
    Window& w = win[j];
    w.count.assign(static_cast<size_t>(k), 0);
    w.last.assign(static_cast<size_t>(k), -1);
    w.holding.assign(static_cast<size_t>(kWidth[j]) + 2, 0);
    w.holding[0] = k;
  }
  auto recount = [](Window& w, int x, long by) {
    long& c = w.count[static_cast<size_t>(x)];
    --w.holding[static_cast<size_t>(c)];
    c += by;
    ++w.holding[static_cast<size_t>(c)];
    return c;
  };
  auto add = [&recount](Window& w, int x, long pos) {
    w.last[static_cast<size_t>(x)] = pos;
    if (const long c = recount(w, x, 1); c >= w.best_count) {
      w.best_count = c;
      w.frequent = x;
    }
  };
  auto remove = [k, &recount](Window& w, int x) {
    const long c = recount(w, x, -1);
    if (x != w.frequent) return;
    // The mode left once. If no symbol is left at its old count and none but it at the
    // new one, it is still the mode, alone (the usual case where one value dominates:
    // low-entropy data would otherwise rescan all k counts at nearly every step).
    if (w.holding[static_cast<size_t>(c) + 1] == 0 && w.holding[static_cast<size_t>(c)] == 1) {
      w.best_count = c;
      return;
    }
    // Otherwise find the new mode, most recent on ties.
    w.best_count = -1;
    for (int v = 0; v < k; ++v) {
      const auto vu = static_cast<size_t>(v);
      if (w.count[vu] > w.best_count ||
          (w.count[vu] == w.best_count && w.last[vu] > w.last[static_cast<size_t>(w.frequent)])) {
        w.best_count = w.count[vu];
        w.frequent = v;
      }
    }
  };
  for (long i = 0; i < kWidth[kWindows - 1]; ++i)
    for (int j = 0; j < kWindows; ++j)
      if (i < kWidth[j]) add(win[static_cast<size_t>(j)], s[i], i);
  std::array<long, kWindows> score{};
  int winner = 0;
  Tally tally;
  for (long i = kWidth[0]; i < static_cast<long>(n); ++i) {
    const int x = s[i];
    if (win[static_cast<size_t>(winner)].frequent == x) tally.hit();
    else tally.miss();
    for (int j = 0; j < kWindows; ++j)
      if (i >= kWidth[j] && win[static_cast<size_t>(j)].frequent == x &&
          ++score[static_cast<size_t>(j)] >= score[static_cast<size_t>(winner)])
        winner = j;
    for (int j = 0; j < kWindows; ++j) {
      if (i < kWidth[j]) continue;
      Window& w = win[static_cast<size_t>(j)];
      remove(w, s[i - kWidth[j]]);
      add(w, x, i);
    }
  }
  return prediction_estimate(tally.correct, static_cast<long>(n) - kWidth[0], tally.longest, k);
}

namespace {

constexpr long kLags = 128;

// Binary data, 64 steps at a time. Scores rise by at most one a step, so in a block of B steps
// only lags within B of the leader can take the lead: those are replayed step by step with
// the exact rule; every other lag just gains the number of its matches in the block, one
// popcount of the block against its shifted copy.
QE_POPCNT_CLONES double binary_lag(const uint8_t* s, long n) {
  std::vector<uint64_t> packed(static_cast<size_t>(n / 64 + 2), 0);  // MSB first
  for (long from = 0; from < n; from += 64) {  // a word in a register, not 64 updates in memory
    uint64_t word = 0;
    for (long j = 0; j < 64 && from + j < n; ++j) word |= static_cast<uint64_t>(s[from + j] & 1) << (63 - j);
    packed[static_cast<size_t>(from >> 6)] = word;
  }
  auto bits_at = [&packed](long start) {  // s[start .. start+63], s[start] in the top bit
    const auto w = static_cast<size_t>(start >> 6);
    const int r = static_cast<int>(start & 63);
    return r == 0 ? packed[w] : (packed[w] << r) | (packed[w + 1] >> (64 - r));
  };
  std::array<long, kLags> score{};  // score[d] for lag d+1
  long winner = 0, high = 0;
  Tally tally;
  auto step = [&](long i, const long* lags, size_t count) {
    const uint8_t x = s[i] & 1;
    if (x == (s[i - winner - 1] & 1)) tally.hit();
    else tally.miss();
    for (size_t c = 0; c < count; ++c) {
      const long d = lags[c];
      if (d < i && (s[i - d - 1] & 1) == x && ++score[static_cast<size_t>(d)] >= high) {
        winner = d;
        high = score[static_cast<size_t>(d)];
      }
    }
  };
  std::array<long, kLags> all;
  for (long d = 0; d < kLags; ++d) all[static_cast<size_t>(d)] = d;
  long i = 1;
  for (; i < n && i <= kLags; ++i) step(i, all.data(), all.size());  // warm-up: lags start as the data does
  std::array<long, kLags> candidates;
  std::array<bool, kLags> is_candidate;
  while (i < n) {
    const long block = std::min<long>(64, n - i);
    size_t count = 0;
    for (long d = 0; d < kLags; ++d) {
      is_candidate[static_cast<size_t>(d)] = score[static_cast<size_t>(d)] >= high - block;
      if (is_candidate[static_cast<size_t>(d)]) candidates[count++] = d;
    }
    const uint64_t mask = block == 64 ? ~uint64_t{0} : ~(~uint64_t{0} >> block);
    const uint64_t here = bits_at(i);
    for (long d = 0; d < kLags; ++d)
      if (!is_candidate[static_cast<size_t>(d)])
        score[static_cast<size_t>(d)] += __builtin_popcountll(~(here ^ bits_at(i - d - 1)) & mask);
    if (count == 1) {
      // The leader alone can lead in this block (on random data, nearly every block once the
      // scores spread): its guesses are one word, scored without a branch per step.
      const uint64_t right = ~(here ^ bits_at(i - winner - 1)) & mask;
      tally.add_block(right, static_cast<int>(block));
      high = score[static_cast<size_t>(winner)] += __builtin_popcountll(right);
    } else {
      for (long t = 0; t < block; ++t) step(i + t, candidates.data(), count);
    }
    i += block;
  }
  return prediction_estimate(tally.correct, n - 1, tally.longest, 2);
}

}  // namespace

// ---- Lag: 128 predictors, lag d guessing the symbol d places back; the best scorer so far
// (the larger lag on ties) makes the guess.
double lag_estimate(const uint8_t* s, size_t n, int k) {
  if (n < 3) return kNotApplicable;
  if (k == 2) return binary_lag(s, static_cast<long>(n));
  // by_back[j] scores lag kLags - j, so by_back[j] lines up with s[i - kLags + j].
  alignas(64) std::array<int32_t, kLags> by_back{};
  auto score = [&by_back](long d) -> int32_t& { return by_back[static_cast<size_t>(kLags - 1 - d)]; };
  long winner = 0;  // lag winner + 1
  int32_t high = 0;
  Tally tally;
  for (long i = 1; i < static_cast<long>(n); ++i) {
    const uint8_t x = s[i];
    if (x == s[i - winner - 1]) tally.hit();
    else tally.miss();
    if (i < kLags) {
      for (long d = 0; d < i; ++d)
        if (s[i - d - 1] == x && ++score(d) >= high) {
          winner = d;
          high = score(d);
        }
      continue;
    }
    // All 128 lags at once (vectorisable). Scores rise by at most one per step, so the
    // sequential "score >= best so far" rule picks the largest matching lag holding the new
    // maximum, if a matching lag reached the old one.
    const uint8_t* back = s + i - kLags;
    int32_t best = -1;
    for (size_t j = 0; j < static_cast<size_t>(kLags); ++j) {
      const int32_t m = back[j] == x ? 1 : 0;
      by_back[j] += m;
      const int32_t candidate = m ? by_back[j] : -1;
      best = candidate > best ? candidate : best;
    }
    if (best >= high) {
      for (size_t j = 0; j < static_cast<size_t>(kLags); ++j)
        if (back[j] == x && by_back[j] == best) {
          winner = kLags - 1 - static_cast<long>(j);
          high = best;
          break;
        }
    }
  }
  return prediction_estimate(tally.correct, static_cast<long>(n) - 1, tally.longest, k);
}

namespace {

// Context (up to 16 symbols) -> counts of the symbols that followed it, with the running
// prediction: the most frequent follower, the larger symbol on ties.
//
// Both tables are open-addressed and memory-bound (their working set exceeds L2), so they are
// kept small (8-byte slots) and the callers know their keys a few steps ahead and prefetch
// them: a follower's slot is placed by its context's hash, not its id, so both slots can be
// fetched before the context is found. Ids and counts are 32-bit: the callers cap the
// contexts below 2^24 and pass fewer than 2^32 samples.
class ContextTable {
 public:
  using Key = std::array<uint64_t, 2>;
  struct Context {
    Key key;
    uint32_t best = 0;
    uint8_t prediction = 0;
    // Distinct followers counted so far, up to 2. A context with one follower keeps it here
    // (its count is `best`, its symbol the prediction) and nothing in the follower table:
    // on random data nearly every context of the longer orders is seen once, and their
    // follower slots were most of the memory the tables touched.
    uint8_t followers = 0;
  };

  // `expected`: contexts and (context, follower) pairs the caller may make, to size the
  // tables once (growing rehashes everything made so far).
  explicit ContextTable(size_t expected = 512) {
    size_t size = 1024;
    while (size < 2 * expected) size *= 2;
    slots_.assign(size, Slot{-1, 0});
    mask_ = size - 1;
    followers_.assign(kFirstFollowerSlots, Follower{0, 0});
    follower_mask_ = kFirstFollowerSlots - 1;
    contexts_.reserve(expected);
  }

  // Word by word: std::array's == can become a call to memcmp.
  static bool same(const Key& a, const Key& b) { return ((a[0] ^ b[0]) | (a[1] ^ b[1])) == 0; }

  static uint64_t hash(const Key& key) {
    const uint64_t h = key[0] * 0x9E3779B97F4A7C15ull ^ (key[1] + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
  }

  // Brings the slots a find/insert of a key hashing to `h` and a count of its follower `y`
  // will touch into cache.
  void prefetch(uint64_t h, uint8_t y) const {
    __builtin_prefetch(&slots_[h & mask_]);
    __builtin_prefetch(&followers_[follower_slot(h, y) & follower_mask_]);
  }

  // Index of the context, or -1. The slot holds the top hash bits, so a probe of a slot
  // holding another context rarely reads that context's key.
  long find(const Key& key, uint64_t h) const {
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.id < 0) return -1;
      if (slot.tag == tag && same(contexts_[static_cast<size_t>(slot.id)].key, key)) return slot.id;
    }
  }

  // For a table that will get no more contexts: a bitmap of their hashes (about 32 bits per
  // context), so that find_frozen() answers "absent" for most absent keys from one bit, not
  // from probing slots (random data is absent or not at random: the probe loop's branches
  // mispredicted).
  void freeze() {
    size_t bits = 1024;
    while (bits < 32 * contexts_.size()) bits *= 2;
    filter_.assign(bits / 64, 0);
    filter_mask_ = bits - 1;
    for (const Context& c : contexts_) {
      const size_t b = filter_bit(hash(c.key));
      filter_[b >> 6] |= uint64_t{1} << (b & 63);
    }
  }

  // find() on a frozen table.
  long find_frozen(const Key& key, uint64_t h) const {
    const size_t b = filter_bit(h);
    if (((filter_[b >> 6] >> (b & 63)) & 1) == 0) return -1;
    return find(key, h);
  }

  // Index of the context, added if new.
  long insert(const Key& key, uint64_t h) {
    if ((contexts_.size() + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    const auto tag = static_cast<uint32_t>(h >> 32);
    size_t i = h & mask_;
    for (; slots_[i].id >= 0; i = (i + 1) & mask_)
      if (slots_[i].tag == tag && same(contexts_[static_cast<size_t>(slots_[i].id)].key, key)) return slots_[i].id;
    const auto id = static_cast<int32_t>(contexts_.size());
    slots_[i] = {id, static_cast<uint32_t>(h >> 32)};
    contexts_.push_back({key, 0, 0});
    return id;
  }

  const Context& context(long id) const { return contexts_[static_cast<size_t>(id)]; }

  // Counts follower y of context `id` (whose key hashes to h); a new (context, y) pair only
  // when `make_new`. Returns true when a new pair was made.
  bool count(long id, uint64_t h, uint8_t y, bool make_new) {
    Context& c = contexts_[static_cast<size_t>(id)];
    if (c.followers < 2) {
      if (c.followers == 1 && y == c.prediction) {
        ++c.best;
        return false;
      }
      if (!make_new) return false;
      if (c.followers == 0) {
        c = {c.key, 1, y, 1};
        return true;
      }
      // A second follower: both move to the table.
      add_follower(id, h, c.prediction, c.best);
      c.followers = 2;
    }
    const uint32_t key = follower_key(id, y);
    size_t i = follower_slot(h, y) & follower_mask_;
    while (followers_[i].key != 0 && followers_[i].key != key) i = (i + 1) & follower_mask_;
    uint32_t value;
    bool made = false;
    if (followers_[i].key == key) {
      value = ++followers_[i].count;
    } else if (make_new) {
      add_follower(id, h, y, 1);
      value = 1;
      made = true;
    } else {
      return false;
    }
    if (value > c.best || (value == c.best && y > c.prediction)) {
      c.best = value;
      c.prediction = y;
    }
    return made;
  }

 private:
  struct Slot {
    int32_t id;  // -1 = empty
    uint32_t tag;
  };
  struct Follower {
    uint32_t key;  // (context + 1) << 8 | symbol; 0 = empty
    uint32_t count;
  };

  static constexpr size_t kFirstFollowerSlots = 1024;

  static uint32_t follower_key(long id, uint8_t y) { return (static_cast<uint32_t>(id + 1) << 8) | y; }  // 0 = empty

  // A (context, follower) pair not yet in the table.
  void add_follower(long id, uint64_t h, uint8_t y, uint32_t count) {
    size_t i = follower_slot(h, y) & follower_mask_;
    while (followers_[i].key != 0) i = (i + 1) & follower_mask_;
    followers_[i] = {follower_key(id, y), count};
    if (++follower_count_ * 2 > followers_.size()) grow_followers();
  }

  static size_t follower_slot(uint64_t context_hash, uint8_t y) {
    const uint64_t h = (context_hash + y) * 0xD6E8FEB86659FD93ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }

  void rehash(size_t size) {
    slots_.assign(size, Slot{-1, 0});
    mask_ = size - 1;
    for (size_t id = 0; id < contexts_.size(); ++id) {
      const uint64_t h = hash(contexts_[id].key);
      size_t i = h & mask_;
      while (slots_[i].id >= 0) i = (i + 1) & mask_;
      slots_[i] = {static_cast<int32_t>(id), static_cast<uint32_t>(h >> 32)};
    }
  }

  void grow_followers() {
    PopulatedVector<Follower> old = std::move(followers_);
    followers_.assign(old.size() * 2, {0, 0});
    follower_mask_ = followers_.size() - 1;
    for (const Follower& f : old) {
      if (f.key == 0) continue;
      const uint64_t h = hash(contexts_[(f.key >> 8) - 1].key);
      size_t i = follower_slot(h, static_cast<uint8_t>(f.key & 0xFF)) & follower_mask_;
      while (followers_[i].key != 0) i = (i + 1) & follower_mask_;
      followers_[i] = f;
    }
  }

  size_t filter_bit(uint64_t h) const { return static_cast<size_t>(h >> 32) & filter_mask_; }

  // Populated up front (common/populated.h): the tables are written all over as they fill.
  PopulatedVector<Slot> slots_;
  size_t mask_ = 0;
  std::vector<uint64_t> filter_;  // see freeze()
  size_t filter_mask_ = 0;
  PopulatedVector<Context> contexts_;
  // (context, follower) -> count, open addressing.
  PopulatedVector<Follower> followers_;
  size_t follower_mask_ = 0;
  size_t follower_count_ = 0;
};

// The `len` symbols before position i, most recent first, packed into a 16-byte key.
std::array<uint64_t, 2> context_key(const uint8_t* s, long i, int len) {
  std::array<uint64_t, 2> key{0, 0};
  for (int j = 0; j < len; ++j) key[static_cast<size_t>(j >> 3)] |= static_cast<uint64_t>(s[i - 1 - j]) << (8 * (j & 7));
  return key;
}

constexpr int kMmcDepth = 16;
constexpr long kMmcMaxEntries = 100000;
constexpr int kLzContext = 16;
constexpr long kLzMaxDictionary = 65536;

// Binary context tables: for each context length m, 2^m contexts of two follower counts.
struct BinaryContexts {
  std::vector<std::vector<std::array<uint32_t, 2>>> table;
  explicit BinaryContexts(int depth) : table(static_cast<size_t>(depth) + 1) {
    for (int m = 1; m <= depth; ++m) table[static_cast<size_t>(m)].assign(size_t{1} << m, {0, 0});
  }
  std::array<uint32_t, 2>& at(int m, uint32_t pattern) {
    return table[static_cast<size_t>(m)][pattern & ((1u << m) - 1)];
  }
};

// One binary Markov model of MultiMMC during phase 1: its table, the pairs it made, and
// where it records per step whether it predicted and was right.
//
// An order that cannot reach the cap only ever asks of a context whether it was seen and
// which follower leads (the larger count, 1 on ties), so its table holds one number per
// context, `lean`: 0 for unseen, else 2 * (count of 1s - count of 0s) + 1 (odd, so never 0
// once seen; positive exactly when 1 leads or ties). Half the memory of two counts, one
// load a step. The capped order keeps both counts in `table`.
template <typename V>
struct MmcOrder {
  V* lean;
  std::array<uint32_t, 2>* table;
  uint32_t mask;  // its context bits
  long made;
  uint64_t* predicted;
  uint64_t* right;
};

// Phase 1 of binary MultiMMC for G orders over steps [from, to) of a chunk starting at
// `chunk`. `Capped`: the last of the G orders can reach the cap on pairs (the others use
// lean tables). The G models are independent, and running them in one loop overlaps their
// chains (a model's next step often reads the count its last step wrote).
template <int G, bool Capped, typename V>
void mmc_steps(const uint8_t* s, long chunk, long from, long to, MmcOrder<V>* o) {
  uint32_t c = 0;  // the bits before step i, s[i-1] lowest
  for (long j = std::max<long>(0, from - kMmcDepth); j < from; ++j) c = (c << 1) | (s[j] & 1u);
  std::array<uint64_t, G> pbits{}, rbits{};
  // The longest orders' tables outgrow L1 (the group with the capped order holds them):
  // their entries are fetched kLead steps ahead, from the context of that step.
  constexpr long kLead = 4;
  uint32_t ahead = c;
  for (long j = from; j < from + kLead - 1 && j < to; ++j) ahead = (ahead << 1) | (s[j] & 1u);
  for (long i = from; i < to; ++i) {
    const unsigned y = s[i] & 1u;
    const long k = i - chunk;
    if (Capped && i + kLead - 1 < to) {
      ahead = (ahead << 1) | (s[i + kLead - 1] & 1u);
      for (size_t g = 0; g < G; ++g) {
        if (g + 1 < G) __builtin_prefetch(&o[g].lean[ahead & o[g].mask]);
        else __builtin_prefetch(&o[g].table[ahead & o[g].mask]);
      }
    }
    for (size_t g = 0; g < G; ++g) {
      MmcOrder<V>& m = o[g];
      if (!Capped || g + 1 < G) {
        // Without the cap every (context, follower) pair counts: no branches.
        V& v = m.lean[c & m.mask];
        const V was = v;
        const uint64_t seen = was != 0 ? 1 : 0;
        const unsigned guess = was > 0 ? 1 : 0;
        pbits[g] |= seen << (k & 63);
        rbits[g] |= (seen & (guess == y ? 1 : 0)) << (k & 63);
        v = static_cast<V>(was + (was == 0 ? 1 : 0) + (y != 0 ? 2 : -2));
        continue;
      }
      auto& e = m.table[c & m.mask];
      const unsigned guess = e[0] > e[1] ? 0 : 1;
      if (e[guess] != 0) {
        pbits[g] |= uint64_t{1} << (k & 63);
        rbits[g] |= static_cast<uint64_t>(guess == y) << (k & 63);
        if (e[y] != 0) ++e[y];
        else if (m.made < kMmcMaxEntries) e[y] = 1, ++m.made;
      } else if (m.made < kMmcMaxEntries) {
        e[y] = 1;
        ++m.made;
      }
    }
    c = (c << 1) | y;
    if ((k & 63) == 63 || i + 1 == to) {  // stored once per word, not OR-ed into memory per step
      for (size_t g = 0; g < G; ++g) {
        o[g].predicted[k >> 6] |= pbits[g];
        o[g].right[k >> 6] |= rbits[g];
        pbits[g] = rbits[g] = 0;
      }
    }
  }
}

// Phase 1 for orders 1-4 (o[0..3]) over a chunk, 64 steps at a time with whole words. For
// each order, the steps of a block in each context are one mask (an AND of the block's bits
// shifted by 1..order places), and a context whose lean is far enough from zero that its
// occurrences in the block cannot flip its sign predicts the same bit throughout: then the
// block's predictions, hits and lean changes are a few popcounts per context. On data with
// entropy that holds almost always (these orders have at most 16 contexts, each seen a
// sixteenth of the time); where it fails the order runs the block step by step.
template <typename V>
QE_POPCNT_CLONES void mmc_low_orders(const uint8_t* s, long chunk, long end, MmcOrder<V>* o) {
  constexpr int kOrders = 4;
  auto bits_from = [s, end](long start) {  // s[start .. start+63], s[start] lowest, 0 past the end
    uint64_t x = 0;
    const long stop = std::min(end, start + 64);
    for (long i = start; i < stop; ++i) x |= static_cast<uint64_t>(s[i] & 1u) << (i - start);
    return x;
  };
  uint64_t before = 0;  // the 64 bits before the block
  for (long b = chunk; b < end; b += 64) {
    const long e = std::min(end, b + 64);
    if (b < 64) {  // the data's first block: the orders start predicting one by one
      for (int g = 0; g < kOrders; ++g) {
        const long first = std::max<long>(b, g + 2);
        if (first < e) mmc_steps<1, false, V>(s, chunk, first, e, &o[g]);
      }
      before = bits_from(b);
      continue;
    }
    if (b == chunk) before = bits_from(b - 64);
    const uint64_t y = bits_from(b);
    const uint64_t valid = e - b == 64 ? ~uint64_t{0} : (uint64_t{1} << (e - b)) - 1;
    const auto w = static_cast<size_t>((b - chunk) >> 6);
    // masks[2^m - 2 + c]: the steps whose last m bits are context c (bit k-1 = k places back),
    // each level from the one before.
    std::array<uint64_t, (2 << kOrders) - 2> masks;
    for (int m = 1; m <= kOrders; ++m) {
      const uint64_t back = (y << m) | (before >> (64 - m));  // bit t = the bit m steps before t
      const size_t base = (size_t{1} << m) - 2, parent = m == 1 ? 0 : (size_t{1} << (m - 1)) - 2;
      for (size_t c = 0; c < (size_t{1} << m); ++c) {
        const uint64_t shorter = m == 1 ? valid : masks[parent + (c & ((size_t{1} << (m - 1)) - 1))];
        masks[base + c] = shorter & ((c >> (m - 1)) & 1 ? back : ~back);
      }
    }
    for (int g = 0; g < kOrders; ++g) {
      const int m = g + 1;
      const size_t base = (size_t{1} << m) - 2;
      MmcOrder<V>& order = o[g];
      bool steady = true;
      for (size_t c = 0; c < (size_t{1} << m) && steady; ++c) {
        const long occurs = __builtin_popcountll(masks[base + c]);
        const long lean = order.lean[c];
        steady = occurs == 0 || lean > 2 * occurs || lean < -2 * occurs;
      }
      if (!steady) {
        mmc_steps<1, false, V>(s, chunk, b, e, &order);
        continue;
      }
      uint64_t guess_one = 0;
      for (size_t c = 0; c < (size_t{1} << m); ++c) {
        const uint64_t in = masks[base + c];
        if (in == 0) continue;
        if (order.lean[c] > 0) guess_one |= in;
        const long ones = __builtin_popcountll(in & y), occurs = __builtin_popcountll(in);
        order.lean[c] = static_cast<V>(order.lean[c] + 2 * (2 * ones - occurs));
      }
      order.predicted[w] |= valid;
      order.right[w] |= ~(guess_one ^ y) & valid;
    }
    before = y;
  }
}

// Binary MultiMMC in two phases per chunk of steps. For binary data the 16 models are
// independent: a context of length m+1 can only have been seen if its length-m suffix was
// (no cap binds below order 16), so "skip longer models once a context is new" never changes
// what a model predicts. Phase 1 runs each model alone over the chunk and records, per step,
// whether it predicted and whether it was right. Phase 2 replays the scoreboard: as in the
// lag predictor, in a block of 64 steps only models within 64 points of the leader can take
// the lead; they replay step by step, the others add a popcount.
template <typename V>
QE_POPCNT_CLONES double binary_multi_mmc(const uint8_t* s, long n) {
  constexpr long kChunk = 1 << 20;  // steps per chunk (a multiple of 64)
  // Order d+1 has at most 2^(d+2) (context, follower) pairs: only the longest orders can
  // reach the cap (order 16 alone, with a cap of 100,000).
  auto capped = [](int d) { return (long{4} << d) > kMmcMaxEntries; };
  static_assert((long{4} << (kMmcDepth - 2)) <= kMmcMaxEntries, "only the last order of a group of four may cap");
  std::array<PopulatedVector<V>, kMmcDepth> lean;
  std::array<PopulatedVector<std::array<uint32_t, 2>>, kMmcDepth> table;
  std::array<long, kMmcDepth> entries{};
  for (int d = 0; d < kMmcDepth; ++d) {
    const auto du = static_cast<size_t>(d);
    uint32_t c = 0;
    for (int j = 0; j <= d; ++j) c = (c << 1) | (s[j] & 1u);
    const unsigned y = s[d + 1] & 1u;  // the first (context, follower) pair of each order
    if (capped(d)) {
      table[du].assign(size_t{1} << (d + 1), {0, 0});
      table[du][c][y] = 1;
    } else {
      lean[du].assign(size_t{1} << (d + 1), 0);
      lean[du][c] = y != 0 ? 3 : -1;
    }
    entries[du] = 1;
  }
  std::array<std::vector<uint64_t>, kMmcDepth> predicted, right;
  for (int d = 0; d < kMmcDepth; ++d) {
    predicted[static_cast<size_t>(d)].assign(kChunk / 64, 0);
    right[static_cast<size_t>(d)].assign(kChunk / 64, 0);
  }
  std::array<long, kMmcDepth> score{};
  int winner = 0;
  Tally tally;
  for (long chunk = 2; chunk < n; chunk += kChunk) {
    const long end = std::min(n, chunk + kChunk);
    std::array<MmcOrder<V>, kMmcDepth> order;
    for (int d = 0; d < kMmcDepth; ++d) {
      const auto du = static_cast<size_t>(d);
      std::fill(predicted[du].begin(), predicted[du].end(), 0);
      std::fill(right[du].begin(), right[du].end(), 0);
      order[du] = {lean[du].data(), table[du].data(), (2u << d) - 1, entries[du], predicted[du].data(), right[du].data()};
    }
    // Four orders at a time; each order alone first over the steps before the group's last
    // order starts predicting (order d+1 predicts from step d+2).
    mmc_low_orders<V>(s, chunk, end, order.data());
    for (int d0 = 4; d0 < kMmcDepth; d0 += 4) {
      const long from = std::max<long>(chunk, d0 + 3 + 2);
      for (int g = 0; g < 3; ++g) {
        const long first = std::max<long>(chunk, d0 + g + 2);
        if (first < std::min(end, from)) mmc_steps<1, false, V>(s, chunk, first, std::min(end, from), &order[static_cast<size_t>(d0 + g)]);
      }
      if (from >= end) continue;
      if (capped(d0 + 3)) mmc_steps<4, true, V>(s, chunk, from, end, &order[static_cast<size_t>(d0)]);
      else mmc_steps<4, false, V>(s, chunk, from, end, &order[static_cast<size_t>(d0)]);
    }
    for (int d = 0; d < kMmcDepth; ++d) entries[static_cast<size_t>(d)] = order[static_cast<size_t>(d)].made;
    // Phase 2: the scoreboard over this chunk.
    for (long b = chunk; b < end; b += 64) {
      const long block = std::min<long>(64, end - b);
      const long w = (b - chunk) >> 6;
      const long high = score[static_cast<size_t>(winner)];
      std::array<int, kMmcDepth> near;
      size_t count = 0;
      for (int d = 0; d < kMmcDepth; ++d) {
        const auto du = static_cast<size_t>(d);
        if (score[du] >= high - block) near[count++] = d;
        else score[du] += __builtin_popcountll(right[du][static_cast<size_t>(w)]);
      }
      // The near models' words, and the leader's score kept in a register.
      std::array<uint64_t, kMmcDepth> near_right;
      for (size_t c = 0; c < count; ++c) near_right[c] = right[static_cast<size_t>(near[c])][static_cast<size_t>(w)];
      long lead = score[static_cast<size_t>(winner)];
      for (long t = 0; t < block; ++t) {
        const auto cu = static_cast<size_t>(winner);
        if ((predicted[cu][static_cast<size_t>(w)] >> t) & 1) tally.add((right[cu][static_cast<size_t>(w)] >> t) & 1);
        for (size_t c = 0; c < count; ++c) {
          const auto du = static_cast<size_t>(near[c]);
          const long bit = static_cast<long>((near_right[c] >> t) & 1);
          const long sc = score[du] + bit;
          score[du] = sc;
          const bool take = bit != 0 && sc >= lead;
          winner = take ? near[c] : winner;
          lead = take ? sc : lead;
        }
      }
    }
  }
  return prediction_estimate(tally.correct, n - 2, tally.longest, 2);
}

// LZ78Y once its dictionary is full (both alphabets).
//
// A context of length j + 1 is made no earlier than its suffix of length j (a step makes the
// long ones first) unless the suffix is never made at all, and each later occurrence of it
// is one of the suffix. So along one step's present contexts the follower counts never grow
// with the length, and the longest context whose best count is the largest, which makes the
// guess, is the last of the lengths 1, 2, ... whose best count equals length 1's. Only length
// 1 is counted every step. A longer length is brought up to date (its missed steps replayed)
// only when it might tie: when its stale best count plus the steps it missed reaches length
// 1's. On data with entropy that is rare, so a step costs a lookup or two instead of sixteen;
// where lengths tie often it replays about as much as counting every step would.
//
// An absent context means the longer ones are absent too, except along the contexts of the
// step that filled the dictionary: it may have made long ones and then run out of room for
// their suffixes. Past an absent context of that step the walk goes on. (Such a long context
// could make the guess only by tying length 1's count, which no data in the tests comes near;
// the rule keeps the result exact without relying on that.)
//
// `Levels` holds the dictionary by length: look(j, t) gives step t's context of length j as
// {present, best count, guess}; count(j, t) counts step t's symbol in it when present, and
// replay(j, from, to) does so for steps [from, to).
struct LzEntry {
  bool present;
  uint32_t best;
  unsigned guess;
};

// Steps [i, n), after step i - 1 filled the dictionary (or the data ended).
template <typename Levels>
double lz78y_when_full(const uint8_t* s, long i, long n, Levels& levels, Tally& tally, int k) {
  const long filled = i - 1;
  auto same_as_filled = [s, filled](long t, int j) { return std::equal(s + t - j, s + t, s + filled - j); };
  std::array<long, kLzContext + 1> synced;  // length j's counts cover the steps before synced[j]
  synced.fill(i);
  for (; i < n; ++i) {
    const LzEntry first = levels.look(1, i);
    unsigned guess = ~0u;  // none: no context of this step is present
    if (first.present) {
      guess = first.guess;
      for (int j = 2; j <= kLzContext; ++j) {
        LzEntry e = levels.look(j, i);
        if (!e.present) {
          if (same_as_filled(i, j)) continue;
          break;  // and so are the longer ones
        }
        long& since = synced[static_cast<size_t>(j)];
        if (static_cast<long>(e.best) + (i - since) < static_cast<long>(first.best)) break;
        if (since < i) {
          levels.replay(j, since, i);
          since = i;
          e = levels.look(j, i);
        }
        if (e.best != first.best) break;  // below length 1's, and so are the longer ones
        guess = e.guess;
      }
      levels.count(1, i);
    }
    tally.add(guess == s[i]);
  }
  return prediction_estimate(tally.correct, n - kLzContext - 1, tally.longest, k);
}

// The binary dictionary: direct tables indexed by the context bits.
struct BinaryLzLevels {
  const uint8_t* s;
  BinaryContexts& ctx;
  long at = -1;      // the step whose window is cached
  uint32_t bits = 0;  // its last 16 bits, s[at - 1] lowest
  static uint32_t window(const uint8_t* s, long t, int j) {  // s[t - j .. t - 1], s[t - 1] lowest
    uint32_t w = 0;
    for (int b = j; b >= 1; --b) w = (w << 1) | (s[t - b] & 1u);
    return w;
  }
  // The steps are asked about in order, so the window usually moves by one bit.
  uint32_t window_of(long t) {
    if (t == at + 1) bits = (bits << 1) | (s[t - 1] & 1u);
    else if (t != at) bits = window(s, t, kLzContext);
    at = t;
    return bits;
  }
  LzEntry look(int j, long t) {
    const auto& e = ctx.at(j, window_of(t));
    return {(e[0] | e[1]) != 0, std::max(e[0], e[1]), e[0] > e[1] ? 0u : 1u};
  }
  void count(int j, long t) {
    auto& e = ctx.at(j, window_of(t));
    if ((e[0] | e[1]) != 0) ++e[s[t] & 1u];
  }
  void replay(int j, long from, long to) {
    std::array<uint32_t, 2>* const table = ctx.table[static_cast<size_t>(j)].data();
    const uint32_t mask = (1u << j) - 1;
    for (uint32_t w = window(s, from, j); from < to; ++from) {
      auto& e = table[w & mask];
      e[s[from] & 1u] += (e[0] | e[1]) != 0 ? 1 : 0;
      w = (w << 1) | (s[from] & 1u);
    }
  }
};

double binary_lz78y(const uint8_t* s, long n) {
  if (n < kLzContext + 2) return kNotApplicable;
  BinaryContexts ctx(kLzContext);
  long dictionary = 0;
  uint32_t pattern = 0;
  for (int j = 0; j < kLzContext; ++j) {
    pattern |= static_cast<uint32_t>(s[kLzContext - j - 1] & 1u) << j;
    ctx.at(j + 1, pattern)[s[kLzContext] & 1] = 1;
    ++dictionary;
  }
  uint32_t window = 0;  // the last 16 bits, s[i-1] lowest
  for (long i = 0; i < kLzContext; ++i) window = (window << 1) | (s[i] & 1u);
  Tally tally;
  long i = kLzContext + 1;
  auto step = [&](unsigned y) {
    long best = 0;
    int guess = -1;
    for (int j = kLzContext; j > 0; --j) {
      auto& e = ctx.at(j, window);
      const unsigned g = e[0] > e[1] ? 0 : 1;
      if (e[g] != 0) {
        if (static_cast<long>(e[g]) > best) {
          best = e[g];
          guess = static_cast<int>(g);
        }
        ++e[y];
      } else if (dictionary < kLzMaxDictionary) {
        e[y] = 1;
        ++dictionary;
      }
    }
    tally.add(guess == static_cast<int>(y));
  };
  for (; i < n && dictionary < kLzMaxDictionary; ++i) {
    window = ((window << 1) | (s[i - 1] & 1u)) & 0xFFFFu;
    step(s[i] & 1u);
  }
  // Full for good (nothing leaves the dictionary), or the data has ended.
  BinaryLzLevels levels{s, ctx};
  return lz78y_when_full(s, i, n, levels, tally, 2);
}

}  // namespace

namespace {

// The contexts of lengths 1..depth before position i (key[d] holds d + 1 symbols, most
// recent first) with their hashes: computed a step ahead so their slots can be prefetched.
struct ContextKeys {
  std::array<ContextTable::Key, 16> key;
  std::array<uint64_t, 16> hash;
  // The two key words are built in registers: OR-ing a byte into a word in memory and
  // reading the 16-byte key back stalls on store forwarding every step.
  void at(const uint8_t* s, long i, int depth) {
    uint64_t lo = 0, hi = 0;
    const int low = std::min(depth, 8);
    for (int d = 0; d < low; ++d) {
      lo |= static_cast<uint64_t>(s[i - 1 - d]) << (8 * d);
      key[static_cast<size_t>(d)] = {lo, 0};
      hash[static_cast<size_t>(d)] = ContextTable::hash({lo, 0});
    }
    for (int d = 8; d < depth; ++d) {
      hi |= static_cast<uint64_t>(s[i - 1 - d]) << (8 * (d - 8));
      key[static_cast<size_t>(d)] = {lo, hi};
      hash[static_cast<size_t>(d)] = ContextTable::hash({lo, hi});
    }
  }
};

// How many steps ahead the context tables are prefetched: a step is shorter than a miss.
constexpr long kAhead = 4;

}  // namespace

// ---- MultiMMC: Markov models of order 1..16 learning follower counts (capped at 100,000
// (context, follower) pairs each); the best scorer so far makes the guess.
double multi_mmc_estimate(const uint8_t* s, size_t n, int k) {
  if (k == 2) {
    if (n < kMmcDepth + 2) return kNotApplicable;
    // Lean values reach 2n + 1 in magnitude.
    if (n < (size_t{1} << 30)) return binary_multi_mmc<int32_t>(s, static_cast<long>(n));
    return binary_multi_mmc<int64_t>(s, static_cast<long>(n));
  }
  if (n > UINT32_MAX) throw std::length_error("MultiMMC counts 32-bit: fewer than 2^32 samples");
  const long len = static_cast<long>(n);
  if (len < 3) return kNotApplicable;
  const long big_n = len - 2;
  // Sized once for what each order can make: at most k^(d+1) contexts and the pair cap.
  std::vector<ContextTable> tables;
  tables.reserve(kMmcDepth);
  for (int d = 0; d < kMmcDepth; ++d) {
    size_t most = static_cast<size_t>(std::min(kMmcMaxEntries, big_n));
    size_t power = 1;
    for (int j = 0; j <= d + 1 && power < most; ++j) power *= static_cast<size_t>(k);
    tables.emplace_back(std::min(most, power));
  }
  std::array<long, kMmcDepth> score{}, entries{};
  for (int d = 0; d < kMmcDepth && d < big_n; ++d) {
    const ContextTable::Key key = context_key(s, d + 1, d + 1);
    ContextTable& t = tables[static_cast<size_t>(d)];
    const uint64_t h = ContextTable::hash(key);
    t.count(t.insert(key, h), h, s[d + 1], true);
    entries[static_cast<size_t>(d)] = 1;
  }
  int winner = 0;
  int deepest = 0;  // the longest order found on the last step, to choose what to prefetch
  Tally tally;
  std::array<ContextKeys, kAhead> ring;
  for (long i = 2; i < len && i < 2 + kAhead - 1; ++i) ring[static_cast<size_t>(i % kAhead)].at(s, i, static_cast<int>(std::min<long>(kMmcDepth, i - 1)));
  for (long i = 2; i < len; ++i) {
    const int current = winner;
    const uint8_t y = s[i];
    bool found = false;
    const int depth = static_cast<int>(std::min<long>(kMmcDepth, i - 1));
    if (const long a = i + kAhead - 1; a < len) {
      const int ahead = static_cast<int>(std::min<long>(kMmcDepth, a - 1));
      ContextKeys& later = ring[static_cast<size_t>(a % kAhead)];
      later.at(s, a, ahead);
      for (int d = 0; d < ahead; ++d)
        if (d <= deepest + 1 || entries[static_cast<size_t>(d)] < kMmcMaxEntries)
          tables[static_cast<size_t>(d)].prefetch(later.hash[static_cast<size_t>(d)], s[a]);
    }
    const ContextKeys& now = ring[static_cast<size_t>(i % kAhead)];
    deepest = 0;
    for (int d = 0; d < depth; ++d) {
      const ContextTable::Key& key = now.key[static_cast<size_t>(d)];
      const uint64_t h = now.hash[static_cast<size_t>(d)];
      ContextTable& table = tables[static_cast<size_t>(d)];
      long& made = entries[static_cast<size_t>(d)];
      long id = -1;
      if (d == 0 || found) {
        id = table.find(key, h);
        found = id >= 0;
      }
      if (found) {
        deepest = d;
        const ContextTable::Context& c = table.context(id);
        if (c.prediction == y) {
          if (++score[static_cast<size_t>(d)] >= score[static_cast<size_t>(winner)]) winner = d;
          if (d == current) tally.hit();
        } else if (d == current) {
          tally.miss();
        }
        if (table.count(id, h, y, made < kMmcMaxEntries)) ++made;
      } else if (made < kMmcMaxEntries) {
        table.count(table.insert(key, h), h, y, true);
        ++made;
      }
    }
  }
  return prediction_estimate(tally.correct, big_n, tally.longest, k);
}

// ---- LZ78Y: a dictionary of contexts of length 1..16 (at most 65,536 of them); the
// longest context whose best follower is the most frequent makes the guess.
// The dictionary of a wider alphabet, once full: a frozen hash table of contexts per length.
struct LiteralLzLevels {
  const uint8_t* s;
  std::vector<ContextTable>& tables;  // tables[j - 1]: contexts of length j
  struct Found {
    ContextTable* table;
    long id;
    uint64_t hash;
  };
  Found find(int j, long t) const {
    const ContextTable::Key key = context_key(s, t, j);
    const uint64_t h = ContextTable::hash(key);
    ContextTable& table = tables[static_cast<size_t>(j - 1)];
    return {&table, table.find_frozen(key, h), h};
  }
  LzEntry look(int j, long t) const {
    const Found f = find(j, t);
    if (f.id < 0) return {false, 0, 0};
    const ContextTable::Context& c = f.table->context(f.id);
    return {true, c.best, c.prediction};
  }
  void count(int j, long t) {
    const Found f = find(j, t);
    if (f.id >= 0) f.table->count(f.id, f.hash, s[t], true);
  }
  void replay(int j, long from, long to) {
    for (; from < to; ++from) count(j, from);
  }
};

double lz78y_estimate(const uint8_t* s, size_t n, int k) {
  if (k == 2) return binary_lz78y(s, static_cast<long>(n));
  if (n > UINT32_MAX) throw std::length_error("LZ78Y counts 32-bit: fewer than 2^32 samples");
  const long len = static_cast<long>(n);
  if (len < kLzContext + 2) return kNotApplicable;
  std::vector<ContextTable> tables(kLzContext);  // tables[j-1]: contexts of length j
  long dictionary = 0;
  for (int j = 1; j <= kLzContext; ++j) {
    ContextTable& t = tables[static_cast<size_t>(j - 1)];
    const ContextTable::Key key = context_key(s, kLzContext, j);
    const uint64_t h = ContextTable::hash(key);
    t.count(t.insert(key, h), h, s[kLzContext], true);
    ++dictionary;
  }
  Tally tally;
  std::array<ContextKeys, kAhead> ring;
  long i = kLzContext + 1;
  for (long a = i; a < len && a < kLzContext + kAhead; ++a) ring[static_cast<size_t>(a % kAhead)].at(s, a, kLzContext);
  for (; i < len && dictionary < kLzMaxDictionary; ++i) {
    const uint8_t y = s[i];
    if (const long a = i + kAhead - 1; a < len) {
      ContextKeys& later = ring[static_cast<size_t>(a % kAhead)];
      later.at(s, a, kLzContext);
      for (int j = 0; j < kLzContext; ++j) tables[static_cast<size_t>(j)].prefetch(later.hash[static_cast<size_t>(j)], s[a]);
    }
    const ContextKeys& now = ring[static_cast<size_t>(i % kAhead)];
    long best = 0;
    int guess = -1;
    for (int j = kLzContext; j > 0; --j) {
      const ContextTable::Key& key = now.key[static_cast<size_t>(j - 1)];
      const uint64_t h = now.hash[static_cast<size_t>(j - 1)];
      ContextTable& t = tables[static_cast<size_t>(j - 1)];
      const long id = t.find(key, h);
      if (id >= 0) {
        const ContextTable::Context& c = t.context(id);
        if (c.best > best) {
          best = c.best;
          guess = c.prediction;
        }
        t.count(id, h, y, true);
      } else if (dictionary < kLzMaxDictionary) {
        t.count(t.insert(key, h), h, y, true);
        ++dictionary;
      }
    }
    tally.add(guess == static_cast<int>(y));
  }
  // Full for good (no context joins any table), or the data has ended.
  for (ContextTable& t : tables) t.freeze();
  LiteralLzLevels levels{s, tables};
  return lz78y_when_full(s, i, len, levels, tally, k);
}

}  // namespace qe::ea
