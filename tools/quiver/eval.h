// Ground truth and accuracy: exact neighbours through qv_knn, and recall as BENCHMARKS.md defines it.
#pragma once

#include <string>

#include "library.h"
#include "matrix.h"

namespace qvtool {

// Exact k nearest base rows of every query, computed in chunks of queries with a progress line.
IdMatrix exact_knn(Context &ctx, qv_metric_t metric, const FloatMatrix &base,
                   const FloatMatrix &queries, int64_t k);

// Mean over queries of |first r of result ∩ first r of truth| / r. Needs r <= both widths and
// result.rows <= truth.rows (the first result.rows truth rows are used).
double recall_at(const IdMatrix &result, const IdMatrix &truth, int64_t r);

// The same, for a result of `rows` queries and width k stored at ids (used by batch timings).
double recall_at(const int64_t *ids, int64_t rows, int64_t k, const IdMatrix &truth, int64_t r);

// Throws UsageError unless the data's dimension matches `dim`; `what` names the data for the message.
void require_dim(const FloatMatrix &m, int64_t dim, const std::string &what);

}  // namespace qvtool
