#include "cpp/multi/pipelined_merge.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "cpp/multi/run_parts.h"

namespace quiver {

namespace {

// A run of ready rows is merged once it holds this many rows, or the last row: each run costs every
// GPU a merge call.
constexpr int64_t kMinMergedRows = 1024;

// The shards' progress, and the runs of rows every shard has ready, in order: run i is rows
// [bounds_[i], bounds_[i + 1]).
class ReadyRows {
 public:
  ReadyRows(int64_t parts, int64_t nq) : ready_(static_cast<size_t>(parts), 0), nq_(nq), bounds_{0} {}

  // Shard p's rows [0, rows) are final.
  void report(int64_t p, int64_t rows) {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_[p] = std::max(ready_[p], std::min(rows, nq_));
    const int64_t everywhere = *std::min_element(ready_.begin(), ready_.end());
    const int64_t last = bounds_.back();
    if (everywhere > last && (everywhere == nq_ || everywhere - last >= kMinMergedRows)) {
      bounds_.push_back(everywhere);
      changed_.notify_all();
    }
  }

  // No more runs: a search or a merge failed.
  void stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    changed_.notify_all();
  }

  // Run i's rows, once ready; false when there will be none (every row merged, or stopped).
  bool run(size_t i, int64_t* begin, int64_t* end) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return bounds_.size() > i + 1 || bounds_.back() == nq_ || stopped_; });
    if (bounds_.size() <= i + 1 || stopped_) return false;
    *begin = bounds_[i];
    *end = bounds_[i + 1];
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int64_t> ready_;
  const int64_t nq_;
  std::vector<int64_t> bounds_;
  bool stopped_ = false;
};

}  // namespace

void search_while_merging(const std::vector<gpu::Resources*>& mergers, const MergeTarget& target,
                          const std::function<void(int64_t p, const std::function<void(int64_t)>& rows_done)>& search) {
  const auto parts = static_cast<int64_t>(mergers.size());
  ReadyRows ready(parts, target.nq);
  // Tasks [0, parts) search, [parts, 2 parts) merge: GPU p merges its share of every run.
  run_parts_or_throw(2 * parts, [&](int64_t task) {
    try {
      if (task < parts) {
        search(task, [&ready, task](int64_t rows) { ready.report(task, rows); });
        ready.report(task, target.nq);
        return;
      }
      const int64_t p = task - parts;
      int64_t begin = 0, end = 0;
      for (size_t i = 0; ready.run(i, &begin, &end); ++i) {
        const int64_t first = begin + (end - begin) * p / parts;
        const int64_t rows = begin + (end - begin) * (p + 1) / parts - first;
        if (rows > 0)
          gpu::merge_knn(*mergers[p], target.metric, first, rows, target.k, target.lists,
                         target.distances + first * target.k, target.ids + first * target.k);
      }
    } catch (...) {
      ready.stop();
      throw;
    }
  });
}

}  // namespace quiver
