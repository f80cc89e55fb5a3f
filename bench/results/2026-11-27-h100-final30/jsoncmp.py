#!/usr/bin/env python3
"""Compare two kopt --json outputs: key paths only in one, and values that differ where they
should not vary run to run (strings, bools, ints that are not times, seeds, ids or paths)."""
import json, re, sys
VARY = re.compile(r"(_ms|_s|_us|ms|time|seed|id|path|pid|date|when|started|host|uuid|trace|"
                  r"elapsed|speedup|percent|util|clock|energy|power|temp|timing|median|mean|"
                  r"min|max|stddev|cv|samples|runs|log|store|db|workdir|cache|sec|rate|bw|"
                  r"throughput|gflops|gbs|tflops|watts|joules|fraction|busy|reps|iters)", re.I)
def flat(x, p="", out=None):
    out = {} if out is None else out
    if isinstance(x, dict):
        for k, v in x.items(): flat(v, p + "." + k, out)
    elif isinstance(x, list):
        for i, v in enumerate(x[:50]): flat(v, "%s[%d]" % (p, i), out)
    else:
        out[p] = x
    return out
a, b = (flat(json.load(open(f))) for f in sys.argv[1:3])
only_a = sorted(set(a) - set(b)); only_b = sorted(set(b) - set(a))
diff = [k for k in sorted(set(a) & set(b)) if a[k] != b[k] and not VARY.search(k)
        and not isinstance(a[k], float)]
print("%s: %d keys; only before %d %s; only after %d %s; stable values differing %d %s" % (
      sys.argv[3] if len(sys.argv) > 3 else "", len(a), len(only_a), only_a[:5], len(only_b),
      only_b[:5], len(diff), [(k, a[k], b[k]) for k in diff[:5]]))
sys.exit(1 if only_a or only_b or diff else 0)
