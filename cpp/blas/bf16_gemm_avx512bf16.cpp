// The bfloat16 GEMM kernel (AVX-512 BF16). Compiled with -mavx512bf16 and called only where the
// processor has it; it shares no inline code with other files (no quiver or standard-library
// templates), so the linker cannot pick an AVX-512 copy of a function for code that runs elsewhere.
//
// Structure. k is cut into as few equal blocks as kMaxKc allows (one up to k = 1024), so each C entry
// is written once per block. For each block, the rows of A are taken in blocks that fit half of L2,
// each re-packed into micro-panels of about kMr rows (word (p, r) at p * rows + r, read by broadcast).
// Then for each group of kNp B panels (kNp * 16 columns, read in place from the packed matrix, one
// 64-byte load per panel and pair) the micro-kernel runs over the micro-panels of the A block, with
// kMr x kNp accumulators. Per pair it issues kMr * kNp vdpbf16ps against kNp loads and kMr
// broadcasts, so it is bound by the multiply-add units, and the operands can come from L2.
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace quiver {

namespace {

constexpr int kLanes = 16;  // fp32 lanes per register = rows per packed panel (kBf16PanelRows)
// A rows per micro-kernel and B panels (16 columns each): kMr * kNp accumulators, kNp B registers
// and a broadcast A pair within the 32 zmm registers.
// 8 x 3 and 6 x 4 measured alike on Zen 4 (~97% of the vdpbf16ps peak), 14 x 2 and 12 x 2 1% slower;
// 8 divides the usual query blocks (128, 256, 512).
constexpr int kMr = 8;
constexpr int kNp = 3;
// Pairs of k per block. Blocks that keep the B micro-panel in L1 (128 pairs) measured 10% slower than
// one block for k <= 1024: each block is a pass over C, and L2 feeds the kernel fast enough.
constexpr int64_t kMaxKc = 512;
// Bytes of re-packed A per block: half of a Zen 4 / Sapphire Rapids core's L2 (1-2 MB), leaving
// room for the B micro-panel (kNp * 64 bytes per pair) and the C tiles.
constexpr int64_t kABlockBytes = 512 * 1024;
constexpr size_t kAlign = 64;

// Per-thread scratch for the re-packed A block; grows once, freed at thread exit.
struct Scratch {
  uint32_t* words = nullptr;
  size_t size = 0;
  ~Scratch() { std::free(words); }
  uint32_t* get(size_t n) {
    if (n > size) {
      std::free(words);
      words = static_cast<uint32_t*>(std::aligned_alloc(kAlign, (n * 4 + kAlign - 1) / kAlign * kAlign));
      size = words ? n : 0;
    }
    return words;
  }
};
thread_local Scratch scratch;

inline __m512bh as_bh(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// acc (MR x NP*16) = A micro-panel (MR rows, kc pairs, word (p, r) at a[p * MR + r]) times the NP
// B panels at b, b + b_panel_stride, ...; then c = alpha * acc, or c += alpha * acc when accumulate.
template <int MR, int NP>
void micro_kernel(const uint32_t* a, const uint32_t* b, int64_t b_panel_stride, int64_t kc,
                  float alpha, float* c, int64_t ldc, bool accumulate) {
  __m512 acc[MR][NP];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) acc[r][j] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    __m512bh bv[NP];
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) bv[j] = as_bh(_mm512_load_si512(b + j * b_panel_stride + p * kLanes));
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = as_bh(_mm512_set1_epi32(static_cast<int>(a[p * MR + r])));
#pragma GCC unroll 4
      for (int j = 0; j < NP; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], av, bv[j]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) {
      float* cp = c + r * ldc + j * kLanes;
      const __m512 v = accumulate ? _mm512_fmadd_ps(va, acc[r][j], _mm512_loadu_ps(cp))
                                  : _mm512_mul_ps(va, acc[r][j]);
      _mm512_storeu_ps(cp, v);
    }
}

using MicroKernel = void (*)(const uint32_t*, const uint32_t*, int64_t, int64_t, float, float*,
                             int64_t, bool);

// The micro-kernel for mr rows (1 .. MR) and NP panels.
template <int NP, int MR>
MicroKernel pick_mr(int mr) {
  if constexpr (MR == 1) {
    return &micro_kernel<1, NP>;
  } else {
    return mr == MR ? &micro_kernel<MR, NP> : pick_mr<NP, MR - 1>(mr);
  }
}

// ... for np panels (1 .. NP).
template <int NP>
MicroKernel pick(int np, int mr) {
  if constexpr (NP == 1) {
    return pick_mr<1, kMr>(mr);
  } else {
    return np == NP ? pick_mr<NP, kMr>(mr) : pick<NP - 1>(np, mr);
  }
}

