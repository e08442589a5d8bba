package quiver

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestParity checks that every function of quiver.h (and of quiver_mpi.h, bound in files of the
// build tag quiver_mpi, which are read whatever the tags) is called from the package, as C.<name>,
// but for the unsized qv_*_init functions kept for programs built before their sized twins.
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
	// The unsized qv_*_init functions are also macros of their sized twins, which the package calls.
	macro := regexp.MustCompile(`(?m)^#define\s+(qv_\w+)\(`).FindAllSubmatch(header, -1)
	shadowed := map[string]bool{}
	for _, m := range macro {
		shadowed[string(m[1])] = true
	}
	for _, d := range decls {
		name := string(d[1])
		if shadowed[name] {
			continue
		}
		if !regexp.MustCompile(`\bC\.` + name + `\b`).Match(code) {
			t.Errorf("%s is not called from the Go package", name)
		}
	}
}
