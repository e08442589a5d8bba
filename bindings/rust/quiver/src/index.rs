//! `Index`: vectors organised for search, created from a Faiss-style descriptor.

use std::ffi::c_void;
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};

use crate::context::{Context, Device};
use crate::error::{check, Error, Result, Status};
use crate::metric::Metric;
use crate::neighbors::Neighbors;
use crate::progress::with_callback;
use crate::range_result::RangeResult;
use crate::search_params::SearchParams;
use crate::shape::{c_path, c_string, k_value, output_len, output_slice, rows, to_i64};
use quiver_sys as sys;

/// The index kinds, by structure; [`IndexKind::descriptor`] gives the descriptor string that
/// [`Index::new`] takes (also its `Display`).
///
/// ```
/// use quiver::IndexKind;
/// assert_eq!(IndexKind::IvfFlat { nlist: 1024 }.descriptor(), "IVF1024,Flat");
/// let kind = IndexKind::IvfPq { nlist: 256, m: 16, opq_m: 32, refine: true };
/// assert_eq!(kind.to_string(), "OPQ32,IVF256,PQ16,Refine");
/// assert_eq!(IndexKind::ListOfClusters { cluster_size: 32 }.descriptor(), "LC32");
/// assert_eq!(IndexKind::Sss { alpha: 0.4, max_pivots: 0 }.descriptor(), "SSS0.4");
/// assert_eq!(IndexKind::Sss { alpha: 0.5, max_pivots: 32 }.descriptor(), "SSS0.5,P32");
/// ```
///
/// Kinds are equal when every field is (`Sss`'s alpha compared bit for bit, so that `Eq` and `Hash`
/// hold).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum IndexKind {
    /// Exact search over all vectors: descriptor `"Flat"`.
    Flat,
    /// Inverted file of raw vectors (IVF-Flat), `"IVF<nlist>,Flat"`: training runs k-means for
    /// `nlist` centroids; each vector goes to the list of its nearest centroid; a search visits
    /// the [`SearchParams::with_nprobe`](crate::SearchParams::with_nprobe) nearest lists with exact
    /// distances.
    IvfFlat {
        /// Lists (k-means centroids), 1 ..= 2^24; training needs at least as many vectors.
        nlist: u32,
    },
    /// Inverted file of product-quantization codes (IVF-PQ, IVFADC),
    /// `"[OPQ<opq_m>,]IVF<nlist>,PQ<m>[,Refine]"`: `m` bytes a vector, distances to the encoded
    /// vectors; `refine` keeps the raw vectors to re-rank candidates exactly
    /// ([`SearchParams::with_refine_factor`](crate::SearchParams::with_refine_factor)).
    IvfPq {
        /// Lists (k-means centroids).
        nlist: u32,
        /// Sub-quantizers (code bytes), 1 ..= 256, dividing the dimension.
        m: u32,
        /// Sub-spaces of an OPQ rotation applied first (dividing the dimension); 0 for none.
        opq_m: u32,
        /// Keep the raw vectors and re-rank exactly (",Refine").
        refine: bool,
    },
    /// List of Clusters, `"LC<cluster_size>"`: a metric-space index for the true metrics (L2, L1,
    /// L-infinity, edit distance; not inner product or cosine). Clusters of `cluster_size` objects
    /// around centres chosen farthest-first, each with its covering radius; searches prune clusters
    /// by the triangle inequality and return exactly what brute force returns. No training: the
    /// first add builds the clusters.
    ListOfClusters {
        /// Objects a cluster, 1 ..= 65536.
        cluster_size: u32,
    },
    /// Sparse Spatial Selection pivots, `"SSS<alpha>[,P<max_pivots>]"`: a metric-space index for
    /// the same metrics as [`IndexKind::ListOfClusters`], exact as it. An object becomes a pivot
    /// when farther than alpha x (the largest distance seen) from every pivot; a table of every
    /// object's distance to every pivot filters candidates. The first add chooses the pivots.
    Sss {
        /// In (0, 2], e.g. 0.4; written as a plain decimal.
        alpha: f32,
        /// At most this many pivots, 1 ..= 1024; 0 for the library's default (64). Memory:
        /// 4 bytes a pivot an object.
        max_pivots: u32,
    },
}

