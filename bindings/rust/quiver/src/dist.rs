//! `DistIndex` (feature `mpi`): one index spread over the processes of an MPI communicator, through
//! libquiver_mpi (`include/quiver/quiver_mpi.h`).

use std::ffi::{c_void, CString, OsString};
use std::fmt;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::context::Context;
use crate::error::{check_dist, Error, Result, Status};
use crate::index::non_null;
use crate::metric::Metric;
use crate::neighbors::Neighbors;
use crate::range_result::RangeResult;
use crate::search_params::SearchParams;
use crate::shape::{c_path, c_string, k_value, output_len, rows, to_i64};
use quiver_sys as sys;

/// What this process knows of MPI, behind the lock every `qv_dist_*` call of this crate holds:
/// [`MpiComm::world`] initialises MPI at `MPI_THREAD_SERIALIZED`, which lets one thread at a time
/// make MPI calls, so the crate makes them one at a time.
struct MpiState {
    /// Live `DistIndex`es: [`finalize`] refuses while there are any.
    indexes: usize,
    /// [`finalize`] ran: MPI cannot be used (or initialised) again in this process.
    finalized: bool,
}

static MPI: Mutex<MpiState> = Mutex::new(MpiState {
    indexes: 0,
    finalized: false,
});

fn mpi() -> MutexGuard<'static, MpiState> {
    // A panic while the lock was held leaves the state consistent (it is updated after each call).
    MPI.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn finalized_error() -> Error {
    Error::invalid_argument("MPI is finalised (quiver::finalize); it cannot be used again")
}

/// A prefix no rank can write or read (a path under the device `/dev/null`), passed in place of a
/// path this binding refuses: see [`refuse`].
const REFUSED_PREFIX: &[u8] = b"/dev/null/quiver-refused-prefix\0";

/// Makes a collective call under the MPI lock, its message read right after it.
fn collective(call: impl FnOnce() -> sys::qv_status_t) -> Result<()> {
    let _mpi = mpi();
    check_dist(call())
}

/// This rank's arguments failed the binding's own checks: it still makes the collective call, with
/// arguments the library refuses inside its agreement step (a negative count, an unreadable path),
/// so that every rank fails together (the others with `Status::Remote`) rather than waiting for this
/// one until the timeout; and it returns the binding's error.
fn refuse<T>(error: Error, call: impl FnOnce() -> sys::qv_status_t) -> Result<T> {
    let _mpi = mpi();
    let _ = call();
    Err(error)
}

/// An MPI communicator, as [`DistIndex::new`] and [`DistIndex::load`] take it: a pointer to an
/// `MPI_Comm` (an `MPI_Comm *`). The index duplicates the communicator; an `MpiComm` owns nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MpiComm(*const c_void);

// SAFETY: an address, read only by qv_dist_index_create / qv_dist_index_load under the MPI lock.
// World's points to a static of libquiver_mpi; `from_raw`'s callers promise that theirs stays valid.
unsafe impl Send for MpiComm {}
unsafe impl Sync for MpiComm {}

impl MpiComm {
    /// `MPI_COMM_WORLD` (`qv_dist_comm_world`), initialising MPI first where nothing has
    /// (`MPI_THREAD_SERIALIZED`, no arguments). A program started without `mpirun` is a world of one
    /// rank (an MPI singleton). Fails after [`finalize`].
    pub fn world() -> Result<MpiComm> {
        let state = mpi();
        if state.finalized {
            return Err(finalized_error());
        }
        let mut comm = ptr::null();
        // SAFETY: a valid output; MPI calls are serialised by the lock held.
        check_dist(unsafe { sys::qv_dist_comm_world(&mut comm) })?;
        drop(state);
        if comm.is_null() {
            return Err(Error::new(
                Status::Internal,
                "qv_dist_comm_world returned NULL",
            ));
        }
        Ok(MpiComm(comm))
    }

