package quiver

import (
	"math"
	"testing"
)

func TestSearchMetrics(t *testing.T) {
	ctx := newContext(t)
	const dim, n, nq = 16, 500, 20
	base := randomVectors(10, n, dim)
	queries := randomVectors(11, nq, dim)
	for _, metric := range []Metric{MetricL2, MetricInnerProduct, MetricCosine} {
		t.Run(metric.String(), func(t *testing.T) {
			ix := newFlat(t, ctx, dim, metric, base)
			for _, k := range []int{1, 10, 100} {
				res, err := ix.Search(queries, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.NQ != nq || res.K != k || len(res.Distances) != nq*k || len(res.IDs) != nq*k {
					t.Fatalf("shape %d x %d, %d distances, %d ids", res.NQ, res.K, len(res.Distances), len(res.IDs))
				}
				checkNeighbors(t, metric, dim, base, queries, res, nil)
			}
		})
	}
}

func TestSearchPadding(t *testing.T) {
	ctx := newContext(t)
	base := randomVectors(12, 5, 8)
	for _, metric := range []Metric{MetricL2, MetricInnerProduct} {
		ix := newFlat(t, ctx, 8, metric, base)
		queries := randomVectors(13, 3, 8)
		res, err := ix.Search(queries, 9, nil) // k above the index size
		if err != nil {
			t.Fatal(err)
		}
		checkNeighbors(t, metric, 8, base, queries, res, nil)
	}
	empty, err := NewIndex(ctx, Flat, 8, MetricL2)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	res, err := empty.Search(base[:8], 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range res.IDs {
		if id != -1 || !math.IsInf(float64(res.Distances[i]), 1) {
			t.Fatalf("empty index returned %v %v", res.IDs, res.Distances)
		}
	}
}

func TestSearchInto(t *testing.T) {
	ctx := newContext(t)
	const dim = 8
	base := randomVectors(14, 100, dim)
	queries := randomVectors(15, 4, dim)
	ix := newFlat(t, ctx, dim, MetricL2, base)
	const k = 5
	dists := make([]float32, 4*k+3) // longer than needed: the tail is left alone
	ids := make([]int64, 4*k+3)
	for i := 4 * k; i < len(ids); i++ {
		dists[i], ids[i] = 77, 77
	}
	if err := ix.SearchInto(queries, k, nil, dists, ids); err != nil {
		t.Fatal(err)
	}
	checkNeighbors(t, MetricL2, dim, base, queries, &Neighbors{NQ: 4, K: k, Distances: dists[:4*k], IDs: ids[:4*k]}, nil)
	if dists[4*k] != 77 || ids[len(ids)-1] != 77 {
		t.Fatal("SearchInto wrote past nq*k")
	}
	wantError(t, ix.SearchInto(queries, k, nil, dists[:4*k-1], ids), ErrInvalidArgument)
	wantError(t, ix.SearchInto(queries, k, nil, dists, ids[:3]), ErrInvalidArgument)
}

func TestSearchErrors(t *testing.T) {
	ctx := newContext(t)
	ix := newFlat(t, ctx, 4, MetricL2, randomVectors(16, 10, 4))
	q := randomVectors(17, 2, 4)
	for _, k := range []int{0, -1, MaxK + 1} {
		_, err := ix.Search(q, k, nil)
		wantError(t, err, ErrInvalidArgument)
	}
	if _, err := ix.Search(q, MaxK, nil); err != nil {
		t.Fatalf("k = MaxK: %v", err)
	}
	_, err := ix.Search(q[:7], 1, nil)
	wantError(t, err, ErrInvalidArgument)
	bad := append([]float32(nil), q...)
	bad[5] = float32(math.NaN())
	_, err = ix.Search(bad, 1, nil)
	wantError(t, err, ErrInvalidArgument) // checked by the library
	for _, p := range []SearchParams{
		{NProbe: -1},
		{SearchWidth: -2},
		{FilterBits: 8},
		{Filter: []byte{1}, FilterBits: 9},
		{Filter: []byte{1}, FilterBits: -1},
		{ComputeMode: 9},
	} {
		_, err := ix.Search(q, 1, &p)
		wantError(t, err, ErrInvalidArgument)
	}
	if res, err := ix.Search(nil, 3, nil); err != nil || res.NQ != 0 || len(res.IDs) != 0 {
		t.Fatalf("no queries: %v, %v", res, err)
	}
}

func TestSearchParamsDefaults(t *testing.T) {
	ctx := newContext(t)
	base := randomVectors(18, 50, 8)
	q := randomVectors(19, 3, 8)
	ix := newFlat(t, ctx, 8, MetricL2, base)
	// The zero SearchParams and explicit knobs, ignored by Flat, give the default results.
	want, err := ix.Search(q, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every compute mode re-ranks exactly (the CPU computes exactly in all of them).
	for _, p := range []*SearchParams{{}, {NProbe: 3, SearchWidth: 64}, {ComputeMode: ComputeTF32},
		{ComputeMode: ComputeFP16}, {ComputeMode: ComputeBF16}} {
		got, err := ix.Search(q, 4, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.IDs {
			if got.IDs[i] != want.IDs[i] {
				t.Fatalf("params %+v: ids %v, want %v", *p, got.IDs, want.IDs)
			}
		}
	}
}

// evenOnly allows the even ids below bits.
func evenOnly(bits int64) ([]byte, func(int64) bool) {
	f := make([]byte, (bits+7)/8)
	for id := int64(0); id < bits; id += 2 {
		f[id/8] |= 1 << (id % 8)
	}
	return f, func(id int64) bool { return id < bits && id%2 == 0 }
}

func TestSearchFilter(t *testing.T) {
	ctx := newContext(t)
	const dim, n = 8, 200
	base := randomVectors(20, n, dim)
	q := randomVectors(21, 10, dim)
	ix := newFlat(t, ctx, dim, MetricL2, base)

	filter, allowed := evenOnly(n)
	res, err := ix.Search(q, 10, &SearchParams{Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	checkNeighbors(t, MetricL2, dim, base, q, res, allowed)

	// FilterBits cuts the filter short: ids at or past it are excluded, so rows are padded.
	filter, allowed = evenOnly(n)
	res, err = ix.Search(q, 10, &SearchParams{Filter: filter, FilterBits: 13})
	if err != nil {
		t.Fatal(err)
	}
	checkNeighbors(t, MetricL2, dim, base, q, res, func(id int64) bool { return id < 13 && allowed(id) })

	// An empty, non-nil filter allows nothing.
	res, err = ix.Search(q, 3, &SearchParams{Filter: []byte{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range res.IDs {
		if id != -1 {
			t.Fatalf("empty filter let id %d through", id)
		}
	}
}

func TestRangeSearch(t *testing.T) {
	ctx := newContext(t)
	const dim, n, nq = 8, 300, 12
	base := randomVectors(22, n, dim)
	q := randomVectors(23, nq, dim)
	for _, c := range []struct {
		metric Metric
		radius float32
	}{{MetricL2, 1.5}, {MetricInnerProduct, 1.0}, {MetricCosine, 0.5}} {
		t.Run(c.metric.String(), func(t *testing.T) {
			ix := newFlat(t, ctx, dim, c.metric, base)
			for _, filtered := range []bool{false, true} {
				var p *SearchParams
				var allowed func(int64) bool
				if filtered {
					var f []byte
					f, allowed = evenOnly(n)
					p = &SearchParams{Filter: f}
				}
				res, err := ix.RangeSearch(q, c.radius, p)
				if err != nil {
					t.Fatal(err)
				}
				checkRange(t, c.metric, dim, base, q, c.radius, res, allowed)
			}
		})
	}
}

// checkRange checks a range result against brute force.
func checkRange(t *testing.T, metric Metric, dim int, base, q []float32, radius float32, res *RangeResult, allowed func(int64) bool) {
	t.Helper()
	nq := len(q) / dim
	if res.NQ() != nq || len(res.Lims) != nq+1 || res.Lims[0] != 0 || int(res.Lims[nq]) != len(res.IDs) ||
		len(res.IDs) != len(res.Distances) {
		t.Fatalf("malformed result: %d lims, %d ids, %d distances", len(res.Lims), len(res.IDs), len(res.Distances))
	}
	total := 0
	for i := 0; i < nq; i++ {
		ids, dists := res.Hits(i)
		got := map[int64]bool{}
		for j, id := range ids {
			d := refDistance(metric, q[i*dim:(i+1)*dim], base[int(id)*dim:(int(id)+1)*dim])
			if !near(dists[j], d) {
				t.Fatalf("query %d: id %d at %v, reported %v", i, id, d, dists[j])
			}
			if j > 0 && closer(metric, float64(dists[j]), float64(dists[j-1])) {
				t.Fatalf("query %d: hits not closest first: %v", i, dists)
			}
			got[id] = true
		}
		for r := 0; r < len(base)/dim; r++ {
			if allowed != nil && !allowed(int64(r)) {
				if got[int64(r)] {
					t.Fatalf("query %d: filtered id %d returned", i, r)
				}
				continue
			}
			d := refDistance(metric, q[i*dim:(i+1)*dim], base[r*dim:(r+1)*dim])
			in := d <= float64(radius)
			if similarity(metric) {
				in = d >= float64(radius)
			}
			if in != got[int64(r)] && math.Abs(d-float64(radius)) > 1e-4*(1+math.Abs(d)) {
				t.Fatalf("query %d: id %d at %v, radius %v, returned %v", i, r, d, radius, got[int64(r)])
			}
		}
		total += len(ids)
	}
	if total == 0 {
		t.Fatal("no hits at all: the radius tests nothing")
	}
}

func TestRangeSearchErrors(t *testing.T) {
	ctx := newContext(t)
	ix := newFlat(t, ctx, 4, MetricL2, randomVectors(24, 10, 4))
	q := randomVectors(25, 2, 4)
	_, err := ix.RangeSearch(q[:3], 1, nil)
	wantError(t, err, ErrInvalidArgument)
	_, err = ix.RangeSearch(q, float32(math.NaN()), nil)
	wantError(t, err, ErrInvalidArgument)
	_, err = ix.RangeSearch(q, 1, &SearchParams{NProbe: -1})
	wantError(t, err, ErrInvalidArgument)
	res, err := ix.RangeSearch(q, -1, nil) // no squared distance is negative
	if err != nil {
		t.Fatal(err)
	}
	if res.NQ() != 2 || len(res.IDs) != 0 {
		t.Fatalf("radius -1: %+v", res)
	}
	res, err = ix.RangeSearch(nil, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.NQ() != 0 || len(res.Lims) != 1 {
		t.Fatalf("no queries: %+v", res)
	}
}
