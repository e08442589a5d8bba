#include "cpp/index/ivf_flat.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "cpp/blas/gemm.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/index/ivf_probe.h"

namespace quiver {

namespace {

// Candidates kept beyond k by the GEMM keys and re-ranked exactly: the keys ||y||^2 - 2<q, y> lose
// precision when norms are large, and a few spare candidates absorb the swaps at the k-th place.
constexpr int64_t kRerankMargin = 8;
// Queries multiplied with a list at once, and list rows per GEMM: tiles that stay in cache.
constexpr int64_t kQueryTile = 128;
constexpr int64_t kRowTile = 1024;
// Bound on the keys of one sub-batch of queries (one float per probed entry).
constexpr int64_t kKeyBudgetBytes = int64_t{128} << 20;
// Queries per task of the selection step.
constexpr int64_t kSelectBlock = 32;

// One batch of queries, their probes and where each (query, probe) row of keys goes.
struct KeyPlan {
  int64_t nprobe = 0;
  const int64_t* probes = nullptr;  // nq x nprobe lists
  std::vector<int64_t> offsets;     // nq x nprobe: start of the row of keys of (query, probe)
  int64_t total = 0;
  // By list: the (query, probe) pairs that probe it, as CSR over lists.
  std::vector<int64_t> list_begin;  // nlist + 1
  std::vector<int64_t> pairs;       // query * nprobe + probe
  std::vector<int64_t> active;      // lists probed by at least one query and not empty
};

KeyPlan plan_keys(const InvertedLists& lists, int64_t nq, int64_t nprobe, const int64_t* probes) {
  KeyPlan plan;
  plan.nprobe = nprobe;
  plan.probes = probes;
  plan.offsets.resize(static_cast<size_t>(nq * nprobe));
  plan.list_begin.assign(static_cast<size_t>(lists.nlist() + 1), 0);
  for (int64_t i = 0; i < nq * nprobe; ++i) {
    const int64_t l = probes[i];
    plan.offsets[i] = plan.total;
    if (l < 0) continue;
    plan.total += lists[l].size();
    ++plan.list_begin[l + 1];
  }
  for (int64_t l = 0; l < lists.nlist(); ++l) {
    if (plan.list_begin[l + 1] > 0 && lists[l].size() > 0) plan.active.push_back(l);
    plan.list_begin[l + 1] += plan.list_begin[l];
  }
  plan.pairs.resize(static_cast<size_t>(plan.list_begin.back()));
  std::vector<int64_t> fill(plan.list_begin.begin(), plan.list_begin.end() - 1);
  for (int64_t i = 0; i < nq * nprobe; ++i)
    if (probes[i] >= 0) plan.pairs[fill[probes[i]]++] = i;
  return plan;
}

// The keys of every query probing list l: alpha * <q, y> + bias (||y||^2 for L2), +inf for entries
// the filter excludes.
void compute_list_keys(const IvfModel& model, const InvertedList& list, const KeyPlan& plan, int64_t l,
                       const float* queries, const IdFilter& filter, float* keys) {
  const int64_t dim = model.dim, rows = list.size();
  const bool l2 = model.metric == Metric::l2;
  const float alpha = l2 ? -2.0f : -1.0f;
  std::vector<char> excluded;
  if (filter.bits) {
    excluded.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) excluded[r] = !filter.allows(list.ids[r]);
  }
  const int64_t* pairs = &plan.pairs[plan.list_begin[l]];
  const int64_t count = plan.list_begin[l + 1] - plan.list_begin[l];
  const int64_t row_tile = std::min(rows, kRowTile);
  std::vector<float> gathered(static_cast<size_t>(std::min(count, kQueryTile) * dim));
  std::vector<float> tile(static_cast<size_t>(std::min(count, kQueryTile) * row_tile));
  constexpr float kExcluded = std::numeric_limits<float>::infinity();
  for (int64_t q0 = 0; q0 < count; q0 += kQueryTile) {
    const int64_t m = std::min(kQueryTile, count - q0);
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(&gathered[i * dim], queries + (pairs[q0 + i] / plan.nprobe) * dim, sizeof(float) * dim);
    for (int64_t r0 = 0; r0 < rows; r0 += row_tile) {
      const int64_t n = std::min(row_tile, rows - r0);
      gemm_abt(m, n, dim, alpha, gathered.data(), dim, list.vectors.data() + r0 * dim, dim, tile.data(), n);
      for (int64_t i = 0; i < m; ++i) {
        const float* in = &tile[i * n];
        float* out = keys + plan.offsets[pairs[q0 + i]] + r0;
        if (l2) {
          const float* norms = list.norms.data() + r0;
          for (int64_t j = 0; j < n; ++j) out[j] = in[j] + norms[j];
        } else {
          std::memcpy(out, in, sizeof(float) * n);
        }
        if (filter.bits)
          for (int64_t j = 0; j < n; ++j)
            if (excluded[r0 + j]) out[j] = kExcluded;
      }
    }
  }
}

// One query's best entries by key, re-ranked with exact distances into k results.
void select_query(const IvfModel& model, const InvertedLists& lists, const KeyPlan& plan, int64_t q,
                  const float* query, const float* keys, int64_t k, ScanFn scan, std::vector<float>& heap_keys,
                  std::vector<int64_t>& heap_entries, float* distances, int64_t* ids) {
  const int64_t kc = k + kRerankMargin;
  heap_keys.resize(static_cast<size_t>(kc));
  heap_entries.resize(static_cast<size_t>(kc));
  TopK heap(kc, heap_keys.data(), heap_entries.data(), nullptr, nullptr);
  for (int64_t p = 0; p < plan.nprobe; ++p) {
    const int64_t l = plan.probes[q * plan.nprobe + p];
    if (l < 0 || lists[l].size() == 0) continue;
    scan(keys + plan.offsets[q * plan.nprobe + p], nullptr, lists[l].size(), encode_entry(l, 0), heap.sink());
  }
  std::vector<Candidate> found(static_cast<size_t>(heap.size()));
  for (int64_t i = 0; i < heap.size(); ++i) {
    const int64_t l = entry_list(heap.indices()[i]), r = entry_offset(heap.indices()[i]);
    const float d = exact_distance(model.metric, query, lists[l].vectors.data() + r * model.dim, model.dim);
    found[i] = {model.metric == Metric::l2 ? d : -d, lists[l].ids[r]};
  }
  write_results(model.metric, found, k, distances, ids);
}

}  // namespace

