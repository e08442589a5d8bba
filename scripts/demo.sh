#!/usr/bin/env bash
# The five-minute tour: install what the build needs, build quiver, and benchmark exact search on
# Fashion-MNIST (60 000 x 784 base, 10 000 queries), printing recall@10 and queries per second.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -f scripts/setup.sh ]]; then
  bash scripts/setup.sh
else
  echo "demo: scripts/setup.sh not found; assuming the build dependencies are installed" >&2
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j2

build/bin/quiver bench --dataset fashion-mnist --index Flat --k 10
