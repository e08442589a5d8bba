package quiver

// #include "quiver_go.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// Save writes the index to path. The file is written beside path under a temporary name and renamed
// over path when complete, so a crash never leaves a half-written index at path. Searches may run
// meanwhile.
func (ix *Index) Save(path string) error {
	h, err := ix.rlock()
	if err != nil {
		return err
	}
	defer ix.mu.RUnlock()
	cpath, err := cString("path", path)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cpath))
	err = statusError(C.qv_go_index_save(call(C.qv_index_save), h, cpath))
	runtime.KeepAlive(ix)
	return err
}

// SaveToBuffer serializes the index, in the format of Save, into a new byte slice.
func (ix *Index) SaveToBuffer() ([]byte, error) {
	h, err := ix.rlock()
	if err != nil {
		return nil, err
	}
	defer ix.mu.RUnlock()
	var data unsafe.Pointer
	var size C.size_t
	err = statusError(C.qv_go_index_save_buffer(call(C.qv_index_save_buffer), h, &data, &size))
	runtime.KeepAlive(ix)
	if err != nil {
		return nil, err
	}
	defer C.qv_buffer_free(data)
	out := make([]byte, int(size))
	if size > 0 {
		copy(out, unsafe.Slice((*byte)(data), int(size)))
	}
	return out, nil
}

// Load reads an index written by Save (or SaveToBuffer) from path onto ctx's device. A truncated or
// damaged file fails with ErrCorruptData, a file of a format version this library does not read
// with ErrVersionMismatch.
func Load(ctx *Context, path string) (*Index, error) {
	cpath, err := cString("path", path)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	return openIndex(ctx, func(c *C.qv_context_t, out **C.qv_index_t) C.qv_go_status_t {
		return C.qv_go_index_load(call(C.qv_index_load), c, cpath, out)
	})
}

// LoadFromBuffer reads an index from data, written by SaveToBuffer (or the bytes of a file written
// by Save), onto ctx's device. data is read during the call only.
func LoadFromBuffer(ctx *Context, data []byte) (*Index, error) {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	return openIndex(ctx, func(c *C.qv_context_t, out **C.qv_index_t) C.qv_go_status_t {
		return C.qv_go_index_load_buffer(call(C.qv_index_load_buffer), c, p, C.size_t(len(data)), out)
	})
}
