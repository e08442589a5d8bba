#include "cpp/metric/metric_index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "cpp/core/error.h"
#include "cpp/core/prefetch.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/io/bytes.h"
#include "cpp/metric/list_of_clusters.h"
#include "cpp/metric/sss.h"

namespace quiver {

namespace {

// Queries one task of a range search's host passes takes: the pool's cost per task stays small
// beside the hits' (a few dozen a query at the smallest benchmark radius).
constexpr int64_t kQueriesPerTask = 64;
// L2 hits whose rows are prefetched ahead of the one recomputed: each reads a row the device chose,
// rarely in cache.
constexpr int64_t kPrefetchAhead = 4;
// The device's squared distances checked against the host's: the first hit of every this many queries.
constexpr int64_t kCheckedQueryStride = 64;

// task(q0, q1) for runs of kQueriesPerTask queries of 0 .. nq-1, on the pool.
void for_query_runs(ThreadPool& pool, int64_t nq, const std::function<void(int64_t, int64_t)>& task) {
  pool.parallel_for((nq + kQueriesPerTask - 1) / kQueriesPerTask, [&](int64_t t) {
    task(t * kQueriesPerTask, std::min(nq, (t + 1) * kQueriesPerTask));
  });
}

// Each query's kept hits (the first kept_lims[q + 1] - kept_lims[q] of its found_lims[q] ..
// found_lims[q + 1]) moved down to kept_lims[q] in both columns, the columns cut to the kept;
// serially, as the hits move over earlier queries' places. A run of queries that keep every hit
// moves at once.
void squeeze_kept_hits(const std::vector<int64_t>& found_lims, const std::vector<int64_t>& kept_lims,
                       ResultVector<int64_t>& rows, ResultVector<float>& distances) {
  const int64_t nq = static_cast<int64_t>(kept_lims.size()) - 1;
  auto keeps_all = [&](int64_t q) { return kept_lims[q + 1] - kept_lims[q] == found_lims[q + 1] - found_lims[q]; };
  for (int64_t q = 0; q < nq;) {
    int64_t end = q;
    while (end < nq && keeps_all(end)) ++end;
    end = std::min(end + 1, nq);  // the run's last query may drop hits: its kept ones are its first
    const int64_t to = kept_lims[q], from = found_lims[q], count = kept_lims[end] - kept_lims[q];
    if (to != from) {
      std::memmove(rows.data() + to, rows.data() + from, static_cast<size_t>(count) * sizeof(int64_t));
      std::memmove(distances.data() + to, distances.data() + from, static_cast<size_t>(count) * sizeof(float));
    }
    q = end;
  }
  rows.resize(static_cast<size_t>(kept_lims.back()));
  distances.resize(static_cast<size_t>(kept_lims.back()));
}

void prefetch_row(const float* row, int64_t dim) { prefetch_bytes(row, dim * static_cast<int64_t>(sizeof(float))); }

}  // namespace

MetricIndex::MetricIndex(Context& context, std::string descriptor, int64_t dim, Metric metric,
                         const MetricSpec& spec)
    : Index(context, std::move(descriptor), dim, metric), spec_(spec), objects_(dim) {
  if (!is_true_metric(metric))
    fail(Status::unsupported, "descriptor \"", this->descriptor(), "\": ", metric_name(metric),
         " is not a metric (no triangle inequality); List of Clusters, SSS and metric brute force need L2, L1, "
         "L-infinity or edit distance");
  method_ = make_method();
  if (context.device() == DeviceKind::cuda) {
    device_copy_ = gpu::make_metric_device(context.gpu(), metric, dim);
    update_device_copy();
  }
}

IndexKind MetricIndex::kind() const {
  switch (spec_.method) {
    case gpu::MetricMethod::list_of_clusters: return IndexKind::list_of_clusters;
    case gpu::MetricMethod::sss: return IndexKind::sss;
    default: return IndexKind::metric_flat;
  }
}

std::unique_ptr<MetricMethod> MetricIndex::make_method() const {
  switch (spec_.method) {
    case gpu::MetricMethod::list_of_clusters: return std::make_unique<ListOfClusters>(metric(), spec_.bucket);
    case gpu::MetricMethod::sss: return std::make_unique<SssPivots>(metric(), spec_.alpha, spec_.max_pivots);
    default: return std::make_unique<BruteForce>(metric());
  }
}

void MetricIndex::update_device_copy() {
  if (!device_copy_) return;
  device_copy_current_ = false;
  try {
    const Objects objects = objects_.view();
    if (spec_.method == gpu::MetricMethod::list_of_clusters) {
      const ListOfClusters::FlatTables tables = static_cast<const ListOfClusters&>(*method_).flat_tables();
      const gpu::LcTables lc = tables.view();
      gpu::metric_upload(context().gpu(), *device_copy_, objects, &lc, nullptr);
    } else if (spec_.method == gpu::MetricMethod::sss) {
      const gpu::SssTables sss = static_cast<const SssPivots&>(*method_).tables();
      gpu::metric_upload(context().gpu(), *device_copy_, objects, nullptr, &sss);
    } else {
      gpu::metric_upload(context().gpu(), *device_copy_, objects, nullptr, nullptr);
    }
    device_copy_current_ = true;
  } catch (const Error& e) {
    // The host copy stays authoritative: searches run on the CPU until a later upload fits.
    if (e.status() != Status::out_of_device_memory) throw;
  }
}

// ---- changes ---------------------------------------------------------------------------------------

void MetricIndex::do_add(int64_t n, const float* x, const int64_t* ids) {
  add_objects(Objects::of_vectors(n, dim(), x), ids);
}

void MetricIndex::do_add_strings(const Strings& x, const int64_t* ids) { add_objects(Objects::of_strings(x), ids); }

void MetricIndex::add_objects(const Objects& x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* new_ids = ids_.check_new(x.n, ids, assigned);
  IdMap next_ids = ids_;
  next_ids.append(x.n, new_ids);
  const int64_t first = count();
  objects_.append(x);
  try {
    // An add as large as the index builds afresh (better clusters, pivots from all the data).
    if (x.n >= first) {
      std::unique_ptr<MetricMethod> fresh = make_method();
      fresh->build(context().pool(), objects_.view());
      method_ = std::move(fresh);
    } else {
      method_->insert(context().pool(), objects_.view(), first);
    }
  } catch (...) {
    std::vector<int64_t> added(static_cast<size_t>(x.n));
    for (int64_t i = 0; i < x.n; ++i) added[i] = first + i;
    objects_.erase(added);
    throw;
  }
  std::swap(ids_, next_ids);
  update_device_copy();
}

int64_t MetricIndex::do_remove(int64_t n, const int64_t* ids) {
  const std::vector<int64_t> rows = ids_.rows_of(n, ids);
  if (rows.empty()) return 0;
  IdMap kept = ids_.without_rows(rows);
  ObjectStore objects = objects_;
  objects.erase(rows);
  std::unique_ptr<MetricMethod> fresh;
  if (!method_->erase(rows)) {
    // A centre or pivot went: the tables are rebuilt over what remains.
    fresh = make_method();
    fresh->build(context().pool(), objects.view());
  }
  if (fresh) method_ = std::move(fresh);
  std::swap(objects_, objects);
  std::swap(ids_, kept);
  update_device_copy();
  return static_cast<int64_t>(rows.size());
}

// ---- searches --------------------------------------------------------------------------------------

void MetricIndex::to_caller_units(const Objects& queries, int64_t q, MetricHit* begin, MetricHit* end) const {
  if (metric() != Metric::l2) return;  // already the caller's units, and sorted
  const Objects objects = objects_.view();
  for (int64_t i = 0; i < std::min<int64_t>(end - begin, kPrefetchAhead); ++i)
    prefetch_row(objects.vector(begin[i].row), dim());
  for (MetricHit* h = begin; h != end; ++h) {
    if (end - h > kPrefetchAhead) prefetch_row(objects.vector(h[kPrefetchAhead].row), dim());
    h->distance = squared_l2(queries.vector(q), objects.vector(h->row), dim());
  }
  std::sort(begin, end);
}

void MetricIndex::do_search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                            float* distances, int64_t* ids) const {
  search_objects(Objects::of_vectors(nq, dim(), queries), k, options, distances, ids);
}

