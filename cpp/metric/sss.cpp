#include "cpp/metric/sss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "cpp/core/error.h"
#include "cpp/core/prefetch.h"
#include "cpp/core/thread_pool.h"
#include "cpp/io/bytes.h"

namespace quiver {

namespace {

// Objects whose pairwise distances estimate M, the largest distance in the space.
constexpr int64_t kDiameterSample = 256;

float estimate_diameter(const Metric metric, const Objects& objects) {
  const int64_t n = std::min(objects.n, kDiameterSample);
  const int64_t step = std::max<int64_t>(1, objects.n / std::max<int64_t>(n, 1));
  float largest = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const QueryDistance query(metric, objects, i * step);
    for (int64_t j = i + 1; j < n; ++j) largest = std::max(largest, query(objects, j * step));
  }
  return largest;
}

}  // namespace

void SssPivots::build(ThreadPool& pool, const Objects& objects) {
  pivots_.clear();
  table_.clear();
  buckets_ = SssBuckets{};
  rows_ = 0;
  max_distance_ = estimate_diameter(metric(), objects);
  add_pivots(pool, objects, 0);
}

void SssPivots::insert(ThreadPool& pool, const Objects& objects, int64_t first_row) {
  if (pivots_.empty()) {
    build(pool, objects);
    return;
  }
  add_pivots(pool, objects, first_row);
}

void SssPivots::add_pivots(ThreadPool& pool, const Objects& objects, int64_t first_row) {
  std::vector<int64_t> pivots = pivots_;
  const float threshold = alpha_ * max_distance_;
  for (int64_t row = first_row; row < objects.n && static_cast<int64_t>(pivots.size()) < max_pivots_; ++row) {
    const QueryDistance query(metric(), objects, row);
    bool far = true;
    for (int64_t p : pivots) {
      if (query.within(objects, p, threshold) < threshold) {
        far = false;
        break;
      }
    }
    if (far) pivots.push_back(row);
  }
  // Rows that were there keep their columns; new columns and new rows are computed.
  const int64_t old_pivots = static_cast<int64_t>(pivots_.size());
  const int64_t count = static_cast<int64_t>(pivots.size());
  std::vector<float> table(static_cast<size_t>(objects.n * count));
  pool.parallel_for(objects.n, [&](int64_t row) {
    const QueryDistance query(metric(), objects, row);
    for (int64_t p = 0; p < count; ++p) {
      const bool known = row < rows_ && p < old_pivots;
      table[row * count + p] = known ? table_[row * old_pivots + p] : query(objects, pivots[p]);
    }
  });
  // New rows go into the buckets; new pivots among the bucketed ones (or a first build) cut them anew.
  const bool same_buckets = buckets_.pivots == std::min(count, sss_buckets::kPivots) && rows_ > 0;
  SssBuckets buckets = same_buckets ? grown_sss_buckets(buckets_, table.data(), objects.n, count)
                                    : build_sss_buckets(table.data(), objects.n, count, count);
  // Nothing changes before here (an allocation that fails leaves the index as it was).
  pivots_ = std::move(pivots);
  table_ = std::move(table);
  buckets_ = std::move(buckets);
  rows_ = objects.n;
}

bool SssPivots::erase(const std::vector<int64_t>& rows) {
  if (rows.empty()) return true;
  for (int64_t p : pivots_)
    if (std::binary_search(rows.begin(), rows.end(), p)) return false;
  const std::vector<int64_t> to = renumbering(rows_, rows);
  const int64_t count = pivots();
  std::vector<float> table;
  table.reserve(static_cast<size_t>((rows_ - static_cast<int64_t>(rows.size())) * count));
  for (int64_t row = 0; row < rows_; ++row)
    if (to[row] >= 0) table.insert(table.end(), table_.begin() + row * count, table_.begin() + (row + 1) * count);
  const int64_t left = rows_ - static_cast<int64_t>(rows.size());
  SssBuckets buckets = build_sss_buckets(table.data(), left, count, count);
  for (int64_t& p : pivots_) p = to[p];
  table_ = std::move(table);
  buckets_ = std::move(buckets);
  rows_ = left;
  return true;
}

