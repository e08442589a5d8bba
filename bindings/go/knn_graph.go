package quiver

// #include "quiver_go.h"
import "C"

import (
	"math"
	"runtime"
)

// KnnGraphMethod says how KnnGraph finds the neighbours.
type KnnGraphMethod int32

const (
	// KnnGraphAuto is exact for small data sets (and for a TargetRecall of 1), else approximate.
	KnnGraphAuto KnnGraphMethod = C.QV_KNN_GRAPH_AUTO
	// KnnGraphExact is tiled brute force: on the GPU on a CUDA context, else the CPU.
	KnnGraphExact KnnGraphMethod = C.QV_KNN_GRAPH_EXACT
	// KnnGraphApproximate refines inverted-file candidates with NN-descent, on the CPU threads.
	KnnGraphApproximate KnnGraphMethod = C.QV_KNN_GRAPH_APPROXIMATE
)

// KnnGraphParams tunes KnnGraph. Start from DefaultKnnGraphParams: the zero value's TargetRecall
// of 0 is refused.
type KnnGraphParams struct {
	Method       KnnGraphMethod
	TargetRecall float64 // approximate method: the recall@k aimed at, in (0, 1]; default 0.95
	Seed         uint64  // k-means and sampling seed; default 1234
	RecallSample int64   // points whose exact neighbours estimate the recall; 0 = no estimate
	// Progress, when not nil, is called with the fraction done (0 .. 1) between pieces of work, on
	// the goroutine that called KnnGraph; returning false cancels the build, which then fails with
	// ErrCancelled. It must not Close the context. A panic in it cancels the build and is raised
	// again once the library has returned.
	Progress func(fraction float64) bool
}

// DefaultKnnGraphParams returns the library's defaults (qv_knn_graph_params_init).
func DefaultKnnGraphParams() KnnGraphParams {
	var p C.qv_knn_graph_params_t
	C.qv_knn_graph_params_init(&p)
	return KnnGraphParams{
		Method:       KnnGraphMethod(p.method),
		TargetRecall: float64(p.target_recall),
		Seed:         uint64(p.seed),
		RecallSample: int64(p.recall_sample),
	}
}

// KnnGraphResult is what KnnGraph computes.
type KnnGraphResult struct {
	// Neighbors holds, for each of the n vectors (NQ = n), its K nearest other vectors (ids are
	// row numbers), closest first.
	Neighbors *Neighbors
	// Recall is the graph's recall@k: 1 for the exact method, the estimate on RecallSample points
	// for the approximate one, -1 when not estimated.
	Recall float64
}

// KnnGraph builds the k-nearest-neighbour graph of the vectors of x (row-major, dim wide, finite,
// at least 2 of them): every vector's k nearest other vectors (1 <= k < n), itself excluded,
// closest first, ties to the smaller row. p nil means DefaultKnnGraphParams().
func KnnGraph(ctx *Context, metric Metric, dim int, x []float32, k int, p *KnnGraphParams) (*KnnGraphResult, error) {
	n, err := rows("x", x, dim)
	if err != nil {
		return nil, err
	}
	if k < 1 || k >= n || k >= MaxK || k > math.MaxUint32 {
		upper := n - 1
		if upper > MaxK-1 {
			upper = MaxK - 1
		}
		return nil, invalidArgument("k is %d, must be in 1 .. %d (below the %d vectors)", k, upper, n)
	}
	var cp C.qv_knn_graph_params_t
	if st := C.qv_knn_graph_params_init(&cp); st != C.QV_OK {
		return nil, &Error{Status: Status(st), Message: "qv_knn_graph_params_init failed"}
	}
	var progress func(float64) bool
	if p != nil {
		cp.method = C.qv_knn_graph_method_t(p.Method)
		cp.target_recall = C.double(p.TargetRecall)
		cp.seed = C.uint64_t(p.Seed)
		cp.recall_sample = C.int64_t(p.RecallSample)
		progress = p.Progress
	}
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.mu.RUnlock()
	out := &Neighbors{NQ: n, K: k, Distances: make([]float32, n*k), IDs: make([]int64, n*k)}
	var recall C.double
	err = callWithProgress(progress, func(handle C.uintptr_t) error {
		return statusError(C.qv_go_knn_graph(call(C.qv_knn_graph), c, C.qv_metric_t(metric), C.int64_t(dim),
			C.int64_t(n), floats(x), C.uint32_t(k), &cp, handle, floats(out.Distances), int64s(out.IDs), &recall))
	})
	runtime.KeepAlive(ctx)
	runtime.KeepAlive(x)
	if err != nil {
		return nil, err
	}
	return &KnnGraphResult{Neighbors: out, Recall: float64(recall)}, nil
}