impl IndexKind {
    /// Every field as integers (alpha by its bits), for `Eq` and `Hash`.
    fn key(self) -> (u8, u32, u32, u32, bool) {
        match self {
            IndexKind::Flat => (0, 0, 0, 0, false),
            IndexKind::IvfFlat { nlist } => (1, nlist, 0, 0, false),
            IndexKind::IvfPq {
                nlist,
                m,
                opq_m,
                refine,
            } => (2, nlist, m, opq_m, refine),
            IndexKind::ListOfClusters { cluster_size } => (3, cluster_size, 0, 0, false),
            IndexKind::Sss { alpha, max_pivots } => (4, alpha.to_bits(), max_pivots, 0, false),
        }
    }
}

impl PartialEq for IndexKind {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for IndexKind {}

impl std::hash::Hash for IndexKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl IndexKind {
    /// The descriptor string of this kind.
    pub fn descriptor(self) -> String {
        match self {
            IndexKind::Flat => "Flat".to_string(),
            IndexKind::IvfFlat { nlist } => format!("IVF{nlist},Flat"),
            IndexKind::IvfPq {
                nlist,
                m,
                opq_m,
                refine,
            } => {
                let opq = if opq_m > 0 {
                    format!("OPQ{opq_m},")
                } else {
                    String::new()
                };
                let suffix = if refine { ",Refine" } else { "" };
                format!("{opq}IVF{nlist},PQ{m}{suffix}")
            }
            IndexKind::ListOfClusters { cluster_size } => format!("LC{cluster_size}"),
            // f32's Display is the shortest decimal that reads back as the same float, never with
            // an exponent: the plain decimal the descriptor needs.
            IndexKind::Sss {
                alpha,
                max_pivots: 0,
            } => format!("SSS{alpha}"),
            IndexKind::Sss { alpha, max_pivots } => format!("SSS{alpha},P{max_pivots}"),
        }
    }
}

impl std::fmt::Display for IndexKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.descriptor())
    }
}

/// What [`Index::info`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexInfo {
    /// Vector dimension; 0 for an index of byte strings ([`Metric::Edit`]).
    pub dim: usize,
    /// The metric.
    pub metric: Metric,
    /// Whether searches and adds are possible.
    pub is_trained: bool,
    /// Vectors (or strings) in the index.
    pub count: usize,
    /// Where the index lives.
    pub device: Device,
    /// Host memory held by the index, in bytes.
    pub host_bytes: u64,
    /// GPU memory held by the index, in bytes.
    pub device_bytes: u64,
    /// The descriptor the index was created with.
    pub descriptor: String,
}

/// Vectors organised for k-nearest-neighbour and range search; or byte strings, for an index of
/// [`Metric::Edit`] (see [`Index::add_strings`]).
///
/// `search`, `range_search`, `info`, `save` and `save_to_buffer` take `&self` and may run on many
/// threads at once (share the index through an `Arc`); `train`, `add` and `remove` take `&mut self`.
/// The index keeps its [`Context`] alive.
pub struct Index {
    raw: NonNull<sys::qv_index_t>,
    dim: usize,
    metric: Metric,
    // Dropped after `raw` is freed (Drop::drop runs before the fields drop), so the context outlives
    // the index on the Rust side too; also what `Index::context` returns.
    context: Context,
}

// SAFETY: quiver.h, "Thread safety": "On one index, concurrent qv_index_search /
// qv_index_range_search / qv_index_info / qv_index_save calls are safe; qv_index_train /
// qv_index_add / qv_index_remove need exclusive access". Only the former are reachable through
// `&Index` (plus qv_index_save_buffer, a save to memory); the latter need `&mut Index`. An index has
// no thread affinity (only the error message is per thread), so it may move between threads and be
// freed on any of them.
unsafe impl Send for Index {}
unsafe impl Sync for Index {}

impl Drop for Index {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once; `&mut self` means no other call runs on it. Never fails.
        unsafe { sys::qv_index_free(self.raw.as_ptr()) }
    }
}

