//! `Metric`: how closeness is measured.

use crate::error::{Error, Result, Status};
use quiver_sys as sys;

/// The distance or similarity of a search. Radii of range searches are in the metric's own units.
///
/// `L2`, `InnerProduct` and `Cosine` serve every index kind; `L1` and `LInf` only `"Flat"` and the
/// metric-space kinds `"LC<b>"` and `"SSS<alpha>"`; `Edit` is the metric of indexes of byte strings
/// (same kinds, dimension 0, [`Index::add_strings`](crate::Index::add_strings) and the `_strings`
/// searches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Metric {
    /// Squared Euclidean distance; smaller is closer. Distances and radii are squared.
    L2,
    /// Inner product `<x, y>`; larger is closer.
    InnerProduct,
    /// Cosine similarity `<x, y> / (|x| |y|)` in [-1, 1]; larger is closer. Zero vectors are rejected.
    Cosine,
    /// L1 (Manhattan) distance `sum |x_i - y_i|`; smaller is closer.
    L1,
    /// L-infinity (Chebyshev) distance `max |x_i - y_i|`; smaller is closer.
    LInf,
    /// Edit (Levenshtein) distance between byte strings: the fewest single-byte insertions,
    /// deletions and substitutions; a whole number, smaller is closer.
    Edit,
}

impl Metric {
    /// The `qv_metric_t` code.
    pub fn code(self) -> sys::qv_metric_t {
        match self {
            Metric::L2 => sys::QV_METRIC_L2,
            Metric::InnerProduct => sys::QV_METRIC_INNER_PRODUCT,
            Metric::Cosine => sys::QV_METRIC_COSINE,
            Metric::L1 => sys::QV_METRIC_L1,
            Metric::LInf => sys::QV_METRIC_LINF,
            Metric::Edit => sys::QV_METRIC_EDIT,
        }
    }

    /// The metric of a `qv_metric_t` code; an unknown code is a `Status::Internal` error.
    pub fn from_code(code: sys::qv_metric_t) -> Result<Metric> {
        match code {
            sys::QV_METRIC_L2 => Ok(Metric::L2),
            sys::QV_METRIC_INNER_PRODUCT => Ok(Metric::InnerProduct),
            sys::QV_METRIC_COSINE => Ok(Metric::Cosine),
            sys::QV_METRIC_L1 => Ok(Metric::L1),
            sys::QV_METRIC_LINF => Ok(Metric::LInf),
            sys::QV_METRIC_EDIT => Ok(Metric::Edit),
            _ => Err(Error::new(
                Status::Internal,
                format!("unknown qv_metric_t {code}"),
            )),
        }
    }

    /// Whether a larger value is closer (inner product, cosine) rather than a smaller one (the
    /// distances: L2, L1, L-infinity, edit).
    pub fn larger_is_closer(self) -> bool {
        matches!(self, Metric::InnerProduct | Metric::Cosine)
    }

    /// Whether an index of this metric holds byte strings (edit distance) rather than vectors.
    pub fn holds_strings(self) -> bool {
        matches!(self, Metric::Edit)
    }
}

/// The arithmetic of a search on a CUDA device. Exact search: the fast modes select an enlarged
/// candidate set with the cheaper GEMM and re-rank it with exact float32 distances (recall@k >= 0.999
/// on the benchmark data sets). Graph indexes: `Fp16` and `Bf16` walk a 16-bit copy of the vectors
/// and re-rank in float32. The CPU always computes exactly and ignores the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ComputeMode {
    /// float32 GEMM (the default).
    #[default]
    Fp32,
    /// TF32 tensor cores on the float32 data.
    Tf32,
    /// float16 copies of the vectors (values must fit float16's range).
    Fp16,
    /// bfloat16 copies of the vectors.
    Bf16,
}

impl ComputeMode {
    /// The `qv_compute_mode_t` code.
    pub fn code(self) -> sys::qv_compute_mode_t {
        match self {
            ComputeMode::Fp32 => sys::QV_COMPUTE_FP32,
            ComputeMode::Tf32 => sys::QV_COMPUTE_TF32,
            ComputeMode::Fp16 => sys::QV_COMPUTE_FP16,
            ComputeMode::Bf16 => sys::QV_COMPUTE_BF16,
        }
    }
}
