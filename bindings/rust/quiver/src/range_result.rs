//! `RangeResult`: the hits of a range search, in CSR form, viewed in place.

use std::fmt;
use std::ptr::{self, NonNull};

use crate::error::{check, Error, Result, Status};
use crate::neighbors::Hits;
use quiver_sys as sys;

/// Every vector within the radius of each query, in CSR form: the hits of query `i` are entries
/// `lims[i] .. lims[i + 1]` of `ids` and `distances`, closest first. The arrays are the library's
/// own memory, viewed without copying and released on drop.
pub struct RangeResult {
    raw: NonNull<sys::qv_range_result_t>,
    nq: usize,
    lims: *const i64,
    ids: *const i64,
    distances: *const f32,
    total: usize,
}

// SAFETY: a range result is immutable after qv_index_range_search returns; this type only reads the
// host arrays qv_range_result_get pointed to, and frees the handle once. The header ties no handle
// to a thread (only the error message is per thread).
unsafe impl Send for RangeResult {}
unsafe impl Sync for RangeResult {}

impl Drop for RangeResult {
    fn drop(&mut self) {
        // SAFETY: owned handle from qv_index_range_search, freed once; never fails.
        unsafe { sys::qv_range_result_free(self.raw.as_ptr()) }
    }
}

impl RangeResult {
    /// Takes ownership of a result and checks its CSR arrays once, so that the accessors never
    /// index out of bounds.
    pub(crate) fn from_raw(raw: NonNull<sys::qv_range_result_t>) -> Result<RangeResult> {
        let mut result = RangeResult {
            raw,
            nq: 0,
            lims: ptr::null(),
            ids: ptr::null(),
            distances: ptr::null(),
            total: 0,
        };
        let mut nq = 0i64;
        // SAFETY: a live handle; all outputs are valid for writes.
        check(unsafe {
            sys::qv_range_result_get(
                raw.as_ptr(),
                &mut nq,
                &mut result.lims,
                &mut result.ids,
                &mut result.distances,
            )
        })?;
        let bad = |what: &str| Error::new(Status::Internal, format!("range result: {what}"));
        result.nq = usize::try_from(nq).map_err(|_| bad("negative nq"))?;
        if result.lims.is_null() {
            return Err(bad("NULL lims"));
        }
        // SAFETY: the header guarantees nq + 1 entries at lims, valid until qv_range_result_free.
        let lims = unsafe { std::slice::from_raw_parts(result.lims, result.nq + 1) };
        if lims[0] != 0 || lims.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad("lims not increasing from 0"));
        }
        result.total = usize::try_from(lims[result.nq]).map_err(|_| bad("negative total"))?;
        if result.total > 0 && (result.ids.is_null() || result.distances.is_null()) {
            return Err(bad("NULL ids or distances"));
        }
        Ok(result)
    }

    /// The number of queries.
    pub fn nq(&self) -> usize {
        self.nq
    }

    /// The total number of hits, all queries together.
    pub fn len(&self) -> usize {
        self.total
    }

    /// Whether no query has a hit.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// `nq + 1` offsets: the hits of query `i` are `lims[i] .. lims[i + 1]`.
    pub fn lims(&self) -> &[i64] {
        // SAFETY: checked in from_raw: non-NULL, nq + 1 entries, alive as long as self.
        unsafe { std::slice::from_raw_parts(self.lims, self.nq + 1) }
    }

    /// The ids of all hits, query after query.
    pub fn ids(&self) -> &[i64] {
        if self.total == 0 {
            return &[];
        }
        // SAFETY: checked in from_raw: non-NULL with lims[nq] = total entries.
        unsafe { std::slice::from_raw_parts(self.ids, self.total) }
    }

    /// The distances (or similarities) of all hits, in the metric's units, query after query.
    pub fn distances(&self) -> &[f32] {
        if self.total == 0 {
            return &[];
        }
        // SAFETY: as for ids.
        unsafe { std::slice::from_raw_parts(self.distances, self.total) }
    }

    /// The hits of query `i`, closest first, or `None` if `i >= nq`.
    pub fn get(&self, i: usize) -> Option<Hits<'_>> {
        if i >= self.nq {
            return None;
        }
        let lims = self.lims();
        // lims was checked increasing from 0 to total, so these are in bounds and fit usize.
        let range = lims[i] as usize..lims[i + 1] as usize;
        Some(Hits {
            ids: &self.ids()[range.clone()],
            distances: &self.distances()[range],
        })
    }

    /// The hits of each query, in order.
    pub fn iter(&self) -> impl Iterator<Item = Hits<'_>> + '_ {
        (0..self.nq).filter_map(move |i| self.get(i))
    }
}

impl fmt::Debug for RangeResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RangeResult")
            .field("nq", &self.nq)
            .field("total", &self.total)
            .finish()
    }
}
