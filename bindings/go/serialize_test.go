package quiver

import (
	"os"
	"path/filepath"
	"testing"
)

// sameResults checks that two indexes answer the same queries identically.
func sameResults(t *testing.T, a, b *Index, q []float32) {
	t.Helper()
	ra, err := a.Search(q, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Search(q, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ra.IDs {
		if ra.IDs[i] != rb.IDs[i] || ra.Distances[i] != rb.Distances[i] {
			t.Fatalf("results differ at %d: %v %v vs %v %v", i, ra.IDs, ra.Distances, rb.IDs, rb.Distances)
		}
	}
}

func TestSaveLoadFile(t *testing.T) {
	ctx := newContext(t)
	const dim = 6
	ix, err := NewIndex(ctx, Flat, dim, MetricInnerProduct)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if err := ix.AddWithIDs(randomVectors(30, 40, dim), idRange(1000, 40)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "index.qv")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	if loaded.Dim() != dim {
		t.Fatalf("Dim() = %d after load", loaded.Dim())
	}
	info, err := loaded.Info()
	if err != nil || info.Count != 40 || info.Metric != MetricInnerProduct || info.Descriptor != Flat {
		t.Fatalf("Info() after load = %+v, %v", info, err)
	}
	sameResults(t, ix, loaded, randomVectors(31, 7, dim))

	// The file and the buffer hold the same format.
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := LoadFromBuffer(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer fromFile.Close()
	sameResults(t, ix, fromFile, randomVectors(32, 7, dim))
}

func TestSaveLoadBuffer(t *testing.T) {
	ctx := newContext(t)
	const dim = 10
	ix := newFlat(t, ctx, dim, MetricCosine, randomVectors(33, 64, dim))
	buf, err := ix.SaveToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if len(buf) < 64*dim*4 {
		t.Fatalf("buffer of %d bytes for 64 x %d floats", len(buf), dim)
	}
	loaded, err := LoadFromBuffer(ctx, buf)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	sameResults(t, ix, loaded, randomVectors(34, 9, dim))
	again, err := loaded.SaveToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(buf) {
		t.Fatal("a loaded index does not serialize to the same bytes")
	}
}

func TestLoadErrors(t *testing.T) {
	ctx := newContext(t)
	ix := newFlat(t, ctx, 4, MetricL2, randomVectors(35, 20, 4))
	buf, err := ix.SaveToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{
		buf[:len(buf)/2],
		buf[:len(buf)-1],
		[]byte("certainly not a quiver index, but long enough to have a header"),
		func() []byte { b := append([]byte(nil), buf...); b[len(b)/2] ^= 0x5a; return b }(),
	} {
		loaded, err := LoadFromBuffer(ctx, data)
		if err == nil {
			loaded.Close()
		}
		wantError(t, err, ErrCorruptData)
	}
	loaded, err := LoadFromBuffer(ctx, nil)
	if err == nil {
		loaded.Close()
		t.Fatal("loading no bytes succeeded")
	}

	dir := t.TempDir()
	_, err = Load(ctx, filepath.Join(dir, "missing.qv"))
	wantError(t, err, ErrIO)
	wantError(t, ix.Save(filepath.Join(dir, "no", "such", "dir", "x.qv")), ErrIO)
	_, err = Load(ctx, "bad\x00path")
	wantError(t, err, ErrInvalidArgument)
	wantError(t, ix.Save("bad\x00path"), ErrInvalidArgument)
	corrupt := filepath.Join(dir, "corrupt.qv")
	if err := os.WriteFile(corrupt, buf[:10], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(ctx, corrupt)
	wantError(t, err, ErrCorruptData)
}

func idRange(start int64, n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = start + int64(i)
	}
	return ids
}
