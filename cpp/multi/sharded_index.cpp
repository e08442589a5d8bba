#include "cpp/multi/sharded_index.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <thread>

#include "cpp/core/error.h"
#include "cpp/multi/run_parts.h"

namespace quiver {

namespace {

// Bytes of the shards' result buffers of one search: its queries go in chunks that fit them. A set
// is kept for the next search (one set per concurrent caller).
constexpr int64_t kKeptBufferBytes = int64_t{512} << 20;

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
  const int64_t parts = part_count();
  if (parts == 1) {
    search_in(*parts_[0], queries, k, options, distances, ids);
    return;
  }
  // Queries go in chunks whose shard results fit the kept buffers: memory stays bounded and the
  // buffers are reused, not allocated and faulted in, whatever the batch. Two sets of buffers: the
  // merge of one chunk runs while the shards search the next.
  const int64_t bytes_per_query = parts * k * static_cast<int64_t>(sizeof(float) + sizeof(int64_t));
  const int64_t chunk = std::max<int64_t>(1, kKeptBufferBytes / (2 * bytes_per_query));
  std::vector<PartResult> buffers = take_buffers();
  buffers.resize(static_cast<size_t>(2 * parts));
  std::thread merging;
  std::exception_ptr error, merge_error;  // merge_error: written by the merging thread only
  auto finish_merge = [&] {
    if (merging.joinable()) merging.join();
    if (merge_error && !error) error = merge_error;
  };
  for (int64_t begin = 0, round = 0; begin < queries.n && !error; begin += chunk, ++round) {
    const Objects slice = slice_rows(queries, begin, std::min(chunk, queries.n - begin));
    PartResult* set = buffers.data() + (round % 2) * parts;
    for (const std::exception_ptr& failed : run_parts(parts, [&](int64_t p) {
           set[p].distances.resize(static_cast<size_t>(slice.n * k));
           set[p].ids.resize(static_cast<size_t>(slice.n * k));
           search_in(*parts_[p], slice, k, options, set[p].distances.data(), set[p].ids.data());
         }))
      if (failed && !error) error = failed;
    finish_merge();  // the previous chunk's, whose buffers the next round reuses
    if (error) break;
    auto merge = [this, set, parts, slice, k, distances, ids, begin, &merge_error] {
      try {
        merge_knn(context().pool(), metric(), slice.n, k, set, parts, distances + begin * k, ids + begin * k);
      } catch (...) {
        merge_error = std::current_exception();
      }
    };
    if (begin + chunk >= queries.n) {
      merge();  // the last chunk: nothing to overlap with
    } else {
      merging = std::thread(merge);
    }
  }
  finish_merge();
  give_back(std::move(buffers));
  if (error) std::rethrow_exception(error);
}

std::vector<PartResult> ShardedIndex::take_buffers() const {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  if (spare_buffers_.empty()) return {};
  std::vector<PartResult> buffers = std::move(spare_buffers_.back());
  spare_buffers_.pop_back();
  return buffers;
}

void ShardedIndex::give_back(std::vector<PartResult> buffers) const {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  spare_buffers_.push_back(std::move(buffers));
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
