package quiver

// #include "quiver_go.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// SearchParams tunes a search. The zero value, like a nil *SearchParams, means the defaults.
type SearchParams struct {
	// Filter restricts the ids a search may return: bit id%8 of byte Filter[id/8] set means id is
	// allowed. nil (default) allows every id.
	Filter []byte
	// FilterBits is how many bits of Filter are valid; ids at or beyond it are excluded. 0 means
	// len(Filter)*8.
	FilterBits int64
	// NProbe is the number of lists an inverted-file index visits (search and range search):
	// 1 .. nlist, the lists whose centroids are nearest the query; more is slower and finds more
	// true neighbours. 0 (default) lets the index choose: min(nlist, 8) (QV_NPROBE_DEFAULT). More
	// than nlist fails with ErrInvalidArgument. Other kinds ignore it.
	NProbe int
	// SearchWidth is the candidate pool size of a graph index; 0 (default) is the index's own.
	SearchWidth int
	// ComputeMode is the arithmetic of a search on a CUDA device (the exact search's GEMM, the
	// precision of IVF-PQ's look-up tables); ComputeFP32 (the zero value) is the default. The CPU
	// computes in float32 whatever the mode.
	ComputeMode ComputeMode
	// RefineFactor applies to IVF-PQ indexes with ",Refine": RefineFactor x k candidates by PQ
	// distance (at most max(k, MaxK)) are re-ranked with exact distances; 0 (default) means 8.
	RefineFactor int
	// MaxRangeResults caps the hits of one query of a range search: a query with more fails the whole
	// call with ErrTooManyResults (no result is returned), which bounds the memory a too-large radius
	// can take. 0 (default) means no limit; negative fails with ErrInvalidArgument. k-NN searches
	// ignore it.
	MaxRangeResults int64
	// The four Graph fields tune the walk of graph indexes searched on a CUDA device (SONG); CPU
	// searches and other kinds ignore them, but their values are checked whatever the index. The
	// zero value of each is the default.
	//
	// GraphVisited is the walk's visited set; GraphVisitedDefault (the zero value) is the Bloom
	// filter. Other values than the GraphVisited* constants fail with ErrInvalidArgument.
	GraphVisited GraphVisited
	// GraphProbes is the number of nodes expanded per iteration of the walk (SONG's multi-step
	// probing), 1 .. GraphMaxProbes; 0 (default) means 1. Fewer iterations of more distances each;
	// on an H200, 2 probes lost at equal recall. Negative or more than GraphMaxProbes fails with
	// ErrInvalidArgument, and so, on a CUDA device, does GraphProbes x R above 256 (R: the graph's
	// degree).
	GraphProbes int
	// GraphWarpsPerQuery is the number of warps searching one query together, sharing each
	// expansion's distances, 1 .. GraphMaxWarpsPerQuery; 0 (default) chooses: several only when the
	// batch has fewer queries than the device has multiprocessors. It cuts the latency of small
	// batches (batch 1 on an H200: 0.50 -> 0.124 ms on Fashion-MNIST) and leaves the results as they
	// are with one warp. Negative or more than GraphMaxWarpsPerQuery fails with ErrInvalidArgument.
	GraphWarpsPerQuery int
	// GraphQueriesPerWarp is the number of queries one warp searches at once (SONG's multi-query per
	// warp): 1, 2 or 4; 0 (default) means 1. The warp's lanes split into groups, each walking its own
	// query with 2 or 4 times one query's shared memory (wide search widths may not fit:
	// ErrInvalidArgument); the results are those of 1 but for rounding and a visited filter's rare
	// false positives. Slower on an H100 at every dimension measured (1.5-5.2x the time of 1). Other
	// values, and 2 or 4 with GraphWarpsPerQuery above 1, fail with ErrInvalidArgument.
	GraphQueriesPerWarp int
}

// Neighbors are the k nearest neighbours of nq queries.
type Neighbors struct {
	NQ, K int
	// Distances holds NQ rows of K, closest first; see Metric for units and order. Where fewer than
	// K vectors qualify, a row is padded with +Inf (the distances: MetricL2, MetricL1, MetricLInf,
	// MetricEdit) or -Inf (the similarities: MetricInnerProduct, MetricCosine).
	Distances []float32
	// IDs holds NQ rows of K ids, padded with -1 where fewer than K vectors qualify.
	IDs []int64
}

