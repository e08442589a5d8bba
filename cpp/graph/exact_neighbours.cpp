#include "cpp/graph/exact_neighbours.h"

#include "cpp/backend/gpu.h"
#include "cpp/core/context.h"
#include "cpp/core/error.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/knn.h"
#include "cpp/exact/knn_bf16.h"

namespace quiver {

ExactNeighbours::ExactNeighbours(Context& context, Metric metric, int64_t dim, int64_t n, const Input& data)
    : context_(context), metric_(metric), dim_(dim), n_(n), data_(data) {
  if (context.device() == DeviceKind::cuda) return;
  db_.x = data.data;
  db_.n = n;
  db_.dim = dim;
  db_.metric = metric;
  if (metric == Metric::l2) {
    norms_ = squared_norms(data.data, n, dim);
    db_.norms = norms_.data();
  }
  // Whole-graph searches have n queries; a pay-off for n of them is the common case.
  if (bf16_search_pays_off(n, n, dim)) bf16_ = std::make_unique<Bf16Database>(make_bf16_database(db_));
}

ExactNeighbours::~ExactNeighbours() = default;

void ExactNeighbours::copy_to_device() {
  try {
    device_copy_ = gpu::make_matrix(context_.gpu(), dim_);
    gpu::matrix_append(context_.gpu(), *device_copy_, n_, data_.data);
  } catch (const Error& e) {
    if (e.status() != Status::out_of_device_memory) throw;
    device_copy_.reset();  // each search streams the host rows instead
  }
}

const float* ExactNeighbours::rows() const { return device_copy_ ? gpu::matrix_data(*device_copy_) : data_.data; }

void ExactNeighbours::search(int64_t nq, const float* queries, int64_t k, float* distances, int64_t* ids) {
  if (context_.device() == DeviceKind::cuda) {
    // The device copy's search reads the norms and certificate statistics kept with it.
    if (device_copy_) {
      gpu::knn(context_.gpu(), metric_, *device_copy_, queries, nq, k, distances, ids);
    } else {
      gpu::knn(context_.gpu(), metric_, data_.data, nullptr, n_, dim_, queries, nq, k, distances, ids);
    }
    return;
  }
  const Queries q{queries, nq};
  if (bf16_ && bf16_search_pays_off(nq, n_, dim_)) {
    exact_knn_bf16(context_.pool(), db_, *bf16_, q, k, IdFilter{}, distances, ids);
  } else {
    exact_knn(context_.pool(), db_, q, k, IdFilter{}, distances, ids);
  }
}

void ExactNeighbours::search_rows(int64_t first, int64_t count, int64_t k, float* distances, int64_t* ids) {
  if (context_.device() == DeviceKind::cuda && !data_.on_device && !tried_copy_) {
    tried_copy_ = true;
    copy_to_device();
  }
  // With a device copy, the queries are read there too.
  search(count, rows() + first * dim_, k, distances, ids);
}

}  // namespace quiver
