#!/usr/bin/env bash
# GPU test of kopt profile of a PyTorch program (issue 28; src/profile/program_run.c,
# libexec/kopt_torch_program.py): the references of three KernelBench-style problems
# (a matmul + ReLU, a linear + GELU + LayerNorm, a conv + bias + ReLU) give a kernel table
# of one forward: every kernel with its name, torch op, launch configuration, registers
# and time; the library GEMM/convolution first; ncu's roofline metrics joined to each
# kernel when ncu is here (else the note says why); the text table printed, the profile
# stored (source "program") and shown by kopt report. Three profiles, one of them stored
# and printed as text (each profile is a traced forward and an ncu run: ~20 s).
# Without a GPU: "skipped: no GPU" (exit 77). usage: test_profile_program.sh KOPT (repo root)
source "$(dirname "$0")/lib.sh" "$1"
export KOPT_TORCH_WORKER=${KOPT_TORCH_WORKER:-$PWD/libexec/kopt_torch_worker.py}
check() { if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok    $1"
          else failed=$((failed + 1)); echo "FAIL  $1"; fi; }
# the three profiles side by side (most of each is starting Python, torch and ncu; the test
# checks what each finds, not its numbers), the stored text one in the foreground
cases="1_matmul_relu:2:addmm,mm 6_conv_bias_relu:2:convolution"
for n in $cases; do
  name=${n%%:*}
  "$K" kb import "bench/kernelbench/problems/$name.py" --out "$TMP/p" > "$TMP/i.$name" 2>&1
  ( "$K" profile "$TMP/p/$name" --json --no-store > "$TMP/$name.json" 2> "$TMP/$name.err"
    echo $? > "$TMP/$name.rc" ) &
done
"$K" kb import bench/kernelbench/problems/5_linear_gelu_norm.py --out "$TMP/p" > "$TMP/i" 2>&1
"$K" profile "$TMP/p/5_linear_gelu_norm" > "$TMP/t" 2>&1
wait
for n in $cases; do
  IFS=: read -r name want ops <<< "$n"
  rc=$(cat "$TMP/$name.rc")
  python3 - "$TMP/$name.json" "$want" "$ops" <<'PY'
import json, shutil, sys
d = json.load(open(sys.argv[1]))
ks = d["kernels"]
assert len(ks) >= int(sys.argv[2]), "%d kernels" % len(ks)
assert d["forward_ms"] > 0 and d["compulsory_bytes"] > 0, d
for k in ks:
    assert k["name"] and k["dur_us"] > 0 and min(k["grid"]) >= 1 and min(k["block"]) >= 1, k
    assert k["registers"] > 0, k
assert any(o in ks[0]["op"] for o in sys.argv[3].split(",")), ks[0]["op"]   # the library call first
assert [k["start_us"] for k in ks] == sorted(k["start_us"] for k in ks)
if shutil.which("ncu") or __import__("os").path.exists("/usr/local/cuda/bin/ncu"):
    assert "metrics_note" not in d, d.get("metrics_note")
    for k in ks:
        m = k["metrics"]
        assert m["gpu__time_duration.sum"] > 0 and m["dram__bytes_read.sum"] >= 0, m
else:
    assert "ncu" in d["metrics_note"], d
PY
  py=$?
  nk=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["kernels"]))' "$TMP/$name.json" 2>/dev/null)
  check "$name: exit $rc, the kernel table of one forward ($nk kernels)" $(( rc != 0 || py != 0 ))
  [ $rc = 0 ] && [ $py = 0 ] || head -5 "$TMP/$name.err"
done
check "the text table: 3+ kernels, every one classed, the program's class" "$(grep -q "^program    the PyTorch reference: [3-9] kernel(s) in one forward" "$TMP/t" && grep -q "^forward " "$TMP/t" && ! grep -E "^ +[0-9]+  " "$TMP/t" | grep -q "unknown$" && grep -qE "^class      (compute|memory|latency)-bound by time" "$TMP/t"; echo $?)"
check "stored as a program profile" "$(grep -q "^stored     profile #[0-9]" "$TMP/t"; echo $?)"
"$K" report --last --kind profile -o "$TMP/r.html" > "$TMP/r.txt" 2>&1
check "kopt report shows its kernel table" "$(grep -q "PyTorch programs" "$TMP/r.html" && grep -q "aten::addmm" "$TMP/r.html"; echo $?)"
[ -s "$TMP/t" ] && grep -q "unknown$" "$TMP/t" && head -12 "$TMP/t"
finish
