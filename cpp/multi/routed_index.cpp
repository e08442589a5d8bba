#include "cpp/multi/routed_index.h"

#include <algorithm>
#include <cmath>

#include "cpp/metric/metric_spec.h"
#include "cpp/multi/merge_results.h"
#include "cpp/multi/run_parts.h"

namespace quiver {

RoutedIndex::RoutedIndex(Context& context, std::vector<Context*> devices, std::string descriptor, int64_t dim,
                         Metric metric, MultiSpec spec)
    : ShardedIndex(context, std::move(devices), std::move(descriptor), dim, metric, std::move(spec)),
      bucket_(parse_metric_descriptor(spec_.child).bucket),
      routes_(metric, dim) {}

MemoryUse RoutedIndex::memory() const {
  MemoryUse use = ShardedIndex::memory();
  use.host_bytes += routes_.memory_bytes();
  return use;
}

void RoutedIndex::add_batch(const Objects& x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* added = new_ids(x.n, ids, assigned);
  const int64_t parts = part_count();
  // The routes change before the parts do: a failed add puts them back.
  const ClusterRoutes before = routes_;
  std::vector<int64_t> part_of;
  if (count() == 0) {
    part_of = routes_.build(context().pool(), x, bucket_, parts);
  } else {
    std::vector<int64_t> sizes(static_cast<size_t>(parts));
    for (int64_t p = 0; p < parts; ++p) sizes[p] = parts_[p]->count();
    part_of = routes_.place(context().pool(), x, sizes);
  }
  // Each part takes its objects in the batch's order (its rows' order is its ties' order).
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(parts)), part_ids(static_cast<size_t>(parts));
  for (int64_t i = 0; i < x.n; ++i) {
    rows[part_of[i]].push_back(i);
    part_ids[part_of[i]].push_back(added[i]);
  }
  std::vector<GatheredRows> gathered(static_cast<size_t>(parts));
  std::vector<Objects> objects(static_cast<size_t>(parts));
  std::vector<const int64_t*> objects_ids(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    gathered[p] = gather_rows(x, rows[p]);
    objects[p] = gathered[p].objects;
    objects_ids[p] = part_ids[p].data();
  }
  try {
    rethrow_first(add_to_parts(objects, objects_ids));
  } catch (...) {
    routes_ = before;
    throw;
  }
  note_added(x.n, added);
}

RangeResult RoutedIndex::range_search_batch(const Objects& queries, float radius, const SearchOptions& options) const {
  const int64_t parts = part_count(), nq = queries.n;
  // Stage 1: the parts each query's ball reaches (L2 radii are squared at the C ABI).
  const bool squared = metric() == Metric::l2;
  std::vector<std::vector<int64_t>> routed(static_cast<size_t>(parts));
  if (!(squared && radius < 0.0f))
    routed = routes_.route(context().pool(), queries, squared ? std::sqrt(radius) : radius, parts);
  int64_t pairs = 0;
  for (const auto& part : routed) pairs += static_cast<int64_t>(part.size());
  last_routed_fraction_ = static_cast<double>(pairs) / static_cast<double>(std::max<int64_t>(1, nq * parts));
  // Stage 2: each part searches its queries; its hits are spread back to the batch's numbering.
  std::vector<RangeResult> results(static_cast<size_t>(parts));
  run_parts_or_throw(parts, [&](int64_t p) {
    RangeResult& out = results[p];
    out.lims.assign(static_cast<size_t>(nq + 1), 0);
    if (routed[p].empty()) return;
    const GatheredRows subset = gather_rows(queries, routed[p]);
    RangeResult found = range_search_in(*parts_[p], subset.objects, radius, options);
    for (size_t i = 0; i < routed[p].size(); ++i) out.lims[routed[p][i] + 1] = found.lims[i + 1] - found.lims[i];
    for (int64_t q = 0; q < nq; ++q) out.lims[q + 1] += out.lims[q];
    out.ids = std::move(found.ids);
    out.distances = std::move(found.distances);
  });
  return merge_range(context().pool(), metric(), nq, results);
}

void RoutedIndex::save_extra(ByteWriter& out) const { routes_.save(out); }

void RoutedIndex::load_extra(ByteReader& in) { routes_.load(in, part_count()); }

}  // namespace quiver