void MetricIndex::do_search_strings(const Strings& queries, int64_t k, const SearchOptions& options,
                                    float* distances, int64_t* ids) const {
  search_objects(Objects::of_strings(queries), k, options, distances, ids);
}

void MetricIndex::search_objects(const Objects& queries, int64_t k, const SearchOptions& options,
                                 float* distances, int64_t* ids) const {
  const int64_t nq = queries.n;
  std::vector<float> found_distances(static_cast<size_t>(nq * k));
  std::vector<int64_t> found_rows(static_cast<size_t>(nq * k));
  const RowAllowed allowed{options.filter.bits ? &options.filter : nullptr, ids_.data()};
  if (device_copy_current_ && count() > 0) {
    const std::vector<uint8_t> row_bits = ids_.row_filter_bits(options.filter);
    const gpu::RowFilter filter{options.filter.bits ? row_bits.data() : nullptr, count()};
    gpu::metric_knn(context().gpu(), *device_copy_, spec_.method, queries, k, filter, found_distances.data(),
                    found_rows.data());
  } else {
    std::atomic<int64_t> evaluations{0};
    context().pool().parallel_for(nq, [&](int64_t q) {
      const QueryDistance query(metric(), queries, q);
      HitHeap best(k);
      evaluations += method_->knn(query, objects_.view(), allowed, best);
      const std::vector<MetricHit> hits = best.take_sorted();
      for (int64_t j = 0; j < k; ++j) {
        const bool found = j < static_cast<int64_t>(hits.size());
        found_distances[q * k + j] = found ? hits[j].distance : std::numeric_limits<float>::infinity();
        found_rows[q * k + j] = found ? hits[j].row : -1;
      }
    });
    last_evaluations_ = evaluations.load();
  }
  // Rows become ids; L2 distances become the exact squared distances the caller expects.
  for (int64_t q = 0; q < nq; ++q) {
    std::vector<MetricHit> hits;
    for (int64_t j = 0; j < k; ++j)
      if (found_rows[q * k + j] >= 0) hits.push_back({found_distances[q * k + j], found_rows[q * k + j]});
    to_caller_units(queries, q, hits.data(), hits.data() + hits.size());
    for (int64_t j = 0; j < k; ++j) {
      const bool found = j < static_cast<int64_t>(hits.size());
      found_distances[q * k + j] = found ? hits[j].distance : std::numeric_limits<float>::infinity();
      found_rows[q * k + j] = found ? ids_.ids()[hits[j].row] : -1;
    }
  }
  const int64_t distance_bytes = nq * k * static_cast<int64_t>(sizeof(float));
  const int64_t id_bytes = nq * k * static_cast<int64_t>(sizeof(int64_t));
  if (context().device() == DeviceKind::cuda) {
    // The caller's outputs may be device memory.
    gpu::copy_memory(context().gpu(), distances, found_distances.data(), distance_bytes);
    gpu::copy_memory(context().gpu(), ids, found_rows.data(), id_bytes);
  } else {
    std::copy(found_distances.begin(), found_distances.end(), distances);
    std::copy(found_rows.begin(), found_rows.end(), ids);
  }
}

