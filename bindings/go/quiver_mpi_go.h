/* The C half of the distributed index (dist.go, build tag quiver_mpi): one helper per fallible
 * qv_dist_* function of quiver/quiver_mpi.h, as quiver_go.h has for quiver.h. The Go side passes
 * qv_dist_last_error_message as the reader of the message (distCall), since the qv_dist_* calls
 * leave theirs there, not in qv_last_error_message. */
#ifndef QUIVER_MPI_GO_H
#define QUIVER_MPI_GO_H

#include "quiver_go.h"
#include "quiver/quiver_mpi.h"

static inline qv_go_status_t qv_go_dist_comm_world(qv_go_call_t call, const void **comm) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_comm_world)(comm));
}

static inline qv_go_status_t qv_go_dist_finalize(qv_go_call_t call) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_finalize)());
}

static inline qv_go_status_t qv_go_dist_index_create(qv_go_call_t call, qv_context_t *context,
                                                     const void *comm, const char *descriptor,
                                                     int64_t dim, qv_metric_t metric,
                                                     const qv_dist_options_t *options,
                                                     qv_dist_index_t **out) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_create)(context, comm, descriptor, dim,
                                                                 metric, options, out));
}

static inline qv_go_status_t qv_go_dist_index_load(qv_go_call_t call, qv_context_t *context,
                                                   const void *comm, const char *prefix,
                                                   const qv_dist_options_t *options,
                                                   qv_dist_index_t **out) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_load)(context, comm, prefix, options, out));
}

static inline qv_go_status_t qv_go_dist_index_train(qv_go_call_t call, qv_dist_index_t *index,
                                                    int64_t n, const float *x) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_train)(index, n, x));
}

static inline qv_go_status_t qv_go_dist_index_add(qv_go_call_t call, qv_dist_index_t *index,
                                                  int64_t n, const float *x, const int64_t *ids) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_add)(index, n, x, ids));
}

static inline qv_go_status_t qv_go_dist_index_search(qv_go_call_t call,
                                                     const qv_dist_index_t *index, int64_t nq,
                                                     const float *queries, uint32_t k,
                                                     const qv_search_params_t *params,
                                                     const uint8_t *filter, int64_t filter_bits,
                                                     float *distances, int64_t *ids) {
  qv_search_params_t local;
  const qv_search_params_t *p = qv_go_search_params(params, filter, filter_bits, &local);
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_search)(index, nq, queries, k, p,
                                                                 distances, ids));
}

static inline qv_go_status_t qv_go_dist_index_range_search(qv_go_call_t call,
                                                           const qv_dist_index_t *index,
                                                           int64_t nq, const float *queries,
                                                           float radius,
                                                           const qv_search_params_t *params,
                                                           const uint8_t *filter,
                                                           int64_t filter_bits,
                                                           qv_range_result_t **out) {
  qv_search_params_t local;
  const qv_search_params_t *p = qv_go_search_params(params, filter, filter_bits, &local);
  return qv_go_status(call,
                      QV_GO_FN(call, qv_dist_index_range_search)(index, nq, queries, radius, p, out));
}

static inline qv_go_status_t qv_go_dist_index_remove(qv_go_call_t call, qv_dist_index_t *index,
                                                     int64_t n, const int64_t *ids,
                                                     int64_t *removed) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_remove)(index, n, ids, removed));
}

static inline qv_go_status_t qv_go_dist_index_info(qv_go_call_t call, const qv_dist_index_t *index,
                                                   int32_t *rank, int32_t *size,
                                                   int64_t *local_count, int64_t *total_count) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_info)(index, rank, size, local_count,
                                                               total_count));
}

static inline qv_go_status_t qv_go_dist_index_save(qv_go_call_t call, const qv_dist_index_t *index,
                                                   const char *prefix) {
  return qv_go_status(call, QV_GO_FN(call, qv_dist_index_save)(index, prefix));
}

#endif /* QUIVER_MPI_GO_H */
