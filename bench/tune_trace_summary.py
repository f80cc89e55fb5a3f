# Summary of one kopt tune run (bench/tune_gpus_ab.sh): its --json, its KOPT_TUNE_TRACE and the
# monotonic clock (s) at launch and at exit: the wall step by step, the evaluations, the
# first evaluation on each GPU and what its workers waited for. Usage: JSON TRACE T0 T1
import json, sys, statistics as st
d = json.load(open(sys.argv[1]))
t_launch, t_exit = float(sys.argv[3]) * 1000, float(sys.argv[4]) * 1000
ev, pr, steps = [], [], {}
for l in open(sys.argv[2]):
    j = json.loads(l)
    if "point" in j: ev.append(j)
    elif "prepare" in j: pr.append(j)
    elif "step" in j: steps.setdefault(j["step"], j)
def dur(s): return (steps[s]["end_ms"] - steps[s]["start_ms"]) / 1000 if s in steps else float("nan")
first = steps.get("ceilings", {}).get("start_ms", t_launch)
last = steps.get("close", {}).get("end_ms", t_exit)
print("wall %.2f s = start %.2f + ceilings %.2f + slots %.2f + helpers %.2f + search %.2f + record %.2f + final %.2f + close %.2f + exit %.2f" % (
    (t_exit - t_launch) / 1000, (first - t_launch) / 1000, dur("ceilings"), dur("scale_open"), dur("depth_open"),
    dur("search"), dur("record"), dur("final_check"), dur("close"), (t_exit - last) / 1000))
print("   tune %.2f s, first eval %.2f s, compile wait %.1f GPU-s, helpers %s, cpus %s" % (
    d["elapsed_s"], d.get("first_eval_s", 0), d["compile_wait_s"], d.get("compile_helpers"), d.get("cpus_usable")))
if pr:
    t0 = steps.get("search", {}).get("start_ms", min(r["start_ms"] for r in pr))
    print("   prepares %d: first ends %.2f s after the search starts; median %.2f s" % (
        len(pr), (min(r["end_ms"] for r in pr) - t0) / 1000, st.median(r["end_ms"] - r["start_ms"] for r in pr) / 1000))
if ev:
    ev.sort(key=lambda r: r["start_ms"])
    em = [r["eval_ms"] for r in ev]
    def m(side, k):
        v = [r.get("trace", {}).get(side, {}).get(k, 0) or 0 for r in ev]
        return st.mean(v)
    early = [r.get("trace", {}).get("during_candidate_run", {}).get("early_checks", 0) for r in ev]
    ng = len(set(r["device"] for r in ev))
    print("   evals %d on %d GPUs: median %.1f ms, mean %.1f ms; mean cand_run %.1f integrity %.1f compare %.1f early %.1f ready %.1f timing %.1f" % (
        len(ev), ng, st.median(em), st.mean(em), m("parent", "candidate_run"), m("parent", "integrity_checks"),
        m("parent", "compare"), st.mean(early), m("parent", "workers_ready"), m("candidate", "timing")))
    seen = set()
    for r in ev:
        if r["device"] in seen: continue
        seen.add(r["device"])
        s = r.get("setup") or {}
        parts = []
        for who in ("reference", "candidate"):
            x = s.get(who) or {}
            if x:
                parts.append("%s " % who[:3] + " ".join("%s %.0f" % (k, v) for k, v in x.items() if isinstance(v, (int, float))))
        print("   GPU %d first eval at %.2f s, ready wait %.0f ms; %s" % (
            r["device"], (r["start_ms"] - t_launch) / 1000, r.get("trace", {}).get("parent", {}).get("workers_ready", 0), "; ".join(parts)))
