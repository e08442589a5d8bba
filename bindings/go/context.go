package quiver

// #include "quiver_go.h"
import "C"

import (
	"math"
	"runtime"
	"sync"
)

// MaxDevices is the most CUDA devices one context holds (QV_MAX_DEVICES): the longest
// ContextOptions.DeviceIDs accepted.
const MaxDevices = C.QV_MAX_DEVICES

// ContextOptions chooses where a context runs its work. The zero value means the defaults.
type ContextOptions struct {
	// Device is DeviceAuto (default: a CUDA device if one is usable, else the CPU), DeviceCPU or
	// DeviceCUDA.
	Device DeviceKind
	// DeviceID is the CUDA device ordinal for DeviceCUDA and DeviceAuto; default 0. Not used when
	// DeviceIDs or AllDevices chooses several devices.
	DeviceID int
	// CPUThreads is the size of the context's own thread pool; 0 (default) is one per core. No
	// process-wide OpenMP or BLAS setting is changed.
	CPUThreads int
	// DeviceIDs are several CUDA devices, by ordinal, for DeviceCUDA and DeviceAuto (instead of
	// DeviceID); at most MaxDevices. An ordinal may repeat: the repeats are logical devices sharing
	// one GPU. Plain indexes live on the first device; the "Sharded" and "Replicated" descriptors
	// spread an index over all of them. DeviceAuto without a usable GPU falls back to the CPU.
	// Empty (default): DeviceID alone. Not empty with DeviceCPU: NewContext fails with
	// ErrInvalidArgument. The ordinals are copied; the context keeps no reference to the slice.
	DeviceIDs []int
	// AllDevices asks for every visible CUDA device (QV_ALL_DEVICES), as DeviceIDs listing them
	// all; DeviceIDs must then be empty.
	AllDevices bool
}

// Context is where work runs: CPU threads, a CUDA device and the resources it needs. It is safe for
// concurrent use. Indexes made from a context keep what they need of it: closing a context while its
// indexes are open is allowed, and they go on working.
type Context struct {
	mu sync.RWMutex // read-held by calls that use h, write-held to release it
	h  *C.qv_context_t
}

// NewContext creates a context; opts nil means the defaults.
func NewContext(opts *ContextOptions) (*Context, error) {
	var o C.qv_context_options_t
	if st := C.qv_context_options_init(&o); st != C.QV_OK {
		return nil, &Error{Status: Status(st), Message: "qv_context_options_init failed"}
	}
	if opts != nil {
		if opts.DeviceID < math.MinInt32 || opts.DeviceID > math.MaxInt32 {
			return nil, invalidArgument("DeviceID %d out of range", opts.DeviceID)
		}
		if opts.CPUThreads < 0 || opts.CPUThreads > math.MaxInt32 {
			return nil, invalidArgument("CPUThreads %d out of range", opts.CPUThreads)
		}
		if len(opts.DeviceIDs) > MaxDevices {
			return nil, invalidArgument("DeviceIDs has %d ordinals, more than MaxDevices (%d)",
				len(opts.DeviceIDs), MaxDevices)
		}
		if opts.AllDevices && len(opts.DeviceIDs) > 0 {
			return nil, invalidArgument("AllDevices with %d DeviceIDs: set one or the other",
				len(opts.DeviceIDs))
		}
		for i, id := range opts.DeviceIDs {
			if id < math.MinInt32 || id > math.MaxInt32 {
				return nil, invalidArgument("DeviceIDs[%d] %d out of range", i, id)
			}
		}
		o.device = C.qv_device_kind_t(opts.Device)
		o.device_id = C.int32_t(opts.DeviceID)
		o.cpu_threads = C.int32_t(opts.CPUThreads)
		// The ordinals are copied into the C struct's own array: no Go pointer goes to C.
		for i, id := range opts.DeviceIDs {
			o.device_ids[i] = C.int32_t(id)
		}
		o.device_count = C.int32_t(len(opts.DeviceIDs))
		if opts.AllDevices {
			o.device_count = C.QV_ALL_DEVICES
		}
	}
	var h *C.qv_context_t
	if err := statusError(C.qv_go_context_create(call(C.qv_context_create), &o, &h)); err != nil {
		return nil, err
	}
	c := &Context{h: h}
	runtime.SetFinalizer(c, (*Context).Close)
	return c, nil
}

// Device returns the device the context resolved to (DeviceAuto becomes DeviceCPU or DeviceCUDA)
// and its CUDA ordinal, -1 on the CPU; on a context of several CUDA devices, the first of them.
func (c *Context) Device() (DeviceKind, int, error) {
	h, err := c.acquire()
	if err != nil {
		return 0, 0, err
	}
	defer c.mu.RUnlock()
	var kind C.qv_device_kind_t
	var id C.int32_t
	err = statusError(C.qv_go_context_device(call(C.qv_context_device), h, &kind, &id))
	runtime.KeepAlive(c)
	if err != nil {
		return 0, 0, err
	}
	return DeviceKind(kind), int(id), nil
}

// Devices returns the CUDA ordinals of the context's devices, in the order they were given (a
// repeated ordinal once per logical device): one for a single-device CUDA context, none (an empty
// slice) on the CPU, including DeviceAuto that fell back to the CPU.
func (c *Context) Devices() ([]int, error) {
	h, err := c.acquire()
	if err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	var n C.int32_t
	err = statusError(C.qv_go_context_devices(call(C.qv_context_devices), h, nil, 0, &n))
	var ids []C.int32_t
	if err == nil && n > 0 {
		capacity := n
		ids = make([]C.int32_t, capacity)
		err = statusError(C.qv_go_context_devices(call(C.qv_context_devices), h, &ids[0], capacity, &n))
		if n < capacity {
			ids = ids[:n] // never happens: a context's devices do not change
		}
	}
	runtime.KeepAlive(c)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out, nil
}

// Close releases the context; indexes made from it keep working (the C library keeps what they
// need alive until the last of them is closed). Close waits for calls running on the context; later
// calls fail. Close is idempotent and always returns nil.
func (c *Context) Close() error {
	c.mu.Lock()
	if c.h != nil {
		C.qv_context_free(c.h)
		c.h = nil
	}
	c.mu.Unlock()
	runtime.SetFinalizer(c, nil)
	return nil
}

// acquire read-locks the context and returns its handle; the caller read-unlocks it after the call.
func (c *Context) acquire() (*C.qv_context_t, error) {
	if c == nil {
		return nil, invalidArgument("context is nil")
	}
	c.mu.RLock()
	if c.h == nil {
		c.mu.RUnlock()
		return nil, closedError("context")
	}
	return c.h, nil
}

// CUDADeviceCount returns the number of usable CUDA devices: 0 on a build without CUDA or a machine
// without a GPU.
func CUDADeviceCount() (int, error) {
	var n C.int32_t
	if err := statusError(C.qv_go_cuda_device_count(call(C.qv_cuda_device_count), &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}
