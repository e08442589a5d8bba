/* The C half of the Go binding: one helper per fallible quiver function.
 *
 * A helper makes the quiver call and, when it fails, copies the thread's error message before
 * returning, so the call and its message are read in one cgo call. Two cgo calls could run on two
 * OS threads (goroutines move between threads), and qv_last_error_message() is thread-local: the
 * second call would read some other call's message.
 *
 * The Go side names the function to call (qv_go_call_t.fn, cast back here to the exact type of the
 * quiver function by __typeof__), so every quiver function appears by name in the Go code. Search
 * parameters are assembled here on the C stack: the filter bitset is Go memory, and cgo forbids
 * passing C a Go struct that holds a Go pointer. */
#ifndef QUIVER_GO_H
#define QUIVER_GO_H

#include <stdlib.h>
#include <string.h>

#include "quiver/quiver.h"

/* The quiver function to call and the reader of the thread's last error message. */
typedef struct qv_go_call {
  void (*fn)(void);
  const char *(*message)(void);
} qv_go_call_t;

/* A status and, when it is not QV_OK, a malloc'd copy of the message (NULL if malloc failed).
 * The Go side frees the copy. */
typedef struct qv_go_status {
  qv_status_t status;
  char *message;
} qv_go_status_t;

/* call.fn as a pointer to the quiver function `name`. */
#define QV_GO_FN(call, name) ((__typeof__(&name))(call).fn)

/* Defined in Go (progress.go): runs the progress func behind a runtime/cgo handle. */
extern int qvGoProgress(double fraction, uintptr_t handle);

/* The qv_progress_fn_t of every call given a Go progress func: user_data is the func's cgo handle
 * (a number, never a Go pointer, as cgo requires). */
static inline int qv_go_progress(double fraction, void *user_data) {
  return qvGoProgress(fraction, (uintptr_t)user_data);
}

/* A params copy's progress set to the Go func of the handle, when not 0. */
#define QV_GO_SET_PROGRESS(params, handle)     \
  do {                                         \
    if ((handle) != 0) {                       \
      (params).progress = qv_go_progress;      \
      (params).user_data = (void *)(handle);   \
    }                                          \
  } while (0)

static inline qv_go_status_t qv_go_status(qv_go_call_t call, qv_status_t status) {
  qv_go_status_t r = {status, NULL};
  if (status != QV_OK) {
    const char *m = call.message();
    size_t len = strlen(m) + 1;
    r.message = (char *)malloc(len);
    if (r.message != NULL) memcpy(r.message, m, len);
  }
  return r;
}

/* params (NULL for defaults) with the filter set, in *local. */
static inline const qv_search_params_t *qv_go_search_params(const qv_search_params_t *params,
                                                            const uint8_t *filter,
                                                            int64_t filter_bits,
                                                            qv_search_params_t *local) {
  if (params == NULL) return NULL;
  *local = *params;
  local->filter = filter;
  local->filter_bits = filter_bits;
  return local;
}

/* ---- contexts ---------------------------------------------------------------------------------- */

static inline qv_go_status_t qv_go_context_create(qv_go_call_t call,
                                                  const qv_context_options_t *options,
                                                  qv_context_t **out) {
  return qv_go_status(call, QV_GO_FN(call, qv_context_create)(options, out));
}

static inline qv_go_status_t qv_go_context_device(qv_go_call_t call, const qv_context_t *context,
                                                  qv_device_kind_t *kind, int32_t *device_id) {
  return qv_go_status(call, QV_GO_FN(call, qv_context_device)(context, kind, device_id));
}

static inline qv_go_status_t qv_go_context_devices(qv_go_call_t call, const qv_context_t *context,
                                                   int32_t *device_ids, int32_t capacity,
                                                   int32_t *count) {
  return qv_go_status(call, QV_GO_FN(call, qv_context_devices)(context, device_ids, capacity, count));
}

