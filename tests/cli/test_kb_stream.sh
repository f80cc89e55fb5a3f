#!/usr/bin/env bash
# The PyTorch path's streamed comparison (src/eval/torch_stream.c, libexec/kopt_torch_compare.py)
# on the CPU build of PyTorch: KOPT_TORCH_COMPARE=stream makes the reference's worker compare
# each run of the candidate as it comes (through the candidate's shared buffer here, by CUDA
# IPC on a GPU, where it is the default), so the protocol and every verdict that depends on
# the comparison run in CI: OK with every check kept and the compare time the reference's;
# WRONG; INPUT_MUTATED; RACE (a repeat that differs); SHAPE_SPECIFIC (fails at the check
# sizes only); CRASH (its process ends between two runs); an evaluation session whose
# reference worker stays up and compares the next candidate; and KOPT_TORCH_COMPARE=host
# giving the same checks by the old way.
# Prints "skipped: no torch" without PyTorch. Usage: test_kb_stream.sh KOPT REPO
set -u
K=${1:?kopt}; REPO=${2:?repo}
T=$(mktemp -d "${TMPDIR:-/tmp}/ktest-kb-stream-XXXXXX") || exit 1
SP=""
cleanup() { [ -n "$SP" ] && kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
export KOPT_CACHE_DIR=$T/cache KOPT_DB=$T/kopt.db KOPT_TORCH_DEVICE=cpu KOPT_TORCH_COMPARE=stream
export KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py
unset KOPT_SERVER
fail=0; ok() { echo "ok   $*"; }; bad() { echo "FAIL $*"; fail=1; }
cd "$T" || exit 1
if ! python3 -c 'import torch' > /dev/null 2>&1; then
  echo "skipped: no torch (pip install torch runs the streamed comparisons)"
  echo "ktest: kb_stream passed"; exit 0
fi
"$K" kb import "$REPO/bench/kernelbench/problems/3_scale_add.py" --out "$T/p" > o 2>&1 \
  || { bad "import: $(cat o)"; exit 1; }
P=$T/p/3_scale_add
SZ=(--size batch=64 --size width=96 --trials 2 --no-compile --reps 3:5 --budget-ms 5)
model() {   # NAME BODY: a ModelNew whose forward(x, z, alpha) is BODY
  printf 'import torch\nclass ModelNew(torch.nn.Module):\n    calls = 0\n    def forward(self, x, z, alpha):\n        ModelNew.calls += 1\n        n = ModelNew.calls\n%s\n' "$2" > "$1.py"
}
model good '        return torch.addcmul(z, x, torch.full_like(x, alpha))'
model wrong '        return alpha * z + x'
model mutates '        z.add_(alpha * x)
        return z.clone()'
# calls: trial 0, trial 1, the repeat of trial 0 (third): only the repeat is off
model race '        y = torch.addcmul(z, x, torch.full_like(x, alpha))
        return y + 1.0 if n == 3 else y'
# written for the benchmark's batch only
model shape '        assert x.shape[0] == 64, "written for batch 64"
        return torch.addcmul(z, x, torch.full_like(x, alpha))'
# its process ends in the middle of the stream (trial 1): the reference's worker is left
# waiting for a run that never comes, and the evaluation must say CRASH, not hang
model dies '        import os
        if n == 2:
            os._exit(3)
        return torch.addcmul(z, x, torch.full_like(x, alpha))'
field() {   # FILE PYTHON-EXPR over d (the JSON)
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}

"$K" eval "$P" good.py "${SZ[@]}" --json > g.json 2> g.err; c=$?
if [ $c = 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "OK", d["message"]
assert [(c["sizes"], c["run"]) for c in d["checks"]] == [("main", "trial 0"), ("main", "trial 1"),
    ("main", "timed"), ("check", "trial 0"), ("check", "trial 1")], d["checks"]
assert all(c["mismatches"] == 0 and c["elements"] > 0 for c in d["checks"]), d["checks"]
assert d["wall_ms"]["compare"] > 0, d["wall_ms"]            # the reference worker did it
t = d["trace"]
assert t["candidate"]["compare_wait"] > 0, t["candidate"]   # the candidate waited for it
assert abs(sum(t["parent"].values()) - d["wall_ms"]["total"]) < 1, t["parent"]
' g.json; then ok "streamed: a correct ModelNew is OK, every run compared by the reference's worker"
else bad "streamed good: exit $c $(field g.json 'd["message"]') $(tail -3 g.err)"; fi

"$K" eval "$P" wrong.py "${SZ[@]}" --no-time > w.txt 2>&1; c=$?
[ $c = 1 ] && grep -q "WRONG: out differs from the PyTorch reference at the main sizes (trial 0)" w.txt &&
  grep -q "first at index" w.txt \
  && ok "streamed: a wrong ModelNew is WRONG, with the first index and values" || bad "streamed wrong: exit $c $(cat w.txt)"
"$K" eval "$P" mutates.py "${SZ[@]}" --no-time > m.txt 2>&1; c=$?
[ $c = 12 ] && grep -q "INPUT_MUTATED: the candidate changed its input 'z'" m.txt \
  && ok "streamed: writing an input is INPUT_MUTATED" || bad "streamed mutates: exit $c $(cat m.txt)"
"$K" eval "$P" race.py "${SZ[@]}" --no-time --json > r.json 2> r.err; c=$?
v=$(field r.json 'd["verdict"] + " " + d["message"][:60]')
[ "${v%% *}" = RACE ] && echo "$v" | grep -q "two runs on the same inputs disagree" \
  && ok "streamed: a repeat of trial 0 that differs is RACE (the two slots compared)" || bad "streamed race: exit $c $v"
"$K" eval "$P" shape.py "${SZ[@]}" --no-time --json > s.json 2> s.err; c=$?
v=$(field s.json 'd["verdict"]')
[ "$v" = SHAPE_SPECIFIC ] && ok "streamed: correct at the benchmark's sizes, failing at the check sizes: SHAPE_SPECIFIC" \
  || bad "streamed shape: $v $(field s.json 'd["message"]')"

"$K" eval "$P" dies.py "${SZ[@]}" --no-time --json > d.json 2> d.err; c=$?
v=$(field d.json 'd["verdict"]')
[ "$v" = CRASH ] && ok "streamed: a candidate whose process ends between two runs is CRASH" \
  || bad "streamed dies: exit $c $v $(field d.json 'd["message"]')"

# the same checks by the host path
KOPT_TORCH_COMPARE=host "$K" eval "$P" good.py "${SZ[@]}" --json --seed 77 > h.json 2> h.err
"$K" eval "$P" good.py "${SZ[@]}" --json --seed 77 > s2.json 2> s2.err
hs=$(field h.json '[(c["run"], c["elements"], c["mismatches"]) for c in d["checks"]]')
ss=$(field s2.json '[(c["run"], c["elements"], c["mismatches"]) for c in d["checks"]]')
[ -n "$hs" ] && [ "$hs" = "$ss" ] && [ "$(field h.json 'd["verdict"]')" = OK ] \
  && ok "KOPT_TORCH_COMPARE=host: the same checks, compared in kopt's process" || bad "host vs stream: $hs / $ss"

# an evaluation session (kopt serve): the reference's worker stays up and compares the next
"$K" serve --socket "$T/s.sock" --idle-exit 120 2> serve.err & SP=$!
for _ in $(seq 100); do grep -q "listening on" serve.err 2>/dev/null && break; sleep 0.1; done
"$K" eval --server="$T/s.sock" --session --json "$P" good.py "${SZ[@]}" > e1.json 2> e1.err; c1=$?
"$K" eval --server="$T/s.sock" --session --json "$P" wrong.py "${SZ[@]}" > e2.json 2> e2.err; c2=$?
"$K" eval --server="$T/s.sock" --session --json "$P" good.py "${SZ[@]}" > e3.json 2> e3.err; c3=$?
s1=$(field e1.json 'd["verdict"], d["reference_reused"]'); s2=$(field e2.json 'd["verdict"], d["reference_reused"]')
s3=$(field e3.json 'd["verdict"], d["reference_reused"], d["wall_ms"]["compare"] > 0')
[ $c1 = 0 ] && [ $c2 = 1 ] && [ $c3 = 0 ] && [ "$s1" = "OK False" ] && [ "$s2" = "WRONG True" ] &&
  [ "$s3" = "OK True True" ] \
  && ok "a session: the reference's worker, kept up, compares later candidates (WRONG, then OK)" \
  || bad "session: $c1 $c2 $c3 / $s1 / $s2 / $s3 $(tail -2 e2.err e3.err)"

[ $fail = 0 ] && echo "ktest: kb_stream passed" || echo "ktest: kb_stream FAILED"
exit $fail
