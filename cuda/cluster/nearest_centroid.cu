// The nearest-centroid kernels (nearest_centroid.h).
//
// The main kernel is a float32 GEMM on the CUDA cores, register blocked as a classic SGEMM (a block
// multiplies 128 points by 128 centroids, eight dimensions a step through double-buffered shared
// memory; a thread holds 8 x 8 products), whose epilogue keeps each point's best and second-best key
// ||c||^2 - 2 <x, c> instead of writing the products out. A point is certified when the gap between
// the two exceeds what the GEMM form's rounding and the exact key's rounding can close (below): its
// best centroid is then the one with the smallest exact key (exact_key.cuh), whose distance is
// written. The rest (data far from the origin, near-ties) are listed, and a second kernel ranks every
// centroid of each by its exact key: the labels and distances are those of the exact search with
// k = 1, at the cost of a GEMM.
//
// The bound. Dot products of d terms summed in float (one fmaf a term) err by at most
// g_d |x| |c| (g_m = m u / (1 - m u), u = 2^-24), the centroids' norms by g_d |c|^2, the key's own
// fmaf by u |key|: the key errs by at most E = g_{d+2} (2 X C + C^2), X and C upper bounds on |x|
// and on the largest |c|. The exact key of a pair errs by at most (d + 2) u of the distance
// (exact_distances.h). With U = X^2 + best + E (above the best centroid's real distance) and
// L = |x|^2 (1 - g_d) + second - E (below every other centroid's), L (1 - (d + 2) u) > U (1 + (d + 2) u)
// makes the best centroid's exact key the smallest, alone (E and both sides also take an absolute
// (d + 2) 2^-146 for underflow).
//
// Why not the exact search with k = 1: against a base of a thousand centroids its selection draws
// 17 candidates of each point from a written tile and certifies them (11.4 ms for 1M x 128 points
// and 1024 centroids on an H200).
#include "cuda/cluster/nearest_centroid.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpp/core/error.h"
#include "cuda/core/error.h"
#include "cuda/flat/exact_key.cuh"

