/* quiver: similarity search over dense float vectors on CPUs and NVIDIA GPUs.
 *
 * This is the whole public C API. Conventions that hold for every function below:
 *
 * - Every fallible function returns a qv_status_t: QV_OK (0) on success, else one of the QV_ERR_*
 *   codes. After a failure, qv_last_error_message() describes it on the calling thread.
 * - No function ever throws, aborts, exits or prints. qv_*_free(NULL) is a no-op.
 * - Handles (qv_context_t, qv_index_t, qv_range_result_t) are opaque; create them with the matching
 *   function and release them with the matching qv_*_free.
 * - Parameter structs start with `uint32_t struct_size`; fill them with their qv_*_init function, then
 *   change the fields you need. Passing NULL where a params pointer is accepted means defaults.
 *   qv_X_init(p) is a macro for qv_X_init_sized(p, sizeof(qv_X_t)): the library writes and reads only
 *   the struct size the caller's header declares, so a program compiled against an older header
 *   keeps working after a struct grows. (The exported function qv_X_init, for programs built before
 *   the sized form existed, writes the struct as it was then, never more.) Bindings that declare the
 *   structs themselves call qv_X_init_sized with their own struct's size.
 * - Vectors are row-major float32 (`n x dim`). Inputs and outputs (vectors, ids, distances) may live
 *   in host memory or, on a CUDA context, in device memory; the library detects which (on a CPU
 *   context, device memory is QV_ERR_INVALID_ARGUMENT). No pointer is kept after a call.
 *   Host vectors are checked for NaN and infinities; device vectors used in place are not (checking
 *   them would cost a copy), so NaN there gives unspecified results.
 * - Thread safety: a context may be used from any number of threads. On one index, concurrent
 *   qv_index_search / qv_index_range_search / qv_index_info / qv_index_save / qv_index_save_buffer
 *   calls are safe;
 *   qv_index_train / qv_index_add / qv_index_remove need exclusive access (no other call on that index
 *   at the same time). Different indexes are independent.
 * - Every call blocks until its outputs are written.
 * - Counts may be 0 (n, nq): the call validates its arguments and does nothing; pointers to zero
 *   elements may then be NULL.
 * - Results (qv_range_result_t, buffers) belong to no thread: read and free them on any thread.
 * - On error, an index is left exactly as it was before the call.
 */
#ifndef QUIVER_QUIVER_H
#define QUIVER_QUIVER_H

#include <stddef.h>
#include <stdint.h>

#include "quiver/export.h"
#include "quiver/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Status codes and errors                                                                         */

typedef int32_t qv_status_t;

enum qv_status_code {
  QV_OK = 0,
  QV_ERR_INVALID_ARGUMENT = 1,     /* a NULL pointer, a size out of range, NaN/Inf data, bad ids... */
  QV_ERR_OUT_OF_HOST_MEMORY = 2,   /* a host allocation failed */
  QV_ERR_OUT_OF_DEVICE_MEMORY = 3, /* a GPU allocation failed; the index is intact */
  QV_ERR_CUDA = 4,                 /* the CUDA runtime or cuBLAS reported an error */
  QV_ERR_NO_DEVICE = 5,            /* a CUDA device was asked for and none is usable */
  QV_ERR_NOT_TRAINED = 6,          /* the index needs qv_index_train before this call */
  QV_ERR_UNSUPPORTED = 7,          /* valid request this index kind, metric or build cannot do */
  QV_ERR_IO = 8,                   /* a file could not be opened, read, written or renamed */
  QV_ERR_CORRUPT_DATA = 9,         /* a saved index is truncated, damaged or not a quiver index */
  QV_ERR_VERSION_MISMATCH = 10,    /* a saved index was written in a format version this library
                                      does not read */
  QV_ERR_INTERNAL = 11,            /* a bug in quiver; please report it with the message */
  QV_ERR_CANCELLED = 12,           /* a progress callback asked the call to stop */
  QV_ERR_TOO_MANY_RESULTS = 13,    /* a range search query found more hits than
                                    * qv_search_params_t.max_range_results allows */
  QV_ERR_REMOTE = 14               /* a distributed call (quiver_mpi.h) failed on another process,
                                    * or it did not answer in time */
};

/* The name of a status code, e.g. "QV_ERR_INVALID_ARGUMENT". Never NULL; unknown codes give
 * "QV_ERR_UNKNOWN". The string is static. */
QV_API const char *qv_status_string(qv_status_t status);

/* The message of the last failed quiver call on this thread, or "" if the last call succeeded.
 * Never NULL. Valid until the next quiver call on this thread; copy it to keep it. */
QV_API const char *qv_last_error_message(void);

/* ---------------------------------------------------------------------------------------------- */
/* Versions                                                                                        */

/* QV_VERSION_NUMBER of the library actually linked (major * 10000 + minor * 100 + patch). */
QV_API uint32_t qv_version(void);

/* "MAJOR.MINOR.PATCH" of the library actually linked. Static string. */
QV_API const char *qv_version_string(void);

/* QV_ABI_VERSION of the library actually linked; a program built against another ABI must not use it. */
QV_API uint32_t qv_abi_version(void);

/* ---------------------------------------------------------------------------------------------- */
/* Enumerations                                                                                    */

typedef int32_t qv_metric_t;
enum qv_metric_code {
  /* Squared Euclidean distance; smaller is closer. Distances and radii are squared. */
  QV_METRIC_L2 = 0,
  /* Inner product <x, y>; larger is closer. */
  QV_METRIC_INNER_PRODUCT = 1,
  /* Cosine similarity <x, y> / (|x| |y|) in [-1, 1]; larger is closer. Zero vectors are rejected. */
  QV_METRIC_COSINE = 2,
  /* L1 (Manhattan) distance sum |x_i - y_i|; smaller is closer. "Flat", "LC" and "SSS" indexes. */
  QV_METRIC_L1 = 3,
  /* L-infinity (Chebyshev) distance max |x_i - y_i|; smaller is closer. "Flat", "LC" and "SSS". */
  QV_METRIC_LINF = 4,
  /* Edit (Levenshtein) distance between byte strings: the fewest single-byte insertions, deletions
   * and substitutions; an integer, smaller is closer. Indexes of this metric hold byte strings, not
   * vectors (dim 0; qv_index_add_strings and the _strings searches). "Flat", "LC" and "SSS". */
  QV_METRIC_EDIT = 5
};

