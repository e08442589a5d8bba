#include "cuda/ivf_pq/pq_encode.h"

#include <algorithm>

#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

constexpr int kThreads = 128;  // vectors per block; one sub-quantizer per block (grid y)
constexpr int kCentroids = 256;

// Thread = vector, block y = sub-quantizer. With `staged`, the sub-quantizer's codebook and the
// block's residual parts sit in shared memory (the codebook read as a broadcast); otherwise both
// are read from global memory (very long sub-vectors).
__global__ void __launch_bounds__(kThreads) pq_encode_kernel(const float* x, const int32_t* lists, const int32_t* dest,
                                                             int64_t n, const float* centroids,
                                                             const float* codebooks, int64_t m, int64_t dsub,
                                                             int64_t code_stride, uint8_t* codes, bool staged) {
  extern __shared__ __align__(16) float smem[];
  const int64_t sub = blockIdx.y;
  const int64_t dim = m * dsub;
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const bool valid = i < n;
  const float* cb = codebooks + sub * kCentroids * dsub;
  const int64_t rstride = dsub + 1;  // odd strides spread the threads' rows over the banks
  float* book = smem;
  float* resid = smem + kCentroids * dsub;
  const int32_t list = valid ? lists[i] : 0;
  const float* xv = x + (valid ? i : 0) * dim + sub * dsub;
  const float* cv = centroids + int64_t(list) * dim + sub * dsub;
  if (staged) {
    for (int64_t t = threadIdx.x; t < kCentroids * dsub; t += kThreads) book[t] = cb[t];
    for (int64_t t = 0; t < dsub; ++t) resid[threadIdx.x * rstride + t] = valid ? xv[t] - cv[t] : 0.f;
    __syncthreads();
  }
  if (!valid) return;
  float best = __int_as_float(0x7f800000);
  int best_c = 0;
  for (int c = 0; c < kCentroids; ++c) {
    float d = 0.f;
    if (staged) {
      const float* q = book + c * dsub;
      const float* r = resid + threadIdx.x * rstride;
      for (int64_t t = 0; t < dsub; ++t) {
        const float e = r[t] - q[t];
        d = fmaf(e, e, d);
      }
    } else {
      const float* q = cb + c * dsub;
      for (int64_t t = 0; t < dsub; ++t) {
        const float e = (xv[t] - cv[t]) - __ldg(q + t);
        d = fmaf(e, e, d);
      }
    }
    if (d < best) {
      best = d;
      best_c = c;
    }
  }
  codes[int64_t(dest[i]) * code_stride + sub] = static_cast<uint8_t>(best_c);
}

}  // namespace

void launch_pq_encode(const float* x, const int32_t* lists, const int32_t* dest, int64_t n, const float* centroids,
                      const float* codebooks, int64_t m, int64_t dsub, int64_t code_stride, uint8_t* codes,
                      int max_shared_bytes, cudaStream_t stream) {
  if (n == 0) return;
  const int64_t shared = (kCentroids * dsub + kThreads * (dsub + 1)) * int64_t(sizeof(float));
  const bool staged = shared <= max_shared_bytes;
  const size_t bytes = staged ? size_t(shared) : 0;
  if (bytes > 48 * 1024)
    QV_CUDA_CHECK(cudaFuncSetAttribute(pq_encode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads), static_cast<unsigned>(m));
  pq_encode_kernel<<<grid, kThreads, bytes, stream>>>(x, lists, dest, n, centroids, codebooks, m, dsub, code_stride,
                                                      codes, staged);
  QV_LAUNCH_CHECK("pq_encode_kernel");
}

}  // namespace quiver::gpu
