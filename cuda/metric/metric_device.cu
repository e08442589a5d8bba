// gpu_metric.h's storage calls: create, upload (all or nothing), free, and the object checks and
// copies the searches share.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpp/backend/gpu_metric.h"
#include "cpp/core/error.h"
#include "cpp/metric/query_distance.h"
#include "cuda/core/device_scope.h"
#include "cuda/core/error.h"
#include "cuda/core/resources.h"
#include "cuda/core/transfer.h"
#include "cuda/metric/metric_device.h"

namespace quiver::gpu {

namespace {

// The widest vectors accepted: the kernels index components with int.
constexpr int64_t kMaxMetricDim = int64_t(1) << 24;

// Validates List of Clusters tables over n rows and returns cluster_of (metric_device.h).
std::vector<int32_t> cluster_rows(const LcTables& lc, int64_t n) {
  require(lc.clusters >= 0 && lc.clusters <= n, "List of Clusters: clusters = ", lc.clusters, " is outside 0 .. ",
          n);
  require(n == 0 || lc.clusters >= 1, "List of Clusters: no cluster for ", n, " rows");
  if (lc.clusters > 0)
    require(lc.centre_rows != nullptr && lc.radii != nullptr && lc.member_begin != nullptr,
            "List of Clusters: null table");
  std::vector<int32_t> cluster_of(size_t(n), 0);
  std::vector<uint8_t> seen(size_t(n), 0);
  if (lc.clusters == 0) return cluster_of;
  require(lc.member_begin[0] == 0, "List of Clusters: member_begin[0] = ", lc.member_begin[0], ", not 0");
  require(lc.member_begin[lc.clusters] == n - lc.clusters, "List of Clusters: ", lc.member_begin[lc.clusters],
          " members and ", lc.clusters, " centres for ", n, " rows");
  require(n == lc.clusters || lc.members != nullptr, "List of Clusters: null members");
  for (int64_t c = 0; c < lc.clusters; ++c)
    require(lc.member_begin[c + 1] >= lc.member_begin[c], "List of Clusters: member_begin decreases at ", c + 1);
  for (int64_t c = 0; c < lc.clusters; ++c) {
    const int64_t centre = lc.centre_rows[c];
    require(centre >= 0 && centre < n, "List of Clusters: centre_rows[", c, "] = ", centre, " is not a row");
    require(!seen[size_t(centre)], "List of Clusters: row ", centre, " is in two clusters");
    seen[size_t(centre)] = 1;
    cluster_of[size_t(centre)] = ~int32_t(c);
    require(lc.radii[c] >= 0.0f, "List of Clusters: radii[", c, "] = ", lc.radii[c], " is not a radius");
    for (int64_t i = lc.member_begin[c]; i < lc.member_begin[c + 1]; ++i) {
      const int64_t row = lc.members[i];
      require(row >= 0 && row < n, "List of Clusters: members[", i, "] = ", row, " is not a row");
      require(!seen[size_t(row)], "List of Clusters: row ", row, " is in two clusters");
      seen[size_t(row)] = 1;
      cluster_of[size_t(row)] = int32_t(c);
    }
  }
  return cluster_of;  // every row seen: n rows, n distinct entries
}

void check_sss(const SssTables& sss, int64_t n) {
  require(sss.pivots >= 0 && sss.pivots <= n, "SSS: pivots = ", sss.pivots, " is outside 0 .. ", n);
  if (sss.pivots == 0) return;
  require(sss.pivot_rows != nullptr && sss.table != nullptr, "SSS: null table");
  for (int64_t p = 0; p < sss.pivots; ++p)
    require(sss.pivot_rows[p] >= 0 && sss.pivot_rows[p] < n, "SSS: pivot_rows[", p, "] = ", sss.pivot_rows[p],
            " is not a row");
}

template <typename T>
void to_device(Resources& resources, DeviceBuffer<T>& dst, const T* src, int64_t count, cudaStream_t stream) {
  if (count > 0)
    copy_to_device(resources.staging(), resources.device(), dst.get(), src, size_t(count) * sizeof(T), stream);
}

}  // namespace

void check_metric_objects(const char* what, const Objects& objects, int64_t dim) {
  require(objects.n >= 0, what, ": n = ", objects.n, " is negative");
  if (dim > 0) {
    require(objects.dim == dim, what, ": vectors of dimension ", objects.dim, " for a space of dimension ", dim);
    require(objects.n == 0 || objects.vectors != nullptr, what, ": null vectors");
    return;
  }
  require(objects.dim == 0, what, ": vectors (dim = ", objects.dim, ") for a space of strings");
  const Strings& s = objects.strings;
  require(s.n == objects.n, what, ": ", s.n, " strings for n = ", objects.n);
  if (s.n == 0) return;
  require(s.offsets != nullptr, what, ": null offsets");
  require(s.offsets[0] >= 0, what, ": offsets[0] = ", s.offsets[0], " is negative");
  for (int64_t i = 0; i < s.n; ++i) {
    const int64_t length = s.offsets[i + 1] - s.offsets[i];
    require(length >= 0, what, ": offsets decrease at string ", i);
    require(length <= kMaxStringBytes, what, ": string ", i, " has ", length, " bytes, above ", kMaxStringBytes);
  }
  require(s.offsets[s.n] == s.offsets[0] || s.bytes != nullptr, what, ": null bytes");
}

int64_t padded_string_bytes(const Strings& strings) {
  const int64_t total = strings.n > 0 ? strings.offsets[strings.n] - strings.offsets[0] : 0;
  return (total + 7) / 8 * 8 + 8;
}

void copy_strings_to_device(Resources& resources, const Strings& strings, int64_t* offsets, uint8_t* bytes,
                            cudaStream_t stream) {
  const int device = resources.device();
  const int64_t base = strings.n > 0 ? strings.offsets[0] : 0;
  std::vector<int64_t> rebased(size_t(strings.n + 1), 0);
  for (int64_t i = 0; i <= strings.n && strings.n > 0; ++i) rebased[size_t(i)] = strings.offsets[i] - base;
  copy_to_device(resources.staging(), device, offsets, rebased.data(), rebased.size() * sizeof(int64_t), stream);
  const int64_t total = rebased.back();
  if (total > 0) copy_to_device(resources.staging(), device, bytes, strings.bytes + base, size_t(total), stream);
  QV_CUDA_CHECK(cudaMemsetAsync(bytes + total, 0, size_t(padded_string_bytes(strings) - total), stream));
}

MetricDevice* metric_create(Resources& resources, Metric metric, int64_t dim) {
  if (holds_strings(metric)) {
    require(dim == 0, "an edit distance space holds strings: dim must be 0, not ", dim);
  } else {
    require(metric == Metric::l2 || metric == Metric::l1 || metric == Metric::linf, "the GPU metric search takes ",
            "L2, L1, L-infinity or edit distance, not ", metric_name(metric));
    require(dim >= 1 && dim <= kMaxMetricDim, "dim = ", dim, " is outside 1 .. ", kMaxMetricDim);
  }
  return new MetricDevice(resources.device(), metric, dim);
}

void metric_free(MetricDevice* device) noexcept {
  if (device == nullptr) return;
  DeviceScopeNoThrow scope(device->device);
  delete device;
}

void metric_upload(Resources& resources, MetricDevice& device, const Objects& objects, const LcTables* lc,
                   const SssTables* sss) {
  DeviceScope device_scope(resources.device());
  require(device.device == resources.device(), "the metric space lives on device ", device.device,
          ", the resources on ", resources.device());
  check_metric_objects("metric_upload", objects, device.dim);
  const int64_t n = objects.n;
  require(n <= kMaxMetricRows, "n = ", n, " is above ", kMaxMetricRows, " (rows are 32-bit on the device)");
  std::vector<int32_t> cluster_of;
  if (lc != nullptr) cluster_of = cluster_rows(*lc, n);
  if (sss != nullptr) check_sss(*sss, n);

  // Everything new is allocated and copied before anything old is replaced.
  Session session(resources);
  cudaStream_t stream = resources.stream(0);
  DevicePool& pool = resources.pool();
  DeviceBuffer<float> vectors;
  DeviceBuffer<int64_t> offsets;
  DeviceBuffer<uint8_t> bytes;
  if (device.strings()) {
    offsets = DeviceBuffer<int64_t>(pool, n + 1);
    bytes = DeviceBuffer<uint8_t>(pool, padded_string_bytes(objects.strings));
    copy_strings_to_device(resources, objects.strings, offsets.get(), bytes.get(), stream);
  } else {
    vectors = DeviceBuffer<float>(pool, n * device.dim);
    to_device(resources, vectors, objects.vectors, n * device.dim, stream);
  }

  DeviceBuffer<int32_t> centre_rows, cluster_buffer, member_begin, members;
  DeviceBuffer<float> radii, member_distances;
  if (lc != nullptr && lc->clusters > 0) {
    std::vector<int32_t> centres(size_t(lc->clusters));
    for (int64_t c = 0; c < lc->clusters; ++c) centres[size_t(c)] = int32_t(lc->centre_rows[c]);
    std::vector<int32_t> begin(size_t(lc->clusters + 1));
    for (int64_t c = 0; c <= lc->clusters; ++c) begin[size_t(c)] = int32_t(lc->member_begin[c]);
    const int64_t member_count = lc->member_begin[lc->clusters];
    std::vector<int32_t> member_rows(static_cast<size_t>(member_count));
    for (int64_t i = 0; i < member_count; ++i) member_rows[size_t(i)] = int32_t(lc->members[i]);
    // Each member's distance to its centre (the host's, as the SSS table's), for the range
    // search's first filter |d(x, c) - d(q, c)| > r.
    std::vector<float> centre_gaps(static_cast<size_t>(member_count));
    for (int64_t c = 0; c < lc->clusters; ++c) {
      if (lc->member_begin[c + 1] == lc->member_begin[c]) continue;
      const QueryDistance centre(device.metric, objects, lc->centre_rows[c]);
      for (int64_t i = lc->member_begin[c]; i < lc->member_begin[c + 1]; ++i)
        centre_gaps[size_t(i)] = centre(objects, lc->members[i]);
    }
    centre_rows = DeviceBuffer<int32_t>(pool, lc->clusters);
    radii = DeviceBuffer<float>(pool, lc->clusters);
    cluster_buffer = DeviceBuffer<int32_t>(pool, n);
    member_begin = DeviceBuffer<int32_t>(pool, lc->clusters + 1);
    members = DeviceBuffer<int32_t>(pool, member_count);
    member_distances = DeviceBuffer<float>(pool, member_count);
    to_device(resources, centre_rows, centres.data(), lc->clusters, stream);
    to_device(resources, radii, lc->radii, lc->clusters, stream);
    to_device(resources, cluster_buffer, cluster_of.data(), n, stream);
    to_device(resources, member_begin, begin.data(), lc->clusters + 1, stream);
    to_device(resources, members, member_rows.data(), member_count, stream);
    to_device(resources, member_distances, centre_gaps.data(), member_count, stream);
  }

  DeviceBuffer<int32_t> pivot_rows;
  DeviceBuffer<float> table, bucket_edges;
  DeviceBuffer<uint32_t> bucket_bits;
  int64_t bucket_pivots = 0, bucket_words = 0;
  if (sss != nullptr && sss->pivots > 0) {
    std::vector<int32_t> pivots(size_t(sss->pivots));
    for (int64_t p = 0; p < sss->pivots; ++p) pivots[size_t(p)] = int32_t(sss->pivot_rows[p]);
    pivot_rows = DeviceBuffer<int32_t>(pool, sss->pivots);
    // Pivot-major on the device (metric_device.h).
    std::vector<float> by_pivot(size_t(n * sss->pivots));
    for (int64_t row = 0; row < n; ++row)
      for (int64_t p = 0; p < sss->pivots; ++p) by_pivot[size_t(p * n + row)] = sss->table[row * sss->pivots + p];
    table = DeviceBuffer<float>(pool, n * sss->pivots);
    to_device(resources, pivot_rows, pivots.data(), sss->pivots, stream);
    to_device(resources, table, by_pivot.data(), n * sss->pivots, stream);
    // The batched scan's buckets (vectors), as the index keeps them.
    const SssBuckets* buckets = sss->buckets;
    if (!device.strings() && buckets != nullptr && buckets->pivots > 0 && buckets->rows == n) {
      bucket_pivots = buckets->pivots;
      bucket_words = buckets->words();
      bucket_edges = DeviceBuffer<float>(pool, int64_t(buckets->edges.size()));
      bucket_bits = DeviceBuffer<uint32_t>(pool, int64_t(buckets->bits.size()));
      to_device(resources, bucket_edges, buckets->edges.data(), int64_t(buckets->edges.size()), stream);
      to_device(resources, bucket_bits, buckets->bits.data(), int64_t(buckets->bits.size()), stream);
    }
  }
  session.finish();

  device.rows = n;
  device.vectors = std::move(vectors);
  device.offsets = std::move(offsets);
  device.bytes = std::move(bytes);
  device.has_lc = lc != nullptr;
  device.clusters = lc != nullptr ? lc->clusters : 0;
  device.centre_rows = std::move(centre_rows);
  device.radii = std::move(radii);
  device.cluster_of = std::move(cluster_buffer);
  device.member_begin = std::move(member_begin);
  device.members = std::move(members);
  device.member_distances = std::move(member_distances);
  device.has_sss = sss != nullptr;
  device.pivots = sss != nullptr ? sss->pivots : 0;
  device.pivot_rows = std::move(pivot_rows);
  device.table = std::move(table);
  device.bucket_pivots = bucket_pivots;
  device.bucket_words = bucket_words;
  device.bucket_edges = std::move(bucket_edges);
  device.bucket_bits = std::move(bucket_bits);
}

int64_t metric_rows(const MetricDevice& device) { return device.rows; }

int64_t metric_device_bytes(const MetricDevice& device) {
  return device.vectors.bytes() + device.offsets.bytes() + device.bytes.bytes() + device.centre_rows.bytes() +
         device.radii.bytes() + device.cluster_of.bytes() + device.member_begin.bytes() + device.members.bytes() +
         device.member_distances.bytes() +
         device.pivot_rows.bytes() + device.table.bytes() + device.bucket_edges.bytes() + device.bucket_bits.bytes();
}

}  // namespace quiver::gpu
