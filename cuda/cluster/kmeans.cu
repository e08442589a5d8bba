// k-means on the GPU (gpu.h's kmeans): Lloyd's iterations as the CPU's quiver::kmeans runs them (same
// seeded sample of the training points, same seeds, same splitting of empty clusters), with the
// assignment done by one kernel (GEMM fused with each point's nearest centroid, nearest_centroid.h;
// the paper's §6.2 with k = 1; the exact search's labels and distances) and the centroid update on the
// device. The final assignment of points left in host memory by a sample goes through the exact
// search (k = 1).
//
// The update is deterministic: the points are ordered by label (a stable radix sort: within a label,
// by point), each label's points are cut into chunks of kChunkPoints, one block sums a chunk in
// order (double, in registers), and a label's chunks are added in order. No floating-point atomics,
// so a seed gives the same centroids on every run of a device; no block waits on global memory
// between points, and a large cluster is spread over many blocks.
#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include <cub/device/device_radix_sort.cuh>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cpp/cluster/kmeans_steps.h"
#include "cpp/core/random.h"
#include "cuda/cluster/nearest_centroid.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/kernels.h"

namespace quiver::gpu {

namespace {

constexpr int64_t kChunkPoints = 256;
constexpr int kUpdateThreads = 128;
constexpr int kRowsInFlight = 4;

// keys[i] = labels[i], points[i] = i, and every label's count.
__global__ void label_keys_kernel(const int64_t* labels, int64_t n, int32_t* keys, int32_t* points,
                                  int32_t* counts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t c = static_cast<int32_t>(labels[i]);
    keys[i] = c;
    points[i] = static_cast<int32_t>(i);
    atomicAdd(counts + c, 1);  // integer addition: order does not matter
  }
}

// Block b sums the points sorted[chunk_begin[b] .. chunk_begin[b + 1]) in order into partial[b][d].
__global__ void chunk_sums_kernel(const float* x, int64_t dim, const int32_t* sorted, const int64_t* chunk_begin,
                                  double* partial) {
  const int64_t b = blockIdx.x, begin = chunk_begin[b], end = chunk_begin[b + 1];
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    double sum = 0;
    int64_t i = begin;
    for (; i + kRowsInFlight <= end; i += kRowsInFlight) {  // independent loads in flight, summed in order
      float v[kRowsInFlight];
#pragma unroll
      for (int r = 0; r < kRowsInFlight; ++r) v[r] = x[int64_t(sorted[i + r]) * dim + d];
#pragma unroll
      for (int r = 0; r < kRowsInFlight; ++r) sum += double(v[r]);
    }
    for (; i < end; ++i) sum += double(x[int64_t(sorted[i]) * dim + d]);
    partial[b * dim + d] = sum;
  }
}

// centroid[c][d] = the sum of label c's chunks (in order) / its count; labels without points keep
// their centroid.
__global__ void means_kernel(const double* partial, const int64_t* first_chunk, const int32_t* label_counts,
                             int64_t k, int64_t dim, float* centroids) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < k * dim; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i / dim, d = i - c * dim;
    double sum = 0;
    for (int64_t b = first_chunk[c]; b < first_chunk[c + 1]; ++b) sum += partial[b * dim + d];
    if (label_counts[c] > 0) centroids[i] = float(sum / double(label_counts[c]));
  }
}

// The chunks of every label, from the labels' counts: label c's points start at the sum of the
// earlier counts (the sorted order) and are cut every kChunkPoints; first_chunk[c] is its first chunk.
void plan_chunks(const std::vector<int32_t>& counts, std::vector<int64_t>* chunk_begin,
                 std::vector<int64_t>* first_chunk) {
  chunk_begin->clear();
  first_chunk->assign(counts.size() + 1, 0);
  int64_t start = 0;
  for (size_t c = 0; c < counts.size(); ++c) {
    (*first_chunk)[c] = int64_t(chunk_begin->size());
    for (int64_t p = 0; p < counts[c]; p += kChunkPoints) chunk_begin->push_back(start + p);
    start += counts[c];
  }
  (*first_chunk)[counts.size()] = int64_t(chunk_begin->size());
  chunk_begin->push_back(start);
}

