package quiver

import (
	"errors"
	"math"
	"sort"
	"testing"
)

func TestKnnGraphExactMatchesBruteForce(t *testing.T) {
	ctx := newContext(t)
	const dim, n, k = 6, 90, 5
	x := randomVectors(50, n, dim)
	p := DefaultKnnGraphParams()
	p.Method = KnnGraphExact
	res, err := KnnGraph(ctx, MetricL2, dim, x, k, &p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recall != 1 || res.Neighbors.NQ != n || res.Neighbors.K != k {
		t.Fatalf("recall %v, shape %d x %d", res.Recall, res.Neighbors.NQ, res.Neighbors.K)
	}
	for u := 0; u < n; u++ {
		type hit struct {
			d  float64
			id int
		}
		var all []hit
		for v := 0; v < n; v++ {
			if v == u {
				continue
			}
			d := 0.0
			for j := 0; j < dim; j++ {
				e := float64(x[u*dim+j]) - float64(x[v*dim+j])
				d += e * e
			}
			all = append(all, hit{d, v})
		}
		sort.Slice(all, func(a, b int) bool { return all[a].d < all[b].d || all[a].d == all[b].d && all[a].id < all[b].id })
		for j := 0; j < k; j++ {
			if got := res.Neighbors.IDs[u*k+j]; got != int64(all[j].id) {
				t.Fatalf("point %d rank %d: id %d, want %d", u, j, got, all[j].id)
			}
			if got := float64(res.Neighbors.Distances[u*k+j]); math.Abs(got-all[j].d) > 1e-4*math.Max(1, all[j].d) {
				t.Fatalf("point %d rank %d: distance %v, want %v", u, j, got, all[j].d)
			}
		}
	}
}

func TestKnnGraphApproximateEstimatesRecall(t *testing.T) {
	ctx := newContext(t)
	const dim, n, k = 8, 3000, 10
	x := randomVectors(51, n, dim)
	p := DefaultKnnGraphParams()
	p.Method = KnnGraphApproximate
	p.TargetRecall = 0.9
	p.RecallSample = 300
	res, err := KnnGraph(ctx, MetricCosine, dim, x, k, &p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recall < 0.85 || res.Recall > 1 {
		t.Fatalf("recall estimate %v", res.Recall)
	}
	p.RecallSample = 0
	if res, err = KnnGraph(ctx, MetricCosine, dim, x, k, &p); err != nil || res.Recall != -1 {
		t.Fatalf("no sample: recall %v, err %v", res.Recall, err)
	}
}

func TestKnnGraphProgressAndCancel(t *testing.T) {
	ctx := newContext(t)
	const dim = 4
	x := randomVectors(52, 2000, dim)
	p := DefaultKnnGraphParams()
	var seen []float64
	p.Progress = func(f float64) bool {
		seen = append(seen, f)
		return true
	}
	if _, err := KnnGraph(ctx, MetricL2, dim, x, 4, &p); err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || !sort.Float64sAreSorted(seen) || seen[len(seen)-1] != 1 {
		t.Fatalf("progress %v", seen)
	}
	p.Progress = func(float64) bool { return false }
	if _, err := KnnGraph(ctx, MetricL2, dim, x, 4, &p); !errors.Is(err, ErrCancelled) {
		t.Fatalf("err %v, want ErrCancelled", err)
	}
	p.Progress = func(float64) bool { panic("stop here") }
	func() {
		defer func() {
			if r := recover(); r != "stop here" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_, _ = KnnGraph(ctx, MetricL2, dim, x, 4, &p)
		t.Fatal("no panic")
	}()
	p.Progress = nil
	if _, err := KnnGraph(ctx, MetricL2, dim, x, 4, &p); err != nil {
		t.Fatal(err)
	}
}

func TestKnnGraphErrors(t *testing.T) {
	ctx := newContext(t)
	x := randomVectors(53, 10, 4)
	for _, k := range []int{0, 10, 11} {
		if _, err := KnnGraph(ctx, MetricL2, 4, x, k, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("k = %d: err %v", k, err)
		}
	}
	bad := append([]float32(nil), x...)
	bad[6] = float32(math.NaN())
	if _, err := KnnGraph(ctx, MetricL2, 4, bad, 2, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NaN: err %v", err)
	}
	p := DefaultKnnGraphParams()
	p.TargetRecall = 0
	if _, err := KnnGraph(ctx, MetricL2, 4, x, 2, &p); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("target recall 0: err %v", err)
	}
}
