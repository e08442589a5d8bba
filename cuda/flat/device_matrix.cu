// gpu.h's DeviceMatrix: an index's vectors in device memory, with their squared norms and the exact
// search certificate's statistics of the rows (device_matrix.h).
#include <algorithm>
#include <mutex>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/fault_injection.h"
#include "cuda/core/resources.h"
#include "cuda/flat/certify.h"
#include "cuda/flat/device_matrix.h"
#include "cuda/flat/kernels.h"

namespace quiver::gpu {

// The 16-bit rows a matrix keeps (matrix_half_rows): capacity x dim values, and the certificate's
// statistics of them with the conversion's out-of-range flag (kBaseStatsCount + 1 words).
struct KeptHalfRows {
  std::mutex mutex;
  bool decided = false;  // by a search since the rows last changed; rows null: none
  __half* rows = nullptr;
  unsigned* stats = nullptr;

  void drop() noexcept {
    cudaFree(rows);
    cudaFree(stats);
    rows = nullptr;
    stats = nullptr;
    decided = false;
  }
};

// Storage is allocated with cudaMalloc, not from the pool: it lives as long as the index, and the
// pool is for the short-lived buffers of calls.
class DeviceMatrix {
 public:
  // The statistics' storage is the caller's (zeroed), owned from here on.
  DeviceMatrix(int device, int64_t dim, unsigned* stats) : device_(device), dim_(dim), stats_(stats) {}
  ~DeviceMatrix() {
    half_.drop();
    cudaFree(data_);
    cudaFree(norms_);
    cudaFree(stats_);
  }
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  int device() const { return device_; }
  int64_t dim() const { return dim_; }
  int64_t rows() const { return rows_; }
  int64_t capacity() const { return capacity_; }
  float* data() const { return data_; }
  float* norms() const { return norms_; }
  unsigned* stats() const { return stats_; }
  void set_rows(int64_t rows) { rows_ = rows; }
  // Searches keep it behind the const matrix they read.
  KeptHalfRows& half() const { return half_; }

  // Replaces the storage with new arrays of `capacity` rows (the caller copies what it keeps).
  void adopt(float* data, float* norms, int64_t capacity) {
    half_.drop();
    cudaFree(data_);
    cudaFree(norms_);
    data_ = data;
    norms_ = norms;
    capacity_ = capacity;
  }

