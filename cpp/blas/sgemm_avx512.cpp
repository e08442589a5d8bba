// The fp32 GEMM kernel for gemm_abt on AVX-512 (F, BW, DQ, VL). Compiled with the AVX-512 flags and
// called only where the processor has them; it shares no inline code with other files (no quiver or
// standard-library templates), so the linker cannot pick an AVX-512 copy of a function for code that
// runs elsewhere.
//
// Structure, as in bf16_gemm_avx512bf16.cpp. k is cut into as few equal blocks as kMaxKc allows (one
// up to k = 512). For each block, the rows of A are taken in blocks of about L2's size, each packed
// into micro-panels of about kMr rows (element (p, r) at p * rows + r, read by broadcast). Then for
// each kNr columns of C the kNr rows of B are packed into a panel (element (p, j) at p * kNr + j,
// transposed in 8 x 8 blocks; the columns past n are zeros), and the micro-kernel runs over the
// micro-panels of the A block with kMr x kNp accumulators. Per k index it issues kMr * kNp FMAs
// against kNp loads and kMr broadcasts, so it is bound by the FMA units; operands come from L1/L2.
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cpp/blas/sgemm_kernels.h"

namespace quiver {

namespace {

constexpr int kLanes = 16;  // fp32 lanes per register
// A rows per micro-kernel and registers of C columns: kMr * kNp accumulators, kNp B registers and
// a broadcast A value within the 32 zmm registers (the shape of the BF16 kernel).
constexpr int kMr = 8;
constexpr int kNp = 3;
constexpr int kNr = kNp * kLanes;  // C columns per B panel
// k indices per block: two blocks of 392 (k = 784) measured 10% faster than one of 784 on Zen 4,
// the B panel (kNr * 4 bytes per index) then staying nearer the core; C is written once per block.
constexpr int64_t kMaxKc = 512;
// Bytes of packed A per block: about a Zen 4 core's L2 (1 MB). The A micro-panels are read at a low
// rate and stream well; larger blocks pack B fewer times (512 x 2048 x 784: 1 MB blocks measured 15%
// faster than 256 KB ones).
constexpr int64_t kABlockBytes = 1024 * 1024;
constexpr size_t kAlign = 64;

// Per-thread scratch for the packed A block and B panel; grows once, freed at thread exit.
struct Scratch {
  float* data = nullptr;
  size_t size = 0;
  ~Scratch() { std::free(data); }
  float* get(size_t n) {
    if (n > size) {
      std::free(data);
      data = static_cast<float*>(std::aligned_alloc(kAlign, (n * 4 + kAlign - 1) / kAlign * kAlign));
      size = data ? n : 0;
    }
    return data;
  }
};
thread_local Scratch scratch;

// Lanes [0, count) set; count may be <= 0 or > kLanes.
inline __mmask16 lanes_below(int64_t count) {
  if (count <= 0) return 0;
  if (count >= kLanes) return static_cast<__mmask16>(0xffff);
  return static_cast<__mmask16>((1u << count) - 1);
}

// c (MR x width, width <= kNr) = alpha * A micro-panel (MR rows, kc indices, element (p, r) at
// a[p * MR + r]) times the B panel b; or c += ... when accumulate.
template <int MR>
void micro_kernel(const float* a, const float* b, int64_t kc, float alpha, float* c, int64_t ldc,
                  int64_t width, bool accumulate) {
  __m512 acc[MR][kNp];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < kNp; ++j) acc[r][j] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    __m512 bv[kNp];
#pragma GCC unroll 3
    for (int j = 0; j < kNp; ++j) bv[j] = _mm512_load_ps(b + p * kNr + j * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[p * MR + r]);
#pragma GCC unroll 3
      for (int j = 0; j < kNp; ++j) acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
  __mmask16 mask[kNp];
#pragma GCC unroll 3
  for (int j = 0; j < kNp; ++j) mask[j] = lanes_below(width - j * kLanes);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int j = 0; j < kNp; ++j) {
      float* cp = c + r * ldc + j * kLanes;
      if (mask[j] == 0xffff) {
        const __m512 v = accumulate ? _mm512_fmadd_ps(va, acc[r][j], _mm512_loadu_ps(cp))
                                    : _mm512_mul_ps(va, acc[r][j]);
        _mm512_storeu_ps(cp, v);
      } else if (mask[j] != 0) {
        const __m512 v = accumulate
                             ? _mm512_fmadd_ps(va, acc[r][j], _mm512_maskz_loadu_ps(mask[j], cp))
                             : _mm512_mul_ps(va, acc[r][j]);
        _mm512_mask_storeu_ps(cp, mask[j], v);
      }
    }
}

using MicroKernel = void (*)(const float*, const float*, int64_t, float, float*, int64_t, int64_t,
                             bool);

// The micro-kernel for mr rows (1 .. MR).
template <int MR>
MicroKernel pick(int mr) {
  if constexpr (MR == 1) {
    return &micro_kernel<1>;
  } else {
    return mr == MR ? &micro_kernel<MR> : pick<MR - 1>(mr);
  }
}

