//! Raw declarations of `include/quiver/quiver_mpi.h` (libquiver_mpi): one index spread over the
//! processes (ranks) of an MPI communicator. Feature `mpi`.
//!
//! Every call on a distributed index is collective: each rank of the communicator makes the same
//! call, in the same order; a failure on any rank fails the call on every rank (the others with
//! `QV_ERR_REMOTE`). The message of the last failed `qv_dist_*` call of a thread is
//! `qv_dist_last_error_message()`, not `qv_last_error_message()`. MPI collectives on one communicator
//! must not overlap: one thread at a time per process. Read the header's comments for the contracts.

use core::ffi::{c_char, c_void};
use core::marker::{PhantomData, PhantomPinned};

use crate::{qv_context_t, qv_metric_t, qv_range_result_t, qv_search_params_t, qv_status_t};

/// `struct qv_dist_index`: a distributed index. Opaque.
#[repr(C)]
pub struct qv_dist_index {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}
/// `qv_dist_index_t`.
pub type qv_dist_index_t = qv_dist_index;

/// `qv_dist_options_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct qv_dist_options_t {
    /// `sizeof(qv_dist_options_t)`, set by `qv_dist_options_init`.
    pub struct_size: u32,
    /// The rank that gives queries and receives results; default 0.
    pub root: i32,
    /// Longest wait for the other ranks in one collective step, in milliseconds (> 0); default 60000.
    pub timeout_ms: i32,
}

extern "C" {
    /// Fills `*options` with defaults. `size`: `size_of::<qv_dist_options_t>()`.
    pub fn qv_dist_options_init_sized(options: *mut qv_dist_options_t, size: usize) -> qv_status_t;
    /// For programs built before `qv_dist_options_init_sized`: fills the struct as it was then, never
    /// more; call `qv_dist_options_init_sized`.
    pub fn qv_dist_options_init(options: *mut qv_dist_options_t) -> qv_status_t;
    /// The message of this thread's last failed `qv_dist_*` call, "" after a success; never NULL.
    pub fn qv_dist_last_error_message() -> *const c_char;
    /// Initialises MPI if it is not (`MPI_THREAD_SERIALIZED`; a singleton run works without mpirun)
    /// and stores a pointer to `MPI_COMM_WORLD` (an `MPI_Comm *`) in `*comm`, valid until MPI is
    /// finalised.
    pub fn qv_dist_comm_world(comm: *mut *const c_void) -> qv_status_t;
    /// Finalises MPI if `qv_dist_comm_world` initialised it; otherwise does nothing. Call once, after
    /// every distributed index is freed.
    pub fn qv_dist_finalize() -> qv_status_t;
    /// Creates a distributed index (collective). `comm` points to an `MPI_Comm`, duplicated here;
    /// `context` is this rank's, kept alive by the index; `options` NULL for defaults.
    pub fn qv_dist_index_create(
        context: *mut qv_context_t,
        comm: *const c_void,
        descriptor: *const c_char,
        dim: i64,
        metric: qv_metric_t,
        options: *const qv_dist_options_t,
        out: *mut *mut qv_dist_index_t,
    ) -> qv_status_t;
    /// Frees a distributed index (collective). NULL is a no-op.
    pub fn qv_dist_index_free(index: *mut qv_dist_index_t);
    /// Trains on the union of the ranks' samples (`n >= 0` vectors each). Collective.
    pub fn qv_dist_index_train(index: *mut qv_dist_index_t, n: i64, x: *const f32) -> qv_status_t;
    /// Adds each rank's `n >= 0` vectors, routed to the ranks owning their ids (`ids` NULL on every
    /// rank: consecutive ids, rank 0's vectors first). Collective.
    pub fn qv_dist_index_add(
        index: *mut qv_dist_index_t,
        n: i64,
        x: *const f32,
        ids: *const i64,
    ) -> qv_status_t;
    /// k-NN search of the root's `nq` queries over every shard; outputs (`nq x k`, host memory)
    /// written on the root; other ranks' arguments are ignored (0 / NULL allowed). Collective.
    pub fn qv_dist_index_search(
        index: *const qv_dist_index_t,
        nq: i64,
        queries: *const f32,
        k: u32,
        params: *const qv_search_params_t,
        distances: *mut f32,
        ids: *mut i64,
    ) -> qv_status_t;
    /// Range search of the root's queries over every shard; `*out` is a new range result on the
    /// root, NULL elsewhere. Collective.
    pub fn qv_dist_index_range_search(
        index: *const qv_dist_index_t,
        nq: i64,
        queries: *const f32,
        radius: f32,
        params: *const qv_search_params_t,
        out: *mut *mut qv_range_result_t,
    ) -> qv_status_t;
    /// Removes the given ids wherever they are; `removed` (may be NULL) receives the number removed
    /// over all ranks. Collective.
    pub fn qv_dist_index_remove(
        index: *mut qv_dist_index_t,
        n: i64,
        ids: *const i64,
        removed: *mut i64,
    ) -> qv_status_t;
    /// This rank, the number of ranks, this rank's vector count and the total (any output may be
    /// NULL). Collective.
    pub fn qv_dist_index_info(
        index: *const qv_dist_index_t,
        rank: *mut i32,
        size: *mut i32,
        local_count: *mut i64,
        total_count: *mut i64,
    ) -> qv_status_t;
    /// Saves: rank r writes `<prefix>.<r>-of-<size>.qvi`, then rank 0 the manifest
    /// `<prefix>.manifest`. Collective.
    pub fn qv_dist_index_save(index: *const qv_dist_index_t, prefix: *const c_char) -> qv_status_t;
    /// Loads what `qv_dist_index_save` wrote, on a communicator of as many ranks. Collective.
    pub fn qv_dist_index_load(
        context: *mut qv_context_t,
        comm: *const c_void,
        prefix: *const c_char,
        options: *const qv_dist_options_t,
        out: *mut *mut qv_dist_index_t,
    ) -> qv_status_t;
}