typedef int32_t qv_device_kind_t;
enum qv_device_kind_code {
  QV_DEVICE_AUTO = 0, /* a CUDA device if one is usable, else the CPU */
  QV_DEVICE_CPU = 1,
  QV_DEVICE_CUDA = 2
};

/* The arithmetic of a search on a CUDA device (per index kind: qv_search_params_t.compute_mode). For
 * exact search the fast modes select an enlarged candidate set with the cheaper GEMM, then re-rank it
 * with exact float32 distances: the returned distances are exact, and the ids are those of
 * QV_COMPUTE_FP32 except, rarely, where the cheaper arithmetic lost a true neighbour (recall@k >= 0.999
 * on the benchmark data sets). The CPU always computes exactly and ignores the mode. */
typedef int32_t qv_compute_mode_t;
enum qv_compute_mode_code {
  QV_COMPUTE_FP32 = 0, /* float32 GEMM (default) */
  QV_COMPUTE_TF32 = 1, /* TF32 tensor cores on the float32 data */
  QV_COMPUTE_FP16 = 2, /* float16 copies of the vectors; values beyond +-65504: QV_ERR_INVALID_ARGUMENT */
  QV_COMPUTE_BF16 = 3  /* bfloat16 copies of the vectors */
};

/* The visited set of a graph index's walk on a CUDA device (qv_search_params_t.graph_visited): the
 * nodes a query has already reached, kept in its warp's shared memory (SONG's choices). The filters
 * now and then take a new node for a visited one and skip it: that may cost recall, never
 * correctness (results stay sorted, distinct and with exact distances). Measured on an H100 (1M x 128
 * vectors, a graph of degree 32, 10 000 queries): the Bloom filter answered 13-16% more queries a
 * second than the hash table at search widths 64-128, 4-7% more at 32-48 and as many at 16-24, with
 * the same recall to four decimals; the Cuckoo filter was as fast as the table or slower. */
typedef int32_t qv_graph_visited_t;
enum qv_graph_visited_code {
  QV_GRAPH_VISITED_DEFAULT = 0,    /* the library's choice, today QV_GRAPH_VISITED_BLOOM (default) */
  QV_GRAPH_VISITED_HASH_TABLE = 1, /* an open-addressing table of the nodes: exact, with deletion */
  QV_GRAPH_VISITED_BLOOM = 2,      /* a Bloom filter, 3 bits a node, rebuilt from the queue when full */
  QV_GRAPH_VISITED_CUCKOO = 3      /* a Cuckoo filter of 16-bit fingerprints, with deletion */
};

/* Largest qv_search_params_t.graph_probes and graph_warps_per_query. */
#define QV_GRAPH_MAX_PROBES 8
#define QV_GRAPH_MAX_WARPS_PER_QUERY 16

/* Largest k accepted by the k-nearest-neighbour searches. */
#define QV_MAX_K 2048

/* ---------------------------------------------------------------------------------------------- */
/* Contexts: where work runs (CPU threads, a CUDA device) and the resources it needs              */

typedef struct qv_context qv_context_t;

/* Most devices one context holds, and the qv_context_options_t.device_count of every visible one. */
#define QV_MAX_DEVICES 64
#define QV_ALL_DEVICES (-1)

typedef struct qv_context_options {
  uint32_t struct_size;     /* sizeof(qv_context_options_t), set by qv_context_options_init */
  qv_device_kind_t device;  /* default QV_DEVICE_AUTO */
  int32_t device_id;        /* CUDA device ordinal for QV_DEVICE_CUDA / AUTO; default 0 */
  int32_t cpu_threads;      /* threads of the context's own pool; 0 (default) = one per core */
  /* Several CUDA devices (QV_DEVICE_CUDA / AUTO): the first device_count ordinals of device_ids, or
   * QV_ALL_DEVICES for every visible device; 0 (default): device_id alone. An ordinal may repeat: the
   * repeats are logical devices sharing one GPU. Plain indexes live on the first device; the
   * "Sharded" and "Replicated" descriptors spread an index over all of them. AUTO without a GPU
   * falls back to the CPU. */
  int32_t device_count;
  int32_t device_ids[QV_MAX_DEVICES];
} qv_context_options_t;

/* Fills *options with defaults. size: sizeof(qv_context_options_t), which the macro qv_context_options_init
 * passes. Returns QV_ERR_INVALID_ARGUMENT if options is NULL or size is no version's size. */
QV_API qv_status_t qv_context_options_init_sized(qv_context_options_t *options, size_t size);
QV_API qv_status_t qv_context_options_init(qv_context_options_t *options);
#define qv_context_options_init(options) qv_context_options_init_sized((options), sizeof(qv_context_options_t))

/* Creates a context. options: NULL for defaults. *out receives a new context owned by the caller
 * (release with qv_context_free after every index made from it is freed).
 * Returns QV_OK, QV_ERR_INVALID_ARGUMENT, QV_ERR_NO_DEVICE (QV_DEVICE_CUDA and no usable device or a
 * build without CUDA), QV_ERR_CUDA, QV_ERR_OUT_OF_HOST_MEMORY. The context's thread pool is its own:
 * no global OpenMP or BLAS thread setting of the process is changed. Thread-safe. */
QV_API qv_status_t qv_context_create(const qv_context_options_t *options, qv_context_t **out);

/* Releases the caller's reference to a context. Indexes created from it keep it alive: its threads
 * and device resources go when the last of them is freed. (The threads that run the parts of a
 * multi-device index at once belong to the process: kept idle between calls, at most 64.) No call
 * may be running on the context itself (qv_index_create, qv_knn, ...) at the same time. NULL is a
 * no-op. */
