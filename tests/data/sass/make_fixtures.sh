#!/bin/bash
# Record the SASS fixtures of tests/data/sass/ (see README.md there). Run from the repo root:
#     tests/data/sass/make_fixtures.sh BUILD_DIR
# BUILD_DIR holds a built libkopt.a. nvdisasm is taken from $KOPT_NVDISASM, else PATH, else
# /usr/local/cuda/bin, else the nvidia-cuda-nvdisasm Python package.
set -euo pipefail
build=$(cd "${1:?usage: make_fixtures.sh BUILD_DIR}" && pwd)
root=$(pwd)
out=$root/tests/data/sass
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nvdisasm=${KOPT_NVDISASM:-}
[ -n "$nvdisasm" ] || nvdisasm=$(command -v nvdisasm || true)
[ -n "$nvdisasm" ] || { [ -x /usr/local/cuda/bin/nvdisasm ] && nvdisasm=/usr/local/cuda/bin/nvdisasm; } || true
[ -n "$nvdisasm" ] || nvdisasm=$(python3 -c 'import nvidia, os; print(next(os.path.join(r, s, "bin", "nvdisasm") for r in nvidia.__path__ for s in ("cu13", "cuda_nvdisasm", "cu12") if os.path.exists(os.path.join(r, s, "bin", "nvdisasm"))))')
cuda=${CUDA_HOME:-/usr/local/cuda}

cc -std=c11 -D_GNU_SOURCE -I"$root/include" -I"$cuda/include" "$out/compile_cubin.c" \
   "$build/libkopt.a" $(pkg-config --libs jansson) -lsqlite3 -lcrypto -ldl -lm -lpthread \
   -o "$tmp/compile_cubin"

# record NAME PROBLEM_DIR SOURCE|-   (compiled from the source's folder, so the line info
# names the real file)
record() {
    local name=$1 prob=$2 src=$3 dir cubin
    if [ "$src" = - ]; then dir=$root/$prob; else dir=$(dirname "$root/$src"); src=$root/$src; fi
    cubin=$(cd "$dir" && "$tmp/compile_cubin" "$root/$prob" "$src" "$tmp/cache" 2>"$tmp/log") ||
        { cat "$tmp/log" >&2; exit 1; }
    compiler=$(cut -d: -f1 "$tmp/log")
    "$nvdisasm" --print-code --print-line-info "$cubin" > "$out/$name.sass"
    echo "$name: $compiler, $(grep -c '/\*[0-9a-f]*\*/' "$out/$name.sass") lines of code"
    if [ "$name" = vector_add_reference ]; then cp "$cubin" "$out/$name.cubin"; fi
    if [ "$name" = transpose_fast ]; then
        python3 - "$cubin" "$out/${name}.cuobjdump.sass" <<'PY' || true
import os, subprocess, sys
try:
    import nvidia
    tools = [os.path.join(r, s, "bin", "cuobjdump") for r in nvidia.__path__ for s in ("cu13", "cuda_cuobjdump", "cu12")]
except Exception:
    tools = []
tools = ["cuobjdump"] + tools
for t in tools:
    try:
        out = subprocess.run([t, "-sass", sys.argv[1]], check=True, capture_output=True, text=True).stdout
        version = subprocess.run([t, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-2]
    except Exception:
        continue
    open(sys.argv[2], "w").write(out)
    open(sys.argv[2] + ".version", "w").write(version + "\n")
    break
PY
    fi
}

for p in examples/*/; do
    p=${p%/}
    name=$(basename "$p")
    record "${name}_reference" "$p" -
    for f in "$p"/*.cu; do
        case "$f" in */reference.cu) continue ;; esac
        grep -q '"mode": *"host"' "$f" && continue     # host-mode (nvcc) candidates: no cubin
        record "${name}_$(basename "$f" .cu)" "$p" "$f"
    done
done
for f in tests/profile/planted/*.cu; do
    prob=$(sed -n 's|^// problem: *||p' "$f" | head -1)
    record "planted_$(basename "$f" .cu)" "$prob" "$f"
done
{
    echo "compiler:  $compiler (kopt_compile, --gpu-architecture=sm_90a -lineinfo)"
    echo "nvdisasm:  $("$nvdisasm" --version | tail -2 | head -1) (nvdisasm --print-code --print-line-info, found at $nvdisasm)"
    if [ -f "$out/transpose_fast.cuobjdump.sass.version" ]; then
        echo "cuobjdump: $(cat "$out/transpose_fast.cuobjdump.sass.version") (cuobjdump -sass)"
        rm -f "$out/transpose_fast.cuobjdump.sass.version"
    fi
} > "$out/TOOLS.txt"
