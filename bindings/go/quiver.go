// Package quiver is the Go binding of quiver, a similarity-search library: exact k-nearest-neighbour
// search, range search and k-means over dense float32 vectors, on NVIDIA GPUs and on CPUs; and
// k-nearest-neighbour and range search over byte strings by edit distance (MetricEdit).
//
// The package mirrors the C API of include/quiver/quiver.h one function for one function, and links
// the shared library libquiver.so built from the same repository. Built with the tag quiver_mpi, it
// also binds include/quiver/quiver_mpi.h (DistIndex, an index spread over the processes of an MPI
// communicator) and links libquiver_mpi.so and Open MPI.
//
// Vectors are row-major []float32: n vectors of dimension dim are one slice of n*dim floats.
// Slices are read or written only during a call; the library keeps no pointer to Go memory.
//
// Every failure is an *Error carrying the C status and message; test it with errors.Is against the
// Err* values, e.g. errors.Is(err, quiver.ErrInvalidArgument).
//
// A Context and an Index hold C resources: Close them when done. Close is idempotent, and a
// finalizer releases a handle that was forgotten, whenever the garbage collector gets to it. Both
// are safe for concurrent use by many goroutines: searches on one Index run in parallel, while
// Train, Add, Remove and Close wait for them and run alone, as the C API requires.
package quiver

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}/../../build/include
#cgo LDFLAGS: -L${SRCDIR}/../../build -lquiver -Wl,-rpath,${SRCDIR}/../../build
#include "quiver_go.h"

#if QV_ABI_VERSION != 1
#error "this Go package is written for quiver ABI version 1 (QV_ABI_VERSION in quiver/version.h)"
#endif
*/
import "C"

// The C.qv_*_init calls go through quiver.h's macros, which pass the size of the struct cgo compiles
// from the same header to qv_*_init_sized: the library writes exactly that struct.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// Version returns the version of the linked library as major*10000 + minor*100 + patch
// (QV_VERSION_NUMBER).
func Version() uint32 { return uint32(C.qv_version()) }

// VersionString returns the version of the linked library as "MAJOR.MINOR.PATCH".
func VersionString() string { return C.GoString(C.qv_version_string()) }

// ABIVersion returns the ABI version of the linked library. It equals HeaderABIVersion: the package
// does not compile against another header, and the loader refuses a library of another SOVERSION.
func ABIVersion() uint32 { return uint32(C.qv_abi_version()) }

// HeaderABIVersion is the ABI version (QV_ABI_VERSION) of the header this package was compiled with.
const HeaderABIVersion = C.QV_ABI_VERSION

// MaxK is the largest k accepted by the k-nearest-neighbour searches (QV_MAX_K).
const MaxK = C.QV_MAX_K

// Flat is the descriptor of the exact index: every search compares the query with every vector.
const Flat = "Flat"

// IvfFlat is the descriptor "IVF<nlist>,Flat" of an inverted file with raw vectors (IVF-Flat):
// training runs k-means for nlist centroids, each vector goes to the list of its nearest centroid,
// and a search visits the SearchParams.NProbe lists nearest the query, with exact distances.
func IvfFlat(nlist int) string { return fmt.Sprintf("IVF%d,Flat", nlist) }

// IvfPq is the descriptor "IVF<nlist>,PQ<m>" of an inverted file of product-quantization codes
// (IVF-PQ, m bytes a vector; m divides the dimension). With opq > 0 an OPQ rotation of opq
// sub-spaces ("OPQ<opq>,...") comes first; with refine the raw vectors are kept too (",Refine") and
// SearchParams.RefineFactor x k candidates are re-ranked exactly. See qv_index_create in quiver.h.
func IvfPq(nlist, m, opq int, refine bool) string {
	d := fmt.Sprintf("IVF%d,PQ%d", nlist, m)
	if opq > 0 {
		d = fmt.Sprintf("OPQ%d,%s", opq, d)
	}
	if refine {
		d += ",Refine"
	}
	return d
}

// ListOfClusters is the descriptor "LC<clusterSize>" of a List of Clusters, a metric-space index for
// the true metrics (MetricL2, MetricL1, MetricLInf, MetricEdit; not the similarities): clusters of
// clusterSize objects (1 .. 65536) around centres chosen farthest-first, each with its covering
// radius. Searches prune clusters by the triangle inequality and return exactly what brute force
// returns. No training: the first Add (or AddStrings) builds the clusters.
func ListOfClusters(clusterSize int) string { return fmt.Sprintf("LC%d", clusterSize) }

