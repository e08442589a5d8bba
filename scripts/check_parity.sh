#!/usr/bin/env bash
# Checks binding parity: every qv_ function declared in include/quiver/*.h must be
#   - declared in quiver-sys (`fn qv_name` in bindings/rust/quiver-sys/src),
#   - called by the safe Rust crate (`sys::qv_name` in bindings/rust/quiver/src),
#   - called by the Go package (`C.qv_name` in bindings/go/**/*.go, tests excluded; a call
#     `qv_name(` inside a file's cgo preamble, the comment right before `import "C"`, also counts,
#     for the helpers that read a call's status and error message in one cgo call).
# The unsized qv_*_init functions are also header macros of their sized twins (`#define qv_X_init(p)
# qv_X_init_sized(...)`): Go, compiled against the header, calls qv_X_init through the macro, and
# that call binds both; the Rust crate declares its own structs, so it calls qv_X_init_sized with
# their size and need not call qv_X_init.
# Prints the missing ones and exits 1, or prints a one-line summary and exits 0.
#
# Usage: scripts/check_parity.sh   (from anywhere; paths are relative to the repository root)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Public functions: QV_API, then the return type, then the name and its opening parenthesis (one
# line in the header's style; a declaration split before the name would be missed, so a header with
# QV_API lines but no names found is an error below).
mapfile -t functions < <(
  cat include/quiver/*.h |
    grep -oE '\bQV_API\b[^(;]*\bqv_[A-Za-z0-9_]+[[:space:]]*\(' |
    grep -oE 'qv_[A-Za-z0-9_]+[[:space:]]*\($' | tr -d '( \t' | sort -u
)
api_lines=$(cat include/quiver/*.h | grep -cE '^[[:space:]]*QV_API\b' || true)
if [ "${#functions[@]}" -eq 0 ] || [ "${#functions[@]}" -lt "$api_lines" ]; then
  echo "check_parity: found ${#functions[@]} qv_ functions for $api_lines QV_API lines in" \
       "include/quiver/*.h; is a declaration split across lines?" >&2
  exit 1
fi

# The unsized qv_*_init functions kept for programs built before their sized twins. Every qv_*_init
# must be one: an unsized init of a struct that grows overruns the smaller struct of an older caller.
mapfile -t macro_shadowed < <(cat include/quiver/*.h | grep -oE '^#define[[:space:]]+qv_[A-Za-z0-9_]+\(' |
                               grep -oE 'qv_[A-Za-z0-9_]+' | sort -u)
mapfile -t unsized_inits < <(printf '%s\n' "${functions[@]}" | grep -E '_init$' |
                             comm -23 - <(printf '%s\n' "${macro_shadowed[@]+"${macro_shadowed[@]}"}"))
if [ "${#unsized_inits[@]}" -gt 0 ]; then
  echo "check_parity: qv_*_init functions without a sized twin (qv_X_init_sized(p, size) and" \
       "'#define qv_X_init(p) qv_X_init_sized((p), sizeof(qv_X_t))' in the header):" >&2
  printf '  %s\n' "${unsized_inits[@]}" >&2
  exit 1
fi
# "qv_A qv_B" for each `#define qv_A(...) qv_B(`: a Go call of qv_A is a call of qv_B.
mapfile -t macro_calls < <(cat include/quiver/*.h |
                           sed -nE 's/^#define[[:space:]]+(qv_[A-Za-z0-9_]+)\([^)]*\)[[:space:]]+(qv_[A-Za-z0-9_]+)\(.*/\1 \2/p')
is_macro_shadowed() { printf '%s\n' "${macro_shadowed[@]+"${macro_shadowed[@]}"}" | grep -qx "$1"; }

# Everything each binding mentions, read once.
rust_sys_src=$(cat bindings/rust/quiver-sys/src/*.rs 2>/dev/null || true)
rust_src=$(find bindings/rust/quiver/src -name '*.rs' -exec cat {} + 2>/dev/null || true)
go_files=()
if [ -d bindings/go ]; then
  mapfile -t go_files < <(find bindings/go -name '*.go' ! -name '*_test.go' | sort)
fi
go_src=""
go_preambles=""
if [ "${#go_files[@]}" -gt 0 ]; then
  go_src=$(cat "${go_files[@]}")
  # The cgo preamble: the /* ... */ block or // lines directly above `import "C"`.
  go_preambles=$(awk '
    FNR == 1 { block = ""; inblock = 0; lines = "" }
    inblock { block = block "\n" $0; if ($0 ~ /\*\//) { inblock = 0; last = block; lines = "" } ; next }
    /^[[:space:]]*\/\*/ { inblock = 1; block = $0; if ($0 ~ /\*\//) { inblock = 0; last = block }; next }
    /^[[:space:]]*\/\// { lines = lines "\n" $0; last = lines; next }
    /^[[:space:]]*import[[:space:]]+"C"/ { print last; last = ""; lines = ""; next }
    /^[[:space:]]*$/ { next }
    { last = ""; lines = "" }
  ' "${go_files[@]}")
fi

has() { grep -qE "$2" <<<"$1"; }

missing_sys=()
missing_rust=()
missing_go=()
go_calls() { has "$go_src" "\bC\.$1\b" || has "$go_preambles" "\b$1[[:space:]]*\("; }
for f in "${functions[@]}"; do
  has "$rust_sys_src" "\bfn ${f}[[:space:]]*\(" || missing_sys+=("$f")
  is_macro_shadowed "$f" || has "$rust_src" "\bsys::${f}\b" || missing_rust+=("$f")
  called=0
  go_calls "$f" && called=1
  for pair in "${macro_calls[@]+"${macro_calls[@]}"}"; do
    read -r macro target <<<"$pair"
    [[ "$target" == "$f" ]] && go_calls "$macro" && called=1
  done
  [[ $called -eq 1 ]] || missing_go+=("$f")
done

status=0
report() {
  local what="$1"
  shift
  if [ "$#" -gt 0 ]; then
    status=1
    echo "check_parity: $# of ${#functions[@]} qv_ functions missing from $what:"
    printf '  %s\n' "$@"
  fi
}
report "quiver-sys (no 'fn qv_...' in bindings/rust/quiver-sys/src)" "${missing_sys[@]+"${missing_sys[@]}"}"
report "the quiver crate (no 'sys::qv_...' call in bindings/rust/quiver/src)" "${missing_rust[@]+"${missing_rust[@]}"}"
if [ "${#go_files[@]}" -eq 0 ]; then
  echo "check_parity: bindings/go has no .go files outside tests"
fi
report "the Go package (no 'C.qv_...' call in bindings/go, tests excluded)" "${missing_go[@]+"${missing_go[@]}"}"

if [ "$status" -eq 0 ]; then
  echo "check_parity: ok, all ${#functions[@]} qv_ functions of include/quiver/*.h are bound in" \
       "quiver-sys, used by the quiver crate and called by the Go package"
fi
exit "$status"