namespace quiver::gpu {

namespace {

constexpr int kTile = 128;     // points and centroids of a block tile
constexpr int kDepth = 8;      // dimensions a step
constexpr int kThreads = 256;  // 16 x 16 threads, each 8 points x 8 centroids
constexpr int kSide = 16;
constexpr int kHalf = kTile / 2;
constexpr int kResolveWarps = 8;  // the second kernel: a warp a listed point
constexpr double kUnit = 0x1p-24;
constexpr double kSlack = 0x1p-20;         // relative, on every quantity of the bound
constexpr double kMaxMagnitude = 0x1p120;  // beyond, float keys may overflow: not certified
constexpr double kUnderflow = 0x1p-146;    // a generous absolute error of one float operation near 0

__device__ inline double gamma(int64_t m) { return double(m) * kUnit / (1 - double(m) * kUnit); }

// Whether the best centroid of a point is certified (see the top of the file): x2 its float norm,
// best / second its two smallest keys, max_c2 the centroids' largest float norm.
__device__ inline bool certified(int64_t dim, double x2, double best, double second, double max_c2) {
  const double g = gamma(dim), x2_high = x2 * (1 + g) * (1 + kSlack), c2_high = max_c2 * (1 + g) * (1 + kSlack);
  // Underflow adds an absolute error a step, to the GEMM form and to the exact keys alike.
  const double absolute = double(dim + 2) * kUnderflow;
  const double error = gamma(dim + 2) * (2 * sqrt(x2_high) * sqrt(c2_high) + c2_high) * (1 + kSlack) + absolute;
  const double high = x2_high + best + error + absolute, low = x2 * (1 - g) + second - error - absolute;
  const double rerank = double(dim + 2) * kUnit * (1 + kSlack);
  if (!(high < kMaxMagnitude) || !(fabs(low) < kMaxMagnitude) || !(c2_high < kMaxMagnitude)) return false;
  return low * (1 - rerank) > high * (1 + rerank) * (1 + kSlack);
}

// A thread's i-th point (or centroid) of the tile: two groups of four, half a tile apart, so that a
// warp's float4 reads of shared memory fall in distinct banks.
__device__ inline int tile_index(int thread, int i) { return (i < 4 ? 0 : kHalf) + thread * 4 + (i & 3); }

// The smaller (value, index), the lower index among equal values.
__device__ inline void keep_better(float& best, int& index, float value, int at) {
  if (value < best || (value == best && at < index)) {
    best = value;
    index = at;
  }
}

// kWhole: dim a multiple of kDepth and rows 16-byte aligned, so a step's four values are one float4.
template <bool kWhole>
__global__ void __launch_bounds__(kThreads, 2)
    nearest_centroid_kernel(const float* __restrict__ x, int64_t n, int64_t dim, const float* __restrict__ centroids,
                            const float* __restrict__ centroid_norms, int64_t k, bool vec4, float* distances,
                            int64_t* labels, int32_t* listed) {
  __shared__ __align__(16) float points_s[2][kDepth][kTile];
  __shared__ __align__(16) float centroids_s[2][kDepth][kTile];
  __shared__ float point_norms_s[kTile], best_s[kTile], second_s[kTile];
  __shared__ int best_index_s[kTile];
  // Each thread's running best, second best and best index of its 8 points, in shared memory rather
  // than registers: the products need those (only the thread itself reads its column).
  __shared__ float run_best_s[8][kThreads], run_second_s[8][kThreads];
  __shared__ int run_index_s[8][kThreads];
  const int tid = threadIdx.x, tx = tid % kSide, ty = tid / kSide;
  const int64_t first_point = int64_t(blockIdx.x) * kTile;

  // Loading: thread tid brings four consecutive dimensions of point (and centroid) tid / 2.
  const int load_row = tid / 2, load_depth = (tid % 2) * 4;
  const bool point_valid = first_point + load_row < n;
  const float* point_row = x + (first_point + load_row) * dim;
  // Step counts in int: the launcher bounds dim and k.
  const int depth_steps = int((dim + kDepth - 1) / kDepth);
  const int steps = depth_steps * int((k + kTile - 1) / kTile);
  float point_next[4], centroid_next[4];
  float norm_part = 0;  // this thread's share of ||x||^2, from the first centroid tile's steps
  int fetch_depth = 0, fetch_tile = 0;  // the next step to fetch
  auto fetch = [&]() {
    const int d0 = fetch_depth + load_depth, c = fetch_tile * kTile + load_row;
    const float* centroid_row = centroids + int64_t(c) * dim;
    if (kWhole) {
      const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
      const float4 p = point_valid ? *reinterpret_cast<const float4*>(point_row + d0) : zero;
      const float4 q = c < k ? *reinterpret_cast<const float4*>(centroid_row + d0) : zero;
      point_next[0] = p.x, point_next[1] = p.y, point_next[2] = p.z, point_next[3] = p.w;
      centroid_next[0] = q.x, centroid_next[1] = q.y, centroid_next[2] = q.z, centroid_next[3] = q.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int d = d0 + i;
        point_next[i] = point_valid && d < dim ? point_row[d] : 0.f;
        centroid_next[i] = c < k && d < dim ? centroid_row[d] : 0.f;
      }
    }
    if (fetch_tile == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) norm_part = fmaf(point_next[i], point_next[i], norm_part);
    }
    fetch_depth += kDepth;
    if (fetch_depth >= dim) {
      fetch_depth = 0;
      ++fetch_tile;
    }
  };
  auto stage = [&](int buffer) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      points_s[buffer][load_depth + i][load_row] = point_next[i];
      centroids_s[buffer][load_depth + i][load_row] = centroid_next[i];
    }
  };

  float products[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) products[i][j] = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    run_best_s[i][tid] = run_second_s[i][tid] = INFINITY;
    run_index_s[i][tid] = 0;
  }
  float max_norm = 0;  // the largest norm of this thread's centroids

  fetch();
  stage(0);
  __syncthreads();
  int depth_step = 0, centroid_tile = 0;
  for (int step = 0; step < steps; ++step) {
    const int buffer = int(step & 1);
    if (step + 1 < steps) fetch();  // global loads in flight during the products
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const float4 p0 = *reinterpret_cast<const float4*>(&points_s[buffer][d][ty * 4]);
      const float4 p1 = *reinterpret_cast<const float4*>(&points_s[buffer][d][kHalf + ty * 4]);
      const float4 c0 = *reinterpret_cast<const float4*>(&centroids_s[buffer][d][tx * 4]);
      const float4 c1 = *reinterpret_cast<const float4*>(&centroids_s[buffer][d][kHalf + tx * 4]);
      const float p[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
      const float c[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) products[i][j] = fmaf(p[i], c[j], products[i][j]);
    }
    if (++depth_step == depth_steps) {  // this centroid tile is done: keep each point's best
      float norm[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int c = centroid_tile * kTile + tile_index(tx, j);
        norm[j] = c < k ? centroid_norms[c] : INFINITY;
        if (c < k) max_norm = fmaxf(max_norm, norm[j]);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        float best = run_best_s[i][tid], second = run_second_s[i][tid];
        int best_index = run_index_s[i][tid];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          // Columns rise with j and tiles: a strict < keeps the lowest index among equals.
          const float value = fmaf(-2.f, products[i][j], norm[j]);
          if (value < best) {
            second = best;
            best = value;
            best_index = centroid_tile * kTile + tile_index(tx, j);
          } else if (value < second) {
            second = value;
          }
          products[i][j] = 0.f;
        }
        run_best_s[i][tid] = best;
        run_second_s[i][tid] = second;
        run_index_s[i][tid] = best_index;
      }
      depth_step = 0;
      ++centroid_tile;
    }
    if (step + 1 < steps) stage(buffer ^ 1);  // the other buffer: last read before the previous barrier
    __syncthreads();
  }

  norm_part += __shfl_xor_sync(0xffffffffu, norm_part, 1);  // the row's other half (thread tid ^ 1)
  if (tid % 2 == 0) point_norms_s[load_row] = norm_part;
  // The 16 threads of a row group are lanes of one warp (lanes 0-15 or 16-31), and hold every column.
  for (int offset = kSide / 2; offset > 0; offset /= 2)
    max_norm = fmaxf(max_norm, __shfl_xor_sync(0xffffffffu, max_norm, offset));
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    float best = run_best_s[i][tid], second = run_second_s[i][tid];
    int best_index = run_index_s[i][tid];
    for (int offset = kSide / 2; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, best, offset);
      const float other_second = __shfl_xor_sync(0xffffffffu, second, offset);
      const int other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
      second = fminf(fminf(second, other_second), fmaxf(best, other));
      keep_better(best, best_index, other, other_index);
    }
    if (tx == 0) {
      const int row = tile_index(ty, i);
      best_s[row] = best;
      second_s[row] = second;
      best_index_s[row] = best_index;
    }
  }
  __syncthreads();
  // A thread a point: its exact distance when certified, else onto the list.
  const int64_t point = first_point + tid;
  if (tid < kTile && point < n) {
    const int index = best_index_s[tid];
    if (k == 1 || certified(dim, point_norms_s[tid], best_s[tid], second_s[tid], max_norm)) {
      distances[point] = exact_key(centroids, x + point * dim, dim, index, true, vec4);
      labels[point] = index;
    } else {
      listed[1 + atomicAdd(listed, 1)] = int32_t(point);
    }
  }
}

