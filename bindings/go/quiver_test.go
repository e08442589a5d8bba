package quiver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	v := Version()
	want := fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
	if got := VersionString(); got != want {
		t.Errorf("VersionString() = %q, Version() = %d", got, v)
	}
	if ABIVersion() != HeaderABIVersion {
		t.Errorf("ABIVersion() = %d, HeaderABIVersion = %d", ABIVersion(), HeaderABIVersion)
	}
}

func TestStatusString(t *testing.T) {
	names := map[Status]string{
		StatusOK:                "QV_OK",
		StatusInvalidArgument:   "QV_ERR_INVALID_ARGUMENT",
		StatusOutOfHostMemory:   "QV_ERR_OUT_OF_HOST_MEMORY",
		StatusOutOfDeviceMemory: "QV_ERR_OUT_OF_DEVICE_MEMORY",
		StatusCUDA:              "QV_ERR_CUDA",
		StatusNoDevice:          "QV_ERR_NO_DEVICE",
		StatusNotTrained:        "QV_ERR_NOT_TRAINED",
		StatusUnsupported:       "QV_ERR_UNSUPPORTED",
		StatusIO:                "QV_ERR_IO",
		StatusCorruptData:       "QV_ERR_CORRUPT_DATA",
		StatusVersionMismatch:   "QV_ERR_VERSION_MISMATCH",
		StatusInternal:          "QV_ERR_INTERNAL",
		StatusCancelled:         "QV_ERR_CANCELLED",
		StatusTooManyResults:    "QV_ERR_TOO_MANY_RESULTS",
		StatusRemote:            "QV_ERR_REMOTE",
		Status(999):             "QV_ERR_UNKNOWN",
	}
	for s, want := range names {
		if got := StatusString(s); got != want {
			t.Errorf("StatusString(%d) = %q, want %q", int32(s), got, want)
		}
		if got := s.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", int32(s), got, want)
		}
	}
}

func TestErrorIs(t *testing.T) {
	sentinels := []*Error{ErrInvalidArgument, ErrOutOfHostMemory, ErrOutOfDeviceMemory, ErrCUDA,
		ErrNoDevice, ErrNotTrained, ErrUnsupported, ErrIO, ErrCorruptData, ErrVersionMismatch, ErrInternal,
		ErrCancelled, ErrTooManyResults, ErrRemote}
	for _, s := range sentinels {
		err := fmt.Errorf("wrapped: %w", &Error{Status: s.Status, Message: "details"})
		for _, other := range sentinels {
			if got := errors.Is(err, other); got != (other == s) {
				t.Errorf("errors.Is(%v, %v) = %v", err, other, got)
			}
		}
		if !errors.Is(err, &Error{Status: s.Status, Message: "details"}) {
			t.Errorf("%v is not an equal *Error", err)
		}
		if errors.Is(err, &Error{Status: s.Status, Message: "other"}) {
			t.Errorf("%v matches another message", err)
		}
	}
	e := &Error{Status: StatusIO, Message: "cannot open x"}
	if got := e.Error(); got != "quiver: cannot open x (QV_ERR_IO)" {
		t.Errorf("Error() = %q", got)
	}
	if got := ErrIO.Error(); got != "quiver: QV_ERR_IO" {
		t.Errorf("ErrIO.Error() = %q", got)
	}
}

func TestEnumStrings(t *testing.T) {
	for m, want := range map[Metric]string{MetricL2: "L2", MetricInnerProduct: "InnerProduct",
		MetricCosine: "Cosine", MetricL1: "L1", MetricLInf: "LInf", MetricEdit: "Edit",
		Metric(9): "Metric(9)"} {
		if m.String() != want {
			t.Errorf("%d: %q, want %q", int32(m), m.String(), want)
		}
	}
	for d, want := range map[DeviceKind]string{DeviceAuto: "Auto", DeviceCPU: "CPU", DeviceCUDA: "CUDA",
		DeviceKind(7): "DeviceKind(7)"} {
		if d.String() != want {
			t.Errorf("%d: %q, want %q", int32(d), d.String(), want)
		}
	}
	if MaxK != 2048 || !strings.EqualFold(Flat, "flat") {
		t.Errorf("MaxK = %d, Flat = %q", MaxK, Flat)
	}
}