RangeResult MetricIndex::do_range_search(int64_t nq, const float* queries, float radius,
                                         const SearchOptions& options) const {
  return range_objects(Objects::of_vectors(nq, dim(), queries), radius, options);
}

RangeResult MetricIndex::do_range_search_strings(const Strings& queries, float radius,
                                                 const SearchOptions& options) const {
  return range_objects(Objects::of_strings(queries), radius, options);
}

MetricIndex::RowHits MetricIndex::cpu_range(const Objects& queries, float r, const SearchOptions& options) const {
  std::vector<std::vector<MetricHit>> per_query(static_cast<size_t>(queries.n));
  const RowAllowed allowed{options.filter.bits ? &options.filter : nullptr, ids_.data()};
  std::atomic<int64_t> evaluations{0};
  context().pool().parallel_for(queries.n, [&](int64_t q) {
    const QueryDistance query(metric(), queries, q);
    evaluations += method_->range(query, objects_.view(), r, allowed, per_query[q]);
    // The caller's units at once (L2: squared anew, which sorts them), else sorted as found.
    MetricHit* begin = per_query[q].data();
    MetricHit* end = begin + per_query[q].size();
    if (metric() == Metric::l2) to_caller_units(queries, q, begin, end);
    else std::sort(begin, end);
  });
  last_evaluations_ = evaluations.load();
  RowHits out;
  out.lims.assign(static_cast<size_t>(queries.n + 1), 0);
  for (int64_t q = 0; q < queries.n; ++q) out.lims[q + 1] = out.lims[q] + static_cast<int64_t>(per_query[q].size());
  out.rows.resize(static_cast<size_t>(out.lims.back()));
  out.distances.resize(static_cast<size_t>(out.lims.back()));
  for_query_runs(context().pool(), queries.n, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q)
      for (size_t i = 0; i < per_query[q].size(); ++i) {
        out.rows[out.lims[q] + i] = per_query[q][i].row;
        out.distances[out.lims[q] + i] = per_query[q][i].distance;
      }
  });
  out.caller_units = true;
  return out;
}

