#include "cpp/multi/replicated_index.h"

#include <algorithm>

#include "cpp/core/input.h"
#include "cpp/multi/run_parts.h"

namespace quiver {

namespace {

// Rows [begin, begin + count) of the queries, checked (and for cosine normalised) here when the
// caller's are unprepared (options.prepare_query_slices), or left for the replica's search to check
// (check_later; prepared.unchecked says so); `prepared` keeps what that made. Errors name rows of
// the caller's batch.
Objects query_slice(const Index& index, const Objects& queries, int64_t begin, int64_t count,
                    const SearchOptions& options, bool check_later, Input& prepared) {
  Objects slice = slice_rows(queries, begin, count);
  if (options.prepare_query_slices) {
    prepared = prepare_input(index.context(), "queries", slice.vectors, count, index.dim(), index.metric(), false,
                             begin, check_later);
    slice.vectors = prepared.data;
  }
  return slice;
}

// What the replicas get: their slices prepared.
SearchOptions part_options_of(const SearchOptions& options) {
  SearchOptions part = options;
  part.prepare_query_slices = false;
  return part;
}

}  // namespace

void ReplicatedIndex::add_batch(const Objects& x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* added = new_ids(x.n, ids, assigned);
  const size_t replicas = static_cast<size_t>(part_count());
  rethrow_first(add_to_parts(std::vector<Objects>(replicas, x), std::vector<const int64_t*>(replicas, added)));
  note_added(x.n, added);
}

ReplicatedIndex::Split ReplicatedIndex::split(int64_t nq) const {
  const int64_t replicas = part_count();
  return Split{std::min(replicas, nq), static_cast<int64_t>(next_replica_++ % static_cast<uint64_t>(replicas))};
}

void ReplicatedIndex::search_batch(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                                   int64_t* ids) const {
  const Split plan = split(queries.n);
  const SearchOptions part_options = part_options_of(options);
  run_parts_or_throw(plan.slices, [&](int64_t s) {
    const Index& replica = *parts_[(plan.first + s) % part_count()];
    const int64_t begin = plan.begin(s, queries.n);
    const int64_t count = plan.begin(s + 1, queries.n) - begin;
    Input prepared;
    const Objects slice =
        query_slice(*this, queries, begin, count, options, replica.checks_queries_while_searching(), prepared);
    const SearchOptions slice_options =
        prepared.unchecked ? with_row_check(part_options, slice.vectors, dim(), begin) : part_options;
    search_in(replica, slice, k, slice_options, distances + begin * k, ids + begin * k);
  });
}

RangeResult ReplicatedIndex::range_search_batch(const Objects& queries, float radius,
                                                const SearchOptions& options) const {
  const Split plan = split(queries.n);
  const SearchOptions part_options = part_options_of(options);
  std::vector<RangeResult> slices(static_cast<size_t>(plan.slices));
  run_parts_or_throw(plan.slices, [&](int64_t s) {
    const int64_t begin = plan.begin(s, queries.n);
    const int64_t count = plan.begin(s + 1, queries.n) - begin;
    Input prepared;
    const Objects slice = query_slice(*this, queries, begin, count, options, false, prepared);
    slices[s] = range_search_in(*parts_[(plan.first + s) % part_count()], slice, radius, part_options);
  });
  // The slices' results one after another.
  RangeResult result;
  result.lims.push_back(0);
  for (const RangeResult& slice : slices) {
    const int64_t offset = result.lims.back();
    for (size_t q = 1; q < slice.lims.size(); ++q) result.lims.push_back(offset + slice.lims[q]);
    result.ids.insert(result.ids.end(), slice.ids.begin(), slice.ids.end());
    result.distances.insert(result.distances.end(), slice.distances.begin(), slice.distances.end());
  }
  return result;
}

int64_t ReplicatedIndex::do_remove(int64_t n, const int64_t* ids) {
  std::vector<int64_t> removed(parts_.size(), 0);
  run_parts_or_throw(part_count(), [&](int64_t r) { removed[r] = parts_[r]->remove(n, ids); });
  return removed.front();
}

}  // namespace quiver
