//! `SearchParams`: per-call search settings (filter, nprobe, refine factor, graph search width,
//! compute mode, range search result cap).

use std::borrow::Cow;
use std::fmt;

use crate::error::{Error, Result};
use crate::metric::ComputeMode;
use quiver_sys as sys;

/// [`SearchParams::with_nprobe`] value that lets an inverted-file index choose (`QV_NPROBE_DEFAULT`).
pub const NPROBE_DEFAULT: u32 = sys::QV_NPROBE_DEFAULT;

/// Settings of one search, range search or k-NN call. `SearchParams::default()` gives the library's
/// defaults (`qv_search_params_init`): no filter, the index's own nprobe ([`NPROBE_DEFAULT`]),
/// refine factor and search width, float32 arithmetic, no cap on range search hits.
///
/// The filter is a bitset of allowed ids, owned (`Vec<u8>`) or borrowed (`&[u8]`): bit `id % 8` of
/// byte `id / 8` set means `id` may be returned; ids at or beyond `bits` are excluded.
///
/// ```
/// use quiver::SearchParams;
/// let allowed = vec![0b0000_0101u8]; // ids 0 and 2
/// let params = SearchParams::default().with_filter(allowed, 8).with_nprobe(16);
/// assert_eq!(params.nprobe(), 16);
/// assert_eq!(params.filter(), Some((&[0b0000_0101u8][..], 8)));
/// ```
#[derive(Clone)]
pub struct SearchParams<'a> {
    /// Defaults from qv_search_params_init, nprobe and search width; `filter` here is always NULL
    /// (the pointer is set only in the copy made for each call).
    raw: sys::qv_search_params_t,
    filter: Option<(Cow<'a, [u8]>, usize)>,
}

// SAFETY: the only pointer inside, raw.filter, is always NULL in a stored SearchParams; the filter
// bytes are an ordinary Cow<[u8]>, which is Send and Sync.
unsafe impl Send for SearchParams<'_> {}
unsafe impl Sync for SearchParams<'_> {}

impl Default for SearchParams<'_> {
    fn default() -> Self {
        // SAFETY: plain data, all-zero is valid; overwritten by qv_search_params_init.
        let mut raw: sys::qv_search_params_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid, writable struct. It fails only for NULL; the fallback sets the defaults
        // the header documents.
        if unsafe { sys::qv_search_params_init(&mut raw) } != sys::QV_OK {
            raw.struct_size = std::mem::size_of::<sys::qv_search_params_t>() as u32;
            raw.nprobe = sys::QV_NPROBE_DEFAULT;
        }
        raw.filter = std::ptr::null();
        SearchParams { raw, filter: None }
    }
}

impl<'a> SearchParams<'a> {
    /// The defaults; same as `SearchParams::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inverted-file indexes: the number of lists visited (search and range search), 1 ..= nlist,
    /// the lists whose centroids are nearest the query; more is slower and finds more true
    /// neighbours. [`NPROBE_DEFAULT`] (the default) lets the index choose: min(nlist, 8). 0 or more
    /// than nlist makes the search fail with `Status::InvalidArgument`. Other kinds ignore it.
    pub fn with_nprobe(mut self, nprobe: u32) -> Self {
        self.raw.nprobe = nprobe;
        self
    }

    /// IVF-PQ indexes with ",Refine": `factor` x k candidates by PQ distance (at most
    /// max(k, [`MAX_K`](crate::MAX_K))) are re-ranked with exact distances to the stored vectors;
    /// 0 (the default) means 8. Other kinds ignore it.
    pub fn with_refine_factor(mut self, factor: u32) -> Self {
        self.raw.refine_factor = factor;
        self
    }

    /// Graph indexes: the candidate pool size; 0 means the index's default.
    pub fn with_search_width(mut self, width: u32) -> Self {
        self.raw.search_width = width;
        self
    }

    /// Searches on a CUDA device: the arithmetic of the exact search's GEMM (see [`ComputeMode`]),
    /// the precision of IVF-PQ's look-up tables (float16 for `Fp16` and `Bf16`). The CPU computes
    /// in float32 whatever the mode.
    pub fn with_compute_mode(mut self, mode: ComputeMode) -> Self {
        self.raw.compute_mode = mode.code();
        self
    }