std::vector<float> SssPivots::pivot_distances(const QueryDistance& query, const Objects& objects) const {
  std::vector<float> dq(pivots_.size());
  for (size_t p = 0; p < pivots_.size(); ++p) dq[p] = query(objects, pivots_[p]);
  return dq;
}

bool SssPivots::pivot_excludes(float table_value, float query_value, float r) const {
  const float bound = std::fabs(table_value - query_value);
  return bound > r + pruning_slack(metric(), bound + r);
}

std::pair<float, float> SssPivots::kept_interval(float query_value, float r) const {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (!std::isfinite(query_value) || !std::isfinite(r)) return {-kInf, kInf};
  // pivot_excludes keeps t only if |t - q| <= r + slack(|t - q| + r), slack = 1e-5 of its scale
  // (query_distance.h): |t - q| <= (r + 1e-5 r + 1e-30) / (1 - 1e-5). Three times the slack, and
  // as much again of q, cover the rounding of the float test; edit distances are exact integers.
  const double q = query_value;
  const double w = metric() == Metric::edit ? double(r)
                                             : (double(r) * (1 + 3e-5) + 1e-29) / (1 - 3e-5) + 3e-5 * std::fabs(q);
  return {std::nextafter(float(q - w), -kInf), std::nextafter(float(q + w), kInf)};
}

bool SssPivots::excluded(int64_t row, const std::vector<float>& dq, float r) const {
  const float* t = table_.data() + row * pivots();
  for (size_t p = 0; p < dq.size(); ++p)
    if (pivot_excludes(t[p], dq[p], r)) return true;
  return false;
}

SssPivots::BucketRanges SssPivots::bucket_ranges(const std::vector<float>& dq, float r) const {
  BucketRanges ranges;
  for (int64_t p = 0; p < buckets_.pivots; ++p) {
    const float* edges = buckets_.edges.data() + p * sss_buckets::kEdges;
    const std::pair<float, float> kept = kept_interval(dq[p], r);
    ranges.lo[p] = bucket_of(edges, kept.first);
    ranges.hi[p] = bucket_of(edges, kept.second);
  }
  return ranges;
}

uint32_t SssPivots::existing_rows(int64_t w) const {
  return low_rows(rows_ - w * 32);
}

uint32_t SssPivots::kept_word(const BucketRanges& ranges, int64_t w) const {
  uint32_t alive = existing_rows(w);
  for (int64_t p = 0; p < buckets_.pivots && alive != 0; ++p)
    buckets_.keep(p, ranges.lo[p], ranges.hi[p], w, 1, &alive);
  return alive;
}

int64_t SssPivots::range(const QueryDistance& query, const Objects& objects, float r, const RowAllowed& allowed,
                         std::vector<MetricHit>& hits) const {
  const std::vector<float> dq = pivot_distances(query, objects);
  int64_t evaluations = pivots();
  const BucketRanges ranges = bucket_ranges(dq, r);
  // The rows every bucketed pivot keeps, pivot after pivot over all the words (each pivot's three
  // lines of words streamed once), then the exact test and the distance for those.
  const int64_t words = buckets_.words();
  std::vector<uint32_t> alive(static_cast<size_t>(words));
  for (int64_t w = 0; w < words; ++w) alive[w] = existing_rows(w);
  for (int64_t p = 0; p < buckets_.pivots; ++p) buckets_.keep(p, ranges.lo[p], ranges.hi[p], 0, words, alive.data());
  const int64_t row_bytes = pivots() * static_cast<int64_t>(sizeof(float));
  for (int64_t w = 0; w < words; ++w) {
    // The word's rows of the table asked for at once: each is a row the buckets chose, rarely cached.
    for (uint32_t bits = alive[w]; bits != 0; bits &= bits - 1)
      prefetch_bytes(table_.data() + (w * 32 + __builtin_ctz(bits)) * pivots(), row_bytes);
    for (uint32_t bits = alive[w]; bits != 0; bits &= bits - 1) {
      const int64_t row = w * 32 + __builtin_ctz(bits);
      if (excluded(row, dq, r) || !allowed(row)) continue;
      ++evaluations;
      const float d = query.within(objects, row, r);
      if (d <= r) hits.push_back({d, row});
    }
  }
  return evaluations;
}