 private:
  int device_;
  int64_t dim_;
  int64_t rows_ = 0;
  int64_t capacity_ = 0;
  float* data_ = nullptr;
  float* norms_ = nullptr;
  unsigned* stats_ = nullptr;  // kBaseStatsCount: upper bounds over every row appended
  mutable KeptHalfRows half_;
};

namespace {

// Growth factor of the capacity: appends in small batches cost amortised O(1) copies per row.
constexpr int64_t kGrowNumerator = 3;
constexpr int64_t kGrowDenominator = 2;
constexpr int64_t kMinCapacity = 1024;
// Arrays are allocated in whole 16-byte slots: the selection kernels copy norms (and keys) in 16-byte
// cp.async slots, which must lie inside an allocation even where only part of a slot is used.
constexpr int64_t kSlotFloats = 4;

// Bytes of 16-bit rows for `capacity` rows (whole 16-byte slots, as Storage's).
int64_t half_rows_bytes(int64_t capacity, int64_t dim) {
  return (capacity * dim * int64_t(sizeof(__half)) + 15) / 16 * 16;
}

// Device arrays for `rows` rows, freed unless released (all or nothing on allocation failure).
struct Storage {
  float* data = nullptr;
  float* norms = nullptr;
  Storage(int64_t rows, int64_t dim) {
    rows = (rows + kSlotFloats - 1) / kSlotFloats * kSlotFloats;
    check_injected_allocation_failure("stored vectors");
    try {
      QV_CUDA_CHECK(cudaMalloc(&data, size_t(rows) * size_t(dim) * sizeof(float)));
      QV_CUDA_CHECK(cudaMalloc(&norms, size_t(rows) * sizeof(float)));
    } catch (...) {
      cudaFree(data);
      throw;
    }
  }
  ~Storage() {
    cudaFree(data);
    cudaFree(norms);
  }
  void release() { data = norms = nullptr; }
};

void check_matrix(Resources& resources, const DeviceMatrix& matrix) {
  require(matrix.device() == resources.device(), "the matrix lives on device ", matrix.device(),
          ", the resources on device ", resources.device());
}

}  // namespace

DeviceMatrix* matrix_create(Resources& resources, int64_t dim) {
  require(dim >= 1, "dim = ", dim, " is not positive");
  DeviceScope device_scope(resources.device());
  unsigned* stats = nullptr;
  QV_CUDA_CHECK(cudaMalloc(&stats, kBaseStatsCount * sizeof(unsigned)));
  const cudaError_t zeroed = cudaMemset(stats, 0, kBaseStatsCount * sizeof(unsigned));
  if (zeroed != cudaSuccess) cudaFree(stats);
  QV_CUDA_CHECK(zeroed);
  try {
    return new DeviceMatrix(resources.device(), dim, stats);
  } catch (...) {
    cudaFree(stats);
    throw;
  }
}

void matrix_free(DeviceMatrix* matrix) noexcept {
  if (matrix == nullptr) return;
  DeviceScopeNoThrow scope(matrix->device());
  delete matrix;
}

void matrix_append(Resources& resources, DeviceMatrix& matrix, int64_t n, const float* x) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  require(n >= 0, "n = ", n, " is negative");
  require(n == 0 || x != nullptr, "x is null");
  check_matrix(resources, matrix);
  if (n == 0) return;
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  const int64_t dim = matrix.dim();
  const int64_t rows = matrix.rows();
  if (rows + n > matrix.capacity()) {
    const int64_t capacity =
        std::max({rows + n, matrix.capacity() * kGrowNumerator / kGrowDenominator, kMinCapacity});
    Storage fresh(capacity, dim);
    if (rows > 0) {
      QV_CUDA_CHECK(cudaMemcpyAsync(fresh.data, matrix.data(), size_t(rows * dim) * sizeof(float),
                                    cudaMemcpyDeviceToDevice, stream));
      QV_CUDA_CHECK(cudaMemcpyAsync(fresh.norms, matrix.norms(), size_t(rows) * sizeof(float),
                                    cudaMemcpyDeviceToDevice, stream));
    }
    QV_CUDA_CHECK(cudaStreamSynchronize(stream));
    matrix.adopt(fresh.data, fresh.norms, capacity);
    fresh.release();
  }
  // Rows beyond rows() are not part of the matrix until set_rows, so a failure here leaves it intact.
  float* tail = matrix.data() + rows * dim;
  copy_to_device(resources.staging(), resources.device(), tail, x, size_t(n * dim) * sizeof(float), stream);
  launch_row_norms(tail, n, dim, matrix.norms() + rows, stream);
  // Maxima: a failure after this leaves bounds over more rows than the matrix holds, still bounds.
  launch_base_stats(tail, n, dim, matrix.stats(), stream);
  // Kept 16-bit rows (the storage did not grow: adopt dropped them) take the new rows too. (No lock:
  // an append has the matrix alone.)
  KeptHalfRows& half = matrix.half();
  unsigned out_of_range = 0;
  if (half.rows != nullptr) {
    launch_half_rows(tail, n, dim, half.rows + rows * dim, half.stats, half.stats + kBaseStatsCount, stream);
    QV_CUDA_CHECK(cudaMemcpyAsync(&out_of_range, half.stats + kBaseStatsCount, sizeof(unsigned),
                                  cudaMemcpyDeviceToHost, stream));
  }
  session.finish();
  matrix.set_rows(rows + n);
  if (out_of_range != 0) {  // the matrix no longer takes them, until rows are removed
    half.drop();
    half.decided = true;
  }
}

void matrix_remove_rows(Resources& resources, DeviceMatrix& matrix, int64_t count, const int64_t* rows) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_matrix(resources, matrix);
  require(count >= 0 && count <= matrix.rows(), "count = ", count, " is outside 0 .. ", matrix.rows());
  require(count == 0 || rows != nullptr, "rows is null");
  for (int64_t i = 0; i < count; ++i) {
    require(rows[i] >= 0 && rows[i] < matrix.rows(), "rows[", i, "] = ", rows[i], " is outside 0 .. ",
            matrix.rows() - 1);
    require(i == 0 || rows[i] > rows[i - 1], "rows must be sorted ascending and distinct (rows[", i, "])");
  }
  if (count == 0) return;
  const int64_t kept = matrix.rows() - count;
  std::vector<int64_t> keep;
  keep.reserve(static_cast<size_t>(kept));
  for (int64_t r = 0, i = 0; r < matrix.rows(); ++r) {
    if (i < count && rows[i] == r) {
      ++i;
    } else {
      keep.push_back(r);
    }
  }
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  const int64_t capacity = std::max(kept, kMinCapacity);
  Storage fresh(capacity, matrix.dim());
  PoolBuffer<int64_t> keep_device(resources.pool(), kept);
  if (kept > 0) {
    copy_to_device(resources.staging(), resources.device(), keep_device.get(), keep.data(),
                   size_t(kept) * sizeof(int64_t), stream);
    launch_gather_rows(matrix.data(), matrix.dim(), keep_device.get(), kept, fresh.data, stream);
    launch_gather_rows(matrix.norms(), 1, keep_device.get(), kept, fresh.norms, stream);
  }
  session.finish();
  matrix.adopt(fresh.data, fresh.norms, capacity);
  fresh.release();
  matrix.set_rows(kept);
}