QV_API void qv_context_free(qv_context_t *context);

/* The device a context resolved to (AUTO becomes CPU or CUDA) and its CUDA ordinal (-1 on the CPU).
 * Either output may be NULL. Returns QV_OK, or QV_ERR_INVALID_ARGUMENT for a NULL context. */
QV_API qv_status_t qv_context_device(const qv_context_t *context, qv_device_kind_t *kind,
                                     int32_t *device_id);

/* The CUDA ordinals of a context's devices, in order: *count receives their number (0 on the CPU)
 * and device_ids the first min(capacity, *count) of them (device_ids may be NULL when capacity is 0).
 * Returns QV_OK, or QV_ERR_INVALID_ARGUMENT for a NULL context or count, or a negative capacity. */
QV_API qv_status_t qv_context_devices(const qv_context_t *context, int32_t *device_ids, int32_t capacity,
                                      int32_t *count);

/* Number of usable CUDA devices: 0 on a build without CUDA or a machine without a GPU.
 * Returns QV_OK, or QV_ERR_INVALID_ARGUMENT for a NULL count. */
QV_API qv_status_t qv_cuda_device_count(int32_t *count);

/* ---------------------------------------------------------------------------------------------- */
/* Search parameters                                                                               */

/* qv_search_params_t.nprobe value that lets an inverted-file index choose: min(nlist, 8). */
#define QV_NPROBE_DEFAULT 0xFFFFFFFFu

typedef struct qv_search_params {
  uint32_t struct_size; /* sizeof(qv_search_params_t), set by qv_search_params_init */
  /* Allowed ids: bit (id % 8) of byte filter[id / 8] set means id may be returned. Ids at or beyond
   * filter_bits are excluded, so a non-NULL filter with filter_bits 0 allows nothing. NULL (default)
   * allows every id (filter_bits must then be 0). filter_bits < 0 is QV_ERR_INVALID_ARGUMENT.
   * Inverted-file indexes apply it inside the scan of each list, so k results come back whenever k
   * allowed vectors are in the lists visited.
   * Host memory, at least (filter_bits + 7) / 8 bytes; read during the call. */
  const uint8_t *filter;
  int64_t filter_bits;
  /* Inverted-file indexes ("IVF..."): the number of lists visited (search and range search), the
   * nprobe lists whose centroids are nearest the query; 1 .. nlist, more is slower and finds more
   * true neighbours (nprobe = nlist visits every list: for IVF-Flat, the exact result). Default
   * QV_NPROBE_DEFAULT: min(nlist, 8). 0 or more than nlist is QV_ERR_INVALID_ARGUMENT. Other index
   * kinds ignore it. */
  uint32_t nprobe;
  /* Graph indexes ("Graph<R>"): the candidate pool of the beam search, the recall/speed knob (more
   * is slower and finds more true neighbours); values below k count as k. 0 (default) = max(k, 64).
   * A filter is applied to the results, not the walk, so permissive filters keep the recall of
   * unfiltered searches; where the walk finds fewer than k allowed vectors, that query falls back to
   * an exact scan. Other index kinds ignore it. */
  uint32_t search_width;
  /* The arithmetic of a search on a CUDA device (the CPU always computes in float32 and ignores it):
   * exact search ("Flat"): the distance GEMM, see qv_compute_mode_t; IVF-Flat: the fast modes may
   * use the tensor cores, re-ranked exactly in float32; IVF-PQ: the precision of the look-up
   * tables, float32 for QV_COMPUTE_FP32 and QV_COMPUTE_TF32, float16 (scaled so that no table
   * overflows) for QV_COMPUTE_FP16 and QV_COMPUTE_BF16; graph indexes searched on a CUDA device:
   * QV_COMPUTE_FP16 and QV_COMPUTE_BF16 walk the graph over a 16-bit copy of the vectors (float16,
   * or bfloat16 where a value is beyond float16's range; made on the device by the first such search,
   * dim x 2 bytes a vector) and re-rank the candidate pool in float32, so the distances returned are
   * exact. Default QV_COMPUTE_FP32. */
  qv_compute_mode_t compute_mode;
  /* IVF-PQ indexes with ",Refine": the refine_factor x k best candidates by PQ distance (at most
   * max(k, QV_MAX_K)) are re-ranked with exact distances to the stored raw vectors, and the k best
   * returned; larger finds more true neighbours. 0 (default) = 8. Other indexes ignore it. */
  uint32_t refine_factor;
  /* Range searches: the most hits one query may have; a query with more fails the call with
   * QV_ERR_TOO_MANY_RESULTS (no result is returned), which bounds the memory a too-large radius can
   * take. 0 (default) = no limit; < 0 is QV_ERR_INVALID_ARGUMENT. k-NN searches ignore it. */
  int64_t max_range_results;
  /* The four graph_ fields tune the walk of graph indexes ("Graph<R>") searched on a CUDA device
   * (SONG); searches on the CPU and other index kinds ignore them, but their values are checked
   * whatever the index. 0 in each is the default, so a zeroed struct searches as before they existed.
   * They change the walk's speed and, but for graph_warps_per_query, which neighbours it finds
   * (recall), never which vectors may be returned. */
  /* The walk's visited set: a qv_graph_visited_t. Default QV_GRAPH_VISITED_DEFAULT (the Bloom
   * filter). Any other value is QV_ERR_INVALID_ARGUMENT. */
  qv_graph_visited_t graph_visited;
  /* Nodes expanded per iteration of the walk (SONG's multi-step probing): 1 .. QV_GRAPH_MAX_PROBES;
   * 0 (default) = 1. More than QV_GRAPH_MAX_PROBES is QV_ERR_INVALID_ARGUMENT, and so, on a CUDA
   * device, is graph_probes x R above 256 (R: the graph's degree). Fewer iterations of more distances
   * each; on an H200 2 probes lost at equal recall (1M x 128: 1.94 ms at recall@10 0.949 against
   * 1.81 ms at 0.964 with 1). */
  uint32_t graph_probes;
  /* Warps searching one query together, sharing each expansion's distances: 1 ..
   * QV_GRAPH_MAX_WARPS_PER_QUERY; 0 (default) = automatic: several only when the batch has fewer
   * queries than the device has multiprocessors. It shortens a query's chain of dependent expansions,
   * so it cuts the latency of small batches (batch 1 on an H200: 0.50 -> 0.124 ms on Fashion-MNIST,
   * 0.22 -> 0.143 ms on 1M x 128), and leaves the results as they are with one warp. More than
   * QV_GRAPH_MAX_WARPS_PER_QUERY is QV_ERR_INVALID_ARGUMENT. */
  uint32_t graph_warps_per_query;
  /* Queries one warp searches at once (SONG's multi-query per warp): 1, 2 or 4; 0 (default) = 1.
   * The warp's lanes split into groups of 16 or 8, each walking its own query, so a warp needs 2 or 4
   * times one query's shared memory (QV_ERR_INVALID_ARGUMENT on a CUDA device where that is more than
   * the device has: wide search_width). Each query walks as with 1, so the results are the same but
   * for the rounding of some distances (above 128 dimensions with 4, above 256 with 2) and a filter's
   * rare false positives. Slower on an H100 at every dimension measured (16 to 128: 2 queries a warp
   * took 1.5-1.9x the time of 1, 4 took 2.4-5.2x), hence the default. Other values, and 2 or 4 with
   * graph_warps_per_query above 1, are QV_ERR_INVALID_ARGUMENT. */
  uint32_t graph_queries_per_warp;
} qv_search_params_t;

