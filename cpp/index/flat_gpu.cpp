#include "cpp/index/flat_gpu.h"

#include <algorithm>

#include "cpp/backend/gpu_range.h"
#include "cpp/index/flat_payload.h"

namespace quiver {

namespace {

// Results one task of rows_to_ids translates.
constexpr int64_t kTranslatedPerTask = int64_t{1} << 16;

// The backend filters row numbers: an id filter as it is when ids are row numbers, else translated
// into `storage` (one bit per row).
gpu::RowFilter row_filter(const IdFilter& filter, const IdMap& ids, std::vector<uint8_t>& storage) {
  if (filter.bits == nullptr) return {};
  if (ids.is_identity()) return {filter.bits, filter.nbits};
  storage = ids.row_filter_bits(filter);
  return {storage.data(), ids.size()};
}

}  // namespace

GpuFlatIndex::GpuFlatIndex(Context& context, std::string descriptor, int64_t dim, Metric metric)
    : Index(context, std::move(descriptor), dim, metric),
      matrix_(gpu::make_matrix(context.gpu(), dim)) {}

void GpuFlatIndex::do_add(int64_t n, const float* x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* new_ids = ids_.check_new(n, ids, assigned);
  const int64_t first_row = count();
  gpu::matrix_append(context().gpu(), *matrix_, n, x);  // all or nothing
  try {
    ids_.append(n, new_ids);
    device_ids_.reset();
  } catch (...) {
    std::vector<int64_t> added(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) added[i] = first_row + i;
    gpu::matrix_remove_rows(context().gpu(), *matrix_, n, added.data());
    throw;
  }
}

void GpuFlatIndex::do_search(int64_t nq, const float* queries, int64_t k,
                             const SearchOptions& options, float* distances, int64_t* ids) const {
  gpu::Resources& resources = context().gpu();
  std::vector<uint8_t> row_bits;
  const gpu::RowFilter rows = row_filter(options.filter, ids_, row_bits);
  gpu::knn(resources, metric(), *matrix_, queries, nq, k, distances, ids, rows, options.compute_mode);
  if (ids_.is_identity()) return;
  // Row numbers become ids where they landed: on the pool's threads in host memory, on the device
  // in device memory.
  if (gpu::is_device_pointer(ids)) {
    gpu::rows_to_ids(resources, device_ids(), nq * k, ids);
  } else {
    rows_to_ids(nq * k, ids);
  }
}

const gpu::IdTable& GpuFlatIndex::device_ids() const {
  std::lock_guard<std::mutex> lock(device_ids_mutex_);
  if (!device_ids_) device_ids_ = gpu::make_id_table(context().gpu(), ids_.size(), ids_.data());
  return *device_ids_;
}

void GpuFlatIndex::rows_to_ids(int64_t n, int64_t* rows) const {
  const int64_t* ids = ids_.data();
  const int64_t tasks = (n + kTranslatedPerTask - 1) / kTranslatedPerTask;
  context().pool().parallel_for(tasks, [&](int64_t t) {
    const int64_t end = std::min(n, (t + 1) * kTranslatedPerTask);
    for (int64_t i = t * kTranslatedPerTask; i < end; ++i)
      if (rows[i] >= 0) rows[i] = ids[rows[i]];
  });
}

std::vector<float> GpuFlatIndex::host_vectors() const {
  std::vector<float> vectors(static_cast<size_t>(count() * dim()));
  if (count() > 0) gpu::matrix_read(context().gpu(), *matrix_, 0, count(), vectors.data());
  return vectors;
}

RangeResult GpuFlatIndex::do_range_search(int64_t nq, const float* queries, float radius,
                                          const SearchOptions& options) const {
  std::vector<uint8_t> row_bits;
  const gpu::RowFilter rows = row_filter(options.filter, ids_, row_bits);
  gpu::RangeHits hits = gpu::range_search(context().gpu(), metric(), gpu::matrix_data(*matrix_),
                                          gpu::matrix_norms(*matrix_), count(), dim(), queries, nq, radius, rows,
                                          options.max_range_results);
  RangeResult result;
  result.lims = std::move(hits.lims);
  result.ids = std::move(hits.rows);
  result.distances = std::move(hits.distances);
  if (!ids_.is_identity())
    for (int64_t& id : result.ids) id = ids_.ids()[id];
  return result;
}

int64_t GpuFlatIndex::do_remove(int64_t n, const int64_t* ids) {
  const std::vector<int64_t> rows = ids_.rows_of(n, ids);
  if (rows.empty()) return 0;
  IdMap kept = ids_.without_rows(rows);
  gpu::matrix_remove_rows(context().gpu(), *matrix_, static_cast<int64_t>(rows.size()), rows.data());
  std::swap(ids_, kept);
  device_ids_.reset();
  return static_cast<int64_t>(rows.size());
}

MemoryUse GpuFlatIndex::memory() const {
  MemoryUse use;
  use.host_bytes = ids_.memory_bytes();
  use.device_bytes = gpu::matrix_device_bytes(*matrix_);
  std::lock_guard<std::mutex> lock(device_ids_mutex_);
  if (device_ids_) use.device_bytes += gpu::id_table_bytes(*device_ids_);
  return use;
}

void GpuFlatIndex::save_payload(ByteWriter& out) const {
  write_flat_payload(out, ids_.data(), host_vectors().data(), count(), dim());
}

void GpuFlatIndex::load_payload(ByteReader& in, int64_t count) {
  FlatPayload payload = read_flat_payload(in, count, dim());
  IdMap loaded;
  loaded.assign(std::move(payload.ids));
  if (count > 0) gpu::matrix_append(context().gpu(), *matrix_, count, payload.vectors.data());
  std::swap(ids_, loaded);
  device_ids_.reset();
}

}  // namespace quiver
