#include "cpp/index/ivf_pq.h"

#include <algorithm>
#include <cstddef>

#include "cpp/core/prefetch.h"
#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/index/ivf_probe.h"
#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/pq_tables.h"

namespace quiver {

namespace {

// Bound on the queries' inner-product tables computed at once (M x 256 floats a query).
constexpr int64_t kQueryTableBudgetBytes = int64_t{32} << 20;
// Queries per task of the scan.
constexpr int64_t kScanBlock = 8;

int64_t table_size(const IvfModel& model) { return model.pq.m * kPqCentroids; }

// Refine reads the candidates' raw vectors, scattered in memory: each is fetched this many
// candidates ahead so that its loads overlap the distances before it.
constexpr int64_t kRefineAhead = 2;

}  // namespace

std::vector<float> make_pq_list_tables(ThreadPool& pool, const IvfModel& model) {
  const int64_t bytes = model.nlist * table_size(model) * static_cast<int64_t>(sizeof(float));
  if (model.metric != Metric::l2 || bytes > kPqListTableBudgetBytes) return {};
  std::vector<float> tables(static_cast<size_t>(model.nlist * table_size(model)));
  pq_list_tables(model.pq, pool, model.nlist, model.centroids.data(), tables.data());
  return tables;
}

ListFilterSink::ListFilterSink(TopK* heap_, const IdFilter* filter_, const int64_t* ids_, int64_t first_index_)
    : heap(heap_), filter(filter_), ids(ids_), first_index(first_index_) {
  sink.threshold = heap->sink()->threshold;
  sink.accept = &ListFilterSink::accept;
}

void ListFilterSink::accept(ScanSink* s, float key, int64_t index) {
  auto* self = reinterpret_cast<ListFilterSink*>(s);
  if (self->filter->allows(self->ids[index - self->first_index])) self->heap->offer(key, index);
  s->threshold = self->heap->sink()->threshold;
}

PqListScorer::PqListScorer(const IvfModel& model, const std::vector<float>& list_tables)
    : model_(model), list_tables_(list_tables), table_(static_cast<size_t>(table_size(model))) {
  if (model.metric == Metric::l2 && list_tables.empty()) residual_.resize(static_cast<size_t>(model.dim));
}

void PqListScorer::set_query(const float* query, const float* inner_products) {
  query_ = query;
  inner_products_ = inner_products;
  // Inner product: one table for every list.
  if (model_.metric != Metric::l2) pq_combine_tables(table_size(model_), nullptr, -1.0f, inner_products, table_.data());
}

float PqListScorer::prepare(int64_t list, float coarse) {
  if (model_.metric != Metric::l2) return -coarse;  // keys are smaller-is-closer
  if (!list_tables_.empty()) {
    pq_combine_tables(table_size(model_), list_tables_.data() + list * table_size(model_), -2.0f, inner_products_,
                      table_.data());
    return coarse;
  }
  const int64_t dim = model_.dim;
  const float* centroid = model_.centroids.data() + list * dim;
  for (int64_t d = 0; d < dim; ++d) residual_[d] = query_[d] - centroid[d];
  pq_query_l2_table(model_.pq, residual_.data(), table_.data());
  return 0.0f;
}

void ivf_pq_search(ThreadPool& pool, const IvfModel& model, const InvertedLists& lists,
                   const std::vector<float>& list_tables, int64_t nq, const float* queries,
                   const float* raw_queries, int64_t k, int64_t nprobe, int64_t refine_k, const IdFilter& filter,
                   float* distances, int64_t* ids) {
  const PqScanFn scan = best_pq_scan();
  const int64_t dim = model.dim, m = model.pq.m, kc = refine_k > 0 ? std::max(refine_k, k) : k;
  const bool need_inner_products = model.metric != Metric::l2 || !list_tables.empty();
  const int64_t table_batch =
      std::max<int64_t>(1, kQueryTableBudgetBytes / (table_size(model) * static_cast<int64_t>(sizeof(float))));
  std::vector<float> inner_products, gathered;
  std::vector<int64_t> order;
  for_each_probe_batch(pool, model, nq, queries, nprobe, [&](int64_t q0, int64_t nb, const float* coarse,
                                                             const int64_t* probes) {
    // Queries run grouped by their nearest list: neighbours probe mostly the same lists, so a list's
    // term-1 table (too many for the cache all together) is read from memory once for the group.
    order.resize(static_cast<size_t>(nb));
    for (int64_t i = 0; i < nb; ++i) order[i] = i;
    if (nprobe > 0)
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return probes[a * nprobe] < probes[b * nprobe]; });
    for (int64_t s0 = 0; s0 < nb; s0 += table_batch) {
      const int64_t ns = std::min(table_batch, nb - s0);
      if (need_inner_products) {
        gathered.resize(static_cast<size_t>(ns * dim));
        for (int64_t s = 0; s < ns; ++s)
          std::copy(queries + (q0 + order[s0 + s]) * dim, queries + (q0 + order[s0 + s] + 1) * dim,
                    gathered.begin() + s * dim);
        inner_products.resize(static_cast<size_t>(ns * table_size(model)));
        pq_queries_inner_products(model.pq, pool, ns, gathered.data(), inner_products.data());
      }
      pool.parallel_for((ns + kScanBlock - 1) / kScanBlock, [&](int64_t b) {
        PqListScorer scorer(model, list_tables);
        std::vector<float> heap_keys(static_cast<size_t>(kc));
        std::vector<int64_t> heap_entries(static_cast<size_t>(kc));
        std::vector<Candidate> found;
        for (int64_t s = b * kScanBlock; s < std::min(ns, (b + 1) * kScanBlock); ++s) {
          const int64_t row = order[s0 + s], q = q0 + row;
          scorer.set_query(queries + q * dim,
                           need_inner_products ? inner_products.data() + s * table_size(model) : nullptr);
          TopK heap(kc, heap_keys.data(), heap_entries.data(), nullptr, nullptr);
          for (int64_t p = 0; p < nprobe; ++p) {
            const int64_t l = probes[row * nprobe + p];
            if (l < 0 || lists[l].size() == 0) continue;
            const float bias = scorer.prepare(l, coarse[row * nprobe + p]);
            const InvertedList& list = lists[l];
            if (filter.bits) {
              ListFilterSink sink(&heap, &filter, list.ids.data(), encode_entry(l, 0));
              scan(list.codes.data(), list.size(), m, scorer.table(), bias, encode_entry(l, 0), &sink.sink);
            } else {
              scan(list.codes.data(), list.size(), m, scorer.table(), bias, encode_entry(l, 0), heap.sink());
            }
          }
          found.resize(static_cast<size_t>(heap.size()));
          for (int64_t i = 0; i < heap.size(); ++i) {
            const int64_t l = entry_list(heap.indices()[i]), r = entry_offset(heap.indices()[i]);
            float key = heap.keys()[i];
            if (refine_k > 0 && i + kRefineAhead < heap.size()) {
              const int64_t next = heap.indices()[i + kRefineAhead];
              prefetch_bytes(lists[entry_list(next)].vectors.data() + entry_offset(next) * dim,
                             dim * static_cast<int64_t>(sizeof(float)));
            }
            if (refine_k > 0) {
              const float d = exact_distance(model.metric, raw_queries + q * dim, lists[l].vectors.data() + r * dim, dim);
              key = model.metric == Metric::l2 ? d : -d;
            }
            found[i] = {key, lists[l].ids[r]};
          }
          write_results(model.metric, found, k, distances + q * k, ids + q * k);
        }
      });
    }
  });
}

}  // namespace quiver