/* Fills *params with defaults: no filter, nprobe QV_NPROBE_DEFAULT, search_width 0, compute_mode
 * QV_COMPUTE_FP32, refine_factor 0, max_range_results 0, graph_visited QV_GRAPH_VISITED_DEFAULT,
 * graph_probes 0, graph_warps_per_query 0, graph_queries_per_warp 0. size: sizeof(qv_search_params_t)
 * (the macro qv_search_params_init passes it). Returns QV_ERR_INVALID_ARGUMENT if params is NULL or
 * size is no version's size. */
QV_API qv_status_t qv_search_params_init_sized(qv_search_params_t *params, size_t size);
QV_API qv_status_t qv_search_params_init(qv_search_params_t *params);
#define qv_search_params_init(params) qv_search_params_init_sized((params), sizeof(qv_search_params_t))

/* ---------------------------------------------------------------------------------------------- */
/* Indexes                                                                                         */

typedef struct qv_index qv_index_t;

/* Creates an empty index.
 *
 * context     borrowed; the index keeps it alive (see qv_context_free).
 * descriptor  the index kind, Faiss-style, case-sensitive, no spaces:
 *             "Flat"                exact search over the raw vectors; needs no training.
 *             "IVF<nlist>,Flat"     inverted file (IVF-Flat): k-means on the training vectors gives
 *                                   nlist centroids; each vector is stored raw in the list of its
 *                                   closest centroid; a search visits the nprobe lists closest to
 *                                   the query (qv_search_params_t.nprobe), exact float32 distances.
 *                                   Memory: dim x 4 bytes a vector (+ 4 for L2), its id and
 *                                   its place in the id index (about 48 bytes), the centroids
 *                                   (nlist x dim x 4).
 *             "IVF<nlist>,PQ<M>"    IVF-PQ (IVFADC): vectors stored as M-byte product-quantization
 *                                   codes of their residual to the centroid (M sub-quantizers of 256
 *                                   centroids over dim / M dimensions each), searched through look-up
 *                                   tables; distances are to the encoded vectors (approximate).
 *                                   M: 1 .. 256, dividing dim. "PQ<M>x8" is the same.
 *                                   Memory: M bytes a vector, its id and id index entry (about 48
 *                                   bytes), the centroids, the codebooks (256 x dim x 4), and on the
 *                                   CPU with L2 precomputed tables of nlist x M x 1 KiB when they
 *                                   fit 256 MiB.
 *             "OPQ<M>,IVF<nlist>,PQ<M2>"  IVF-PQ after a learned rotation (OPQ) that lowers the
 *                                   quantization error; M and M2 divide dim. Memory: + dim x dim x 4.
 *                                   (OPQ before "Flat" is refused: a rotation changes no distance.)
 *             ",Refine" after a PQ descriptor keeps every vector's raw floats too (+ dim x 4 bytes a
 *                                   vector) and re-ranks the refine_factor x k best PQ candidates
 *                                   with exact distances (qv_search_params_t.refine_factor).
 *             ",HostIds" after an IVF descriptor: on a CUDA context, the 8-byte ids stay in host
 *                                   memory (less device memory); no effect on the CPU.
 *             "Graph<R>"            graph index: a navigable graph of fixed out-degree R (2 .. 1024;
 *                                   "Graph32" is a good start) over the raw vectors, searched by beam
 *                                   search with a candidate pool of qv_search_params_t.search_width.
 *                                   No training. The first add builds the graph: the k-NN graph of
 *                                   the vectors (on the GPU on a CUDA context), pruned to R diverse
 *                                   neighbours a vector, with reverse edges, and every vector made
 *                                   reachable from the entry points (the medoid and 31 rows spread
 *                                   farthest-first); an add at least half
 *                                   the size of the index rebuilds the graph, smaller adds insert
 *                                   with local repair (and end with the same reachability pass, a
 *                                   walk over the whole graph: batch small adds). Removed vectors
 *                                   are tombstones, never returned
 *                                   and dropped by a rebuild once they are half the rows, or when an
 *                                   add reuses a removed id. Search and add before the first add:
 *                                   QV_ERR_NOT_TRAINED. Range search scans every vector (exact). The
 *                                   index lives in host memory on every device; on a CUDA context a
 *                                   copy on the device is searched there (SONG: one warp a query,
 *                                   search_width up to 1024, R up to 256; beyond those limits, or
 *                                   where the copy does not fit, the CPU searches). From 16 384
 *                                   vectors on, walks over the full vectors (GPU, and CPU below 256
 *                                   floats) start near their query: at the best rows of a first walk
 *                                   over a small graph of 4 096 sampled vectors (2.3 MiB at 128
 *                                   floats). On the CPU,
 *                                   vectors of 256 floats or more under L2 or cosine are walked
 *                                   through their projection on 128 principal directions (from the
 *                                   first 65 536 vectors) and the best 2 x search_width rows the walk
 *                                   computed are re-ranked with exact distances.
 *                                   Memory: dim x 4 + R x 4 bytes a vector (+ 512 for the projection
 *                                   of wide vectors on the CPU), its id and id index entry (about 48
 *                                   bytes), 1 tombstone byte.
 *             "Graph<R>,K<k>"       the same, building from the k-NN graph of k neighbours
 *                                   (R/2 .. 2047; default R): larger k, better graph, slower build.
 *             "Graph<R>[,K<k>],H<b>"  SONG's hashing mode, for vectors too large for the device: on a
 *                                   CUDA context the device holds the graph and b-bit codes of the
 *                                   vectors (b a multiple of 32 in 32 .. 1024; 1-bit random
 *                                   projections of the centred vectors, b / 8 bytes a vector) instead
 *                                   of the vectors; the walk goes by Hamming distance and its
 *                                   search_width final candidates are re-ranked with exact distances
 *                                   from host memory (distances returned are exact). Needs a wider
 *                                   search_width than a walk over vectors for the same recall (e.g.
 *                                   "Graph32,H256": recall@10 0.97 at 512 on a 1M x 128 set). No
 *                                   effect on the CPU.
 *             IVF indexes must be trained (qv_index_train) before add and search. On a CUDA context
 *             their lists live in device memory; saved files are the same on every device.
 *             Coarse quantization (the list a vector joins, the lists a query visits) uses the metric,
 *             as in Faiss: the nearest centroids for L2, those of largest inner product for inner
 *             product and cosine (vectors and queries are normalised for cosine; centroids are
 *             k-means means, not normalised).
 *             "LC<b>"               List of Clusters, a metric-space index for any true metric
 *                                   (QV_METRIC_L2, _L1, _LINF, _EDIT; inner product and cosine are
 *                                   QV_ERR_UNSUPPORTED): each centre (chosen farthest-first: the
 *                                   largest sum of distances to the earlier centres) takes the b
 *                                   objects nearest it of those left (b = 1 .. 65536, e.g. "LC32")
 *                                   and records its covering radius. Exact: range and k-NN search
 *                                   prune clusters by the triangle inequality and return what
 *                                   brute force returns. No
 *                                   training; the first add builds the clusters, later adds join
 *                                   the first cluster that covers them (or start a new one).
 *             "SSS<alpha>" or "SSS<alpha>,P<p>"  Sparse Spatial Selection pivot index (any true
 *                                   metric, as LC): objects become pivots when farther than alpha x
 *                                   (the largest distance seen) from every pivot (alpha in (0, 2],
 *                                   e.g. "SSS0.4"), at most p pivots (default 64, 1 .. 1024); a
 *                                   table of every object's distance to every pivot filters
 *                                   candidates (|d(x,p) - d(q,p)| > r). Exact, as LC. The first add
 *                                   chooses the pivots. Memory: p x 4 bytes an object.
 *             "Flat" with QV_METRIC_L1, _LINF or _EDIT is brute force over the objects. On a CUDA
 *             context Flat, LC and SSS of these metrics (and LC, SSS with L2) search on the GPU, one
 *             block a query, over a device copy; the host keeps the authoritative copy.
 * dim         vector dimension, 1 .. 65536; 0 for QV_METRIC_EDIT (strings).
 * metric      QV_METRIC_L2, _INNER_PRODUCT, _COSINE (every kind), _L1, _LINF (Flat, LC, SSS) or
 *             _EDIT (Flat, LC, SSS over byte strings). Range search radii of L2 are squared, as
 *             its distances, on every kind.
 * out         receives the new index, owned by the caller (qv_index_free).
 * Returns QV_OK, QV_ERR_INVALID_ARGUMENT (unknown or malformed descriptor, bad dim or metric),
 * QV_ERR_UNSUPPORTED (the kind cannot run on the context's device: an explicit CUDA context; an
 * AUTO context falls back to the CPU). Thread-safe. */
