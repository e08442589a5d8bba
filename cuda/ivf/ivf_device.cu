// gpu_ivf.h: creating an IVF model on the device, and what can be read of it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "cpp/backend/gpu_ivf.h"
#include "cpp/core/error.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/flat/kernels.h"
#include "cuda/ivf/ivf_device.h"
#include "cuda/ivf/ivf_storage.h"

namespace quiver::gpu {

namespace {

template <typename T>
DeviceBuffer<T> upload(Resources& resources, const T* host, int64_t count) {
  DeviceBuffer<T> buffer(resources.pool(), count);
  if (count > 0)
    copy_to_device(resources.staging(), resources.device(), buffer.get(), host, size_t(count) * sizeof(T),
                   resources.stream(0));
  return buffer;
}

}  // namespace

void check_ivf_device(Resources& resources, const IvfDevice& ivf) {
  require(ivf.device == resources.device(), "the IVF index lives on device ", ivf.device, ", the resources on device ",
          resources.device());
}

IvfDevice* ivf_create(Resources& resources, const IvfModelView& model) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  require(model.metric == Metric::l2 || model.metric == Metric::inner_product || model.metric == Metric::cosine,
          "metric: ", static_cast<int32_t>(model.metric), " is not L2 or inner product");
  require(model.dim >= 1, "dim = ", model.dim, " is not positive");
  require(model.nlist >= 1, "nlist = ", model.nlist, " is not positive");
  require(model.nlist <= kMaxSlots, "nlist = ", model.nlist, " is too large");
  require(model.centroids != nullptr, "centroids is null");
  require(model.pq_m >= 0, "pq_m = ", model.pq_m, " is negative");
  if (model.pq_m > 0) {
    require(model.dim % model.pq_m == 0, "pq_m = ", model.pq_m, " does not divide dim = ", model.dim);
    require(model.pq_codebooks != nullptr, "pq_codebooks is null");
  }

  Session session(resources);
  auto ivf = std::make_unique<IvfDevice>();
  ivf->device = resources.device();
  ivf->metric = model.metric;
  ivf->dim = model.dim;
  ivf->nlist = model.nlist;
  ivf->pq_m = model.pq_m;
  ivf->dsub = model.pq_m > 0 ? model.dim / model.pq_m : 0;
  ivf->keep_raw = model.keep_raw;
  ivf->ids_on_host = model.ids_on_host;
  ivf->rotated = model.rotation != nullptr;
  ivf->code_bytes = model.pq_m > 0 ? model.pq_m : model.dim * int64_t(sizeof(float));
  ivf->code_stride = model.pq_m > 0 ? (model.pq_m + 3) / 4 * 4 : ivf->code_bytes;
  ivf->raw_in_codes = model.pq_m == 0 && model.keep_raw && !ivf->rotated;

  cudaStream_t stream = resources.stream(0);
  ivf->centroids = upload(resources, model.centroids, model.nlist * model.dim);
  ivf->centroid_norms = DeviceBuffer<float>(resources.pool(), model.nlist);
  launch_row_norms(ivf->centroids.get(), model.nlist, model.dim, ivf->centroid_norms.get(), stream);
  if (ivf->rotated) ivf->rotation = upload(resources, model.rotation, model.dim * model.dim);
  if (model.pq_m > 0) ivf->codebooks = upload(resources, model.pq_codebooks, model.pq_m * kPqCentroids * ivf->dsub);
  ivf->offset.assign(size_t(model.nlist), 0);
  ivf->size.assign(size_t(model.nlist), 0);
  ivf->capacity.assign(size_t(model.nlist), 0);
  ivf->top_sizes.assign(size_t(model.nlist) + 1, 0);
  ivf->offset_dev = DeviceBuffer<int32_t>(resources.pool(), model.nlist);
  ivf->size_dev = DeviceBuffer<int32_t>(resources.pool(), model.nlist);
  QV_CUDA_CHECK(cudaMemsetAsync(ivf->offset_dev.get(), 0, size_t(model.nlist) * 4, stream));
  QV_CUDA_CHECK(cudaMemsetAsync(ivf->size_dev.get(), 0, size_t(model.nlist) * 4, stream));
  session.finish();
  return ivf.release();
}

void ivf_free(IvfDevice* ivf) noexcept {
  if (ivf == nullptr) return;
  DeviceScopeNoThrow scope(ivf->device);
  delete ivf;
}

int64_t ivf_code_bytes(const IvfDevice& ivf) { return ivf.code_bytes; }

int64_t ivf_count(const IvfDevice& ivf) { return ivf.count; }

int64_t ivf_list_size(const IvfDevice& ivf, int64_t list) {
  require(list >= 0 && list < ivf.nlist, "list = ", list, " is outside 0 .. ", ivf.nlist - 1);
  return ivf.size[size_t(list)];
}

void ivf_list_read(Resources& resources, const IvfDevice& ivf, int64_t list, uint8_t* codes, float* raw,
                   int64_t* ids) {
  DeviceScope device_scope(resources.device());  // the context's device, whatever the caller's
  check_ivf_device(resources, ivf);
  require(list >= 0 && list < ivf.nlist, "list = ", list, " is outside 0 .. ", ivf.nlist - 1);
  require(raw == nullptr || ivf.keep_raw, "raw: this index keeps no raw vectors");
  const int64_t size = ivf.size[size_t(list)];
  const int64_t first = ivf.offset[size_t(list)];
  if (size == 0) return;
  if (ids != nullptr) std::copy_n(ivf.host_ids.begin() + first, size, ids);
  if (codes == nullptr && raw == nullptr) return;
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  if (codes != nullptr) {
    if (ivf.code_stride == ivf.code_bytes) {
      copy_from_device(resources.staging(), resources.device(), codes, ivf.arena.codes.get() + first * ivf.code_stride,
                       size_t(size * ivf.code_stride), stream);
    } else {
      std::vector<uint8_t> strided(size_t(size * ivf.code_stride));
      copy_from_device(resources.staging(), resources.device(), strided.data(),
                       ivf.arena.codes.get() + first * ivf.code_stride, strided.size(), stream);
      for (int64_t i = 0; i < size; ++i)
        std::memcpy(codes + i * ivf.code_bytes, strided.data() + i * ivf.code_stride, size_t(ivf.code_bytes));
    }
  }
  if (raw != nullptr)
    copy_from_device(resources.staging(), resources.device(), raw, ivf.raw_vectors() + first * ivf.dim,
                     size_t(size * ivf.dim) * sizeof(float), stream);
  session.finish();
}

IvfMemory ivf_memory(const IvfDevice& ivf) {
  IvfMemory m;
  m.device_bytes = ivf.centroids.bytes() + ivf.centroid_norms.bytes() + ivf.rotation.bytes() + ivf.codebooks.bytes() + ivf.offset_dev.bytes() + ivf.size_dev.bytes() + ivf.arena.codes.bytes() +
                   ivf.arena.raw.bytes() + ivf.arena.norms.bytes() + ivf.arena.ids.bytes();
  m.host_bytes = int64_t(sizeof(IvfDevice)) +
                 int64_t(ivf.host_ids.capacity() * sizeof(int64_t)) +
                 int64_t((ivf.offset.capacity() + ivf.size.capacity() + ivf.capacity.capacity() +
                          ivf.top_sizes.capacity()) * sizeof(int64_t));
  return m;
}

}  // namespace quiver::gpu
