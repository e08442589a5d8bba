//! `Error` and `Status`: what a failed call returns.

use std::ffi::CStr;
use std::fmt;

use quiver_sys as sys;

/// The result of every fallible call of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A `qv_status_t` code: `Ok` or the reason a call failed.
///
/// An [`Error`] never carries `Status::Ok`. `Unknown` stands for a code this binding does not know
/// (a newer library); [`Error::code`] keeps the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// `QV_OK`: success.
    Ok = 0,
    /// `QV_ERR_INVALID_ARGUMENT`: a size out of range, NaN/Inf data, bad ids, a malformed descriptor...
    InvalidArgument = 1,
    /// `QV_ERR_OUT_OF_HOST_MEMORY`: a host allocation failed.
    OutOfHostMemory = 2,
    /// `QV_ERR_OUT_OF_DEVICE_MEMORY`: a GPU allocation failed; the index is intact.
    OutOfDeviceMemory = 3,
    /// `QV_ERR_CUDA`: the CUDA runtime or cuBLAS reported an error.
    Cuda = 4,
    /// `QV_ERR_NO_DEVICE`: a CUDA device was asked for and none is usable.
    NoDevice = 5,
    /// `QV_ERR_NOT_TRAINED`: the index needs [`Index::train`](crate::Index::train) first.
    NotTrained = 6,
    /// `QV_ERR_UNSUPPORTED`: a valid request this index kind, metric or build cannot do.
    Unsupported = 7,
    /// `QV_ERR_IO`: a file could not be opened, read, written or renamed.
    Io = 8,
    /// `QV_ERR_CORRUPT_DATA`: a saved index is truncated, damaged or not a quiver index.
    CorruptData = 9,
    /// `QV_ERR_VERSION_MISMATCH`: a saved index is in a format version this library does not read.
    VersionMismatch = 10,
    /// `QV_ERR_INTERNAL`: a bug in quiver; please report it with the message.
    Internal = 11,
    /// `QV_ERR_CANCELLED`: a progress callback asked the call to stop.
    Cancelled = 12,
    /// `QV_ERR_TOO_MANY_RESULTS`: a range search query found more hits than
    /// [`SearchParams::with_max_range_results`](crate::SearchParams::with_max_range_results) allows.
    TooManyResults = 13,
    /// `QV_ERR_REMOTE`: a distributed call (feature `mpi`, `DistIndex`) failed on another process,
    /// whose rank and message the error's message names, or a process did not answer in time.
    Remote = 14,
    /// A code this binding does not know.
    Unknown = -1,
}

impl Status {
    /// The status of a `qv_status_t` code.
    pub fn from_code(code: sys::qv_status_t) -> Status {
        match code {
            sys::QV_OK => Status::Ok,
            sys::QV_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::QV_ERR_OUT_OF_HOST_MEMORY => Status::OutOfHostMemory,
            sys::QV_ERR_OUT_OF_DEVICE_MEMORY => Status::OutOfDeviceMemory,
            sys::QV_ERR_CUDA => Status::Cuda,
            sys::QV_ERR_NO_DEVICE => Status::NoDevice,
            sys::QV_ERR_NOT_TRAINED => Status::NotTrained,
            sys::QV_ERR_UNSUPPORTED => Status::Unsupported,
            sys::QV_ERR_IO => Status::Io,
            sys::QV_ERR_CORRUPT_DATA => Status::CorruptData,
            sys::QV_ERR_VERSION_MISMATCH => Status::VersionMismatch,
            sys::QV_ERR_INTERNAL => Status::Internal,
            sys::QV_ERR_CANCELLED => Status::Cancelled,
            sys::QV_ERR_TOO_MANY_RESULTS => Status::TooManyResults,
            sys::QV_ERR_REMOTE => Status::Remote,
            _ => Status::Unknown,
        }
    }

    /// The `qv_status_t` code (-1 for `Unknown`).
    pub fn code(self) -> sys::qv_status_t {
        self as sys::qv_status_t
    }

    /// The C name of the code, e.g. `"QV_ERR_INVALID_ARGUMENT"` (`"QV_ERR_UNKNOWN"` for `Unknown`),
    /// as `qv_status_string` gives it.
    pub fn name(self) -> &'static str {
        // SAFETY: qv_status_string accepts any code and returns a static string, never NULL (the
        // header says so); the NULL check is only a guard.
        unsafe { static_str(sys::qv_status_string(self.code())) }.unwrap_or("QV_ERR_UNKNOWN")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed call: its status and the library's message (or, for arguments checked by this crate
/// before calling the library, this crate's message).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Error {
    /// Why the call failed; never `Status::Ok`.
    pub status: Status,
    /// What went wrong, copied from `qv_last_error_message` (`qv_dist_last_error_message` for the
    /// distributed calls) right after the failing call.
    pub message: String,
    code: sys::qv_status_t,
}

impl Error {
    /// The raw `qv_status_t` code (differs from `status.code()` only for `Status::Unknown`).
    pub fn code(&self) -> sys::qv_status_t {
        self.code
    }

    /// An error raised by this crate without calling the library.
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
            code: status.code(),
        }
    }

    /// `Status::InvalidArgument` raised by this crate without calling the library.
    pub(crate) fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(Status::InvalidArgument, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{}", Status::from_code(self.code).name())
        } else {
            write!(
                f,
                "{}: {}",
                Status::from_code(self.code).name(),
                self.message
            )
        }
    }
}

impl std::error::Error for Error {}

/// Turns a status into a `Result`, copying the thread's message on failure. Call it right after the
/// C call, on the same thread, before any other quiver call (which would replace the message).
pub(crate) fn check(code: sys::qv_status_t) -> Result<()> {
    if code == sys::QV_OK {
        return Ok(());
    }
    // SAFETY: qv_last_error_message takes no arguments and returns a NUL-terminated thread-local
    // string (never NULL, but checked) that stays valid until the next quiver call on this thread;
    // it is copied before any other call.
    let message = unsafe { copy_c_str(sys::qv_last_error_message()) };
    Err(Error {
        status: Status::from_code(code),
        message,
        code,
    })
}

/// As [`check`], for the `qv_dist_*` calls of libquiver_mpi, whose message is
/// `qv_dist_last_error_message` (`qv_last_error_message` keeps libquiver's own).
#[cfg(feature = "mpi")]
pub(crate) fn check_dist(code: sys::qv_status_t) -> Result<()> {
    if code == sys::QV_OK {
        return Ok(());
    }
    // SAFETY: qv_dist_last_error_message takes no arguments and returns a NUL-terminated
    // thread-local string (never NULL, but checked), copied before any other call.
    let message = unsafe { copy_c_str(sys::qv_dist_last_error_message()) };
    Err(Error {
        status: Status::from_code(code),
        message,
        code,
    })
}

/// Copies a C string, NULL giving "".
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for the duration of the call.
pub(crate) unsafe fn copy_c_str(p: *const std::os::raw::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A static C string as `&'static str` (None for NULL or invalid UTF-8).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that lives for the whole program.
pub(crate) unsafe fn static_str(p: *const std::os::raw::c_char) -> Option<&'static str> {
    if p.is_null() {
        None
    } else {
        CStr::from_ptr(p).to_str().ok()
    }
}