    /// Range searches: the most hits one query may have; a query with more fails the whole call
    /// with [`Status::TooManyResults`](crate::Status::TooManyResults) (no result is returned),
    /// which bounds the memory a too-large radius can take. 0 (the default) means no limit; values
    /// above `i64::MAX` are `i64::MAX`. k-NN searches ignore it.
    pub fn with_max_range_results(mut self, max: usize) -> Self {
        self.raw.max_range_results = i64::try_from(max).unwrap_or(i64::MAX);
        self
    }

    /// Allows only the ids whose bit is set in `bitset` (bit `id % 8` of byte `id / 8`), among ids
    /// below `bits`. `bitset` must hold at least `bits` bits, else the call that uses these
    /// parameters fails with `Status::InvalidArgument`.
    pub fn with_filter(mut self, bitset: impl Into<Cow<'a, [u8]>>, bits: usize) -> Self {
        self.filter = Some((bitset.into(), bits));
        self
    }

    /// Allows only the given ids (negative ids, never in an index, are ignored). Builds an owned
    /// bitset of (largest id + 1) bits.
    pub fn with_allowed_ids(self, ids: &[i64]) -> Self {
        let bits = ids
            .iter()
            .copied()
            .filter(|&id| id >= 0)
            .max()
            .map_or(0, |m| m as usize + 1);
        let mut bitset = vec![0u8; bits.div_ceil(8)];
        for &id in ids.iter().filter(|&&id| id >= 0) {
            bitset[id as usize / 8] |= 1 << (id % 8);
        }
        self.with_filter(bitset, bits)
    }

    /// Removes the filter: every id is allowed.
    pub fn without_filter(mut self) -> Self {
        self.filter = None;
        self
    }

    /// The nprobe setting ([`NPROBE_DEFAULT`] = the index's default).
    pub fn nprobe(&self) -> u32 {
        self.raw.nprobe
    }

    /// The refine factor setting (0 = the index's default, 8).
    pub fn refine_factor(&self) -> u32 {
        self.raw.refine_factor
    }

    /// The search width setting (0 = the index's default).
    pub fn search_width(&self) -> u32 {
        self.raw.search_width
    }

    /// The range search result cap (0 = no limit).
    pub fn max_range_results(&self) -> usize {
        usize::try_from(self.raw.max_range_results).unwrap_or(0)
    }

    /// The compute mode setting.
    pub fn compute_mode(&self) -> ComputeMode {
        match self.raw.compute_mode {
            sys::QV_COMPUTE_TF32 => ComputeMode::Tf32,
            sys::QV_COMPUTE_FP16 => ComputeMode::Fp16,
            sys::QV_COMPUTE_BF16 => ComputeMode::Bf16,
            _ => ComputeMode::Fp32,
        }
    }

    /// The filter bitset and its number of bits, if any.
    pub fn filter(&self) -> Option<(&[u8], usize)> {
        self.filter.as_ref().map(|(b, n)| (&b[..], *n))
    }

    /// The C struct for one call, its filter pointing into `self` (so valid while `self` is
    /// borrowed). Checks that the bitset holds `bits` bits.
    pub(crate) fn to_raw(&self) -> Result<sys::qv_search_params_t> {
        let mut raw = self.raw;
        if let Some((bitset, bits)) = &self.filter {
            if bitset.len().checked_mul(8).is_some_and(|have| have < *bits) {
                return Err(Error::invalid_argument(format!(
                    "the filter has {} bytes, fewer than its {bits} bits need",
                    bitset.len()
                )));
            }
            raw.filter = bitset.as_ptr();
            raw.filter_bits = i64::try_from(*bits).map_err(|_| {
                Error::invalid_argument(format!("filter bits = {bits} is too large"))
            })?;
        }
        Ok(raw)
    }
}

impl fmt::Debug for SearchParams<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchParams")
            .field("nprobe", &self.raw.nprobe)
            .field("refine_factor", &self.raw.refine_factor)
            .field("search_width", &self.raw.search_width)
            .field("compute_mode", &self.compute_mode())
            .field("max_range_results", &self.raw.max_range_results)
            .field("filter_bits", &self.filter.as_ref().map(|(_, n)| *n))
            .finish()
    }
}
