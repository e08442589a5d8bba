#include "cpp/graph/nn_descent.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "cpp/core/progress.h"
#include "cpp/core/random.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/graph/neighbour_lists.h"

namespace quiver {

namespace {

// Points per parallel task: enough work to amortise a task's dispatch.
constexpr int64_t kBlock = 256;
// Parallel steps per join, each followed by a progress report: the cancel granularity.
constexpr int64_t kJoinSteps = 8;
// Blocks per step at most: a step's offers are held until it ends (a few kilobytes a point).
constexpr int64_t kMaxBlocksPerStep = 128;
// Ranges of target points the join's offers are bucketed by: each range's lists are then updated
// by one thread, in one pass, without locks and with the list hot in cache.
constexpr int64_t kTargetRanges = 64;

// An offer found by the join, applied to `target`'s list afterwards.
struct Update {
  int32_t target;
  int32_t other;
  float key;
};

// Up to `width` sampled ids per point, flat.
struct Samples {
  int64_t width;
  std::vector<int32_t> ids;
  std::vector<int32_t> count;
  Samples(int64_t n, int64_t w) : width(w), ids(static_cast<size_t>(n * w)), count(static_cast<size_t>(n)) {}
  const int32_t* of(int64_t u) const { return &ids[u * width]; }
};

// A generator per (iteration, point): the samples do not depend on which thread draws them.
Random point_random(uint64_t seed, int64_t iteration, int64_t u) {
  return Random(seed ^ (0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(iteration + 1)) ^
                (0xc2b2ae3d27d4eb4fULL * static_cast<uint64_t>(u + 1)));
}

// Reservoir sampling: the seen-th candidate (0-based) replaces a random slot once the reservoir is full.
template <typename Put>
void reservoir(Random& rng, int64_t seen, int64_t width, Put put) {
  if (seen < width) {
    put(seen);
  } else {
    const int64_t slot = static_cast<int64_t>(rng.below(static_cast<uint64_t>(seen + 1)));
    if (slot < width) put(slot);
  }
}

// Forward samples of u: up to `width` old entries and up to `width` new ones; the new ones taken are
// flagged old, since this iteration joins them.
void sample_forward(NeighbourLists& lists, int64_t u, Random& rng, Samples& fwd_new, Samples& fwd_old) {
  const int64_t size = lists.size(u);
  const int32_t* ids = lists.ids(u);
  uint8_t* flags = lists.flags(u);
  const int64_t width = fwd_new.width;
  int32_t* old_out = &fwd_old.ids[u * width];
  int64_t seen = 0;
  for (int64_t i = 0; i < size; ++i)
    if (flags[i] == NeighbourLists::old_entry) reservoir(rng, seen++, width, [&](int64_t s) { old_out[s] = ids[i]; });
  fwd_old.count[u] = static_cast<int32_t>(std::min(seen, width));

  std::vector<int64_t> chosen(static_cast<size_t>(width));
  seen = 0;
  for (int64_t i = 0; i < size; ++i)
    if (flags[i] != NeighbourLists::old_entry) reservoir(rng, seen++, width, [&](int64_t s) { chosen[s] = i; });
  const int64_t taken = std::min(seen, width);
  for (int64_t s = 0; s < taken; ++s) {
    fwd_new.ids[u * width + s] = ids[chosen[s]];
    flags[chosen[s]] = NeighbourLists::old_entry;
  }
  fwd_new.count[u] = static_cast<int32_t>(taken);
}

// Reverse samples: v gets up to `width` of the points that sampled it. One sequential pass with one
// generator, so the result is the same on every run.
void sample_reverse(const Samples& fwd, Random& rng, Samples& rev, std::vector<int64_t>& seen) {
  std::fill(rev.count.begin(), rev.count.end(), 0);
  std::fill(seen.begin(), seen.end(), 0);
  const int64_t n = static_cast<int64_t>(fwd.count.size());
  for (int64_t u = 0; u < n; ++u) {
    for (int32_t j = 0; j < fwd.count[u]; ++j) {
      const int32_t v = fwd.of(u)[j];
      reservoir(rng, seen[v]++, rev.width, [&](int64_t s) { rev.ids[v * rev.width + s] = static_cast<int32_t>(u); });
      rev.count[v] = static_cast<int32_t>(std::min<int64_t>(seen[v], rev.width));
    }
  }
}

// a's and b's sorted union, without repeats.
void merge_unique(const int32_t* a, int32_t na, const int32_t* b, int32_t nb, std::vector<int32_t>& out) {
  out.assign(a, a + na);
  out.insert(out.end(), b, b + nb);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace

NnDescentStats nn_descent(ThreadPool& pool, Metric metric, int64_t dim, int64_t n, const float* x,
                          const NnDescentOptions& options, NeighbourLists& lists, const Progress& progress) {
  NnDescentStats stats;
  const int64_t width = std::clamp<int64_t>(options.sample, 1, lists.capacity());
  const bool similarity = larger_is_closer(metric);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  Samples fwd_new(n, width), fwd_old(n, width), rev_new(n, width), rev_old(n, width);
  std::vector<int64_t> seen(static_cast<size_t>(n));
  std::atomic<int64_t> distances{0};
  // Entries from the initial lists are all unjoined, and none is a change of the first iteration.
  pool.parallel_for(blocks, [&](int64_t b) {
    for (int64_t u = b * kBlock; u < std::min(n, (b + 1) * kBlock); ++u)
      std::replace(lists.flags(u), lists.flags(u) + lists.size(u), uint8_t{NeighbourLists::inserted_now},
                   uint8_t{NeighbourLists::new_entry});
  });

  for (int64_t it = 0; it < options.max_iterations; ++it) {
    pool.parallel_for(blocks, [&](int64_t b) {
      for (int64_t u = b * kBlock; u < std::min(n, (b + 1) * kBlock); ++u) {
        Random rng = point_random(options.seed, it, u);
        sample_forward(lists, u, rng, fwd_new, fwd_old);
      }
    });
    Random rng = point_random(options.seed, it, n);
    sample_reverse(fwd_new, rng, rev_new, seen);
    sample_reverse(fwd_old, rng, rev_old, seen);

    const int64_t blocks_per_step = std::min(kMaxBlocksPerStep, (blocks + kJoinSteps - 1) / kJoinSteps);
    const int64_t range = (n + kTargetRanges - 1) / kTargetRanges;
    // buckets[t * kTargetRanges + r]: task t's offers to points of range r.
    std::vector<std::vector<Update>> buckets(static_cast<size_t>(blocks_per_step * kTargetRanges));
    for (int64_t first = 0; first < blocks; first += blocks_per_step) {
      const int64_t count = std::min(blocks_per_step, blocks - first);
      pool.parallel_for(count, [&](int64_t t) {
        std::vector<Update>* out = &buckets[t * kTargetRanges];
        for (int64_t r = 0; r < kTargetRanges; ++r) out[r].clear();
        // The lists' current worst keys screen the offers; a screen passed wrongly is undone when
        // the offer is applied, since lists only improve.
        const auto join = [&](int32_t a, int32_t b) {
          const float d = exact_distance(metric, x + a * dim, x + b * dim, dim);
          const float key = similarity ? -d : d;
          if (lists.may_enter(a, key)) out[a / range].push_back({a, b, key});
          if (lists.may_enter(b, key)) out[b / range].push_back({b, a, key});
        };
        std::vector<int32_t> fresh, old;
        int64_t computed = 0;
        const int64_t b = first + t;
        for (int64_t u = b * kBlock; u < std::min(n, (b + 1) * kBlock); ++u) {
          merge_unique(fwd_new.of(u), fwd_new.count[u], rev_new.of(u), rev_new.count[u], fresh);
          merge_unique(fwd_old.of(u), fwd_old.count[u], rev_old.of(u), rev_old.count[u], old);
          const size_t nf = fresh.size(), no = old.size();
          for (size_t i = 0; i < nf; ++i) {
            for (size_t j = i + 1; j < nf; ++j) join(fresh[i], fresh[j]);
            for (size_t j = 0; j < no; ++j)
              if (old[j] != fresh[i]) join(fresh[i], old[j]);
          }
          computed += static_cast<int64_t>(nf * (nf - (nf > 0)) / 2 + nf * no);
        }
        distances.fetch_add(computed, std::memory_order_relaxed);
      });
      // Each range's lists by one task: no two threads touch one list.
      pool.parallel_for(kTargetRanges, [&](int64_t r) {
        for (int64_t t = 0; t < count; ++t)
          for (const Update& up : buckets[t * kTargetRanges + r]) lists.offer_exclusive(up.target, up.key, up.other);
      });
      progress.report((double(it) + double(first + count) / double(blocks)) / double(options.max_iterations));
    }

    // Entries that entered a list during this join: counted after it, so the count does not depend on
    // the order of the offers (an entry that came in and was pushed out again does not count).
    std::vector<int64_t> changed(static_cast<size_t>(blocks));
    pool.parallel_for(blocks, [&](int64_t b) {
      int64_t c = 0;
      for (int64_t u = b * kBlock; u < std::min(n, (b + 1) * kBlock); ++u) {
        uint8_t* flags = lists.flags(u);
        for (int64_t i = 0; i < lists.size(u); ++i)
          if (flags[i] == NeighbourLists::inserted_now) {
            flags[i] = NeighbourLists::new_entry;
            ++c;
          }
      }
      changed[b] = c;
    });
    stats.iterations = it + 1;
    int64_t updates = 0;
    for (int64_t c : changed) updates += c;
    if (double(updates) < options.delta * double(n) * double(lists.capacity())) break;
    if (options.good_enough && options.good_enough()) break;
  }
  stats.distances = distances.load();
  return stats;
}

void complete_lists(ThreadPool& pool, Metric metric, int64_t dim, int64_t n, const float* x, uint64_t seed,
                    NeighbourLists& lists) {
  const bool similarity = larger_is_closer(metric);
  const int64_t capacity = lists.capacity();
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  pool.parallel_for(blocks, [&](int64_t b) {
    for (int64_t u = b * kBlock; u < std::min(n, (b + 1) * kBlock); ++u) {
      if (lists.size(u) >= capacity) continue;
      const auto offer = [&](int64_t v) {
        const float d = exact_distance(metric, x + u * dim, x + v * dim, dim);
        lists.offer(u, similarity ? -d : d, static_cast<int32_t>(v));
      };
      // Random points while they are likely new to the list; every point when the list wants most.
      if (2 * capacity < n) {
        Random rng = point_random(seed, -1, u);
        for (int64_t tries = 0; lists.size(u) < capacity && tries < 8 * capacity; ++tries)
          offer(static_cast<int64_t>(rng.below(static_cast<uint64_t>(n))));
      }
      for (int64_t v = 0; lists.size(u) < capacity && v < n; ++v) offer(v);
    }
  });
}

}  // namespace quiver
