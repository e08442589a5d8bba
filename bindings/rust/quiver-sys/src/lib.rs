//! Raw declarations of the quiver C API, written by hand to mirror `include/quiver/quiver.h`.
//!
//! Every item here has the name, type and layout it has in the header; read the header's comment of
//! a function for its contract (ownership, thread safety, errors). Use the `quiver` crate for a safe
//! API. The build script links `libquiver.a` (from `QUIVER_LIB_DIR`, else built with cmake) and every
//! library it needs; `scripts/check_parity.sh` checks that each `qv_` function of the header is
//! declared here.
//!
//! With the feature `mpi`, the declarations of `include/quiver/quiver_mpi.h` (the distributed index
//! of `libquiver_mpi`, `qv_dist_*`) are here too, and the build script links `libquiver_mpi.so`,
//! `libmpi` and the shared `libquiver.so` instead of `libquiver.a`.
//!
//! The version constants (`QV_VERSION_*`, `QV_ABI_VERSION`) come from the generated
//! `quiver/version.h` of the library that was linked; the build fails if its ABI version is not the
//! one these declarations were written for.
#![no_std]
#![warn(missing_docs)]
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_void};
use core::marker::{PhantomData, PhantomPinned};

include!(concat!(env!("OUT_DIR"), "/version.rs"));

#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "mpi")]
pub use mpi::*;

// ------------------------------------------------------------------------------------------------
// Status codes and errors

/// `qv_status_t`: `QV_OK` or one of the `QV_ERR_*` codes.
pub type qv_status_t = i32;

/// Success.
pub const QV_OK: qv_status_t = 0;
/// A NULL pointer, a size out of range, NaN/Inf data, bad ids...
pub const QV_ERR_INVALID_ARGUMENT: qv_status_t = 1;
/// A host allocation failed.
pub const QV_ERR_OUT_OF_HOST_MEMORY: qv_status_t = 2;
/// A GPU allocation failed; the index is intact.
pub const QV_ERR_OUT_OF_DEVICE_MEMORY: qv_status_t = 3;
/// The CUDA runtime or cuBLAS reported an error.
pub const QV_ERR_CUDA: qv_status_t = 4;
/// A CUDA device was asked for and none is usable.
pub const QV_ERR_NO_DEVICE: qv_status_t = 5;
/// The index needs `qv_index_train` before this call.
pub const QV_ERR_NOT_TRAINED: qv_status_t = 6;
/// A valid request this index kind, metric or build cannot do.
pub const QV_ERR_UNSUPPORTED: qv_status_t = 7;
/// A file could not be opened, read, written or renamed.
pub const QV_ERR_IO: qv_status_t = 8;
/// A saved index is truncated, damaged or not a quiver index.
pub const QV_ERR_CORRUPT_DATA: qv_status_t = 9;
/// A saved index was written in a format version this library does not read.
pub const QV_ERR_VERSION_MISMATCH: qv_status_t = 10;
/// A bug in quiver.
pub const QV_ERR_INTERNAL: qv_status_t = 11;
/// A progress callback asked the call to stop.
pub const QV_ERR_CANCELLED: qv_status_t = 12;
/// A range search query found more hits than `qv_search_params_t::max_range_results` allows.
pub const QV_ERR_TOO_MANY_RESULTS: qv_status_t = 13;
/// A distributed call (`quiver_mpi.h`) failed on another process, or it did not answer in time.
pub const QV_ERR_REMOTE: qv_status_t = 14;

// ------------------------------------------------------------------------------------------------
// Enumerations

/// `qv_compute_mode_t`: one of the `QV_COMPUTE_*` codes.
pub type qv_compute_mode_t = i32;
/// float32 GEMM (default).
pub const QV_COMPUTE_FP32: qv_compute_mode_t = 0;
/// TF32 tensor cores on the float32 data (CUDA), then exact re-ranking.
pub const QV_COMPUTE_TF32: qv_compute_mode_t = 1;
/// float16 copies of the vectors (CUDA), then exact re-ranking.
pub const QV_COMPUTE_FP16: qv_compute_mode_t = 2;
/// bfloat16 copies of the vectors (CUDA), then exact re-ranking.
pub const QV_COMPUTE_BF16: qv_compute_mode_t = 3;

