#!/usr/bin/env bash
# Record real ncu CSV fixtures on a GPU machine (see README.md in this folder).
#
#   tests/data/ncu/record.sh OUTDIR [examples|planted|all] [NAME_FILTER]
#
# For each example problem (its reference kernels and its fast.cu) and each planted kernel
# in tests/profile/planted/, runs `kopt eval PROBLEM CANDIDATE --no-time ...` under ncu
# twice: once for the raw page with --metrics = kopt_metrics_rules (src/profile/metrics.c),
# once for the details page with --set full (ncu's rule results). Writes
#   OUTDIR/<problem>.<candidate>.raw.csv      ncu --csv --page raw   (via --log-file)
#   OUTDIR/<problem>.<candidate>.details.csv  ncu --csv --page details
#   OUTDIR/<problem>.<candidate>.kopt.log     kopt's own output (stdout + stderr)
# where <candidate> is "reference", "fast" or the planted file's name. Kernels are selected
# with -k regex:^(names from the launch plan), and -c = the number of those kernels. Clocks
# are left as they are (--clock-control none), like kopt's own timing and CUPTI.
# Run from the repository root; needs build-dev/kopt (or $KOPT) and ncu (or $NCU).
set -u -o pipefail

out=${1:?usage: record.sh OUTDIR [examples|planted|all] [NAME_FILTER]}
group=${2:-all}
filter=${3:-}
kopt=${KOPT:-build-dev/kopt}
ncu=${NCU:-ncu}
mkdir -p "$out"

# kopt_metrics_rules, joined by commas.
metrics=$(sed -n '/kopt_metrics_rules\[\] = {/,/NULL/p' src/profile/metrics.c |
          grep -o '"[^"]*"' | tr -d '"' | paste -sd, -)
[ -n "$metrics" ] || { echo "record.sh: no metric list found in src/profile/metrics.c" >&2; exit 2; }

# Kernel names of a launch plan: problem.json's, or a candidate's /*@kopt ... */ front matter.
kernels() {
    case "$1" in
        *.json) cat "$1" ;;
        *) sed -n '/\/\*@kopt/,/\*\//p' "$1" ;;
    esac | grep -o '"kernel": *"[^"]*"' | sed 's/.*: *"//; s/"$//' | sort -u
}

failed=0
profile() {   # profile PROBLEM CANDIDATE_FILE NAME KERNEL_NAMES...
    local prob=$1 cand=$2 name=$3; shift 3
    local regex count
    regex="^($(printf '%s\n' "$@" | paste -sd'|' -))"
    count=$#
    [ -n "$filter" ] && [[ "$name" != *"$filter"* ]] && return 0
    echo "== $name: -k regex:$regex -c $count" >&2
    local eval_args=(eval "$prob" "$cand" --no-time --trials 1 --no-check-sizes --no-store
                     --timeout 300)
    "$ncu" --target-processes all --clock-control none --metrics "$metrics" \
        -k "regex:$regex" -c "$count" --csv --page raw --print-units base \
        --log-file "$out/$name.raw.csv" "$kopt" "${eval_args[@]}" >"$out/$name.kopt.log" 2>&1 ||
        { echo "   raw: failed (see $out/$name.kopt.log)" >&2; failed=1; }
    "$ncu" --target-processes all --clock-control none --set full \
        -k "regex:$regex" -c "$count" --csv --page details --print-units base \
        --log-file "$out/$name.details.csv" "$kopt" "${eval_args[@]}" >>"$out/$name.kopt.log" 2>&1 ||
        { echo "   details: failed (see $out/$name.kopt.log)" >&2; failed=1; }
    grep -q '"Kernel Name"' "$out/$name.raw.csv" 2>/dev/null ||
        { echo "   raw: no CSV table (no kernel matched?)" >&2; failed=1; }
}

if [ "$group" = examples ] || [ "$group" = all ]; then
    for dir in examples/*/; do
        p=${dir%/}; base=$(basename "$p")
        [ -f "$p/fast.cu" ] || continue
        mapfile -t ref < <(kernels "$p/problem.json")
        mapfile -t fast < <(kernels "$p/fast.cu")
        profile "$p" "$p/reference.cu" "$base.reference" "${ref[@]}"
        profile "$p" "$p/fast.cu" "$base.fast" "${fast[@]}"
    done
fi
if [ "$group" = planted ] || [ "$group" = all ]; then
    for f in tests/profile/planted/*.cu; do
        p=$(sed -n 's|^// problem: *||p' "$f")
        mapfile -t ks < <(kernels "$f")
        profile "$p" "$f" "$(basename "$p").$(basename "$f" .cu)" "${ks[@]}"
    done
fi
exit $failed
