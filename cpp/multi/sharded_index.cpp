#include "cpp/multi/sharded_index.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <thread>

#include "cpp/core/error.h"
#include "cpp/multi/run_parts.h"

namespace quiver {

namespace {

// Bytes of the shards' result buffers of one search, host or device: its queries go in chunks whose
// results fit them. The buffers are kept for the next search (one set per concurrent caller).
constexpr int64_t kKeptBufferBytes = int64_t{512} << 20;

// Searches nq queries in chunks of `chunk`, alternating two buffer sets: search(begin, count, set)
// fills set 0 or 1 with the shards' results of queries [begin, begin + count), and merge(begin,
// count, set) merges them, on a thread of its own while the shards search the next chunk.
template <typename Search, typename Merge>
void search_in_chunks(int64_t nq, int64_t chunk, Search search, Merge merge) {
  std::thread merging;
  std::exception_ptr error, merge_error;  // merge_error: written by the merging thread only
  auto finish_merge = [&] {
    if (merging.joinable()) merging.join();
    if (merge_error && !error) error = merge_error;
  };
  for (int64_t begin = 0, round = 0; begin < nq && !error; begin += chunk, ++round) {
    const int64_t count = std::min(chunk, nq - begin);
    const int set = static_cast<int>(round % 2);
    try {
      search(begin, count, set);
    } catch (...) {
      error = std::current_exception();
    }
    finish_merge();  // the previous chunk's, whose set the next round reuses
    if (error) break;
    auto merge_chunk = [&merge, begin, count, set, &merge_error] {
      try {
        merge(begin, count, set);
      } catch (...) {
        merge_error = std::current_exception();
      }
    };
    if (begin + count >= nq) {
      merge_chunk();  // the last chunk: nothing to overlap with
    } else {
      merging = std::thread(merge_chunk);
    }
  }
  finish_merge();
  if (error) std::rethrow_exception(error);
}

bool out_of_device_memory(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.status() == Status::out_of_device_memory;
  } catch (...) {
    return false;
  }
}

}  // namespace

std::vector<int64_t> balanced_shares(int64_t n, const std::vector<int64_t>& counts, const std::vector<bool>& full) {
  std::vector<size_t> open;
  for (size_t p = 0; p < counts.size(); ++p)
    if (!full[p]) open.push_back(p);
  std::sort(open.begin(), open.end(), [&](size_t a, size_t b) { return counts[a] < counts[b]; });
  // Water-filling: raise the emptiest shards together to the next count up until n is placed.
  std::vector<int64_t> shares(counts.size(), 0);
  int64_t left = n;
  for (size_t raised = 1; raised <= open.size() && left > 0; ++raised) {
    const int64_t level = counts[open[raised - 1]];
    const int64_t next = raised < open.size() ? counts[open[raised]] : std::numeric_limits<int64_t>::max();
    const int64_t width = static_cast<int64_t>(raised);
    const bool last = next == std::numeric_limits<int64_t>::max() || (next - level) >= (left + width - 1) / width;
    if (!last) {
      // Everyone raised so far climbs to `next`; the shard at `next` joins them.
      for (size_t i = 0; i < raised; ++i) {
        const int64_t climb = next - (counts[open[i]] + shares[open[i]]);
        shares[open[i]] += climb;
        left -= climb;
      }
      continue;
    }
    for (size_t i = 0; i < raised; ++i) shares[open[i]] += left / width + (static_cast<int64_t>(i) < left % width);
    left = 0;
  }
  return shares;
}

int64_t ShardedIndex::count() const {
  int64_t total = 0;
  for (const auto& part : parts_) total += part->count();
  return total;
}

bool ShardedIndex::holds_id(int64_t id) const {
  return std::any_of(parts_.begin(), parts_.end(), [&](const auto& part) { return part->holds_id(id); });
}

void ShardedIndex::add_batch(const Objects& x, const int64_t* ids) {
  std::vector<int64_t> assigned;
  const int64_t* added = new_ids(x.n, ids, assigned);
  const int64_t parts = part_count();
  std::vector<int64_t> counts(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) counts[p] = parts_[p]->count();
  std::vector<bool> full(static_cast<size_t>(parts), false);
  for (;;) {
    const std::vector<int64_t> shares = balanced_shares(x.n, counts, full);
    std::vector<int64_t> begin(static_cast<size_t>(parts + 1), 0);
    std::partial_sum(shares.begin(), shares.end(), begin.begin() + 1);
    std::vector<Objects> slices(static_cast<size_t>(parts));
    std::vector<const int64_t*> slice_ids(static_cast<size_t>(parts));
    for (int64_t p = 0; p < parts; ++p) {
      slices[p] = slice_rows(x, begin[p], shares[p]);
      slice_ids[p] = added + begin[p];
    }
    const std::vector<std::exception_ptr> errors = add_to_parts(slices, slice_ids);
    if (std::none_of(errors.begin(), errors.end(), [](const auto& e) { return e != nullptr; })) {
      note_added(x.n, added);
      return;
    }
    // A shard out of device memory is full; the others may still have room for the whole add.
    std::exception_ptr first;
    bool only_memory = true;
    for (int64_t p = 0; p < parts; ++p) {
      if (!errors[p]) continue;
      if (!first) first = errors[p];
      only_memory = only_memory && out_of_device_memory(errors[p]);
      full[p] = true;
    }
    if (!only_memory || std::all_of(full.begin(), full.end(), [](bool f) { return f; }))
      std::rethrow_exception(first);
  }
}

