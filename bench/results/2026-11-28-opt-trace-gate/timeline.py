#!/usr/bin/env python3
"""One line per evaluation of an optimize_gpus.sh run, on the run's own clock (ms after the
first evaluation's start): GPU, compile, candidate_run, workers_ready, the census and when it
began; with --steps, each step's parts (compile, first and second evaluation, the gap).
  python3 timeline.py LABEL.evaluations.jsonl [--steps]"""
import json,sys
ev=[json.loads(l) for l in open(sys.argv[1])]
rows=[]
for e in ev:
    t=e['trace']; b=t['at_base_ms']; pa=t['parent_at']
    s=b+min(v[0] for v in pa.values()); en=b+max(v[1] for v in pa.values())
    c=t.get('candidate_at',{})
    cc=c.get('checked_call'); ctx=c.get('context')
    rows.append((s,en,e['device_index'],e['wall_ms']['compile'],pa['candidate_run'][1]-pa['candidate_run'][0],pa['workers_ready'][1]-pa['workers_ready'][0], (cc[1]-cc[0]) if cc else -1, (b+cc[0]) if cc else 0))
rows.sort(); t0=rows[0][0]
if "--steps" in sys.argv:
    import statistics
    batches = []
    for r in rows:   # evaluations that start within 60 ms of each other: one batch
        if batches and r[0] - batches[-1][0][0] < 60: batches[-1].append(r)
        else: batches.append([r])
    parts = {"compile": [], "first eval after compile": [], "second eval": [], "gap": [], "step": []}
    for i in range(len(batches) - 1):
        b, n = batches[i], batches[i + 1]
        if min(x[3] for x in b) < 100 or max(x[3] for x in n) > 100 or i + 2 >= len(batches):
            continue   # a step: a batch that compiled, then a batch that did not
        parts["compile"].append(max(x[3] for x in b))
        parts["first eval after compile"].append(max(x[1] for x in b) - b[0][0] - max(x[3] for x in b))
        parts["second eval"].append(max(x[1] for x in n) - n[0][0])
        parts["gap"].append(batches[i + 2][0][0] - max(x[1] for x in n))
        parts["step"].append(batches[i + 2][0][0] - b[0][0])
    for k, v in parts.items():
        print("%-26s median %6.0f ms (n=%d)" % (k, statistics.median(v), len(v)) if v else k)
    sys.exit(0)
for r in rows: print("%8.0f %8.0f gpu%d compile %5.0f cand_run %5.0f ready %5.0f census %5.0f @%8.0f"%(r[0]-t0,r[1]-t0,r[2],r[3],r[4],r[5],r[6],r[7]-t0))
