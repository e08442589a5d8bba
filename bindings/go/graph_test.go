package quiver

import (
	"errors"
	"strings"
	"testing"
)

// newGraph returns a "Graph..." index of the descriptor holding data (ids 0..n-1), closed when the
// test ends. A graph index needs no training: the first Add builds the graph.
func newGraph(t *testing.T, ctx *Context, descriptor string, dim int, metric Metric, data []float32) *Index {
	t.Helper()
	ix, err := NewIndex(ctx, descriptor, dim, metric)
	if err != nil {
		t.Fatalf("NewIndex(%q): %v", descriptor, err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Add(data); err != nil {
		t.Fatalf("Add: %v", err)
	}
	return ix
}

func TestGraphRecallAgainstExact(t *testing.T) {
	ctx := newContext(t)
	const dim, k = 16, 10
	base, queries := clustered(1, 1500, dim), clustered(2, 50, dim)
	exact, err := newFlat(t, ctx, dim, MetricL2, base).Search(queries, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := newGraph(t, ctx, "Graph32", dim, MetricL2, base)
	got, err := ix.Search(queries, k, &SearchParams{SearchWidth: 64})
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for q := 0; q < got.NQ; q++ {
		want := map[int64]bool{}
		for _, id := range exact.IDs[q*k : (q+1)*k] {
			want[id] = true
		}
		for _, id := range got.IDs[q*k : (q+1)*k] {
			if want[id] {
				hits++
			}
		}
	}
	if r := float64(hits) / float64(got.NQ*k); r < 0.95 {
		t.Fatalf("recall@10 %.3f, want >= 0.95", r)
	}
}

func TestGraphRemoveAddAndReload(t *testing.T) {
	ctx := newContext(t)
	const dim = 16
	ix := newGraph(t, ctx, "Graph16,K32", dim, MetricCosine, clustered(3, 1000, dim))
	if n, err := ix.Remove([]int64{0, 1, 2, 999999}); err != nil || n != 3 {
		t.Fatalf("Remove: %d, %v; want 3", n, err)
	}
	more := clustered(4, 10, dim)
	ids := []int64{5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5009}
	if err := ix.AddWithIDs(more, ids); err != nil {
		t.Fatal(err)
	}
	own, err := ix.Search(more, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range own.IDs {
		if id != ids[i] {
			t.Fatalf("added vector %d found as %d", ids[i], id)
		}
	}
	queries := clustered(5, 20, dim)
	before, err := ix.Search(queries, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range before.IDs {
		if id >= 0 && id <= 2 {
			t.Fatalf("removed id %d returned", id)
		}
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
	after, err := loaded.Search(queries, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before.IDs {
		if before.IDs[i] != after.IDs[i] {
			t.Fatalf("after reload ids %v, want %v", after.IDs[:10], before.IDs[:10])
		}
	}
	buf[len(buf)/2] ^= 0x10
	if _, err := LoadFromBuffer(ctx, buf); !errors.Is(err, ErrCorruptData) {
		t.Fatalf("damaged buffer: %v, want ErrCorruptData", err)
	}
}

func TestGraphErrors(t *testing.T) {
	ctx := newContext(t)
	if _, err := NewIndex(ctx, "Graph1", 8, MetricL2); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "Graph<R>") {
		t.Fatalf("Graph1: %v, want ErrInvalidArgument naming Graph<R>", err)
	}
	ix, err := NewIndex(ctx, "Graph32", 8, MetricL2)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.Search(make([]float32, 8), 5, nil); !errors.Is(err, ErrNotTrained) {
		t.Fatalf("search before add: %v, want ErrNotTrained", err)
	}
}

func TestGraphWalkParamsAreCheckedWhateverTheIndex(t *testing.T) {
	ctx := newContext(t)
	const dim = 8
	base, queries := clustered(6, 300, dim), clustered(7, 5, dim)
	bad := []struct {
		field string
		p     SearchParams
	}{
		{"graph_visited", SearchParams{GraphVisited: -1}},
		{"graph_visited", SearchParams{GraphVisited: GraphVisitedCuckoo + 1}},
		{"graph_probes", SearchParams{GraphProbes: GraphMaxProbes + 1}},
		{"GraphProbes", SearchParams{GraphProbes: -1}},
		{"graph_warps_per_query", SearchParams{GraphWarpsPerQuery: GraphMaxWarpsPerQuery + 1}},
		{"graph_queries_per_warp", SearchParams{GraphQueriesPerWarp: 3}},
		{"graph_warps_per_query", SearchParams{GraphQueriesPerWarp: 2, GraphWarpsPerQuery: 2}},
	}
	for _, ix := range []*Index{newGraph(t, ctx, "Graph16", dim, MetricL2, base), newFlat(t, ctx, dim, MetricL2, base)} {
		before, err := ix.Search(queries, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			_, err := ix.Search(queries, 5, &b.p)
			wantError(t, err, ErrInvalidArgument)
			if !strings.Contains(err.Error(), b.field) {
				t.Fatalf("%+v: %v does not name %s", b.p, err, b.field)
			}
			_, err = ix.RangeSearch(queries, 1, &b.p)
			wantError(t, err, ErrInvalidArgument)
		}
		after, err := ix.Search(queries, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range before.IDs {
			if before.IDs[i] != after.IDs[i] || before.Distances[i] != after.Distances[i] {
				t.Fatalf("a refused search changed the results: %v, want %v", after.IDs, before.IDs)
			}
		}
	}
}

func TestGraphWalkParamsAreIgnoredOnTheCPU(t *testing.T) {
	ctx, err := NewContext(&ContextOptions{Device: DeviceCPU, CPUThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	const dim, k = 16, 10
	ix := newGraph(t, ctx, "Graph16", dim, MetricL2, clustered(8, 1000, dim))
	queries := clustered(9, 30, dim)
	want, err := ix.Search(queries, k, &SearchParams{SearchWidth: 32})
	if err != nil {
		t.Fatal(err)
	}
	combinations := 0
	for _, visited := range []GraphVisited{GraphVisitedDefault, GraphVisitedHashTable, GraphVisitedBloom,
		GraphVisitedCuckoo} {
		for _, probes := range []int{0, 1, 2, GraphMaxProbes} {
			for _, warps := range []int{0, 1, 4, GraphMaxWarpsPerQuery} {
				for _, perWarp := range []int{0, 1, 2, 4} {
					if perWarp > 1 && warps > 1 {
						continue // refused (above)
					}
					p := SearchParams{SearchWidth: 32, GraphVisited: visited, GraphProbes: probes,
						GraphWarpsPerQuery: warps, GraphQueriesPerWarp: perWarp}
					got, err := ix.Search(queries, k, &p)
					if err != nil {
						t.Fatalf("%+v: %v", p, err)
					}
					for i := range want.IDs {
						if got.IDs[i] != want.IDs[i] || got.Distances[i] != want.Distances[i] {
							t.Fatalf("%+v (%v): ids %v, want %v", p, visited, got.IDs[:k], want.IDs[:k])
						}
					}
					combinations++
				}
			}
		}
	}
	if combinations != 4*4*12 {
		t.Fatalf("%d combinations searched, want %d", combinations, 4*4*12)
	}
	if s := GraphVisitedBloom.String(); s != "Bloom" {
		t.Fatalf("GraphVisitedBloom.String() = %q", s)
	}
}

func TestGraphBuildProgressAndCancel(t *testing.T) {
	ctx := newContext(t)
	const dim = 16
	base := clustered(3, 1200, dim)
	ix, err := NewIndex(ctx, "Graph16", dim, MetricL2)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var seen []float64
	if err := ix.AddWithProgress(base, func(f float64) bool { seen = append(seen, f); return true }); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 5 || seen[0] != 0 || seen[len(seen)-1] != 1 {
		t.Fatalf("progress %v: want 0 first, 1 last and the build's steps between", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("progress %v decreases", seen)
		}
	}

	// Cancelled half way through a build: nothing added, and no callback left behind.
	fresh, err := NewIndex(ctx, "Graph16", dim, MetricL2)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	err = fresh.AddWithProgress(base, func(f float64) bool { return f < 0.5 })
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("AddWithProgress: %v, want ErrCancelled", err)
	}
	if info, _ := fresh.Info(); info.Count != 0 {
		t.Fatalf("%d vectors after a cancelled build", info.Count)
	}
	if err := fresh.Add(base); err != nil {
		t.Fatal(err)
	}

	// A panic in the callback cancels the add and is raised again once it has returned.
	func() {
		defer func() {
			if r := recover(); r != "stop" {
				t.Fatalf("recovered %v, want the callback's panic", r)
			}
		}()
		_ = ix.AddWithProgress(clustered(4, 3, dim), func(float64) bool { panic("stop") })
	}()
	if info, _ := ix.Info(); info.Count != 1200 {
		t.Fatalf("%d vectors after a cancelled add, want 1200", info.Count)
	}
	if err := ix.TrainWithProgress(base[:dim], func(float64) bool { return false }); !errors.Is(err, ErrCancelled) {
		t.Fatalf("TrainWithProgress: %v, want ErrCancelled", err)
	}
}