impl Index {
    /// Creates an empty index on `context`'s device.
    ///
    /// `descriptor` names the kind, Faiss-style (`"Flat"`, `"IVF1024,Flat"`, `"IVF256,PQ16,Refine"`,
    /// `"LC32"`, `"SSS0.4"`; see [`IndexKind`] and `qv_index_create` in quiver.h); `dim` is
    /// 1 ..= 65536, or 0 for [`Metric::Edit`] (an index of byte strings). Inverted-file indexes
    /// need [`Index::train`] before `add` and `search`.
    /// Errors: `InvalidArgument` (unknown or malformed descriptor, bad dim), `Unsupported` (the kind
    /// cannot run on an explicit CUDA context, or does not serve the metric: L1, L-infinity and edit
    /// distance are `"Flat"`, `"LC<b>"` and `"SSS<alpha>"` only; inner product and cosine are not
    /// `"LC"` or `"SSS"`).
    pub fn new(context: &Context, descriptor: &str, dim: usize, metric: Metric) -> Result<Index> {
        let c_descriptor = c_string("descriptor", descriptor)?;
        let c_dim = to_i64("dim", dim)?;
        let mut raw = ptr::null_mut();
        // SAFETY: a live context; a NUL-terminated descriptor; raw is a valid output.
        check(unsafe {
            sys::qv_index_create(
                context.as_raw(),
                c_descriptor.as_ptr(),
                c_dim,
                metric.code(),
                &mut raw,
            )
        })?;
        let raw = non_null(raw, "qv_index_create")?;
        Ok(Index {
            raw,
            dim,
            metric,
            context: context.clone(),
        })
    }

    /// Loads an index saved by [`Index::save`] or [`Index::save_to_buffer`] onto `context`'s device.
    /// Errors: `Io`, `CorruptData` (truncated, damaged, not a quiver file), `VersionMismatch`, ...
    pub fn load(context: &Context, path: impl AsRef<Path>) -> Result<Index> {
        let c_path = c_path(path.as_ref())?;
        let mut raw = ptr::null_mut();
        // SAFETY: a live context; a NUL-terminated path; raw is a valid output.
        check(unsafe { sys::qv_index_load(context.as_raw(), c_path.as_ptr(), &mut raw) })?;
        Index::adopt(context, non_null(raw, "qv_index_load")?)
    }