// Row returns the distances and ids of query i.
func (n *Neighbors) Row(i int) ([]float32, []int64) {
	return n.Distances[i*n.K : (i+1)*n.K], n.IDs[i*n.K : (i+1)*n.K]
}

// RangeResult holds, for each query, every vector within the radius, in CSR form.
type RangeResult struct {
	// Lims has one entry per query and one more: the hits of query i are IDs[Lims[i]:Lims[i+1]] and
	// Distances[Lims[i]:Lims[i+1]], closest first.
	Lims      []int64
	IDs       []int64
	Distances []float32
}

// NQ returns the number of queries.
func (r *RangeResult) NQ() int { return len(r.Lims) - 1 }

// Hits returns the ids and distances of the hits of query i, closest first.
func (r *RangeResult) Hits(i int) ([]int64, []float32) {
	lo, hi := r.Lims[i], r.Lims[i+1]
	return r.IDs[lo:hi], r.Distances[lo:hi]
}

// Search returns the k nearest neighbours (1 <= k <= MaxK) of each row of queries (row-major,
// Dim() wide, finite). k may exceed the number of vectors in the index. p nil means the defaults.
func (ix *Index) Search(queries []float32, k int, p *SearchParams) (*Neighbors, error) {
	if err := checkK(k); err != nil {
		return nil, err
	}
	if ix == nil {
		return nil, invalidArgument("index is nil")
	}
	nq, err := ix.vectorRows("queries", queries)
	if err != nil {
		return nil, err
	}
	out := &Neighbors{NQ: nq, K: k, Distances: make([]float32, nq*k), IDs: make([]int64, nq*k)}
	if err := ix.SearchInto(queries, k, p, out.Distances, out.IDs); err != nil {
		return nil, err
	}
	return out, nil
}

// SearchInto is Search writing into caller-owned slices: distances and ids must hold at least
// nq*k entries, nq = len(queries)/Dim(); the first nq*k are written, row-major.
func (ix *Index) SearchInto(queries []float32, k int, p *SearchParams, distances []float32, ids []int64) error {
	h, err := ix.rlock()
	if err != nil {
		return err
	}
	defer ix.mu.RUnlock()
	nq, err := ix.vectorRows("queries", queries)
	if err != nil {
		return err
	}
	ck, err := outputs(nq, k, distances, ids)
	if err != nil {
		return err
	}
	cp, err := p.c()
	if err != nil || nq == 0 {
		return err
	}
	err = statusError(C.qv_go_index_search(call(C.qv_index_search), h, C.int64_t(nq), floats(queries), ck,
		cp.params, cp.filter, cp.bits, floats(distances), int64s(ids)))
	runtime.KeepAlive(ix)
	return err
}

// RangeSearch finds, for each row of queries, every vector within radius: for MetricL2 a squared
// distance <= radius, for MetricL1 and MetricLInf a distance <= radius, for the similarity metrics
// a similarity >= radius. p nil means the defaults (the filter, NProbe and MaxRangeResults apply).
func (ix *Index) RangeSearch(queries []float32, radius float32, p *SearchParams) (*RangeResult, error) {
	h, err := ix.rlock()
	if err != nil {
		return nil, err
	}
	defer ix.mu.RUnlock()
	nq, err := ix.vectorRows("queries", queries)
	if err != nil {
		return nil, err
	}
	cp, err := p.c()
	if err != nil {
		return nil, err
	}
	if nq == 0 {
		return &RangeResult{Lims: []int64{0}, IDs: []int64{}, Distances: []float32{}}, nil
	}
	var res *C.qv_range_result_t
	err = statusError(C.qv_go_index_range_search(call(C.qv_index_range_search), h, C.int64_t(nq),
		floats(queries), C.float(radius), cp.params, cp.filter, cp.bits, &res))
	runtime.KeepAlive(ix)
	if err != nil {
		return nil, err
	}
	defer C.qv_range_result_free(res)
	return copyRangeResult(res)
}

