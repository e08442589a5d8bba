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

    /// The device this context resolved to (`Auto` becomes `Cpu` or `Cuda`); on a context of
    /// several CUDA devices, the first of them.
    pub fn device(&self) -> Result<Device> {
        let mut kind = sys::QV_DEVICE_CPU;
        let mut id = -1;
        // SAFETY: a live context; both outputs are valid for writes.
        check(unsafe { sys::qv_context_device(self.inner.raw.as_ptr(), &mut kind, &mut id) })?;
        Device::from_codes(kind, id)
    }

    /// The CUDA ordinals of this context's devices, in the order they were given (a repeated
    /// ordinal appears once per logical device); one ordinal for a single-device CUDA context,
    /// empty on the CPU (including `Auto` that fell back to the CPU).
    pub fn devices(&self) -> Result<Vec<i32>> {
        let raw = self.inner.raw.as_ptr();
        let mut count = 0i32;
        // SAFETY: a live context; capacity 0 with a NULL array is allowed, count is a valid output.
        check(unsafe { sys::qv_context_devices(raw, ptr::null_mut(), 0, &mut count) })?;
        let mut ids = vec![0i32; usize::try_from(count).unwrap_or(0)];
        if !ids.is_empty() {
            // SAFETY: a live context; ids holds `count` writable elements, the capacity passed.
            check(unsafe { sys::qv_context_devices(raw, ids.as_mut_ptr(), count, &mut count) })?;
            // The library writes min(capacity, count) ordinals; a context's devices never change.
            ids.truncate(usize::try_from(count).unwrap_or(0));
        }
        Ok(ids)
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

/// Options of a new [`Context`]: device kind, CUDA device ordinal (or several devices), CPU threads.
///
/// ```
/// # fn main() -> Result<(), quiver::Error> {
/// let ctx = quiver::Context::builder().device(quiver::DeviceKind::Cpu).cpu_threads(4).build()?;
/// // Every visible GPU, or the CPU where there is none.
/// let all = quiver::Context::builder().all_devices().build()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ContextBuilder {
    device: DeviceKind,
    device_id: u32,
    cpu_threads: usize,
    devices: Devices,
}

/// The CUDA devices a builder asks for (`qv_context_options_t::device_count` and `device_ids`).
#[derive(Debug, Clone, Default)]
enum Devices {
    /// `device_id` alone (device_count 0).
    #[default]
    One,
    /// These ordinals (device_count = their number; none is the same as `One`).
    List(Vec<i32>),
    /// Every visible CUDA device (`QV_ALL_DEVICES`).
    All,
}

impl ContextBuilder {
    /// The device kind; default `DeviceKind::Auto`.
    pub fn device(mut self, kind: DeviceKind) -> Self {
        self.device = kind;
        self
    }

    /// The CUDA device ordinal used by `Cuda` and `Auto`; default 0. Not used when
    /// [`devices`](Self::devices) or [`all_devices`](Self::all_devices) chose several devices.
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

    /// Several CUDA devices, by ordinal, for `Cuda` and `Auto` (instead of
    /// [`device_id`](Self::device_id)). An ordinal may repeat: the repeats are logical devices
    /// sharing one GPU. Plain indexes live on the first device; the "Sharded" and "Replicated"
    /// descriptors spread an index over all of them. `Auto` without a usable GPU falls back to the
    /// CPU. An empty slice means `device_id` alone (the default). [`build`](Self::build) refuses
    /// more than [`MAX_DEVICES`](crate::MAX_DEVICES) ordinals, and any ordinal with
    /// `DeviceKind::Cpu`, with `InvalidArgument`. Replaces an earlier `devices` or `all_devices`.
    pub fn devices(mut self, ids: &[i32]) -> Self {
        self.devices = Devices::List(ids.to_vec());
        self
    }

    /// Every visible CUDA device (`QV_ALL_DEVICES`), for `Cuda` and `Auto`, as
    /// [`devices`](Self::devices) with the ordinals 0, 1, ... of all of them. Replaces an earlier
    /// `devices`.
    pub fn all_devices(mut self) -> Self {
        self.devices = Devices::All;
        self
    }

    /// Creates the context. Errors: `NoDevice` (`Cuda` asked for and no usable device, an ordinal
    /// past the last device, or a build without CUDA), `InvalidArgument` (such as device ordinals
    /// with `DeviceKind::Cpu`, or more than [`MAX_DEVICES`](crate::MAX_DEVICES) of them), `Cuda`,
    /// `OutOfHostMemory`.
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
        check(unsafe {
            sys::qv_context_options_init_sized(&mut options, std::mem::size_of_val(&options))
        })?;
        options.device = self.device.code();
        options.device_id = device_id;
        options.cpu_threads = cpu_threads;
        match &self.devices {
            Devices::One => {}
            Devices::List(ids) => {
                if ids.len() > crate::MAX_DEVICES {
                    return Err(Error::invalid_argument(format!(
                        "devices: {} ordinals, more than MAX_DEVICES ({})",
                        ids.len(),
                        crate::MAX_DEVICES
                    )));
                }
                options.device_ids[..ids.len()].copy_from_slice(ids);
                // ids.len() <= QV_MAX_DEVICES (64): the conversion is exact.
                options.device_count = ids.len() as i32;
            }
            Devices::All => options.device_count = sys::QV_ALL_DEVICES,
        }
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
