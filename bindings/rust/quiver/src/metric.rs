//! `Metric`: how closeness is measured.

use crate::error::{Error, Result, Status};
use quiver_sys as sys;

/// The distance or similarity of a search. Radii of range searches are in the metric's own units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Metric {
    /// Squared Euclidean distance; smaller is closer. Distances and radii are squared.
    L2,
    /// Inner product `<x, y>`; larger is closer.
    InnerProduct,
    /// Cosine similarity `<x, y> / (|x| |y|)` in [-1, 1]; larger is closer. Zero vectors are rejected.
    Cosine,
}

impl Metric {
    /// The `qv_metric_t` code.
    pub fn code(self) -> sys::qv_metric_t {
        match self {
            Metric::L2 => sys::QV_METRIC_L2,
            Metric::InnerProduct => sys::QV_METRIC_INNER_PRODUCT,
            Metric::Cosine => sys::QV_METRIC_COSINE,
        }
    }

    /// The metric of a `qv_metric_t` code; an unknown code is a `Status::Internal` error.
    pub fn from_code(code: sys::qv_metric_t) -> Result<Metric> {
        match code {
            sys::QV_METRIC_L2 => Ok(Metric::L2),
            sys::QV_METRIC_INNER_PRODUCT => Ok(Metric::InnerProduct),
            sys::QV_METRIC_COSINE => Ok(Metric::Cosine),
            _ => Err(Error::new(
                Status::Internal,
                format!("unknown qv_metric_t {code}"),
            )),
        }
    }

    /// Whether a larger value is closer (inner product, cosine) rather than a smaller one (L2).
    pub fn larger_is_closer(self) -> bool {
        !matches!(self, Metric::L2)
    }
}

/// The arithmetic of the distance GEMM of an exact search on a CUDA device. The fast modes select an
/// enlarged candidate set with the cheaper GEMM and re-rank it with exact float32 distances (recall@k
/// >= 0.999 on the benchmark data sets). The CPU always computes exactly and ignores the mode.
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
