//go:build quiver_mpi

package quiver

/*
#cgo LDFLAGS: -L${SRCDIR}/../../build -lquiver_mpi -Wl,-rpath,${SRCDIR}/../../build
#cgo pkg-config: ompi-c
#include "quiver_mpi_go.h"
*/
import "C"

import (
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// The distributed index (build tag quiver_mpi): one index spread over the processes of an MPI
// communicator, through libquiver_mpi (include/quiver/quiver_mpi.h).

// mpiMu is held by every qv_dist_* call of the package: CommWorld initialises MPI at
// MPI_THREAD_SERIALIZED, which lets one thread at a time make MPI calls, and goroutines run on many
// threads. It also guards the state below and every DistIndex's handle.
var mpiMu sync.Mutex

var (
	distIndexes  int  // open DistIndexes: Finalize refuses while there are any
	mpiFinalized bool // Finalize ran: MPI cannot be used (or initialised) again in this process
)

// refusedPrefix is a prefix no rank can write or read (a path under the device /dev/null), passed
// in place of one the package refuses (see refuse).
const refusedPrefix = "/dev/null/quiver-refused-prefix"

// distCall names the qv_dist_* function a helper of quiver_mpi_go.h is to make, with
// qv_dist_last_error_message as the reader of its message.
func distCall(fn unsafe.Pointer) C.qv_go_call_t {
	return C.qv_go_call_t{fn: (*[0]byte)(fn), message: (*[0]byte)(C.qv_dist_last_error_message)}
}

// refuse is for a rank whose arguments failed the package's own checks: it still makes the
// collective call, through do, with arguments the library refuses inside its agreement step (a
// negative count, an unwritable prefix), so that every rank fails together (the others with
// ErrRemote) instead of waiting for this one until the timeout; and it returns err. mpiMu is held.
func refuse(err error, do func() C.qv_go_status_t) error {
	r := do()
	statusError(r) // frees the message copy; the package's error is the one returned
	return err
}

func finalizedError() error {
	return invalidArgument("MPI is finalised (quiver.Finalize); it cannot be used again")
}

// MpiComm is an MPI communicator as NewDistIndex and LoadDistIndex take it: a pointer to an MPI_Comm
// (an MPI_Comm *, C memory). The index duplicates the communicator; an MpiComm owns nothing.
type MpiComm struct {
	p unsafe.Pointer
}

// CommWorld returns MPI_COMM_WORLD (qv_dist_comm_world), initialising MPI first where nothing has
// (MPI_THREAD_SERIALIZED, no arguments). A program started without mpirun is a world of one rank (an
// MPI singleton). It fails after Finalize.
func CommWorld() (MpiComm, error) {
	mpiMu.Lock()
	defer mpiMu.Unlock()
	if mpiFinalized {
		return MpiComm{}, finalizedError()
	}
	var p unsafe.Pointer
	if err := statusError(C.qv_go_dist_comm_world(distCall(C.qv_dist_comm_world), &p)); err != nil {
		return MpiComm{}, err
	}
	if p == nil {
		return MpiComm{}, &Error{Status: StatusInternal, Message: "qv_dist_comm_world returned NULL"}
	}
	return MpiComm{p: p}, nil
}

// MpiCommFromPointer wraps a communicator of the program's own, for programs that initialise MPI
// themselves (in C, through cgo): p is an MPI_Comm * in C memory, valid whenever NewDistIndex or
// LoadDistIndex is given it. MPI must be initialised at MPI_THREAD_SERIALIZED or more where several
// threads make MPI calls, and not be finalised while an index made from it is open. The package
// serialises its own MPI calls, not the program's: make none while a DistIndex call runs.
func MpiCommFromPointer(p unsafe.Pointer) MpiComm { return MpiComm{p: p} }

// Pointer returns the MPI_Comm * of the communicator.
func (c MpiComm) Pointer() unsafe.Pointer { return c.p }

// Finalize finalises MPI if CommWorld initialised it (qv_dist_finalize); where the program
// initialised MPI itself, it does nothing (finalise your own). Call it once, at the end, on every
// rank, after every DistIndex is closed: while one is open it fails with ErrInvalidArgument.
// Afterwards CommWorld, NewDistIndex and LoadDistIndex fail: MPI cannot start twice in one process.
func Finalize() error {
	mpiMu.Lock()
	defer mpiMu.Unlock()
	if distIndexes > 0 {
		return invalidArgument("Finalize: %d distributed index(es) still open; close them first", distIndexes)
	}
	if err := statusError(C.qv_go_dist_finalize(distCall(C.qv_dist_finalize))); err != nil {
		return err
	}
	mpiFinalized = true
	return nil
}

// DistOptions are the options of a distributed index, the same on every rank. The zero value, like
// a nil *DistOptions, means the defaults.
type DistOptions struct {
	// Root is the rank that gives the queries of searches and receives their results; default 0.
	// A rank the communicator does not have makes NewDistIndex and LoadDistIndex fail with
	// ErrInvalidArgument.
	Root int
	// Timeout is the longest wait for the other ranks in one collective step; 0 (default) means
	// 60 s. A rank that does not take part in time makes the others fail with ErrRemote (the
	// communicator may then be unusable: MPI cannot cancel a collective). Taken in whole
	// milliseconds, rounded up, from 1 ms to math.MaxInt32 ms.
	Timeout time.Duration
}

// c returns the C struct: always one the library accepts (the root and timeout clamped to int32,
// the timeout to at least 1 ms), since refused options fail one rank before the others start
// waiting for it.
func (o *DistOptions) c() C.qv_dist_options_t {
	var opts C.qv_dist_options_t
	if C.qv_dist_options_init(&opts) != C.QV_OK {
		opts.struct_size = C.uint32_t(unsafe.Sizeof(opts))
		opts.root = 0
		opts.timeout_ms = 60000
	}
	if o == nil {
		return opts
	}
	root := o.Root
	if root > math.MaxInt32 {
		root = math.MaxInt32
	} else if root < math.MinInt32 {
		root = math.MinInt32
	}
	opts.root = C.int32_t(root)
	if o.Timeout != 0 {
		ms := o.Timeout / time.Millisecond
		if o.Timeout%time.Millisecond != 0 {
			ms++ // rounded up
		}
		if ms < 1 {
			ms = 1
		} else if ms > math.MaxInt32 {
			ms = math.MaxInt32
		}
		opts.timeout_ms = C.int32_t(ms)
	}
	return opts
}

// DistIndexInfo is what DistIndex.Info reports.
type DistIndexInfo struct {
	Rank       int   // this process's rank in the index's communicator
	Size       int   // the number of ranks
	LocalCount int64 // vectors held by this rank (those whose id % Size is its rank)
	TotalCount int64 // vectors held by all ranks together
}

// DistIndex is one index spread over the processes (ranks) of an MPI communicator (libquiver_mpi):
// each rank holds one shard, an ordinary index on its own Context, and the vector with id i lives on
// rank i % size.
//
// Every method, NewDistIndex, LoadDistIndex and Close included, is collective: each rank makes the
// same call in the same order. A failure on any rank fails the call on every rank, the others with
// ErrRemote naming the failing rank; nothing is half-added. Searches take their queries from the
// root rank (DistOptions.Root) and return the merged results there; other ranks get nil. Calls
// from several goroutines are serialised, but their order must still be the same on every rank:
// use an index from one goroutine. Close is not left to a finalizer (a collective cannot run at a
// time the garbage collector chooses): close every index, then call Finalize.
type DistIndex struct {
	h    *C.qv_dist_index_t // guarded by mpiMu; nil once closed
	ctx  *Context
	dim  int // 0 where a loaded index's manifest could not be read (vector calls then fail)
	rank int
	size int
	root int
}

// NewDistIndex creates an empty distributed index (collective), as NewIndex on each rank's ctx:
// descriptor, dim, metric and opts the same on every rank; opts nil means the defaults.
func NewDistIndex(ctx *Context, comm MpiComm, descriptor string, dim int, metric Metric,
	opts *DistOptions) (*DistIndex, error) {
	// A descriptor or dim refused here goes to the library as one it refuses too (empty, -1), so
	// that the ranks fail together (see refuse).
	var refused error
	if strings.IndexByte(descriptor, 0) >= 0 {
		refused = invalidArgument("descriptor contains a NUL byte")
		descriptor = ""
	}
	cdim := C.int64_t(dim)
	if dim < 0 {
		refused = invalidArgument("dim is %d, must not be negative", dim)
		cdim = -1
	}
	desc := C.CString(descriptor)
	defer C.free(unsafe.Pointer(desc))
	o := opts.c()
	return openDist(ctx, comm, dim, int(o.root), refused,
		func(c *C.qv_context_t, out **C.qv_dist_index_t) C.qv_go_status_t {
			return C.qv_go_dist_index_create(distCall(C.qv_dist_index_create), c, comm.p, desc, cdim,
				C.qv_metric_t(metric), &o, out)
		})
}

// LoadDistIndex loads what DistIndex.Save wrote under prefix (collective), on a communicator of as
// many ranks as saved it (else ErrInvalidArgument), each shard onto its rank's ctx.
func LoadDistIndex(ctx *Context, comm MpiComm, prefix string, opts *DistOptions) (*DistIndex, error) {
	var refused error
	dim := 0
	if strings.IndexByte(prefix, 0) >= 0 {
		refused = invalidArgument("prefix contains a NUL byte")
		prefix = refusedPrefix
	} else {
		dim = manifestDim(prefix)
	}
	cprefix := C.CString(prefix)
	defer C.free(unsafe.Pointer(cprefix))
	o := opts.c()
	return openDist(ctx, comm, dim, int(o.root), refused,
		func(c *C.qv_context_t, out **C.qv_dist_index_t) C.qv_go_status_t {
			return C.qv_go_dist_index_load(distCall(C.qv_dist_index_load), c, comm.p, cprefix, &o, out)
		})
}

// openDist makes an index with create, which gets ctx's handle, wraps it and learns this rank and
// the size (Info).
func openDist(ctx *Context, comm MpiComm, dim, root int, refused error,
	create func(*C.qv_context_t, **C.qv_dist_index_t) C.qv_go_status_t) (*DistIndex, error) {
	if comm.p == nil {
		return nil, invalidArgument("comm is nil")
	}
	c, err := ctx.acquire()
	if err != nil {
		return nil, err
	}
	defer ctx.mu.RUnlock()
	mpiMu.Lock()
	if mpiFinalized {
		mpiMu.Unlock()
		return nil, finalizedError()
	}
	var h *C.qv_dist_index_t
	err = statusError(create(c, &h))
	var d *DistIndex
	if h != nil {
		distIndexes++
		d = &DistIndex{h: h, ctx: ctx, dim: dim, size: 1, root: root}
	}
	mpiMu.Unlock()
	if refused == nil && err == nil && d == nil {
		err = &Error{Status: StatusInternal, Message: "qv_dist_index_create or _load returned NULL"}
	}
	if refused != nil || err != nil {
		if d != nil {
			d.Close() // as every rank does
		}
		if refused != nil {
			return nil, refused
		}
		return nil, err
	}
	info, err := d.Info()
	if err != nil {
		d.Close()
		return nil, err
	}
	d.rank, d.size = info.Rank, info.Size
	return d, nil
}

// manifestDim returns the dimension a saved index's manifest (<prefix>.manifest, line "dim <n>")
// records, which qv_dist_index_info does not report; 0 where it cannot be read, and vector calls
// then fail (together, on every rank: see refuse).
func manifestDim(prefix string) int {
	text, err := os.ReadFile(prefix + ".manifest")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "dim ") {
			if n, err := strconv.Atoi(strings.TrimSpace(line[len("dim "):])); err == nil && n >= 0 {
				return n
			}
		}
	}
	return 0
}

