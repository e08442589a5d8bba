package quiver_test

import (
	"fmt"
	"log"

	"quiver.dev/quiver"
)

// Example builds an exact index over four 2-d vectors and finds the two nearest neighbours of a
// query.
func Example() {
	ctx, err := quiver.NewContext(nil) // a GPU if one is usable, else the CPU
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	index, err := quiver.NewIndex(ctx, quiver.Flat, 2, quiver.MetricL2)
	if err != nil {
		log.Fatal(err)
	}
	defer index.Close()

	vectors := []float32{ // row-major: one vector per row
		0, 0,
		1, 0,
		0, 2,
		3, 3,
	}
	if err := index.AddWithIDs(vectors, []int64{10, 11, 12, 13}); err != nil {
		log.Fatal(err)
	}

	res, err := index.Search([]float32{0.9, 0.1}, 2, nil)
	if err != nil {
		log.Fatal(err)
	}
	distances, ids := res.Row(0)
	for i := range ids {
		fmt.Printf("id %d at squared distance %.2f\n", ids[i], distances[i])
	}
	// Output:
	// id 11 at squared distance 0.02
	// id 10 at squared distance 0.82
}

// ExampleIndex_SearchStrings finds the words nearest a query by edit distance, in a List of
// Clusters index of byte strings.
func ExampleIndex_SearchStrings() {
	ctx, err := quiver.NewContext(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	index, err := quiver.NewIndex(ctx, quiver.ListOfClusters(8), 0, quiver.MetricEdit) // strings: dim 0
	if err != nil {
		log.Fatal(err)
	}
	defer index.Close()

	words := quiver.ByteStrings("kitten", "sitting", "mitten", "fitting")
	if err := index.AddStrings(words); err != nil {
		log.Fatal(err)
	}
	res, err := index.SearchStrings(quiver.ByteStrings("mittens"), 2, nil)
	if err != nil {
		log.Fatal(err)
	}
	distances, ids := res.Row(0)
	for i := range ids {
		fmt.Printf("%s at edit distance %.0f\n", words[ids[i]], distances[i])
	}
	// Output:
	// mitten at edit distance 1
	// kitten at edit distance 2
}

// Example_severalDevices spreads one exact index over every GPU of the machine in four shards (on
// the CPU, when there is no GPU, four logical shards) and checks that it answers as one plain index
// does. "Replicated,<kind>" would instead keep a full copy on each GPU and split batches among them.
func Example_severalDevices() {
	ctx, err := quiver.NewContext(&quiver.ContextOptions{AllDevices: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	const dim, n = 8, 1000
	vectors := make([]float32, n*dim)
	state := uint32(2463534242)
	for i := range vectors { // any data (xorshift); the ids below are our own
		state ^= state << 13
		state ^= state >> 17
		state ^= state << 5
		vectors[i] = float32(state>>8) / (1 << 24)
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = 100000 + 2*int64(i)
	}
	var found [2]*quiver.Neighbors
	for i, descriptor := range []string{"Sharded4,Flat", quiver.Flat} {
		index, err := quiver.NewIndex(ctx, descriptor, dim, quiver.MetricL2)
		if err != nil {
			log.Fatal(err)
		}
		defer index.Close()
		if err := index.AddWithIDs(vectors, ids); err != nil {
			log.Fatal(err)
		}
		if found[i], err = index.Search(vectors[:5*dim], 3, nil); err != nil {
			log.Fatal(err)
		}
		info, err := index.Info()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%q: %d vectors\n", info.Descriptor, info.Count)
	}
	same := true
	for i := range found[0].IDs {
		same = same && found[0].IDs[i] == found[1].IDs[i]
	}
	fmt.Println("same neighbours:", same)
	// Output:
	// "Sharded4,Flat": 1000 vectors
	// "Flat": 1000 vectors
	// same neighbours: true
}