// One Lloyd update of the centroids from the labels; the labels' counts in `counts`.
struct Update {
  // Chunks: at most n / kChunkPoints full ones, and one partial chunk a label.
  Update(Resources& resources, int64_t n, int64_t k, int64_t dim)
      : resources(resources),
        n(n),
        k(k),
        dim(dim),
        keys(resources.pool(), 2 * n),
        points(resources.pool(), 2 * n),
        label_counts(resources.pool(), k),
        first_chunk_dev(resources.pool(), k + 1),
        chunk_begin_dev(resources.pool(), n / kChunkPoints + k + 1),
        partial(resources.pool(), (n / kChunkPoints + k) * dim) {
    QV_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.get(), keys.get() + n, points.get(),
                                                  points.get() + n, n, 0, key_bits(), resources.stream(0)));
    sort_workspace = PoolBuffer<char>(resources.pool(), int64_t(std::max<size_t>(sort_bytes, 1)));
  }

  int key_bits() const {
    int bits = 1;
    while ((int64_t(1) << bits) < k) ++bits;
    return bits;
  }

  void run(const float* x, const int64_t* labels, float* centroids, std::vector<int64_t>* counts) {
    cudaStream_t stream = resources.stream(0);
    const int device = resources.device();
    QV_CUDA_CHECK(cudaMemsetAsync(label_counts.get(), 0, size_t(k) * sizeof(int32_t), stream));
    const int64_t blocks = std::clamp<int64_t>((n + 255) / 256, 1, 4096);
    label_keys_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(labels, n, keys.get(), points.get(),
                                                                        label_counts.get());
    QV_LAUNCH_CHECK("label_keys_kernel");
    QV_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_workspace.get(), sort_bytes, keys.get(), keys.get() + n,
                                                  points.get(), points.get() + n, n, 0, key_bits(), stream));
    std::vector<int32_t> host_counts(static_cast<size_t>(k));
    copy_from_device(resources.staging(), device, host_counts.data(), label_counts.get(), size_t(k) * 4, stream);
    std::vector<int64_t> chunk_begin, first_chunk;
    plan_chunks(host_counts, &chunk_begin, &first_chunk);
    const int64_t chunks = int64_t(chunk_begin.size()) - 1;
    copy_to_device(resources.staging(), device, chunk_begin_dev.get(), chunk_begin.data(),
                   chunk_begin.size() * sizeof(int64_t), stream);
    copy_to_device(resources.staging(), device, first_chunk_dev.get(), first_chunk.data(),
                   first_chunk.size() * sizeof(int64_t), stream);
    if (chunks > 0) {
      chunk_sums_kernel<<<static_cast<unsigned>(chunks), kUpdateThreads, 0, stream>>>(
          x, dim, points.get() + n, chunk_begin_dev.get(), partial.get());
      QV_LAUNCH_CHECK("chunk_sums_kernel");
    }
    const int64_t mean_blocks = std::clamp<int64_t>((k * dim + 255) / 256, 1, 65535);
    means_kernel<<<static_cast<unsigned>(mean_blocks), 256, 0, stream>>>(partial.get(), first_chunk_dev.get(),
                                                                         label_counts.get(), k, dim, centroids);
    QV_LAUNCH_CHECK("means_kernel");
    counts->assign(host_counts.begin(), host_counts.end());
  }

  Resources& resources;
  const int64_t n, k, dim;
  PoolBuffer<int32_t> keys, points;  // [0, n): unsorted; [n, 2n): sorted by label
  PoolBuffer<int32_t> label_counts;
  PoolBuffer<int64_t> first_chunk_dev, chunk_begin_dev;
  PoolBuffer<double> partial;
  size_t sort_bytes = 0;
  PoolBuffer<char> sort_workspace;
};

}  // namespace

