#include "cpp/index/flat.h"

#include "cpp/distance/vectors.h"
#include "cpp/exact/knn.h"
#include "cpp/index/flat_payload.h"
#include "cpp/io/bytes.h"

namespace quiver {

FlatIndex::FlatIndex(Context& context, std::string descriptor, int64_t dim, Metric metric)
    : Index(context, std::move(descriptor), dim, metric) {}

void FlatIndex::do_add(int64_t n, const float* x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* new_ids = ids_.check_new(n, ids, assigned);
  const std::vector<float> new_norms = squared_norms(x, n, dim());
  // Reserve everything first so that nothing can fail once the index starts to change.
  vectors_.reserve(vectors_.size() + static_cast<size_t>(n * dim()));
  norms_.reserve(norms_.size() + static_cast<size_t>(n));
  ids_.append(n, new_ids);
  bf16_.reset();
  vectors_.insert(vectors_.end(), x, x + n * dim());
  norms_.insert(norms_.end(), new_norms.begin(), new_norms.end());
}

Database FlatIndex::database() const {
  Database db;
  db.x = vectors_.data();
  db.norms = norms_.data();
  db.n = count();
  db.dim = dim();
  db.ids = ids_.data();
  db.metric = metric();
  return db;
}

std::shared_ptr<const Bf16Database> FlatIndex::bf16_database() const {
  std::lock_guard<std::mutex> lock(bf16_mutex_);
  if (!bf16_) bf16_ = std::make_shared<const Bf16Database>(make_bf16_database(database()));
  return bf16_;
}

void FlatIndex::do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                          float* distances, int64_t* ids) const {
  const Queries q{queries, nq};
  if (bf16_search_pays_off(nq, count(), dim())) {
    exact_knn_bf16(context().pool(), database(), *bf16_database(), q, k, options.filter, distances, ids);
  } else {
    exact_knn(context().pool(), database(), q, k, options.filter, distances, ids);
  }
}

RangeResult FlatIndex::do_range_search(int64_t nq, const float* queries, float radius,
                                       const SearchOptions& options) const {
  return exact_range(context().pool(), database(), Queries{queries, nq}, radius, options.filter);
}

int64_t FlatIndex::do_remove(int64_t n, const int64_t* ids) {
  const std::vector<int64_t> rows = ids_.rows_of(n, ids);
  if (rows.empty()) return 0;
  IdMap kept_ids = ids_.without_rows(rows);
  std::vector<float> kept_vectors;
  std::vector<float> kept_norms;
  kept_vectors.reserve(vectors_.size() - rows.size() * static_cast<size_t>(dim()));
  kept_norms.reserve(norms_.size() - rows.size());
  size_t next = 0;
  for (int64_t r = 0; r < count(); ++r) {
    if (next < rows.size() && rows[next] == r) {
      ++next;
      continue;
    }
    kept_vectors.insert(kept_vectors.end(), vectors_.begin() + r * dim(), vectors_.begin() + (r + 1) * dim());
    kept_norms.push_back(norms_[r]);
  }
  vectors_.swap(kept_vectors);
  norms_.swap(kept_norms);
  std::swap(ids_, kept_ids);
  bf16_.reset();
  return static_cast<int64_t>(rows.size());
}

MemoryUse FlatIndex::memory() const {
  MemoryUse use;
  use.host_bytes = static_cast<int64_t>(vectors_.capacity() * sizeof(float) +
                                        norms_.capacity() * sizeof(float)) +
                   ids_.memory_bytes();
  std::lock_guard<std::mutex> lock(bf16_mutex_);
  if (bf16_)
    use.host_bytes += static_cast<int64_t>(bf16_->matrix.rows + kBf16PanelRows) * bf16_->matrix.pairs *
                          static_cast<int64_t>(sizeof(uint32_t)) +
                      static_cast<int64_t>((bf16_->residual.size() + bf16_->norm.size()) * sizeof(float));
  return use;
}

void FlatIndex::save_payload(ByteWriter& out) const {
  write_flat_payload(out, ids_.data(), vectors_.data(), count(), dim());
}

void FlatIndex::load_payload(ByteReader& in, int64_t count) {
  FlatPayload payload = read_flat_payload(in, count, dim());
  ids_.assign(std::move(payload.ids));
  norms_ = squared_norms(payload.vectors.data(), count, dim());
  vectors_ = std::move(payload.vectors);
}

}  // namespace quiver
