#include "cpp/index/ivf_range.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/index/ivf_pq.h"
#include "cpp/index/ivf_probe.h"
#include "cpp/quantize/pq_scan.h"
#include "cpp/quantize/pq_tables.h"

namespace quiver {

namespace {

// Queries per task.
constexpr int64_t kRangeBlock = 8;

// Collects every key under a fixed threshold from one list, keeping entries the filter allows.
struct RangeSink {
  ScanSink sink;  // first member: accept() recovers the owner
  std::vector<Candidate>* hits;
  const IdFilter* filter;
  const int64_t* ids;
  int64_t first_index;
  static void accept(ScanSink* s, float key, int64_t index) {
    auto* self = reinterpret_cast<RangeSink*>(s);
    const int64_t id = self->ids[index - self->first_index];
    if (self->filter->allows(id)) self->hits->push_back({key, id});
  }
};

}  // namespace

RangeResult ivf_range_search(ThreadPool& pool, const IvfModel& model, const InvertedLists& lists,
                             const std::vector<float>& list_tables, int64_t nq, const float* queries,
                             const float* raw_queries, float radius, int64_t nprobe, const IdFilter& filter) {
  const int64_t dim = model.dim;
  const bool l2 = model.metric == Metric::l2;
  const bool exact = !model.is_pq() || model.keep_raw;
  // Keys are smaller-is-closer; a hit is a key <= key_radius, i.e. below the next float up.
  const float key_radius = l2 ? radius : -radius;
  const float threshold = std::nextafter(key_radius, std::numeric_limits<float>::infinity());
  std::vector<std::vector<Candidate>> hits(static_cast<size_t>(nq));
  for_each_probe_batch(pool, model, nq, queries, nprobe, [&](int64_t q0, int64_t nb, const float* coarse,
                                                             const int64_t* probes) {
    pool.parallel_for((nb + kRangeBlock - 1) / kRangeBlock, [&](int64_t b) {
      PqListScorer scorer(model, list_tables);
      std::vector<float> inner_products;
      if (!exact) inner_products.resize(static_cast<size_t>(model.pq.m * kPqCentroids));
      for (int64_t s = b * kRangeBlock; s < std::min(nb, (b + 1) * kRangeBlock); ++s) {
        const int64_t q = q0 + s;
        std::vector<Candidate>& found = hits[q];
        const float* query = (model.is_pq() ? raw_queries : queries) + q * dim;
        if (!exact) {
          pq_query_inner_products(model.pq, queries + q * dim, inner_products.data());
          scorer.set_query(queries + q * dim, inner_products.data());
        }
        for (int64_t p = 0; p < nprobe; ++p) {
          const int64_t l = probes[s * nprobe + p];
          if (l < 0) continue;
          const InvertedList& list = lists[l];
          if (exact) {
            for (int64_t r = 0; r < list.size(); ++r) {
              const float d = exact_distance(model.metric, query, list.vectors.data() + r * dim, dim);
              const float key = l2 ? d : -d;
              if (key < threshold && filter.allows(list.ids[r])) found.push_back({key, list.ids[r]});
            }
          } else if (list.size() > 0) {
            const float bias = scorer.prepare(l, coarse[s * nprobe + p]);
            RangeSink sink{{threshold, &RangeSink::accept}, &found, &filter, list.ids.data(), 0};
            best_pq_scan()(list.codes.data(), list.size(), model.pq.m, scorer.table(), bias, 0, &sink.sink);
          }
        }
        std::sort(found.begin(), found.end());
      }
    });
  });
  RangeResult result;
  result.lims.resize(static_cast<size_t>(nq + 1), 0);
  for (int64_t q = 0; q < nq; ++q) result.lims[q + 1] = result.lims[q] + static_cast<int64_t>(hits[q].size());
  result.ids.reserve(static_cast<size_t>(result.lims[nq]));
  result.distances.reserve(static_cast<size_t>(result.lims[nq]));
  for (const std::vector<Candidate>& found : hits)
    for (const Candidate& c : found) {
      result.ids.push_back(c.index);
      result.distances.push_back(l2 ? c.key : -c.key);
    }
  return result;
}

}  // namespace quiver
