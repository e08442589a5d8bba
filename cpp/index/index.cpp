#include "cpp/index/index.h"

#include <cmath>
#include <vector>

#include "cpp/core/error.h"
#include "cpp/core/input.h"
#include "cpp/distance/vectors.h"

namespace quiver {

namespace {

void check_count(const char* name, int64_t n) { require(n >= 0, name, " = ", n, " is negative"); }

}  // namespace

Index::Index(Context& context, std::string descriptor, int64_t dim, Metric metric)
    : context_(context), descriptor_(std::move(descriptor)), dim_(dim), metric_(metric) {
  require(dim >= 1 && dim <= kMaxDim, "dim = ", dim, " is outside 1 .. ", kMaxDim);
}

void Index::train(int64_t n, const float* x) {
  check_count("n", n);
  const Input input = prepare_input(context_, "x", x, n, dim_, metric_, reads_device_memory());
  do_train(n, input.data);
}

void Index::add(int64_t n, const float* x, const int64_t* ids) {
  check_count("n", n);
  if (!is_trained()) fail(Status::not_trained, "the index (", descriptor_, ") must be trained before add");
  if (n == 0) return;
  const Input input = prepare_input(context_, "x", x, n, dim_, metric_, reads_device_memory());
  do_add(n, input.data, ids);
}

void Index::search(int64_t nq, const float* queries, int64_t k, const SearchOptions& options,
                   float* distances, int64_t* ids) const {
  check_count("nq", nq);
  require(k >= 1 && k <= kMaxK, "k = ", k, " is outside 1 .. ", kMaxK);
  require(options.filter.nbits >= 0, "params->filter_bits = ", options.filter.nbits, " is negative");
  if (!is_trained()) fail(Status::not_trained, "the index (", descriptor_, ") must be trained before search");
  if (nq == 0) return;
  const Input input = prepare_input(context_, "queries", queries, nq, dim_, metric_, reads_device_memory());
  do_search(nq, input.data, k, options, distances, ids);
}

RangeResult Index::range_search(int64_t nq, const float* queries, float radius,
                                const SearchOptions& options) const {
  check_count("nq", nq);
  require(!std::isnan(radius), "radius is NaN");
  require(options.filter.nbits >= 0, "params->filter_bits = ", options.filter.nbits, " is negative");
  if (!is_trained()) fail(Status::not_trained, "the index (", descriptor_, ") must be trained before range search");
  if (nq == 0) return RangeResult{{0}, {}, {}};
  const Input input = prepare_input(context_, "queries", queries, nq, dim_, metric_, false);
  return do_range_search(nq, input.data, radius, options);
}

int64_t Index::remove(int64_t n, const int64_t* ids) {
  check_count("n", n);
  if (n == 0) return 0;
  return do_remove(n, ids);
}

}  // namespace quiver
