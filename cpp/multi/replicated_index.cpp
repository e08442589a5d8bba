#include "cpp/multi/replicated_index.h"

#include <algorithm>

#include "cpp/multi/run_parts.h"

namespace quiver {

void ReplicatedIndex::add_batch(const Batch& x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* added = new_ids(x.n, ids, assigned);
  const std::vector<std::exception_ptr> errors = run_parts(part_count(), [&](int64_t r) { add_to(*parts_[r], x, added); });
  const auto failed = std::find_if(errors.begin(), errors.end(), [](const auto& e) { return e != nullptr; });
  if (failed != errors.end()) {
    // Nothing half-added: the replicas that took the add give it back.
    for (int64_t r = 0; r < part_count(); ++r)
      if (!errors[r]) parts_[r]->remove(x.n, added);
    std::rethrow_exception(*failed);
  }
  note_added(x.n, added);
}

ReplicatedIndex::Split ReplicatedIndex::split(int64_t nq) const {
  const int64_t replicas = part_count();
  return Split{std::min(replicas, nq), static_cast<int64_t>(next_replica_++ % static_cast<uint64_t>(replicas))};
}

void ReplicatedIndex::search_batch(const Batch& queries, int64_t k, const SearchOptions& options, float* distances,
                                   int64_t* ids) const {
  const Split plan = split(queries.n);
  run_parts_or_throw(plan.slices, [&](int64_t s) {
    const int64_t begin = plan.begin(s, queries.n);
    const int64_t count = plan.begin(s + 1, queries.n) - begin;
    search_in(*parts_[(plan.first + s) % part_count()], queries.slice(begin, count), k, options,
              distances + begin * k, ids + begin * k);
  });
}

RangeResult ReplicatedIndex::range_search_batch(const Batch& queries, float radius,
                                                const SearchOptions& options) const {
  const Split plan = split(queries.n);
  std::vector<RangeResult> slices(static_cast<size_t>(plan.slices));
  run_parts_or_throw(plan.slices, [&](int64_t s) {
    const int64_t begin = plan.begin(s, queries.n);
    const int64_t count = plan.begin(s + 1, queries.n) - begin;
    slices[s] = range_search_in(*parts_[(plan.first + s) % part_count()], queries.slice(begin, count), radius, options);
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
