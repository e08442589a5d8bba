package quiver

// This file's preamble may hold declarations only, since it exports a Go function to C.

// #include <stdint.h>
import "C"

import "runtime/cgo"

// progressState is what the cgo handle of a call with a progress func refers to.
type progressState struct {
	fn       func(float64) bool
	panicked bool
	value    interface{}
}

// callWithProgress runs call with the cgo handle of progress (0 when progress is nil), deleted
// once call returns; a panic in progress, which cancelled the call, is raised again after it.
func callWithProgress(progress func(float64) bool, call func(handle C.uintptr_t) error) error {
	if progress == nil {
		return call(0)
	}
	state := &progressState{fn: progress}
	handle := cgo.NewHandle(state)
	defer handle.Delete()
	err := call(C.uintptr_t(handle))
	if state.panicked {
		panic(state.value)
	}
	return err
}

// qvGoProgress runs the progress func of a call (KnnGraph, an index's TrainWithProgress or
// AddWithProgress). The library calls it on the thread of that call, so it runs on the calling
// goroutine's stack of cgo frames. Nonzero cancels.
//
//export qvGoProgress
func qvGoProgress(fraction C.double, handle C.uintptr_t) (cancel C.int) {
	state := cgo.Handle(handle).Value().(*progressState)
	if state.panicked {
		return 1
	}
	// A panic must not unwind through the library's C++ frames: it is kept, the call cancelled, and
	// raised again once the call has returned.
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
