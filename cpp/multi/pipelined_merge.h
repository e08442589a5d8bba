// A sharded search whose merge runs while the shards are still searching. Each shard reports the
// query rows whose results are final in its device buffer (SearchOptions::rows_done); once every
// shard has a run of rows ready, every shard's GPU merges its share of that run and copies it to the
// caller, on a Resources of its own (the shard's is busy with its search). Only the last run's merge
// and copy are left when the searches end, where merging after them would add all of it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cpp/backend/gpu_multi.h"
#include "cpp/core/metric.h"

namespace quiver {

// Where the merged rows of one batch go: lists[p] holds shard p's nq x k results.
struct MergeTarget {
  Metric metric = Metric::l2;
  int64_t nq = 0;
  int64_t k = 0;
  std::vector<const gpu::ResultBuffer*> lists;
  float* distances = nullptr;  // nq x k, host or device memory
  int64_t* ids = nullptr;
};

// Runs search(p, rows_done) for every shard p at once, each on its own thread, and merges rows as
// they become ready on mergers[p] (one Resources per shard, on its device). rows_done(rows) tells
// that shard p's rows [0, rows) are final; a search that never calls it has all its rows final when
// it returns. Throws the first error (a search's before a merge's) once every thread has ended.
void search_while_merging(const std::vector<gpu::Resources*>& mergers, const MergeTarget& target,
                          const std::function<void(int64_t p, const std::function<void(int64_t)>& rows_done)>& search);

}  // namespace quiver
