package quiver

// #include "quiver_go.h"
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Index is a searchable set of vectors (or, for MetricEdit, byte strings) with int64 ids, living on
// its context's device. It is safe for concurrent use: searches, Info and saves run in parallel,
// while Train, Add, Remove and Close wait for every other call on the index and run alone, as the C
// API requires.
type Index struct {
	mu  sync.RWMutex // read-held by calls that leave the index as it is, write-held by the others
	h   *C.qv_index_t
	ctx *Context // the context it was made from, kept reachable while the index is
	dim int
}

// IndexInfo describes an index (qv_index_info_t).
type IndexInfo struct {
	Dim         int        // vector dimension; 0 for byte strings (MetricEdit)
	Metric      Metric     // how vectors (or strings) are compared
	Trained     bool       // searches and adds are possible
	Count       int64      // vectors (or strings) in the index
	Device      DeviceKind // DeviceCPU or DeviceCUDA
	DeviceID    int        // CUDA ordinal, -1 on the CPU
	HostBytes   int64      // host memory held by the index
	DeviceBytes int64      // GPU memory held by the index
	Descriptor  string     // the descriptor the index was created with
}

// NewIndex creates an empty index on ctx's device.
//
// descriptor names the index kind, Faiss-style: Flat ("Flat") for exact search, IvfFlat(nlist)
// ("IVF<nlist>,Flat") and IvfPq(...) ("[OPQ<m>,]IVF<nlist>,PQ<m>[,Refine]") for inverted files, which
// need Train before Add and Search, and the metric-space kinds ListOfClusters(b) ("LC<b>") and
// Sss(alpha, p) ("SSS<alpha>") (see qv_index_create in quiver.h for every form). dim is the vector
// dimension, 1 .. 65536, or 0 for MetricEdit (an index of byte strings). An index of a kind the
// context's CUDA device cannot run, or of a metric the kind does not serve (MetricL1, MetricLInf and
// MetricEdit are Flat, ListOfClusters and Sss only), fails with ErrUnsupported; a DeviceAuto context
// falls back to the CPU.
func NewIndex(ctx *Context, descriptor string, dim int, metric Metric) (*Index, error) {
	desc, err := cString("descriptor", descriptor)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(desc))
	return openIndex(ctx, func(c *C.qv_context_t, out **C.qv_index_t) C.qv_go_status_t {
		return C.qv_go_index_create(call(C.qv_index_create), c, desc, C.int64_t(dim),
			C.qv_metric_t(metric), out)
	})
}

// openIndex makes an index with create, which gets ctx's handle, and wraps it.
func openIndex(ctx *Context, create func(*C.qv_context_t, **C.qv_index_t) C.qv_go_status_t) (*Index, error) {
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.mu.RUnlock()
	var h *C.qv_index_t
	if err := statusError(create(c, &h)); err != nil {
		return nil, err
	}
	var info C.qv_index_info_t
	C.qv_index_info_init(&info)
	if err := statusError(C.qv_go_index_info(call(C.qv_index_info), h, &info)); err != nil {
		C.qv_index_free(h)
		return nil, err
	}
	ix := &Index{h: h, ctx: ctx, dim: int(info.dim)}
	runtime.SetFinalizer(ix, (*Index).Close)
	return ix, nil
}

// Dim returns the vector dimension of the index (0 for an index of byte strings).
func (ix *Index) Dim() int { return ix.dim }

// vectorRows returns how many vectors the slice x named name holds; an index of byte strings (dim 0)
// takes none, which is ErrUnsupported, as the library would say.
func (ix *Index) vectorRows(name string, x []float32) (int, error) {
	if ix.dim == 0 {
		return 0, &Error{Status: StatusUnsupported, Message: name +
			": the index holds byte strings (MetricEdit); use AddStrings, SearchStrings or RangeSearchStrings"}
	}
	return rows(name, x, ix.dim)
}

// Close releases the index. It waits for calls running on the index; later calls fail. Close is
// idempotent and always returns nil.
func (ix *Index) Close() error {
	ix.mu.Lock()
	h := ix.h
	ix.h = nil
	if h != nil {
		C.qv_index_free(h)
	}
	ix.mu.Unlock()
	runtime.SetFinalizer(ix, nil)
	return nil
}

// Train trains the index on the vectors of x (len(x) a multiple of Dim(), finite). Kinds that need
// no training, such as Flat, only validate x. Inverted files need at least nlist vectors (256 for
// PQ), train deterministically, and refuse to train again once they hold vectors.
func (ix *Index) Train(x []float32) error { return ix.train(x, nil) }

// TrainWithProgress trains as Train does, calling progress (on the calling goroutine) with the
// fraction done: 0 before any change, then after each k-means iteration of an IVF index, and 1 once
// done. progress returning false stops the call with
// ErrCancelled and leaves the index as it was; a panic in progress cancels too and is raised again
// once the call has returned.
func (ix *Index) TrainWithProgress(x []float32, progress func(float64) bool) error {
	return ix.train(x, progress)
}