QV_API qv_status_t qv_index_create(qv_context_t *context, const char *descriptor, int64_t dim,
                                   qv_metric_t metric, qv_index_t **out);

/* Releases an index. NULL is a no-op. No other call may be running on the index. */
QV_API void qv_index_free(qv_index_t *index);

/* Trains the index on n training vectors (kinds that need no training, such as "Flat", accept the
 * call and do nothing but validate). x: n x dim floats, finite, read during the call.
 * IVF indexes: n >= nlist (and n >= 256 for PQ); training uses a seeded sample (at most 256 x nlist
 * vectors for the k-means, 65 536 for the PQ codebooks and the OPQ rotation) and is deterministic;
 * on a CUDA context the k-means runs on the GPU. Training a trained index again replaces its model
 * while it holds no vectors; with vectors in it, QV_ERR_INVALID_ARGUMENT (remove them first).
 * Needs exclusive access. Returns QV_OK, QV_ERR_INVALID_ARGUMENT (NULL x with n > 0, n < 0, NaN or
 * Inf in x, too few vectors), QV_ERR_CANCELLED (qv_index_set_progress), QV_ERR_OUT_OF_*_MEMORY. */
QV_API qv_status_t qv_index_train(qv_index_t *index, int64_t n, const float *x);

/* Called between pieces of a long call with the fraction done (0 .. 1, non-decreasing), on the
 * thread that made the call. Return 0 to go on, nonzero to cancel: the call then returns
 * QV_ERR_CANCELLED. It must not call quiver on the same context. */
typedef int (*qv_progress_fn_t)(double fraction, void *user_data);

