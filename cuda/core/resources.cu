#include "cuda/core/resources.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"

namespace quiver::gpu {

namespace {

// One distance tile (two are used, one per stream): up to 1 GiB keeps a 10 000-query search in few,
// large GEMMs (cuBLAS is far from its peak on narrow ones), but never more than 1/32 of the device,
// so the index keeps nearly all of it.
constexpr int64_t kMaxDefaultTileBytes = int64_t(1) << 30;
constexpr int64_t kDefaultTileFraction = 32;
// A host base's device copy goes in chunks of this many bytes, each searched once it is there (knn.cu):
// small next to a search's time (H200, 1M x 128 from pageable memory: a 16.6 ms copy beside a 19.7 ms
// search, 8 chunks), large enough for whole fused launches.
constexpr int64_t kDefaultUploadChunkBytes = int64_t(64) << 20;
// Each of the two pinned staging buffers: large enough that a DMA outlasts its fixed cost.
constexpr int64_t kDefaultStagingBytes = int64_t(8) << 20;
// cuBLAS workspace per handle (NVIDIA's recommendation for Hopper), ours so that GEMMs on the search
// path never allocate.
constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;
// Small tiles make tests exercise the tiling; below this a tile is too small to be useful.
constexpr int64_t kMinTileBytes = int64_t(64) << 10;

}  // namespace

Resources::Resources(const ResourcesOptions& options) : device_(options.device), pool_(options.device) {
  const int count = device_count();
  if (count == 0) fail(Status::no_device, unavailable_reason());
  require(options.device >= 0 && options.device < count, "device = ", options.device,
          " is outside 0 .. ", count - 1);
  require(options.tile_bytes == 0 || options.tile_bytes >= kMinTileBytes, "tile_bytes = ",
          options.tile_bytes, " is below ", kMinTileBytes);
  require(options.staging_bytes >= 0, "staging_bytes = ", options.staging_bytes, " is negative");
  require(options.stream_bytes >= 0, "stream_bytes = ", options.stream_bytes, " is negative");
  require(options.upload_chunk_bytes >= 0, "upload_chunk_bytes = ", options.upload_chunk_bytes, " is negative");
  stream_bytes_ = options.stream_bytes;
  upload_chunk_bytes_ = options.upload_chunk_bytes > 0 ? options.upload_chunk_bytes : kDefaultUploadChunkBytes;
  DeviceScope scope(device_);
  try {
    size_t free_bytes = 0, total_bytes = 0;
    QV_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    tile_bytes_ = options.tile_bytes > 0
                      ? options.tile_bytes
                      : std::max(kMinTileBytes, std::min(kMaxDefaultTileBytes, int64_t(total_bytes) / kDefaultTileFraction));
    QV_CUDA_CHECK(cudaDeviceGetAttribute(&limits_.sm_count, cudaDevAttrMultiProcessorCount, device_));
    QV_CUDA_CHECK(cudaDeviceGetAttribute(&limits_.max_shared_bytes,
                                         cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
    int major = 0, minor = 0;
    QV_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_));
    QV_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_));
    limits_.compute_capability = 10 * major + minor;
    for (int i = 0; i < kStreams; ++i) {
      // Blocking streams: they wait for work the caller queued on the legacy default stream, so
      // device inputs written there are complete before a call reads them.
      QV_CUDA_CHECK(cudaStreamCreateWithFlags(&streams_[i], cudaStreamDefault));
    }
    for (int i = 0; i < kComputeStreams; ++i) {
      QV_CUBLAS_CHECK(cublasCreate(&blas_[i]));
      QV_CUBLAS_CHECK(cublasSetStream(blas_[i], streams_[i]));
      QV_CUDA_CHECK(cudaMalloc(&blas_workspace_[i], kBlasWorkspaceBytes));
      QV_CUBLAS_CHECK(cublasSetWorkspace(blas_[i], blas_workspace_[i], kBlasWorkspaceBytes));
      // Plain FP32 (no TF32): exact search must match a float reference.
      QV_CUBLAS_CHECK(cublasSetMathMode(blas_[i], CUBLAS_DEFAULT_MATH));
    }
    for (int i = 0; i < kEvents; ++i)
      QV_CUDA_CHECK(cudaEventCreateWithFlags(&events_[i], cudaEventDisableTiming));
    staging_ = new HostStaging(static_cast<size_t>(options.staging_bytes > 0 ? options.staging_bytes
                                                                             : kDefaultStagingBytes));
  } catch (...) {
    release();
    throw;
  }
}

Resources::~Resources() {
  DeviceScopeNoThrow scope(device_);
  release();
}

void Resources::release() noexcept {
  for (int i = 0; i < kStreams; ++i)
    if (streams_[i] != nullptr) cudaStreamSynchronize(streams_[i]);
  delete staging_;
  staging_ = nullptr;
  pool_.trim();
  for (int i = 0; i < kEvents; ++i) {
    if (events_[i] != nullptr) cudaEventDestroy(events_[i]);
    events_[i] = nullptr;
  }
  for (int i = 0; i < kComputeStreams; ++i) {
    if (blas_[i] != nullptr) cublasDestroy(blas_[i]);
    if (blas_workspace_[i] != nullptr) cudaFree(blas_workspace_[i]);
    blas_[i] = nullptr;
    blas_workspace_[i] = nullptr;
  }
  for (int i = 0; i < kStreams; ++i) {
    if (streams_[i] != nullptr) cudaStreamDestroy(streams_[i]);
    streams_[i] = nullptr;
  }
}

Session::Session(Resources& resources)
    : resources_(resources), lock_(resources.mutex()), device_(resources.device()) {}

void Session::finish() {
  for (int i = 0; i < Resources::kStreams; ++i) QV_CUDA_CHECK(cudaStreamSynchronize(resources_.stream(i)));
  finished_ = true;
}

Session::~Session() {
  if (!finished_) {
    for (int i = 0; i < Resources::kStreams; ++i) cudaStreamSynchronize(resources_.stream(i));
    cudaGetLastError();
  }
}

// ---- gpu.h ----------------------------------------------------------------------------------------

Resources* create_resources(const ResourcesOptions& options) { return new Resources(options); }

void destroy_resources(Resources* resources) noexcept { delete resources; }

DeviceMemoryStats memory_stats(Resources& resources) {
  const PoolStats s = resources.pool().stats();
  DeviceMemoryStats out;
  out.in_use_bytes = s.in_use_bytes;
  out.cached_bytes = s.cached_bytes;
  out.peak_bytes = s.peak_bytes;
  out.device_allocations = s.device_allocations;
  return out;
}

void release_cached_memory(Resources& resources) {
  Session session(resources);
  resources.pool().trim();
  session.finish();
}

}  // namespace quiver::gpu
