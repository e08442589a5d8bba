// The candidates' re-rank (cuda/flat/compute_modes.h's launch_rerank): each (query, row) pair's exact
// key, bit for bit the CPU's sum in exact_distances.h's one order, whichever kernel runs (rows read
// whole by the warp through shared memory where they are 16-byte aligned, a thread's own row
// otherwise): dims below, at and across the 32-value chunks, unaligned rows, "no row" entries, pair
// counts that leave a warp partly empty, both metrics.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "cuda/flat/compute_modes.h"
#include "exact_float.h"
#include "gpu_testing.h"

namespace quiver {
namespace {

using testing::DeviceArray;

TEST(GpuRerank, ExactKeysForEveryShape) {
  QV_REQUIRE_GPU();
  testing::TestDeviceScope scope;
  constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
  std::mt19937 gen(7);
  for (int64_t dim : {4, 24, 32, 36, 128, 132, 260, 33}) {
    for (bool l2 : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "dim " << dim << (l2 ? " l2" : " ip"));
      const int64_t n = 3001, nq = 7, kc = 45;  // 315 pairs: the last warp partly empty
      const auto base = testing::uniform_vectors(n, dim, uint32_t(dim));
      const auto queries = testing::uniform_vectors(nq, dim, uint32_t(dim + 1));
      std::vector<int32_t> rows(size_t(nq * kc));
      for (auto& r : rows) r = int32_t(gen() % n);
      rows[3] = kNone;
      rows[size_t(nq * kc - 1)] = kNone;
      rows[40] = rows[41];  // a row twice
      DeviceArray<float> d_base(base), d_queries(queries), keys{size_t(nq * kc)};
      DeviceArray<int32_t> d_rows(rows);
      gpu::launch_rerank(d_base.get(), d_queries.get(), dim, d_rows.get(), nq, kc, l2, keys.get(), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> got = keys.to_host();
      for (int64_t i = 0; i < nq * kc; ++i) {
        const int32_t r = rows[size_t(i)];
        const float want = r == kNone ? std::numeric_limits<float>::infinity()
                                      : testing::fma_key(l2, queries.data() + (i / kc) * dim,
                                                         base.data() + int64_t(r) * dim, dim);
        ASSERT_EQ(got[size_t(i)], want) << "pair " << i << " row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace quiver