/* The progress of long work on the index: qv_index_train, qv_index_add and qv_index_add_strings call
 * fn (as qv_progress_fn_t says) with 0 before any change, then as the work goes where it is long (a
 * graph index's build; an IVF index's training, after each k-means iteration), and with 1 once done
 * (its answer then no longer matters). A cancel leaves the index as
 * it was: QV_ERR_CANCELLED, nothing added or trained. fn NULL removes the callback (the default:
 * none). The index holds fn and user_data until replaced or freed. Multi-device indexes ("Sharded",
 * "Replicated", "Routed") report 0 and 1 only. Needs exclusive access. Returns QV_OK or
 * QV_ERR_INVALID_ARGUMENT (NULL index). */
QV_API qv_status_t qv_index_set_progress(qv_index_t *index, qv_progress_fn_t fn, void *user_data);

/* Adds n vectors.
 *
 * x    n x dim floats, finite (and non-zero for cosine); read during the call.
 * ids  NULL to number the vectors consecutively after the largest id in the index (0, 1, ... for an
 *      empty index), else n ids >= 0, unique within the call and not already in the index.
 * Needs exclusive access. Returns QV_OK, QV_ERR_INVALID_ARGUMENT (names the offending row or id),
 * QV_ERR_NOT_TRAINED, QV_ERR_CANCELLED (qv_index_set_progress), QV_ERR_OUT_OF_*_MEMORY. On error
 * nothing is added. */
QV_API qv_status_t qv_index_add(qv_index_t *index, int64_t n, const float *x, const int64_t *ids);

/* Searches the k nearest neighbours of each of nq queries.
 *
 * index      borrowed, not modified; concurrent searches on one index are safe.
 * queries    nq x dim floats, finite; read during the call only.
 * k          1 .. QV_MAX_K. k may exceed the number of vectors in the index.
 * params     NULL for defaults, else initialised by qv_search_params_init.
 * distances  nq x k, written by the call, closest first (see qv_metric_t for units and order);
 * ids        nq x k, written by the call; where fewer than k vectors qualify the row is padded with
 *            id -1 and distance +INFINITY (L2) or -INFINITY (inner product, cosine).
 * IVF indexes search the params->nprobe nearest lists: IVF-Flat distances are exact float32, IVF-PQ
 * distances are to the encoded vectors, or exact after ",Refine"'s re-ranking.
 * Returns QV_OK, QV_ERR_INVALID_ARGUMENT (also nprobe 0 or > nlist), QV_ERR_NOT_TRAINED,
 * QV_ERR_OUT_OF_*_MEMORY. */
QV_API qv_status_t qv_index_search(const qv_index_t *index, int64_t nq, const float *queries,
                                   uint32_t k, const qv_search_params_t *params, float *distances,
                                   int64_t *ids);

/* Range search results in CSR form: the hits of query i are entries lims[i] .. lims[i+1]-1 of ids and
 * distances, closest first. lims has nq + 1 entries, lims[0] = 0, lims[nq] = total hits. */
typedef struct qv_range_result qv_range_result_t;

/* Finds, for each of nq queries, every vector within radius:
 * L2: squared distance <= radius (a negative radius finds nothing); inner product and cosine:
 * similarity >= radius; L1, L-infinity: distance <= radius, a negative radius is
 * QV_ERR_INVALID_ARGUMENT. params->max_range_results caps the hits of one query.
 * queries: nq x dim floats, finite. params: NULL or initialised (filter applies; nprobe for IVF).
 * IVF indexes return the hits among the nprobe nearest lists: exact float32 distances for IVF-Flat
 * and for IVF-PQ with ",Refine" (all entries of those lists checked against their raw vectors), PQ
 * distances otherwise. Graph indexes return every row within the radius (an exact scan, not a walk).
 * On a CUDA context range search runs on the GPU: "Flat", and graph indexes over their device copy
 * (not in the hashing mode, whose vectors stay on the host), exactly as "Flat" on the CPU; IVF kinds over the same nprobe lists (float32 sums in another order than the CPU's, so hits within
 * rounding of the radius may differ; IVF-PQ distances to the decoded vectors agree to about 1e-4).
 * *out receives a new result owned by the caller (qv_range_result_free).
 * Concurrent calls on one index are safe. Returns QV_OK, QV_ERR_INVALID_ARGUMENT (also a NaN radius),
 * QV_ERR_NOT_TRAINED, QV_ERR_TOO_MANY_RESULTS, QV_ERR_OUT_OF_*_MEMORY. */
QV_API qv_status_t qv_index_range_search(const qv_index_t *index, int64_t nq,
                                         const float *queries, float radius,
                                         const qv_search_params_t *params,
                                         qv_range_result_t **out);

/* Views a range result: *nq (may be NULL) receives the query count; *lims, *ids, *distances (each may
 * be NULL) receive pointers into the result, valid until qv_range_result_free. Host memory. */
QV_API qv_status_t qv_range_result_get(const qv_range_result_t *result, int64_t *nq,
                                       const int64_t **lims, const int64_t **ids,
                                       const float **distances);

/* Releases a range result. NULL is a no-op. The library keeps large freed id and distance buffers
 * (1 MiB and more each, up to 512 MiB in all, oldest given back first) for the results that follow:
 * memory already mapped is written several times faster than fresh pages. */
QV_API void qv_range_result_free(qv_range_result_t *result);

/* ---------------------------------------------------------------------------------------------- */
/* Byte strings: the objects of QV_METRIC_EDIT indexes                                            */
/*
 * n strings are passed as offsets + bytes: string i is bytes[offsets[i]] .. bytes[offsets[i+1] - 1].
 * offsets has n + 1 entries, offsets[0] >= 0, non-decreasing; strings may be empty, hold any byte
 * value (no terminator, no encoding assumed) and be up to 1 MiB long. Host memory, read during the
 * call only. Invalid offsets are QV_ERR_INVALID_ARGUMENT naming the string. Calls with vectors on a
 * string index, or with strings on a vector index, are QV_ERR_UNSUPPORTED. Distances are edit
 * distances as floats (0, 1, 2, ...). Otherwise each function behaves as its vector counterpart. */

