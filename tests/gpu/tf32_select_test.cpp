// cuda/flat/tf32_select (the TF32 pass's GEMM and selection in one kernel) against references:
// small integers (exact in TF32 and in float sums, so keys and ties are exact and the result must
// be the reference's order by (key, row)), and uniform floats within the TF32 error. Awkward sizes:
// n and nq not multiples of the 128-row tiles, n below kc, one query, dims not multiples of 32,
// kc from 1 to 32, filters, inner product, duplicate rows. Both kernels: the device's default
// (wgmma on compute capability 9.0) and mma.sync.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "cuda/core/resources.h"
#include "cuda/flat/tf32_select.h"
#include "gpu_testing.h"

namespace quiver {
namespace {

using testing::DeviceArray;

constexpr int32_t kNoRow = std::numeric_limits<int32_t>::max();

struct Case {
  int64_t n, dim, nq, kc;
  bool l2 = true;
  bool filter = false;
};

struct Result {
  int64_t splits = 0;
  std::vector<float> keys;  // nq x splits * kc
  std::vector<int32_t> rows;
};

// The base rows' squared norms, in double.
std::vector<double> squared_norms(const Case& c, const std::vector<float>& base) {
  std::vector<double> norms(size_t(c.n));
  for (int64_t j = 0; j < c.n; ++j) norms[j] = testing::exact_value(false, &base[j * c.dim], &base[j * c.dim], c.dim);
  return norms;
}

constexpr gpu::Tf32SelectKernel kKernels[] = {gpu::Tf32SelectKernel::automatic, gpu::Tf32SelectKernel::mma_sync};

Result run(const Case& c, const std::vector<float>& base, const std::vector<double>& norms,
           const std::vector<float>& queries, const std::vector<uint8_t>& filter, gpu::Tf32SelectKernel kernel) {
  gpu::Resources& resources = testing::shared_resources();
  testing::TestDeviceScope device;  // the kernel is launched here, not through a backend entry
  DeviceArray<float> y(base), x(queries), y_norms(std::vector<float>(norms.begin(), norms.end()));
  DeviceArray<uint8_t> bits(filter);
  Result r;
  r.splits = gpu::tf32_select_splits(resources.limits(), c.nq, c.n);
  const size_t out = size_t(c.nq * r.splits * c.kc);
  DeviceArray<float> keys(out);
  DeviceArray<int32_t> rows(out);
  gpu::launch_tf32_select(resources.limits(), x.get(), c.nq, y.get(), c.l2 ? y_norms.get() : nullptr, c.n, c.dim,
                          c.kc, c.l2, c.filter ? bits.get() : nullptr, int64_t(filter.size()) * 8, r.splits,
                          keys.get(), rows.get(), resources.stream(0), kernel);
  EXPECT_EQ(cudaStreamSynchronize(resources.stream(0)), cudaSuccess);
  r.keys = keys.to_host();
  r.rows = rows.to_host();
  return r;
}

// The key the kernel computes, in double on TF32-truncated inputs: ||y||^2 - 2 <x, y> or -<x, y>.
double reference_key(const Case& c, const float* x, const float* y, double y_norm) {
  auto tf32 = [](float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bits &= ~uint32_t(0x1fff);
    std::memcpy(&v, &bits, 4);
    return double(v);
  };
  double dot = 0;
  for (int64_t i = 0; i < c.dim; ++i) dot += tf32(x[i]) * tf32(y[i]);
  return c.l2 ? y_norm - 2 * dot : -dot;
}

// Checks every query: each split's list is ascending by (key, row), rows distinct, in range and
// allowed, keys within `tol` of the reference; the kc best of all splits' entries are the reference's
// kc best (exactly by (key, row) when tol == 0, else no row left out is closer by more than 2 tol);
// lists run short only where the rows run out.
void check(const Case& c, const std::vector<float>& base, const std::vector<double>& norm,
           const std::vector<float>& queries, const std::vector<uint8_t>& filter, const Result& r, double tol) {
  const int64_t width = r.splits * c.kc;
  int64_t allowed_rows = 0;
  for (int64_t j = 0; j < c.n; ++j) allowed_rows += testing::allowed(c.filter ? &filter : nullptr, j) ? 1 : 0;
  for (int64_t q = 0; q < c.nq; ++q) {
    SCOPED_TRACE(::testing::Message() << "query " << q);
    std::vector<std::pair<double, int64_t>> ref;
    for (int64_t j = 0; j < c.n; ++j)
      if (testing::allowed(c.filter ? &filter : nullptr, j))
        ref.emplace_back(reference_key(c, &queries[q * c.dim], &base[j * c.dim], norm[j]), j);
    std::sort(ref.begin(), ref.end());
    std::vector<std::pair<double, int64_t>> got;
    std::vector<bool> seen(size_t(c.n), false);
    for (int64_t s = 0; s < r.splits; ++s) {
      for (int64_t e = 0; e < c.kc; ++e) {
        const float key = r.keys[size_t(q * width + s * c.kc + e)];
        const int32_t row = r.rows[size_t(q * width + s * c.kc + e)];
        if (row == kNoRow) {
          ASSERT_TRUE(std::isinf(key) && key > 0) << "split " << s << " entry " << e;
          continue;
        }
        ASSERT_TRUE(row >= 0 && row < c.n) << row;
        ASSERT_FALSE(seen[size_t(row)]) << "row " << row << " twice";
        seen[size_t(row)] = true;
        ASSERT_TRUE(testing::allowed(c.filter ? &filter : nullptr, row)) << row;
        const double expected = reference_key(c, &queries[q * c.dim], &base[row * c.dim], norm[size_t(row)]);
        ASSERT_LE(std::abs(double(key) - expected), tol) << "row " << row;
        if (e > 0) {
          const float before = r.keys[size_t(q * width + s * c.kc + e - 1)];
          const int32_t before_row = r.rows[size_t(q * width + s * c.kc + e - 1)];
          ASSERT_TRUE(before < key || (before == key && before_row < row)) << "split " << s << " entry " << e;
        }
        got.emplace_back(key, row);
      }
    }
    std::sort(got.begin(), got.end());
    const int64_t expect = std::min(c.kc, allowed_rows);
    ASSERT_GE(int64_t(got.size()), expect);
    if (tol == 0) {
      for (int64_t e = 0; e < expect; ++e) ASSERT_EQ(got[size_t(e)], ref[size_t(e)]) << "rank " << e;
    } else {
      const double kth = got[size_t(expect - 1)].first;
      for (int64_t e = 0; e < expect; ++e)
        if (!seen[size_t(ref[size_t(e)].second)]) ASSERT_GE(ref[size_t(e)].first, kth - 2 * tol) << "rank " << e;
    }
  }
}

std::vector<uint8_t> random_filter(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> bits(size_t((n + 7) / 8 - 3));  // bits stop before n
  for (auto& b : bits) b = uint8_t(gen() & gen());  // about a quarter of the rows allowed
  return bits;
}

TEST(GpuTf32Select, ExactOnSmallIntegersWithTies) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  uint32_t seed = 40;
  for (Case c : {Case{1000, 4, 130, 32}, Case{5003, 36, 257, 26}, Case{777, 100, 64, 32}, Case{300, 128, 129, 31},
                 Case{20, 12, 70, 32}, Case{2000, 128, 1, 1}, Case{3001, 20, 100, 17, true, true},
                 Case{4000, 64, 65, 10, false}, Case{2500, 8, 150, 32, false, true}}) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim << " nq " << c.nq << " kc " << c.kc
                                      << (c.l2 ? " l2" : " ip") << (c.filter ? " filter" : ""));
    ASSERT_TRUE(gpu::tf32_select_fits(resources.limits(), c.dim, c.kc, c.n));
    std::vector<float> base = testing::integer_vectors(c.n, c.dim, seed++, 2);
    const std::vector<float> queries = testing::integer_vectors(c.nq, c.dim, seed++, 2);
    // Duplicate rows: the first rows again at the end.
    for (int64_t j = 0; j < std::min<int64_t>(40, c.n / 2); ++j)
      std::copy_n(&base[j * c.dim], c.dim, &base[(c.n - 1 - j) * c.dim]);
    const std::vector<uint8_t> filter = c.filter ? random_filter(c.n, seed++) : std::vector<uint8_t>();
    const std::vector<double> norms = squared_norms(c, base);
    for (gpu::Tf32SelectKernel kernel : kKernels) {
      SCOPED_TRACE(::testing::Message() << "kernel " << int(kernel));
      check(c, base, norms, queries, filter, run(c, base, norms, queries, filter, kernel), 0);
    }
  }
}

