/*
 * kopt/kb.h: KernelBench's metrics over a suite of evaluated problems (kopt bench,
 * docs/kernelbench.md). Pure arithmetic: no GPU, no store.
 *
 * fast_p is KernelBench's: the fraction of the suite's problems whose candidate is correct
 * AND faster than p times the baseline (speedup > p); fast_0 is therefore the correctness
 * rate. The geometric-mean speedup is given two ways: over the correct problems only, and
 * over all problems with every failure counted as 1.0 (falling back to the reference).
 *
 * kopt_kb_import turns KernelBench problem files into kopt problem folders by running them
 * in the PyTorch worker's Python (kopt/worker.h: kopt_torch_worker_find), each with a
 * second, smaller, odd size set ("check_sizes") where its shapes allow one.
 *
 * Ownership: the summary is a plain struct filled by the caller; an import's records
 * belong to the caller (kopt_kb_import_free).
 */
#ifndef KOPT_KB_H
#define KOPT_KB_H

#include "kopt/core.h"
#include "kopt/device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kopt_kb_row {
    int correct;             /* the verdict was OK */
    double speedup;          /* baseline median / candidate median; <= 0: unknown */
} kopt_kb_row;

#define KOPT_KB_NFAST 4
extern const double kopt_kb_fast_p[KOPT_KB_NFAST];   /* 0, 1, 1.5, 2 */

typedef struct kopt_kb_summary {
    int n;                       /* problems in the suite */
    int ncorrect;
    double correct_rate;         /* ncorrect / n (0 when n == 0) */
    double fast[KOPT_KB_NFAST];  /* fast_p for each kopt_kb_fast_p */
    int ntimed;                  /* correct rows with a known speedup */
    double geomean_correct;      /* over correct rows with a speedup; 0 when there are none */
    double geomean_all;          /* over all n rows, failures (and unknown speedups) as 1.0 */
} kopt_kb_summary;

/* Fill *out from n rows (n may be 0). */
void kopt_kb_summarize(const kopt_kb_row *rows, int n, kopt_kb_summary *out);

/* ---- the speed-of-light guard ------------------------------------------------------------
 * No run can move a problem's bytes faster than the device's peak DRAM bandwidth. kopt bench
 * checks every time it reports (candidate, eager, torch.compile) against that bound: a time
 * below it is flagged (the timing brackets something else, the L2 was not flushed, or the
 * work was skipped) and its speedups are not used. */

/* The peak DRAM bandwidth, GB/s: the better of the spec (2 x memory clock x bus width, from
 * the device's attributes) and the measured ceilings (c may be NULL); 0 when neither. */
double kopt_kb_peak_gbs(const kopt_device_info *dev, const kopt_ceilings *c);

/* The least time (ms) that moves `bytes` at `gbs`; 0 when either is unknown. */
double kopt_kb_sol_bound_ms(double bytes, double gbs);

/* Bit i set when times_ms[i] (> 0: known) is below bound_ms; 0 when the bound is unknown. */
unsigned kopt_kb_sol_flags(const double *times_ms, int n, double bound_ms);

/* ---- import ----------------------------------------------------------------------------- */

typedef struct kopt_kb_import_opts {
    double atol, rtol;          /* the imported problems' tolerance (default 1e-2 each) */
    const char *prefix;         /* prepended to every problem name, or NULL */
    const char *device;         /* where the modules run while importing: "cpu" (default) */
    double timeout_s;           /* for the whole import (default 1800) */
} kopt_kb_import_opts;
#define KOPT_KB_IMPORT_OPTS_INIT {1e-2, 1e-2, NULL, NULL, 1800.0}

typedef struct kopt_kb_import_record {
    char *file;                 /* the KernelBench file */
    char *problem;              /* the problem folder written, or NULL */
    char *error;                /* why it was not imported (names the file and the
                                 * construct), or NULL */
    int has_flops;              /* the work counts: bytes always, FLOPs when PyTorch's FLOP
                                 * counter gave them */
    double bytes, flops;
    char *sizes;                /* the main sizes as JSON ({"M": 4096, ...}), or NULL */
    char *check_sizes;          /* the check sizes written to problem.json, as JSON, or NULL */
    char *check_sizes_note;     /* which shape sizes the check set keeps unchanged, and why;
                                 * or NULL */
    char *check_sizes_error;    /* why the problem has no check sizes, or NULL */
} kopt_kb_import_record;

/* Import `src` (a KernelBench problem file, or a folder of them) into `out_dir`, one
 * problem folder per file; each written problem.json is loaded back to check it. *out
 * (n records, in file order) is the caller's. KOPT_OK when the importer ran, whatever each
 * file's outcome; an error when it could not (no Python with PyTorch, no worker script). */
kopt_status kopt_kb_import(kopt_ctx *ctx, const char *src, const char *out_dir,
                           const kopt_kb_import_opts *opts, kopt_kb_import_record **out,
                           int *n);
void kopt_kb_import_free(kopt_kb_import_record *recs, int n);

#ifdef __cplusplus
}
#endif
#endif
