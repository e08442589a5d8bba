package quiver

import (
	"math"
	"strings"
	"testing"
)

func TestNewIndexErrors(t *testing.T) {
	ctx := newContext(t)
	for _, c := range []struct {
		desc   string
		dim    int
		metric Metric
	}{
		{"NoSuchKind", 8, MetricL2},
		{"Fl\x00at", 8, MetricL2},
		{Flat, 0, MetricL2},
		{Flat, -3, MetricL2},
		{Flat, 1 << 20, MetricL2},
		{Flat, 8, Metric(42)},
	} {
		ix, err := NewIndex(ctx, c.desc, c.dim, c.metric)
		if err == nil {
			ix.Close()
		}
		wantError(t, err, ErrInvalidArgument)
	}
}

func TestIndexInfo(t *testing.T) {
	ctx := newContext(t)
	ix, err := NewIndex(ctx, Flat, 12, MetricInnerProduct)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.Dim() != 12 {
		t.Fatalf("Dim() = %d", ix.Dim())
	}
	if err := ix.Train(randomVectors(2, 30, 12)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(randomVectors(3, 30, 12)); err != nil {
		t.Fatal(err)
	}
	info, err := ix.Info()
	if err != nil {
		t.Fatal(err)
	}
	kind, id, _ := ctx.Device()
	if info.Dim != 12 || info.Metric != MetricInnerProduct || !info.Trained || info.Count != 30 ||
		info.Descriptor != Flat || info.Device != kind || info.DeviceID != id {
		t.Fatalf("Info() = %+v", info)
	}
	if info.HostBytes < 0 || info.DeviceBytes < 0 || info.HostBytes+info.DeviceBytes < 30*12*4 {
		t.Fatalf("Info() bytes: %+v", info)
	}
}

func TestAddIDsAndRemove(t *testing.T) {
	ctx := newContext(t)
	const dim = 4
	ix, err := NewIndex(ctx, Flat, dim, MetricL2)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	x := randomVectors(4, 5, dim)
	ids := []int64{100, 7, 42, 1000, 3}
	if err := ix.AddWithIDs(x, ids); err != nil {
		t.Fatal(err)
	}
	// Add numbers after the largest id.
	if err := ix.Add(randomVectors(5, 2, dim)); err != nil {
		t.Fatal(err)
	}
	res, err := ix.Search(x, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range ids {
		if res.IDs[i] != want || res.Distances[i] > 1e-5 {
			t.Fatalf("vector %d found as id %d at %v, want id %d at 0", i, res.IDs[i], res.Distances[i], want)
		}
	}
	all, err := ix.Search(x[:dim], 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, id := range all.IDs {
		seen[id] = true
	}
	if !seen[1001] || !seen[1002] {
		t.Fatalf("ids %v, want 1001 and 1002 for Add after 1000", all.IDs)
	}

	removed, err := ix.Remove([]int64{7, 1000, 555})
	if err != nil || removed != 2 {
		t.Fatalf("Remove() = %d, %v; want 2", removed, err)
	}
	if removed, err := ix.Remove(nil); err != nil || removed != 0 {
		t.Fatalf("Remove(nil) = %d, %v", removed, err)
	}
	info, _ := ix.Info()
	if info.Count != 5 {
		t.Fatalf("Count = %d after removing 2 of 7", info.Count)
	}
	res, err = ix.Search(x, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.IDs[1] == 7 || res.IDs[3] == 1000 {
		t.Fatalf("removed ids still found: %v", res.IDs)
	}
	if res.IDs[0] != 100 || res.IDs[2] != 42 || res.IDs[4] != 3 {
		t.Fatalf("kept ids lost: %v", res.IDs)
	}
}

func TestAddErrors(t *testing.T) {
	ctx := newContext(t)
	ix, err := NewIndex(ctx, Flat, 4, MetricCosine)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	x := randomVectors(6, 3, 4)
	if err := ix.AddWithIDs(x, []int64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	// Checked by the binding.
	wantError(t, ix.Add(x[:5]), ErrInvalidArgument)
	wantError(t, ix.Train(x[:5]), ErrInvalidArgument)
	wantError(t, ix.AddWithIDs(x, []int64{4, 5}), ErrInvalidArgument)
	wantError(t, ix.AddWithIDs(x, nil), ErrInvalidArgument)
	// Checked by the library.
	err = ix.AddWithIDs(x, []int64{4, 2, 5})
	wantError(t, err, ErrInvalidArgument)
	if !strings.Contains(err.Error(), "2") {
		t.Errorf("message %q does not name the id", err)
	}
	wantError(t, ix.AddWithIDs(x, []int64{9, -1, 8}), ErrInvalidArgument)
	wantError(t, ix.AddWithIDs(x, []int64{9, 10, 9}), ErrInvalidArgument)
	bad := append([]float32(nil), x...)
	bad[6] = float32(math.NaN())
	wantError(t, ix.Add(bad), ErrInvalidArgument)
	wantError(t, ix.Train(bad), ErrInvalidArgument)
	bad[6] = float32(math.Inf(1))
	wantError(t, ix.Add(bad), ErrInvalidArgument)
	zero := make([]float32, 4) // rejected by the cosine metric
	wantError(t, ix.Add(zero), ErrInvalidArgument)
	if info, _ := ix.Info(); info.Count != 3 {
		t.Fatalf("Count = %d after failed adds, want 3", info.Count)
	}
	// Empty calls are no-ops.
	if err := ix.Add(nil); err != nil {
		t.Fatal(err)
	}
	if err := ix.AddWithIDs(nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestClosedIndex(t *testing.T) {
	ctx := newContext(t)
	ix, err := NewIndex(ctx, Flat, 4, MetricL2)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix.Close()
	x := randomVectors(7, 2, 4)
	wantError(t, ix.Train(x), ErrInvalidArgument)
	wantError(t, ix.Add(x), ErrInvalidArgument)
	wantError(t, ix.AddWithIDs(x, []int64{1, 2}), ErrInvalidArgument)
	_, err = ix.Search(x, 1, nil)
	wantError(t, err, ErrInvalidArgument)
	wantError(t, ix.SearchInto(x, 1, nil, make([]float32, 2), make([]int64, 2)), ErrInvalidArgument)
	_, err = ix.RangeSearch(x, 1, nil)
	wantError(t, err, ErrInvalidArgument)
	_, err = ix.Remove([]int64{1})
	wantError(t, err, ErrInvalidArgument)
	_, err = ix.Info()
	wantError(t, err, ErrInvalidArgument)
	wantError(t, ix.Save(t.TempDir()+"/x.qv"), ErrInvalidArgument)
	_, err = ix.SaveToBuffer()
	wantError(t, err, ErrInvalidArgument)
	var nilIndex *Index
	_, err = nilIndex.Search(x, 1, nil)
	wantError(t, err, ErrInvalidArgument)
	wantError(t, nilIndex.Add(x), ErrInvalidArgument)
}