// Sss is the descriptor "SSS<alpha>[,P<maxPivots>]" of a Sparse Spatial Selection pivot index, for
// the same metrics as ListOfClusters and exact as it: an object becomes a pivot when farther than
// alpha (in (0, 2], e.g. 0.4) times the largest distance seen from every pivot, at most maxPivots
// (1 .. 1024; 0 for the library's default, 64). A table of every object's distance to every pivot
// (4 bytes a pivot an object) filters candidates. The first add chooses the pivots.
func Sss(alpha float64, maxPivots int) string {
	// 'f' with precision -1: the shortest plain decimal that reads back as alpha, never an exponent.
	d := "SSS" + strconv.FormatFloat(alpha, 'f', -1, 64)
	if maxPivots > 0 {
		d += fmt.Sprintf(",P%d", maxPivots)
	}
	return d
}

// Metric is how vectors (or byte strings) are compared. MetricL2, MetricInnerProduct and
// MetricCosine serve every index kind; MetricL1 and MetricLInf only Flat, ListOfClusters and Sss;
// MetricEdit is the metric of indexes of byte strings (the same kinds, dimension 0).
type Metric int32

const (
	// MetricL2 is the squared Euclidean distance; smaller is closer, distances and radii are squared.
	MetricL2 Metric = C.QV_METRIC_L2
	// MetricInnerProduct is the inner product <x, y>; larger is closer.
	MetricInnerProduct Metric = C.QV_METRIC_INNER_PRODUCT
	// MetricCosine is the cosine similarity <x, y> / (|x| |y|) in [-1, 1]; larger is closer.
	// Zero vectors are rejected.
	MetricCosine Metric = C.QV_METRIC_COSINE
	// MetricL1 is the L1 (Manhattan) distance sum |x_i - y_i|; smaller is closer.
	MetricL1 Metric = C.QV_METRIC_L1
	// MetricLInf is the L-infinity (Chebyshev) distance max |x_i - y_i|; smaller is closer.
	MetricLInf Metric = C.QV_METRIC_LINF
	// MetricEdit is the edit (Levenshtein) distance between byte strings: the fewest single-byte
	// insertions, deletions and substitutions; a whole number, smaller is closer. Its indexes have
	// dimension 0 and hold strings: AddStrings, SearchStrings and RangeSearchStrings.
	MetricEdit Metric = C.QV_METRIC_EDIT
)

// String returns the metric's name, e.g. "L2".
func (m Metric) String() string {
	switch m {
	case MetricL2:
		return "L2"
	case MetricInnerProduct:
		return "InnerProduct"
	case MetricCosine:
		return "Cosine"
	case MetricL1:
		return "L1"
	case MetricLInf:
		return "LInf"
	case MetricEdit:
		return "Edit"
	}
	return fmt.Sprintf("Metric(%d)", int32(m))
}

// ComputeMode is the arithmetic of a search on a CUDA device. Exact search: the fast modes select an
// enlarged candidate set with the cheaper GEMM and re-rank it with exact float32 distances (recall@k
// >= 0.999 on the benchmark data sets). Graph indexes: ComputeFP16 and ComputeBF16 walk a 16-bit copy
// of the vectors and re-rank in float32. The CPU always computes exactly and ignores the mode.
type ComputeMode int32

const (
	// ComputeFP32 is the float32 GEMM (the default).
	ComputeFP32 ComputeMode = C.QV_COMPUTE_FP32
	// ComputeTF32 uses TF32 tensor cores on the float32 data.
	ComputeTF32 ComputeMode = C.QV_COMPUTE_TF32
	// ComputeFP16 uses float16 copies of the vectors (values must fit float16's range).
	ComputeFP16 ComputeMode = C.QV_COMPUTE_FP16
	// ComputeBF16 uses bfloat16 copies of the vectors.
	ComputeBF16 ComputeMode = C.QV_COMPUTE_BF16
)

// GraphVisited is the visited set of a graph index's walk on a CUDA device
// (SearchParams.GraphVisited): the nodes a query has already reached, kept in its warp's shared
// memory (SONG's choices). The filters now and then take a new node for a visited one and skip it:
// that may cost recall, never correctness (results stay sorted, distinct and with exact distances).
// On an H100 (1M x 128 vectors, degree 32) the Bloom filter answered 13-16% more queries a second
// than the hash table at search widths 64-128, with the same recall; the Cuckoo filter was as fast
// as the table or slower. CPU searches ignore it.
type GraphVisited int32