/// `qv_graph_visited_t`: one of the `QV_GRAPH_VISITED_*` codes, the visited set of a graph
/// index's walk on a CUDA device.
pub type qv_graph_visited_t = i32;
/// The library's choice, today `QV_GRAPH_VISITED_BLOOM` (default).
pub const QV_GRAPH_VISITED_DEFAULT: qv_graph_visited_t = 0;
/// An open-addressing table of the nodes: exact, with deletion.
pub const QV_GRAPH_VISITED_HASH_TABLE: qv_graph_visited_t = 1;
/// A Bloom filter, 3 bits a node, rebuilt from the queue when full.
pub const QV_GRAPH_VISITED_BLOOM: qv_graph_visited_t = 2;
/// A Cuckoo filter of 16-bit fingerprints, with deletion.
pub const QV_GRAPH_VISITED_CUCKOO: qv_graph_visited_t = 3;
/// Largest `qv_search_params_t::graph_probes`.
pub const QV_GRAPH_MAX_PROBES: u32 = 8;
/// Largest `qv_search_params_t::graph_warps_per_query`.
pub const QV_GRAPH_MAX_WARPS_PER_QUERY: u32 = 16;

/// `qv_metric_t`: one of the `QV_METRIC_*` codes.
pub type qv_metric_t = i32;
/// Squared Euclidean distance; smaller is closer. Distances and radii are squared.
pub const QV_METRIC_L2: qv_metric_t = 0;
/// Inner product; larger is closer.
pub const QV_METRIC_INNER_PRODUCT: qv_metric_t = 1;
/// Cosine similarity in [-1, 1]; larger is closer. Zero vectors are rejected.
pub const QV_METRIC_COSINE: qv_metric_t = 2;
/// L1 (Manhattan) distance; smaller is closer. "Flat", "LC" and "SSS" indexes.
pub const QV_METRIC_L1: qv_metric_t = 3;
/// L-infinity (Chebyshev) distance; smaller is closer. "Flat", "LC" and "SSS" indexes.
pub const QV_METRIC_LINF: qv_metric_t = 4;
/// Edit (Levenshtein) distance between byte strings; smaller is closer. Such an index holds strings
/// (dim 0): `qv_index_add_strings` and the `_strings` searches. "Flat", "LC" and "SSS" indexes.
pub const QV_METRIC_EDIT: qv_metric_t = 5;

/// `qv_device_kind_t`: one of the `QV_DEVICE_*` codes.
pub type qv_device_kind_t = i32;
/// A CUDA device if one is usable, else the CPU.
pub const QV_DEVICE_AUTO: qv_device_kind_t = 0;
/// The CPU.
pub const QV_DEVICE_CPU: qv_device_kind_t = 1;
/// A CUDA device.
pub const QV_DEVICE_CUDA: qv_device_kind_t = 2;

/// Most devices one context holds: the length of `qv_context_options_t::device_ids`.
pub const QV_MAX_DEVICES: i32 = 64;
/// `qv_context_options_t::device_count` that asks for every visible CUDA device.
pub const QV_ALL_DEVICES: i32 = -1;

/// Largest k accepted by the k-nearest-neighbour searches.
pub const QV_MAX_K: u32 = 2048;
/// `QV_NPROBE_DEFAULT`: `qv_search_params_t::nprobe` that lets an inverted-file index choose.
pub const QV_NPROBE_DEFAULT: u32 = 0xFFFF_FFFF;

// ------------------------------------------------------------------------------------------------
// Opaque handles (incomplete structs in C: never constructed, only pointed to)

/// `struct qv_context`: where work runs. Opaque.
#[repr(C)]
pub struct qv_context {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}
/// `qv_context_t`.
pub type qv_context_t = qv_context;

/// `struct qv_index`: an index. Opaque.
#[repr(C)]
pub struct qv_index {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}
/// `qv_index_t`.
pub type qv_index_t = qv_index;

/// `struct qv_range_result`: range search results in CSR form. Opaque.
#[repr(C)]
pub struct qv_range_result {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}
/// `qv_range_result_t`.
pub type qv_range_result_t = qv_range_result;

// ------------------------------------------------------------------------------------------------
// Parameter and information structs (struct_size first; fill with the matching _init)

