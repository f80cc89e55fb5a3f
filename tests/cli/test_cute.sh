#!/usr/bin/env bash
# kopt cute info|search|summarize, and a CuTe candidate compiled without a GPU (the static
# path: registers, shared memory, spills). Needs the nvidia-cutlass package (CI installs
# it); without it, and without nvcc for the compile, says skipped (exit 77).
# Usage: test_cute.sh KOPT EXAMPLES_DIR TEST_DATA_DIR
set -u
kopt=$1 examples=$2 data=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if ! grep -q -- "$2" "$work/$1"; then echo "FAIL: $1 lacks '$2'"; sed 's/^/  | /' "$work/$1" | head -20; fail=1; fi; }

if ! "$kopt" cute info >"$work/info" 2>&1; then
  echo "skipped: $(cat "$work/info")"
  exit 77
fi
check info "^CUTLASS [0-9]*\.[0-9]*\.[0-9]*"
check info "python package\|CUTLASS_PATH"
"$kopt" cute info --json >"$work/info.json" && check info.json '"version"'

# --cutlass wins over $CUTLASS_PATH; a folder without CUTLASS is an error saying so
inc=$("$kopt" cute info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["include_dir"])')
CUTLASS_PATH=/nonexistent "$kopt" cute info --cutlass "$inc" >"$work/explicit" 2>&1 || fail=1
check explicit "from      --cutlass"
if CUTLASS_PATH=/nonexistent "$kopt" cute info >"$work/bad_env" 2>&1; then
  echo "FAIL: CUTLASS_PATH=/nonexistent accepted"; fail=1
fi
check bad_env "CUTLASS_PATH=/nonexistent"

"$kopt" cute search make_tma_copy --limit 2 --cache-dir "$work/cache" >"$work/search" 2>"$work/search.err" || fail=1
check search "## include/cute/atom/copy_traits_sm90_tma.hpp:"
check search.err "indexed CUTLASS"
check search.err "hits in"
"$kopt" cute search "TMA load multicast" --json --cache-dir "$work/cache" >"$work/search.json" || fail=1
python3 - "$work/search.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["hits"], d
h = d["hits"][0]
assert h["file"].startswith("include/cute/"), h["file"]
assert h["line_start"] <= h["line_end"] and h["snippet"], h
print("search --json: %d hits in %.1f ms, first %s:%d-%d" % (len(d["hits"]), d["query_ms"], h["file"], h["line_start"], h["line_end"]))
PY

"$kopt" cute summarize "$data/cute/broken_cute.nvcc.log" >"$work/summary" || fail=1
check summary "from the candidate: broken_cute.cu:25"

# the Hopper candidate compiles here (nvcc, host mode) and reports its kernels' resources
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  "$kopt" eval "$examples/gemm_bf16" "$examples/gemm_bf16/cute_wgmma.cu" --cache-dir "$work/cc" \
    --db "$work/kopt.db" >"$work/eval" 2>&1
  check eval "compile    compiled"
  check eval "kernel   cute_gemm::gemm_tma_wgmma: [0-9]* registers, .*no spills"
  # what makes it fast, as ptxas saw it (the same cache entry, as JSON with the compile
  # log): no local memory in the warp-specialized kernel, and none of ptxas's warnings;
  # those include the ones that cost most silently: WGMMAs serialized (C7510 and kin) and
  # setmaxnreg ignored (C7508)
  "$kopt" eval "$examples/gemm_bf16" "$examples/gemm_bf16/cute_wgmma.cu" --cache-dir "$work/cc" \
    --no-store --json >"$work/eval.json" 2>/dev/null
  python3 - "$work/eval.json" <<'PY' || fail=1
import json, re, sys
d = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in d.get("kernels") or []}
main = [k for n, k in ks.items() if "gemm_tma_wgmma" in n]
assert main, "no gemm_tma_wgmma kernel in %s" % sorted(ks)
k = main[0]
assert k["stack_frame"] == 0 and k["spill_stores"] == 0 and k["spill_loads"] == 0, k
# 384 threads with __launch_bounds__(384, 1): ptxas caps the kernel at 168 registers
assert 0 < k["registers"] <= 168, k
log = d.get("compile_log") or ""
assert "Compiling entry function" in log, "no ptxas report in the compile log"
warn = [l for l in log.splitlines() if re.search(r"warning|C75[0-9][0-9]", l, re.I)]
assert not warn, "ptxas warnings:\n" + "\n".join(warn[:5])
print("cute_wgmma static: %d registers, no stack, no spills, no ptxas warnings" % k["registers"])
PY
else
  echo "nvcc not found: the CuTe candidate's compile was not checked"
fi
[ $fail = 0 ] && echo "test_cute: ok"
exit $fail
