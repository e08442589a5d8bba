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
