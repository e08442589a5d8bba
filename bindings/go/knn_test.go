package quiver

import (
	"math"
	"testing"
)

func TestKnn(t *testing.T) {
	ctx := newContext(t)
	const dim, n, nq = 12, 300, 15
	base := randomVectors(40, n, dim)
	q := randomVectors(41, nq, dim)
	for _, metric := range []Metric{MetricL2, MetricInnerProduct, MetricCosine} {
		res, err := Knn(ctx, metric, dim, base, q, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkNeighbors(t, metric, dim, base, q, res, nil)
	}
	filter, allowed := evenOnly(n)
	res, err := Knn(ctx, MetricL2, dim, base, q, 8, &SearchParams{Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	checkNeighbors(t, MetricL2, dim, base, q, res, allowed)
	res, err = Knn(ctx, MetricL2, dim, base[:3*dim], q, 5, nil) // k above n: padded
	if err != nil {
		t.Fatal(err)
	}
	checkNeighbors(t, MetricL2, dim, base[:3*dim], q, res, nil)
}

func TestKnnErrors(t *testing.T) {
	ctx := newContext(t)
	base := randomVectors(42, 10, 4)
	q := randomVectors(43, 2, 4)
	for _, c := range []struct {
		dim     int
		base, q []float32
		k       int
		p       *SearchParams
	}{
		{0, base, q, 1, nil},
		{4, base[:5], q, 1, nil},
		{4, base, q[:6], 1, nil},
		{4, base, q, 0, nil},
		{4, base, q, MaxK + 1, nil},
		{4, base, q, 1, &SearchParams{FilterBits: 3}},
	} {
		_, err := Knn(ctx, MetricL2, c.dim, c.base, c.q, c.k, c.p)
		wantError(t, err, ErrInvalidArgument)
	}
	bad := append([]float32(nil), base...)
	bad[13] = float32(math.Inf(-1))
	_, err := Knn(ctx, MetricL2, 4, bad, q, 1, nil)
	wantError(t, err, ErrInvalidArgument) // checked by the library
	_, err = Knn(ctx, Metric(99), 4, base, q, 1, nil)
	wantError(t, err, ErrInvalidArgument)
	_, err = Knn(nil, MetricL2, 4, base, q, 1, nil)
	wantError(t, err, ErrInvalidArgument)
}