func (ix *Index) train(x []float32, progress func(float64) bool) error {
	h, err := ix.lock()
	if err != nil {
		return err
	}
	defer ix.mu.Unlock()
	n, err := ix.vectorRows("x", x)
	if err != nil {
		return err
	}
	err = withProgress(h, progress, func() error {
		return statusError(C.qv_go_index_train(call(C.qv_index_train), h, C.int64_t(n), floats(x)))
	})
	runtime.KeepAlive(ix)
	return err
}

// withProgress runs step (a train or an add on h, under the index's write lock) with progress as
// h's callback, removed again before it returns; progress nil runs step alone.
func withProgress(h *C.qv_index_t, progress func(float64) bool, step func() error) error {
	if progress == nil {
		return step()
	}
	return callWithProgress(progress, func(handle C.uintptr_t) error {
		if err := statusError(C.qv_go_index_set_progress(call(C.qv_index_set_progress), h, handle)); err != nil {
			return err
		}
		err := step()
		C.qv_go_index_set_progress(call(C.qv_index_set_progress), h, 0)
		return err
	})
}

// Add adds the vectors of x (len(x) a multiple of Dim(), finite, and non-zero for MetricCosine),
// numbered consecutively after the largest id in the index (0, 1, ... for an empty index).
// On error nothing is added.
func (ix *Index) Add(x []float32) error { return ix.add(x, nil, nil) }

// AddWithProgress adds as Add does, calling progress (on the calling goroutine) with the fraction
// done: 0 before any change, then, for a graph index's build, as the build goes, and 1 once done.
// progress returning false stops the call with ErrCancelled and leaves the index as it was; a panic
// in progress cancels too and is raised again once the call has returned. Multi-device indexes
// report 0 and 1 only.
func (ix *Index) AddWithProgress(x []float32, progress func(float64) bool) error {
	return ix.add(x, nil, progress)
}

// AddWithIDs adds the vectors of x with the given ids: one per vector, >= 0, unique and not already
// in the index. On error nothing is added.
func (ix *Index) AddWithIDs(x []float32, ids []int64) error {
	if ids == nil {
		ids = []int64{}
	}
	return ix.add(x, ids, nil)
}

func (ix *Index) add(x []float32, ids []int64, progress func(float64) bool) error {
	h, err := ix.lock()
	if err != nil {
		return err
	}
	defer ix.mu.Unlock()
	n, err := ix.vectorRows("x", x)
	if err != nil {
		return err
	}
	if ids != nil && len(ids) != n {
		return invalidArgument("ids has %d entries for %d vectors", len(ids), n)
	}
	err = withProgress(h, progress, func() error {
		return statusError(C.qv_go_index_add(call(C.qv_index_add), h, C.int64_t(n), floats(x), int64s(ids)))
	})
	runtime.KeepAlive(ix)
	return err
}

// Remove removes the vectors with the given ids and returns how many it removed; ids not in the
// index are ignored.
func (ix *Index) Remove(ids []int64) (int64, error) {
	h, err := ix.lock()
	if err != nil {
		return 0, err
	}
	defer ix.mu.Unlock()
	var removed C.int64_t
	err = statusError(C.qv_go_index_remove(call(C.qv_index_remove), h, C.int64_t(len(ids)), int64s(ids),
		&removed))
	runtime.KeepAlive(ix)
	if err != nil {
		return 0, err
	}
	return int64(removed), nil
}

// Info describes the index.
func (ix *Index) Info() (IndexInfo, error) {
	h, err := ix.rlock()
	if err != nil {
		return IndexInfo{}, err
	}
	defer ix.mu.RUnlock()
	var info C.qv_index_info_t
	C.qv_index_info_init(&info)
	err = statusError(C.qv_go_index_info(call(C.qv_index_info), h, &info))
	runtime.KeepAlive(ix)
	if err != nil {
		return IndexInfo{}, err
	}
	desc := unsafe.Slice((*byte)(unsafe.Pointer(&info.descriptor[0])), len(info.descriptor))
	for i, b := range desc {
		if b == 0 {
			desc = desc[:i]
			break
		}
	}
	return IndexInfo{
		Dim:         int(info.dim),
		Metric:      Metric(info.metric),
		Trained:     info.is_trained != 0,
		Count:       int64(info.count),
		Device:      DeviceKind(info.device),
		DeviceID:    int(info.device_id),
		HostBytes:   int64(info.host_bytes),
		DeviceBytes: int64(info.device_bytes),
		Descriptor:  string(desc),
	}, nil
}

// rlock read-locks the index for a call that leaves it as it is and returns its handle; the caller
// read-unlocks it.
func (ix *Index) rlock() (*C.qv_index_t, error) {
	if ix == nil {
		return nil, invalidArgument("index is nil")
	}
	ix.mu.RLock()
	if ix.h == nil {
		ix.mu.RUnlock()
		return nil, closedError("index")
	}
	return ix.h, nil
}

// lock locks the index for a call that needs it alone and returns its handle; the caller unlocks it.
func (ix *Index) lock() (*C.qv_index_t, error) {
	if ix == nil {
		return nil, invalidArgument("index is nil")
	}
	ix.mu.Lock()
	if ix.h == nil {
		ix.mu.Unlock()
		return nil, closedError("index")
	}
	return ix.h, nil
}