    /// Loads an index from the bytes of [`Index::save_to_buffer`] (or of a saved file).
    pub fn load_from_buffer(context: &Context, data: &[u8]) -> Result<Index> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live context; data.len() readable bytes, read during the call only.
        check(unsafe {
            sys::qv_index_load_buffer(context.as_raw(), data.as_ptr().cast(), data.len(), &mut raw)
        })?;
        Index::adopt(context, non_null(raw, "qv_index_load_buffer")?)
    }

    /// Wraps a loaded index, reading its dimension and metric.
    fn adopt(context: &Context, raw: NonNull<sys::qv_index_t>) -> Result<Index> {
        let mut index = Index {
            raw,
            dim: 0,
            metric: Metric::L2,
            context: context.clone(),
        };
        let info = index.info()?; // on error, `index` is dropped and freed
        index.dim = info.dim;
        index.metric = info.metric;
        Ok(index)
    }

    /// The vector dimension (0 for an index of byte strings).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The metric.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The context the index lives in.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Trains the index on the rows of `x` (`n x dim`, finite). Kinds that need no training, such as
    /// `"Flat"`, only validate. Inverted files need at least nlist rows (256 for PQ), train
    /// deterministically, and refuse (`InvalidArgument`) to train again once they hold vectors.
    pub fn train(&mut self, x: &[f32]) -> Result<()> {
        let n = self.vector_rows("x", x.len())?;
        // SAFETY: exclusive (&mut self); x holds n x dim floats, read during the call.
        check(unsafe { sys::qv_index_train(self.raw.as_ptr(), n, x.as_ptr()) })
    }

    /// Adds the rows of `x` (`n x dim`, finite), numbered consecutively after the largest id in the
    /// index (0, 1, ... for an empty one). On error nothing is added.
    pub fn add(&mut self, x: &[f32]) -> Result<()> {
        let n = self.vector_rows("x", x.len())?;
        // SAFETY: exclusive; x holds n x dim floats; NULL ids means consecutive numbering.
        check(unsafe { sys::qv_index_add(self.raw.as_ptr(), n, x.as_ptr(), ptr::null()) })
    }

    /// Adds the rows of `x` with the given ids: one per row, >= 0, unique, not already in the index.
    /// On error nothing is added.
    pub fn add_with_ids(&mut self, x: &[f32], ids: &[i64]) -> Result<()> {
        let n = self.vector_rows("x", x.len())?;
        if ids.len() as i64 != n {
            return Err(Error::invalid_argument(format!(
                "ids has {} entries for {n} vectors",
                ids.len()
            )));
        }
        // SAFETY: exclusive; x holds n x dim floats and ids n entries, read during the call.
        check(unsafe { sys::qv_index_add(self.raw.as_ptr(), n, x.as_ptr(), ids.as_ptr()) })
    }

    /// Runs `call` (a [`train`](Index::train), [`add`](Index::add), ... of this index) with
    /// `progress` called, on this thread, with the fraction of each train or add done: 0 before
    /// any change, then as the work goes where it is long (a graph index's build, an IVF index's
    /// training), and 1 once done.
    /// `progress` returning `false` stops the call with
    /// [`Status::Cancelled`](crate::Status::Cancelled) and leaves the index as it was (a `false`
    /// at 1 changes nothing: the work is done). A panic in `progress` cancels too and is resumed
    /// once `call` has returned. Multi-device indexes report 0 and 1 only.
    pub fn with_progress<P, R>(
        &mut self,
        progress: P,
        call: impl FnOnce(&mut Index) -> Result<R>,
    ) -> Result<R>
    where
        P: FnMut(f64) -> bool,
    {
        with_callback(progress, |callback, user| {
            // SAFETY: exclusive (&mut self); the callback's state lives until with_callback
            // returns, after the guard below has removed it (also if `call` panics).
            check(unsafe { sys::qv_index_set_progress(self.raw.as_ptr(), callback, user) })?;
            struct Unset(NonNull<sys::qv_index_t>);
            impl Drop for Unset {
                fn drop(&mut self) {
                    // SAFETY: the index is alive (borrowed by with_progress); NULL removes the
                    // callback.
                    unsafe { sys::qv_index_set_progress(self.0.as_ptr(), None, ptr::null_mut()) };
                }
            }
            let _unset = Unset(self.raw);
            call(self)
        })
    }

    /// Searches the `k` nearest neighbours (1 ..= [`MAX_K`](crate::MAX_K)) of each row of `queries`
    /// (row-major, `dim` wide). `k` may exceed the number of vectors: rows are then padded.
    pub fn search(
        &self,
        queries: &[f32],
        k: usize,
        params: &SearchParams<'_>,
    ) -> Result<Neighbors> {
        let nq = self.vector_rows("queries", queries.len())?;
        let len = output_len(nq, k_value(k)?)?;
        let mut distances = vec![0f32; len];
        let mut ids = vec![0i64; len];
        self.search_into(queries, k, params, &mut distances, &mut ids)?;
        Ok(Neighbors::new(nq as usize, k, distances, ids))
    }

    /// Like [`Index::search`], writing into the caller's `distances` and `ids`, each exactly
    /// `nq x k` long.
    pub fn search_into(
        &self,
        queries: &[f32],
        k: usize,
        params: &SearchParams<'_>,
        distances: &mut [f32],
        ids: &mut [i64],
    ) -> Result<()> {
        let nq = self.vector_rows("queries", queries.len())?;
        let c_k = k_value(k)?;
        let len = output_len(nq, c_k)?;
        output_slice("distances", distances.len(), len)?;
        output_slice("ids", ids.len(), len)?;
        let c_params = params.to_raw()?;
        // SAFETY: shared access is allowed for search; queries holds nq x dim floats; both outputs
        // hold nq x k entries; c_params' filter points into `params`, borrowed for the call.
        check(unsafe {
            sys::qv_index_search(
                self.raw.as_ptr(),
                nq,
                queries.as_ptr(),
                c_k,
                &c_params,
                distances.as_mut_ptr(),
                ids.as_mut_ptr(),
            )
        })
    }

    /// Finds, for each row of `queries`, every vector within `radius`: squared distance <= radius for
    /// L2, distance <= radius for L1 and L-infinity, similarity >= radius for inner product and
    /// cosine. The filter, nprobe and
    /// [`max_range_results`](crate::SearchParams::with_max_range_results) apply.
    pub fn range_search(
        &self,
        queries: &[f32],
        radius: f32,
        params: &SearchParams<'_>,
    ) -> Result<RangeResult> {
        let nq = self.vector_rows("queries", queries.len())?;
        let c_params = params.to_raw()?;
        let mut raw = ptr::null_mut();
        // SAFETY: shared access is allowed for range search; queries holds nq x dim floats; raw is a
        // valid output; the filter points into `params`, borrowed for the call.
        check(unsafe {
            sys::qv_index_range_search(
                self.raw.as_ptr(),
                nq,
                queries.as_ptr(),
                radius,
                &c_params,
                &mut raw,
            )
        })?;
        RangeResult::from_raw(non_null(raw, "qv_index_range_search")?)
    }

    /// Removes the vectors with the given ids; ids not in the index are ignored. Returns how many
    /// were removed.
    pub fn remove(&mut self, ids: &[i64]) -> Result<usize> {
        let n = to_i64("ids", ids.len())?;
        let mut removed = 0i64;
        // SAFETY: exclusive; ids holds n entries; removed is a valid output.
        check(unsafe { sys::qv_index_remove(self.raw.as_ptr(), n, ids.as_ptr(), &mut removed) })?;
        Ok(usize::try_from(removed).unwrap_or(0))
    }

    /// Describes the index: dimension, metric, count, device, memory, descriptor.
    pub fn info(&self) -> Result<IndexInfo> {
        // SAFETY: plain data, all-zero is valid; qv_index_info_init sets struct_size.
        let mut info: sys::qv_index_info_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid, writable struct.
        check(unsafe { sys::qv_index_info_init_sized(&mut info, std::mem::size_of_val(&info)) })?;
        // SAFETY: shared access is allowed for info; info is initialised and writable.
        check(unsafe { sys::qv_index_info(self.raw.as_ptr(), &mut info) })?;
        // Bounded by the array: a descriptor without NUL is cut at 128 bytes, never read past.
        let bytes: Vec<u8> = info
            .descriptor
            .iter()
            .map(|&c| c as u8)
            .take_while(|&c| c != 0)
            .collect();
        Ok(IndexInfo {
            dim: usize::try_from(info.dim).unwrap_or(0),
            metric: Metric::from_code(info.metric)?,
            is_trained: info.is_trained != 0,
            count: usize::try_from(info.count).unwrap_or(0),
            device: Device::from_codes(info.device, info.device_id)?,
            host_bytes: u64::try_from(info.host_bytes).unwrap_or(0),
            device_bytes: u64::try_from(info.device_bytes).unwrap_or(0),
            descriptor: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    /// Saves the index to `path`, written beside it and renamed over it when complete.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let c_path = c_path(path.as_ref())?;
        // SAFETY: shared access is allowed for save; a NUL-terminated path.
        check(unsafe { sys::qv_index_save(self.raw.as_ptr(), c_path.as_ptr()) })
    }

    /// Serializes the index into bytes (the format of [`Index::save`]).
    pub fn save_to_buffer(&self) -> Result<Vec<u8>> {
        let mut data: *mut c_void = ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: shared access, as for save; data and size are valid outputs.
        check(unsafe { sys::qv_index_save_buffer(self.raw.as_ptr(), &mut data, &mut size) })?;
        /// Releases the library's buffer even if copying it unwinds.
        struct Buffer(*mut c_void);
        impl Drop for Buffer {
            fn drop(&mut self) {
                // SAFETY: the buffer from qv_index_save_buffer, freed once; NULL is a no-op.
                unsafe { sys::qv_buffer_free(self.0) }
            }
        }
        let buffer = Buffer(data);
        if buffer.0.is_null() {
            return if size == 0 {
                Ok(Vec::new())
            } else {
                Err(Error::new(
                    Status::Internal,
                    "qv_index_save_buffer returned NULL data",
                ))
            };
        }
        // SAFETY: the library wrote `size` bytes at `data`, alive until qv_buffer_free.
        Ok(unsafe { std::slice::from_raw_parts(buffer.0 as *const u8, size) }.to_vec())
    }

    /// The number of `dim`-wide rows in the vector argument `what`; an index of byte strings takes
    /// no vectors (`Unsupported`, as the library would say).
    fn vector_rows(&self, what: &str, len: usize) -> Result<i64> {
        if self.metric.holds_strings() {
            return Err(Error::new(
                Status::Unsupported,
                format!(
                    "{what}: the index holds byte strings (edit distance); use add_strings, \
                     search_strings or range_search_strings"
                ),
            ));
        }
        rows(what, len, self.dim)
    }

    /// The C handle, for calls through `quiver_sys`. Valid while this index lives; do not free it,
    /// and keep to the header's rules on exclusive access.
    pub fn as_raw(&self) -> *mut sys::qv_index_t {
        self.raw.as_ptr()
    }
}

impl fmt::Debug for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index")
            .field("dim", &self.dim)
            .field("metric", &self.metric)
            .finish()
    }
}

/// A handle returned by a successful call; NULL there is a library bug.
pub(crate) fn non_null<T>(raw: *mut T, function: &str) -> Result<NonNull<T>> {
    NonNull::new(raw)
        .ok_or_else(|| Error::new(Status::Internal, format!("{function} returned NULL")))
}
