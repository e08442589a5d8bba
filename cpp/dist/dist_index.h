// A distributed index (quiver_mpi.h): one shard per rank of an MPI communicator, each an ordinary
// quiver index made through libquiver's C API on the rank's own context; vectors live on the rank
// that owns their id (id % size); searches broadcast the root's queries and merge the shards'
// results on the root. Every member function is collective and agrees on failure (comm.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cpp/core/thread_pool.h"
#include "cpp/dist/comm.h"
#include "cpp/exact/range.h"
#include "quiver/quiver_mpi.h"

namespace quiver::dist {

struct Options {
  int root = 0;
  int timeout_ms = 60000;
};

class DistIndex {
 public:
  // context: a handle of this rank's context (a handle of its own is kept).
  DistIndex(qv_context_t* context, MPI_Comm comm, const std::string& descriptor, int64_t dim, qv_metric_t metric,
            const Options& options);
  // Loads what save() wrote.
  DistIndex(qv_context_t* context, MPI_Comm comm, const std::string& prefix, const Options& options);
  DistIndex(const DistIndex&) = delete;
  DistIndex& operator=(const DistIndex&) = delete;

  const Comm& comm() const { return comm_; }
  int root() const { return options_.root; }
  int64_t local_count() const;
  int64_t total_count() const;

  void train(int64_t n, const float* x);
  void add(int64_t n, const float* x, const int64_t* ids);
  // Root only: nq, queries and outputs; params from the root.
  void search(int64_t nq, const float* queries, uint32_t k, const qv_search_params_t* params, float* distances,
              int64_t* ids) const;
  RangeResult range_search(int64_t nq, const float* queries, float radius, const qv_search_params_t* params) const;
  int64_t remove(int64_t n, const int64_t* ids);
  void save(const std::string& prefix) const;

 private:
  int owner(int64_t id) const { return static_cast<int>(id % comm_.size()); }
  // The root's queries and search parameters on every rank (the filter bits copied into `filter`).
  void share_queries(int64_t& nq, std::vector<float>& queries, qv_search_params_t& params,
                     std::vector<uint8_t>& filter, const float* root_queries, const qv_search_params_t* root_params) const;
  // A new local index replacing the current one, from a saved index's bytes.
  void replace_local(const std::vector<uint8_t>& bytes);

  struct ContextFree {
    void operator()(qv_context_t* context) const { qv_context_free(context); }
  };
  struct IndexFree {
    void operator()(qv_index_t* index) const { qv_index_free(index); }
  };

  Comm comm_;
  Options options_;
  std::unique_ptr<qv_context_t, ContextFree> context_;  // our own handle of the caller's context
  std::unique_ptr<qv_index_t, IndexFree> local_;
  std::string descriptor_;
  int64_t dim_ = 0;
  qv_metric_t metric_ = QV_METRIC_L2;
  int64_t max_id_ = -1;  // the largest id ever held, the same on every rank
  mutable ThreadPool pool_;  // the root's merges
};

// Throws quiver::Error for a failed libquiver call, with libquiver's message.
void check(qv_status_t status, const char* what);

}  // namespace quiver::dist