void matrix_read(Resources& resources, const DeviceMatrix& matrix, int64_t first, int64_t n, float* out) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_matrix(resources, matrix);
  require(first >= 0 && n >= 0 && first + n <= matrix.rows(), "rows [", first, ", ", first + n,
          ") are outside 0 .. ", matrix.rows());
  require(n == 0 || out != nullptr, "out is null");
  if (n == 0) return;
  Session session(resources);
  copy_from_device(resources.staging(), resources.device(), out, matrix.data() + first * matrix.dim(),
                   size_t(n * matrix.dim()) * sizeof(float), resources.stream(0));
  session.finish();
}

int64_t matrix_rows(const DeviceMatrix& matrix) { return matrix.rows(); }
int64_t matrix_dim(const DeviceMatrix& matrix) { return matrix.dim(); }
const float* matrix_data(const DeviceMatrix& matrix) { return matrix.rows() > 0 ? matrix.data() : nullptr; }
const float* matrix_norms(const DeviceMatrix& matrix) { return matrix.rows() > 0 ? matrix.norms() : nullptr; }
const unsigned* matrix_base_stats(const DeviceMatrix& matrix) { return matrix.stats(); }
int64_t matrix_device_bytes(const DeviceMatrix& matrix) {
  KeptHalfRows& half = matrix.half();
  std::lock_guard<std::mutex> lock(half.mutex);
  const int64_t half_bytes = half.rows != nullptr ? half_rows_bytes(matrix.capacity(), matrix.dim()) : 0;
  return matrix.capacity() * (matrix.dim() + 1) * int64_t(sizeof(float)) + half_bytes;
}

HalfRows matrix_half_rows(Resources& resources, const DeviceMatrix& matrix) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_matrix(resources, matrix);
  KeptHalfRows& half = matrix.half();
  std::lock_guard<std::mutex> lock(half.mutex);
  if (half.decided) return HalfRows{half.rows, half.stats};
  if (matrix.rows() == 0 || !half_rows_fit(matrix.dim())) return HalfRows{};
  // Decided from here on, with or without them, until the rows change: later calls ask no more.
  const int64_t bytes = half_rows_bytes(matrix.capacity(), matrix.dim());
  size_t free = 0, total = 0;
  QV_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (int64_t(free) < bytes + int64_t(total / 4)) {
    half.decided = true;
    return HalfRows{};
  }
  __half* rows = nullptr;
  unsigned* stats = nullptr;
  unsigned out_of_range = 0;
  try {
    check_injected_allocation_failure("16-bit rows");
    QV_CUDA_CHECK(cudaMalloc(&rows, size_t(bytes)));
    QV_CUDA_CHECK(cudaMalloc(&stats, (kBaseStatsCount + 1) * sizeof(unsigned)));
    Session session(resources);
    cudaStream_t stream = resources.stream(0);
    QV_CUDA_CHECK(cudaMemsetAsync(stats, 0, (kBaseStatsCount + 1) * sizeof(unsigned), stream));
    launch_half_rows(matrix.data(), matrix.rows(), matrix.dim(), rows, stats, stats + kBaseStatsCount, stream);
    QV_CUDA_CHECK(cudaMemcpyAsync(&out_of_range, stats + kBaseStatsCount, sizeof(unsigned), cudaMemcpyDeviceToHost,
                                  stream));
    session.finish();
  } catch (const Error& e) {
    cudaFree(rows);
    cudaFree(stats);
    if (e.status() != Status::out_of_device_memory) throw;
    half.decided = true;
    return HalfRows{};
  }
  half.decided = true;
  if (out_of_range != 0) {
    cudaFree(rows);
    cudaFree(stats);
    return HalfRows{};
  }
  half.rows = rows;
  half.stats = stats;
  return HalfRows{rows, stats};
}

}  // namespace quiver::gpu
