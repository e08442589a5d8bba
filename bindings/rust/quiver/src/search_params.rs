//! `SearchParams`: per-call search settings (filter, nprobe, refine factor, graph search width,
//! compute mode, range search result cap, the GPU graph walk).

use std::borrow::Cow;
use std::fmt;

use crate::error::{Error, Result};
use crate::metric::ComputeMode;
use quiver_sys as sys;

/// [`SearchParams::with_nprobe`] value that lets an inverted-file index choose (`QV_NPROBE_DEFAULT`).
pub const NPROBE_DEFAULT: u32 = sys::QV_NPROBE_DEFAULT;

/// The largest [`SearchParams::with_graph_probes`] (`QV_GRAPH_MAX_PROBES`).
pub const GRAPH_MAX_PROBES: u32 = sys::QV_GRAPH_MAX_PROBES;

/// The largest [`SearchParams::with_graph_warps_per_query`] (`QV_GRAPH_MAX_WARPS_PER_QUERY`).
pub const GRAPH_MAX_WARPS_PER_QUERY: u32 = sys::QV_GRAPH_MAX_WARPS_PER_QUERY;

/// The visited set of a graph index's walk on a CUDA device (`qv_graph_visited_t`): the nodes a
/// query has already reached, kept in its warp's shared memory (SONG's choices). The filters now
/// and then take a new node for a visited one and skip it: that may cost recall, never correctness
/// (results stay sorted, distinct and with exact distances). On an H100 (1M x 128 vectors, degree
/// 32) the Bloom filter answered 13-16% more queries a second than the hash table at search widths
/// 64-128, with the same recall; the Cuckoo filter was as fast as the table or slower. CPU searches
/// ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum GraphVisited {
    /// The library's choice, today [`GraphVisited::Bloom`] (the default).
    #[default]
    Default,
    /// An open-addressing table of the nodes: exact, with deletion.
    HashTable,
    /// A Bloom filter, 3 bits a node, rebuilt from the queue when full.
    Bloom,
    /// A Cuckoo filter of 16-bit fingerprints, with deletion.
    Cuckoo,
}

impl GraphVisited {
    /// The `qv_graph_visited_t` code.
    pub fn code(self) -> sys::qv_graph_visited_t {
        match self {
            GraphVisited::Default => sys::QV_GRAPH_VISITED_DEFAULT,
            GraphVisited::HashTable => sys::QV_GRAPH_VISITED_HASH_TABLE,
            GraphVisited::Bloom => sys::QV_GRAPH_VISITED_BLOOM,
            GraphVisited::Cuckoo => sys::QV_GRAPH_VISITED_CUCKOO,
        }
    }
}

/// Settings of one search, range search or k-NN call. `SearchParams::default()` gives the library's
/// defaults (`qv_search_params_init`): no filter, the index's own nprobe ([`NPROBE_DEFAULT`]),
/// refine factor and search width, float32 arithmetic, no cap on range search hits, the library's
/// choices for the GPU graph walk.
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
        if unsafe { sys::qv_search_params_init_sized(&mut raw, std::mem::size_of_val(&raw)) }
            != sys::QV_OK
        {
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

    /// Graph indexes searched on a CUDA device: the walk's visited set (see [`GraphVisited`]);
    /// [`GraphVisited::Default`] (the default) is the Bloom filter. CPU searches and other kinds
    /// ignore it.
    pub fn with_graph_visited(mut self, visited: GraphVisited) -> Self {
        self.raw.graph_visited = visited.code();
        self
    }

    /// Graph indexes searched on a CUDA device: nodes expanded per iteration of the walk (SONG's
    /// multi-step probing), 1 ..= [`GRAPH_MAX_PROBES`]; 0 (the default) means 1. Fewer iterations
    /// of more distances each; on an H200, 2 probes lost at equal recall. More than
    /// [`GRAPH_MAX_PROBES`] makes the search fail with `Status::InvalidArgument` whatever the
    /// index, and so, on a CUDA device, does `probes` x R above 256 (R: the graph's degree). CPU
    /// searches and other kinds ignore it.
    pub fn with_graph_probes(mut self, probes: u32) -> Self {
        self.raw.graph_probes = probes;
        self
    }

    /// Graph indexes searched on a CUDA device: warps searching one query together, sharing each
    /// expansion's distances, 1 ..= [`GRAPH_MAX_WARPS_PER_QUERY`]; 0 (the default) chooses: several
    /// only when the batch has fewer queries than the device has multiprocessors. It cuts the
    /// latency of small batches (batch 1 on an H200: 0.50 -> 0.124 ms on Fashion-MNIST) and leaves
    /// the results as they are with one warp. More than [`GRAPH_MAX_WARPS_PER_QUERY`] makes the
    /// search fail with `Status::InvalidArgument`. CPU searches and other kinds ignore it.
    pub fn with_graph_warps_per_query(mut self, warps: u32) -> Self {
        self.raw.graph_warps_per_query = warps;
        self
    }

    /// Graph indexes searched on a CUDA device: queries one warp searches at once (SONG's
    /// multi-query per warp), 1, 2 or 4; 0 (the default) means 1. The warp's lanes split into
    /// groups, each walking its own query with 2 or 4 times one query's shared memory (wide search
    /// widths may not fit: `Status::InvalidArgument`); the results are those of 1 but for rounding
    /// and a visited filter's rare false positives. Slower on an H100 at every dimension measured
    /// (1.5-5.2x the time of 1). Other values, and 2 or 4 with
    /// [`with_graph_warps_per_query`](Self::with_graph_warps_per_query) above 1, make the search
    /// fail with `Status::InvalidArgument`. CPU searches and other kinds ignore it.
    pub fn with_graph_queries_per_warp(mut self, queries: u32) -> Self {
        self.raw.graph_queries_per_warp = queries;
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

    /// The graph walk's visited set setting.
    pub fn graph_visited(&self) -> GraphVisited {
        match self.raw.graph_visited {
            sys::QV_GRAPH_VISITED_HASH_TABLE => GraphVisited::HashTable,
            sys::QV_GRAPH_VISITED_BLOOM => GraphVisited::Bloom,
            sys::QV_GRAPH_VISITED_CUCKOO => GraphVisited::Cuckoo,
            _ => GraphVisited::Default,
        }
    }

    /// The graph walk's probes setting (0 = the default, 1).
    pub fn graph_probes(&self) -> u32 {
        self.raw.graph_probes
    }

    /// The graph walk's warps per query setting (0 = automatic).
    pub fn graph_warps_per_query(&self) -> u32 {
        self.raw.graph_warps_per_query
    }

    /// The graph walk's queries per warp setting (0 = the default, 1).
    pub fn graph_queries_per_warp(&self) -> u32 {
        self.raw.graph_queries_per_warp
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
            .field("graph_visited", &self.graph_visited())
            .field("graph_probes", &self.raw.graph_probes)
            .field("graph_warps_per_query", &self.raw.graph_warps_per_query)
            .field("graph_queries_per_warp", &self.raw.graph_queries_per_warp)
            .field("filter_bits", &self.filter.as_ref().map(|(_, n)| *n))
            .finish()
    }
}
