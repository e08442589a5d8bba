// IVF-PQ (IVFADC) search on the CPU: per query, per probed list, a look-up table of M x 256 partial
// distances scores the list's codes (quantize/pq_scan.h, SIMD). For L2 the table is the three-term
// decomposition of Johnson, Douze, Jégou (section 5.2): the list's term-1 table, precomputed for all
// lists at training or loading when they fit kPqListTableBudgetBytes, minus twice the query's inner
// products with the codewords (computed once per query), plus the coarse distance ||q - c||^2;
// otherwise a direct table of the residual query - centroid. For inner product the table is the
// query's inner products alone, plus the query's inner product with the centroid.
#pragma once

#include <cstdint>
#include <vector>

#include "cpp/index/ivf_lists.h"
#include "cpp/index/ivf_model.h"
#include "cpp/select/topk.h"

namespace quiver {

// Largest memory for the precomputed term-1 tables (nlist x M x 256 floats).
constexpr int64_t kPqListTableBudgetBytes = int64_t{256} << 20;

// Term-1 tables of an L2 IVF-PQ model when they fit the budget; empty otherwise (and for inner
// product, which needs none). Parallel over the pool.
std::vector<float> make_pq_list_tables(ThreadPool& pool, const IvfModel& model);

// Scores one query against the lists it probes: key = bias + sum of table entries, smaller closer.
class PqListScorer {
 public:
  PqListScorer(const IvfModel& model, const std::vector<float>& list_tables);
  // query: dim floats (model space); inner_products: its M x 256 inner products with the codewords.
  void set_query(const float* query, const float* inner_products);
  // Fills the table of list l for the current query and returns the bias; coarse is the query's
  // coarse-quantization value for the list (probe_lists): its squared L2 distance to the centroid,
  // or its inner product with it.
  float prepare(int64_t list, float coarse);
  const float* table() const { return table_.data(); }

 private:
  const IvfModel& model_;
  const std::vector<float>& list_tables_;
  const float* query_ = nullptr;
  const float* inner_products_ = nullptr;
  std::vector<float> table_;
  std::vector<float> residual_;
};

// The k nearest entries of nq queries among their nprobe nearest lists, by PQ distance (to the
// entries' reconstructions; L2 squared or inner product), or, with refine_k > 0 (",Refine" models),
// the refine_k best by PQ distance re-ranked with exact float32 distances to the raw vectors.
// queries: nq x dim in the model space; raw_queries: the same in the caller's space (for refine).
// Output as ivf_flat_search. Parallel over the pool.
void ivf_pq_search(ThreadPool& pool, const IvfModel& model, const InvertedLists& lists,
                   const std::vector<float>& list_tables, int64_t nq, const float* queries,
                   const float* raw_queries, int64_t k, int64_t nprobe, int64_t refine_k, const IdFilter& filter,
                   float* distances, int64_t* ids);

// A ScanSink that passes only entries of one list whose ids the filter allows on to a TopK.
struct ListFilterSink {
  ScanSink sink;  // first member: accept() recovers the owner from the sink pointer
  TopK* heap;
  const IdFilter* filter;
  const int64_t* ids;   // the list's ids
  int64_t first_index;  // the index of the list's entry 0
  ListFilterSink(TopK* heap, const IdFilter* filter, const int64_t* ids, int64_t first_index);
  static void accept(ScanSink* sink, float key, int64_t index);
};

}  // namespace quiver
