#include "cpp/metric/list_of_clusters.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cpp/core/error.h"
#include "cpp/core/thread_pool.h"
#include "cpp/io/bytes.h"

namespace quiver {

namespace {

// d(centre, rows[i]) for every i, on the pool.
std::vector<float> distances_to(ThreadPool& pool, Metric metric, const Objects& objects, int64_t centre,
                                const std::vector<int64_t>& rows) {
  const QueryDistance query(metric, objects, centre);
  std::vector<float> out(rows.size());
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t chunk = 256;
  pool.parallel_for((n + chunk - 1) / chunk, [&](int64_t c) {
    const int64_t end = std::min(n, (c + 1) * chunk);
    for (int64_t i = c * chunk; i < end; ++i) out[i] = query(objects, rows[i]);
  });
  return out;
}

}  // namespace

void ListOfClusters::build(ThreadPool& pool, const Objects& objects) {
  std::vector<Cluster> clusters;
  std::vector<int64_t> remaining(static_cast<size_t>(objects.n));
  std::iota(remaining.begin(), remaining.end(), int64_t{0});
  std::vector<double> distance_sums(remaining.size(), 0.0);  // to the centres so far, by position
  int64_t centre = 0;
  while (!remaining.empty()) {
    // Take the centre out of the remaining objects.
    const auto at = std::find(remaining.begin(), remaining.end(), centre) - remaining.begin();
    remaining.erase(remaining.begin() + at);
    distance_sums.erase(distance_sums.begin() + at);
    const std::vector<float> d = distances_to(pool, metric(), objects, centre, remaining);

    // The bucket nearest objects (ties to the smaller row) become the members.
    std::vector<size_t> order(remaining.size());
    std::iota(order.begin(), order.end(), size_t{0});
    const size_t take = std::min(order.size(), static_cast<size_t>(bucket_));
    const auto closer = [&](size_t a, size_t b) {
      return d[a] < d[b] || (d[a] == d[b] && remaining[a] < remaining[b]);
    };
    std::nth_element(order.begin(), order.begin() + take, order.end(), closer);
    std::sort(order.begin(), order.begin() + take, closer);
    Cluster cluster;
    cluster.centre = centre;
    std::vector<char> taken(remaining.size(), 0);
    for (size_t i = 0; i < take; ++i) {
      cluster.members.push_back(remaining[order[i]]);
      cluster.member_distances.push_back(d[order[i]]);
      cluster.radius = std::max(cluster.radius, d[order[i]]);
      taken[order[i]] = 1;
    }
    clusters.push_back(std::move(cluster));

    // The rest stay for later clusters; the next centre is the farthest from the centres so far.
    size_t kept = 0;
    int64_t next = -1;
    double best = -1.0;
    for (size_t i = 0; i < remaining.size(); ++i) {
      if (taken[i]) continue;
      remaining[kept] = remaining[i];
      distance_sums[kept] = distance_sums[i] + d[i];
      if (distance_sums[kept] > best) {
        best = distance_sums[kept];
        next = remaining[kept];
      }
      ++kept;
    }
    remaining.resize(kept);
    distance_sums.resize(kept);
    centre = next;
  }
  clusters_ = std::move(clusters);
}

void ListOfClusters::insert(ThreadPool&, const Objects& objects, int64_t first_row) {
  std::vector<Cluster> clusters = clusters_;
  for (int64_t row = first_row; row < objects.n; ++row) {
    const QueryDistance query(metric(), objects, row);
    bool placed = false;
    for (Cluster& cluster : clusters) {
      const float d = query(objects, cluster.centre);
      if (d <= cluster.radius) {
        cluster.members.push_back(row);
        cluster.member_distances.push_back(d);
        placed = true;
        break;
      }
    }
    if (placed) continue;
    // Nothing covers it: no later cluster exists to be shadowed, so the last may grow.
    if (!clusters.empty() && static_cast<int64_t>(clusters.back().members.size()) < bucket_) {
      Cluster& last = clusters.back();
      const float d = query(objects, last.centre);
      last.members.push_back(row);
      last.member_distances.push_back(d);
      last.radius = std::max(last.radius, d);
    } else {
      Cluster cluster;
      cluster.centre = row;
      clusters.push_back(std::move(cluster));
    }
  }
  clusters_ = std::move(clusters);
}

bool ListOfClusters::erase(const std::vector<int64_t>& rows) {
  if (rows.empty()) return true;
  const int64_t before = rows.back() + 1;
  int64_t total = 0;
  for (const Cluster& c : clusters_) {
    if (std::binary_search(rows.begin(), rows.end(), c.centre)) return false;
    total = std::max(total, c.centre + 1);
    for (int64_t m : c.members) total = std::max(total, m + 1);
  }
  const std::vector<int64_t> to = renumbering(std::max(total, before), rows);
  std::vector<Cluster> clusters = clusters_;
  for (Cluster& c : clusters) {
    c.centre = to[c.centre];
    size_t kept = 0;
    for (size_t i = 0; i < c.members.size(); ++i) {
      if (to[c.members[i]] < 0) continue;
      c.members[kept] = to[c.members[i]];
      c.member_distances[kept] = c.member_distances[i];
      ++kept;
    }
    c.members.resize(kept);
    c.member_distances.resize(kept);
  }
  clusters_ = std::move(clusters);
  return true;
}

template <typename Radius, typename Visit>
int64_t ListOfClusters::scan(const QueryDistance& query, const Objects& objects, Radius radius,
                             Visit visit) const {
  int64_t evaluations = 0;
  for (const Cluster& c : clusters_) {
    const float dc = query(objects, c.centre);
    ++evaluations;
    visit(c.centre, dc);
    float r = radius();
    const float slack = pruning_slack(metric(), dc + c.radius + (std::isinf(r) ? 0.0f : r));
    if (!(dc - c.radius > r + slack)) {
      for (size_t i = 0; i < c.members.size(); ++i) {
        r = radius();
        if (std::fabs(dc - c.member_distances[i]) > r + slack) continue;
        ++evaluations;
        visit(c.members[i], query.within(objects, c.members[i], r));
      }
    }
    // The query ball lies inside this cluster's: later objects are all beyond r.
    if (dc + radius() < c.radius - slack) break;
  }
  return evaluations;
}

int64_t ListOfClusters::range(const QueryDistance& query, const Objects& objects, float r,
                              const RowAllowed& allowed, std::vector<MetricHit>& hits) const {
  return scan(query, objects, [r] { return r; }, [&](int64_t row, float d) {
    if (d <= r && allowed(row)) hits.push_back({d, row});
  });
}

int64_t ListOfClusters::knn(const QueryDistance& query, const Objects& objects, const RowAllowed& allowed,
                            HitHeap& best) const {
  return scan(query, objects, [&best] { return best.radius(); }, [&](int64_t row, float d) {
    if (allowed(row)) best.push({d, row});
  });
}

int64_t ListOfClusters::memory_bytes() const {
  int64_t bytes = static_cast<int64_t>(clusters_.capacity() * sizeof(Cluster));
  for (const Cluster& c : clusters_)
    bytes += static_cast<int64_t>(c.members.capacity() * (sizeof(int64_t) + sizeof(float)));
  return bytes;
}

void ListOfClusters::save(ByteWriter& out) const {
  out.i64(static_cast<int64_t>(clusters_.size()));
  for (const Cluster& c : clusters_) {
    out.i64(c.centre);
    out.array(&c.radius, 1);
    out.i64(static_cast<int64_t>(c.members.size()));
    out.array(c.members.data(), static_cast<int64_t>(c.members.size()));
    out.array(c.member_distances.data(), static_cast<int64_t>(c.members.size()));
  }
}

void ListOfClusters::load(ByteReader& in, int64_t rows) {
  const int64_t count = in.i64("cluster count");
  if (count < 0 || count > rows) fail(Status::corrupt_data, "corrupt index: ", count, " clusters for ", rows, " objects");
  std::vector<Cluster> clusters(static_cast<size_t>(count));
  std::vector<char> seen(static_cast<size_t>(rows), 0);
  int64_t placed = 0;
  const auto place = [&](int64_t row) {
    if (row < 0 || row >= rows || seen[row]) fail(Status::corrupt_data, "corrupt index: cluster row ", row);
    seen[row] = 1;
    ++placed;
  };
  for (Cluster& c : clusters) {
    c.centre = in.i64("cluster centre");
    place(c.centre);
    std::vector<float> radius;
    in.array(radius, 1, "cluster radius");
    c.radius = radius[0];
    if (!(c.radius >= 0.0f)) fail(Status::corrupt_data, "corrupt index: cluster radius ", c.radius);
    const int64_t members = in.i64("cluster size");
    in.array(c.members, members, "cluster members");
    in.array(c.member_distances, members, "cluster member distances");
    for (int64_t m : c.members) place(m);
  }
  if (placed != rows) fail(Status::corrupt_data, "corrupt index: the clusters hold ", placed, " of ", rows, " objects");
  clusters_ = std::move(clusters);
}

ListOfClusters::FlatTables ListOfClusters::flat_tables() const {
  FlatTables t;
  t.member_begin.push_back(0);
  for (const Cluster& c : clusters_) {
    t.centre_rows.push_back(c.centre);
    t.radii.push_back(c.radius);
    t.members.insert(t.members.end(), c.members.begin(), c.members.end());
    t.member_begin.push_back(static_cast<int64_t>(t.members.size()));
  }
  return t;
}

gpu::LcTables ListOfClusters::FlatTables::view() const {
  gpu::LcTables v;
  v.clusters = static_cast<int64_t>(centre_rows.size());
  v.centre_rows = centre_rows.data();
  v.radii = radii.data();
  v.member_begin = member_begin.data();
  v.members = members.data();
  return v;
}

}  // namespace quiver
