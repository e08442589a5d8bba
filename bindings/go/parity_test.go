package quiver

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestParity checks that every function of quiver.h (and of quiver_mpi.h, bound in files of the
// build tag quiver_mpi, which are read whatever the tags) is called from the package, as C.<name>
// or through a header macro that calls it.
func TestParity(t *testing.T) {
	header, err := os.ReadFile(filepath.Join("..", "..", "include", "quiver", "quiver.h"))
	if err != nil {
		t.Skipf("no header beside the package: %v", err)
	}
	if mpi, err := os.ReadFile(filepath.Join("..", "..", "include", "quiver", "quiver_mpi.h")); err == nil {
		header = append(header, mpi...)
	}
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var code []byte
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		code = append(code, b...)
	}
	decls := regexp.MustCompile(`QV_API[^;(]*\b(qv_\w+)\s*\(`).FindAllSubmatch(header, -1)
	if len(decls) == 0 {
		t.Fatal("found no function in quiver.h")
	}
	calls := func(name string) bool { return regexp.MustCompile(`\bC\.` + name + `\b`).Match(code) }
	// A call of a header macro `#define qv_A(...) qv_B(...)` (the qv_*_init macros of the sized
	// qv_*_init_sized functions) is a call of qv_B.
	calledThrough := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#define\s+(qv_\w+)\([^)]*\)\s+(qv_\w+)\(`).FindAllSubmatch(header, -1) {
		if calls(string(m[1])) {
			calledThrough[string(m[2])] = true
		}
	}
	for _, d := range decls {
		name := string(d[1])
		if !calls(name) && !calledThrough[name] {
			t.Errorf("%s is not called from the Go package", name)
		}
	}
}
