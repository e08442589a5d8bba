/* quiver_mpi.h: one index spread over the processes of an MPI communicator (libquiver_mpi).
 *
 * An optional component, built when CMake finds MPI (QUIVER_MPI=AUTO|ON|OFF); libquiver itself never
 * depends on MPI. libquiver_mpi is a client of libquiver's C API: each process (rank) holds one shard,
 * an ordinary quiver index on that rank's own context (CPU or CUDA), and the calls below are
 * collective: every rank of the communicator makes the same call, in the same order.
 *
 * - Ids are global. A vector with id i lives on rank i % size (adds route vectors there, so a
 *   duplicate id is refused wherever it is given). Ids left to the index are consecutive after the
 *   largest id the distributed index has held.
 * - Training gathers the ranks' samples to rank 0, trains there, and gives every rank the model.
 * - Searches take their queries from the root rank (qv_dist_options_t.root), search every shard and
 *   merge the shards' results on the root by k-selection; outputs are written on the root only.
 * - Failure is agreed on: when any rank fails, the call returns an error on every rank, the failing
 *   ranks their own status, the others QV_ERR_REMOTE naming the lowest failing rank; nothing is
 *   half-added. A rank that does
 *   not take part within timeout_ms makes the others return QV_ERR_REMOTE instead of hanging (the
 *   communicator may then be unusable: MPI cannot cancel a collective).
 * - Errors: the message of the last failed qv_dist_* call of this thread is qv_dist_last_error_message()
 *   (qv_last_error_message() keeps libquiver's own).
 * - Save writes one file per rank plus a manifest (written last, by rank 0); load needs as many ranks
 *   as saved the index.
 * - Arguments every rank must pass alike (comm, descriptor, prefix, options) are checked on each rank
 *   before any communication: a rank that passes a bad one fails alone while the others wait in
 *   MPI_Comm_dup, which has no timeout. Pass them alike.
 * - Thread safety: MPI collectives on one communicator must not overlap; use one distributed index from
 *   one thread at a time per process. MPI must be initialised (MPI_THREAD_SERIALIZED or more if other
 *   threads make MPI calls). */
#ifndef QUIVER_MPI_H
#define QUIVER_MPI_H

#include <stdint.h>

#include "quiver/quiver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qv_dist_index qv_dist_index_t;

typedef struct qv_dist_options {
  uint32_t struct_size; /* sizeof(qv_dist_options_t), set by qv_dist_options_init */
  int32_t root;         /* the rank that gives queries and receives results; default 0 */
  int32_t timeout_ms;   /* longest wait for the other ranks in one collective step; default 60000 */
} qv_dist_options_t;

/* Fills *options with defaults. size: sizeof(qv_dist_options_t), which the macro qv_dist_options_init
 * passes. Returns QV_ERR_INVALID_ARGUMENT if options is NULL or size is no version's size. */
QV_API qv_status_t qv_dist_options_init_sized(qv_dist_options_t *options, size_t size);
QV_API qv_status_t qv_dist_options_init(qv_dist_options_t *options);
#define qv_dist_options_init(options) qv_dist_options_init_sized((options), sizeof(qv_dist_options_t))

/* The message of this thread's last failed qv_dist_* call; "" after a success. Never NULL. */
QV_API const char *qv_dist_last_error_message(void);

/* For callers without mpi.h (the Rust and Go bindings): initialises MPI if it is not (thread level
 * MPI_THREAD_SERIALIZED, no arguments; a singleton run works without mpirun) and stores a pointer to
 * MPI_COMM_WORLD in *comm, valid until MPI is finalised. */
QV_API qv_status_t qv_dist_comm_world(const void **comm);

/* Finalises MPI if qv_dist_comm_world initialised it (and it is not finalised yet); otherwise does
 * nothing. Call once, after every distributed index is freed. */
QV_API qv_status_t qv_dist_finalize(void);

/* Creates a distributed index (collective). comm points to an MPI_Comm (an `MPI_Comm *`), duplicated
 * here: the caller may free its own. context: this rank's context (CPU or CUDA), kept alive by the
 * index. descriptor, dim, metric: as qv_index_create, the same on every rank. options: NULL for
 * defaults, the same on every rank. */
QV_API qv_status_t qv_dist_index_create(qv_context_t *context, const void *comm, const char *descriptor,
                                        int64_t dim, qv_metric_t metric, const qv_dist_options_t *options,
                                        qv_dist_index_t **out);

/* Frees a distributed index (collective: it frees its duplicated communicator). NULL is a no-op. */
QV_API void qv_dist_index_free(qv_dist_index_t *index);

/* Trains on the union of the ranks' samples (n >= 0 vectors each, gathered to rank 0). Collective. */
QV_API qv_status_t qv_dist_index_train(qv_dist_index_t *index, int64_t n, const float *x);

/* Adds each rank's n >= 0 vectors, routed to the ranks that own their ids. ids: n global ids, or NULL
 * on every rank for consecutive ids (rank 0's vectors first). Collective. */
QV_API qv_status_t qv_dist_index_add(qv_dist_index_t *index, int64_t n, const float *x, const int64_t *ids);

/* k-NN search of the root's nq queries over every shard (other ranks' nq, queries and outputs are
 * ignored and may be 0 / NULL). params: as qv_index_search (the filter applies to global ids), the
 * root's used on every rank. Outputs (nq x k, host memory) are written on the root. Collective. */
QV_API qv_status_t qv_dist_index_search(const qv_dist_index_t *index, int64_t nq, const float *queries,
                                        uint32_t k, const qv_search_params_t *params, float *distances,
                                        int64_t *ids);

/* Range search of the root's queries over every shard; *out (root only; NULL elsewhere) is read with
 * qv_range_result_get and freed with qv_range_result_free. Collective. */
QV_API qv_status_t qv_dist_index_range_search(const qv_dist_index_t *index, int64_t nq, const float *queries,
                                              float radius, const qv_search_params_t *params,
                                              qv_range_result_t **out);

/* Removes the given ids wherever they are (each rank may name any ids); *removed (may be NULL)
 * receives the number removed over all ranks. Collective. */
QV_API qv_status_t qv_dist_index_remove(qv_dist_index_t *index, int64_t n, const int64_t *ids, int64_t *removed);

/* This rank, the number of ranks, this rank's vector count and the total over all ranks (any may be
 * NULL). Collective (the total is a reduction). */
QV_API qv_status_t qv_dist_index_info(const qv_dist_index_t *index, int32_t *rank, int32_t *size,
                                      int64_t *local_count, int64_t *total_count);

/* Saves: rank r writes "<prefix>.<r>-of-<size>.qvi", then rank 0 writes the manifest "<prefix>.manifest"
 * once every shard is written. Collective. */
QV_API qv_status_t qv_dist_index_save(const qv_dist_index_t *index, const char *prefix);

/* Loads what qv_dist_index_save wrote, on a communicator of as many ranks (else
 * QV_ERR_INVALID_ARGUMENT). Collective. */
QV_API qv_status_t qv_dist_index_load(qv_context_t *context, const void *comm, const char *prefix,
                                      const qv_dist_options_t *options, qv_dist_index_t **out);

#ifdef __cplusplus
}
#endif

#endif /* QUIVER_MPI_H */