// How a block of rows is cut into micro-panels: as few as kMr allows, of near-equal sizes (20 rows are
// 7 + 7 + 6, not 8 + 8 + 4), since a kernel of few rows has too few accumulators to hide the
// multiply-add latency.
struct RowSplit {
  int64_t panels, base, extra;  // the first `extra` micro-panels have base + 1 rows, the rest base
  explicit RowSplit(int64_t rows)
      : panels((rows + kMr - 1) / kMr), base(rows / panels), extra(rows % panels) {}
  int64_t begin(int64_t i) const { return i * base + (i < extra ? i : extra); }
  int rows(int64_t i) const { return static_cast<int>(base + (i < extra ? 1 : 0)); }
};

// Re-packs rows [row0, row0 + mc) of a (packed, panel_words words per panel), pairs [pc, pc + kc),
// into the micro-panels of RowSplit(mc): micro-panel i at out + begin(i) * kc, word (p, r) at
// p * rows(i) + r.
void pack_a(const uint32_t* a, int64_t panel_words, int64_t row0, int64_t mc, int64_t pc, int64_t kc,
            uint32_t* out) {
  const RowSplit split(mc);
  for (int64_t i = 0; i < split.panels; ++i) {
    const int mr = split.rows(i);
    const uint32_t* src[kMr];
    for (int r = 0; r < mr; ++r) {
      const int64_t row = row0 + split.begin(i) + r;
      src[r] = a + (row / kLanes) * panel_words + pc * kLanes + row % kLanes;
    }
    uint32_t* dst = out + split.begin(i) * kc;
    for (int64_t p = 0; p < kc; ++p)
      for (int r = 0; r < mr; ++r) dst[p * mr + r] = src[r][p * kLanes];
  }
}

}  // namespace

// Declared in bf16_gemm.cpp. a, b: Bf16Matrix::data of matrices with `pairs` pairs per row. Returns
// false when the scratch cannot be allocated (nothing written then).
bool bf16_gemm_avx512bf16(int64_t m, int64_t n, int64_t pairs, float alpha, const uint32_t* a,
                          int64_t a_row_begin, const uint32_t* b, int64_t b_row_begin, float* c,
                          int64_t ldc) {
  if (m <= 0 || n <= 0) return true;
  if (pairs == 0) {
    for (int64_t i = 0; i < m; ++i) std::memset(c + i * ldc, 0, static_cast<size_t>(n) * sizeof(float));
    return true;
  }
  const int64_t panel_words = pairs * kLanes;
  // Equal blocks: none is left with a handful of pairs.
  const int64_t k_blocks = (pairs + kMaxKc - 1) / kMaxKc;
  const int64_t kc_step = (pairs + k_blocks - 1) / k_blocks;
  // Equal row blocks of at most kABlockBytes of re-packed A (at least one micro-panel).
  int64_t mc_max = kABlockBytes / (kc_step * 4);
  if (mc_max < kMr) mc_max = kMr;
  const int64_t m_blocks = (m + mc_max - 1) / mc_max;
  const int64_t mc_step = (m + m_blocks - 1) / m_blocks;
  uint32_t* ap = scratch.get(static_cast<size_t>(mc_step * kc_step));
  if (!ap) return false;

  const int64_t p_first = b_row_begin / kLanes;
  const int64_t p_end = (b_row_begin + n + kLanes - 1) / kLanes;
  alignas(kAlign) float edge[kMr * kNp * kLanes];  // tiles that straddle the ends of the column range

  for (int64_t pc = 0; pc < pairs; pc += kc_step) {
    const int64_t kc = pairs - pc < kc_step ? pairs - pc : kc_step;
    const bool accumulate = pc > 0;
    for (int64_t ic = 0; ic < m; ic += mc_step) {
      const int64_t mc = m - ic < mc_step ? m - ic : mc_step;
      pack_a(a, panel_words, a_row_begin + ic, mc, pc, kc, ap);
      const RowSplit split(mc);
      for (int64_t jp = p_first; jp < p_end; jp += kNp) {
        const int np = static_cast<int>(p_end - jp < kNp ? p_end - jp : kNp);
        const int width = np * kLanes;
        const uint32_t* bp = b + jp * panel_words + pc * kLanes;
        const int64_t col0 = jp * kLanes - b_row_begin;  // C column of the tile's first lane; may be < 0
        const bool full = col0 >= 0 && col0 + width <= n;
        for (int64_t i = 0; i < split.panels; ++i) {
          const int mr = split.rows(i);
          const MicroKernel kernel = pick<kNp>(np, mr);
          const uint32_t* apanel = ap + split.begin(i) * kc;
          float* crow = c + (ic + split.begin(i)) * ldc;
          if (full) {
            kernel(apanel, bp, panel_words, kc, alpha, crow + col0, ldc, accumulate);
            continue;
          }
          kernel(apanel, bp, panel_words, kc, alpha, edge, width, false);
          const int64_t lo = col0 < 0 ? -col0 : 0;
          const int64_t hi = n - col0 < width ? n - col0 : width;
          for (int r = 0; r < mr; ++r)
            for (int64_t t = lo; t < hi; ++t) {
              float& out = crow[r * ldc + col0 + t];
              out = accumulate ? out + edge[r * width + t] : edge[r * width + t];
            }
        }
      }
    }
  }
  return true;
}

}  // namespace quiver