    /// A communicator of the program's own, for programs that initialise MPI themselves.
    ///
    /// # Safety
    /// `comm` points to an `MPI_Comm` (it is an `MPI_Comm *`, not the handle itself) that is valid
    /// whenever [`DistIndex::new`] or [`DistIndex::load`] is given this value. MPI was initialised
    /// at `MPI_THREAD_SERIALIZED` or more where several threads make MPI calls, and is not
    /// finalised while an index made from it lives. This crate serialises its own MPI calls, not
    /// the program's: make none while a `DistIndex` call runs on another thread.
    pub unsafe fn from_raw(comm: *const c_void) -> MpiComm {
        MpiComm(comm)
    }

    /// The pointer to the `MPI_Comm`.
    pub fn as_raw(self) -> *const c_void {
        self.0
    }
}

/// Finalises MPI if [`MpiComm::world`] initialised it (`qv_dist_finalize`); where the program
/// initialised MPI itself, does nothing (finalise your own). Call it once, at the end, on every
/// rank, after every [`DistIndex`] is dropped: while one lives it fails with `InvalidArgument`.
/// Afterwards `MpiComm::world`, `DistIndex::new` and `DistIndex::load` fail: MPI cannot start twice
/// in one process.
pub fn finalize() -> Result<()> {
    let mut state = mpi();
    if state.indexes > 0 {
        return Err(Error::invalid_argument(format!(
            "finalize: {} distributed index(es) still alive; drop them first",
            state.indexes
        )));
    }
    // SAFETY: no arguments; no distributed index lives, as the header requires.
    check_dist(unsafe { sys::qv_dist_finalize() })?;
    state.finalized = true;
    Ok(())
}

/// Options of a distributed index, the same on every rank: the root rank, which gives the queries
/// and receives the results, and the longest wait for the other ranks in one collective step.
/// `DistOptions::default()` gives the library's defaults (`qv_dist_options_init`): root 0, 60 s.
///
/// ```
/// use std::time::Duration;
/// let options = quiver::DistOptions::default().with_root(1).with_timeout(Duration::from_secs(5));
/// assert_eq!((options.root(), options.timeout()), (1, Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DistOptions {
    root: usize,
    timeout: Duration,
}

impl Default for DistOptions {
    fn default() -> Self {
        // SAFETY: plain data, all-zero is valid; overwritten by qv_dist_options_init.
        let mut raw: sys::qv_dist_options_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid, writable struct. It fails only for NULL; the fallback is the header's
        // defaults.
        if unsafe { sys::qv_dist_options_init_sized(&mut raw, std::mem::size_of_val(&raw)) }
            != sys::QV_OK
        {
            raw.root = 0;
            raw.timeout_ms = 60_000;
        }
        DistOptions {
            root: usize::try_from(raw.root).unwrap_or(0),
            timeout: Duration::from_millis(u64::try_from(raw.timeout_ms).unwrap_or(60_000)),
        }
    }
}

impl DistOptions {
    /// The defaults; same as `DistOptions::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The rank that gives the queries of searches and receives their results; default 0. A rank
    /// the communicator does not have makes `DistIndex::new` and `load` fail with `InvalidArgument`.
    pub fn with_root(mut self, root: usize) -> Self {
        self.root = root;
        self
    }

    /// The longest wait for the other ranks in one collective step; default 60 s. A rank that does
    /// not take part in time makes the others fail with `Status::Remote` (the communicator may then
    /// be unusable: MPI cannot cancel a collective). Taken in whole milliseconds, rounded up, from
    /// 1 ms to `i32::MAX` ms.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The root rank.
    pub fn root(&self) -> usize {
        self.root
    }

    /// The timeout of one collective step.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The C struct. Always one the library accepts (the timeout clamped to 1 ..= i32::MAX ms, a
    /// root past i32::MAX made i32::MAX, no rank), since a refused options struct fails one rank
    /// before the others start waiting for it.
    fn to_raw(self) -> sys::qv_dist_options_t {
        let ms = self.timeout.as_nanos().div_ceil(1_000_000);
        sys::qv_dist_options_t {
            struct_size: std::mem::size_of::<sys::qv_dist_options_t>() as u32,
            root: i32::try_from(self.root).unwrap_or(i32::MAX),
            timeout_ms: i32::try_from(ms.max(1)).unwrap_or(i32::MAX),
        }
    }
}