// copyRangeResult copies a C range result into Go slices.
func copyRangeResult(res *C.qv_range_result_t) (*RangeResult, error) {
	var nq C.int64_t
	var lims, ids *C.int64_t
	var dists *C.float
	if err := statusError(C.qv_go_range_result_get(call(C.qv_range_result_get), res, &nq, &lims, &ids,
		&dists)); err != nil {
		return nil, err
	}
	if lims == nil || nq < 0 {
		return nil, &Error{Status: StatusInternal, Message: "qv_range_result_get returned no lims"}
	}
	out := &RangeResult{Lims: make([]int64, int(nq)+1)}
	copy(out.Lims, unsafe.Slice((*int64)(unsafe.Pointer(lims)), int(nq)+1))
	total := int(out.Lims[nq])
	out.IDs = make([]int64, total)
	out.Distances = make([]float32, total)
	if total > 0 {
		copy(out.IDs, unsafe.Slice((*int64)(unsafe.Pointer(ids)), total))
		copy(out.Distances, unsafe.Slice((*float32)(unsafe.Pointer(dists)), total))
	}
	return out, nil
}

// outputs validates k and the output slices of a k-nearest-neighbour search of nq queries.
func outputs(nq, k int, distances []float32, ids []int64) (C.uint32_t, error) {
	if err := checkK(k); err != nil {
		return 0, err
	}
	if len(distances) < nq*k || len(ids) < nq*k {
		return 0, invalidArgument("distances has %d and ids %d entries, need %d (%d queries x k %d)",
			len(distances), len(ids), nq*k, nq, k)
	}
	return C.uint32_t(k), nil
}

// cParams is a SearchParams as the helpers of quiver_go.h take it: the C struct without its filter
// (Go memory that holds no Go pointer, as cgo requires), and the filter apart.
type cParams struct {
	params *C.qv_search_params_t // nil for defaults
	filter *C.uint8_t
	bits   C.int64_t
}

// noIDs backs a non-nil empty Filter, which allows no id: C needs a non-NULL pointer for it.
var noIDs [1]byte

func (p *SearchParams) c() (cParams, error) {
	if p == nil {
		return cParams{}, nil
	}
	params := new(C.qv_search_params_t)
	if st := C.qv_search_params_init(params); st != C.QV_OK {
		return cParams{}, &Error{Status: Status(st), Message: "qv_search_params_init failed"}
	}
	// NProbe 0, the zero value, is the index's default; C spells that QV_NPROBE_DEFAULT.
	nprobe := C.uint32_t(C.QV_NPROBE_DEFAULT)
	if p.NProbe != 0 {
		var err error
		if nprobe, err = uint32Arg("NProbe", p.NProbe); err != nil {
			return cParams{}, err
		}
		if nprobe == C.QV_NPROBE_DEFAULT {
			return cParams{}, invalidArgument("NProbe is %d, out of range 0 .. %d", p.NProbe, nprobe-1)
		}
	}
	width, err := uint32Arg("SearchWidth", p.SearchWidth)
	if err != nil {
		return cParams{}, err
	}
	refine, err := uint32Arg("RefineFactor", p.RefineFactor)
	if err != nil {
		return cParams{}, err
	}
	probes, err := uint32Arg("GraphProbes", p.GraphProbes)
	if err != nil {
		return cParams{}, err
	}
	warps, err := uint32Arg("GraphWarpsPerQuery", p.GraphWarpsPerQuery)
	if err != nil {
		return cParams{}, err
	}
	queriesPerWarp, err := uint32Arg("GraphQueriesPerWarp", p.GraphQueriesPerWarp)
	if err != nil {
		return cParams{}, err
	}
	params.nprobe = nprobe
	params.refine_factor = refine
	params.search_width = width
	params.compute_mode = C.qv_compute_mode_t(p.ComputeMode)
	params.max_range_results = C.int64_t(p.MaxRangeResults)
	params.graph_visited = C.qv_graph_visited_t(p.GraphVisited)
	params.graph_probes = probes
	params.graph_warps_per_query = warps
	params.graph_queries_per_warp = queriesPerWarp
	out := cParams{params: params}
	if p.Filter == nil {
		if p.FilterBits != 0 {
			return cParams{}, invalidArgument("FilterBits is %d without a Filter", p.FilterBits)
		}
		return out, nil
	}
	bits := p.FilterBits
	if bits == 0 {
		bits = int64(len(p.Filter)) * 8
	}
	if bits < 0 || bits > int64(len(p.Filter))*8 {
		return cParams{}, invalidArgument("FilterBits is %d, Filter has %d bits", p.FilterBits,
			int64(len(p.Filter))*8)
	}
	out.bits = C.int64_t(bits)
	if len(p.Filter) == 0 {
		out.filter = (*C.uint8_t)(unsafe.Pointer(&noIDs[0]))
	} else {
		out.filter = (*C.uint8_t)(unsafe.Pointer(&p.Filter[0]))
	}
	return out, nil
}
