#include "cpp/exact/knn_bf16.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "cpp/core/thread_pool.h"
#include "cpp/distance/vectors.h"
#include "cpp/exact/rerank.h"
#include "cpp/exact/tiling.h"

namespace quiver {

namespace {

// Below these sizes packing costs more than the faster GEMM saves.
constexpr int64_t kMinQueries = 64;
constexpr int64_t kMinRows = 4096;
constexpr int64_t kMinDim = 16;
// Unit roundoff of fp32 sums (round to nearest).
constexpr double kFp32Unit = 0x1p-24;
// Generous relative slack for the float arithmetic of the bounds themselves (adding ||y||^2,
// subtracting the bound), a few ulps of the magnitudes involved.
constexpr double kBoundArithmetic = 0x1p-20;
// A query whose candidate list outgrows this (bounds too loose to prune) stops collecting and is
// answered by exact distances to every row instead.
int64_t candidate_cap(int64_t k) { return 4096 + 32 * k; }

// The error bound of one query's keys: |key~ - key| <= a * residual_y + b * |y| + c2 * |y|^2 + c0.
struct QueryBound {
  float a, b, c2, c0;
};

QueryBound query_bound(const Database& db, float query_norm, float query_residual) {
  const double alpha = std::fabs(tile_alpha(db.metric));
  const double q = static_cast<double>(query_norm) + query_residual;  // >= ||bf16(q)||
  const double g = (db.dim + 4) * kFp32Unit;                          // fp32 accumulation
  QueryBound bound;
  // |<q,y> - <q~,y~>| <= |q| r_y + r_q |y| + r_q r_y + g |q~| |y~|   (cpp/blas/bf16.h)
  bound.a = static_cast<float>(alpha * q * (1 + g) * (1 + kBoundArithmetic));
  bound.b = static_cast<float>((alpha * (query_residual + g * q) + alpha * q * kBoundArithmetic) *
                               (1 + kBoundArithmetic));
  bound.c2 = db.metric == Metric::l2 ? static_cast<float>(kBoundArithmetic) : 0.0f;
  bound.c0 = static_cast<float>(alpha * db.dim * 0x1p-126);  // flushed subnormal products
  return bound;
}

// Keeps (lower bound, row) of every row that may still be among the k best, and the k smallest
// upper bounds, whose largest is the threshold lower bounds must not exceed.
struct CertifiedSink {
  ScanSink sink;  // first member: accept() recovers the CertifiedSink
  TopK* upper;
  std::vector<Candidate>* candidates;
  const Bf16Database* bdb;
  QueryBound bound;
  const IdFilter* filter;
  const int64_t* ids;
  size_t prune_at;
  size_t cap;
  bool overflow;

  float error(int64_t row) const {
    const float n = bdb->norm[row];
    return bound.a * bdb->residual[row] + bound.b * n + bound.c2 * n * n + bound.c0;
  }
  float limit() const {
    return upper->size() == upper_k ? upper->keys()[0] : std::numeric_limits<float>::infinity();
  }
  int64_t upper_k;

  static void accept(ScanSink* s, float lower, int64_t row) {
    auto* self = reinterpret_cast<CertifiedSink*>(s);
    if (self->filter && !self->filter->allows(self->ids ? self->ids[row] : row)) return;
    self->candidates->push_back({lower, row});
    self->upper->offer(lower + 2 * self->error(row), row);
    const float limit = self->limit();
    s->threshold = std::nextafter(limit, std::numeric_limits<float>::infinity());  // lower <= limit
    if (self->candidates->size() >= self->prune_at) self->prune(limit);
  }

