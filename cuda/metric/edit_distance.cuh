// Edit (Levenshtein) distance on the device, unit costs: Myers' bit-parallel algorithm (1999) in
// Hyyrö's formulation, the query as the pattern. Its per-byte match masks (256 x words, one bit per
// pattern byte) are built once per query block; one thread then compares the pattern with one
// candidate string, reading the candidate's bytes sequentially through aligned 8-byte loads.
//
// A pattern of up to 64 bytes keeps its vertical deltas in registers; a longer one runs Myers'
// block-based version, one 64-bit word of the pattern after the other per text byte, with its state
// in memory the caller provides (interleaved by thread: word w of thread t at state[w * stride + t]).
//
// Bounded form (range search): skipped when the lengths alone differ by more than the bound, and
// stopped as soon as the distance must exceed it, by two lower bounds of the final value kept as the
// text is read: the cell of the last column's diagonal (values never decrease along a diagonal,
// Ukkonen) and the last row's value less the columns still to come (a column moves it by one).
//
// Everything here is __host__ __device__, so the host tests the same code against a plain DP.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define QV_EDIT_FN __host__ __device__ __forceinline__
#else
#define QV_EDIT_FN inline
#endif

namespace quiver::gpu::edit {

// A bound that never stops the computation (above any length, 2^20, and far from overflow).
constexpr int64_t kNoBound = int64_t(1) << 60;
// Match masks: one row of `words` 64-bit words per byte value.
constexpr int kAlphabet = 256;
constexpr int kWordBits = 64;

QV_EDIT_FN int64_t pattern_words(int64_t length) { return (length + kWordBits - 1) / kWordBits; }

QV_EDIT_FN uint64_t load_word(const uint64_t* p) {
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const unsigned long long*>(p));
#else
  return *p;
#endif
}

// Sequential bytes of a string through aligned 8-byte loads (a thread's own string: byte loads
// would cost one memory transaction each). Reads the whole aligned words around the string, so
// the buffer must extend to the 8-byte boundary after its last byte (the device copies are padded).
// Construct only for a non-empty string.
struct ByteStream {
  const uint64_t* word;
  uint64_t current;
  int shift;

  QV_EDIT_FN explicit ByteStream(const uint8_t* p) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(p);
    word = reinterpret_cast<const uint64_t*>(address & ~uintptr_t(7));
    shift = int(address & 7) * 8;
    current = load_word(word);
  }
  QV_EDIT_FN unsigned next() {
    if (shift == kWordBits) {  // loaded lazily: never a word past the string's last byte
      ++word;
      current = load_word(word);
      shift = 0;
    }
    const unsigned byte = unsigned(current >> shift) & 0xffu;
    shift += 8;
    return byte;
  }
};

// The final diagonal: the cells (j + m - n, j). Tracked from column max(0, n - m), where its cell
// is |m - n| (first row or first column); each later column adds the horizontal delta of the row
// above the new cell and the vertical delta of the new cell, both bit (j + m - n - 1) of the
// shifted horizontal and new vertical vectors.
struct Diagonal {
  int64_t delta;  // m - n
  int64_t first;  // the first column whose update is taken (columns after max(0, n - m))
  int64_t value;
  QV_EDIT_FN Diagonal(int64_t m, int64_t n)
      : delta(m - n), first(m >= n ? 1 : n - m + 1), value(m >= n ? m - n : n - m) {}
};

// Pattern of 1 .. 64 bytes (masks peq[256]), text of n >= 1 bytes.
QV_EDIT_FN int64_t myers_word(const uint64_t* peq, int64_t m, const uint8_t* text, int64_t n, int64_t bound) {
  uint64_t pv = ~uint64_t(0), mv = 0;
  int64_t score = m;
  const uint64_t last_row = uint64_t(1) << (m - 1);
  Diagonal diagonal(m, n);
  ByteStream stream(text);
  for (int64_t j = 1; j <= n; ++j) {
    const uint64_t eq = peq[stream.next()];
    const uint64_t xv = eq | mv;
    const uint64_t xh = (((eq & pv) + pv) ^ pv) | eq;
    uint64_t ph = mv | ~(xh | pv);
    uint64_t mh = pv & xh;
    score += int64_t((ph & last_row) != 0) - int64_t((mh & last_row) != 0);
    ph = (ph << 1) | 1;  // row 0 grows by one a column (global distance)
    mh <<= 1;
    pv = mh | ~(xv | ph);
    mv = ph & xv;
    if (j >= diagonal.first) {
      const int bit = int(j + diagonal.delta - 1);
      diagonal.value += int64_t((ph >> bit) & 1) - int64_t((mh >> bit) & 1) + int64_t((pv >> bit) & 1) -
                        int64_t((mv >> bit) & 1);
      if (diagonal.value > bound) return bound + 1;
    }
    if (score - (n - j) > bound) return bound + 1;
  }
  return score;
}

