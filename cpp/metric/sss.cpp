#include "cpp/metric/sss.h"

#include <algorithm>
#include <cmath>

#include "cpp/core/error.h"
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
  pivots_ = std::move(pivots);
  table_ = std::move(table);
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
  for (int64_t& p : pivots_) p = to[p];
  table_ = std::move(table);
  rows_ -= static_cast<int64_t>(rows.size());
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

bool SssPivots::excluded(int64_t row, const std::vector<float>& dq, float r) const {
  const float* t = table_.data() + row * pivots();
  for (size_t p = 0; p < dq.size(); ++p)
    if (pivot_excludes(t[p], dq[p], r)) return true;
  return false;
}

int64_t SssPivots::range(const QueryDistance& query, const Objects& objects, float r, const RowAllowed& allowed,
                         std::vector<MetricHit>& hits) const {
  const std::vector<float> dq = pivot_distances(query, objects);
  const int64_t count = pivots();
  int64_t evaluations = count;
  // Rows a block at a time, pivot by pivot: most rows fall to the first few pivots, and the block's
  // table rows stay in cache while the survivors shrink.
  constexpr int64_t kBlock = 256;
  int64_t survivors[kBlock];
  for (int64_t begin = 0; begin < rows_; begin += kBlock) {
    const int64_t end = std::min(rows_, begin + kBlock);
    int64_t kept = 0;
    for (int64_t row = begin; row < end; ++row) survivors[kept++] = row;
    for (int64_t p = 0; p < count && kept > 0; ++p) {
      int64_t next = 0;
      for (int64_t i = 0; i < kept; ++i) {
        survivors[next] = survivors[i];
        next += pivot_excludes(table_[survivors[i] * count + p], dq[p], r) ? 0 : 1;
      }
      kept = next;
    }
    for (int64_t i = 0; i < kept; ++i) {
      if (!allowed(survivors[i])) continue;
      ++evaluations;
      const float d = query.within(objects, survivors[i], r);
      if (d <= r) hits.push_back({d, survivors[i]});
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
  for (int64_t row = 0; row < rows_; ++row) {
    if (is_pivot[row] || !allowed(row)) continue;
    const float r = best.radius();
    if (!std::isinf(r) && excluded(row, dq, r)) continue;
    ++evaluations;
    best.push({query.within(objects, row, r), row});
  }
  return evaluations;
}

int64_t SssPivots::memory_bytes() const {
  return static_cast<int64_t>(table_.capacity() * sizeof(float) + pivots_.capacity() * sizeof(int64_t));
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
  max_distance_ = m[0];
  pivots_ = std::move(pivots);
  table_ = std::move(table);
  rows_ = rows;
}

gpu::SssTables SssPivots::tables() const {
  gpu::SssTables t;
  t.pivots = pivots();
  t.pivot_rows = pivots_.data();
  t.table = table_.data();
  return t;
}

}  // namespace quiver
