package quiver

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestContextDefaults(t *testing.T) {
	ctx := newContext(t)
	kind, id, err := ctx.Device()
	if err != nil {
		t.Fatal(err)
	}
	n, err := CUDADeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if n < 0 {
		t.Fatalf("CUDADeviceCount() = %d", n)
	}
	switch kind {
	case DeviceCPU:
		if id != -1 {
			t.Errorf("CPU context has device id %d, want -1", id)
		}
	case DeviceCUDA:
		if n == 0 || id < 0 || id >= n {
			t.Errorf("CUDA context on device %d of %d", id, n)
		}
	default:
		t.Errorf("Device() = %v, want CPU or CUDA", kind)
	}
}

func TestContextCPU(t *testing.T) {
	ctx, err := NewContext(&ContextOptions{Device: DeviceCPU, CPUThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	kind, id, err := ctx.Device()
	if err != nil || kind != DeviceCPU || id != -1 {
		t.Fatalf("Device() = %v, %d, %v; want CPU, -1", kind, id, err)
	}
}

func TestContextCUDA(t *testing.T) {
	n, err := CUDADeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := NewContext(&ContextOptions{Device: DeviceCUDA})
	if n == 0 {
		wantError(t, err, ErrNoDevice)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	if kind, id, err := ctx.Device(); err != nil || kind != DeviceCUDA || id != 0 {
		t.Fatalf("Device() = %v, %d, %v; want CUDA, 0", kind, id, err)
	}
	// An ordinal past the last device: the header leaves the exact status open.
	if bad, err := NewContext(&ContextOptions{Device: DeviceCUDA, DeviceID: n}); err == nil {
		bad.Close()
		t.Fatalf("CUDA context on device %d of %d succeeded", n, n)
	} else if e, ok := err.(*Error); !ok || e.Message == "" {
		t.Fatalf("got %v, want an *Error with a message", err)
	}
}

func TestContextInvalidOptions(t *testing.T) {
	for _, o := range []ContextOptions{{CPUThreads: -1}, {Device: DeviceKind(42)}, {DeviceID: 1 << 40}} {
		ctx, err := NewContext(&o)
		if err == nil {
			ctx.Close()
		}
		wantError(t, err, ErrInvalidArgument)
	}
}

func TestContextDevicesCPU(t *testing.T) {
	for _, o := range []ContextOptions{{Device: DeviceCPU}, {Device: DeviceCPU, DeviceIDs: []int{}}} {
		ctx, err := NewContext(&o)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := ctx.Devices()
		ctx.Close()
		if err != nil || ids == nil || len(ids) != 0 {
			t.Fatalf("Devices() = %v, %v; want an empty list on the CPU", ids, err)
		}
	}
	// The default context lists its one CUDA device, or none on the CPU.
	ctx := newContext(t)
	kind, id, err := ctx.Device()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := ctx.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{id}; kind == DeviceCUDA && !reflect.DeepEqual(ids, want) {
		t.Errorf("Devices() = %v, want %v", ids, want)
	} else if kind == DeviceCPU && len(ids) != 0 {
		t.Errorf("Devices() = %v on the CPU, want none", ids)
	}
}

func TestContextDeviceIDsNeedCUDA(t *testing.T) {
	for _, o := range []ContextOptions{
		{Device: DeviceCPU, DeviceIDs: []int{0}},
		{Device: DeviceCPU, DeviceIDs: []int{0, 0}},
		{Device: DeviceCPU, AllDevices: true},
	} {
		ctx, err := NewContext(&o)
		if err == nil {
			ctx.Close()
		}
		wantError(t, err, ErrInvalidArgument)
	}
}

func TestContextDeviceIDsFallBackToCPU(t *testing.T) {
	n, err := CUDADeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	pair, err := NewContext(&ContextOptions{DeviceIDs: []int{0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	defer pair.Close()
	all, err := NewContext(&ContextOptions{AllDevices: true})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if n == 0 {
		for _, ctx := range []*Context{pair, all} {
			if kind, _, err := ctx.Device(); err != nil || kind != DeviceCPU {
				t.Errorf("Device() = %v, %v; want CPU without a GPU", kind, err)
			}
			if ids, err := ctx.Devices(); err != nil || len(ids) != 0 {
				t.Errorf("Devices() = %v, %v; want none without a GPU", ids, err)
			}
		}
		// DeviceCUDA has no such fallback.
		for _, o := range []ContextOptions{
			{Device: DeviceCUDA, DeviceIDs: []int{0}},
			{Device: DeviceCUDA, AllDevices: true},
		} {
			ctx, err := NewContext(&o)
			if err == nil {
				ctx.Close()
			}
			wantError(t, err, ErrNoDevice)
		}
	} else {
		// A repeated ordinal is two logical devices on one GPU.
		if ids, err := pair.Devices(); err != nil || !reflect.DeepEqual(ids, []int{0, 0}) {
			t.Errorf("Devices() = %v, %v; want [0 0]", ids, err)
		}
		if kind, id, err := pair.Device(); err != nil || kind != DeviceCUDA || id != 0 {
			t.Errorf("Device() = %v, %d, %v; want CUDA, 0", kind, id, err)
		}
		every := make([]int, n)
		for i := range every {
			every[i] = i
		}
		if ids, err := all.Devices(); err != nil || !reflect.DeepEqual(ids, every) {
			t.Errorf("Devices() = %v, %v; want %v", ids, err, every)
		}
		ctx, err := NewContext(&ContextOptions{Device: DeviceCUDA, DeviceIDs: []int{0, n}})
		if err == nil {
			ctx.Close()
		}
		wantError(t, err, ErrNoDevice)
	}
	// A negative ordinal is refused by the library whatever the machine.
	ctx, err := NewContext(&ContextOptions{DeviceIDs: []int{0, -2}})
	if err == nil {
		ctx.Close()
	}
	wantError(t, err, ErrInvalidArgument)
}

func TestContextDeviceIDsRefusedInGo(t *testing.T) {
	if MaxDevices != 64 {
		t.Fatalf("MaxDevices = %d, want 64", MaxDevices)
	}
	tooMany := make([]int, MaxDevices+1)
	for _, o := range []ContextOptions{
		{DeviceIDs: tooMany},
		{Device: DeviceCPU, DeviceIDs: tooMany},
		{DeviceIDs: []int{0}, AllDevices: true},
		{DeviceIDs: []int{1 << 40}},
	} {
		ctx, err := NewContext(&o)
		if err == nil {
			ctx.Close()
		}
		wantError(t, err, ErrInvalidArgument)
		// The package's own message, not the library's.
		if e, ok := err.(*Error); !ok || !strings.Contains(e.Message, "DeviceIDs") {
			t.Errorf("got %v, want the package's message about DeviceIDs", err)
		}
	}
	if n, err := CUDADeviceCount(); err == nil && n == 0 {
		// MaxDevices itself goes on to the library: DeviceAuto falls back to the CPU.
		ctx, err := NewContext(&ContextOptions{DeviceIDs: tooMany[:MaxDevices]})
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.Close()
		if ids, err := ctx.Devices(); err != nil || len(ids) != 0 {
			t.Errorf("Devices() = %v, %v; want none without a GPU", ids, err)
		}
	}
}

func TestContextClose(t *testing.T) {
	ctx, err := NewContext(nil)
	if err != nil {
		t.Fatal(err)
	}
	data := randomVectors(1, 10, 4)
	ix := newFlat(t, ctx, 4, MetricL2, data)
	// The index keeps working after its context is closed.
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ctx.Device(); err == nil {
		t.Fatal("Device on a closed context succeeded")
	} else {
		wantError(t, err, ErrInvalidArgument)
	}
	if _, err := ctx.Devices(); err == nil {
		t.Fatal("Devices on a closed context succeeded")
	} else {
		wantError(t, err, ErrInvalidArgument)
	}
	_, err = NewIndex(ctx, Flat, 4, MetricL2)
	wantError(t, err, ErrInvalidArgument)
	if _, err := ix.Search(data[:4], 1, nil); err != nil {
		t.Fatalf("index of a closed context: %v", err)
	}
	if err := ix.Add(data); err != nil {
		t.Fatalf("index of a closed context: %v", err)
	}
	buf, err := ix.SaveToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	_, err = LoadFromBuffer(ctx, buf)
	wantError(t, err, ErrInvalidArgument)
	var nilCtx *Context
	_, err = NewIndex(nilCtx, Flat, 4, MetricL2)
	wantError(t, err, ErrInvalidArgument)
}

// TestFinalizers drops handles without closing them; the finalizers must release them in order
// (index before context) without crashing.
func TestFinalizers(t *testing.T) {
	for i := 0; i < 20; i++ {
		ctx, err := NewContext(nil)
		if err != nil {
			t.Fatal(err)
		}
		ix, err := NewIndex(ctx, Flat, 8, MetricL2)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Add(randomVectors(int64(i), 16, 8)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		runtime.GC()
	}
}
