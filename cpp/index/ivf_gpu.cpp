#include "cpp/index/ivf_gpu.h"

#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"
#include "cpp/index/ivf_index.h"
#include "cpp/index/ivf_lists.h"
#include "cpp/index/ivf_payload.h"
#include "cpp/index/ivf_range.h"
#include "cpp/io/bytes.h"

namespace quiver {

namespace {

// The most lists the device's coarse selection probes (gpu_ivf.h's k bound), short of all of them.
constexpr int64_t kMaxDeviceProbes = 2048;

}  // namespace

GpuIvfIndex::GpuIvfIndex(Context& context, std::string descriptor, int64_t dim, Metric metric,
                         const IvfSpec& spec)
    : Index(context, std::move(descriptor), dim, metric), spec_(spec) {}

void GpuIvfIndex::do_train(int64_t n, const float* x) {
  if (count() > 0)
    fail(Status::invalid_argument, "the index (", descriptor(), ") is trained and holds ", count(),
         " vectors, whose codes belong to its model: remove them, or create a new index, to train again");
  std::vector<float> host;
  if (n > 0 && gpu::is_device_pointer(x)) {
    host.resize(static_cast<size_t>(n * dim()));
    gpu::copy_memory(context().gpu(), host.data(), x, n * dim() * static_cast<int64_t>(sizeof(float)));
    check_vectors("x", host.data(), n, dim(), false);
    x = host.data();
  }
  auto model = std::make_unique<IvfModel>(train_ivf_model(context(), spec_, metric(), dim(), n, x, progress()));
  gpu::IvfDevicePtr ivf = gpu::make_ivf(context().gpu(), model_view(*model, spec_.host_ids));
  model_ = std::move(model);
  ivf_ = std::move(ivf);
}

void GpuIvfIndex::do_add(int64_t n, const float* x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* new_ids = ids_.check_new(n, ids, assigned);
  std::vector<int64_t> lists(static_cast<size_t>(n));
  gpu::ivf_add(context().gpu(), *ivf_, n, x, new_ids, lists.data());  // all or nothing
  try {
    ids_.insert(n, new_ids, lists.data());
  } catch (...) {
    gpu::ivf_remove(context().gpu(), *ivf_, n, new_ids);
    throw;
  }
}

void GpuIvfIndex::do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                            float* distances, int64_t* ids) const {
  gpu::IvfSearchOptions o;
  o.nprobe = resolve_nprobe(options.nprobe, model_->nlist);
  o.filter_bits = options.filter.bits;
  o.filter_nbits = options.filter.nbits;
  o.mode = options.compute_mode;
  o.refine_k = spec_.refine ? refine_candidates(options.refine_factor, k) : 0;
  o.rows_done = options.rows_done;
  o.check_rows = options.check_rows;
  gpu::ivf_search(context().gpu(), *ivf_, nq, queries, k, o, distances, ids);
}

void GpuIvfIndex::read_device_list(int64_t list, StoredList& stored) const {
  const IvfModel& model = *model_;
  const int64_t size = gpu::ivf_list_size(*ivf_, list);
  stored.ids.resize(static_cast<size_t>(size));
  stored.codes.resize(static_cast<size_t>(model.is_pq() ? size * model.pq.m : 0));
  stored.vectors.resize(static_cast<size_t>(model.is_pq() ? 0 : size * model.dim));
  stored.raw.resize(static_cast<size_t>(model.keep_raw ? size * model.dim : 0));
  if (size == 0) return;
  uint8_t* codes = model.is_pq() ? stored.codes.data() : reinterpret_cast<uint8_t*>(stored.vectors.data());
  gpu::ivf_list_read(context().gpu(), *ivf_, list, codes, model.keep_raw ? stored.raw.data() : nullptr,
                     stored.ids.data());
}

