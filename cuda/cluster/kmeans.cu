// k-means on the GPU (gpu.h's kmeans): Lloyd's iterations as the CPU's quiver::kmeans runs them (same
// seeded sample of the training points, same seeds, same splitting of empty clusters), with the
// assignment done by the exact search with k = 1 (GEMM + the fused selection, the paper's §6.2) and
// the centroid update on the device.
//
// The update is deterministic: points are summed in double, in a fixed number of slices of
// consecutive points, each slice by one block in point order, and the slices are added in order. No
// atomics, so a seed gives the same centroids on every run of a device.
#include <algorithm>
#include <numeric>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cpp/cluster/kmeans_steps.h"
#include "cpp/core/random.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/kernels.h"

namespace quiver::gpu {

namespace {

// Slices of the update: enough blocks to use the device, bounded by the memory of their partial sums.
constexpr int64_t kMaxSlices = 256;
constexpr int64_t kSliceBudgetBytes = int64_t(256) << 20;
constexpr int kUpdateThreads = 128;

// Block s sums the points of slice s, in order, into sums[s][label][d] (double) and counts[s][label].
__global__ void slice_sums_kernel(const float* x, int64_t n, int64_t dim, const int64_t* labels, int64_t slices,
                                  int64_t k, double* sums, int64_t* counts) {
  const int64_t s = blockIdx.x;
  const int64_t begin = n * s / slices, end = n * (s + 1) / slices;
  double* slice_sums = sums + s * k * dim;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t c = labels[i];
    if (threadIdx.x == 0) ++counts[s * k + c];
    for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) slice_sums[c * dim + d] += double(x[i * dim + d]);
  }
}

// centroid[c][d] = sum over slices (in order) / count; clusters without points keep their centroid.
__global__ void means_kernel(const double* sums, const int64_t* slice_counts, int64_t slices, int64_t k,
                             int64_t dim, float* centroids, int64_t* counts) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < k * dim; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i / dim;
    int64_t total = 0;
    double sum = 0;
    for (int64_t s = 0; s < slices; ++s) {
      total += slice_counts[s * k + c];
      sum += sums[s * k * dim + i];
    }
    if (total > 0) centroids[i] = float(sum / double(total));
    if (i % dim == 0) counts[c] = total;
  }
}

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
  const int64_t slices = std::clamp<int64_t>(kSliceBudgetBytes / (k * dim * int64_t(sizeof(double))), 1,
                                             std::min(kMaxSlices, n_train));
  PoolBuffer<int64_t> labels(pool, n_train);
  PoolBuffer<float> distances(pool, n_train);
  PoolBuffer<double> sums(pool, slices * k * dim);
  PoolBuffer<int64_t> slice_counts(pool, slices * k);
  PoolBuffer<int64_t> counts_dev(pool, k);
  std::vector<int64_t> counts(static_cast<size_t>(k));
  std::vector<float> host_centroids;
  for (int64_t it = 0; it < options.iterations; ++it) {
    knn(resources, Metric::l2, c_dev.get(), nullptr, k, dim, train, n_train, 1, distances.get(), labels.get());
    Session session(resources);
    cudaStream_t stream = resources.stream(0);
    QV_CUDA_CHECK(cudaMemsetAsync(sums.get(), 0, size_t(slices * k * dim) * sizeof(double), stream));
    QV_CUDA_CHECK(cudaMemsetAsync(slice_counts.get(), 0, size_t(slices * k) * sizeof(int64_t), stream));
    slice_sums_kernel<<<static_cast<unsigned>(slices), kUpdateThreads, 0, stream>>>(
        train, n_train, dim, labels.get(), slices, k, sums.get(), slice_counts.get());
    QV_LAUNCH_CHECK("slice_sums_kernel");
    const int64_t blocks = std::clamp<int64_t>((k * dim + 255) / 256, 1, 65535);
    means_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(sums.get(), slice_counts.get(), slices, k, dim,
                                                                    c_dev.get(), counts_dev.get());
    QV_LAUNCH_CHECK("means_kernel");
    copy_from_device(resources.staging(), device, counts.data(), counts_dev.get(), size_t(k) * sizeof(int64_t), stream);
    if (std::find(counts.begin(), counts.end(), int64_t{0}) != counts.end()) {
      host_centroids.resize(static_cast<size_t>(k * dim));
      copy_from_device(resources.staging(), device, host_centroids.data(), c_dev.get(),
                       host_centroids.size() * sizeof(float), stream);
      split_empty(dim, k, counts, host_centroids.data(), random);
      copy_to_device(resources.staging(), device, c_dev.get(), host_centroids.data(),
                     host_centroids.size() * sizeof(float), stream);
    }
    session.finish();
  }

  // ---- every point's final assignment, the objective, the outputs ----
  PoolBuffer<float> final_distances(pool, n);
  PoolBuffer<int64_t> final_labels;
  int64_t* labels_out = assignments;
  if (labels_out == nullptr) {
    final_labels = PoolBuffer<int64_t>(pool, n);
    labels_out = final_labels.get();
  }
  knn(resources, Metric::l2, c_dev.get(), nullptr, k, dim, x, n, 1, final_distances.get(), labels_out);
  std::vector<float> host_distances(static_cast<size_t>(n));
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  copy_from_device(resources.staging(), device, host_distances.data(), final_distances.get(),
                   size_t(n) * sizeof(float), stream);
  copy_from_device(resources.staging(), device, centroids, c_dev.get(), size_t(k * dim) * sizeof(float), stream);
  session.finish();
  KmeansResult result;
  for (float d : host_distances) result.objective += d;
  return result;
}

}  // namespace quiver::gpu
