//! `knn_graph`: the k-nearest-neighbour graph of a vector set.

use std::fmt;

use crate::context::Context;
use crate::error::{check, Error, Result};
use crate::metric::Metric;
use crate::neighbors::Neighbors;
use crate::progress::with_callback;
use crate::shape::{k_value, output_len, rows, to_i64};
use quiver_sys as sys;

/// How [`knn_graph`] finds the neighbours (`qv_knn_graph_method_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KnnGraphMethod {
    /// Exact for small data sets (and for a target recall of 1), else approximate.
    Auto,
    /// Tiled brute force: on the GPU on a CUDA context, else the CPU.
    Exact,
    /// Inverted-file candidates refined by NN-descent, on the CPU threads.
    Approximate,
}

impl KnnGraphMethod {
    /// The `QV_KNN_GRAPH_*` code.
    pub fn code(self) -> sys::qv_knn_graph_method_t {
        match self {
            KnnGraphMethod::Auto => sys::QV_KNN_GRAPH_AUTO,
            KnnGraphMethod::Exact => sys::QV_KNN_GRAPH_EXACT,
            KnnGraphMethod::Approximate => sys::QV_KNN_GRAPH_APPROXIMATE,
        }
    }
}

/// Settings of [`knn_graph`]. `KnnGraphParams::default()` gives the library's defaults
/// (`qv_knn_graph_params_init`: automatic method, target recall 0.95, seed 1234, no recall sample).
#[derive(Clone, Copy)]
pub struct KnnGraphParams {
    raw: sys::qv_knn_graph_params_t,
}

// SAFETY: the raw struct's only pointer (user_data) is always NULL here; the callback is set on a
// copy for the duration of one call.
unsafe impl Send for KnnGraphParams {}
unsafe impl Sync for KnnGraphParams {}

impl Default for KnnGraphParams {
    fn default() -> Self {
        let mut raw = sys::qv_knn_graph_params_t {
            struct_size: std::mem::size_of::<sys::qv_knn_graph_params_t>() as u32,
            method: sys::QV_KNN_GRAPH_AUTO,
            target_recall: 0.95,
            seed: 1234,
            recall_sample: 0,
            progress: None,
            user_data: std::ptr::null_mut(),
        };
        // SAFETY: a valid, writable struct. It fails only for NULL; `raw` already holds the header's
        // documented defaults.
        unsafe { sys::qv_knn_graph_params_init_sized(&mut raw, std::mem::size_of_val(&raw)) };
        KnnGraphParams { raw }
    }
}

impl KnnGraphParams {
    /// The defaults; same as `KnnGraphParams::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The method.
    pub fn with_method(mut self, method: KnnGraphMethod) -> Self {
        self.raw.method = method.code();
        self
    }

    /// The recall@k the approximate method aims at, in (0, 1]; higher costs more time.
    pub fn with_target_recall(mut self, recall: f64) -> Self {
        self.raw.target_recall = recall;
        self
    }

    /// The seed of k-means and sampling.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.raw.seed = seed;
        self
    }

    /// Points whose exact neighbours measure the approximate graph's recall (0: no estimate).
    pub fn with_recall_sample(mut self, points: usize) -> Self {
        self.raw.recall_sample = i64::try_from(points).unwrap_or(i64::MAX);
        self
    }

    /// The target recall.
    pub fn target_recall(&self) -> f64 {
        self.raw.target_recall
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.raw.seed
    }

    /// The recall sample size.
    pub fn recall_sample(&self) -> usize {
        usize::try_from(self.raw.recall_sample).unwrap_or(0)
    }
}

impl fmt::Debug for KnnGraphParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KnnGraphParams")
            .field("method", &self.raw.method)
            .field("target_recall", &self.raw.target_recall)
            .field("seed", &self.raw.seed)
            .field("recall_sample", &self.raw.recall_sample)
            .finish()
    }
}

/// What [`knn_graph`] returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KnnGraph {
    /// Row `i` holds the `k` nearest other vectors of vector `i`, closest first (ids are row
    /// numbers), with their distances in the metric's units.
    pub neighbors: Neighbors,
    /// The graph's recall@k: 1 for the exact method, the estimate on the recall sample for the
    /// approximate one, `None` without a sample.
    pub recall: Option<f64>,
}

/// Builds the k-nearest-neighbour graph of the rows of `x` (row-major, `dim` wide, finite, at
/// least 2 rows): every row's `k` nearest other rows (1 <= k < rows), itself excluded, closest first,
/// ties to the smaller row.
pub fn knn_graph(
    context: &Context,
    metric: Metric,
    dim: usize,
    x: &[f32],
    k: usize,
    params: &KnnGraphParams,
) -> Result<KnnGraph> {
    build(context, metric, dim, x, k, params.raw)
}

/// As [`knn_graph`], calling `progress` with the fraction done (0 to 1, on the calling thread)
/// between pieces of work; `progress` returning `false` stops the build with
/// [`Status::Cancelled`](crate::Status::Cancelled). A panic in `progress` stops the build too and
/// is resumed once the library has returned.
pub fn knn_graph_with_progress<F: FnMut(f64) -> bool>(
    context: &Context,
    metric: Metric,
    dim: usize,
    x: &[f32],
    k: usize,
    params: &KnnGraphParams,
    progress: F,
) -> Result<KnnGraph> {
    with_callback(progress, |callback, user| {
        let mut raw = params.raw;
        (raw.progress, raw.user_data) = (callback, user);
        build(context, metric, dim, x, k, raw)
    })
}

fn build(
    context: &Context,
    metric: Metric,
    dim: usize,
    x: &[f32],
    k: usize,
    raw: sys::qv_knn_graph_params_t,
) -> Result<KnnGraph> {
    let n = rows("x", x.len(), dim)?;
    let c_k = k_value(k)?;
    // k >= n would make the library reject the call; refusing it here keeps the outputs' size
    // within that of x. (k = 0 goes through: the library names the error.)
    if k as u64 >= n as u64 && n >= 2 {
        return Err(Error::invalid_argument(format!(
            "k = {k} must be below the {n} vectors of x"
        )));
    }
    let len = output_len(n, c_k)?;
    let mut distances = vec![0f32; len];
    let mut ids = vec![0i64; len];
    let mut recall = -1f64;
    // SAFETY: a live, thread-safe context; x holds n x dim floats; the outputs hold n x k entries;
    // raw is initialised, and its callback (if any) and user_data stay valid for the call.
    check(unsafe {
        sys::qv_knn_graph(
            context.as_raw(),
            metric.code(),
            to_i64("dim", dim)?,
            n,
            x.as_ptr(),
            c_k,
            &raw,
            distances.as_mut_ptr(),
            ids.as_mut_ptr(),
            &mut recall,
        )
    })?;
    Ok(KnnGraph {
        neighbors: Neighbors::new(n as usize, k, distances, ids),
        recall: (recall >= 0.0).then_some(recall),
    })
}
