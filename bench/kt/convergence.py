"""Convergence statistics shared by the Kernel Tuner comparison scripts (issue 5, point 11).

A run is summarized by its improvements: a list of (evals, best) pairs, where `evals` is
the number of unique evaluations done when the best objective (time, lower is better)
became `best`. For a threshold t, the run "reaches t" after the first improvement with
optimum / best >= t; a run that never does within its budget counts as budget + 1, and
the fraction of runs that reached it is reported next to the mean and median.
"""
import json
import math
import statistics

THRESHOLDS = (0.90, 0.95, 0.98)


def evals_to_reach(improvements, optimum, threshold, budget):
    """Unique evaluations needed to reach `threshold` of `optimum`; budget + 1 if never."""
    for evals, best in improvements:
        if best > 0 and math.isfinite(best) and optimum / best >= threshold - 1e-12:
            return evals
    return budget + 1


def improvements_from_trace(trace):
    """(evals, best) pairs from a per-evaluation list of objective values (None or inf
    for failed evaluations), in evaluation order."""
    out, best = [], math.inf
    for i, value in enumerate(trace, start=1):
        if value is not None and math.isfinite(value) and value < best:
            best = value
            out.append((i, best))
    return out


def run_record(seed, improvements, optimum, budget, unique_evals, extra=None):
    rec = {
        "seed": seed,
        "unique_evals": unique_evals,
        "best_ms": improvements[-1][1] if improvements else None,
        "fraction_of_optimum": (optimum / improvements[-1][1]) if improvements else 0.0,
        "improvements": [[int(e), float(b)] for e, b in improvements],
        "evals_to": {f"{t:.2f}": evals_to_reach(improvements, optimum, t, budget) for t in THRESHOLDS},
    }
    if extra:
        rec.update(extra)
    return rec


def summarize(runs, budget):
    """Mean, median and fraction reached per threshold over a strategy's runs."""
    out = {}
    for t in THRESHOLDS:
        key = f"{t:.2f}"
        vals = [r["evals_to"][key] for r in runs]
        if not vals:
            continue
        reached = sum(1 for v in vals if v <= budget)
        out[key] = {
            "mean": statistics.fmean(vals),
            "median": statistics.median(vals),
            "reached": reached,
            "runs": len(vals),
            "fraction_reached": reached / len(vals),
        }
    fr = [r["fraction_of_optimum"] for r in runs]
    if fr:
        out["final_fraction_of_optimum_mean"] = statistics.fmean(fr)
    return out


def fmt_evals(s, budget):
    """'mean / median' with '>B' where a value is budget + 1 (not reached)."""
    def one(v):
        if v >= budget + 1:
            return f">{budget}"
        return f"{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{v:.1f}"
    return f"{one(s['mean'])} / {one(s['median'])}"


def markdown_table(rows, budget, title_col="strategy"):
    """rows: list of (label, summary). Columns: evals to 90/95/98 % (mean / median; a mean
    that includes runs that did not reach counts those as budget + 1) and the fraction of
    seeds that reached each."""
    head = [title_col]
    for t in THRESHOLDS:
        head.append(f"evals to {t * 100:.0f}% (mean / median)")
    for t in THRESHOLDS:
        head.append(f"reached {t * 100:.0f}%")
    head.append("final % of optimum (mean)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, s in rows:
        cells = [label]
        for t in THRESHOLDS:
            k = f"{t:.2f}"
            cells.append(fmt_evals(s[k], budget) if k in s else "–")
        for t in THRESHOLDS:
            k = f"{t:.2f}"
            cells.append(f"{s[k]['reached']}/{s[k]['runs']}" if k in s else "–")
        fr = s.get("final_fraction_of_optimum_mean")
        cells.append(f"{100 * fr:.1f}" if fr is not None else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
