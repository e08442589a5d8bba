package quiver

// This file's preamble may hold declarations only, since it exports a Go function to C.

// #include <stdint.h>
import "C"

import "runtime/cgo"

// qvGoKnnGraphProgress runs the Progress func of a KnnGraph call. The library calls it on the
// thread of that call, so it runs on the calling goroutine's stack of cgo frames. Nonzero cancels.
//
//export qvGoKnnGraphProgress
func qvGoKnnGraphProgress(fraction C.double, handle C.uintptr_t) (cancel C.int) {
	state := cgo.Handle(handle).Value().(*progressState)
	if state.panicked {
		return 1
	}
	// A panic must not unwind through the library's C++ frames: it is kept, the build cancelled, and
	// KnnGraph panics again after the call.
	defer func() {
		if r := recover(); r != nil {
			state.panicked, state.value = true, r
			cancel = 1
		}
	}()
	if state.fn(float64(fraction)) {
		return 0
	}
	return 1
}