// A warp a listed point: every centroid's exact key, the smallest (lowest index among equals).
__global__ void resolve_listed_kernel(const float* __restrict__ x, int64_t dim, const float* __restrict__ centroids,
                                      int64_t k, bool vec4, const int32_t* listed, float* distances, int64_t* labels) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kResolveWarps;
  for (int64_t w = int64_t(blockIdx.x) * kResolveWarps + threadIdx.x / 32; w < listed[0]; w += warps) {
    const int64_t point = listed[1 + w];
    const float* row = x + point * dim;
    float best = INFINITY;
    int best_index = 0;
    for (int c = lane; c < k; c += 32) {
      const float key = exact_key(centroids, row, dim, c, true, vec4);
      if (key < best) {
        best = key;
        best_index = c;
      }
    }
    for (int offset = 16; offset > 0; offset /= 2)
      keep_better(best, best_index, __shfl_xor_sync(0xffffffffu, best, offset),
                  __shfl_xor_sync(0xffffffffu, best_index, offset));
    if (lane == 0) {
      distances[point] = best;
      labels[point] = best_index;
    }
  }
}

}  // namespace

void launch_nearest_centroid(const float* x, int64_t n, int64_t dim, const float* centroids,
                             const float* centroid_norms, int64_t k, float* distances, int64_t* labels,
                             int32_t* listed, cudaStream_t stream) {
  // The kernel counts its steps and centroids in int, the listed points in int32.
  constexpr int64_t kMost = std::numeric_limits<int>::max() / 2;
  require(k >= 1 && k <= kMost && dim >= 1 && dim <= kMost, "nearest centroid: k = ", k, " and dim = ", dim,
          " must be in 1 .. 2^30 - 1");
  require((dim + kDepth - 1) / kDepth * ((k + kTile - 1) / kTile) <= kMost, "nearest centroid: dim x k (", dim,
          " x ", k, ") is too large");
  const bool vec4 = dim % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(centroids) % 16 == 0;
  for (int64_t first = 0; first < n; first += kMost) {  // the list counts points in int32
    const int64_t count = std::min(kMost, n - first), blocks = (count + kTile - 1) / kTile;
    QV_CUDA_CHECK(cudaMemsetAsync(listed, 0, sizeof(int32_t), stream));
    if (vec4 && dim % kDepth == 0) {
      nearest_centroid_kernel<true><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          x + first * dim, count, dim, centroids, centroid_norms, k, vec4, distances + first, labels + first, listed);
    } else {
      nearest_centroid_kernel<false><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
          x + first * dim, count, dim, centroids, centroid_norms, k, vec4, distances + first, labels + first, listed);
    }
    QV_LAUNCH_CHECK("nearest_centroid_kernel");
    // Enough warps for any list; each returns at once past the list's length.
    constexpr int64_t kResolveBlocks = 1024;
    resolve_listed_kernel<<<static_cast<unsigned>(std::min(kResolveBlocks, blocks)), kResolveWarps * 32, 0, stream>>>(
        x + first * dim, dim, centroids, k, vec4, listed, distances + first, labels + first);
    QV_LAUNCH_CHECK("resolve_listed_kernel");
  }
}

}  // namespace quiver::gpu
