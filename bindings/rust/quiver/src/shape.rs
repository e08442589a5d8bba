//! Checks of slice shapes and size conversions, done in Rust before any C call.

use std::ffi::CString;
use std::path::Path;

use crate::error::{Error, Result};
use quiver_sys as sys;

/// The number of `dim`-wide rows in `len` floats of the argument `what`.
pub(crate) fn rows(what: &str, len: usize, dim: usize) -> Result<i64> {
    if dim == 0 {
        return Err(Error::invalid_argument("dim must be at least 1"));
    }
    if len % dim != 0 {
        return Err(Error::invalid_argument(format!(
            "{what} has {len} floats, not a multiple of dim = {dim}"
        )));
    }
    to_i64(what, len / dim)
}

pub(crate) fn to_i64(what: &str, n: usize) -> Result<i64> {
    i64::try_from(n).map_err(|_| Error::invalid_argument(format!("{what} = {n} is too large")))
}

/// `k` as the C API takes it; above `QV_MAX_K` is refused here, before outputs are allocated.
/// (0 goes through: the library names the error.)
pub(crate) fn k_value(k: usize) -> Result<u32> {
    if k > sys::QV_MAX_K as usize {
        return Err(Error::invalid_argument(format!(
            "k = {k} is above QV_MAX_K = {}",
            sys::QV_MAX_K
        )));
    }
    Ok(k as u32)
}

/// The length of an `nq x k` output.
pub(crate) fn output_len(nq: i64, k: u32) -> Result<usize> {
    usize::try_from(nq)
        .ok()
        .and_then(|nq| nq.checked_mul(k as usize))
        .ok_or_else(|| Error::invalid_argument(format!("nq x k = {nq} x {k} overflows")))
}

/// A caller's output slice must hold exactly `expected` entries.
pub(crate) fn output_slice(what: &str, len: usize, expected: usize) -> Result<()> {
    if len != expected {
        return Err(Error::invalid_argument(format!(
            "{what} has {len} entries; nq x k = {expected} are written"
        )));
    }
    Ok(())
}

pub(crate) fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid_argument(format!("{what} contains a NUL byte")))
}

pub(crate) fn c_path(path: &Path) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::invalid_argument("path is not valid UTF-8"))?
        .as_bytes()
        .to_vec();
    CString::new(bytes).map_err(|_| Error::invalid_argument("path contains a NUL byte"))
}
