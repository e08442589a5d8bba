package quiver

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
)

// editDistance is the Levenshtein distance over bytes: insertions, deletions and substitutions, one
// row at a time.
func editDistance(a, b []byte) int {
	row := make([]int, len(b)+1)
	for j := range row {
		row[j] = j
	}
	for i := range a {
		diagonal := row[0]
		row[0] = i + 1
		for j := range b {
			sub := diagonal
			if a[i] != b[j] {
				sub++
			}
			diagonal = row[j+1]
			row[j+1] = minInt(sub, minInt(row[j], row[j+1])+1)
		}
	}
	return row[len(b)]
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// randomWords returns n words of 1 .. 6 letters from "abcde": short and from a small alphabet, so
// that radii 1 and 2 find some words and not all.
func randomWords(seed int64, n int) [][]byte {
	rng := rand.New(rand.NewSource(seed))
	out := make([][]byte, n)
	for i := range out {
		w := make([]byte, 1+rng.Intn(6))
		for j := range w {
			w[j] = "abcde"[rng.Intn(5)]
		}
		out[i] = w
	}
	return out
}

// wordQueries returns some words of base, some with their first letter changed, some new ones and
// the empty string.
func wordQueries(base [][]byte) [][]byte {
	var q [][]byte
	for i := 0; i < len(base); i += 37 {
		q = append(q, base[i])
	}
	for i := 5; i < len(base); i += 41 {
		w := append([]byte(nil), base[i]...)
		if w[0] == 'a' {
			w[0] = 'e'
		} else {
			w[0] = 'a'
		}
		q = append(q, w)
	}
	q = append(q, randomWords(77, 8)...)
	return append(q, []byte{})
}

// newStrings returns an index of MetricEdit of the descriptor holding base (ids 0..n-1), closed when
// the test ends.
func newStrings(t *testing.T, ctx *Context, descriptor string, base [][]byte) *Index {
	t.Helper()
	ix, err := NewIndex(ctx, descriptor, 0, MetricEdit)
	if err != nil {
		t.Fatalf("NewIndex(%q): %v", descriptor, err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.AddStrings(base); err != nil {
		t.Fatalf("AddStrings: %v", err)
	}
	return ix
}

func TestEditDistanceReference(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"kitten", "sitting", 3}, {"", "abc", 3}, {"flaw", "lawn", 2}, {"same", "same", 0}} {
		if got := editDistance([]byte(c.a), []byte(c.b)); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestStringRangeSearch(t *testing.T) {
	ctx := newContext(t)
	base := randomWords(1, 200)
	queries := wordQueries(base)
	for _, desc := range []string{ListOfClusters(8), Sss(0.5, 0), Flat} {
		t.Run(desc, func(t *testing.T) {
			ix := newStrings(t, ctx, desc, base)
			info, err := ix.Info()
			if err != nil {
				t.Fatal(err)
			}
			if info.Dim != 0 || info.Metric != MetricEdit || info.Count != 200 || ix.Dim() != 0 {
				t.Fatalf("info %+v, Dim() %d", info, ix.Dim())
			}
			for _, radius := range []int{1, 2} {
				res, err := ix.RangeSearchStrings(queries, float32(radius), nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.NQ() != len(queries) {
					t.Fatalf("NQ() = %d, want %d", res.NQ(), len(queries))
				}
				total := 0
				for q := range queries {
					ids, dists := res.Hits(q)
					var want []int64
					for i, w := range base {
						if editDistance(queries[q], w) <= radius {
							want = append(want, int64(i))
						}
					}
					got := append([]int64(nil), ids...)
					sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
					if !equalIDs(got, want) {
						t.Fatalf("radius %d query %q: ids %v, want %v", radius, queries[q], got, want)
					}
					for j, id := range ids {
						if d := editDistance(queries[q], base[id]); dists[j] != float32(d) {
							t.Fatalf("query %q: id %d at %d, reported %v", queries[q], id, d, dists[j])
						}
						if j > 0 && dists[j] < dists[j-1] {
							t.Fatalf("query %q: hits not closest first: %v", queries[q], dists)
						}
					}
					total += len(want)
				}
				if total <= len(queries) || total >= len(queries)*len(base)/4 {
					t.Fatalf("radius %d: %d hits in all, a poor test", radius, total)
				}
			}
		})
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStringSearch(t *testing.T) {
	ctx := newContext(t)
	base := randomWords(2, 200)
	queries := wordQueries(base)
	const k = 5
	filter, allowed := evenOnly(int64(len(base)))
	for _, desc := range []string{ListOfClusters(8), Sss(0.5, 0), Flat} {
		t.Run(desc, func(t *testing.T) {
			ix := newStrings(t, ctx, desc, base)
			for _, p := range []*SearchParams{nil, {Filter: filter}} {
				res, err := ix.SearchStrings(queries, k, p)
				if err != nil {
					t.Fatal(err)
				}
				if res.NQ != len(queries) || res.K != k {
					t.Fatalf("shape %d x %d", res.NQ, res.K)
				}
				for q := range queries {
					var want []int
					for i, w := range base {
						if p == nil || allowed(int64(i)) {
							want = append(want, editDistance(queries[q], w))
						}
					}
					sort.Ints(want)
					dists, ids := res.Row(q)
					seen := map[int64]bool{}
					for j, id := range ids {
						if dists[j] != float32(want[j]) {
							t.Fatalf("query %q rank %d: distance %v, want %d", queries[q], j, dists[j], want[j])
						}
						// Ties may come in any order: check each id's own distance.
						if id < 0 || int(id) >= len(base) || seen[id] || (p != nil && !allowed(id)) {
							t.Fatalf("query %q rank %d: id %d", queries[q], j, id)
						}
						seen[id] = true
						if d := editDistance(queries[q], base[id]); dists[j] != float32(d) {
							t.Fatalf("query %q: id %d at %d, reported %v", queries[q], id, d, dists[j])
						}
					}
				}
			}
		})
	}
}

func TestEmptyAndNonASCIIStrings(t *testing.T) {
	ctx := newContext(t)
	strs := [][]byte{{}, []byte("é"), {0, 255, 128}, []byte("e"), []byte("ab\x00c"), []byte("日本")}
	ids := []int64{100, 101, 102, 103, 104, 105}
	for _, desc := range []string{ListOfClusters(2), Sss(0.4, 0), Flat} {
		ix, err := NewIndex(ctx, desc, 0, MetricEdit)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		if err := ix.AddStringsWithIDs(strs, ids); err != nil {
			t.Fatal(err)
		}
		res, err := ix.SearchStrings(strs, len(strs), nil)
		if err != nil {
			t.Fatal(err)
		}
		for q := range strs {
			dists, got := res.Row(q)
			if got[0] != ids[q] || dists[0] != 0 {
				t.Fatalf("%s: string %q found %d at %v first", desc, strs[q], got[0], dists[0])
			}
			for j, id := range got {
				if d := editDistance(strs[q], strs[id-100]); dists[j] != float32(d) {
					t.Fatalf("%s: query %q id %d at %d, reported %v", desc, strs[q], id, d, dists[j])
				}
			}
		}
		exact, err := ix.RangeSearchStrings([][]byte{{0, 255, 128}}, 0, nil)
		if err != nil || !equalIDs(exact.IDs, []int64{102}) {
			t.Fatalf("%s: exact match %v, %v", desc, exact, err)
		}
		// "é" is two bytes from "e" (a substitution and a deletion) and from "".
		near, err := ix.RangeSearchStrings(ByteStrings("é"), 1, nil)
		if err != nil || !equalIDs(near.IDs, []int64{101}) {
			t.Fatalf("%s: near é %v, %v", desc, near, err)
		}
		none, err := ix.SearchStrings(nil, 3, nil)
		if err != nil || none.NQ != 0 || len(none.IDs) != 0 {
			t.Fatalf("%s: no queries gave %+v, %v", desc, none, err)
		}
		empty, err := ix.RangeSearchStrings(nil, 1, nil)
		if err != nil || empty.NQ() != 0 {
			t.Fatalf("%s: no range queries gave %+v, %v", desc, empty, err)
		}
	}
}

func TestStringIndexSaveLoad(t *testing.T) {
	ctx := newContext(t)
	base := randomWords(3, 200)
	ix := newStrings(t, ctx, ListOfClusters(8), base)
	buf, err := ix.SaveToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadFromBuffer(ctx, buf)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	info, err := loaded.Info()
	if err != nil || info.Dim != 0 || info.Metric != MetricEdit || info.Count != 200 ||
		info.Descriptor != "LC8" {
		t.Fatalf("loaded info %+v, %v", info, err)
	}
	queries := wordQueries(base)
	want, err := ix.SearchStrings(queries, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.SearchStrings(queries, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Distances {
		if got.Distances[i] != want.Distances[i] {
			t.Fatalf("loaded index: distances %v, want %v", got.Distances, want.Distances)
		}
	}
}

func TestL1AndLInfIndexes(t *testing.T) {
	ctx := newContext(t)
	const dim, n, nq, k = 8, 500, 20, 10
	base := randomVectors(30, n, dim)
	queries := randomVectors(31, nq, dim)
	for _, c := range []struct {
		desc   string
		metric Metric
		radius float32
	}{{Sss(0.5, 0), MetricL1, 4}, {ListOfClusters(16), MetricLInf, 0.8}, {Flat, MetricL1, 4}} {
		t.Run(c.desc+"/"+c.metric.String(), func(t *testing.T) {
			ix, err := NewIndex(ctx, c.desc, dim, c.metric)
			if err != nil {
				t.Fatal(err)
			}
			defer ix.Close()
			if err := ix.Add(base); err != nil {
				t.Fatal(err)
			}
			res, err := ix.Search(queries, k, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkNeighbors(t, c.metric, dim, base, queries, res, nil)
			rr, err := ix.RangeSearch(queries, c.radius, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkRange(t, c.metric, dim, base, queries, c.radius, rr, nil)
		})
	}
}

func TestMaxRangeResults(t *testing.T) {
	ctx := newContext(t)
	base := randomWords(4, 200)
	queries := wordQueries(base)
	ix := newStrings(t, ctx, ListOfClusters(8), base)
	most := 0
	for _, q := range queries {
		hits := 0
		for _, w := range base {
			if editDistance(q, w) <= 2 {
				hits++
			}
		}
		if hits > most {
			most = hits
		}
	}
	if most < 2 {
		t.Fatalf("at most %d hits: nothing to cap", most)
	}
	_, err := ix.RangeSearchStrings(queries, 2, &SearchParams{MaxRangeResults: int64(most - 1)})
	wantError(t, err, ErrTooManyResults)
	res, err := ix.RangeSearchStrings(queries, 2, &SearchParams{MaxRangeResults: int64(most)})
	if err != nil {
		t.Fatal(err)
	}
	largest := 0
	for q := 0; q < res.NQ(); q++ {
		if ids, _ := res.Hits(q); len(ids) > largest {
			largest = len(ids)
		}
	}
	if largest != most {
		t.Fatalf("largest query has %d hits, want %d", largest, most)
	}
	// k-NN searches ignore it; a negative cap is invalid.
	if _, err := ix.SearchStrings(queries, 5, &SearchParams{MaxRangeResults: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = ix.RangeSearchStrings(queries, 2, &SearchParams{MaxRangeResults: -1})
	wantError(t, err, ErrInvalidArgument)

	// The same on a vector index.
	flat := newFlat(t, ctx, 4, MetricL2, randomVectors(5, 100, 4))
	q := randomVectors(6, 3, 4)
	_, err = flat.RangeSearch(q, 100, &SearchParams{MaxRangeResults: 10})
	wantError(t, err, ErrTooManyResults)
	all, err := flat.RangeSearch(q, 100, &SearchParams{MaxRangeResults: 100})
	if err != nil || len(all.IDs) != 300 {
		t.Fatalf("uncapped: %v", err)
	}
}

func TestStringsAndVectorsDoNotMix(t *testing.T) {
	ctx := newContext(t)
	strs := newStrings(t, ctx, ListOfClusters(8), randomWords(5, 20))
	wantError(t, strs.Add([]float32{1, 2}), ErrUnsupported)
	wantError(t, strs.AddWithIDs([]float32{1}, []int64{7}), ErrUnsupported)
	wantError(t, strs.Train([]float32{1}), ErrUnsupported)
	_, err := strs.Search([]float32{1}, 1, nil)
	wantError(t, err, ErrUnsupported)
	wantError(t, strs.SearchInto([]float32{1}, 1, nil, make([]float32, 1), make([]int64, 1)), ErrUnsupported)
	_, err = strs.RangeSearch([]float32{1}, 1, nil)
	wantError(t, err, ErrUnsupported)
	if info, _ := strs.Info(); info.Count != 20 {
		t.Fatalf("count %d after failed adds", info.Count)
	}
	wantError(t, strs.AddStringsWithIDs(ByteStrings("a", "b"), []int64{1}), ErrInvalidArgument)
	_, err = strs.SearchStrings(ByteStrings("a"), 0, nil)
	wantError(t, err, ErrInvalidArgument)

	vectors, err := NewIndex(ctx, ListOfClusters(8), 4, MetricL1)
	if err != nil {
		t.Fatal(err)
	}
	defer vectors.Close()
	if err := vectors.Add(randomVectors(6, 50, 4)); err != nil {
		t.Fatal(err)
	}
	wantError(t, vectors.AddStrings(ByteStrings("abc")), ErrUnsupported)
	_, err = vectors.SearchStrings(ByteStrings("abc"), 1, nil)
	wantError(t, err, ErrUnsupported)
	_, err = vectors.RangeSearchStrings(ByteStrings("abc"), 1, nil)
	wantError(t, err, ErrUnsupported)

	vectors.Close()
	wantError(t, vectors.AddStrings(ByteStrings("abc")), ErrInvalidArgument)
	_, err = vectors.SearchStrings(ByteStrings("abc"), 1, nil)
	wantError(t, err, ErrInvalidArgument)
}

func TestMetricSpaceDescriptors(t *testing.T) {
	ctx := newContext(t)
	for desc, want := range map[string]string{ListOfClusters(32): "LC32", Sss(0.4, 0): "SSS0.4",
		Sss(0.5, 32): "SSS0.5,P32", Sss(2, 1): "SSS2,P1"} {
		if desc != want {
			t.Errorf("descriptor %q, want %q", desc, want)
		}
		for _, c := range []struct {
			dim    int
			metric Metric
		}{{0, MetricEdit}, {3, MetricL1}, {3, MetricLInf}, {3, MetricL2}} {
			ix, err := NewIndex(ctx, desc, c.dim, c.metric)
			if err != nil {
				t.Fatalf("NewIndex(%q, %v): %v", desc, c.metric, err)
			}
			if info, err := ix.Info(); err != nil || info.Descriptor != want {
				t.Fatalf("info %+v, %v", info, err)
			}
			ix.Close()
		}
	}
	for _, c := range []struct {
		desc     string
		dim      int
		metric   Metric
		sentinel *Error
	}{
		{ListOfClusters(8), 4, MetricInnerProduct, ErrUnsupported},
		{Sss(0.4, 0), 4, MetricCosine, ErrUnsupported},
		{IvfFlat(4), 0, MetricEdit, ErrUnsupported},
		{Flat, 4, MetricEdit, ErrInvalidArgument}, // strings have dimension 0
		{ListOfClusters(0), 4, MetricL1, ErrInvalidArgument},
		{Sss(3, 0), 4, MetricL1, ErrInvalidArgument}, // alpha in (0, 2]
		{Sss(math.Inf(1), 0), 4, MetricL1, ErrInvalidArgument},
	} {
		ix, err := NewIndex(ctx, c.desc, c.dim, c.metric)
		if err == nil {
			ix.Close()
		}
		wantError(t, err, c.sentinel)
	}
}

// TestConcurrentStringSearch runs string searches from many goroutines on one index while strings
// are added far from the queries; run it under -race.
func TestConcurrentStringSearch(t *testing.T) {
	ctx := newContext(t)
	base := randomWords(6, 200)
	queries := wordQueries(base)
	ix := newStrings(t, ctx, ListOfClusters(8), base)
	want, err := ix.SearchStrings(queries, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 8, 20
	errs := make(chan error, workers+1)
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func(w int) {
			defer func() { done <- struct{}{} }()
			for r := 0; r < rounds; r++ {
				if w%2 == 1 {
					if _, err := ix.RangeSearchStrings(queries, 1, nil); err != nil {
						errs <- err
						return
					}
					continue
				}
				got, err := ix.SearchStrings(queries, 3, nil)
				if err != nil {
					errs <- err
					return
				}
				for i := range want.Distances {
					if got.Distances[i] != want.Distances[i] {
						errs <- fmt.Errorf("worker %d: distances %v, want %v", w, got.Distances, want.Distances)
						return
					}
				}
			}
		}(w)
	}
	// A writer: 20 or more "z"s, at least 14 edits from every query (6 bytes at most), never among
	// the 3 nearest.
	go func() {
		defer func() { done <- struct{}{} }()
		for r := 0; r < rounds; r++ {
			if err := ix.AddStrings([][]byte{bytes.Repeat([]byte("z"), 20+r)}); err != nil {
				errs <- err
				return
			}
		}
	}()
	for i := 0; i < workers+1; i++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
