#include "cpp/index/ivf_index.h"

#include <algorithm>

#include "cpp/core/error.h"
#include "cpp/index/ivf_flat.h"
#include "cpp/index/ivf_payload.h"
#include "cpp/index/ivf_pq.h"
#include "cpp/index/ivf_range.h"
#include "cpp/io/bytes.h"
#include "cpp/quantize/product_quantizer.h"

namespace quiver {

namespace {

// Vectors encoded at once by add: bounds the temporary rotated vectors and residuals.
constexpr int64_t kAddChunk = 65536;

}  // namespace

ListLayout list_layout(const IvfModel& model) {
  ListLayout layout;
  layout.dim = model.dim;
  layout.code_bytes = model.is_pq() ? model.pq.m : 0;
  layout.vectors = !model.is_pq() || model.keep_raw;
  layout.norms = !model.is_pq() && model.metric == Metric::l2;
  return layout;
}

IvfIndex::IvfIndex(Context& context, std::string descriptor, int64_t dim, Metric metric, const IvfSpec& spec)
    : Index(context, std::move(descriptor), dim, metric), spec_(spec) {}

void IvfIndex::install(std::unique_ptr<IvfModel> model, std::unique_ptr<InvertedLists> lists) {
  std::vector<float> tables;
  if (model->is_pq()) tables = make_pq_list_tables(context().pool(), *model);
  model_ = std::move(model);
  lists_ = std::move(lists);
  list_tables_.swap(tables);
}

void IvfIndex::do_train(int64_t n, const float* x) {
  if (count() > 0)
    fail(Status::invalid_argument, "the index (", descriptor(), ") is trained and holds ", count(),
         " vectors, whose codes belong to its model: remove them, or create a new index, to train again");
  auto model = std::make_unique<IvfModel>(train_ivf_model(context(), spec_, metric(), dim(), n, x, progress()));
  auto lists = std::make_unique<InvertedLists>(model->nlist, list_layout(*model));
  install(std::move(model), std::move(lists));
}

void IvfIndex::do_add(int64_t n, const float* x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* new_ids = ids_.check_new(n, ids, assigned);
  const IvfModel& model = *model_;
  ThreadPool& pool = context().pool();
  std::vector<int64_t> lists(static_cast<size_t>(n));
  std::vector<uint8_t> codes(static_cast<size_t>(model.is_pq() ? n * model.pq.m : 0));
  std::vector<float> rotated, residuals;
  for (int64_t c0 = 0; c0 < n; c0 += kAddChunk) {
    const int64_t nc = std::min(kAddChunk, n - c0);
    const float* xr = rotate(model, pool, nc, x + c0 * dim(), rotated);
    assign_lists(model, pool, nc, xr, &lists[c0]);
    if (!model.is_pq()) continue;
    residuals.resize(static_cast<size_t>(nc * dim()));
    for (int64_t i = 0; i < nc; ++i) {
      const float* centroid = model.centroids.data() + lists[c0 + i] * dim();
      for (int64_t d = 0; d < dim(); ++d) residuals[i * dim() + d] = xr[i * dim() + d] - centroid[d];
    }
    pq_encode(model.pq, pool, nc, residuals.data(), &codes[c0 * model.pq.m]);
  }
  // IVF-Flat has no rotation (ivf_spec.h), so its codes are x; IVF-PQ keeps x itself for Refine.
  const float* vectors = !model.is_pq() || model.keep_raw ? x : nullptr;
  ids_.insert(n, new_ids, lists.data());
  try {
    lists_->append(n, lists.data(), new_ids, codes.data(), vectors);
  } catch (...) {
    std::vector<std::pair<int64_t, int64_t>> added(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) added[i] = {lists[i], new_ids[i]};
    ids_.erase(added);
    throw;
  }
}

void IvfIndex::do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                         float* distances, int64_t* ids) const {
  const int64_t nprobe = resolve_nprobe(options.nprobe, model_->nlist);
  std::vector<float> rotated;
  const float* xr = rotate(*model_, context().pool(), nq, queries, rotated);
  if (spec_.is_pq()) {
    const int64_t refine_k = spec_.refine ? refine_candidates(options.refine_factor, k) : 0;
    ivf_pq_search(context().pool(), *model_, *lists_, list_tables_, nq, xr, queries, k, nprobe, refine_k,
                  options.filter, distances, ids);
  } else {
    ivf_flat_search(context().pool(), *model_, *lists_, nq, xr, k, nprobe, options.filter, distances, ids);
  }
}

RangeResult IvfIndex::do_range_search(int64_t nq, const float* queries, float radius,
                                      const SearchOptions& options) const {
  const int64_t nprobe = resolve_nprobe(options.nprobe, model_->nlist);
  std::vector<float> rotated;
  const float* xr = rotate(*model_, context().pool(), nq, queries, rotated);
  return ivf_range_search(context().pool(), *model_, *lists_, list_tables_, nq, xr, queries, radius, nprobe,
                          options.filter);
}

int64_t IvfIndex::do_remove(int64_t n, const int64_t* ids) {
  if (!is_trained()) return 0;
  const std::vector<std::pair<int64_t, int64_t>> found = ids_.present(n, ids);
  if (found.empty()) return 0;
  lists_->remove(found);
  ids_.erase(found);
  return static_cast<int64_t>(found.size());
}

MemoryUse IvfIndex::memory() const {
  MemoryUse use;
  use.host_bytes = ids_.memory_bytes() + static_cast<int64_t>(list_tables_.capacity() * sizeof(float));
  if (model_) use.host_bytes += model_->memory_bytes() + lists_->memory_bytes();
  return use;
}

void IvfIndex::save_payload(ByteWriter& out) const {
  write_ivf_model(out, model_.get());
  if (!model_) return;
  for (int64_t l = 0; l < model_->nlist; ++l) {
    const InvertedList& list = (*lists_)[l];
    const void* codes = model_->is_pq() ? static_cast<const void*>(list.codes.data()) : list.vectors.data();
    write_ivf_list(out, *model_, list.size(), list.ids.data(), codes, list.vectors.data());
  }
}

void IvfIndex::load_payload(ByteReader& in, int64_t count) {
  std::unique_ptr<IvfModel> model = read_ivf_model(in, spec_, metric(), dim());
  if (!model) {
    if (count != 0) fail(Status::corrupt_data, "corrupt index: an untrained index with ", count, " vectors");
    return;
  }
  auto lists = std::make_unique<InvertedLists>(model->nlist, list_layout(*model));
  IvfIds ids;
  std::vector<int64_t> list_numbers;
  for (int64_t l = 0; l < model->nlist; ++l) {
    const StoredList stored = read_ivf_list(in, *model);
    if (lists->count() + stored.size() > count)
      fail(Status::corrupt_data, "corrupt index: the lists hold more than the ", count, " vectors of the header");
    ids.assign_list(l, stored.size(), stored.ids.data());
    list_numbers.assign(static_cast<size_t>(stored.size()), l);
    const float* vectors = model->is_pq() ? stored.raw.data() : stored.vectors.data();
    lists->append(stored.size(), list_numbers.data(), stored.ids.data(), stored.codes.data(), vectors);
  }
  ids.finish_loading();
  if (lists->count() != count)
    fail(Status::corrupt_data, "corrupt index: the lists hold ", lists->count(), " vectors, the header says ", count);
  install(std::move(model), std::move(lists));
  std::swap(ids_, ids);
}

}  // namespace quiver
