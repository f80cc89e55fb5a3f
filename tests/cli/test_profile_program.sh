#!/usr/bin/env bash
# kopt profile of a PyTorch program (cli/profile_program.c, src/profile/program_run.c,
# libexec/kopt_torch_program.py) on the CPU build of PyTorch: the reference's program
# profile as JSON (its subject, the main sizes, the forward's wall time, the problem's
# compulsory bytes at those sizes, no kernels and a note saying why no metrics), a correct
# ModelNew profiled after its evaluation, a wrong one not profiled (its verdict's exit
# code). The kernel table itself needs a GPU (tests/gpu). Prints "skipped: no torch"
# without PyTorch. Usage: test_profile_program.sh KOPT REPO
set -u
K=${1:?kopt}; REPO=${2:?repo}
T=$(mktemp -d "${TMPDIR:-/tmp}/ktest-profile-program-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export KOPT_CACHE_DIR=$T/cache KOPT_DB=$T/kopt.db KOPT_TORCH_DEVICE=cpu
export KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py
unset KOPT_SERVER
fail=0; ok() { echo "ok   $*"; }; bad() { echo "FAIL $*"; fail=1; }
cd "$T" || exit 1
if ! python3 -c 'import torch' > /dev/null 2>&1; then
  echo "skipped: no torch (pip install torch runs the program profiles)"
  echo "ktest: profile_program passed"; exit 0
fi
mkdir -p kb
cp "$REPO/tests/data/kb_small/scale_add.py" kb/
cp "$REPO/tests/data/kb_small/scale_add_new.py" good.py
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x, z):\n        return z + x\n' > wrong.py
"$K" kb import kb --out p > o 2>&1 || { bad "import: $(cat o)"; exit 1; }
"$K" profile p/scale_add --json > r.json 2> r.err; c=$?
if [ $c = 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["subject"] == "reference", d
assert d["sizes"] == {"rows": 64, "cols": 96}, d["sizes"]
assert d["forward_ms"] > 0 and d["forward_reps"] >= 5, d
assert d["compulsory_bytes"] == 3 * 64 * 96 * 4, d["compulsory_bytes"]   # x, z in; out
assert d["kernels"] == [] and "no kernel ran on a GPU" in d["metrics_note"], d
' r.json; then ok "the reference's program profile: sizes, forward time, compulsory bytes"
else bad "reference profile: exit $c $(cat r.err) $(head -c 600 r.json)"; fi
"$K" profile p/scale_add good.py > g.txt 2> g.err; c=$?
if [ $c = 0 ] && grep -q "^program    good.py: 0 kernel(s) in one forward" g.txt; then
  ok "a correct ModelNew: evaluated, then profiled"
else bad "good.py: exit $c $(cat g.txt g.err)"; fi
"$K" profile p/scale_add wrong.py > w.txt 2> w.err; c=$?
if [ $c = 1 ] && grep -q "^verdict    WRONG" w.txt && grep -q "profile    not run" w.txt; then
  ok "a wrong ModelNew: its verdict, no profile (exit 1)"
else bad "wrong.py: exit $c $(cat w.txt w.err)"; fi
[ $fail = 0 ] && echo "ktest: profile_program passed" || { echo "ktest: profile_program FAILED"; exit 1; }