RangeResult GpuIvfIndex::do_range_search(int64_t nq, const float* queries, float radius,
                                         const SearchOptions& options) const {
  const int64_t nprobe = resolve_nprobe(options.nprobe, model_->nlist);
  const IvfModel& model = *model_;
  if (nprobe <= kMaxDeviceProbes || nprobe == model.nlist) {
    gpu::IvfSearchOptions o;
    o.nprobe = nprobe;
    o.filter_bits = options.filter.bits;
    o.filter_nbits = options.filter.nbits;
    gpu::IvfRangeHits hits =
        gpu::ivf_range_search(context().gpu(), *ivf_, nq, queries, radius, o, options.max_range_results);
    RangeResult result;
    result.lims = std::move(hits.lims);
    result.ids = std::move(hits.ids);
    result.distances = std::move(hits.distances);
    return result;
  }
  // More probes than the device's coarse selection takes (and not every list): the CPU, over host
  // copies of the lists.
  InvertedLists lists(model.nlist, list_layout(model));
  StoredList stored;
  std::vector<int64_t> list_numbers;
  for (int64_t l = 0; l < model.nlist; ++l) {
    read_device_list(l, stored);
    if (stored.size() == 0) continue;
    list_numbers.assign(static_cast<size_t>(stored.size()), l);
    lists.append(stored.size(), list_numbers.data(), stored.ids.data(), stored.codes.data(),
                 model.is_pq() ? stored.raw.data() : stored.vectors.data());
  }
  std::vector<float> rotated;
  const float* xr = rotate(model, context().pool(), nq, queries, rotated);
  // Direct PQ tables: precomputing every list's would cost more than this one search.
  return ivf_range_search(context().pool(), model, lists, {}, nq, xr, queries, radius, nprobe, options.filter);
}

int64_t GpuIvfIndex::do_remove(int64_t n, const int64_t* ids) {
  if (!is_trained()) return 0;
  const std::vector<std::pair<int64_t, int64_t>> found = ids_.present(n, ids);
  if (found.empty()) return 0;
  std::vector<int64_t> present(found.size());
  for (size_t i = 0; i < found.size(); ++i) present[i] = found[i].second;
  const int64_t removed =
      gpu::ivf_remove(context().gpu(), *ivf_, static_cast<int64_t>(present.size()), present.data());
  ids_.erase(found);
  if (removed != static_cast<int64_t>(found.size()))
    fail(Status::internal, "the GPU index removed ", removed, " of ", found.size(), " present ids");
  return removed;
}

MemoryUse GpuIvfIndex::memory() const {
  MemoryUse use;
  use.host_bytes = ids_.memory_bytes();
  if (model_) {
    const gpu::IvfMemory device = gpu::ivf_memory(*ivf_);
    use.host_bytes += model_->memory_bytes() + device.host_bytes;
    use.device_bytes = device.device_bytes;
  }
  return use;
}

void GpuIvfIndex::save_payload(ByteWriter& out) const {
  write_ivf_model(out, model_.get());
  if (!model_) return;
  const IvfModel& model = *model_;
  StoredList stored;
  for (int64_t l = 0; l < model.nlist; ++l) {
    read_device_list(l, stored);
    const void* codes = model.is_pq() ? static_cast<const void*>(stored.codes.data()) : stored.vectors.data();
    write_ivf_list(out, model, stored.size(), stored.ids.data(), codes, stored.raw.data());
  }
}

void GpuIvfIndex::load_payload(ByteReader& in, int64_t count) {
  std::unique_ptr<IvfModel> model = read_ivf_model(in, spec_, metric(), dim());
  if (!model) {
    if (count != 0) fail(Status::corrupt_data, "corrupt index: an untrained index with ", count, " vectors");
    return;
  }
  gpu::IvfDevicePtr ivf = gpu::make_ivf(context().gpu(), model_view(*model, spec_.host_ids));
  IvfIds ids;
  int64_t loaded = 0;
  for (int64_t l = 0; l < model->nlist; ++l) {
    const StoredList stored = read_ivf_list(in, *model);
    loaded += stored.size();
    if (loaded > count)
      fail(Status::corrupt_data, "corrupt index: the lists hold more than the ", count, " vectors of the header");
    ids.assign_list(l, stored.size(), stored.ids.data());
    if (stored.size() == 0) continue;
    const uint8_t* codes =
        model->is_pq() ? stored.codes.data() : reinterpret_cast<const uint8_t*>(stored.vectors.data());
    gpu::ivf_append_encoded(context().gpu(), *ivf, l, stored.size(), codes,
                            model->keep_raw ? stored.raw.data() : nullptr, stored.ids.data());
  }
  ids.finish_loading();
  if (loaded != count)
    fail(Status::corrupt_data, "corrupt index: the lists hold ", loaded, " vectors, the header says ", count);
  model_ = std::move(model);
  ivf_ = std::move(ivf);
  std::swap(ids_, ids);
}

}  // namespace quiver