/* Adds n strings with optional ids, as qv_index_add. Needs exclusive access. */
QV_API qv_status_t qv_index_add_strings(qv_index_t *index, int64_t n, const int64_t *offsets,
                                        const uint8_t *bytes, const int64_t *ids);

/* The k nearest strings of each of nq query strings, as qv_index_search (distances and ids nq x k,
 * host or device memory; padding id -1, distance +INFINITY). Concurrent searches are safe. */
QV_API qv_status_t qv_index_search_strings(const qv_index_t *index, int64_t nq,
                                           const int64_t *offsets, const uint8_t *bytes,
                                           uint32_t k, const qv_search_params_t *params,
                                           float *distances, int64_t *ids);

/* Every string within edit distance radius (<=) of each query, as qv_index_range_search. */
QV_API qv_status_t qv_index_range_search_strings(const qv_index_t *index, int64_t nq,
                                                 const int64_t *offsets, const uint8_t *bytes,
                                                 float radius, const qv_search_params_t *params,
                                                 qv_range_result_t **out);

/* Removes the vectors with the given ids. Ids not in the index are ignored (and not counted).
 * ids: n ids, read during the call. removed: may be NULL, else receives the number removed.
 * Needs exclusive access. Returns QV_OK, QV_ERR_INVALID_ARGUMENT. */
QV_API qv_status_t qv_index_remove(qv_index_t *index, int64_t n, const int64_t *ids,
                                   int64_t *removed);

/* What qv_index_info reports. (The tag differs from the function's name so C++ -Wshadow is quiet.) */
typedef struct qv_index_info_s {
  uint32_t struct_size;    /* set by the caller: sizeof(qv_index_info_t) */
  int64_t dim;
  qv_metric_t metric;
  int32_t is_trained;      /* 1 when searches and adds are possible */
  int64_t count;           /* vectors in the index */
  qv_device_kind_t device; /* QV_DEVICE_CPU or QV_DEVICE_CUDA */
  int32_t device_id;       /* CUDA ordinal, -1 on the CPU */
  int64_t host_bytes;      /* host memory held by the index (lists, ids, model, tables) */
  int64_t device_bytes;    /* GPU memory held by the index (its lists and model on a CUDA context;
                              a "Flat" index searched 1 to 4 queries at a time adds a 16-bit copy
                              of its vectors, half their bytes, made by the first such search) */
  char descriptor[128];    /* the descriptor the index was created with, NUL-terminated (cut to
                              127 bytes if longer) */
} qv_index_info_t;

/* Zeroes *info and sets its struct_size. size: sizeof(qv_index_info_t) (the macro qv_index_info_init
 * passes it). Returns QV_ERR_INVALID_ARGUMENT if info is NULL or size is no version's size. */
QV_API qv_status_t qv_index_info_init_sized(qv_index_info_t *info, size_t size);
QV_API qv_status_t qv_index_info_init(qv_index_info_t *info);
#define qv_index_info_init(info) qv_index_info_init_sized((info), sizeof(qv_index_info_t))

/* Fills *info, which the caller prepared with qv_index_info_init (an older caller's smaller
 * struct_size is honoured: only that many bytes are written). Thread-safe with searches.
 * Returns QV_OK, or QV_ERR_INVALID_ARGUMENT (NULL index or info, struct_size too small). */
QV_API qv_status_t qv_index_info(const qv_index_t *index, qv_index_info_t *info);

/* Saves the index to path. The file is written to a temporary name beside path and renamed over
 * path only when complete, so a crash never leaves a half-written index at path.
 * Thread-safe with searches. Returns QV_OK, QV_ERR_INVALID_ARGUMENT, QV_ERR_IO. */
QV_API qv_status_t qv_index_save(const qv_index_t *index, const char *path);

/* Loads an index saved by qv_index_save (or qv_index_save_buffer) onto the context's device.
 * *out receives a new index owned by the caller. Returns QV_OK, QV_ERR_INVALID_ARGUMENT, QV_ERR_IO,
 * QV_ERR_CORRUPT_DATA (truncated, damaged, bad checksum, not a quiver file), QV_ERR_VERSION_MISMATCH,
 * QV_ERR_OUT_OF_*_MEMORY. Never reads outside the data. */
QV_API qv_status_t qv_index_load(qv_context_t *context, const char *path, qv_index_t **out);

/* Serializes the index into a new buffer: *data receives memory owned by the caller, released with
 * qv_buffer_free; *size its length in bytes. Same format as qv_index_save. */
QV_API qv_status_t qv_index_save_buffer(const qv_index_t *index, void **data, size_t *size);

/* Loads an index from size bytes at data (host memory, read during the call); *out receives a new
 * index owned by the caller. Returns the same codes as qv_index_load (QV_ERR_IO aside). */
QV_API qv_status_t qv_index_load_buffer(qv_context_t *context, const void *data, size_t size,
                                        qv_index_t **out);

/* Releases a buffer returned by qv_index_save_buffer. NULL is a no-op. */
QV_API void qv_buffer_free(void *data);

/* ---------------------------------------------------------------------------------------------- */
/* Operations without an index                                                                     */

/* Exact k-nearest-neighbour search of nq queries among n base vectors, without building an index.
 * base: n x dim, queries: nq x dim, finite; ids written are row numbers of base (0 .. n-1).
 * params: NULL or initialised (the filter applies to row numbers). Outputs as qv_index_search.
 * Returns QV_OK, QV_ERR_INVALID_ARGUMENT, QV_ERR_OUT_OF_*_MEMORY. Thread-safe. */
QV_API qv_status_t qv_knn(qv_context_t *context, qv_metric_t metric, int64_t dim, int64_t n,
                          const float *base, int64_t nq, const float *queries, uint32_t k,
                          const qv_search_params_t *params, float *distances, int64_t *ids);