int64_t SssPivots::knn(const QueryDistance& query, const Objects& objects, const RowAllowed& allowed,
                       HitHeap& best) const {
  const std::vector<float> dq = pivot_distances(query, objects);
  int64_t evaluations = pivots();
  // Pivots first: their distances are known and make the radius small early.
  std::vector<char> is_pivot(static_cast<size_t>(rows_), 0);
  for (size_t p = 0; p < pivots_.size(); ++p) {
    is_pivot[pivots_[p]] = 1;
    if (allowed(pivots_[p])) best.push({dq[p], pivots_[p]});
  }
  // A word of 32 rows at a time through the buckets of the radius so far (their ranges follow it
  // down), then the exact test at the current radius and the distance.
  float ranges_radius = best.radius();
  BucketRanges ranges = bucket_ranges(dq, ranges_radius);
  for (int64_t w = 0; w < buckets_.words(); ++w) {
    if (best.radius() < ranges_radius) {
      ranges_radius = best.radius();
      ranges = bucket_ranges(dq, ranges_radius);
    }
    for (uint32_t bits = kept_word(ranges, w); bits != 0; bits &= bits - 1) {
      const int64_t row = w * 32 + __builtin_ctz(bits);
      if (is_pivot[row] || !allowed(row)) continue;
      const float r = best.radius();
      if (!std::isinf(r) && excluded(row, dq, r)) continue;
      ++evaluations;
      best.push({query.within(objects, row, r), row});
    }
  }
  return evaluations;
}

int64_t SssPivots::memory_bytes() const {
  return static_cast<int64_t>(table_.capacity() * sizeof(float) + pivots_.capacity() * sizeof(int64_t)) +
         buckets_.memory_bytes();
}

void SssPivots::save(ByteWriter& out) const {
  out.array(&max_distance_, 1);
  out.i64(pivots());
  out.array(pivots_.data(), pivots());
  out.array(table_.data(), rows_ * pivots());
}

void SssPivots::load(ByteReader& in, int64_t rows) {
  std::vector<float> m;
  in.array(m, 1, "SSS diameter");
  if (!(m[0] >= 0.0f) || std::isinf(m[0])) fail(Status::corrupt_data, "corrupt index: SSS diameter ", m[0]);
  const int64_t count = in.i64("pivot count");
  if (count < 0 || count > max_pivots_ || (rows > 0 && count == 0) || count > rows)
    fail(Status::corrupt_data, "corrupt index: ", count, " pivots for ", rows, " objects");
  std::vector<int64_t> pivots;
  in.array(pivots, count, "pivots");
  for (int64_t p : pivots)
    if (p < 0 || p >= rows) fail(Status::corrupt_data, "corrupt index: pivot row ", p);
  if (rows > 0 && static_cast<uint64_t>(count) > in.remaining() / sizeof(float) / static_cast<uint64_t>(rows))
    fail(Status::corrupt_data, "corrupt index: the pivot table exceeds the data");
  std::vector<float> table;
  in.array(table, rows * count, "pivot table");
  SssBuckets buckets = build_sss_buckets(table.data(), rows, count, count);
  max_distance_ = m[0];
  pivots_ = std::move(pivots);
  table_ = std::move(table);
  buckets_ = std::move(buckets);
  rows_ = rows;
}

gpu::SssTables SssPivots::tables() const {
  gpu::SssTables t;
  t.pivots = pivots();
  t.pivot_rows = pivots_.data();
  t.table = table_.data();
  t.buckets = &buckets_;
  return t;
}

}  // namespace quiver
