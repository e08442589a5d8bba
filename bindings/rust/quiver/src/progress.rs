//! Progress callbacks (`qv_progress_fn_t`): a Rust closure behind the C function pointer and user
//! data, with panics kept from unwinding through the library's frames.

use std::any::Any;
use std::os::raw::{c_int, c_void};
use std::panic::{self, AssertUnwindSafe};

use quiver_sys as sys;

/// What the C callback's user data points at while a call runs.
pub(crate) struct ProgressState<F> {
    callback: F,
    panic: Option<Box<dyn Any + Send>>,
}

impl<F: FnMut(f64) -> bool> ProgressState<F> {
    pub(crate) fn new(callback: F) -> Self {
        ProgressState {
            callback,
            panic: None,
        }
    }

    /// The C function and user data that call this state's closure; valid while `self` is neither
    /// moved nor dropped.
    pub(crate) fn c_callback(&mut self) -> (sys::qv_progress_fn_t, *mut c_void) {
        (
            Some(trampoline::<F>),
            self as *mut ProgressState<F> as *mut c_void,
        )
    }

    /// Resumes a panic of the closure, once the library has returned.
    pub(crate) fn resume_panic(&mut self) {
        if let Some(payload) = self.panic.take() {
            panic::resume_unwind(payload);
        }
    }
}

// Called by the library on the thread of the call it was given to, while the state is borrowed by
// that call.
unsafe extern "C" fn trampoline<F: FnMut(f64) -> bool>(fraction: f64, user: *mut c_void) -> c_int {
    // SAFETY: user is the ProgressState<F> of c_callback, alive for the whole call, and the library
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
