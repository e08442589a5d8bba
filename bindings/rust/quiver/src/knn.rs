//! `knn`: exact k-nearest-neighbour search without an index.

use crate::context::Context;
use crate::error::{check, Result};
use crate::metric::Metric;
use crate::neighbors::Neighbors;
use crate::search_params::SearchParams;
use crate::shape::{k_value, output_len, rows, to_i64};
use quiver_sys as sys;

/// Exact search of the `k` nearest rows of `base` for each row of `queries` (both row-major, `dim`
/// wide, finite), without building an index. Ids are row numbers of `base`; the filter of `params`
/// applies to them. Results are laid out as [`Index::search`](crate::Index::search)'s.
pub fn knn(
    context: &Context,
    metric: Metric,
    dim: usize,
    base: &[f32],
    queries: &[f32],
    k: usize,
    params: &SearchParams<'_>,
) -> Result<Neighbors> {
    let n = rows("base", base.len(), dim)?;
    let nq = rows("queries", queries.len(), dim)?;
    let c_k = k_value(k)?;
    let len = output_len(nq, c_k)?;
    let c_params = params.to_raw()?;
    let mut distances = vec![0f32; len];
    let mut ids = vec![0i64; len];
    // SAFETY: a live, thread-safe context; base and queries hold n and nq rows of dim floats; the
    // outputs hold nq x k entries; the filter points into `params`, borrowed for the call.
    check(unsafe {
        sys::qv_knn(
            context.as_raw(),
            metric.code(),
            to_i64("dim", dim)?,
            n,
            base.as_ptr(),
            nq,
            queries.as_ptr(),
            c_k,
            &c_params,
            distances.as_mut_ptr(),
            ids.as_mut_ptr(),
        )
    })?;
    Ok(Neighbors::new(nq as usize, k, distances, ids))
}