KmeansResult kmeans(Resources& resources, int64_t dim, int64_t n, const float* x, int64_t k,
                    const KmeansOptions& options, float* centroids, int64_t* assignments) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  require(dim >= 1, "dim = ", dim, " is not positive");
  require(n >= 1, "n = ", n, " must be at least 1");
  require(k >= 1 && k <= n, "k = ", k, " must be in 1 .. n (", n, ")");
  require(x != nullptr && centroids != nullptr, "x and centroids must not be null");
  require(options.iterations >= 0, "iterations = ", options.iterations, " is negative");
  require(options.max_points_per_centroid >= 0, "max_points_per_centroid = ", options.max_points_per_centroid,
          " is negative");
  DevicePool& pool = resources.pool();
  const int device = resources.device();
  Random random(options.seed);

  // ---- the training points and the seeds, on the device ----
  const bool x_on_device = memory_kind(x, device) == MemoryKind::device;
  int64_t n_train = n;
  PoolBuffer<float> train_copy;
  const float* train = x;
  PoolBuffer<float> c_dev(pool, k * dim);
  {
    Session session(resources);
    cudaStream_t stream = resources.stream(0);
    if (options.max_points_per_centroid > 0 && n / k >= options.max_points_per_centroid) {
      n_train = k * options.max_points_per_centroid;
      const std::vector<int64_t> picked = sample_indices(n, n_train, random);
      train_copy = PoolBuffer<float>(pool, n_train * dim);
      if (x_on_device) {
        PoolBuffer<int64_t> rows(pool, n_train);
        copy_to_device(resources.staging(), device, rows.get(), picked.data(), size_t(n_train) * sizeof(int64_t), stream);
        launch_gather_rows(x, dim, rows.get(), n_train, train_copy.get(), stream);
        QV_CUDA_CHECK(cudaStreamSynchronize(stream));
      } else {
        std::vector<float> sample(static_cast<size_t>(n_train * dim));
        for (int64_t i = 0; i < n_train; ++i) std::copy_n(x + picked[i] * dim, dim, &sample[i * dim]);
        copy_to_device(resources.staging(), device, train_copy.get(), sample.data(), sample.size() * sizeof(float), stream);
      }
      train = train_copy.get();
    } else if (!x_on_device) {
      train_copy = PoolBuffer<float>(pool, n * dim);
      copy_to_device(resources.staging(), device, train_copy.get(), x, size_t(n * dim) * sizeof(float), stream);
      train = train_copy.get();
    }
    const std::vector<int64_t> seeds = sample_indices(n_train, k, random);
    PoolBuffer<int64_t> seed_rows(pool, k);
    copy_to_device(resources.staging(), device, seed_rows.get(), seeds.data(), size_t(k) * sizeof(int64_t), stream);
    launch_gather_rows(train, dim, seed_rows.get(), k, c_dev.get(), stream);
    session.finish();
  }

  // ---- Lloyd iterations ----
  require(n_train <= std::numeric_limits<int32_t>::max(), "k-means on the GPU trains on at most 2^31 - 1 points (",
          n_train, "): set max_points_per_centroid");
  PoolBuffer<int64_t> labels(pool, n_train);
  PoolBuffer<float> distances(pool, n_train);
  Update update(resources, n_train, k, dim);
  std::vector<int64_t> counts;
  std::vector<float> host_centroids;
  const Progress progress(options.progress, "k-means");
  PoolBuffer<float> centroid_norms(pool, k);
  PoolBuffer<int32_t> listed(pool, n + 1);  // n_train <= n
  // Every point's nearest centroid, for points on the device; on the session's stream 0.
  auto assign = [&](const float* points, int64_t count, float* nearest, int64_t* label) {
    cudaStream_t stream = resources.stream(0);
    launch_row_norms(c_dev.get(), k, dim, centroid_norms.get(), stream);
    launch_nearest_centroid(points, count, dim, c_dev.get(), centroid_norms.get(), k, nearest, label, listed.get(),
                            stream);
  };
  for (int64_t it = 0; it < options.iterations; ++it) {
    Session session(resources);
    cudaStream_t stream = resources.stream(0);
    assign(train, n_train, distances.get(), labels.get());
    update.run(train, labels.get(), c_dev.get(), &counts);
    if (std::find(counts.begin(), counts.end(), int64_t{0}) != counts.end()) {
      host_centroids.resize(static_cast<size_t>(k * dim));
      copy_from_device(resources.staging(), device, host_centroids.data(), c_dev.get(),
                       host_centroids.size() * sizeof(float), stream);
      split_empty(dim, k, counts, host_centroids.data(), random);
      copy_to_device(resources.staging(), device, c_dev.get(), host_centroids.data(),
                     host_centroids.size() * sizeof(float), stream);
    }
    session.finish();
    progress.report(double(it + 1) / double(options.iterations));
  }

  // ---- every point's final assignment, the objective, the outputs ----
  PoolBuffer<float> final_distances(pool, n);
  PoolBuffer<int64_t> final_labels;
  int64_t* labels_out = assignments;
  if (labels_out == nullptr || memory_kind(assignments, device) != MemoryKind::device) {
    final_labels = PoolBuffer<int64_t>(pool, n);
    labels_out = final_labels.get();
  }
  // The training points are every point (x itself or its device copy) unless they are a sample.
  const float* x_device = x_on_device ? x : n_train == n ? train : nullptr;
  if (x_device == nullptr)
    knn(resources, Metric::l2, c_dev.get(), nullptr, k, dim, x, n, 1, final_distances.get(), labels_out);
  std::vector<float> host_distances(static_cast<size_t>(n));
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  if (x_device != nullptr) assign(x_device, n, final_distances.get(), labels_out);
  copy_from_device(resources.staging(), device, host_distances.data(), final_distances.get(),
                   size_t(n) * sizeof(float), stream);
  copy_from_device(resources.staging(), device, centroids, c_dev.get(), size_t(k * dim) * sizeof(float), stream);
  if (assignments != nullptr && labels_out != assignments)
    copy_from_device(resources.staging(), device, assignments, labels_out, size_t(n) * sizeof(int64_t), stream);
  session.finish();
  KmeansResult result;
  for (float d : host_distances) result.objective += d;
  return result;
}

}  // namespace quiver::gpu