// Dim returns the vector dimension.
func (d *DistIndex) Dim() int { return d.dim }

// Rank returns this process's rank in the index's communicator.
func (d *DistIndex) Rank() int { return d.rank }

// Size returns the number of ranks.
func (d *DistIndex) Size() int { return d.size }

// Root returns the root rank, whose queries are searched and which receives the results.
func (d *DistIndex) Root() int { return d.root }

// IsRoot reports whether this rank is the root.
func (d *DistIndex) IsRoot() bool { return d.rank == d.root }

// Close frees the index (collective: every rank closes it, in the same order among the calls).
// Later calls fail. Close is idempotent and always returns nil.
func (d *DistIndex) Close() error {
	mpiMu.Lock()
	defer mpiMu.Unlock()
	if d.h != nil {
		C.qv_dist_index_free(d.h)
		d.h = nil
		distIndexes--
	}
	return nil
}

// lock takes mpiMu and returns the index's handle; the caller unlocks mpiMu.
func (d *DistIndex) lock() (*C.qv_dist_index_t, error) {
	if d == nil {
		return nil, invalidArgument("distributed index is nil")
	}
	mpiMu.Lock()
	if d.h == nil {
		mpiMu.Unlock()
		return nil, closedError("distributed index")
	}
	return d.h, nil
}

