//! Progress callbacks (`qv_progress_fn_t`): a Rust closure behind the C function pointer and user
//! data, with panics kept from unwinding through the library's frames.

use std::any::Any;
use std::os::raw::{c_int, c_void};
use std::panic::{self, AssertUnwindSafe};

use quiver_sys as sys;

/// Runs `call` with the C function and user data that call `progress`, valid for the whole of
/// `call`; a panic of `progress` (which cancels the library's call) is resumed once `call` returns.
pub(crate) fn with_callback<F, R>(
    progress: F,
    call: impl FnOnce(sys::qv_progress_fn_t, *mut c_void) -> R,
) -> R
where
    F: FnMut(f64) -> bool,
{
    let mut state = ProgressState {
        callback: progress,
        panic: None,
    };
    let result = call(
        Some(trampoline::<F>),
        &mut state as *mut ProgressState<F> as *mut c_void,
    );
    if let Some(payload) = state.panic.take() {
        panic::resume_unwind(payload);
    }
    result
}

/// What the C callback's user data points at while a call runs.
struct ProgressState<F> {
    callback: F,
    panic: Option<Box<dyn Any + Send>>,
}

// Called by the library on the thread of the call it was given to, while the state is borrowed by
// that call.
unsafe extern "C" fn trampoline<F: FnMut(f64) -> bool>(fraction: f64, user: *mut c_void) -> c_int {
    // SAFETY: user is the ProgressState<F> of with_callback, alive for the whole call, and the library
    // calls this on that call's thread only, never twice at once.
    let state = unsafe { &mut *(user as *mut ProgressState<F>) };
    if state.panic.is_some() {
        return 1;
    }
    // A panic must not unwind through the library's frames.
    match panic::catch_unwind(AssertUnwindSafe(|| (state.callback)(fraction))) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(payload) => {
            state.panic = Some(payload);
            1
        }
    }
}
