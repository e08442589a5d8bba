// Myers' bit-parallel edit distance (J. ACM 46(3), 1999) in Hyyrö's formulation: the pattern runs down
// a DP column, one bit a row; VP/VN mark the rows where the column steps +1/-1 from the row above,
// HP/HN the rows where it steps +1/-1 from the previous column. One text byte is one column.
#include "cpp/metric/edit_distance.h"

#include <algorithm>
#include <vector>

namespace quiver {

namespace {

constexpr int kWordBits = 64;
constexpr int kAlphabet = 256;  // every byte value is a symbol
// Patterns up to this many words keep their column state on the stack (1 KiB of pattern).
constexpr int64_t kStackWords = 16;

struct Column {
  uint64_t vp = ~uint64_t{0};  // column 0 is D[i][0] = i: every row one more than the row above
  uint64_t vn = 0;
};

// The horizontal step (D[j] - D[j-1]) of the row just above a block, as a +1 bit and a -1 bit; row 0
// of a global distance always steps +1.
struct Carry {
  uint64_t plus = 1;
  uint64_t minus = 0;
};

// One column of one block of 64 rows. carry comes in from the block above and goes out to the one
// below. hp/hn come back shifted: bit r is then the step of the block's row r counted from the row
// above it (bit 0 = the carry), the alignment the diagonal tracking needs.
inline void advance(uint64_t eq, Column& col, Carry& carry, uint64_t& hp, uint64_t& hn) {
  const uint64_t xv = eq | col.vn;
  eq |= carry.minus;  // a -1 step above the block lets its first row join the diagonal chain
  const uint64_t carried = ((eq & col.vp) + col.vp) ^ col.vp;
  const uint64_t xh = carried | eq;
  // HP = VN | ~(XH | VP), kept inverted and with EQ | VP formed beside the addition: three fewer
  // steps on the column-to-column dependency chain of VP, which sets the speed.
  const uint64_t not_hp = (carried | (eq | col.vp)) & ~col.vn;
  hn = col.vp & xh;
  const Carry out{~not_hp >> 63, hn >> 63};
  const uint64_t not_hp_shifted = (not_hp << 1) | (carry.plus ^ 1);
  hp = ~not_hp_shifted;
  hn = (hn << 1) | carry.minus;
  col.vp = hn | (~xv & not_hp_shifted);
  col.vn = xv & hp;
  carry = out;
}

// The step along the diagonal, D[k+1][j] - D[k][j-1], is 0 or 1 (diagonals never decrease); it is
// (horizontal step of row k) + (vertical step of row k+1). With both at bit k of the shifted hp/hn
// and the new vp/vn, the cases (+1,0) and (0,+1) are the ones that make it 1.
inline int64_t diagonal_step(uint64_t hp, uint64_t hn, const Column& col, int bit) {
  return static_cast<int64_t>((((hp & ~col.vn) | (col.vp & ~hn)) >> bit) & 1);
}

// Ukkonen's observation drives the bound: D[m][n] >= D[i][j] on the diagonal i - j = m - n that ends
// in the corner, so that one cell is tracked; once it exceeds the bound so does the distance. The
// track starts where the diagonal enters the table, at D = |m - n|. Callers pass |m - n| <= bound.

// Pattern of 1..64 bytes, masks[c] its match bits for byte c.
int64_t single_word(const uint64_t* masks, int64_t m, const uint8_t* text, int64_t n, int64_t bound) {
  const int64_t start = std::max<int64_t>(0, n - m);  // column where the diagonal enters
  int k = static_cast<int>(std::max<int64_t>(0, m - n));
  int64_t diagonal = m > n ? m - n : n - m;
  Column col;
  uint64_t hp, hn;
  for (int64_t j = 0; j < start; ++j) {
    Carry top;
    advance(masks[text[j]], col, top, hp, hn);
  }
  for (int64_t j = start; j < n; ++j, ++k) {
    Carry top;
    advance(masks[text[j]], col, top, hp, hn);
    diagonal += diagonal_step(hp, hn, col, k);
    if (diagonal > bound) return diagonal;
  }
  return diagonal;
}

// Pattern of any length in words blocks (masks: kAlphabet x words). Rows i with |i - j| > bound hold
// values > bound in column j, so blocks run only over the band: a block above it stops for good and
// hands a +1 step down, a block below it keeps its column-0 state (+1 a row) until the band reaches
// it. Both over-estimate cells that are over the bound anyway; the word step is the DP recurrence
// for any column and carry, so every value stays >= the true one, and every cell <= bound exact (its
// best predecessor is <= bound too). The tracked diagonal stays inside the band.
int64_t multi_word(const uint64_t* masks, int64_t words, int64_t m, const uint8_t* text, int64_t n,
                   int64_t bound) {
  Column stack[kStackWords];
  std::vector<Column> heap;
  Column* cols = stack;
  if (words > kStackWords) {
    heap.resize(static_cast<size_t>(words));
    cols = heap.data();
  }
  const int64_t start = std::max<int64_t>(0, n - m);
  int64_t k = std::max<int64_t>(0, m - n);
  int64_t diagonal = m > n ? m - n : n - m;
  int64_t lo = 0, hi = 0;  // the blocks in the band
  uint64_t hp, hn, diag_hp = 0, diag_hn = 0;
  for (int64_t j = 0; j < n; ++j) {  // text[j] makes column j + 1
    const int64_t column = j + 1;
    while (kWordBits * (lo + 1) < column - bound) ++lo;
    while (hi + 1 < words && kWordBits * (hi + 1) + 1 <= column + bound) ++hi;
    const uint64_t* eq = masks + static_cast<int64_t>(text[j]) * words;
    const int64_t kb = k / kWordBits;  // the block of the diagonal's row k + 1 (and of row k's step)
    Carry carry;  // the top block's: row 0's, or a stopped block's (+1)
    for (int64_t b = lo; b <= hi; ++b) {
      advance(eq[b], cols[b], carry, hp, hn);
      if (b == kb) diag_hp = hp, diag_hn = hn;
    }
    if (j < start) continue;
    diagonal += diagonal_step(diag_hp, diag_hn, cols[kb], static_cast<int>(k % kWordBits));
    if (diagonal > bound) return diagonal;
    ++k;
  }
  return diagonal;
}

}  // namespace

EditPattern::EditPattern(const uint8_t* pattern, int64_t length)
    : length_(length), words_((length + kWordBits - 1) / kWordBits) {
  masks_.assign(static_cast<size_t>(kAlphabet * words_), 0);
  for (int64_t i = 0; i < length; ++i)
    masks_[pattern[i] * words_ + i / kWordBits] |= uint64_t{1} << (i % kWordBits);
}

int64_t EditPattern::distance(const uint8_t* text, int64_t n) const {
  return distance_within(text, n, std::max(length_, n));
}

int64_t EditPattern::distance_within(const uint8_t* text, int64_t n, int64_t bound) const {
  const int64_t m = length_;
  if (m == 0 || n == 0) return m + n;  // one is empty: the other's length
  if (m > n ? m - n > bound : n - m > bound) return m > n ? m - n : n - m;
  bound = std::min(bound, std::max(m, n));  // the distance never exceeds the longer length
  if (words_ == 1) return single_word(masks_.data(), m, text, n, bound);
  return multi_word(masks_.data(), words_, m, text, n, bound);
}

int64_t edit_distance(const uint8_t* a, int64_t na, const uint8_t* b, int64_t nb) {
  if (na > nb) std::swap(a, b), std::swap(na, nb);  // the shorter one is the pattern
  if (na == 0) return nb;
  if (na > kWordBits) return EditPattern(a, na).distance(b, nb);
  // Only the entries the strings touch are cleared, not all 256, in one loop (nb >= na): for short
  // words the table, not the distance, would otherwise cost the most.
  uint64_t masks[kAlphabet];
  for (int64_t j = 0; j < nb; ++j) {
    masks[b[j]] = 0;
    masks[a[std::min(j, na - 1)]] = 0;
  }
  for (int64_t i = 0; i < na; ++i) masks[a[i]] |= uint64_t{1} << i;
  return single_word(masks, na, b, nb, nb);
}

}  // namespace quiver
