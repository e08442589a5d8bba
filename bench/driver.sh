# Sourced by the bench scripts whose driver is one C++ file built against a build of quiver:
#   build_driver NAME SOURCE   compiles SOURCE and links it with $build/libquiver.a and what
#                              $build/quiver_link.txt lists, into $build/bench/NAME (exits on failure).
# Needs $root (the repository) and $build (the build folder) set.
build_driver() {
  local name="$1" source="$2"
  local includes=(-I"$root" -I"$root/include" -I"$build/include")
  if command -v nvcc >/dev/null; then includes+=(-I"$(dirname "$(command -v nvcc)")/../include"); fi
  mkdir -p "$build/bench"
  "${CXX:-c++}" -std=c++17 -O3 "${includes[@]}" -c "$source" -o "$build/bench/$name.o" || exit 1
  local link_args
  mapfile -t link_args < <(grep -v '^#' "$build/quiver_link.txt")
  "${CXX:-c++}" "$build/bench/$name.o" "$build/libquiver.a" "${link_args[@]}" -lpthread \
    -o "$build/bench/$name" || exit 1
}