static inline qv_go_status_t qv_go_cuda_device_count(qv_go_call_t call, int32_t *count) {
  return qv_go_status(call, QV_GO_FN(call, qv_cuda_device_count)(count));
}

/* ---- indexes ----------------------------------------------------------------------------------- */

static inline qv_go_status_t qv_go_index_create(qv_go_call_t call, qv_context_t *context,
                                                const char *descriptor, int64_t dim,
                                                qv_metric_t metric, qv_index_t **out) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_create)(context, descriptor, dim, metric, out));
}

static inline qv_go_status_t qv_go_index_train(qv_go_call_t call, qv_index_t *index, int64_t n,
                                               const float *x) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_train)(index, n, x));
}

/* Sets the index's progress callback to the Go func of the handle, or removes it for handle 0. */
static inline qv_go_status_t qv_go_index_set_progress(qv_go_call_t call, qv_index_t *index, uintptr_t handle) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_set_progress)(index, handle != 0 ? qv_go_progress : NULL,
                                                                  (void *)handle));
}

static inline qv_go_status_t qv_go_index_add(qv_go_call_t call, qv_index_t *index, int64_t n,
                                             const float *x, const int64_t *ids) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_add)(index, n, x, ids));
}

static inline qv_go_status_t qv_go_index_remove(qv_go_call_t call, qv_index_t *index, int64_t n,
                                                const int64_t *ids, int64_t *removed) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_remove)(index, n, ids, removed));
}

static inline qv_go_status_t qv_go_index_info(qv_go_call_t call, const qv_index_t *index,
                                              qv_index_info_t *info) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_info)(index, info));
}

/* ---- searches ---------------------------------------------------------------------------------- */

static inline qv_go_status_t qv_go_index_search(qv_go_call_t call, const qv_index_t *index,
                                                int64_t nq, const float *queries, uint32_t k,
                                                const qv_search_params_t *params,
                                                const uint8_t *filter, int64_t filter_bits,
                                                float *distances, int64_t *ids) {
  qv_search_params_t local;
  const qv_search_params_t *p = qv_go_search_params(params, filter, filter_bits, &local);
  return qv_go_status(call,
                      QV_GO_FN(call, qv_index_search)(index, nq, queries, k, p, distances, ids));
}

static inline qv_go_status_t qv_go_index_range_search(qv_go_call_t call, const qv_index_t *index,
                                                      int64_t nq, const float *queries,
                                                      float radius,
                                                      const qv_search_params_t *params,
                                                      const uint8_t *filter, int64_t filter_bits,
                                                      qv_range_result_t **out) {
  qv_search_params_t local;
  const qv_search_params_t *p = qv_go_search_params(params, filter, filter_bits, &local);
  return qv_go_status(call,
                      QV_GO_FN(call, qv_index_range_search)(index, nq, queries, radius, p, out));
}

static inline qv_go_status_t qv_go_range_result_get(qv_go_call_t call,
                                                    const qv_range_result_t *result, int64_t *nq,
                                                    const int64_t **lims, const int64_t **ids,
                                                    const float **distances) {
  return qv_go_status(call, QV_GO_FN(call, qv_range_result_get)(result, nq, lims, ids, distances));
}

/* ---- byte strings (QV_METRIC_EDIT indexes) ------------------------------------------------------ */

static inline qv_go_status_t qv_go_index_add_strings(qv_go_call_t call, qv_index_t *index,
                                                     int64_t n, const int64_t *offsets,
                                                     const uint8_t *bytes, const int64_t *ids) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_add_strings)(index, n, offsets, bytes, ids));
}

static inline qv_go_status_t qv_go_index_search_strings(qv_go_call_t call, const qv_index_t *index,
                                                        int64_t nq, const int64_t *offsets,
                                                        const uint8_t *bytes, uint32_t k,
                                                        const qv_search_params_t *params,
                                                        const uint8_t *filter, int64_t filter_bits,
                                                        float *distances, int64_t *ids) {
  qv_search_params_t local;
  const qv_search_params_t *p = qv_go_search_params(params, filter, filter_bits, &local);
  return qv_go_status(call, QV_GO_FN(call, qv_index_search_strings)(index, nq, offsets, bytes, k,
                                                                    p, distances, ids));
}