  void prune(float limit) {
    auto& list = *candidates;
    list.erase(std::remove_if(list.begin(), list.end(), [&](const Candidate& c) { return c.key > limit; }),
               list.end());
    if (list.size() > cap) {
      overflow = true;  // stop collecting: this query is answered from every row
      list.clear();
      sink.threshold = -std::numeric_limits<float>::infinity();
      return;
    }
    prune_at = std::min(2 * list.size() + 1, cap + 1);
  }
};

// Per query: the error bound, then per chunk of rows a candidate list and k upper bounds.
struct BatchState {
  std::vector<QueryBound> bounds;
  std::vector<std::vector<Candidate>> candidates;  // [query * chunks + chunk]
  std::vector<float> upper_keys;                   // [(query * chunks + chunk) * k + i]
  std::vector<int64_t> upper_rows;
  std::vector<int64_t> upper_counts;
  std::vector<char> overflow;
};

}  // namespace

Bf16Database make_bf16_database(const Database& db) {
  Bf16Database bdb;
  bdb.residual.resize(static_cast<size_t>(db.n));
  bdb.matrix = pack_bf16(db.x, db.n, db.dim, bdb.residual.data());
  bdb.norm.resize(static_cast<size_t>(db.n));
  for (int64_t i = 0; i < db.n; ++i)
    bdb.norm[i] = std::sqrt(db.norms ? db.norms[i] : squared_norm(db.x + i * db.dim, db.dim));
  return bdb;
}

bool bf16_search_pays_off(int64_t nq, int64_t n, int64_t dim) {
  static const bool disabled = [] {
    const char* setting = std::getenv("QUIVER_EXACT_GEMM");
    return setting && std::strcmp(setting, "fp32") == 0;
  }();
  return !disabled && bf16_gemm_available() && nq >= kMinQueries && n >= kMinRows && dim >= kMinDim;
}

void exact_knn_bf16(ThreadPool& pool, const Database& db, const Bf16Database& bdb,
                    const Queries& queries, int64_t k, const IdFilter& filter, float* distances,
                    int64_t* ids) {
  const int64_t nq = queries.nq;
  const int64_t uk = std::min(k, db.n);  // upper bounds kept per chunk
  std::vector<float> query_residual(static_cast<size_t>(nq));
  const Bf16Matrix packed_queries = pack_bf16(queries.x, nq, db.dim, query_residual.data());
  const TilePlan plan = plan_tiles(nq, db.n, /*max_chunks=*/16);
  const int64_t chunks = plan.row_chunks;

  BatchState state;
  state.bounds.resize(static_cast<size_t>(nq));
  for (int64_t q = 0; q < nq; ++q)
    state.bounds[q] = query_bound(db, std::sqrt(squared_norm(queries.x + q * db.dim, db.dim)), query_residual[q]);
  state.candidates.resize(static_cast<size_t>(nq * chunks));
  state.upper_keys.resize(static_cast<size_t>(nq * chunks * uk));
  state.upper_rows.resize(static_cast<size_t>(nq * chunks * uk));
  state.upper_counts.resize(static_cast<size_t>(nq * chunks));
  state.overflow.assign(static_cast<size_t>(nq), 0);
  const IdFilter* active_filter = filter.bits ? &filter : nullptr;
  const ScanFn scan = best_scan();
  const float alpha = tile_alpha(db.metric);
  const float* bias = db.metric == Metric::l2 ? db.norms : nullptr;

  pool.parallel_for(plan.tasks(), [&](int64_t t) {
    const TileTask task = plan.task(t, nq, db.n);
    const int64_t chunk = t % chunks;
    const int64_t m = task.query_end - task.query_begin;
    std::vector<TopK> upper;
    std::vector<CertifiedSink> sinks(static_cast<size_t>(m));
    upper.reserve(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) {
      const int64_t q = task.query_begin + i;
      const int64_t slot = q * chunks + chunk;
      upper.emplace_back(uk, &state.upper_keys[slot * uk], &state.upper_rows[slot * uk], nullptr, nullptr);
      CertifiedSink& s = sinks[i];
      s.sink.threshold = std::numeric_limits<float>::infinity();
      s.sink.accept = &CertifiedSink::accept;
      s.upper = &upper[i];
      s.upper_k = uk;
      s.candidates = &state.candidates[slot];
      s.bdb = &bdb;
      s.bound = state.bounds[q];
      s.filter = active_filter;
      s.ids = db.ids;
      s.prune_at = static_cast<size_t>(4 * uk + 64);
      s.cap = static_cast<size_t>(candidate_cap(k));
      s.overflow = false;
    }
    std::vector<float> tile(kQueryBlock * kDatabaseBlock);
    for (int64_t r0 = task.row_begin; r0 < task.row_end; r0 += kDatabaseBlock) {
      const int64_t rows = std::min(kDatabaseBlock, task.row_end - r0);
      gemm_abt_bf16(m, rows, alpha, packed_queries, task.query_begin, bdb.matrix, r0, tile.data(), rows);
      for (int64_t i = 0; i < m; ++i) {
        CertifiedSink& s = sinks[i];
        if (s.overflow) continue;
        // Lower bounds: key minus its error bound (the scan adds ||y||^2 for L2).
        float* row = tile.data() + i * rows;
        const QueryBound& b = s.bound;
        const float* residual = bdb.residual.data() + r0;
        const float* norm = bdb.norm.data() + r0;
        for (int64_t j = 0; j < rows; ++j)
          row[j] -= b.a * residual[j] + b.b * norm[j] + b.c2 * norm[j] * norm[j] + b.c0;
        scan(row, bias ? bias + r0 : nullptr, rows, r0, &s.sink);
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      const int64_t q = task.query_begin + i;
      state.upper_counts[q * chunks + chunk] = upper[i].size();
      if (sinks[i].overflow) state.overflow[q] = 1;
    }
  });

  // Merge the chunks: the k-th smallest upper bound of all is the final limit on lower bounds.
  const int64_t blocks = (nq + kQueryBlock - 1) / kQueryBlock;
  pool.parallel_for(blocks, [&](int64_t block) {
    std::vector<float> uppers;
    std::vector<Candidate> kept;
    for (int64_t q = block * kQueryBlock; q < std::min(nq, (block + 1) * kQueryBlock); ++q) {
      kept.clear();
      if (state.overflow[q]) {
        // Bounds too loose to prune: every allowed row, each by its exact distance.
        for (int64_t row = 0; row < db.n; ++row)
          if (!active_filter || active_filter->allows(db.ids ? db.ids[row] : row)) kept.push_back({0, row});
        write_reranked(db, queries.x + q * db.dim, kept, k, distances + q * k, ids + q * k);
        continue;
      }
      uppers.clear();
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t slot = q * chunks + chunk;
        uppers.insert(uppers.end(), state.upper_keys.begin() + slot * uk,
                      state.upper_keys.begin() + slot * uk + state.upper_counts[slot]);
      }
      float limit = std::numeric_limits<float>::infinity();
      if (static_cast<int64_t>(uppers.size()) >= uk && uk > 0) {
        std::nth_element(uppers.begin(), uppers.begin() + (uk - 1), uppers.end());
        limit = uppers[uk - 1];
      }
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        for (const Candidate& c : state.candidates[q * chunks + chunk])
          if (c.key <= limit) kept.push_back(c);
      write_reranked(db, queries.x + q * db.dim, kept, k, distances + q * k, ids + q * k);
    }
  });
}

}  // namespace quiver