void ShardedIndex::search_batch(const Objects& queries, int64_t k, const SearchOptions& options, float* distances,
                                int64_t* ids) const {
  if (part_count() == 1) {
    search_in(*parts_[0], queries, k, options, distances, ids);
    return;
  }
  if (merges_on_device()) {
    try {
      search_merging_on_device(queries, k, options, distances, ids);
      return;
    } catch (const Error& e) {
      if (e.status() != Status::out_of_device_memory) throw;
      // No room on the devices for the shards' results: they come to the host.
    }
  }
  search_merging_on_host(queries, k, options, distances, ids);
}

bool ShardedIndex::merges_on_device() const {
  return std::all_of(parts_.begin(), parts_.end(), [](const auto& part) { return part->writes_device_results(); });
}

void ShardedIndex::search_merging_on_device(const Objects& queries, int64_t k, const SearchOptions& options,
                                            float* distances, int64_t* ids) const {
  // Every shard's GPU merges a share of each run of rows that all shards have searched (pulling only
  // those rows from the others) and copies its merged rows out, while the shards search on
  // (pipelined_merge.h). (Merged once every search had ended, 2 x H200, k = 100, 100 000 queries:
  // 24.4 ms against 21.5 for one GPU searching one shard alone; chunks of the batch merged while the
  // shards searched the next, a search call each: 26.0 ms.)
  const int64_t parts = part_count();
  const int64_t bytes_per_query = parts * k * static_cast<int64_t>(sizeof(float) + sizeof(int64_t));
  const int64_t chunk = std::clamp<int64_t>(kKeptBufferBytes / bytes_per_query, 1, std::max<int64_t>(queries.n, 1));
  KeptSets<DeviceMergeSet>::Lease lease(device_sets_);
  DeviceMergeSet& set = *lease;
  set.buffers.resize(static_cast<size_t>(parts));
  set.mergers.resize(static_cast<size_t>(parts));
  std::vector<gpu::Resources*> mergers(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    if (!set.mergers[p]) {
      gpu::ResourcesOptions merger;
      merger.device = parts_[p]->context().device_id();
      set.mergers[p] = gpu::make_resources(merger);
    }
    mergers[p] = set.mergers[p].get();
  }
  MergeTarget target;
  target.metric = metric();
  target.k = k;
  target.lists.resize(static_cast<size_t>(parts));
  for (int64_t begin = 0; begin < queries.n; begin += chunk) {
    const int64_t count = std::min(chunk, queries.n - begin);
    run_parts_or_throw(parts, [&](int64_t p) {
      gpu::ResultBufferPtr& buffer = set.buffers[p];
      if (!buffer || gpu::result_buffer_entries(*buffer) < count * k) {
        buffer.reset();  // the old one's memory first
        buffer = gpu::make_result_buffer(parts_[p]->context().gpu(), chunk * k);
      }
      target.lists[p] = buffer.get();
    });
    target.nq = count;
    target.distances = distances + begin * k;
    target.ids = ids + begin * k;
    search_while_merging(mergers, target, [&](int64_t p, const std::function<void(int64_t)>& rows_done) {
      SearchOptions reporting = options;
      reporting.rows_done = rows_done;
      gpu::ResultBuffer& buffer = *set.buffers[p];
      search_in(*parts_[p], slice_rows(queries, begin, count), k, reporting, gpu::result_distances(buffer),
                gpu::result_ids(buffer));
    });
  }
}

void ShardedIndex::search_merging_on_host(const Objects& queries, int64_t k, const SearchOptions& options,
                                          float* distances, int64_t* ids) const {
  // Two sets of host buffers: the CPU merges one chunk while the shards search the next.
  const int64_t parts = part_count();
  const int64_t bytes_per_query = parts * k * static_cast<int64_t>(sizeof(float) + sizeof(int64_t));
  const int64_t chunk = std::max<int64_t>(1, kKeptBufferBytes / (2 * bytes_per_query));
  KeptSets<std::vector<PartResult>>::Lease lease(host_buffers_);
  std::vector<PartResult>& buffers = *lease;
  buffers.resize(static_cast<size_t>(2 * parts));
  auto search = [&](int64_t begin, int64_t count, int set) {
    run_parts_or_throw(parts, [&](int64_t p) {
      PartResult& buffer = buffers[set * parts + p];
      buffer.distances.resize(static_cast<size_t>(count * k));
      buffer.ids.resize(static_cast<size_t>(count * k));
      search_in(*parts_[p], slice_rows(queries, begin, count), k, options, buffer.distances.data(),
                buffer.ids.data());
    });
  };
  auto merge = [&](int64_t begin, int64_t count, int set) {
    merge_knn(context().pool(), metric(), count, k, buffers.data() + set * parts, parts, distances + begin * k,
              ids + begin * k);
  };
  search_in_chunks(queries.n, chunk, search, merge);
}

RangeResult ShardedIndex::range_search_batch(const Objects& queries, float radius, const SearchOptions& options) const {
  const int64_t parts = part_count();
  std::vector<RangeResult> results(static_cast<size_t>(parts));
  run_parts_or_throw(parts, [&](int64_t p) { results[p] = range_search_in(*parts_[p], queries, radius, options); });
  if (parts == 1) return std::move(results.front());
  return merge_range(context().pool(), metric(), queries.n, results);
}

int64_t ShardedIndex::do_remove(int64_t n, const int64_t* ids) {
  std::vector<int64_t> removed(parts_.size(), 0);
  run_parts_or_throw(part_count(), [&](int64_t p) { removed[p] = parts_[p]->remove(n, ids); });
  return std::accumulate(removed.begin(), removed.end(), int64_t{0});
}

}  // namespace quiver