/// `qv_context_options_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qv_context_options_t {
    /// `sizeof(qv_context_options_t)`, set by `qv_context_options_init`.
    pub struct_size: u32,
    /// Default `QV_DEVICE_AUTO`.
    pub device: qv_device_kind_t,
    /// CUDA device ordinal for `QV_DEVICE_CUDA` / `AUTO`; default 0.
    pub device_id: i32,
    /// Threads of the context's own pool; 0 (default) = one per core.
    pub cpu_threads: i32,
    /// Several CUDA devices (`QV_DEVICE_CUDA` / `AUTO`): the first `device_count` ordinals of
    /// `device_ids`, or `QV_ALL_DEVICES` for every visible device; 0 (default): `device_id` alone.
    /// An ordinal may repeat (logical devices sharing one GPU). `AUTO` without a GPU falls back to
    /// the CPU.
    pub device_count: i32,
    /// The CUDA ordinals read when `device_count` is 1 ..= `QV_MAX_DEVICES`.
    pub device_ids: [i32; QV_MAX_DEVICES as usize],
}

/// `qv_search_params_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qv_search_params_t {
    /// `sizeof(qv_search_params_t)`, set by `qv_search_params_init`.
    pub struct_size: u32,
    /// Allowed ids: bit (id % 8) of byte filter[id / 8]; NULL allows every id. Host memory.
    pub filter: *const u8,
    /// Ids at or beyond this are excluded when `filter` is not NULL.
    pub filter_bits: i64,
    /// Inverted-file indexes: lists visited, 1 ..= nlist; default `QV_NPROBE_DEFAULT` (the
    /// index's choice, min(nlist, 8)); 0 or more than nlist is `QV_ERR_INVALID_ARGUMENT`.
    pub nprobe: u32,
    /// Graph indexes: candidate pool size; 0 = the index's default.
    pub search_width: u32,
    /// Search arithmetic on a CUDA device (exact GEMM, IVF-PQ table precision); default
    /// `QV_COMPUTE_FP32`.
    pub compute_mode: qv_compute_mode_t,
    /// IVF-PQ ",Refine" indexes: refine_factor x k candidates re-ranked exactly; 0 (default) = 8.
    pub refine_factor: u32,
    /// Range searches: the most hits one query may have, more fails the call with
    /// `QV_ERR_TOO_MANY_RESULTS`; 0 (default) = no limit, < 0 is `QV_ERR_INVALID_ARGUMENT`.
    pub max_range_results: i64,
    /// Graph indexes on a CUDA device: the walk's visited set, a `QV_GRAPH_VISITED_*` code;
    /// default `QV_GRAPH_VISITED_DEFAULT`. Other values are `QV_ERR_INVALID_ARGUMENT`.
    pub graph_visited: qv_graph_visited_t,
    /// Graph indexes on a CUDA device: nodes expanded per iteration, 1 ..= `QV_GRAPH_MAX_PROBES`;
    /// 0 (default) = 1. More is `QV_ERR_INVALID_ARGUMENT`, as is probes x R above 256 on a device.
    pub graph_probes: u32,
    /// Graph indexes on a CUDA device: warps sharing one query, 1 ..=
    /// `QV_GRAPH_MAX_WARPS_PER_QUERY`; 0 (default) = automatic. More is `QV_ERR_INVALID_ARGUMENT`.
    pub graph_warps_per_query: u32,
    /// Graph indexes on a CUDA device: queries one warp searches at once, 1, 2 or 4; 0 (default)
    /// = 1. Other values, and 2 or 4 with `graph_warps_per_query` above 1, are
    /// `QV_ERR_INVALID_ARGUMENT`.
    pub graph_queries_per_warp: u32,
}

/// `qv_index_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qv_index_info_t {
    /// Set by the caller: `sizeof(qv_index_info_t)` (`qv_index_info_init` does it).
    pub struct_size: u32,
    /// Vector dimension.
    pub dim: i64,
    /// The metric.
    pub metric: qv_metric_t,
    /// 1 when searches and adds are possible.
    pub is_trained: i32,
    /// Vectors in the index.
    pub count: i64,
    /// `QV_DEVICE_CPU` or `QV_DEVICE_CUDA`.
    pub device: qv_device_kind_t,
    /// CUDA ordinal, -1 on the CPU.
    pub device_id: i32,
    /// Host memory held by the index.
    pub host_bytes: i64,
    /// GPU memory held by the index.
    pub device_bytes: i64,
    /// The descriptor the index was created with, NUL-terminated.
    pub descriptor: [c_char; 128],
}

/// `qv_kmeans_params_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qv_kmeans_params_t {
    /// `sizeof(qv_kmeans_params_t)`, set by `qv_kmeans_params_init`.
    pub struct_size: u32,
    /// Lloyd iterations; default 20.
    pub iterations: u32,
    /// Initialisation and sub-sampling seed; default 1234.
    pub seed: u64,
    /// Sub-sample to k * this many points; 0 = use all; default 256.
    pub max_points_per_centroid: i64,
    /// NULL (default) or called after each iteration; see `qv_progress_fn_t`.
    pub progress: qv_progress_fn_t,
    /// Passed to `progress`; default NULL.
    pub user_data: *mut c_void,
}

