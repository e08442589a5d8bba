package quiver

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentSearch runs searches, range searches, Info and saves from many goroutines on one
// index, with adds and removes interleaved; run it under -race.
func TestConcurrentSearch(t *testing.T) {
	ctx := newContext(t)
	const dim, n = 16, 400
	base := randomVectors(60, n, dim)
	ix := newFlat(t, ctx, dim, MetricL2, base)
	q := randomVectors(61, 8, dim)
	want, err := ix.Search(q, 5, nil)
	if err != nil {
		t.Fatal(err)
	}

	const workers, rounds = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var err error
				switch (w + r) % 4 {
				case 0, 1:
					var got *Neighbors
					if got, err = ix.Search(q, 5, nil); err == nil {
						for i := range want.IDs {
							// Extra vectors added below sit far away and never displace these.
							if got.IDs[i] != want.IDs[i] {
								err = fmt.Errorf("worker %d: ids %v, want %v", w, got.IDs, want.IDs)
								break
							}
						}
					}
				case 2:
					_, err = ix.RangeSearch(q, 2, nil)
				case 3:
					if _, err = ix.Info(); err == nil {
						_, err = ix.SaveToBuffer()
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() { // a writer: Add and Remove run alone, between searches
		defer wg.Done()
		far := make([]float32, dim)
		for i := range far {
			far[i] = 100
		}
		for r := 0; r < rounds; r++ {
			id := int64(10000 + r)
			if err := ix.AddWithIDs(far, []int64{id}); err != nil {
				errs <- err
				return
			}
			if r%2 == 0 {
				if _, err := ix.Remove([]int64{id}); err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestConcurrentErrorMessages fails calls from many goroutines at once, each with its own
// offending id, while goroutines hop between OS threads: each must get its own message.
func TestConcurrentErrorMessages(t *testing.T) {
	ctx := newContext(t)
	const workers, rounds = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ix, err := NewIndex(ctx, Flat, 2, MetricL2)
			if err != nil {
				errs <- err
				return
			}
			defer ix.Close()
			id := int64(7000000 + 1013*w) // appears in no other worker's message
			if err := ix.AddWithIDs([]float32{1, 2}, []int64{id}); err != nil {
				errs <- err
				return
			}
			for r := 0; r < rounds; r++ {
				err := ix.AddWithIDs([]float32{3, 4}, []int64{id})
				e, ok := err.(*Error)
				if !ok || e.Status != StatusInvalidArgument || !strings.Contains(e.Message, fmt.Sprint(id)) {
					errs <- fmt.Errorf("worker %d: got %v, want a message naming id %d", w, err, id)
					return
				}
				if _, err := ix.Search([]float32{0, 0}, 1, nil); err != nil { // clears the thread's message
					errs <- err
					return
				}
				runtime.Gosched()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
