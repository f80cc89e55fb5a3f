export KOPT_TORCH_DEVICE=cpu KOPT_TORCH_WORKER=/work/main/libexec/kopt_torch_worker.py KOPT_DB=/tmp/evalcheck.db
for P in /tmp/kbp1/* /tmp/kbp2/*; do
  args=$(python3 -c '
import json,sys
p=json.load(open(sys.argv[1]+"/problem.json"))
print(" ".join("--size %s=%d" % kv for kv in p.get("check_sizes",{}).items()))' $P)
  t0=$(date +%s)
  out=$(timeout 600 /tmp/buildA/kopt eval $P $P/model.py $args --trials 1 --no-time --timeout 300 2>&1 | grep -E "^(OK|WRONG|CRASH|ERROR|LAUNCH|TIMEOUT|OOM)|verdict|sizes " | head -3 | tr '\n' ' ')
  echo "$(basename $P) [$(( $(date +%s) - t0 ))s] $out"
done
