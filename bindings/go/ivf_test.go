package quiver

import (
	"errors"
	"math/rand"
	"testing"
)

// clustered returns n vectors of dimension dim around 20 fixed centres: IVF's natural input.
func clustered(seed int64, n, dim int) []float32 {
	centres := rand.New(rand.NewSource(99))
	c := make([]float32, 20*dim)
	for i := range c {
		c[i] = float32(centres.NormFloat64() * 2)
	}
	rng := rand.New(rand.NewSource(seed))
	x := make([]float32, n*dim)
	for i := 0; i < n; i++ {
		k := rng.Intn(20)
		for d := 0; d < dim; d++ {
			x[i*dim+d] = c[k*dim+d] + float32(rng.NormFloat64())
		}
	}
	return x
}

// newIvf returns a trained index of the descriptor holding data, closed when the test ends.
func newIvf(t *testing.T, ctx *Context, descriptor string, dim int, data []float32) *Index {
	t.Helper()
	ix, err := NewIndex(ctx, descriptor, dim, MetricL2)
	if err != nil {
		t.Fatalf("NewIndex(%q): %v", descriptor, err)
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

func recallOf(got, want *Neighbors) float64 {
	hits := 0
	for q := 0; q < want.NQ; q++ {
		_, w := want.Row(q)
		_, g := got.Row(q)
		for _, id := range g {
			for _, t := range w {
				if id == t {
					hits++
					break
				}
			}
		}
	}
	return float64(hits) / float64(want.NQ*want.K)
}

func TestIvfDescriptors(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{IvfFlat(1024), "IVF1024,Flat"},
		{IvfPq(256, 16, 0, false), "IVF256,PQ16"},
		{IvfPq(256, 16, 32, true), "OPQ32,IVF256,PQ16,Refine"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	ctx := newContext(t)
	if _, err := NewIndex(ctx, IvfPq(16, 7, 0, false), 48, MetricL2); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("PQ7 on dim 48: %v", err)
	}
}

func TestIvfFlatSearch(t *testing.T) {
	ctx := newContext(t)
	const dim, n, k = 24, 3000, 10
	base, queries := clustered(1, n, dim), clustered(2, 50, dim)
	exact, err := newFlat(t, ctx, dim, MetricL2, base).Search(queries, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := newIvf(t, ctx, IvfFlat(16), dim, base)
	all, err := ix.Search(queries, k, &SearchParams{NProbe: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range exact.IDs {
		if all.IDs[i] != exact.IDs[i] {
			t.Fatalf("every list: ids %v, want %v", all.IDs[:k], exact.IDs[:k])
		}
	}
	// The zero NProbe is the index's default, min(nlist, 8).
	byDefault, err := ix.Search(queries, k, &SearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	eight, err := ix.Search(queries, k, &SearchParams{NProbe: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i := range eight.IDs {
		if byDefault.IDs[i] != eight.IDs[i] {
			t.Fatal("NProbe 0 is not the default of 8")
		}
	}
	one, err := ix.Search(queries, k, &SearchParams{NProbe: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r1, r8 := recallOf(one, exact), recallOf(eight, exact); r1 > r8 {
		t.Errorf("recall falls with nprobe: %v at 1, %v at 8", r1, r8)
	}
	for _, bad := range []int{17, -1, 1 << 33} {
		if _, err := ix.Search(queries, k, &SearchParams{NProbe: bad}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NProbe %d: %v", bad, err)
		}
	}
	res, err := ix.RangeSearch(queries, exact.Distances[k-1], &SearchParams{NProbe: 16})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := res.Hits(0); len(ids) < k {
		t.Errorf("range search over every list found %d of query 0's %d neighbours", len(ids), k)
	}
}

func TestIvfPqRefineAndPersistence(t *testing.T) {
	ctx := newContext(t)
	const dim, n, k = 32, 3000, 10
	base, queries := clustered(1, n, dim), clustered(2, 50, dim)
	exact, err := newFlat(t, ctx, dim, MetricL2, base).Search(queries, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := newIvf(t, ctx, IvfPq(16, 8, 0, true), dim, base)
	plain, err := ix.Search(queries, k, &SearchParams{NProbe: 16, RefineFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	refined, err := ix.Search(queries, k, &SearchParams{NProbe: 16, RefineFactor: 32})
	if err != nil {
		t.Fatal(err)
	}
	if r := recallOf(refined, exact); r < 0.99 || r < recallOf(plain, exact) {
		t.Errorf("recall %v with RefineFactor 32, %v with 1", r, recallOf(plain, exact))
	}
	if _, err := ix.Search(queries, k, &SearchParams{RefineFactor: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("RefineFactor -1: %v", err)
	}
	buf, err := ix.SaveToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadFromBuffer(ctx, buf)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	again, err := loaded.Search(queries, k, &SearchParams{NProbe: 16, RefineFactor: 32})
	if err != nil {
		t.Fatal(err)
	}
	for i := range refined.IDs {
		if again.IDs[i] != refined.IDs[i] || again.Distances[i] != refined.Distances[i] {
			t.Fatal("search results differ after a save and load")
		}
	}
	info, err := loaded.Info()
	if err != nil {
		t.Fatal(err)
	}
	if !info.Trained || info.Count != n || info.Descriptor != "IVF16,PQ8,Refine" {
		t.Errorf("info %+v", info)
	}
}

func TestIvfTrainingErrors(t *testing.T) {
	ctx := newContext(t)
	ix, err := NewIndex(ctx, IvfFlat(64), 8, MetricL2)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	data := clustered(1, 40, 8)
	if err := ix.Add(data); !errors.Is(err, ErrNotTrained) {
		t.Errorf("add before training: %v", err)
	}
	if _, err := ix.Search(data[:8], 1, nil); !errors.Is(err, ErrNotTrained) {
		t.Errorf("search before training: %v", err)
	}
	if err := ix.Train(data); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("training 64 lists on 40 vectors: %v", err)
	}
}