/// `qv_knn_graph_method_t`: one of the `QV_KNN_GRAPH_*` codes.
pub type qv_knn_graph_method_t = i32;
/// Exact for small data sets (and for target_recall 1), else approximate.
pub const QV_KNN_GRAPH_AUTO: qv_knn_graph_method_t = 0;
/// Tiled brute force: on the GPU on a CUDA context, else the CPU.
pub const QV_KNN_GRAPH_EXACT: qv_knn_graph_method_t = 1;
/// Inverted-file candidates refined by NN-descent, on the CPU threads.
pub const QV_KNN_GRAPH_APPROXIMATE: qv_knn_graph_method_t = 2;

/// `qv_progress_fn_t`: called with the fraction done on the calling thread; nonzero cancels.
pub type qv_progress_fn_t =
    Option<unsafe extern "C" fn(fraction: f64, user_data: *mut c_void) -> c_int>;

/// `qv_knn_graph_params_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qv_knn_graph_params_t {
    /// `sizeof(qv_knn_graph_params_t)`, set by `qv_knn_graph_params_init`.
    pub struct_size: u32,
    /// `QV_KNN_GRAPH_*`; default `QV_KNN_GRAPH_AUTO`.
    pub method: qv_knn_graph_method_t,
    /// Approximate method: the recall@k aimed at, in (0, 1]; default 0.95.
    pub target_recall: f64,
    /// k-means and sampling seed; default 1234.
    pub seed: u64,
    /// Approximate method: points sampled to estimate the recall; 0 = no estimate.
    pub recall_sample: i64,
    /// NULL (default) or the progress callback.
    pub progress: qv_progress_fn_t,
    /// Passed to `progress`.
    pub user_data: *mut c_void,
}

// ------------------------------------------------------------------------------------------------
// Functions, in the header's order