void ivf_flat_search(ThreadPool& pool, const IvfModel& model, const InvertedLists& lists, int64_t nq,
                     const float* queries, int64_t k, int64_t nprobe, const IdFilter& filter,
                     float* distances, int64_t* ids) {
  const ScanFn scan = best_scan();
  for_each_probe_batch(pool, model, nq, queries, nprobe, [&](int64_t q0, int64_t nb, const float*, const int64_t* probes) {
    // Sub-batches whose keys fit the budget (at least one query each).
    for (int64_t s0 = 0; s0 < nb;) {
      int64_t s1 = s0, keys_in = 0;
      while (s1 < nb) {
        int64_t row = 0;
        for (int64_t p = 0; p < nprobe; ++p)
          if (probes[s1 * nprobe + p] >= 0) row += lists[probes[s1 * nprobe + p]].size();
        if (s1 > s0 && (keys_in + row) * static_cast<int64_t>(sizeof(float)) > kKeyBudgetBytes) break;
        keys_in += row;
        ++s1;
      }
      const int64_t ns = s1 - s0;
      const float* sub_queries = queries + (q0 + s0) * model.dim;
      const KeyPlan plan = plan_keys(lists, ns, nprobe, probes + s0 * nprobe);
      // Every key read is written first: no need to zero the buffer.
      std::unique_ptr<float[]> keys(new float[static_cast<size_t>(plan.total)]);
      pool.parallel_for(static_cast<int64_t>(plan.active.size()), [&](int64_t a) {
        const int64_t l = plan.active[a];
        compute_list_keys(model, lists[l], plan, l, sub_queries, filter, keys.get());
      });
      pool.parallel_for((ns + kSelectBlock - 1) / kSelectBlock, [&](int64_t b) {
        std::vector<float> heap_keys;
        std::vector<int64_t> heap_entries;
        for (int64_t q = b * kSelectBlock; q < std::min(ns, (b + 1) * kSelectBlock); ++q) {
          const int64_t out = (q0 + s0 + q) * k;
          select_query(model, lists, plan, q, sub_queries + q * model.dim, keys.get(), k, scan, heap_keys,
                       heap_entries, distances + out, ids + out);
        }
      });
      s0 = s1;
    }
  });
}

}  // namespace quiver
