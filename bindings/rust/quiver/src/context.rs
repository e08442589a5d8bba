//! `Context`: where work runs (CPU threads, a CUDA device) and the resources it needs.

use std::fmt;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::error::{check, Error, Result, Status};
use quiver_sys as sys;

/// The kind of device a context runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum DeviceKind {
    /// A CUDA device if one is usable, else the CPU (with the same results).
    #[default]
    Auto,
    /// The CPU, with the context's own thread pool.
    Cpu,
    /// A CUDA device.
    Cuda,
}

impl DeviceKind {
    /// The `qv_device_kind_t` code.
    pub fn code(self) -> sys::qv_device_kind_t {
        match self {
            DeviceKind::Auto => sys::QV_DEVICE_AUTO,
            DeviceKind::Cpu => sys::QV_DEVICE_CPU,
            DeviceKind::Cuda => sys::QV_DEVICE_CUDA,
        }
    }

    /// The kind of a `qv_device_kind_t` code; an unknown code is a `Status::Internal` error.
    pub fn from_code(code: sys::qv_device_kind_t) -> Result<DeviceKind> {
        match code {
            sys::QV_DEVICE_AUTO => Ok(DeviceKind::Auto),
            sys::QV_DEVICE_CPU => Ok(DeviceKind::Cpu),
            sys::QV_DEVICE_CUDA => Ok(DeviceKind::Cuda),
            _ => Err(Error::new(
                Status::Internal,
                format!("unknown qv_device_kind_t {code}"),
            )),
        }
    }
}

/// A resolved device: the CPU, or a CUDA device and its ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// `DeviceKind::Cpu` or `DeviceKind::Cuda` (never `Auto`).
    pub kind: DeviceKind,
    /// The CUDA ordinal; `None` on the CPU.
    pub cuda_id: Option<u32>,
}

impl Device {
    pub(crate) fn from_codes(kind: sys::qv_device_kind_t, id: i32) -> Result<Device> {
        Ok(Device {
            kind: DeviceKind::from_code(kind)?,
            cuda_id: u32::try_from(id).ok(),
        })
    }
}

/// Where work runs: a CPU thread pool or a CUDA device, with its streams and memory pool.
///
/// Cheap to clone (clones share one C context) and usable from any number of threads. Every
/// [`Index`](crate::Index) keeps its context alive, so a context may be dropped before its indexes.
#[derive(Clone)]
pub struct Context {
    inner: Arc<ContextInner>,
}

/// The owner of the C handle; freed when the last `Context` clone and the last index are gone.
struct ContextInner {
    raw: NonNull<sys::qv_context_t>,
}

// SAFETY: quiver.h, "Thread safety": "a context may be used from any number of threads", and
// qv_context_create / qv_index_create / qv_knn are documented thread-safe. The handle has no thread
// affinity, so it may also be freed on any thread.
unsafe impl Send for ContextInner {}
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        // SAFETY: the handle came from qv_context_create and is released once. quiver.h,
        // qv_context_free: "No call may be running on the context itself ... at the same time";
        // every such call goes through a `&Context`, which holds this Arc, so none can run now.
        // Indexes hold the Arc as well (the C library also keeps a context alive for its indexes).
        // qv_context_free never fails or throws.
        unsafe { sys::qv_context_free(self.raw.as_ptr()) }
    }
}

impl Context {
    /// A context with the defaults: `DeviceKind::Auto` (a CUDA device if usable, else the CPU), CUDA
    /// device 0, one CPU thread per core.
    pub fn new() -> Result<Context> {
        ContextBuilder::default().build()
    }

    /// Options for a new context.
    pub fn builder() -> ContextBuilder {
        ContextBuilder::default()
    }

    /// The device this context resolved to (`Auto` becomes `Cpu` or `Cuda`).
    pub fn device(&self) -> Result<Device> {
        let mut kind = sys::QV_DEVICE_CPU;
        let mut id = -1;
        // SAFETY: a live context; both outputs are valid for writes.
        check(unsafe { sys::qv_context_device(self.inner.raw.as_ptr(), &mut kind, &mut id) })?;
        Device::from_codes(kind, id)
    }

    /// The C handle, for calls through `quiver_sys`. It stays valid while this context (or an index
    /// made from it) lives; do not free it.
    pub fn as_raw(&self) -> *mut sys::qv_context_t {
        self.inner.raw.as_ptr()
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("raw", &self.inner.raw)
            .finish()
    }
}

/// Options of a new [`Context`]: device kind, CUDA device ordinal, CPU threads.
///
/// ```
/// # fn main() -> Result<(), quiver::Error> {
/// let ctx = quiver::Context::builder().device(quiver::DeviceKind::Cpu).cpu_threads(4).build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ContextBuilder {
    device: DeviceKind,
    device_id: u32,
    cpu_threads: usize,
}

impl ContextBuilder {
    /// The device kind; default `DeviceKind::Auto`.
    pub fn device(mut self, kind: DeviceKind) -> Self {
        self.device = kind;
        self
    }

    /// The CUDA device ordinal used by `Cuda` and `Auto`; default 0.
    pub fn device_id(mut self, id: u32) -> Self {
        self.device_id = id;
        self
    }

    /// Threads of the context's own CPU pool; 0 (default) is one per core. No process-wide OpenMP or
    /// BLAS setting is changed.
    pub fn cpu_threads(mut self, threads: usize) -> Self {
        self.cpu_threads = threads;
        self
    }

    /// Creates the context. Errors: `NoDevice` (`Cuda` asked for and no usable device, or a build
    /// without CUDA), `InvalidArgument`, `Cuda`, `OutOfHostMemory`.
    pub fn build(&self) -> Result<Context> {
        let device_id = i32::try_from(self.device_id).map_err(|_| {
            Error::invalid_argument(format!("device_id = {} is too large", self.device_id))
        })?;
        let cpu_threads = i32::try_from(self.cpu_threads).map_err(|_| {
            Error::invalid_argument(format!("cpu_threads = {} is too large", self.cpu_threads))
        })?;
        // SAFETY: qv_context_options_t is plain data; the all-zero value is valid and is overwritten
        // by qv_context_options_init.
        let mut options: sys::qv_context_options_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid, writable struct.
        check(unsafe { sys::qv_context_options_init(&mut options) })?;
        options.device = self.device.code();
        options.device_id = device_id;
        options.cpu_threads = cpu_threads;
        let mut raw = ptr::null_mut();
        // SAFETY: options initialised above; raw is a valid output.
        check(unsafe { sys::qv_context_create(&options, &mut raw) })?;
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::new(Status::Internal, "qv_context_create returned NULL"))?;
        Ok(Context {
            inner: Arc::new(ContextInner { raw }),
        })
    }
}

/// The number of usable CUDA devices: 0 on a build without CUDA or a machine without a GPU.
pub fn cuda_device_count() -> Result<usize> {
    let mut count = 0i32;
    // SAFETY: a valid output.
    check(unsafe { sys::qv_cuda_device_count(&mut count) })?;
    Ok(usize::try_from(count).unwrap_or(0))
}
