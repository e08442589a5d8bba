#include "cpp/multi/cluster_routes.h"

#include <algorithm>
#include <cmath>

#include "cpp/core/error.h"
#include "cpp/core/thread_pool.h"
#include "cpp/io/bytes.h"
#include "cpp/metric/list_of_clusters.h"
#include "cpp/metric/query_distance.h"
#include "cpp/multi/object_rows.h"

namespace quiver {

std::vector<int64_t> ClusterRoutes::build(ThreadPool& pool, const Objects& x, int64_t bucket, int64_t parts) {
  ListOfClusters clusters(metric_, bucket);
  clusters.build(pool, x);
  const ListOfClusters::FlatTables tables = clusters.flat_tables();
  const int64_t count = static_cast<int64_t>(tables.centre_rows.size());
  ObjectStore centres(centres_.dim());
  centres.append(gather_rows(x, tables.centre_rows).objects);
  std::vector<int32_t> owners(static_cast<size_t>(count));
  std::vector<int64_t> part_of(static_cast<size_t>(x.n), 0);
  for (int64_t c = 0; c < count; ++c) {
    owners[c] = static_cast<int32_t>(c % parts);
    part_of[tables.centre_rows[c]] = owners[c];
    for (int64_t m = tables.member_begin[c]; m < tables.member_begin[c + 1]; ++m) part_of[tables.members[m]] = owners[c];
  }
  centres_ = std::move(centres);
  radii_ = tables.radii;
  owners_ = std::move(owners);
  return part_of;
}

std::vector<int64_t> ClusterRoutes::place(ThreadPool& pool, const Objects& x, std::vector<int64_t>& sizes) {
  // The first covering cluster of each object, side by side; -1: none covers it.
  std::vector<int64_t> covering(static_cast<size_t>(x.n), -1);
  const Objects centres = centres_.view();
  pool.parallel_for(x.n, [&](int64_t i) {
    const QueryDistance object(metric_, x, i);
    for (int64_t c = 0; c < clusters(); ++c)
      if (object(centres, c) <= radii_[c]) {
        covering[i] = c;
        return;
      }
  });
  std::vector<int64_t> uncovered;
  for (int64_t i = 0; i < x.n; ++i)
    if (covering[i] < 0) uncovered.push_back(i);
  ObjectStore centres_after = centres_;
  centres_after.append(gather_rows(x, uncovered).objects);
  std::vector<int64_t> part_of(static_cast<size_t>(x.n));
  std::vector<int32_t> owners = owners_;
  for (int64_t i = 0; i < x.n; ++i) {
    if (covering[i] >= 0) {
      part_of[i] = owners_[covering[i]];
    } else {
      part_of[i] = std::min_element(sizes.begin(), sizes.end()) - sizes.begin();
      owners.push_back(static_cast<int32_t>(part_of[i]));
    }
    ++sizes[part_of[i]];
  }
  centres_ = std::move(centres_after);
  radii_.resize(static_cast<size_t>(clusters() + static_cast<int64_t>(uncovered.size())), 0.0f);
  owners_ = std::move(owners);
  return part_of;
}

std::vector<std::vector<int64_t>> ClusterRoutes::route(ThreadPool& pool, const Objects& queries, float r,
                                                       int64_t parts) const {
  std::vector<std::vector<uint8_t>> reaches(static_cast<size_t>(queries.n), std::vector<uint8_t>(parts, 0));
  const Objects centres = centres_.view();
  pool.parallel_for(queries.n, [&](int64_t q) {
    const QueryDistance query(metric_, queries, q);
    for (int64_t c = 0; c < clusters(); ++c) {
      const float d = query(centres, c);
      const float slack = pruning_slack(metric_, d + radii_[c] + r);
      if (!(d - radii_[c] > r + slack)) reaches[q][owners_[c]] = 1;
      // The query ball lies inside this cluster's: every later object is beyond r.
      if (d + r < radii_[c] - slack) break;
    }
  });
  std::vector<std::vector<int64_t>> routed(static_cast<size_t>(parts));
  for (int64_t q = 0; q < queries.n; ++q)
    for (int64_t p = 0; p < parts; ++p)
      if (reaches[q][p]) routed[p].push_back(q);
  return routed;
}

int64_t ClusterRoutes::memory_bytes() const {
  return centres_.memory_bytes() + static_cast<int64_t>(radii_.capacity() * sizeof(float) +
                                                        owners_.capacity() * sizeof(int32_t));
}

void ClusterRoutes::save(ByteWriter& out) const {
  out.i64(clusters());
  centres_.save(out);
  out.array(radii_.data(), clusters());
  out.array(owners_.data(), clusters());
}

void ClusterRoutes::load(ByteReader& in, int64_t parts) {
  const int64_t count = in.i64("route count");
  if (count < 0 || static_cast<uint64_t>(count) > in.remaining()) fail(Status::corrupt_data, "corrupt index: ", count, " routes");
  ObjectStore centres(centres_.dim());
  centres.load(in, count);
  std::vector<float> radii;
  std::vector<int32_t> owners;
  in.array(radii, count, "route radii");
  in.array(owners, count, "route parts");
  for (int64_t c = 0; c < count; ++c)
    if (!(radii[c] >= 0.0f) || owners[c] < 0 || owners[c] >= parts)
      fail(Status::corrupt_data, "corrupt index: route ", c, " (radius ", radii[c], ", part ", owners[c], ")");
  centres_ = std::move(centres);
  radii_ = std::move(radii);
  owners_ = std::move(owners);
}

}  // namespace quiver