static inline qv_go_status_t qv_go_index_range_search_strings(
    qv_go_call_t call, const qv_index_t *index, int64_t nq, const int64_t *offsets,
    const uint8_t *bytes, float radius, const qv_search_params_t *params, const uint8_t *filter,
    int64_t filter_bits, qv_range_result_t **out) {
  qv_search_params_t local;
  const qv_search_params_t *p = qv_go_search_params(params, filter, filter_bits, &local);
  return qv_go_status(call, QV_GO_FN(call, qv_index_range_search_strings)(index, nq, offsets,
                                                                          bytes, radius, p, out));
}

/* ---- serialization ----------------------------------------------------------------------------- */

static inline qv_go_status_t qv_go_index_save(qv_go_call_t call, const qv_index_t *index,
                                              const char *path) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_save)(index, path));
}

static inline qv_go_status_t qv_go_index_load(qv_go_call_t call, qv_context_t *context,
                                              const char *path, qv_index_t **out) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_load)(context, path, out));
}

static inline qv_go_status_t qv_go_index_save_buffer(qv_go_call_t call, const qv_index_t *index,
                                                     void **data, size_t *size) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_save_buffer)(index, data, size));
}

static inline qv_go_status_t qv_go_index_load_buffer(qv_go_call_t call, qv_context_t *context,
                                                     const void *data, size_t size,
                                                     qv_index_t **out) {
  return qv_go_status(call, QV_GO_FN(call, qv_index_load_buffer)(context, data, size, out));
}

/* ---- operations without an index --------------------------------------------------------------- */

static inline qv_go_status_t qv_go_knn(qv_go_call_t call, qv_context_t *context,
                                       qv_metric_t metric, int64_t dim, int64_t n,
                                       const float *base, int64_t nq, const float *queries,
                                       uint32_t k, const qv_search_params_t *params,
                                       const uint8_t *filter, int64_t filter_bits,
                                       float *distances, int64_t *ids) {
  qv_search_params_t local;
  const qv_search_params_t *p = qv_go_search_params(params, filter, filter_bits, &local);
  return qv_go_status(call, QV_GO_FN(call, qv_knn)(context, metric, dim, n, base, nq, queries, k,
                                                   p, distances, ids));
}

/* The params' progress set to the Go func of the handle (when not 0) on a copy. */
static inline qv_go_status_t qv_go_kmeans(qv_go_call_t call, qv_context_t *context, int64_t dim,
                                          int64_t n, const float *x, uint32_t k,
                                          const qv_kmeans_params_t *params, uintptr_t handle,
                                          float *centroids, int64_t *assignments, double *objective) {
  qv_kmeans_params_t local = *params;
  QV_GO_SET_PROGRESS(local, handle);
  return qv_go_status(call, QV_GO_FN(call, qv_kmeans)(context, dim, n, x, k, &local, centroids,
                                                      assignments, objective));
}

/* The same for qv_knn_graph. */
static inline qv_go_status_t qv_go_knn_graph(qv_go_call_t call, qv_context_t *context,
                                             qv_metric_t metric, int64_t dim, int64_t n,
                                             const float *x, uint32_t k,
                                             const qv_knn_graph_params_t *params, uintptr_t handle,
                                             float *distances, int64_t *ids, double *recall) {
  qv_knn_graph_params_t local = *params;
  QV_GO_SET_PROGRESS(local, handle);
  return qv_go_status(call, QV_GO_FN(call, qv_knn_graph)(context, metric, dim, n, x, k, &local,
                                                         distances, ids, recall));
}

#endif /* QUIVER_GO_H */