TEST(GpuTf32Select, UniformFloatsWithinTheTf32Error) {
  QV_REQUIRE_GPU();
  for (Case c : {Case{20000, 128, 300, 32}, Case{9000, 96, 77, 32, false}}) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " dim " << c.dim);
    const std::vector<float> base = testing::uniform_vectors(c.n, c.dim, 5);
    const std::vector<float> queries = testing::uniform_vectors(c.nq, c.dim, 6);
    // Either rounding of the inputs to TF32 (2^-11 relative each, truncation 2^-10) on products
    // whose magnitudes sum to about dim / 4, doubled for L2, plus float accumulation: under
    // dim / 1000.
    const double tol = 1e-3 * double(c.dim);
    const std::vector<double> norms = squared_norms(c, base);
    for (gpu::Tf32SelectKernel kernel : kKernels) {
      SCOPED_TRACE(::testing::Message() << "kernel " << int(kernel));
      check(c, base, norms, queries, {}, run(c, base, norms, queries, {}, kernel), tol);
    }
  }
}

// A part of the base searched after others (knn.cu's chunks): rows [first_row, n), passed as their own
// array numbered from first_row, and no key above the query's bound; a split with fewer such rows ends
// in (bound, no row). Small integers: exact keys, so the kept entries must be the reference's best by
// (key, row).
TEST(GpuTf32Select, RowRangeUnderPerQueryBounds) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = testing::shared_resources();
  const Case c{5003, 36, 257, 26};
  const int64_t first_row = 1237, ranged = c.n - first_row;
  const std::vector<float> base = testing::integer_vectors(c.n, c.dim, 60, 2);
  const std::vector<float> queries = testing::integer_vectors(c.nq, c.dim, 61, 2);
  const std::vector<double> norms = squared_norms(c, base);
  // Per query, its range rows by (key, row), and a bound: the key at rank 3 (fewer than kc rows
  // within it), rank 100, or +inf.
  std::vector<std::vector<std::pair<double, int64_t>>> ref(size_t(c.nq));
  std::vector<float> bounds(size_t(c.nq));
  for (int64_t q = 0; q < c.nq; ++q) {
    for (int64_t j = first_row; j < c.n; ++j)
      ref[q].emplace_back(reference_key(c, &queries[q * c.dim], &base[j * c.dim], norms[j]), j);
    std::sort(ref[q].begin(), ref[q].end());
    bounds[q] = q % 3 == 0 ? float(ref[q][3].first) : q % 3 == 1 ? float(ref[q][100].first) : INFINITY;
  }
  testing::TestDeviceScope device;
  DeviceArray<float> y(base), x(queries), y_norms(std::vector<float>(norms.begin(), norms.end())), b(bounds);
  const int64_t splits = gpu::tf32_select_splits(resources.limits(), c.nq, ranged);
  const size_t out = size_t(c.nq * splits * c.kc);
  for (gpu::Tf32SelectKernel kernel : kKernels) {
    SCOPED_TRACE(::testing::Message() << "kernel " << int(kernel));
    DeviceArray<float> keys(out);
    DeviceArray<int32_t> rows(out);
    gpu::launch_tf32_select(resources.limits(), x.get(), c.nq, y.get() + first_row * c.dim, y_norms.get() + first_row,
                            ranged, c.dim, c.kc, true, nullptr, 0, splits, keys.get(), rows.get(), resources.stream(0),
                            kernel, first_row, b.get(), 1);
    ASSERT_EQ(cudaStreamSynchronize(resources.stream(0)), cudaSuccess);
    const std::vector<float> k = keys.to_host();
    const std::vector<int32_t> r = rows.to_host();
    for (int64_t q = 0; q < c.nq; ++q) {
      SCOPED_TRACE(::testing::Message() << "query " << q << " bound " << bounds[q]);
      std::vector<std::pair<double, int64_t>> got;
      for (int64_t e = 0; e < splits * c.kc; ++e) {
        const size_t i = size_t(q * splits * c.kc + e);
        if (r[i] == kNoRow) {
          ASSERT_EQ(k[i], bounds[q]) << "entry " << e;
          continue;
        }
        ASSERT_TRUE(r[i] >= first_row && r[i] < c.n) << r[i];
        ASSERT_LE(k[i], bounds[q]);
        got.emplace_back(k[i], r[i]);
      }
      std::sort(got.begin(), got.end());
      std::vector<std::pair<double, int64_t>> want;
      for (const auto& e : ref[q])
        if (e.first <= bounds[q] && int64_t(want.size()) < c.kc) want.push_back(e);
      ASSERT_GE(got.size(), want.size());
      got.resize(want.size());
      ASSERT_EQ(got, want);
    }
  }
}

TEST(GpuTf32Select, RefusesShapesItDoesNotTake) {
  QV_REQUIRE_GPU();
  const gpu::SelectLimits& limits = testing::shared_resources().limits();
  EXPECT_TRUE(gpu::tf32_select_fits(limits, 128, 32, 1000));
  EXPECT_FALSE(gpu::tf32_select_fits(limits, 132, 32, 1000));  // dim above 128
  EXPECT_FALSE(gpu::tf32_select_fits(limits, 33, 32, 1000));   // rows not 16-byte multiples
  EXPECT_FALSE(gpu::tf32_select_fits(limits, 32, 33, 1000));   // kc above 32
  EXPECT_FALSE(gpu::tf32_select_fits(limits, 32, 0, 1000));
  EXPECT_FALSE(gpu::tf32_select_fits(limits, 32, 10, 0));
}

}  // namespace
}  // namespace quiver
