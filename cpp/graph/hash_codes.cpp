#include "cpp/graph/hash_codes.h"

#include <algorithm>

#include "cpp/blas/gemm.h"
#include "cpp/core/error.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"

namespace quiver {

namespace {

// Rows projected per task: one GEMM tile of projections in memory per thread.
constexpr int64_t kRowsPerTask = 256;

}  // namespace

HashProjection make_hash_projection(const float* x, int64_t n, int64_t dim, int64_t bits, uint64_t seed) {
  require(bits >= kMinHashBits && bits <= kMaxHashBits && bits % 32 == 0, "hash bits = ", bits,
          " is not a multiple of 32 in ", kMinHashBits, " .. ", kMaxHashBits);
  require(n >= 1 && dim >= 1, "hashing needs vectors");
  HashProjection p;
  p.dim = dim;
  p.bits = bits;
  p.directions.resize(static_cast<size_t>(bits * dim));
  Random random(seed);
  for (float& v : p.directions) v = static_cast<float>(random.gaussian());
  std::vector<double> mean(static_cast<size_t>(dim), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d) mean[d] += x[i * dim + d];
  for (double& m : mean) m /= static_cast<double>(n);
  p.thresholds.resize(static_cast<size_t>(bits));
  for (int64_t j = 0; j < bits; ++j) {
    double t = 0.0;
    for (int64_t d = 0; d < dim; ++d) t += mean[d] * p.directions[j * dim + d];
    p.thresholds[j] = static_cast<float>(t);
  }
  return p;
}

void hash_codes(ThreadPool& pool, const HashProjection& p, const float* x, int64_t n, uint32_t* codes) {
  const int64_t tasks = (n + kRowsPerTask - 1) / kRowsPerTask, words = p.words();
  pool.parallel_for(tasks, [&](int64_t t) {
    const int64_t first = t * kRowsPerTask, count = std::min(kRowsPerTask, n - first);
    std::vector<float> projected(static_cast<size_t>(count * p.bits));
    gemm_abt(count, p.bits, p.dim, 1.0f, x + first * p.dim, p.dim, p.directions.data(), p.dim, projected.data(),
             p.bits);
    for (int64_t i = 0; i < count; ++i) {
      uint32_t* code = codes + (first + i) * words;
      std::fill(code, code + words, 0u);
      for (int64_t j = 0; j < p.bits; ++j)
        if (projected[i * p.bits + j] > p.thresholds[j]) code[j / 32] |= 1u << (j % 32);
    }
  });
}

}  // namespace quiver
