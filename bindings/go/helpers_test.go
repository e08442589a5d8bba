package quiver

import (
	"errors"
	"math"
	"math/rand"
	"testing"
)

// newContext returns a default context closed when the test ends.
func newContext(t testing.TB) *Context {
	t.Helper()
	ctx, err := NewContext(nil)
	if err != nil {
		t.Fatalf("NewContext: %v", err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// newFlat returns a Flat index holding data, closed when the test ends.
func newFlat(t testing.TB, ctx *Context, dim int, metric Metric, data []float32) *Index {
	t.Helper()
	ix, err := NewIndex(ctx, Flat, dim, metric)
	if err != nil {
		t.Fatalf("NewIndex: %v", err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Train(data); err != nil {
		t.Fatalf("Train: %v", err)
	}
	if err := ix.Add(data); err != nil {
		t.Fatalf("Add: %v", err)
	}
	return ix
}

// randomVectors returns n vectors of dimension dim, uniform in [-1, 1).
func randomVectors(seed int64, n, dim int) []float32 {
	rng := rand.New(rand.NewSource(seed))
	x := make([]float32, n*dim)
	for i := range x {
		x[i] = rng.Float32()*2 - 1
	}
	return x
}

// refDistance is metric's distance or similarity of a and b, computed in float64.
func refDistance(metric Metric, a, b []float32) float64 {
	var dot, na, nb, l2, l1, linf float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
		l2 += (x - y) * (x - y)
		l1 += math.Abs(x - y)
		linf = math.Max(linf, math.Abs(x-y))
	}
	switch metric {
	case MetricInnerProduct:
		return dot
	case MetricCosine:
		return dot / math.Sqrt(na*nb)
	case MetricL1:
		return l1
	case MetricLInf:
		return linf
	}
	return l2
}

// similarity reports whether metric is a similarity (larger is closer) rather than a distance.
func similarity(metric Metric) bool { return metric == MetricInnerProduct || metric == MetricCosine }

// closer reports whether distance a ranks before b under metric.
func closer(metric Metric, a, b float64) bool {
	if !similarity(metric) {
		return a < b
	}
	return a > b
}

// near compares a distance the library returned with a reference one.
func near(got float32, want float64) bool {
	return math.Abs(float64(got)-want) <= 1e-3*(1+math.Abs(want))
}

// bruteForce returns, for each query, the reference distances of the k best rows of base with
// allowed(row) true, best first.
func bruteForce(metric Metric, dim int, base, queries []float32, k int, allowed func(int64) bool) [][]float64 {
	nq := len(queries) / dim
	out := make([][]float64, nq)
	for q := 0; q < nq; q++ {
		var best []float64
		for r := 0; r < len(base)/dim; r++ {
			if allowed != nil && !allowed(int64(r)) {
				continue
			}
			d := refDistance(metric, queries[q*dim:(q+1)*dim], base[r*dim:(r+1)*dim])
			i := len(best)
			for i > 0 && closer(metric, d, best[i-1]) {
				i--
			}
			if i < k {
				best = append(best, 0)
				copy(best[i+1:], best[i:])
				best[i] = d
				if len(best) > k {
					best = best[:k]
				}
			}
		}
		out[q] = best
	}
	return out
}

// checkNeighbors checks a k-NN result against brute force: the distances rank by rank, and each id's
// distance recomputed from base (row id, as ids are row numbers here), so ties cannot fail the test.
func checkNeighbors(t *testing.T, metric Metric, dim int, base, queries []float32, res *Neighbors, allowed func(int64) bool) {
	t.Helper()
	want := bruteForce(metric, dim, base, queries, res.K, allowed)
	for q := 0; q < res.NQ; q++ {
		dists, ids := res.Row(q)
		for j := 0; j < res.K; j++ {
			if j >= len(want[q]) {
				if ids[j] != -1 {
					t.Fatalf("query %d rank %d: id %d, want padding -1", q, j, ids[j])
				}
				pad := math.Inf(1)
				if similarity(metric) {
					pad = math.Inf(-1)
				}
				if float64(dists[j]) != pad {
					t.Fatalf("query %d rank %d: padding distance %v, want %v", q, j, dists[j], pad)
				}
				continue
			}
			if !near(dists[j], want[q][j]) {
				t.Fatalf("query %d rank %d: distance %v, want %v", q, j, dists[j], want[q][j])
			}
			id := ids[j]
			if id < 0 || int(id) >= len(base)/dim || (allowed != nil && !allowed(id)) {
				t.Fatalf("query %d rank %d: id %d not an allowed row", q, j, id)
			}
			if d := refDistance(metric, queries[q*dim:(q+1)*dim], base[int(id)*dim:(int(id)+1)*dim]); !near(dists[j], d) {
				t.Fatalf("query %d rank %d: id %d is at %v, reported %v", q, j, id, d, dists[j])
			}
		}
	}
}

// wantError checks that err is an *Error of sentinel's status with a message.
func wantError(t *testing.T, err error, sentinel *Error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", sentinel.Status)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want status %v", err, sentinel.Status)
	}
	var qe *Error
	if !errors.As(err, &qe) {
		t.Fatalf("%v is a %T, want *quiver.Error", err, err)
	}
	if qe.Message == "" {
		t.Fatalf("error %v has no message", err)
	}
}
