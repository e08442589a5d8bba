package quiver

// #include "quiver_go.h"
import "C"

import "runtime"

// Knn is an exact k-nearest-neighbour search of queries among base, without an index: both are
// row-major, dim wide and finite, and the ids returned are row numbers of base. p nil means the
// defaults; a filter applies to row numbers.
func Knn(ctx *Context, metric Metric, dim int, base, queries []float32, k int, p *SearchParams) (*Neighbors, error) {
	n, err := rows("base", base, dim)
	if err != nil {
		return nil, err
	}
	nq, err := rows("queries", queries, dim)
	if err != nil {
		return nil, err
	}
	if err := checkK(k); err != nil {
		return nil, err
	}
	cp, err := p.c()
	if err != nil {
		return nil, err
	}
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.mu.RUnlock()
	out := &Neighbors{NQ: nq, K: k, Distances: make([]float32, nq*k), IDs: make([]int64, nq*k)}
	if nq == 0 {
		return out, nil
	}
	err = statusError(C.qv_go_knn(call(C.qv_knn), c, C.qv_metric_t(metric), C.int64_t(dim), C.int64_t(n),
		floats(base), C.int64_t(nq), floats(queries), C.uint32_t(k), cp.params, cp.filter, cp.bits,
		floats(out.Distances), int64s(out.IDs)))
	runtime.KeepAlive(ctx)
	if err != nil {
		return nil, err
	}
	return out, nil
}
