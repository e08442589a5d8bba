package quiver

import (
	"errors"
	"math"
	"math/rand"
	"testing"
)

// blobs returns k clusters of m points each, around centres at least 10 apart.
func blobs(k, m, dim int) []float32 {
	rng := rand.New(rand.NewSource(50))
	x := make([]float32, 0, k*m*dim)
	for c := 0; c < k; c++ {
		for i := 0; i < m; i++ {
			for d := 0; d < dim; d++ {
				centre := float32(0)
				if d == c%dim {
					centre = float32(10 * (c/dim + 1))
				}
				x = append(x, centre+rng.Float32()*0.2-0.1)
			}
		}
	}
	return x
}

func TestKmeans(t *testing.T) {
	ctx := newContext(t)
	const k, m, dim = 4, 50, 3
	x := blobs(k, m, dim)
	res, err := Kmeans(ctx, dim, x, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Centroids) != k*dim || len(res.Assignments) != k*m {
		t.Fatalf("%d centroid floats, %d assignments", len(res.Centroids), len(res.Assignments))
	}
	// Each assignment is the nearest centroid, and the objective the sum of squared distances to
	// them. (Lloyd's algorithm may settle in a local minimum, so the blobs are not checked.)
	var objective float64
	for i := 0; i < k*m; i++ {
		a := int(res.Assignments[i])
		if a < 0 || a >= k {
			t.Fatalf("assignment %d out of range", a)
		}
		best := math.Inf(1)
		for j := 0; j < k; j++ {
			best = math.Min(best, refDistance(MetricL2, x[i*dim:(i+1)*dim], res.Centroids[j*dim:(j+1)*dim]))
		}
		d := refDistance(MetricL2, x[i*dim:(i+1)*dim], res.Centroids[a*dim:(a+1)*dim])
		if d > best+1e-4 {
			t.Fatalf("point %d assigned at %v, nearest centroid at %v", i, d, best)
		}
		objective += d
	}
	if math.Abs(objective-res.Objective) > 1e-3*(1+objective) {
		t.Fatalf("Objective = %v, recomputed %v", res.Objective, objective)
	}

	// One cluster: the centroid is the mean.
	one, err := Kmeans(ctx, dim, x, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for d := 0; d < dim; d++ {
		var mean float64
		for i := 0; i < k*m; i++ {
			mean += float64(x[i*dim+d])
		}
		mean /= float64(k * m)
		if !near(one.Centroids[d], mean) {
			t.Fatalf("k = 1: centroid %v, mean[%d] = %v", one.Centroids, d, mean)
		}
	}

	// Deterministic for a seed.
	p := DefaultKmeansParams()
	if p.Iterations != 20 || p.Seed != 1234 || p.MaxPointsPerCentroid != 256 {
		t.Fatalf("DefaultKmeansParams() = %+v", p)
	}
	p.Seed = 7
	p.Iterations = 5
	a, err := Kmeans(ctx, dim, x, k, &p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Kmeans(ctx, dim, x, k, &p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Centroids {
		if a.Centroids[i] != b.Centroids[i] {
			t.Fatal("two runs with one seed differ")
		}
	}
}

func TestKmeansErrors(t *testing.T) {
	ctx := newContext(t)
	x := randomVectors(51, 10, 4)
	for _, c := range []struct {
		dim, k int
		x      []float32
		p      *KmeansParams
	}{
		{0, 2, x, nil},
		{4, 2, x[:7], nil},
		{4, 0, x, nil},
		{4, 11, x, nil}, // more centroids than points
		{4, 2, x, &KmeansParams{Iterations: -1}},
	} {
		_, err := Kmeans(ctx, c.dim, c.x, c.k, c.p)
		wantError(t, err, ErrInvalidArgument)
	}
	bad := append([]float32(nil), x...)
	bad[3] = float32(math.NaN())
	_, err := Kmeans(ctx, 4, bad, 2, nil)
	wantError(t, err, ErrInvalidArgument) // checked by the library
	_, err = Kmeans(nil, 4, x, 2, nil)
	wantError(t, err, ErrInvalidArgument)
}

func TestKmeansProgressAndCancel(t *testing.T) {
	ctx := newContext(t)
	const k, m, dim = 4, 50, 3
	x := blobs(k, m, dim)
	p := DefaultKmeansParams()
	p.Iterations = 8
	var seen []float64
	p.Progress = func(f float64) bool { seen = append(seen, f); return true }
	if _, err := Kmeans(ctx, dim, x, k, &p); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 8 || seen[7] != 1 {
		t.Fatalf("progress %v: want one report an iteration, the last 1", seen)
	}
	p.Progress = func(f float64) bool { return f < 0.5 }
	if _, err := Kmeans(ctx, dim, x, k, &p); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Kmeans: %v, want ErrCancelled", err)
	}
}