// Train trains on the union of every rank's vectors of x (len(x) a multiple of Dim(), possibly 0),
// gathered to rank 0, which trains and gives every rank the model. Collective.
func (d *DistIndex) Train(x []float32) error {
	h, err := d.lock()
	if err != nil {
		return err
	}
	defer mpiMu.Unlock()
	n, err := rows("x", x, d.dim)
	if err != nil {
		return refuse(err, func() C.qv_go_status_t {
			return C.qv_go_dist_index_train(distCall(C.qv_dist_index_train), h, -1, nil)
		})
	}
	return statusError(C.qv_go_dist_index_train(distCall(C.qv_dist_index_train), h, C.int64_t(n), floats(x)))
}

// Add adds this rank's vectors of x (len(x) a multiple of Dim(), possibly 0), numbered
// consecutively after the largest id the index has held, rank 0's vectors first; each goes to the
// rank owning its id. Every rank adding vectors must use Add (or every one AddWithIDs). Collective;
// on error nothing is added.
func (d *DistIndex) Add(x []float32) error { return d.add(x, nil) }

// AddWithIDs adds this rank's vectors of x with global ids (>= 0, unique over every rank, not in the
// index), one per vector. Collective; on error nothing is added.
func (d *DistIndex) AddWithIDs(x []float32, ids []int64) error {
	if ids == nil {
		ids = []int64{}
	}
	return d.add(x, ids)
}

