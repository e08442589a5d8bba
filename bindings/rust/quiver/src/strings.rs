//! Byte strings, the objects of edit-distance indexes: [`Index::add_strings`] and the `_strings`
//! searches, which pack the caller's strings into the offsets + bytes form of the C API.

use std::ptr;

use crate::error::{check, Error, Result};
use crate::index::{non_null, Index};
use crate::neighbors::Neighbors;
use crate::range_result::RangeResult;
use crate::search_params::SearchParams;
use crate::shape::{k_value, output_len, to_i64};
use quiver_sys as sys;

/// n strings as the C API takes them: string `i` is `bytes[offsets[i] .. offsets[i + 1]]`.
struct Packed {
    offsets: Vec<i64>,
    bytes: Vec<u8>,
}

impl Packed {
    fn new<I, S>(what: &str, strings: I) -> Result<Packed>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let strings = strings.into_iter();
        let mut offsets = Vec::with_capacity(strings.size_hint().0 + 1);
        offsets.push(0);
        let mut bytes = Vec::new();
        for s in strings {
            bytes.extend_from_slice(s.as_ref());
            offsets.push(to_i64(what, bytes.len())?);
        }
        Ok(Packed { offsets, bytes })
    }

    /// The number of strings.
    fn n(&self) -> i64 {
        // offsets holds n + 1 entries, each byte offset already checked to fit i64.
        (self.offsets.len() - 1) as i64
    }
}

/// Indexes of byte strings ([`Metric::Edit`](crate::Metric::Edit), created with dimension 0).
///
/// Strings are bytes, not text: any value (NUL included), no encoding assumed, empty allowed, up
/// to 1 MiB each. Anything whose `AsRef<[u8]>` gives the bytes will do: `&str`, `String`,
/// `&[u8]`, `Vec<u8>`. Distances are edit distances as floats (0, 1, 2, ...). These calls on an
/// index of vectors, and the vector calls on an index of strings, fail with `Unsupported`.
///
/// ```
/// use quiver::{Context, Index, Metric, SearchParams};
///
/// fn main() -> Result<(), quiver::Error> {
///     let ctx = Context::new()?;
///     let mut index = Index::new(&ctx, "LC8", 0, Metric::Edit)?;
///     index.add_strings(["kitten", "sitting", "mitten", "fitting"])?;
///     let found = index.search_strings(["kitten"], 2, &SearchParams::default())?;
///     assert_eq!(found.ids(), &[0, 2]); // itself, then "mitten" at distance 1
///     let near = index.range_search_strings(["sitten"], 2.0, &SearchParams::default())?;
///     let mut ids = near.get(0).unwrap().ids.to_vec();
///     ids.sort();
///     assert_eq!(ids, vec![0, 1, 2]); // kitten 1, sitting 2, mitten 1 (fitting is 3 away)
///     Ok(())
/// }
/// ```
impl Index {
    /// Adds byte strings, numbered consecutively after the largest id in the index (0, 1, ... for
    /// an empty one). On error nothing is added. The first add to an `"LC"` or `"SSS"` index
    /// builds its clusters or chooses its pivots.
    pub fn add_strings<I, S>(&mut self, strings: I) -> Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let packed = Packed::new("strings", strings)?;
        // SAFETY: exclusive (&mut self); offsets holds n + 1 entries into bytes, both read during
        // the call; NULL ids means consecutive numbering.
        check(unsafe {
            sys::qv_index_add_strings(
                self.as_raw(),
                packed.n(),
                packed.offsets.as_ptr(),
                packed.bytes.as_ptr(),
                ptr::null(),
            )
        })
    }

    /// Adds byte strings with the given ids: one per string, >= 0, unique, not already in the
    /// index. On error nothing is added.
    pub fn add_strings_with_ids<I, S>(&mut self, strings: I, ids: &[i64]) -> Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let packed = Packed::new("strings", strings)?;
        if ids.len() as i64 != packed.n() {
            return Err(Error::invalid_argument(format!(
                "ids has {} entries for {} strings",
                ids.len(),
                packed.n()
            )));
        }
        // SAFETY: exclusive; offsets holds n + 1 entries into bytes and ids n entries, all read
        // during the call.
        check(unsafe {
            sys::qv_index_add_strings(
                self.as_raw(),
                packed.n(),
                packed.offsets.as_ptr(),
                packed.bytes.as_ptr(),
                ids.as_ptr(),
            )
        })
    }

    /// Searches the `k` nearest strings (1 ..= [`MAX_K`](crate::MAX_K)) of each query string, as
    /// [`Index::search`]: rows closest first, padded with id -1 and +INFINITY where fewer than `k`
    /// strings qualify.
    pub fn search_strings<I, S>(
        &self,
        queries: I,
        k: usize,
        params: &SearchParams<'_>,
    ) -> Result<Neighbors>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let packed = Packed::new("queries", queries)?;
        let c_k = k_value(k)?;
        let len = output_len(packed.n(), c_k)?;
        let mut distances = vec![0f32; len];
        let mut ids = vec![0i64; len];
        let c_params = params.to_raw()?;
        // SAFETY: shared access is allowed for search; offsets holds nq + 1 entries into bytes;
        // both outputs hold nq x k entries; c_params' filter points into `params`, borrowed for
        // the call.
        check(unsafe {
            sys::qv_index_search_strings(
                self.as_raw(),
                packed.n(),
                packed.offsets.as_ptr(),
                packed.bytes.as_ptr(),
                c_k,
                &c_params,
                distances.as_mut_ptr(),
                ids.as_mut_ptr(),
            )
        })?;
        Ok(Neighbors::new(packed.n() as usize, k, distances, ids))
    }

    /// Finds, for each query string, every string within edit distance `radius` (<=), as
    /// [`Index::range_search`]. The filter and
    /// [`max_range_results`](crate::SearchParams::with_max_range_results) apply.
    pub fn range_search_strings<I, S>(
        &self,
        queries: I,
        radius: f32,
        params: &SearchParams<'_>,
    ) -> Result<RangeResult>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let packed = Packed::new("queries", queries)?;
        let c_params = params.to_raw()?;
        let mut raw = ptr::null_mut();
        // SAFETY: shared access is allowed for range search; offsets holds nq + 1 entries into
        // bytes; raw is a valid output; the filter points into `params`, borrowed for the call.
        check(unsafe {
            sys::qv_index_range_search_strings(
                self.as_raw(),
                packed.n(),
                packed.offsets.as_ptr(),
                packed.bytes.as_ptr(),
                radius,
                &c_params,
                &mut raw,
            )
        })?;
        RangeResult::from_raw(non_null(raw, "qv_index_range_search_strings")?)
    }
}
