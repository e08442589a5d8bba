package quiver

// #include "quiver_go.h"
import "C"

import (
	"math"
	"runtime"
)

// KmeansParams tunes Kmeans. Start from DefaultKmeansParams: the zero value means zero iterations.
type KmeansParams struct {
	Iterations           int    // Lloyd iterations; default 20
	Seed                 uint64 // initialisation and sub-sampling seed; default 1234
	MaxPointsPerCentroid int64  // sub-sample to k times this many points; 0 = use all; default 256
	// Progress, when not nil, is called on the calling goroutine after each iteration with the
	// fraction done (0 .. 1); returning false stops the call with ErrCancelled. A panic in it stops
	// the call too and is raised again once the call has returned.
	Progress func(fraction float64) bool
}

// DefaultKmeansParams returns the library's defaults (qv_kmeans_params_init).
func DefaultKmeansParams() KmeansParams {
	var p C.qv_kmeans_params_t
	C.qv_kmeans_params_init(&p)
	return KmeansParams{
		Iterations:           int(p.iterations),
		Seed:                 uint64(p.seed),
		MaxPointsPerCentroid: int64(p.max_points_per_centroid),
	}
}

// KmeansResult is what Kmeans computes.
type KmeansResult struct {
	Centroids   []float32 // k rows of dim, row-major
	Assignments []int64   // the nearest centroid of each vector
	Objective   float64   // the final sum of squared distances to the nearest centroid
}

// Kmeans clusters the vectors of x (row-major, dim wide, finite; at least k of them) into k >= 1
// centroids, by squared L2. p nil means DefaultKmeansParams(). The result depends only on the seed
// and the device, not on the thread count. Empty clusters are re-seeded by splitting large ones.
func Kmeans(ctx *Context, dim int, x []float32, k int, p *KmeansParams) (*KmeansResult, error) {
	n, err := rows("x", x, dim)
	if err != nil {
		return nil, err
	}
	if k < 1 || k > n || k > math.MaxUint32 {
		return nil, invalidArgument("k is %d, must be in 1 .. %d (the number of vectors)", k, n)
	}
	var cp C.qv_kmeans_params_t
	if st := C.qv_kmeans_params_init(&cp); st != C.QV_OK {
		return nil, &Error{Status: Status(st), Message: "qv_kmeans_params_init failed"}
	}
	if p != nil {
		iters, err := uint32Arg("Iterations", p.Iterations)
		if err != nil {
			return nil, err
		}
		cp.iterations = iters
		cp.seed = C.uint64_t(p.Seed)
		cp.max_points_per_centroid = C.int64_t(p.MaxPointsPerCentroid)
	}
	var progress func(float64) bool
	if p != nil {
		progress = p.Progress
	}
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.mu.RUnlock()
	out := &KmeansResult{Centroids: make([]float32, k*dim), Assignments: make([]int64, n)}
	var objective C.double
	err = callWithProgress(progress, func(handle C.uintptr_t) error {
		return statusError(C.qv_go_kmeans(call(C.qv_kmeans), c, C.int64_t(dim), C.int64_t(n), floats(x),
			C.uint32_t(k), &cp, handle, floats(out.Centroids), int64s(out.Assignments), &objective))
	})
	runtime.KeepAlive(ctx)
	if err != nil {
		return nil, err
	}
	out.Objective = float64(objective)
	return out, nil
}