func (d *DistIndex) add(x []float32, ids []int64) error {
	h, err := d.lock()
	if err != nil {
		return err
	}
	defer mpiMu.Unlock()
	n, err := rows("x", x, d.dim)
	if err == nil && ids != nil && len(ids) != n {
		err = invalidArgument("ids has %d entries for %d vectors", len(ids), n)
	}
	if err != nil {
		return refuse(err, func() C.qv_go_status_t {
			return C.qv_go_dist_index_add(distCall(C.qv_dist_index_add), h, -1, nil, nil)
		})
	}
	return statusError(C.qv_go_dist_index_add(distCall(C.qv_dist_index_add), h, C.int64_t(n), floats(x),
		int64s(ids)))
}

// Search returns the k nearest neighbours (1 <= k <= MaxK) over every shard of each row of the
// root's queries, merged on the root. Other ranks get nil and a nil error; their queries, k and p
// are ignored (pass nil). The root's p (a filter of global ids, NProbe, ...) applies on every
// shard; p nil means the defaults. Collective.
func (d *DistIndex) Search(queries []float32, k int, p *SearchParams) (*Neighbors, error) {
	h, err := d.lock()
	if err != nil {
		return nil, err
	}
	defer mpiMu.Unlock()
	if !d.IsRoot() {
		// Other ranks' nq, queries, k, parameters and outputs are ignored; 0 and NULL are allowed.
		err := statusError(C.qv_go_dist_index_search(distCall(C.qv_dist_index_search), h, 0, nil, 0, nil, nil,
			0, nil, nil))
		return nil, err
	}
	nq, err := rows("queries", queries, d.dim)
	var cp cParams
	if err == nil {
		err = checkK(k)
	}
	if err == nil {
		cp, err = p.c()
	}
	if err != nil {
		return nil, refuse(err, func() C.qv_go_status_t {
			return C.qv_go_dist_index_search(distCall(C.qv_dist_index_search), h, -1, nil, 0, nil, nil, 0, nil,
				nil)
		})
	}
	out := &Neighbors{NQ: nq, K: k, Distances: make([]float32, nq*k), IDs: make([]int64, nq*k)}
	err = statusError(C.qv_go_dist_index_search(distCall(C.qv_dist_index_search), h, C.int64_t(nq),
		floats(queries), C.uint32_t(k), cp.params, cp.filter, cp.bits, floats(out.Distances), int64s(out.IDs)))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RangeSearch finds every vector within radius (in the metric's units, as Index.RangeSearch) over
// every shard of each row of the root's queries, merged on the root. Other ranks get nil and a nil
// error; their arguments are ignored. Collective.
func (d *DistIndex) RangeSearch(queries []float32, radius float32, p *SearchParams) (*RangeResult, error) {
	h, err := d.lock()
	if err != nil {
		return nil, err
	}
	defer mpiMu.Unlock()
	var res *C.qv_range_result_t
	if !d.IsRoot() {
		err := statusError(C.qv_go_dist_index_range_search(distCall(C.qv_dist_index_range_search), h, 0, nil,
			C.float(radius), nil, nil, 0, &res))
		if res != nil {
			C.qv_range_result_free(res) // not expected off the root (the header says NULL)
		}
		return nil, err
	}
	nq, err := rows("queries", queries, d.dim)
	var cp cParams
	if err == nil {
		cp, err = p.c()
	}
	if err != nil {
		return nil, refuse(err, func() C.qv_go_status_t {
			return C.qv_go_dist_index_range_search(distCall(C.qv_dist_index_range_search), h, -1, nil,
				C.float(radius), nil, nil, 0, &res)
		})
	}
	err = statusError(C.qv_go_dist_index_range_search(distCall(C.qv_dist_index_range_search), h, C.int64_t(nq),
		floats(queries), C.float(radius), cp.params, cp.filter, cp.bits, &res))
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, &Error{Status: StatusInternal, Message: "qv_dist_index_range_search returned no result on the root"}
	}
	defer C.qv_range_result_free(res)
	return copyRangeResult(res)
}

// Remove removes the vectors with the given global ids wherever they live (each rank may name any
// ids; ids not in the index are ignored) and returns how many were removed over all ranks.
// Collective.
func (d *DistIndex) Remove(ids []int64) (int64, error) {
	h, err := d.lock()
	if err != nil {
		return 0, err
	}
	defer mpiMu.Unlock()
	var removed C.int64_t
	err = statusError(C.qv_go_dist_index_remove(distCall(C.qv_dist_index_remove), h, C.int64_t(len(ids)),
		int64s(ids), &removed))
	if err != nil {
		return 0, err
	}
	return int64(removed), nil
}

// Info returns this rank, the number of ranks, this rank's vector count and the total over all
// ranks. Collective (the total is a reduction).
func (d *DistIndex) Info() (DistIndexInfo, error) {
	h, err := d.lock()
	if err != nil {
		return DistIndexInfo{}, err
	}
	defer mpiMu.Unlock()
	var rank, size C.int32_t
	var local, total C.int64_t
	err = statusError(C.qv_go_dist_index_info(distCall(C.qv_dist_index_info), h, &rank, &size, &local, &total))
	if err != nil {
		return DistIndexInfo{}, err
	}
	return DistIndexInfo{Rank: int(rank), Size: int(size), LocalCount: int64(local), TotalCount: int64(total)}, nil
}

// Save saves the index (collective): each rank r writes its shard to <prefix>.<r>-of-<size>.qvi,
// then rank 0 the manifest <prefix>.manifest, once every shard is written. The directory must be
// one every rank can write (and, for LoadDistIndex, read), such as a shared one.
func (d *DistIndex) Save(prefix string) error {
	h, err := d.lock()
	if err != nil {
		return err
	}
	defer mpiMu.Unlock()
	var refused error
	if strings.IndexByte(prefix, 0) >= 0 {
		refused = invalidArgument("prefix contains a NUL byte")
		prefix = refusedPrefix
	}
	cprefix := C.CString(prefix)
	defer C.free(unsafe.Pointer(cprefix))
	err = statusError(C.qv_go_dist_index_save(distCall(C.qv_dist_index_save), h, cprefix))
	if refused != nil {
		return refused // every rank failed: this one's prefix could not be written (see refuse)
	}
	return err
}
