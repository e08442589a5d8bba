//! Helpers shared by the integration tests: contexts, deterministic data, brute-force references.
#![allow(dead_code)]

use quiver::{Context, DeviceKind};

/// The device the suites run on: `QUIVER_TEST_DEVICE` = `cpu` (default), `auto` or `cuda`.
pub fn device_kind() -> DeviceKind {
    match std::env::var("QUIVER_TEST_DEVICE").as_deref() {
        Ok("cuda") => DeviceKind::Cuda,
        Ok("auto") => DeviceKind::Auto,
        _ => DeviceKind::Cpu,
    }
}

/// A context on the test device with two CPU threads.
pub fn context() -> Context {
    Context::builder()
        .device(device_kind())
        .cpu_threads(2)
        .build()
        .expect("context")
}

/// `n x dim` floats, uniform in [0, 1), the same for a given seed.
pub fn data(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n * dim)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

/// Squared L2 distance.
pub fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Inner product.
pub fn ip(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The ids of the k nearest rows of `base` to `query` by squared L2, among `allowed` ids
/// (row numbers, or `ids[row]` when given), closest first.
pub fn brute_force(
    base: &[f32],
    dim: usize,
    ids: Option<&[i64]>,
    query: &[f32],
    k: usize,
    allowed: impl Fn(i64) -> bool,
) -> Vec<(i64, f32)> {
    let mut all: Vec<(i64, f32)> = base
        .chunks(dim)
        .enumerate()
        .map(|(row, v)| (ids.map_or(row as i64, |ids| ids[row]), l2(v, query)))
        .filter(|&(id, _)| allowed(id))
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    all.truncate(k);
    all
}

/// Whether two floats agree to a relative (or, near 0, absolute) tolerance.
pub fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1.0)
}

/// A file path in the temporary directory, unique to this process and `name`; removed on drop.
pub struct TempPath(pub std::path::PathBuf);

impl TempPath {
    pub fn new(name: &str) -> TempPath {
        TempPath(std::env::temp_dir().join(format!("quiver-rust-{}-{name}", std::process::id())))
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
