//go:build quiver_mpi

package quiver

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestDistIndex runs the distributed index in this one process: MPI starts as a singleton (a world
// of one rank, no mpirun) and can start only once per process, so everything is in one test, which
// finalises MPI at its end.
func TestDistIndex(t *testing.T) {
	const dim = 8
	comm, err := CommWorld()
	if err != nil {
		t.Fatalf("CommWorld: %v", err)
	}
	if comm.Pointer() == nil {
		t.Fatal("CommWorld returned a nil communicator")
	}
	ctx := newContext(t)
	if o := (*DistOptions)(nil).c(); o.root != 0 || o.timeout_ms != 60000 {
		t.Fatalf("default options: root %d, timeout %d ms", o.root, o.timeout_ms)
	}
	if o := (&DistOptions{Timeout: 1500 * time.Microsecond}).c(); o.timeout_ms != 2 {
		t.Fatalf("1.5 ms is %d ms, want 2 (rounded up)", o.timeout_ms)
	}

	// Create with Flat; add with consecutive ids, then with given ids (here the row numbers).
	ix, err := NewDistIndex(ctx, comm, Flat, dim, MetricL2, nil)
	if err != nil {
		t.Fatalf("NewDistIndex: %v", err)
	}
	defer ix.Close()
	if ix.Dim() != dim || ix.Rank() != 0 || ix.Size() != 1 || ix.Root() != 0 || !ix.IsRoot() {
		t.Fatalf("dim %d rank %d size %d root %d", ix.Dim(), ix.Rank(), ix.Size(), ix.Root())
	}
	info, err := ix.Info()
	if err != nil || info != (DistIndexInfo{Rank: 0, Size: 1}) {
		t.Fatalf("Info() = %+v, %v", info, err)
	}
	base := randomVectors(1, 300, dim)
	if err := ix.Add(base[:200*dim]); err != nil {
		t.Fatalf("Add: %v", err)
	}
	ids := make([]int64, 100)
	for i := range ids {
		ids[i] = int64(200 + i)
	}
	if err := ix.AddWithIDs(base[200*dim:], ids); err != nil {
		t.Fatalf("AddWithIDs: %v", err)
	}
	if info, err := ix.Info(); err != nil || info.LocalCount != 300 || info.TotalCount != 300 {
		t.Fatalf("Info() = %+v, %v", info, err)
	}

	// Search equals brute force; on the root (the only rank here) there is a result.
	queries := randomVectors(2, 7, dim)
	res, err := ix.Search(queries, 10, nil)
	if err != nil || res == nil {
		t.Fatalf("Search: %v, %v", res, err)
	}
	checkNeighbors(t, MetricL2, dim, base, queries, res, nil)
	thirds := func(id int64) bool { return id%3 == 0 }
	filter := make([]byte, (300+7)/8)
	for id := int64(0); id < 300; id++ {
		if thirds(id) {
			filter[id/8] |= 1 << (id % 8)
		}
	}
	res, err = ix.Search(queries, 10, &SearchParams{Filter: filter, FilterBits: 300})
	if err != nil {
		t.Fatalf("filtered Search: %v", err)
	}
	checkNeighbors(t, MetricL2, dim, base, queries, res, thirds)

	// Range search: every vector within the radius, as brute force finds them.
	const radius = 0.6
	rr, err := ix.RangeSearch(queries, radius, nil)
	if err != nil || rr == nil || rr.NQ() != 7 {
		t.Fatalf("RangeSearch: %v, %v", rr, err)
	}
	for q := 0; q < 7; q++ {
		var want []int64
		for r := 0; r < 300; r++ {
			if refDistance(MetricL2, queries[q*dim:(q+1)*dim], base[r*dim:(r+1)*dim]) <= radius {
				want = append(want, int64(r))
			}
		}
		got, _ := rr.Hits(q)
		got = append([]int64(nil), got...)
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		if !equalIDs(got, want) {
			t.Fatalf("query %d: %v, want %v", q, got, want)
		}
	}

	// Remove: the count over all ranks, ids not in the index ignored.
	if n, err := ix.Remove([]int64{0, 1, 250, 999999}); err != nil || n != 3 {
		t.Fatalf("Remove = %d, %v", n, err)
	}
	kept := func(id int64) bool { return id != 0 && id != 1 && id != 250 }
	after, err := ix.Search(queries, 10, nil)
	if err != nil {
		t.Fatalf("Search after Remove: %v", err)
	}
	checkNeighbors(t, MetricL2, dim, base, queries, after, kept)
	if info, err := ix.Info(); err != nil || info.TotalCount != 297 {
		t.Fatalf("Info() = %+v, %v", info, err)
	}

	// Save and load through a temporary directory.
	dir := t.TempDir()
	prefix := filepath.Join(dir, "index")
	if err := ix.Save(prefix); err != nil {
		t.Fatalf("Save: %v", err)
	}
	for _, name := range []string{"index.manifest", "index.0-of-1.qvi"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("Save wrote no %s: %v", name, err)
		}
	}
	loaded, err := LoadDistIndex(ctx, comm, prefix, nil)
	if err != nil {
		t.Fatalf("LoadDistIndex: %v", err)
	}
	if loaded.Dim() != dim || loaded.Size() != 1 {
		t.Fatalf("loaded: dim %d size %d", loaded.Dim(), loaded.Size())
	}
	again, err := loaded.Search(queries, 10, nil)
	if err != nil {
		t.Fatalf("Search of the loaded index: %v", err)
	}
	if !equalIDs(again.IDs, after.IDs) {
		t.Fatalf("loaded index found %v, saved one %v", again.IDs, after.IDs)
	}
	loaded.Close()
	if _, err := loaded.Info(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Info on a closed index: %v", err)
	}
	_, err = LoadDistIndex(ctx, comm, filepath.Join(dir, "nothing"), nil)
	wantError(t, err, ErrIO)

	// Errors: the library's, with qv_dist_last_error_message's text, and the package's own.
	_, err = NewDistIndex(ctx, comm, "NoSuchKind", dim, MetricL2, nil)
	wantError(t, err, ErrInvalidArgument)
	_, err = NewDistIndex(ctx, comm, Flat, dim, MetricL2, &DistOptions{Root: 1})
	wantError(t, err, ErrInvalidArgument)
	if !strings.Contains(err.Error(), "root") {
		t.Fatalf("a bad root: %v", err)
	}
	_, err = NewDistIndex(ctx, comm, "Fl\x00at", dim, MetricL2, nil)
	wantError(t, err, ErrInvalidArgument)
	wantError(t, ix.Add(base[:dim+1]), ErrInvalidArgument)
	_, err = ix.Search(queries, MaxK+1, nil)
	wantError(t, err, ErrInvalidArgument)
	wantError(t, ix.AddWithIDs(base[:dim], []int64{5}), ErrInvalidArgument) // id 5 is in the index
	wantError(t, ix.Save(prefix+"\x00"), ErrInvalidArgument)
	if info, err := ix.Info(); err != nil || info.TotalCount != 297 {
		t.Fatalf("after the errors: Info() = %+v, %v (nothing half-added)", info, err)
	}

	// An inverted file: trained (on rank 0, the model shared), then searched exactly (NProbe = nlist).
	ivf, err := NewDistIndex(ctx, comm, IvfFlat(4), dim, MetricL2, &DistOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("NewDistIndex(IVF4,Flat): %v", err)
	}
	wantError(t, ivf.Add(base), ErrNotTrained)
	if err := ivf.Train(base); err != nil {
		t.Fatalf("Train: %v", err)
	}
	if err := ivf.Add(base); err != nil {
		t.Fatalf("Add: %v", err)
	}
	res, err = ivf.Search(queries, 10, &SearchParams{NProbe: 4})
	if err != nil {
		t.Fatalf("IVF Search: %v", err)
	}
	checkNeighbors(t, MetricL2, dim, base, queries, res, nil)

	// Finalize refuses while an index is open, then ends MPI; MPI does not start again.
	wantError(t, Finalize(), ErrInvalidArgument)
	ivf.Close()
	ix.Close()
	if err := Finalize(); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	_, err = CommWorld()
	wantError(t, err, ErrInvalidArgument)
	_, err = NewDistIndex(ctx, comm, Flat, dim, MetricL2, nil)
	wantError(t, err, ErrInvalidArgument)
}