/// What [`DistIndex::info`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct DistIndexInfo {
    /// This process's rank in the index's communicator.
    pub rank: usize,
    /// The number of ranks.
    pub size: usize,
    /// Vectors held by this rank (those whose id % size is its rank).
    pub local_count: usize,
    /// Vectors held by all ranks together.
    pub total_count: usize,
}

/// One index spread over the processes (ranks) of an MPI communicator (libquiver_mpi): each rank
/// holds one shard, an ordinary index on its own [`Context`], and the vector with id `i` lives on rank
/// `i % size`.
///
/// Every method, `new`, `load` and drop included, is collective: each rank makes the same call in
/// the same order. A failure on any rank fails the call on every rank, the others with
/// [`Status::Remote`] naming the failing rank; nothing is half-added. Searches take their queries
/// from the root rank ([`DistOptions::with_root`]) and return the merged results there (`Some`);
/// other ranks get `None`. A `DistIndex` may move between threads but not be shared by them (MPI
/// collectives on one communicator must not overlap); the crate makes its MPI calls one at a time.
/// Call [`finalize`] after the last index is dropped.
pub struct DistIndex {
    raw: NonNull<sys::qv_dist_index_t>,
    /// 0 where a loaded index's manifest could not be read (vector calls then fail on every rank).
    dim: usize,
    rank: usize,
    size: usize,
    root: usize,
    // Dropped after `raw` is freed; also what `DistIndex::context` returns.
    context: Context,
}

// SAFETY: quiver_mpi.h, "Thread safety": "use one distributed index from one thread at a time per
// process" (the type is not Sync); a handle has no thread affinity, and every MPI call of this crate
// holds the MPI lock, as MPI_THREAD_SERIALIZED requires.
unsafe impl Send for DistIndex {}

impl Drop for DistIndex {
    fn drop(&mut self) {
        let mut state = mpi();
        // SAFETY: owned handle, freed once (collective: it frees the duplicated communicator).
        unsafe { sys::qv_dist_index_free(self.raw.as_ptr()) }
        state.indexes = state.indexes.saturating_sub(1);
    }
}

impl DistIndex {
    /// Creates an empty distributed index (collective), as [`Index::new`](crate::Index::new) on each
    /// rank's `context`: `descriptor`, `dim`, `metric` and `options` the same on every rank.
    /// Errors: `InvalidArgument` (a bad descriptor or dim, a root the communicator does not have,
    /// MPI finalised), `Unsupported`, `Remote` (another rank failed).
    pub fn new(
        context: &Context,
        comm: MpiComm,
        descriptor: &str,
        dim: usize,
        metric: Metric,
        options: &DistOptions,
    ) -> Result<DistIndex> {
        // A descriptor or dim refused here goes to the library as one it refuses too (empty, -1),
        // so that the ranks fail together (see `refuse`).
        let mut refused = None;
        let c_descriptor = c_string("descriptor", descriptor).unwrap_or_else(|e| {
            refused = Some(e);
            CString::default()
        });
        let c_dim = to_i64("dim", dim).unwrap_or_else(|e| {
            refused.get_or_insert(e);
            -1
        });
        let c_options = options.to_raw();
        DistIndex::open(context, comm, dim, options.root, refused, |raw| {
            // SAFETY: a live context; a communicator the caller vouched for (MpiComm); a
            // NUL-terminated descriptor; valid options and output.
            unsafe {
                sys::qv_dist_index_create(
                    context.as_raw(),
                    comm.0,
                    c_descriptor.as_ptr(),
                    c_dim,
                    metric.code(),
                    &c_options,
                    raw,
                )
            }
        })
    }