const (
	// GraphVisitedDefault is the library's choice, today GraphVisitedBloom (the default).
	GraphVisitedDefault GraphVisited = C.QV_GRAPH_VISITED_DEFAULT
	// GraphVisitedHashTable is an open-addressing table of the nodes: exact, with deletion.
	GraphVisitedHashTable GraphVisited = C.QV_GRAPH_VISITED_HASH_TABLE
	// GraphVisitedBloom is a Bloom filter, 3 bits a node, rebuilt from the queue when full.
	GraphVisitedBloom GraphVisited = C.QV_GRAPH_VISITED_BLOOM
	// GraphVisitedCuckoo is a Cuckoo filter of 16-bit fingerprints, with deletion.
	GraphVisitedCuckoo GraphVisited = C.QV_GRAPH_VISITED_CUCKOO
)

// String returns the visited set's name, e.g. "Bloom".
func (v GraphVisited) String() string {
	switch v {
	case GraphVisitedDefault:
		return "Default"
	case GraphVisitedHashTable:
		return "HashTable"
	case GraphVisitedBloom:
		return "Bloom"
	case GraphVisitedCuckoo:
		return "Cuckoo"
	}
	return fmt.Sprintf("GraphVisited(%d)", int32(v))
}

// GraphMaxProbes is the largest SearchParams.GraphProbes (QV_GRAPH_MAX_PROBES).
const GraphMaxProbes = C.QV_GRAPH_MAX_PROBES

// GraphMaxWarpsPerQuery is the largest SearchParams.GraphWarpsPerQuery (QV_GRAPH_MAX_WARPS_PER_QUERY).
const GraphMaxWarpsPerQuery = C.QV_GRAPH_MAX_WARPS_PER_QUERY

// DeviceKind is where a context runs its work.
type DeviceKind int32

const (
	// DeviceAuto is a CUDA device when one is usable, else the CPU.
	DeviceAuto DeviceKind = C.QV_DEVICE_AUTO
	// DeviceCPU is the CPU.
	DeviceCPU DeviceKind = C.QV_DEVICE_CPU
	// DeviceCUDA is a CUDA device.
	DeviceCUDA DeviceKind = C.QV_DEVICE_CUDA
)

// String returns the device kind's name, e.g. "CPU".
func (d DeviceKind) String() string {
	switch d {
	case DeviceAuto:
		return "Auto"
	case DeviceCPU:
		return "CPU"
	case DeviceCUDA:
		return "CUDA"
	}
	return fmt.Sprintf("DeviceKind(%d)", int32(d))
}

// call names the quiver function a helper of quiver_go.h is to make, together with the reader of
// the thread's error message, which the helper calls in the same cgo call when the function fails.
func call(fn unsafe.Pointer) C.qv_go_call_t {
	return C.qv_go_call_t{fn: (*[0]byte)(fn), message: (*[0]byte)(C.qv_last_error_message)}
}

// rows returns how many vectors of dimension dim the slice x named name holds.
func rows(name string, x []float32, dim int) (int, error) {
	if dim <= 0 {
		return 0, invalidArgument("dim is %d, must be at least 1", dim)
	}
	if len(x)%dim != 0 {
		return 0, invalidArgument("%s has %d floats, not a multiple of dim %d", name, len(x), dim)
	}
	return len(x) / dim, nil
}

// checkK validates a k of the k-nearest-neighbour searches, before outputs are allocated.
func checkK(k int) error {
	if k < 1 || k > MaxK {
		return invalidArgument("k is %d, must be in 1 .. %d", k, MaxK)
	}
	return nil
}

// cString converts s for C, refusing a NUL byte that would cut it short. Free the result with C.free.
func cString(name, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, invalidArgument("%s contains a NUL byte", name)
	}
	return C.CString(s), nil
}

func floats(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

func int64s(s []int64) *C.int64_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&s[0]))
}

// uint32Arg converts a count that the C API takes as uint32_t.
func uint32Arg(name string, v int) (C.uint32_t, error) {
	if v < 0 || uint64(v) > math.MaxUint32 {
		return 0, invalidArgument("%s is %d, out of range 0 .. %d", name, v, uint32(math.MaxUint32))
	}
	return C.uint32_t(v), nil
}
