# summary of one tune run: its JSON and its KOPT_TUNE_TRACE (evaluations and prepares)
import json, sys, statistics as st
d = json.load(open(sys.argv[1]))
ev, pr = [], []
for l in open(sys.argv[2]):
    j = json.loads(l)
    (pr if "prepare" in j else ev).append(j)
fe = d.get("first_eval_s", 0)
ev.sort(key=lambda r: r["start_ms"])
t0 = ev[0]["start_ms"] - fe * 1000 if ev else 0
print("tune %.2f s, first eval %.2f s, compile wait %.1f GPU-s, threads %s, helpers %s, cpus %s" % (
    d["elapsed_s"], fe, d["compile_wait_s"], d.get("compile_threads"), d.get("compile_helpers"), d.get("cpus_usable")))
if pr:
    pr.sort(key=lambda r: r["start_ms"])
    dur = [r["end_ms"] - r["start_ms"] for r in pr]
    k = min(len(pr), d.get("compile_threads") or 16)
    first_end = min(r["end_ms"] for r in pr) - t0
    print("   prepares %d: first starts %.2f s, first ends %.2f s; first %d: median %.2f s, max %.2f s; rest median %.2f s" % (
        len(pr), (pr[0]["start_ms"] - t0) / 1000, first_end / 1000, k, st.median(dur[:k]) / 1000, max(dur[:k]) / 1000,
        st.median(dur[k:]) / 1000 if len(dur) > k else 0))
if ev:
    em = [r["eval_ms"] for r in ev]
    first = [r for r in ev[:NG]] if (NG := len(set(r["device"] for r in ev))) else []
    print("   evals %d on %d GPUs: median %.0f ms, mean %.0f ms; first per GPU: ready %s ms" % (
        len(ev), NG, st.median(em), st.mean(em),
        [round(r.get("trace", {}).get("parent", {}).get("workers_ready", 0)) for r in first]))