    /// Loads what [`DistIndex::save`] wrote under `prefix` (collective), on a communicator of as
    /// many ranks as saved it (else `InvalidArgument`), each shard onto its rank's `context`.
    /// Errors: `Io`, `CorruptData`, `InvalidArgument`, `Remote` (another rank failed).
    pub fn load(
        context: &Context,
        comm: MpiComm,
        prefix: impl AsRef<Path>,
        options: &DistOptions,
    ) -> Result<DistIndex> {
        let prefix = prefix.as_ref();
        let (c_prefix, refused) = match c_path(prefix) {
            Ok(p) => (p, None),
            Err(e) => (
                CString::from_vec_with_nul(REFUSED_PREFIX.to_vec()).unwrap_or_default(),
                Some(e),
            ),
        };
        let c_options = options.to_raw();
        let dim = if refused.is_none() {
            manifest_dim(prefix)
        } else {
            0
        };
        DistIndex::open(context, comm, dim, options.root, refused, |raw| {
            // SAFETY: as in `new`, with a NUL-terminated prefix.
            unsafe {
                sys::qv_dist_index_load(
                    context.as_raw(),
                    comm.0,
                    c_prefix.as_ptr(),
                    &c_options,
                    raw,
                )
            }
        })
    }

    /// Makes the index with `create` and wraps it; then learns this rank and the size (`info`).
    fn open(
        context: &Context,
        comm: MpiComm,
        dim: usize,
        root: usize,
        refused: Option<Error>,
        create: impl FnOnce(*mut *mut sys::qv_dist_index_t) -> sys::qv_status_t,
    ) -> Result<DistIndex> {
        if comm.0.is_null() {
            return Err(Error::invalid_argument("comm is NULL"));
        }
        let (result, raw) = {
            let mut state = mpi();
            if state.finalized {
                return Err(finalized_error());
            }
            let mut raw = ptr::null_mut();
            let result = check_dist(create(&mut raw));
            if !raw.is_null() {
                state.indexes += 1;
            }
            (result, raw)
        };
        // Owned from here on: an error below drops (frees) it, as every rank does.
        let index = NonNull::new(raw).map(|raw| DistIndex {
            raw,
            dim,
            rank: 0,
            size: 1,
            root,
            context: context.clone(),
        });
        if let Some(error) = refused {
            return Err(error);
        }
        result?;
        let mut index = index.ok_or_else(|| {
            Error::new(
                Status::Internal,
                "qv_dist_index_create or _load returned NULL",
            )
        })?;
        let info = index.info()?;
        index.rank = info.rank;
        index.size = info.size;
        Ok(index)
    }

    /// The vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// This process's rank in the index's communicator.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The root rank: the one whose queries are searched and which receives the results.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Whether this rank is the root.
    pub fn is_root(&self) -> bool {
        self.rank == self.root
    }

    /// This rank's context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Trains on the union of every rank's rows of `x` (`n x dim` each, n >= 0), gathered to rank
    /// 0, which trains and gives every rank the model. Collective.
    pub fn train(&mut self, x: &[f32]) -> Result<()> {
        let raw = self.raw.as_ptr();
        match rows("x", x.len(), self.dim) {
            // SAFETY: exclusive (&mut self); x holds n x dim floats, read during the call.
            Ok(n) => collective(|| unsafe { sys::qv_dist_index_train(raw, n, x.as_ptr()) }),
            // SAFETY: n = -1 is refused without reading x.
            Err(e) => refuse(e, || unsafe {
                sys::qv_dist_index_train(raw, -1, ptr::null())
            }),
        }
    }

    /// Adds this rank's rows of `x` (`n x dim`, n >= 0), numbered consecutively after the largest
    /// id the index has held, rank 0's rows first; each goes to the rank owning its id. Every rank
    /// adding rows must use `add` (or every one `add_with_ids`). Collective; on error nothing is added.
    pub fn add(&mut self, x: &[f32]) -> Result<()> {
        self.add_impl(x, None)
    }

    /// Adds this rank's rows of `x` with global ids (>= 0, unique over every rank, not in the index),
    /// one per row. Collective; on error nothing is added.
    pub fn add_with_ids(&mut self, x: &[f32], ids: &[i64]) -> Result<()> {
        self.add_impl(x, Some(ids))
    }

