//! `kmeans`: k-means clustering (squared L2).

use std::fmt;

use crate::context::Context;
use crate::error::{check, Error, Result};
use crate::progress::with_callback;
use crate::shape::{rows, to_i64};
use quiver_sys as sys;

/// Settings of [`kmeans`]. `KmeansParams::default()` gives the library's defaults
/// (`qv_kmeans_params_init`: 20 iterations, seed 1234, 256 points per centroid).
#[derive(Clone, Copy)]
pub struct KmeansParams {
    raw: sys::qv_kmeans_params_t,
}

// SAFETY: the raw struct's only pointer (user_data) is always NULL here; the callback is set on a
// copy for the duration of one call (kmeans_with_progress).
unsafe impl Send for KmeansParams {}
unsafe impl Sync for KmeansParams {}

impl Default for KmeansParams {
    fn default() -> Self {
        // SAFETY: plain data, all-zero is valid; overwritten by qv_kmeans_params_init.
        let mut raw: sys::qv_kmeans_params_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid, writable struct. It fails only for NULL; the fallback writes the
        // header's documented defaults.
        if unsafe { sys::qv_kmeans_params_init_sized(&mut raw, std::mem::size_of_val(&raw)) }
            != sys::QV_OK
        {
            raw = sys::qv_kmeans_params_t {
                struct_size: std::mem::size_of::<sys::qv_kmeans_params_t>() as u32,
                iterations: 20,
                seed: 1234,
                max_points_per_centroid: 256,
                progress: None,
                user_data: std::ptr::null_mut(),
            };
        }
        KmeansParams { raw }
    }
}

impl KmeansParams {
    /// The defaults; same as `KmeansParams::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lloyd iterations.
    pub fn with_iterations(mut self, iterations: u32) -> Self {
        self.raw.iterations = iterations;
        self
    }

    /// The seed of initialisation and sub-sampling.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.raw.seed = seed;
        self
    }

    /// Sub-sample to `k * points` training points; 0 uses every point.
    pub fn with_max_points_per_centroid(mut self, points: usize) -> Self {
        self.raw.max_points_per_centroid = i64::try_from(points).unwrap_or(i64::MAX);
        self
    }

    /// Lloyd iterations.
    pub fn iterations(&self) -> u32 {
        self.raw.iterations
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.raw.seed
    }

    /// Points per centroid kept by sub-sampling (0 = all).
    pub fn max_points_per_centroid(&self) -> usize {
        usize::try_from(self.raw.max_points_per_centroid).unwrap_or(0)
    }
}

impl fmt::Debug for KmeansParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KmeansParams")
            .field("iterations", &self.raw.iterations)
            .field("seed", &self.raw.seed)
            .field("max_points_per_centroid", &self.raw.max_points_per_centroid)
            .finish()
    }
}

/// What [`kmeans`] returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Kmeans {
    /// `k x dim` centroids, row-major.
    pub centroids: Vec<f32>,
    /// The nearest centroid (0 .. k-1) of each input vector.
    pub assignments: Vec<i64>,
    /// The final sum of squared distances of the vectors to their nearest centroid.
    pub objective: f64,
}

/// Clusters the rows of `x` (`n x dim`, finite, `n >= k >= 1`) into `k` centroids with Lloyd's
/// algorithm (squared L2). Deterministic for a given seed and device, whatever the thread count.
pub fn kmeans(
    context: &Context,
    dim: usize,
    x: &[f32],
    k: usize,
    params: &KmeansParams,
) -> Result<Kmeans> {
    cluster(context, dim, x, k, params.raw)
}

/// As [`kmeans`], calling `progress` after each iteration with the fraction done (0 to 1, on the
/// calling thread); `progress` returning `false` stops the call with
/// [`Status::Cancelled`](crate::Status::Cancelled). A panic in `progress` stops it too and is
/// resumed once the library has returned.
pub fn kmeans_with_progress<F: FnMut(f64) -> bool>(
    context: &Context,
    dim: usize,
    x: &[f32],
    k: usize,
    params: &KmeansParams,
    progress: F,
) -> Result<Kmeans> {
    with_callback(progress, |callback, user| {
        let mut raw = params.raw;
        (raw.progress, raw.user_data) = (callback, user);
        cluster(context, dim, x, k, raw)
    })
}

fn cluster(
    context: &Context,
    dim: usize,
    x: &[f32],
    k: usize,
    raw: sys::qv_kmeans_params_t,
) -> Result<Kmeans> {
    let n = rows("x", x.len(), dim)?;
    // k > n would make the library reject the call; refusing it here keeps the allocation of the
    // centroids within the size of x. (k = 0 goes through: the library names the error.)
    if k as u64 > n as u64 {
        return Err(Error::invalid_argument(format!(
            "k = {k} is above the {n} vectors of x"
        )));
    }
    let c_k =
        u32::try_from(k).map_err(|_| Error::invalid_argument(format!("k = {k} is too large")))?;
    let mut centroids = vec![0f32; k * dim];
    let mut assignments = vec![0i64; n as usize];
    let mut objective = 0f64;
    // SAFETY: a live, thread-safe context; x holds n x dim floats; centroids holds k x dim floats,
    // assignments n entries; objective is a valid output; raw is initialised, and its callback (if
    // any) and user_data stay valid for the call.
    check(unsafe {
        sys::qv_kmeans(
            context.as_raw(),
            to_i64("dim", dim)?,
            n,
            x.as_ptr(),
            c_k,
            &raw,
            centroids.as_mut_ptr(),
            assignments.as_mut_ptr(),
            &mut objective,
        )
    })?;
    Ok(Kmeans {
        centroids,
        assignments,
        objective,
    })
}
