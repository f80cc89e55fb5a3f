#!/usr/bin/env bash
# Build kopt (library, CLI, tests) into ./build. Installs the Debian packages it needs when
# they are missing and it may (root with apt-get). The CUDA toolkit (headers; nvcc for
# host-mode candidates) is expected under /usr/local/cuda or $CUDA_HOME.
# Usage: scripts/build.sh [extra cmake args], e.g. -DKOPT_SANITIZE=ON
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh build.sh
cmake -S . -B build -DKOPT_WERROR=ON "$@" >/dev/null
cmake --build build -j"$(nproc)"
