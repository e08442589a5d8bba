#!/usr/bin/env bash
# Installs what building and testing quiver needs on Debian/Ubuntu. Idempotent and fast when
# everything is present: apt-get runs only for packages dpkg does not list as installed.
#
# usage: scripts/setup.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  build-essential        # gcc, g++, make, binutils (nm for check_symbols.sh)
  cmake
  pkg-config
  libopenblas-serial-dev # BLAS for the CPU engine; the serial build, quiver has its own threads
  libgtest-dev           # GoogleTest for tests/
  zlib1g-dev             # the quiver tool reads .gz data sets
  golang-go              # the Go binding (bindings/go)
  python3                # bench/ and scripts
  dataset-fashion-mnist  # the data set of scripts/demo.sh
  abigail-tools          # abidw / abidiff for scripts/check_abi.sh
  wspanish               # Spanish word list: the metric-space benchmark's strings (bench/metric)
  libopenmpi-dev         # MPI for libquiver_mpi (the distributed index, QUIVER_MPI)
  openmpi-bin            # mpirun, for its tests and benchmark
)
# The Rust binding needs cargo; one from rustup (~/.cargo/bin) serves as well as Debian's.
if [[ -d "$root/bindings/rust" ]] && ! command -v cargo >/dev/null 2>&1 && [[ ! -x "$HOME/.cargo/bin/cargo" ]]; then
  packages+=(cargo)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
