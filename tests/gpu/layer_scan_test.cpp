// scan_layer (cuda/graph/layer_scan.h): the starts a small batch's walks take from the entry layer
// are the layer's exact best rows, ties to the smaller layer row, as rows of the graph.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "cpp/backend/gpu_graph.h"
#include "cuda/graph/layer_scan.h"
#include "gpu_testing.h"
#include "sanitizer_sizes.h"

namespace quiver::testing {
namespace {

struct Case {
  int64_t layer_rows, dim, starts, nq;
  bool l2;
};

// The starts best layer rows of each query (by exact value, ties to the smaller layer row), as graph
// rows; -1 past the layer's rows.
std::vector<int64_t> best_rows(bool l2, const std::vector<float>& layer, const std::vector<float>& q, int64_t dim,
                               int64_t starts, const std::vector<int32_t>& graph_rows) {
  const int64_t m = int64_t(layer.size()) / dim, nq = int64_t(q.size()) / dim;
  std::vector<int64_t> out(size_t(nq * starts), -1);
  for (int64_t i = 0; i < nq; ++i) {
    std::vector<std::pair<double, int64_t>> all;
    for (int64_t r = 0; r < m; ++r) {
      const double v = exact_value(l2, &q[i * dim], &layer[r * dim], dim);
      all.push_back({l2 ? v : -v, r});
    }
    std::sort(all.begin(), all.end());
    for (int64_t j = 0; j < starts && j < m; ++j) out[i * starts + j] = graph_rows[all[j].second];
  }
  return out;
}

TEST(GpuLayerScan, FindsTheLayersBestRowsTiesToTheSmallerRow) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  const Case cases[] = {{1, 3, 1, 1, true},      {5, 1, 8, 3, true},        {33, 20, 2, 7, true},
                        {100, 130, 3, 32, false}, {sized(4096, 300), 128, 2, 1, true},
                        {sized(1000, 97), 784, 8, 5, false}, {sized(4097, 257), 17, 2, 32, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "layer rows " << c.layer_rows << " dim " << c.dim << " starts " << c.starts
                                      << " nq " << c.nq << (c.l2 ? " L2" : " IP"));
    // Small integers: exact float sums in any order, so ties are exact and their order is testable.
    const int64_t n = 3 * c.layer_rows + 2;
    const std::vector<float> x = integer_vectors(n, c.dim, 11, 2), q = integer_vectors(c.nq, c.dim, 12, 2);
    std::vector<int32_t> ring(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) ring[size_t(r)] = int32_t((r + 1) % n);
    gpu::GraphDevicePtr graph = gpu::make_graph(resources, c.dim, c.l2 ? Metric::l2 : Metric::inner_product);
    const int32_t entry = 0;
    gpu::graph_upload(resources, *graph, n, x.data(), 1, ring.data(), nullptr, &entry, 1);
    // The layer: every third row of the graph, in reverse order (its rows are not the graph's).
    std::vector<int32_t> graph_rows, layer_ring;
    std::vector<float> layer;
    for (int64_t s = 0; s < c.layer_rows; ++s) {
      const int64_t r = 3 * (c.layer_rows - 1 - s) + 1;
      graph_rows.push_back(int32_t(r));
      layer.insert(layer.end(), x.begin() + r * c.dim, x.begin() + (r + 1) * c.dim);
      layer_ring.push_back(int32_t((s + 1) % c.layer_rows));
    }
    gpu::GraphLayer spec;
    spec.rows = c.layer_rows;
    spec.vectors = layer.data();
    spec.degree = 1;
    spec.adjacency = layer_ring.data();
    spec.graph_rows = graph_rows.data();
    spec.entries = &entry;
    spec.entry_count = 1;
    spec.width = gpu::kMaxLayerScanStarts;
    spec.starts = c.starts;
    gpu::graph_upload_layer(resources, *graph, spec);

    float* q_dev = nullptr;
    int64_t* out_dev = nullptr;
    ASSERT_EQ(cudaMalloc(&q_dev, q.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out_dev, size_t(c.nq * c.starts) * sizeof(int64_t)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(q_dev, q.data(), q.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    gpu::scan_layer(*graph->layer, c.starts, c.nq, q_dev, out_dev, resources.pool(), resources.stream(0));
    std::vector<int64_t> got(size_t(c.nq * c.starts));
    ASSERT_EQ(cudaStreamSynchronize(resources.stream(0)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got.data(), out_dev, got.size() * sizeof(int64_t), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(q_dev);
    cudaFree(out_dev);
    EXPECT_EQ(got, best_rows(c.l2, layer, q, c.dim, c.starts, graph_rows));
  }
}

TEST(GpuLayerScan, RejectsWhatItCannotScan) {
  QV_REQUIRE_GPU();
  gpu::Resources& resources = shared_resources();
  gpu::GraphDevicePtr graph = gpu::make_graph(resources, 4, Metric::l2);
  EXPECT_THROW(gpu::scan_layer(*graph, 2, 1, nullptr, nullptr, resources.pool(), resources.stream(0)), Error);
}

}  // namespace
}  // namespace quiver::testing
