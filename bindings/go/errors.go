package quiver

// #include "quiver_go.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// Status is a quiver status code (qv_status_t).
type Status int32

// The status codes of the C API.
const (
	StatusOK                Status = C.QV_OK
	StatusInvalidArgument   Status = C.QV_ERR_INVALID_ARGUMENT     // a size out of range, NaN data, bad ids...
	StatusOutOfHostMemory   Status = C.QV_ERR_OUT_OF_HOST_MEMORY   // a host allocation failed
	StatusOutOfDeviceMemory Status = C.QV_ERR_OUT_OF_DEVICE_MEMORY // a GPU allocation failed; the index is intact
	StatusCUDA              Status = C.QV_ERR_CUDA                 // the CUDA runtime or cuBLAS reported an error
	StatusNoDevice          Status = C.QV_ERR_NO_DEVICE            // a CUDA device was asked for and none is usable
	StatusNotTrained        Status = C.QV_ERR_NOT_TRAINED          // the index needs Train first
	StatusUnsupported       Status = C.QV_ERR_UNSUPPORTED          // a valid request this kind, metric or build cannot do
	StatusIO                Status = C.QV_ERR_IO                   // a file could not be opened, read, written or renamed
	StatusCorruptData       Status = C.QV_ERR_CORRUPT_DATA         // a saved index is truncated, damaged or not one
	StatusVersionMismatch   Status = C.QV_ERR_VERSION_MISMATCH     // a saved index of a format version not read here
	StatusInternal          Status = C.QV_ERR_INTERNAL             // a bug in quiver
	StatusCancelled         Status = C.QV_ERR_CANCELLED            // a progress callback asked the call to stop
	StatusTooManyResults    Status = C.QV_ERR_TOO_MANY_RESULTS     // a range search query passed SearchParams.MaxRangeResults
	StatusRemote            Status = C.QV_ERR_REMOTE               // a distributed call failed on another process, or timed out
)

// StatusString returns the C name of a status, e.g. "QV_ERR_INVALID_ARGUMENT"; unknown codes give
// "QV_ERR_UNKNOWN".
func StatusString(s Status) string { return C.GoString(C.qv_status_string(C.qv_status_t(s))) }

// String returns the C name of the status (see StatusString).
func (s Status) String() string { return StatusString(s) }

// Error is a failed quiver call: its status and the library's message.
type Error struct {
	Status  Status
	Message string
}

// Error returns "quiver: <message> (<status name>)".
func (e *Error) Error() string {
	if e.Message == "" {
		return "quiver: " + e.Status.String()
	}
	return "quiver: " + e.Message + " (" + e.Status.String() + ")"
}

// Is reports whether target is an *Error of the same status whose message is empty (the Err*
// values) or equal to e's, so that errors.Is(err, quiver.ErrNotTrained) tests the status.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && (t.Message == "" || t.Message == e.Message)
}

// One value per failure status, to test errors with errors.Is.
var (
	ErrInvalidArgument   = &Error{Status: StatusInvalidArgument}
	ErrOutOfHostMemory   = &Error{Status: StatusOutOfHostMemory}
	ErrOutOfDeviceMemory = &Error{Status: StatusOutOfDeviceMemory}
	ErrCUDA              = &Error{Status: StatusCUDA}
	ErrNoDevice          = &Error{Status: StatusNoDevice}
	ErrNotTrained        = &Error{Status: StatusNotTrained}
	ErrUnsupported       = &Error{Status: StatusUnsupported}
	ErrIO                = &Error{Status: StatusIO}
	ErrCorruptData       = &Error{Status: StatusCorruptData}
	ErrVersionMismatch   = &Error{Status: StatusVersionMismatch}
	ErrInternal          = &Error{Status: StatusInternal}
	ErrCancelled         = &Error{Status: StatusCancelled}
	ErrTooManyResults    = &Error{Status: StatusTooManyResults}
	ErrRemote            = &Error{Status: StatusRemote}
)

// statusError turns what a helper of quiver_go.h returned into nil or an *Error, freeing the
// message copy.
func statusError(r C.qv_go_status_t) error {
	if r.status == C.QV_OK {
		return nil
	}
	msg := ""
	if r.message != nil {
		msg = C.GoString(r.message)
		C.free(unsafe.Pointer(r.message))
	}
	return &Error{Status: Status(r.status), Message: msg}
}

// invalidArgument is an error the binding finds itself, before calling C.
func invalidArgument(format string, args ...interface{}) error {
	return &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// closedError is the error of a call on a closed Context or Index.
func closedError(what string) error {
	return &Error{Status: StatusInvalidArgument, Message: what + " is closed"}
}
