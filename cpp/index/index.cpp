#include "cpp/index/index.h"

#include <cmath>
#include <limits>
#include <vector>

#include "cpp/backend/gpu.h"
#include "cpp/core/error.h"
#include "cpp/core/input.h"
#include "cpp/distance/vectors.h"

namespace quiver {

namespace {

void check_count(const char* name, int64_t n) { require(n >= 0, name, " = ", n, " is negative"); }

// The options for a kind that prepares its queries a slice at a time (Index::prepares_query_slices).
SearchOptions with_unprepared_queries(const SearchOptions& options) {
  SearchOptions unprepared = options;
  unprepared.prepare_query_slices = true;
  return unprepared;
}

// Runs search(distances, ids) for nq x k results. Outputs in device memory that the kind does not
// write itself (Index::searches_device_memory) are searched into host buffers and copied there.
template <class Search>
void into_outputs(const Context& context, bool writes_device, int64_t nq, int64_t k, float* distances,
                  int64_t* ids, Search&& search) {
  const bool device_distances = !writes_device && gpu::is_device_pointer(distances);
  const bool device_ids = !writes_device && gpu::is_device_pointer(ids);
  if (!device_distances && !device_ids) {
    search(distances, ids);
    return;
  }
  require_device_memory_allowed(context, device_distances ? "distances" : "ids");
  require(nq <= std::numeric_limits<int64_t>::max() / (k * int64_t(sizeof(int64_t))), "queries: ", nq,
          " queries of ", k, " results are more bytes than any buffer can hold");
  const int64_t size = nq * k;
  std::vector<float> host_distances(device_distances ? static_cast<size_t>(size) : 0);
  std::vector<int64_t> host_ids(device_ids ? static_cast<size_t>(size) : 0);
  search(device_distances ? host_distances.data() : distances, device_ids ? host_ids.data() : ids);
  if (device_distances)
    gpu::copy_memory(context.gpu(), distances, host_distances.data(), size * static_cast<int64_t>(sizeof(float)));
  if (device_ids) gpu::copy_memory(context.gpu(), ids, host_ids.data(), size * static_cast<int64_t>(sizeof(int64_t)));
}

}  // namespace

SearchOptions with_row_check(const SearchOptions& options, const float* x, int64_t dim, int64_t first_row) {
  SearchOptions checked = options;
  checked.check_rows = [x, dim, first_row](int64_t begin, int64_t end) {
    check_vector_rows("queries", x, begin, end, dim, false, first_row);
  };
  return checked;
}

Index::Index(Context& context, std::string descriptor, int64_t dim, Metric metric)
    : context_(context), descriptor_(std::move(descriptor)), dim_(dim), metric_(metric) {
  if (holds_strings(metric)) {
    require(dim == 0, "dim = ", dim, ": an edit-distance index holds byte strings; dim must be 0");
  } else {
    require(dim >= 1 && dim <= kMaxDim, "dim = ", dim, " is outside 1 .. ", kMaxDim);
  }
}

void Index::require_vectors(const char* call) const {
  if (holds_strings(metric_))
    fail(Status::unsupported, call, ": the index (", descriptor_,
         ") holds byte strings (edit distance); use the _strings call");
}

void Index::require_strings(const char* call) const {
  if (!holds_strings(metric_))
    fail(Status::unsupported, call, ": the index (", descriptor_, ", ", metric_name(metric_),
         ") holds float vectors; strings need an edit-distance index");
}

void Index::check_search(int64_t nq, int64_t k, const SearchOptions& options) const {
  check_count("nq", nq);
  require(k >= 1 && k <= kMaxK, "k = ", k, " is outside 1 .. ", kMaxK);
  require(options.filter.nbits >= 0, "params->filter_bits = ", options.filter.nbits, " is negative");
  if (!is_trained()) fail(Status::not_trained, "the index (", descriptor_, ") must be trained before search");
}

void Index::check_range_search(int64_t nq, float radius, const SearchOptions& options) const {
  check_count("nq", nq);
  require(!std::isnan(radius), "radius is NaN");
  // A negative squared L2 radius has always been a valid request that finds nothing; the metrics
  // added with the metric-space kinds refuse it.
  const bool new_metric = metric_ == Metric::l1 || metric_ == Metric::linf || metric_ == Metric::edit;
  require(!new_metric || radius >= 0.0f, "radius = ", radius, " is negative (", metric_name(metric_),
          " distances are >= 0)");
  require(options.filter.nbits >= 0, "params->filter_bits = ", options.filter.nbits, " is negative");
  require(options.max_range_results >= 0, "max_range_results = ", options.max_range_results, " is negative");
  if (!is_trained()) fail(Status::not_trained, "the index (", descriptor_, ") must be trained before range search");
}

void Index::check_range_cap(const RangeResult& result, const SearchOptions& options) const {
  if (options.max_range_results == 0) return;
  for (size_t q = 0; q + 1 < result.lims.size(); ++q) {
    const int64_t hits = result.lims[q + 1] - result.lims[q];
    if (hits > options.max_range_results)
      fail(Status::too_many_results, "range search: query ", q, " has ", hits, " hits, more than max_range_results = ",
           options.max_range_results, " (use a smaller radius or a larger limit)");
  }
}

template <typename Step>
void Index::with_progress(const char* call, Step step) {
  Progress progress(progress_, call);
  progress.report(0);
  step();
  if (progress_) progress_(1.0);
}

void Index::train(int64_t n, const float* x) {
  require_vectors("train");
  check_count("n", n);
  const Input input = prepare_input(context_, "x", x, n, dim_, metric_, reads_device_memory());
  with_progress("train", [&] { do_train(n, input.data); });
}

void Index::add(int64_t n, const float* x, const int64_t* ids) {
  require_vectors("add");
  check_count("n", n);
  if (!is_trained()) fail(Status::not_trained, "the index (", descriptor_, ") must be trained before add");
  if (n == 0) return;
  const Input input = prepare_input(context_, "x", x, n, dim_, metric_, reads_device_memory());
  std::vector<int64_t> ids_copy;
  const int64_t* new_ids = prepare_ids(context_, "ids", ids, n, ids_copy);
  with_progress("add", [&] { do_add(n, input.data, new_ids); });
}

void Index::search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                   float* distances, int64_t* ids) const {
  require_vectors("search");
  check_search(nq, k, options);
  if (nq == 0) return;
  const bool in_place = searches_device_memory(k, options);
  into_outputs(context_, in_place, nq, k, distances, ids, [&](float* out_distances, int64_t* out_ids) {
    if (prepares_query_slices()) {
      do_search(nq, queries, k, with_unprepared_queries(options), out_distances, out_ids);
      return;
    }
    const Input input = prepare_input(context_, "queries", queries, nq, dim_, metric_, in_place, 0,
                                      checks_queries_while_searching());
    do_search(nq, input.data, k, input.unchecked ? with_row_check(options, input.data, dim_, 0) : options,
              out_distances, out_ids);
  });
}