// How a block of rows is cut into micro-panels: as few as kMr allows, of near-equal sizes (20 rows
// are 7 + 7 + 6, not 8 + 8 + 4), since a kernel of few rows has too few accumulators to hide the FMA
// latency.
struct RowSplit {
  int64_t panels, base, extra;  // the first `extra` micro-panels have base + 1 rows, the rest base
  explicit RowSplit(int64_t rows)
      : panels((rows + kMr - 1) / kMr), base(rows / panels), extra(rows % panels) {}
  int64_t begin(int64_t i) const { return i * base + (i < extra ? i : extra); }
  int rows(int64_t i) const { return static_cast<int>(base + (i < extra ? 1 : 0)); }
};

// Packs rows [0, mc) of a, columns [0, kc), into the micro-panels of RowSplit(mc): micro-panel i at
// out + begin(i) * kc, element (p, r) at p * rows(i) + r.
void pack_a(const float* a, int64_t lda, int64_t mc, int64_t kc, float* out) {
  const RowSplit split(mc);
  for (int64_t i = 0; i < split.panels; ++i) {
    const int mr = split.rows(i);
    const float* src = a + split.begin(i) * lda;
    float* dst = out + split.begin(i) * kc;
    for (int r = 0; r < mr; ++r)
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = src[r * lda + p];
  }
}

// The 8 x 8 block at rows[0..7] (each 8 floats at column p of a row of B) transposed into
// out[t * kNr + 0..7], t = 0..7. Rows past `valid` read as zeros.
inline void transpose8(const float* const* rows, int valid, int64_t p, float* out) {
  __m256 r[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = i < valid ? _mm256_loadu_ps(rows[i] + p) : _mm256_setzero_ps();
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
  _mm256_store_ps(out + 0 * kNr, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_store_ps(out + 1 * kNr, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_store_ps(out + 2 * kNr, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_store_ps(out + 3 * kNr, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_store_ps(out + 4 * kNr, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_store_ps(out + 5 * kNr, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_store_ps(out + 6 * kNr, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_store_ps(out + 7 * kNr, _mm256_permute2f128_ps(u3, u7, 0x31));
}

// Packs rows [0, width) of b (width <= kNr), columns [0, kc), into out: element (p, j) at
// p * kNr + j, zeros for j >= width. In 8 x 8 blocks transposed in registers: gathering one
// element per lane (vgatherdps) made packing about 16% of the time at k = 100.
void pack_b(const float* b, int64_t ldb, int64_t width, int64_t kc, float* out) {
  constexpr int kBlock = 8;
  const int64_t kc8 = kc / kBlock * kBlock;
  for (int64_t j0 = 0; j0 < kNr; j0 += kBlock) {
    const int64_t left = width - j0;
    const int valid = left <= 0 ? 0 : left >= kBlock ? kBlock : static_cast<int>(left);
    const float* rows[kBlock];
    for (int i = 0; i < kBlock; ++i) rows[i] = b + (j0 + (i < valid ? i : 0)) * ldb;
    for (int64_t p = 0; p < kc8; p += kBlock) transpose8(rows, valid, p, out + p * kNr + j0);
    for (int64_t p = kc8; p < kc; ++p)
      for (int i = 0; i < kBlock; ++i) out[p * kNr + j0 + i] = i < valid ? rows[i][p] : 0.0f;
  }
}

}  // namespace

bool sgemm_abt_avx512(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return true;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::memset(c + i * ldc, 0, static_cast<size_t>(n) * sizeof(float));
    return true;
  }
  // Equal blocks: none is left with a handful of indices.
  const int64_t k_blocks = (k + kMaxKc - 1) / kMaxKc;
  const int64_t kc_step = (k + k_blocks - 1) / k_blocks;
  // Equal row blocks of at most kABlockBytes of packed A (at least one micro-panel).
  int64_t mc_max = kABlockBytes / (kc_step * 4);
  if (mc_max < kMr) mc_max = kMr;
  const int64_t m_blocks = (m + mc_max - 1) / mc_max;
  const int64_t mc_step = (m + m_blocks - 1) / m_blocks;
  // The A block, then the B panel (kNr * 4 bytes per index: stays 64-byte aligned).
  const int64_t a_size = (mc_step * kc_step + kLanes - 1) / kLanes * kLanes;
  float* ap = scratch.get(static_cast<size_t>(a_size + kc_step * kNr));
  if (!ap) return false;
  float* bp = ap + a_size;

  for (int64_t pc = 0; pc < k; pc += kc_step) {
    const int64_t kc = k - pc < kc_step ? k - pc : kc_step;
    const bool accumulate = pc > 0;
    for (int64_t ic = 0; ic < m; ic += mc_step) {
      const int64_t mc = m - ic < mc_step ? m - ic : mc_step;
      pack_a(a + ic * lda + pc, lda, mc, kc, ap);
      const RowSplit split(mc);
      for (int64_t jc = 0; jc < n; jc += kNr) {
        const int64_t width = n - jc < kNr ? n - jc : kNr;
        pack_b(b + jc * ldb + pc, ldb, width, kc, bp);
        for (int64_t i = 0; i < split.panels; ++i) {
          const int mr = split.rows(i);
          pick<kMr>(mr)(ap + split.begin(i) * kc, bp, kc, alpha, c + (ic + split.begin(i)) * ldc + jc,
                        ldc, width, accumulate);
        }
      }
    }
  }
  return true;
}

}  // namespace quiver