MetricIndex::RowHits MetricIndex::gpu_range(const Objects& queries, float r, const SearchOptions& options) const {
  const std::vector<uint8_t> row_bits = ids_.row_filter_bits(options.filter);
  const gpu::RowFilter filter{options.filter.bits ? row_bits.data() : nullptr, count()};
  const int64_t cap = options.max_range_results > 0 ? options.max_range_results : std::numeric_limits<int64_t>::max();
  gpu::MetricHits found = gpu::metric_range_search(context().gpu(), *device_copy_, spec_.method, queries, r, filter, cap);
  int64_t evaluations = 0;
  for (int64_t e : found.evaluations) evaluations += e;
  last_evaluations_ = evaluations;
  RowHits out;
  out.lims = std::move(found.lims);
  out.rows = std::move(found.rows);
  out.distances = std::move(found.distances);
  // The device's squared distances are the host's floats (gpu_metric.h); a sample of them is checked,
  // and should one differ (a host build that fuses its multiply-adds), the host recomputes them all.
  out.caller_units = true;
  const Objects objects = objects_.view();
  const bool squared = metric() == Metric::l2;
  for (int64_t q = 0; squared && out.caller_units && q < queries.n; q += kCheckedQueryStride) {
    if (out.lims[q] == out.lims[q + 1]) continue;
    const float host = squared_l2(queries.vector(q), objects.vector(out.rows[out.lims[q]]), dim());
    out.caller_units = std::memcmp(&host, &out.distances[out.lims[q]], sizeof(float)) == 0;
  }
  return out;
}

RangeResult MetricIndex::range_objects(const Objects& queries, float radius, const SearchOptions& options) const {
  // L2 radii are squared at the C ABI; the triangle inequality needs the distance itself.
  const bool squared = metric() == Metric::l2;
  if (squared && radius < 0.0f) return RangeResult{std::vector<int64_t>(static_cast<size_t>(queries.n + 1), 0), {}, {}};
  const float r = squared ? std::sqrt(radius) : radius;
  RowHits found = device_copy_current_ && count() > 0 ? gpu_range(queries, r, options) : cpu_range(queries, r, options);
  // Per query, in parallel: the caller's units where they are not yet (squared anew, sorted). Each
  // query's hits are then in order, so those the square root rounded in (squared distance past the
  // caller's radius) are its last: lims counts the hits kept, then becomes their offsets.
  RangeResult result;
  result.lims.assign(static_cast<size_t>(queries.n + 1), 0);
  for_query_runs(context().pool(), queries.n, [&](int64_t q0, int64_t q1) {
    std::vector<MetricHit> scratch;
    for (int64_t q = q0; q < q1; ++q) {
      int64_t* rows = found.rows.data() + found.lims[q];
      float* distances = found.distances.data() + found.lims[q];
      const int64_t n = found.lims[q + 1] - found.lims[q];
      if (!found.caller_units) {
        scratch.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) scratch[i] = {distances[i], rows[i]};
        to_caller_units(queries, q, scratch.data(), scratch.data() + n);
        for (int64_t i = 0; i < n; ++i) rows[i] = scratch[i].row, distances[i] = scratch[i].distance;
      }
      int64_t kept = n;
      while (squared && kept > 0 && distances[kept - 1] > radius) --kept;
      result.lims[size_t(q + 1)] = kept;
    }
  });
  std::partial_sum(result.lims.begin(), result.lims.end(), result.lims.begin());
  if (result.lims.back() != found.lims.back()) squeeze_kept_hits(found.lims, result.lims, found.rows, found.distances);
  // The columns become the result, their rows turned into ids in place.
  if (!ids_.is_identity()) {
    const int64_t* ids = ids_.data();
    int64_t* rows = found.rows.data();
    for_query_runs(context().pool(), queries.n, [&](int64_t q0, int64_t q1) {
      for (int64_t i = result.lims[q0]; i < result.lims[q1]; ++i) rows[i] = ids[rows[i]];
    });
  }
  result.ids = std::move(found.rows);
  result.distances = std::move(found.distances);
  return result;
}

// ---- memory and files --------------------------------------------------------------------------------

MemoryUse MetricIndex::memory() const {
  MemoryUse use;
  use.host_bytes = objects_.memory_bytes() + ids_.memory_bytes() + method_->memory_bytes();
  if (device_copy_) use.device_bytes = gpu::metric_device_bytes(*device_copy_);
  return use;
}

void MetricIndex::save_payload(ByteWriter& out) const {
  out.array(ids_.data(), count());
  objects_.save(out);
  method_->save(out);
}

void MetricIndex::load_payload(ByteReader& in, int64_t count) {
  std::vector<int64_t> ids;
  in.array(ids, count, "ids");
  IdMap loaded_ids;
  loaded_ids.assign(std::move(ids));
  ObjectStore objects(dim());
  objects.load(in, count);
  std::unique_ptr<MetricMethod> method = make_method();
  method->load(in, count);
  std::swap(ids_, loaded_ids);
  std::swap(objects_, objects);
  method_ = std::move(method);
  update_device_copy();
}

}  // namespace quiver
