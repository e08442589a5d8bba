package quiver

// #include "quiver_go.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// Indexes of byte strings (MetricEdit, created with dimension 0) take strings, not vectors, through
// AddStrings, SearchStrings and RangeSearchStrings. Strings are bytes, not text: any value (NUL
// included), no encoding assumed, empty allowed, up to 1 MiB each. Distances are edit distances as
// float32 (0, 1, 2, ...). These calls on an index of vectors, and the vector calls on an index of
// strings, fail with ErrUnsupported.

// ByteStrings converts Go strings for AddStrings, SearchStrings and RangeSearchStrings.
func ByteStrings(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, str := range s {
		out[i] = []byte(str)
	}
	return out
}

// packedStrings is n byte strings as the C API takes them: string i is
// bytes[offsets[i]:offsets[i+1]]. Go memory without Go pointers, read by C during a call only.
type packedStrings struct {
	offsets []int64 // n + 1 entries, never empty
	bytes   []byte
}

func packStrings(strs [][]byte) packedStrings {
	total := 0
	for _, s := range strs {
		total += len(s)
	}
	p := packedStrings{offsets: make([]int64, len(strs)+1), bytes: make([]byte, 0, total)}
	for i, s := range strs {
		p.bytes = append(p.bytes, s...)
		p.offsets[i+1] = int64(len(p.bytes))
	}
	return p
}

func (p packedStrings) n() C.int64_t { return C.int64_t(len(p.offsets) - 1) }

func (p packedStrings) cOffsets() *C.int64_t { return int64s(p.offsets) }

// cBytes is NULL when every string is empty, which the C API allows.
func (p packedStrings) cBytes() *C.uint8_t {
	if len(p.bytes) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&p.bytes[0]))
}

// AddStrings adds byte strings to an index of MetricEdit, numbered consecutively after the largest
// id in the index (0, 1, ... for an empty index). On error nothing is added. The first add to a
// ListOfClusters or Sss index builds its clusters or chooses its pivots.
func (ix *Index) AddStrings(strs [][]byte) error { return ix.addStrings(strs, nil) }

// AddStringsWithIDs adds byte strings with the given ids: one per string, >= 0, unique and not
// already in the index. On error nothing is added.
func (ix *Index) AddStringsWithIDs(strs [][]byte, ids []int64) error {
	if ids == nil {
		ids = []int64{}
	}
	return ix.addStrings(strs, ids)
}

func (ix *Index) addStrings(strs [][]byte, ids []int64) error {
	h, err := ix.lock()
	if err != nil {
		return err
	}
	defer ix.mu.Unlock()
	if ids != nil && len(ids) != len(strs) {
		return invalidArgument("ids has %d entries for %d strings", len(ids), len(strs))
	}
	p := packStrings(strs)
	err = statusError(C.qv_go_index_add_strings(call(C.qv_index_add_strings), h, p.n(), p.cOffsets(),
		p.cBytes(), int64s(ids)))
	runtime.KeepAlive(ix)
	return err
}

// SearchStrings returns the k nearest strings (1 <= k <= MaxK) of each query string, as Search:
// rows closest first, padded with id -1 and +Inf where fewer than k strings qualify. p nil means the
// defaults (the filter applies).
func (ix *Index) SearchStrings(queries [][]byte, k int, p *SearchParams) (*Neighbors, error) {
	if err := checkK(k); err != nil {
		return nil, err
	}
	h, err := ix.rlock()
	if err != nil {
		return nil, err
	}
	defer ix.mu.RUnlock()
	cp, err := p.c()
	if err != nil {
		return nil, err
	}
	nq := len(queries)
	out := &Neighbors{NQ: nq, K: k, Distances: make([]float32, nq*k), IDs: make([]int64, nq*k)}
	q := packStrings(queries)
	err = statusError(C.qv_go_index_search_strings(call(C.qv_index_search_strings), h, q.n(), q.cOffsets(),
		q.cBytes(), C.uint32_t(k), cp.params, cp.filter, cp.bits, floats(out.Distances), int64s(out.IDs)))
	runtime.KeepAlive(ix)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RangeSearchStrings finds, for each query string, every string within edit distance radius (<=),
// as RangeSearch. p nil means the defaults (the filter and MaxRangeResults apply).
func (ix *Index) RangeSearchStrings(queries [][]byte, radius float32, p *SearchParams) (*RangeResult, error) {
	h, err := ix.rlock()
	if err != nil {
		return nil, err
	}
	defer ix.mu.RUnlock()
	cp, err := p.c()
	if err != nil {
		return nil, err
	}
	q := packStrings(queries)
	var res *C.qv_range_result_t
	err = statusError(C.qv_go_index_range_search_strings(call(C.qv_index_range_search_strings), h, q.n(),
		q.cOffsets(), q.cBytes(), C.float(radius), cp.params, cp.filter, cp.bits, &res))
	runtime.KeepAlive(ix)
	if err != nil {
		return nil, err
	}
	defer C.qv_range_result_free(res)
	return copyRangeResult(res)
}
