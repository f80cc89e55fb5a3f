#!/usr/bin/env bash
# Download, on a machine with PyPI access, the wheels Kernel Tuner needs on the GPU machine
# (which has no package registry) into bench/kt/wheels/ (ignored by git; carry it to the
# device). Only what the device's Python lacks is fetched: its image already has numpy,
# scipy, scikit-learn, pandas, packaging, attrs, typing-extensions, joblib, threadpoolctl,
# cuda-bindings (Kernel Tuner's default "nvcuda" backend) and cupy-cuda13x. pymoo (only for
# the nsga2/nsga3 strategies) is left out. Install there with --no-deps (see README.md).
#
#   bench/kt/fetch_wheels.sh [PYTHON_VERSION]        default 3.12 (the device's python3)
#   WITH_CUDA_BINDINGS=1 bench/kt/fetch_wheels.sh    also cuda-bindings 13 (+8 MB), for a
#                                                    device image without it
set -euo pipefail
PYVER="${1:-3.12}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$HERE/wheels"
PKGS=(
    kernel_tuner==1.5.0
    python-constraint2==2.9.0      # the search-space constraint solver (compiled: per Python)
    jsonschema==4.26.0
    jsonschema-specifications==2025.9.1
    referencing==0.37.0
    rpds-py==2026.9.1              # compiled: per Python
    xmltodict==1.0.4
)
if [ "${WITH_CUDA_BINDINGS:-0}" = 1 ]; then
    PKGS+=("cuda-bindings>=13,<14" cuda-pathfinder)
fi
mkdir -p "$DEST"
rm -f "$DEST"/*.whl
python3 -m pip download -q --no-deps --only-binary=:all: \
    --python-version "$PYVER" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d "$DEST" "${PKGS[@]}"
ls -l "$DEST"
total=$(du -cb "$DEST"/*.whl | tail -1 | cut -f1)
echo "total: $total bytes ($(( total / 1024 / 1024 )) MiB) in $(ls "$DEST"/*.whl | wc -l) wheels for Python $PYVER"
if [ "$total" -gt $(( 40 * 1024 * 1024 )) ]; then
    echo "warning: over 40 MiB; the device's working tree (with carried paths) is limited to 64 MiB" >&2
fi