    fn add_impl(&mut self, x: &[f32], ids: Option<&[i64]>) -> Result<()> {
        let raw = self.raw.as_ptr();
        let checked = rows("x", x.len(), self.dim).and_then(|n| match ids {
            Some(ids) if ids.len() as i64 != n => Err(Error::invalid_argument(format!(
                "ids has {} entries for {n} vectors",
                ids.len()
            ))),
            _ => Ok(n),
        });
        let c_ids = ids.map_or(ptr::null(), <[i64]>::as_ptr);
        match checked {
            // SAFETY: exclusive; x holds n x dim floats and ids (if any) n entries, read during the
            // call; NULL ids means consecutive numbering.
            Ok(n) => collective(|| unsafe { sys::qv_dist_index_add(raw, n, x.as_ptr(), c_ids) }),
            // SAFETY: n = -1 is refused without reading x or ids.
            Err(e) => refuse(e, || unsafe {
                sys::qv_dist_index_add(raw, -1, ptr::null(), ptr::null())
            }),
        }
    }

    /// The `k` nearest neighbours (1 ..= [`MAX_K`](crate::MAX_K)) over every shard of each row of
    /// the root's `queries`, merged on the root: `Some` there, `None` on the other ranks, whose
    /// `queries`, `k` and `params` are ignored (pass `&[]`). The root's `params` (filter of global
    /// ids, nprobe, ...) apply on every shard. Collective.
    pub fn search(
        &self,
        queries: &[f32],
        k: usize,
        params: &SearchParams<'_>,
    ) -> Result<Option<Neighbors>> {
        let raw = self.raw.as_ptr();
        if !self.is_root() {
            // SAFETY: other ranks' nq, queries, k, params and outputs are ignored; 0 and NULL are
            // allowed.
            collective(|| unsafe {
                sys::qv_dist_index_search(
                    raw,
                    0,
                    ptr::null(),
                    0,
                    ptr::null(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            })?;
            return Ok(None);
        }
        let checked = (|| {
            let nq = rows("queries", queries.len(), self.dim)?;
            let c_k = k_value(k)?;
            Ok((nq, c_k, output_len(nq, c_k)?, params.to_raw()?))
        })();
        match checked {
            Ok((nq, c_k, len, c_params)) => {
                let mut distances = vec![0f32; len];
                let mut ids = vec![0i64; len];
                // SAFETY: shared access (the index is not Sync: no other call runs on it); queries
                // holds nq x dim floats; both outputs nq x k entries; c_params' filter points into
                // `params`, borrowed for the call.
                collective(|| unsafe {
                    sys::qv_dist_index_search(
                        raw,
                        nq,
                        queries.as_ptr(),
                        c_k,
                        &c_params,
                        distances.as_mut_ptr(),
                        ids.as_mut_ptr(),
                    )
                })?;
                Ok(Some(Neighbors::new(nq as usize, k, distances, ids)))
            }
            // SAFETY: nq = -1 on the root is refused without reading anything.
            Err(e) => refuse(e, || unsafe {
                sys::qv_dist_index_search(
                    raw,
                    -1,
                    ptr::null(),
                    0,
                    ptr::null(),
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            }),
        }
    }

    /// Every vector within `radius` (in the metric's units, as
    /// [`Index::range_search`](crate::Index::range_search)) over every shard of each row of the
    /// root's `queries`, merged on the root: `Some` there, `None` elsewhere (other ranks' arguments
    /// are ignored). Collective.
    pub fn range_search(
        &self,
        queries: &[f32],
        radius: f32,
        params: &SearchParams<'_>,
    ) -> Result<Option<RangeResult>> {
        let raw = self.raw.as_ptr();
        let mut out = ptr::null_mut();
        if !self.is_root() {
            // SAFETY: other ranks' nq, queries and params are ignored; out is a valid output.
            collective(|| unsafe {
                sys::qv_dist_index_range_search(raw, 0, ptr::null(), radius, ptr::null(), &mut out)
            })?;
            if !out.is_null() {
                // Not expected off the root (the header says NULL); owned and freed all the same.
                RangeResult::from_raw(non_null(out, "qv_dist_index_range_search")?)?;
            }
            return Ok(None);
        }
        let checked = (|| Ok((rows("queries", queries.len(), self.dim)?, params.to_raw()?)))();
        match checked {
            Ok((nq, c_params)) => {
                // SAFETY: queries holds nq x dim floats; out is a valid output; the filter points
                // into `params`, borrowed for the call.
                collective(|| unsafe {
                    sys::qv_dist_index_range_search(
                        raw,
                        nq,
                        queries.as_ptr(),
                        radius,
                        &c_params,
                        &mut out,
                    )
                })?;
                let out = non_null(out, "qv_dist_index_range_search")?;
                Ok(Some(RangeResult::from_raw(out)?))
            }
            // SAFETY: nq = -1 on the root is refused without reading anything.
            Err(e) => refuse(e, || unsafe {
                sys::qv_dist_index_range_search(raw, -1, ptr::null(), radius, ptr::null(), &mut out)
            }),
        }
    }

    /// Removes the vectors with the given global ids, wherever they live (each rank may name any
    /// ids; ids not in the index are ignored). Returns how many were removed over all ranks.
    /// Collective.
    pub fn remove(&mut self, ids: &[i64]) -> Result<usize> {
        let raw = self.raw.as_ptr();
        let mut removed = 0i64;
        match to_i64("ids", ids.len()) {
            // SAFETY: exclusive; ids holds n entries; removed is a valid output.
            Ok(n) => collective(|| unsafe {
                sys::qv_dist_index_remove(raw, n, ids.as_ptr(), &mut removed)
            })?,
            // SAFETY: n = -1 is refused without reading ids.
            Err(e) => refuse(e, || unsafe {
                sys::qv_dist_index_remove(raw, -1, ptr::null(), ptr::null_mut())
            })?,
        }
        Ok(usize::try_from(removed).unwrap_or(0))
    }

    /// This rank, the number of ranks, this rank's vector count and the total over all ranks.
    /// Collective (the total is a reduction).
    pub fn info(&self) -> Result<DistIndexInfo> {
        let (mut rank, mut size, mut local, mut total) = (0i32, 0i32, 0i64, 0i64);
        // SAFETY: a live index; all outputs are valid for writes.
        collective(|| unsafe {
            sys::qv_dist_index_info(
                self.raw.as_ptr(),
                &mut rank,
                &mut size,
                &mut local,
                &mut total,
            )
        })?;
        Ok(DistIndexInfo {
            rank: usize::try_from(rank).unwrap_or(0),
            size: usize::try_from(size).unwrap_or(0),
            local_count: usize::try_from(local).unwrap_or(0),
            total_count: usize::try_from(total).unwrap_or(0),
        })
    }

    /// Saves the index (collective): each rank r writes its shard to `<prefix>.<r>-of-<size>.qvi`,
    /// then rank 0 the manifest `<prefix>.manifest`, once every shard is written. The directory must
    /// be one every rank can write (and, for [`DistIndex::load`], read), such as a shared one.
    pub fn save(&self, prefix: impl AsRef<Path>) -> Result<()> {
        let raw = self.raw.as_ptr();
        match c_path(prefix.as_ref()) {
            // SAFETY: a live index; a NUL-terminated prefix.
            Ok(c_prefix) => {
                collective(|| unsafe { sys::qv_dist_index_save(raw, c_prefix.as_ptr()) })
            }
            // SAFETY: as above; a prefix no rank can write, so that the save fails everywhere.
            Err(e) => refuse(e, || unsafe {
                sys::qv_dist_index_save(raw, REFUSED_PREFIX.as_ptr().cast())
            }),
        }
    }

    /// The C handle, for calls through `quiver_sys`. Valid while this index lives; do not free it,
    /// and keep to the header's rules (collective calls; one thread at a time).
    pub fn as_raw(&self) -> *mut sys::qv_dist_index_t {
        self.raw.as_ptr()
    }
}

impl fmt::Debug for DistIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistIndex")
            .field("dim", &self.dim)
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("root", &self.root)
            .finish()
    }
}

/// The dimension a saved index's manifest (`<prefix>.manifest`, line `dim <n>`) records, which
/// `qv_dist_index_info` does not report; 0 where it cannot be read, and vector calls then fail
/// (together, on every rank: see `refuse`).
fn manifest_dim(prefix: &Path) -> usize {
    let mut path = OsString::from(prefix.as_os_str());
    path.push(".manifest");
    std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| {
            text.lines()
                .filter_map(|line| line.strip_prefix("dim "))
                .find_map(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}