typedef struct qv_kmeans_params {
  uint32_t struct_size;           /* sizeof(qv_kmeans_params_t), set by qv_kmeans_params_init */
  uint32_t iterations;            /* Lloyd iterations; default 20 */
  uint64_t seed;                  /* initialisation and sub-sampling seed; default 1234 */
  int64_t max_points_per_centroid; /* sub-sample to k * this many points; 0 = use all; default 256 */
  qv_progress_fn_t progress;      /* NULL (default) or called after each iteration, as described at
                                     qv_progress_fn_t */
  void *user_data;                /* passed to progress; default NULL */
} qv_kmeans_params_t;

/* Fills *params with defaults. size: sizeof(qv_kmeans_params_t), which the macro qv_kmeans_params_init
 * passes. Returns QV_ERR_INVALID_ARGUMENT if params is NULL or size is no version's size. */
QV_API qv_status_t qv_kmeans_params_init_sized(qv_kmeans_params_t *params, size_t size);
QV_API qv_status_t qv_kmeans_params_init(qv_kmeans_params_t *params);
#define qv_kmeans_params_init(params) qv_kmeans_params_init_sized((params), sizeof(qv_kmeans_params_t))

/* k-means clustering (squared L2) of n vectors into k centroids.
 * x: n x dim finite floats, read during the call; n >= k >= 1.
 * centroids: k x dim, written. assignments: NULL or n entries, the nearest centroid of each vector.
 * objective: NULL or receives the final sum of squared distances to the nearest centroid.
 * Deterministic for a given seed and device, whatever the thread count. Empty clusters are re-seeded
 * by splitting large ones. Returns QV_OK, QV_ERR_INVALID_ARGUMENT, QV_ERR_CANCELLED (params->progress
 * asked to stop; centroids then partly written), QV_ERR_OUT_OF_*_MEMORY. */
QV_API qv_status_t qv_kmeans(qv_context_t *context, int64_t dim, int64_t n, const float *x,
                             uint32_t k, const qv_kmeans_params_t *params, float *centroids,
                             int64_t *assignments, double *objective);

/* ---------------------------------------------------------------------------------------------- */
/* k-nearest-neighbour graphs                                                                      */

typedef int32_t qv_knn_graph_method_t;
enum qv_knn_graph_method_code {
  QV_KNN_GRAPH_AUTO = 0,       /* exact for small data sets (and for target_recall 1), else approximate */
  QV_KNN_GRAPH_EXACT = 1,      /* tiled brute force: on the GPU on a CUDA context, else the CPU */
  QV_KNN_GRAPH_APPROXIMATE = 2 /* inverted-file candidates refined by NN-descent, on the CPU threads */
};

typedef struct qv_knn_graph_params {
  uint32_t struct_size;         /* sizeof(qv_knn_graph_params_t), set by qv_knn_graph_params_init */
  qv_knn_graph_method_t method; /* QV_KNN_GRAPH_*; default QV_KNN_GRAPH_AUTO */
  double target_recall;         /* approximate method: the recall@k aimed at, in (0, 1]; default 0.95.
                                   Higher costs more time. Not a guarantee: measure with recall_sample */
  uint64_t seed;                /* k-means and sampling seed; default 1234 */
  int64_t recall_sample;        /* approximate method: points whose exact neighbours are computed to
                                   estimate the graph's recall (*recall); 0 = no estimate; default 0 */
  qv_progress_fn_t progress;    /* NULL (default) or called as described at qv_progress_fn_t */
  void *user_data;              /* passed to progress; default NULL */
} qv_knn_graph_params_t;

/* Fills *params with defaults. size: sizeof(qv_knn_graph_params_t), which the macro qv_knn_graph_params_init
 * passes. Returns QV_ERR_INVALID_ARGUMENT if params is NULL or size is no version's size. */
QV_API qv_status_t qv_knn_graph_params_init_sized(qv_knn_graph_params_t *params, size_t size);
QV_API qv_status_t qv_knn_graph_params_init(qv_knn_graph_params_t *params);
#define qv_knn_graph_params_init(params) qv_knn_graph_params_init_sized((params), sizeof(qv_knn_graph_params_t))

/* The k-nearest-neighbour graph of n vectors: for every vector, its k nearest other vectors
 * (itself excluded, even where duplicates of it exist), closest first, ties to the smaller row.
 *
 * metric     QV_METRIC_*; distances are in its units (squared L2, or similarities, larger closer).
 * x          n x dim finite floats (non-zero rows for cosine), host or, on a CUDA context, device
 *            memory; read during the call only. 2 <= n < 2^31.
 * k          1 .. min(n - 1, QV_MAX_K - 1).
 * params     NULL for defaults, else initialised by qv_knn_graph_params_init.
 * distances  NULL, or n x k floats, written.
 * ids        n x k row numbers of x, written.
 * recall     NULL, or receives the recall@k of the graph: 1 for the exact method; for the approximate
 *            one, the estimate measured on params->recall_sample points (a neighbour tied with the
 *            exact k-th distance counts as found), or -1 without a sample.
 * The approximate method is deterministic for a seed, whatever the thread count. With
 * QV_METRIC_INNER_PRODUCT it may fall short of target_recall (inner products are no distance, and a
 * neighbour's neighbours are weaker candidates): measure with recall_sample. Blocks until done.
 * Thread-safe. Returns QV_OK, QV_ERR_INVALID_ARGUMENT (names the argument: k >= n, k = 0, n < 2,
 * NaN or Inf in x, a NULL pointer, a bad method or target_recall), QV_ERR_CANCELLED (the progress
 * callback asked to stop; the outputs are then partly written), QV_ERR_OUT_OF_*_MEMORY. */
QV_API qv_status_t qv_knn_graph(qv_context_t *context, qv_metric_t metric, int64_t dim, int64_t n,
                                const float *x, uint32_t k, const qv_knn_graph_params_t *params,
                                float *distances, int64_t *ids, double *recall);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* QUIVER_QUIVER_H */