extern "C" {
    // Status codes and errors
    /// The name of a status code, e.g. "QV_ERR_INVALID_ARGUMENT"; static, never NULL.
    pub fn qv_status_string(status: qv_status_t) -> *const c_char;
    /// The message of the last failed quiver call on this thread, "" after a success; never NULL, valid until the next quiver call on this thread.
    pub fn qv_last_error_message() -> *const c_char;

    // Versions
    /// `QV_VERSION_NUMBER` of the library actually linked.
    pub fn qv_version() -> u32;
    /// "MAJOR.MINOR.PATCH" of the library actually linked; static.
    pub fn qv_version_string() -> *const c_char;
    /// `QV_ABI_VERSION` of the library actually linked.
    pub fn qv_abi_version() -> u32;

    // Contexts
    /// Fills `*options` with defaults. `size`: `size_of::<qv_context_options_t>()`.
    pub fn qv_context_options_init_sized(
        options: *mut qv_context_options_t,
        size: usize,
    ) -> qv_status_t;
    /// For programs built before `qv_context_options_init_sized`: fills the struct as it was then, never
    /// more; call `qv_context_options_init_sized`.
    pub fn qv_context_options_init(options: *mut qv_context_options_t) -> qv_status_t;
    /// Creates a context (`options` NULL for defaults), released with `qv_context_free`. Thread-safe.
    pub fn qv_context_create(
        options: *const qv_context_options_t,
        out: *mut *mut qv_context_t,
    ) -> qv_status_t;
    /// Releases the caller's reference to a context (its indexes keep it alive); no call may be
    /// running on the context itself. NULL is a no-op.
    pub fn qv_context_free(context: *mut qv_context_t);
    /// The device a context resolved to and its CUDA ordinal (-1 on the CPU); either output may be NULL.
    pub fn qv_context_device(
        context: *const qv_context_t,
        kind: *mut qv_device_kind_t,
        device_id: *mut i32,
    ) -> qv_status_t;
    /// The CUDA ordinals of a context's devices, in order: `*count` receives their number (0 on the
    /// CPU), `device_ids` the first min(capacity, *count) (NULL allowed when capacity is 0).
    pub fn qv_context_devices(
        context: *const qv_context_t,
        device_ids: *mut i32,
        capacity: i32,
        count: *mut i32,
    ) -> qv_status_t;
    /// Number of usable CUDA devices (0 on a build without CUDA or a machine without a GPU).
    pub fn qv_cuda_device_count(count: *mut i32) -> qv_status_t;

    // Search parameters
    /// Fills `*params` with defaults. `size`: `size_of::<qv_search_params_t>()`.
    pub fn qv_search_params_init_sized(params: *mut qv_search_params_t, size: usize)
        -> qv_status_t;
    /// For programs built before `qv_search_params_init_sized`: fills the struct as it was then, never
    /// more; call `qv_search_params_init_sized`.
    pub fn qv_search_params_init(params: *mut qv_search_params_t) -> qv_status_t;

    // Indexes
    /// Creates an empty index from a descriptor such as "Flat"; the index keeps the context alive.
    /// Thread-safe.
    pub fn qv_index_create(
        context: *mut qv_context_t,
        descriptor: *const c_char,
        dim: i64,
        metric: qv_metric_t,
        out: *mut *mut qv_index_t,
    ) -> qv_status_t;
    /// Releases an index; no other call may be running on it. NULL is a no-op.
    pub fn qv_index_free(index: *mut qv_index_t);
    /// Trains the index on `n x dim` vectors. Needs exclusive access.
    pub fn qv_index_train(index: *mut qv_index_t, n: i64, x: *const f32) -> qv_status_t;
    /// Sets (NULL: removes) the callback of the index's train and add calls, with its user data.
    /// Needs exclusive access.
    pub fn qv_index_set_progress(
        index: *mut qv_index_t,
        fn_: qv_progress_fn_t,
        user_data: *mut c_void,
    ) -> qv_status_t;
    /// Adds `n x dim` vectors with ids (NULL: consecutive). Needs exclusive access; on error nothing is added.
    pub fn qv_index_add(
        index: *mut qv_index_t,
        n: i64,
        x: *const f32,
        ids: *const i64,
    ) -> qv_status_t;
    /// Searches the k nearest neighbours of `nq` queries into `nq x k` outputs. Concurrent calls are safe.
    pub fn qv_index_search(
        index: *const qv_index_t,
        nq: i64,
        queries: *const f32,
        k: u32,
        params: *const qv_search_params_t,
        distances: *mut f32,
        ids: *mut i64,
    ) -> qv_status_t;
    /// Finds every vector within `radius` of each query into a new range result. Concurrent calls are safe.
    pub fn qv_index_range_search(
        index: *const qv_index_t,
        nq: i64,
        queries: *const f32,
        radius: f32,
        params: *const qv_search_params_t,
        out: *mut *mut qv_range_result_t,
    ) -> qv_status_t;
    /// Views a range result: query count and pointers to lims (nq + 1), ids and distances; each output may be NULL.
    pub fn qv_range_result_get(
        result: *const qv_range_result_t,
        nq: *mut i64,
        lims: *mut *const i64,
        ids: *mut *const i64,
        distances: *mut *const f32,
    ) -> qv_status_t;
    /// Releases a range result. NULL is a no-op.
    pub fn qv_range_result_free(result: *mut qv_range_result_t);

    // Byte strings (QV_METRIC_EDIT indexes): string i is bytes[offsets[i] .. offsets[i + 1]],
    // offsets has n + 1 non-decreasing entries from offsets[0] >= 0.
    /// Adds `n` strings with ids (NULL: consecutive), as `qv_index_add`. Needs exclusive access.
    pub fn qv_index_add_strings(
        index: *mut qv_index_t,
        n: i64,
        offsets: *const i64,
        bytes: *const u8,
        ids: *const i64,
    ) -> qv_status_t;
    /// The k nearest strings of `nq` query strings into `nq x k` outputs, as `qv_index_search`.
    /// Concurrent calls are safe.
    pub fn qv_index_search_strings(
        index: *const qv_index_t,
        nq: i64,
        offsets: *const i64,
        bytes: *const u8,
        k: u32,
        params: *const qv_search_params_t,
        distances: *mut f32,
        ids: *mut i64,
    ) -> qv_status_t;
    /// Every string within edit distance `radius` of each query string into a new range result,
    /// as `qv_index_range_search`. Concurrent calls are safe.
    pub fn qv_index_range_search_strings(
        index: *const qv_index_t,
        nq: i64,
        offsets: *const i64,
        bytes: *const u8,
        radius: f32,
        params: *const qv_search_params_t,
        out: *mut *mut qv_range_result_t,
    ) -> qv_status_t;
    /// Removes the vectors with the given ids; `removed` (may be NULL) receives the count. Needs exclusive access.
    pub fn qv_index_remove(
        index: *mut qv_index_t,
        n: i64,
        ids: *const i64,
        removed: *mut i64,
    ) -> qv_status_t;
    /// Fills `*info` with its `struct_size`, ready for `qv_index_info`. `size`: `size_of::<qv_index_info_t>()`.
    pub fn qv_index_info_init_sized(info: *mut qv_index_info_t, size: usize) -> qv_status_t;
    /// For programs built before `qv_index_info_init_sized`: fills the struct as it was then, never
    /// more; call `qv_index_info_init_sized`.
    pub fn qv_index_info_init(info: *mut qv_index_info_t) -> qv_status_t;
    /// Describes an index. Thread-safe with searches.
    pub fn qv_index_info(index: *const qv_index_t, info: *mut qv_index_info_t) -> qv_status_t;
    /// Saves the index to a file (written beside it, then renamed). Thread-safe with searches.
    pub fn qv_index_save(index: *const qv_index_t, path: *const c_char) -> qv_status_t;
    /// Loads an index saved by `qv_index_save` or `qv_index_save_buffer` onto the context's device.
    pub fn qv_index_load(
        context: *mut qv_context_t,
        path: *const c_char,
        out: *mut *mut qv_index_t,
    ) -> qv_status_t;
    /// Serializes the index into a new buffer released with `qv_buffer_free`.
    pub fn qv_index_save_buffer(
        index: *const qv_index_t,
        data: *mut *mut c_void,
        size: *mut usize,
    ) -> qv_status_t;
    /// Loads an index from `size` bytes of host memory.
    pub fn qv_index_load_buffer(
        context: *mut qv_context_t,
        data: *const c_void,
        size: usize,
        out: *mut *mut qv_index_t,
    ) -> qv_status_t;
    /// Releases a buffer from `qv_index_save_buffer`. NULL is a no-op.
    pub fn qv_buffer_free(data: *mut c_void);

    // Operations without an index
    /// Exact k-nearest-neighbour search of `nq` queries among `n` base vectors, without an index. Thread-safe.
    pub fn qv_knn(
        context: *mut qv_context_t,
        metric: qv_metric_t,
        dim: i64,
        n: i64,
        base: *const f32,
        nq: i64,
        queries: *const f32,
        k: u32,
        params: *const qv_search_params_t,
        distances: *mut f32,
        ids: *mut i64,
    ) -> qv_status_t;
    /// Fills `*params` with defaults. `size`: `size_of::<qv_kmeans_params_t>()`.
    pub fn qv_kmeans_params_init_sized(params: *mut qv_kmeans_params_t, size: usize)
        -> qv_status_t;
    /// For programs built before `qv_kmeans_params_init_sized`: fills the struct as it was then, never
    /// more; call `qv_kmeans_params_init_sized`.
    pub fn qv_kmeans_params_init(params: *mut qv_kmeans_params_t) -> qv_status_t;
    /// k-means (squared L2) of `n` vectors into `k` centroids; optional assignments and objective.
    pub fn qv_kmeans(
        context: *mut qv_context_t,
        dim: i64,
        n: i64,
        x: *const f32,
        k: u32,
        params: *const qv_kmeans_params_t,
        centroids: *mut f32,
        assignments: *mut i64,
        objective: *mut f64,
    ) -> qv_status_t;
    /// Fills `*params` with defaults. `size`: `size_of::<qv_knn_graph_params_t>()`.
    pub fn qv_knn_graph_params_init_sized(
        params: *mut qv_knn_graph_params_t,
        size: usize,
    ) -> qv_status_t;
    /// For programs built before `qv_knn_graph_params_init_sized`: fills the struct as it was then, never
    /// more; call `qv_knn_graph_params_init_sized`.
    pub fn qv_knn_graph_params_init(params: *mut qv_knn_graph_params_t) -> qv_status_t;
    /// The k-nearest-neighbour graph of `n` vectors: `n x k` ids (and optional distances) of
    /// every vector's nearest other vectors; optional recall estimate.
    pub fn qv_knn_graph(
        context: *mut qv_context_t,
        metric: qv_metric_t,
        dim: i64,
        n: i64,
        x: *const f32,
        k: u32,
        params: *const qv_knn_graph_params_t,
        distances: *mut f32,
        ids: *mut i64,
        recall: *mut f64,
    ) -> qv_status_t;
}