// Pattern of m > 64 bytes in `words` words (masks peq[c * words + w]), text of n >= 1 bytes; the
// state (2 x words words) at state[w * stride] (vertical +1 deltas) and state[(words + w) * stride]
// (vertical -1 deltas).
QV_EDIT_FN int64_t myers_blocks(const uint64_t* peq, int64_t m, int64_t words, const uint8_t* text, int64_t n,
                                int64_t bound, uint64_t* state, int64_t stride) {
  uint64_t* plus = state;
  uint64_t* minus = state + words * stride;
  for (int64_t w = 0; w < words; ++w) {
    plus[w * stride] = ~uint64_t(0);
    minus[w * stride] = 0;
  }
  int64_t score = m;
  const uint64_t last_row = uint64_t(1) << ((m - 1) % kWordBits);
  const int64_t last = words - 1;
  Diagonal diagonal(m, n);
  ByteStream stream(text);
  for (int64_t j = 1; j <= n; ++j) {
    const uint64_t* eqs = peq + int64_t(stream.next()) * words;
    const bool on_diagonal = j >= diagonal.first;
    const int64_t bit = j + diagonal.delta - 1;
    const int64_t diagonal_word = on_diagonal ? bit / kWordBits : -1;
    const int diagonal_bit = int(bit & (kWordBits - 1));
    int64_t step = 0;
    int hin = 1;  // row 0 grows by one a column
    for (int64_t w = 0; w < words; ++w) {
      uint64_t pv = plus[w * stride], mv = minus[w * stride], eq = eqs[w];
      const uint64_t xv = eq | mv;
      if (hin < 0) eq |= 1;
      const uint64_t xh = (((eq & pv) + pv) ^ pv) | eq;
      uint64_t ph = mv | ~(xh | pv);
      uint64_t mh = pv & xh;
      const uint64_t top = w == last ? last_row : uint64_t(1) << (kWordBits - 1);
      const int hout = int((ph & top) != 0) - int((mh & top) != 0);
      ph <<= 1;
      mh <<= 1;
      if (hin < 0) mh |= 1;
      else if (hin > 0) ph |= 1;
      pv = mh | ~(xv | ph);
      mv = ph & xv;
      plus[w * stride] = pv;
      minus[w * stride] = mv;
      if (w == diagonal_word)
        step = int64_t((ph >> diagonal_bit) & 1) - int64_t((mh >> diagonal_bit) & 1) +
               int64_t((pv >> diagonal_bit) & 1) - int64_t((mv >> diagonal_bit) & 1);
      hin = hout;
    }
    score += hin;
    if (on_diagonal) {
      diagonal.value += step;
      if (diagonal.value > bound) return bound + 1;
    }
    if (score - (n - j) > bound) return bound + 1;
  }
  return score;
}

// The distance between the pattern (m bytes, masks peq, `words` = pattern_words(m)) and text[0, n)
// if it is <= bound, else some value > bound. bound >= 0 (kNoBound: the distance). state: as for
// myers_blocks, used only when words > 1.
QV_EDIT_FN int64_t distance_within(const uint64_t* peq, int64_t m, int64_t words, const uint8_t* text, int64_t n,
                                   int64_t bound, uint64_t* state, int64_t stride) {
  if (m == 0) return n;
  if (n == 0) return m;
  if (m - n > bound || n - m > bound) return bound + 1;
  return words == 1 ? myers_word(peq, m, text, n, bound)
                    : myers_blocks(peq, m, words, text, n, bound, state, stride);
}

// The integer bound of a float radius: distance <= radius exactly when distance <= floor(radius).
QV_EDIT_FN int64_t bound_of(float radius) {
  return radius >= float(kNoBound) || !(radius == radius) ? kNoBound : int64_t(radius);  // NaN: no bound
}

}  // namespace quiver::gpu::edit
