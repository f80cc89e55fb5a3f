#!/usr/bin/env bash
# kopt profile on a GPU: every planted kernel in tests/profile/planted/ is correct (OK), is
# profiled with CUPTI in-process (falling back to --ncu when CUPTI is refused, said so), and
# the micro-tools named on its `// plants:` line appear among its --json findings. Prints
# the roofline metric set's collect time per kernel (goal: < 100 ms). Then a fixed kernel
# after its planted one records a resolution, shown by --tool-stats.
source "$(dirname "$0")/lib.sh" "$1"
command -v python3 >/dev/null || { echo "skipped: python3 needed"; exit 77; }
check_findings() {   # FILE.json TOOLS...
  python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); want = sys.argv[2:]
if d.get("verdict") != "OK":
    print("      verdict %s: %s" % (d.get("verdict"), d.get("message"))); sys.exit(1)
got = {f["tool"] for f in d.get("findings", [])}
sets = {s["name"]: s for s in d.get("metric_sets", [])}
print("      metrics %s; roofline set: %s; findings: %s" % (
    d.get("metrics_source") or d.get("metrics_note"),
    "%.1f ms, %d pass(es)" % (sets["roofline"]["collect_ms"], sets["roofline"]["passes"])
    if "roofline" in sets else "-", ", ".join(sorted(got)) or "none"))
missing = [t for t in want if t not in got]
if d.get("metrics_source") is None:
    print("      no metrics: " + str(d.get("metrics_note"))); sys.exit(1)
if missing:
    print("      missing: " + ", ".join(missing))
    for s in d.get("tools_skipped", []):
        if s.split(":")[0] in missing: print("      skipped " + s)
    sys.exit(1)
PY
}
for f in tests/profile/planted/*.cu; do
  prob=$(sed -n 's|^// problem: *||p' "$f")
  tools=$(sed -n 's|^// plants: *||p' "$f" | tr ',' ' ')
  out=$TMP/$(basename "$f" .cu).json
  "$K" profile "$prob" "$f" --json > "$out" 2> "$out.err"
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d.get("metrics_source") is None and "CUPTI" in str(d.get("metrics_note")) else 1)' "$out" 2>/dev/null; then
    echo "note  CUPTI refused for $f; retrying with --ncu"
    "$K" profile "$prob" "$f" --json --ncu > "$out" 2> "$out.err"
  fi
  if check_findings "$out" $tools; then
    passed=$((passed + 1)); echo "ok    $f: $tools"
  else
    failed=$((failed + 1)); echo "FAIL  $f: expected $tools"; tail -5 "$out.err"
  fi
done
# the padded transpose after the bank-conflicted one: the finding should resolve
"$K" profile examples/transpose tests/profile/planted/transpose_bank_conflicts.cu > /dev/null 2>&1
"$K" profile examples/transpose examples/transpose/fast.cu \
  --parent tests/profile/planted/transpose_bank_conflicts.cu > /dev/null 2>&1
"$K" profile --tool-stats | tee "$TMP/stats.txt"
if grep -qE '^bank_conflicts +[0-9]+ +[1-9]' "$TMP/stats.txt"; then
  passed=$((passed + 1)); echo "ok    bank_conflicts resolved by examples/transpose/fast.cu"
else
  failed=$((failed + 1)); echo "FAIL  bank_conflicts not resolved by examples/transpose/fast.cu"
fi
finish