RangeResult Index::range_search(int64_t nq, const float* queries, float radius,
                                const SearchOptions& options) const {
  require_vectors("range search");
  check_range_search(nq, radius, options);
  if (nq == 0) return RangeResult{{0}, {}, {}};
  RangeResult result;
  if (prepares_query_slices()) {
    result = do_range_search(nq, queries, radius, with_unprepared_queries(options));
  } else {
    // Range searches read host queries (the IVF kinds search a host copy of their lists).
    const Input input = prepare_input(context_, "queries", queries, nq, dim_, metric_, false);
    result = do_range_search(nq, input.data, radius, options);
  }
  check_range_cap(result, options);
  return result;
}

int64_t Index::remove(int64_t n, const int64_t* ids) {
  check_count("n", n);
  if (n == 0) return 0;
  std::vector<int64_t> ids_copy;
  return do_remove(n, prepare_ids(context_, "ids", ids, n, ids_copy));
}

void Index::add_strings(const Strings& x, const int64_t* ids) {
  require_strings("add strings");
  check_strings("strings", x);
  if (x.n == 0) return;
  std::vector<int64_t> ids_copy;
  const int64_t* new_ids = prepare_ids(context_, "ids", ids, x.n, ids_copy);
  with_progress("add", [&] { do_add_strings(x, new_ids); });
}

void Index::search_strings(const Strings& queries, int64_t k, const SearchOptions& options, float* distances,
                           int64_t* ids) const {
  require_strings("search strings");
  check_search(queries.n, k, options);
  check_strings("queries", queries);
  if (queries.n == 0) return;
  into_outputs(context_, searches_device_memory(k, options), queries.n, k, distances, ids,
               [&](float* out_distances, int64_t* out_ids) {
                 do_search_strings(queries, k, options, out_distances, out_ids);
               });
}

RangeResult Index::range_search_strings(const Strings& queries, float radius, const SearchOptions& options) const {
  require_strings("range search strings");
  check_range_search(queries.n, radius, options);
  check_strings("queries", queries);
  if (queries.n == 0) return RangeResult{{0}, {}, {}};
  RangeResult result = do_range_search_strings(queries, radius, options);
  check_range_cap(result, options);
  return result;
}

// Only the metric-space kinds hold strings, and they override these.
void Index::do_add_strings(const Strings&, const int64_t*) {
  fail(Status::internal, "index kind ", descriptor_, " cannot hold strings");
}

void Index::do_search_strings(const Strings&, int64_t, const SearchOptions&, float*, int64_t*) const {
  fail(Status::internal, "index kind ", descriptor_, " cannot hold strings");
}

RangeResult Index::do_range_search_strings(const Strings&, float, const SearchOptions&) const {
  fail(Status::internal, "index kind ", descriptor_, " cannot hold strings");
}

}  // namespace quiver
