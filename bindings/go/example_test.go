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
