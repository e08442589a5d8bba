//! quiver: similarity search over dense float vectors on CPUs and NVIDIA GPUs.
//!
//! This crate is the safe face of quiver's C API (`include/quiver/quiver.h`; raw declarations in
//! [`sys`], the `quiver-sys` crate). Vectors are row-major `f32` slices, `dim` floats per row;
//! results come back as `Vec`s. Indexes of [`Metric::Edit`] hold byte strings instead
//! ([`Index::add_strings`], [`Index::search_strings`], [`Index::range_search_strings`]). Every
//! fallible call returns `Result<T, `[`Error`]`>`, whose [`Status`] and message come from the
//! library. A [`Context`] says where work runs (CPU threads, or one or several CUDA devices:
//! [`ContextBuilder::devices`]); an [`Index`] keeps its context alive, searches through `&self`
//! (share it between threads with an `Arc`) and changes through `&mut self`.
//!
//! # Quick start
//!
//! ```
//! use quiver::{Context, Index, Metric, SearchParams};
//!
//! fn main() -> Result<(), quiver::Error> {
//!     // Where work runs: a CUDA device if one is usable, else the CPU.
//!     let ctx = Context::new()?;
//!
//!     // 1000 vectors of dimension 16, row-major, in an exact ("Flat") index.
//!     let dim = 16;
//!     let data: Vec<f32> = (0..1000 * dim).map(|i| (i as f32 * 0.618).sin()).collect();
//!     let mut index = Index::new(&ctx, "Flat", dim, Metric::L2)?;
//!     index.add(&data)?;
//!
//!     // The 5 nearest neighbours of the first two vectors, closest first.
//!     let found = index.search(&data[..2 * dim], 5, &SearchParams::default())?;
//!     for (query, hits) in found.iter().enumerate() {
//!         assert_eq!(hits.ids[0], query as i64); // each vector is its own nearest neighbour
//!     }
//!
//!     // Every vector within squared distance 0.5 of the first one.
//!     let near = index.range_search(&data[..dim], 0.5, &SearchParams::default())?;
//!     assert_eq!(near.get(0).unwrap().ids[0], 0);
//!
//!     // Save and load, here through memory.
//!     let bytes = index.save_to_buffer()?;
//!     let loaded = Index::load_from_buffer(&ctx, &bytes)?;
//!     assert_eq!(loaded.info()?.count, 1000);
//!     Ok(())
//! }
//! ```
//!
//! # Distributed indexes (feature `mpi`)
//!
//! With the cargo feature `mpi`, `DistIndex` spreads one index over the processes of an MPI
//! communicator (`MpiComm::world()`, or the program's own through `MpiComm::from_raw`), through
//! libquiver_mpi (`include/quiver/quiver_mpi.h`). Its calls are collective: every rank makes them,
//! in the same order. `finalize()` ends MPI once the last index is dropped.
//!
//! # Linking
//!
//! `quiver-sys` links the static library `libquiver.a`: from the cmake build directory named by the
//! environment variable `QUIVER_LIB_DIR`, else built from this repository with cmake. With the
//! feature `mpi` it links the shared `libquiver_mpi.so` and `libquiver.so` of that directory, and
//! Open MPI's `libmpi`, instead. See the binding's README.
#![warn(missing_docs)]

mod context;
#[cfg(feature = "mpi")]
mod dist;
mod error;
mod index;
mod kmeans;
mod knn;
mod knn_graph;
mod metric;
mod neighbors;
mod progress;
mod range_result;
mod search_params;
mod shape;
mod strings;

pub use context::{cuda_device_count, Context, ContextBuilder, Device, DeviceKind};
#[cfg(feature = "mpi")]
pub use dist::{finalize, DistIndex, DistIndexInfo, DistOptions, MpiComm};
pub use error::{Error, Result, Status};
pub use index::{Index, IndexInfo, IndexKind};
pub use kmeans::{kmeans, kmeans_with_progress, Kmeans, KmeansParams};
pub use knn::knn;
pub use knn_graph::{knn_graph, knn_graph_with_progress, KnnGraph, KnnGraphMethod, KnnGraphParams};
pub use metric::{ComputeMode, Metric};
pub use neighbors::{Hits, Neighbors};
pub use range_result::RangeResult;
pub use search_params::{
    GraphVisited, SearchParams, GRAPH_MAX_PROBES, GRAPH_MAX_WARPS_PER_QUERY, NPROBE_DEFAULT,
};

/// The raw C declarations (`quiver-sys`), for what this crate does not wrap.
pub use quiver_sys as sys;

/// The largest `k` the k-nearest-neighbour searches accept (`QV_MAX_K`).
pub const MAX_K: usize = sys::QV_MAX_K as usize;

/// The most CUDA devices one context holds (`QV_MAX_DEVICES`): the longest slice
/// [`ContextBuilder::devices`] accepts.
pub const MAX_DEVICES: usize = sys::QV_MAX_DEVICES as usize;

/// The C ABI version this crate was built against (`QV_ABI_VERSION`).
pub const ABI_VERSION: u32 = sys::QV_ABI_VERSION;

/// A library version: major, minor, patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Incompatible changes.
    pub major: u32,
    /// Additions.
    pub minor: u32,
    /// Fixes.
    pub patch: u32,
}

impl Version {
    /// `major * 10000 + minor * 100 + patch`, as `QV_VERSION_NUMBER`.
    pub fn number(self) -> u32 {
        self.major * 10000 + self.minor * 100 + self.patch
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The version of the library actually linked (`qv_version`).
pub fn version() -> Version {
    // SAFETY: no arguments, never fails.
    let n = unsafe { sys::qv_version() };
    Version {
        major: n / 10000,
        minor: n / 100 % 100,
        patch: n % 100,
    }
}

/// The version of the library actually linked, as "MAJOR.MINOR.PATCH" (`qv_version_string`).
pub fn version_string() -> &'static str {
    // SAFETY: no arguments; the header says the string is static.
    unsafe { error::static_str(sys::qv_version_string()) }.unwrap_or("")
}

/// The C ABI version of the library actually linked (`qv_abi_version`); equal to [`ABI_VERSION`]
/// for a usable library.
pub fn abi_version() -> u32 {
    // SAFETY: no arguments, never fails.
    unsafe { sys::qv_abi_version() }
}
