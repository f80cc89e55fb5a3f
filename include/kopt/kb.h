/*
 * kopt/kb.h: KernelBench's metrics over a suite of evaluated problems (kopt bench,
 * docs/kernelbench.md); the metrics themselves are pure arithmetic (no GPU, no store).
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
 * kopt bench's suite (src/kb/bench.c): the problems and candidates it finds, its rows (as
 * JSON, jansson's json_t), stored and counted as they finish, its metrics, and the text
 * kopt bench prints. kopt_kb_bench (src/kb/bench_run.c) runs a whole suite: what kopt
 * bench, the MCP tool bench and Python's kopt.bench all call.
 *
 * Ownership: the summary is a plain struct filled by the caller; an import's records
 * belong to the caller (kopt_kb_import_free).
 */
#ifndef KOPT_KB_H
#define KOPT_KB_H

#include "kopt/core.h"
#include "kopt/device.h"
#include "kopt/llm.h"
#include "kopt/run.h"

#include <stdio.h>

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

/* ---- kopt bench's suite ------------------------------------------------------------------
 * A row is a JSON object (its stored form, kopt bench --json's "rows"); the rows and the
 * summary are jansson's json_t, the caller's once returned. */
struct json_t;

/* The problem folders under `root` (or root itself), in natural order, into *out (the
 * caller frees each and the array); their number, -1 when the folder cannot be read. */
int kopt_kb_list_problems(const char *root, char ***out);
/* The candidate file of `prob` in `dir` for `kind` (auto: NAME.cu, else NAME.py; cu; py;
 * reference: the problem's own), malloc'd, or NULL. */
char *kopt_kb_find_candidate(const kopt_problem *prob, const char *dir, const char *kind);
/* The row's check at the problem's check_sizes: "ok", "failed", "none" (the problem has
 * none), "skipped" (skip: --no-check-sizes), or "not_run" (r NULL or stopped before them). */
const char *kopt_kb_shape_check(const kopt_problem *prob, const kopt_eval_result *r, int skip);
/* One row (r NULL: no evaluation; verdict and message say why): times, speedups, the
 * speed-of-light guard, brackets, the kernels launched, eval_id. */
struct json_t *kopt_kb_bench_row(const char *problem, const char *cand_path, const char *kind,
                                 const char *verdict, const char *message,
                                 const kopt_eval_result *r, const char *shapes);
/* The row of a candidate of `prob` that was not evaluated (verdict and message say why);
 * its check sizes "not_run", or as skip says. */
struct json_t *kopt_kb_unrun_row(const kopt_problem *prob, const char *cand_path,
                                 const char *kind, const char *verdict, const char *message,
                                 int skip);
/* The MISSING row of a problem with no candidate file in `dir` for `kind`. */
struct json_t *kopt_kb_missing_row(const kopt_problem *prob, const char *dir, const char *kind,
                                   int skip);

/* A suite while it runs: kopt_kb_suite_init sets the run, its store, the rows; the caller
 * the rest (the arrays hold a row's metrics per row added). */
typedef struct kopt_kb_suite {
    kopt_run *run;
    kopt_store *store;           /* NULL: rows not stored */
    kopt_ctx *ctx;
    int64_t suite;
    struct json_t *done_rows;    /* a resumed suite's stored rows, by problem */
    struct json_t *rows;         /* the rows so far (an array) */
    kopt_kb_row *eager, *compiled, *best;
    int nrows, cap;
    FILE *out;                   /* each row printed as it finishes (NULL: none, --json) */
    int skip_check;              /* --no-check-sizes */
    int nshape;                  /* SHAPE_SPECIFIC rows (failures, as any verdict but OK) */
    int nsol, nbound;            /* speed-of-light: times flagged, rows with a bound */
    int ncached;                 /* rows whose torch.compile time came from the store */
    const char *kind;
} kopt_kb_suite;

void kopt_kb_suite_init(kopt_kb_suite *s, kopt_run *run, kopt_ctx *ctx);
/* Store a new suite's row (s->suite: its id) with its options; KOPT_OK without a store. */
kopt_status kopt_kb_suite_begin(kopt_kb_suite *s, const char *root, const char *cand_dir,
                                struct json_t *options);
/* Free the rows and metrics (a zeroed suite too); the suite is left empty. */
void kopt_kb_suite_clear(kopt_kb_suite *s);
/* A suite's options, stored with it (a resumed suite runs with them). */
typedef struct kopt_kb_suite_opts {
    char kind[16];               /* auto, cu, py, reference; "optimize" when resumed so */
    int no_compile;              /* torch.compile not timed */
    int no_check_sizes;
    int optimize;                /* kopt bench --optimize, with its search's budget: */
    int iterations;
    double max_wall_s, fake_ref_ms;
    char evaluator[16];          /* live ("": live) or fake */
} kopt_kb_suite_opts;
/* The options as stored (JSON, the caller's). */
struct json_t *kopt_kb_suite_options(const kopt_kb_suite_opts *o);
/* Resume stored suite `id` (s->store, s->ctx, s->done_rows set): its problems folder and
 * candidates folder (malloc'd; NULL: none), its options over *o (kind, no_compile; the
 * others only when stored), its rows into s->done_rows. */
kopt_status kopt_kb_suite_resume(kopt_kb_suite *s, int64_t id, char **root, char **cands,
                                 kopt_kb_suite_opts *o);
/* Store a problem's row (unless it was done before), count it, print it; takes `row`. */
void kopt_kb_suite_add(kopt_kb_suite *s, const char *name, struct json_t *row);
/* A problem's row once its candidate's evaluation returned `rc`: ERROR (the message on ctx)
 * when it did not run, else the evaluation `r` with its check at other sizes; the row's
 * kind "optimize" for kopt optimize's kernel (`optimized`), else "py" for a ModelNew, "cu". */
struct json_t *kopt_kb_eval_row(const kopt_kb_suite *s, const kopt_problem *prob,
                                const kopt_candidate *cand, const char *cand_path,
                                int optimized, kopt_status rc, const kopt_eval_result *r,
                                kopt_ctx *ctx);
/* The text before the rows: the suite's line (iterations >= 0: kopt bench --optimize, its
 * evaluator), --no-check-sizes, the table's head. */
void kopt_kb_suite_print_head(FILE *f, const kopt_kb_suite *s, int np, const char *root,
                              int resumed, const char *cand_dir, int no_compile,
                              int iterations, const char *evaluator);
/* The suite's metrics (vs eager, and vs torch.compile and the faster baseline unless
 * no_compile), stored with the suite (a warning when that fails); the caller's. */
struct json_t *kopt_kb_suite_summary(const kopt_kb_suite *s, const char *root,
                                     const char *cand_dir, struct json_t *options,
                                     int no_compile);
/* The metrics as text, after the rows. */
void kopt_kb_suite_print_summary(FILE *f, const kopt_kb_suite *s, int no_compile);

/* ---- a whole suite (src/kb/bench_run.c) ---------------------------------------------------
 * kopt bench PROBLEMS --candidates DIR: every problem folder under `problems` evaluated
 * with its candidate through the run (as kopt eval would, against PyTorch eager and
 * torch.compile), each row stored as it finishes; or a stored suite resumed. */
typedef struct kopt_kb_bench_opts {
    const char *problems;        /* a problem folder or a folder of them (NULL with resume) */
    const char *candidates;      /* the candidates' folder (NULL: none, e.g. with optimize) */
    const char *kind;            /* auto (NULL), cu, py, reference */
    int no_compile;              /* torch.compile not timed */
    int64_t resume;              /* continue this stored suite (0: a new one, the run's id);
                                  * the run was opened with it as its parent */
    kopt_eval_opts eval;         /* every evaluation's options (skip_check_sizes: no check
                                  * sizes); torch_compile is set from no_compile */
    const int *gpus;             /* evaluate on these GPUs at once, each problem on the first
                                  * free one (NULL: one at a time on eval.device) */
    int ngpus;
    /* optimize: no candidates folder; kopt optimize (kopt/search.h) on each problem, its
     * best kernel the row's candidate (the reference when nothing beat it) */
    int optimize;
    int iterations;              /* each search's expansions (default 4) */
    double max_wall_s;           /* each problem's wall-time budget in seconds (0: none) */
    const char *evaluator;       /* live (NULL) or fake (outcomes scripted in the sources) */
    double fake_ref_ms;
    /* the model, opened when a search is first due (a resumed suite whose problems are all
     * done needs none); its message on ctx when it cannot. NULL: an optimize suite fails */
    kopt_status (*llm_open)(void *user, kopt_ctx *ctx, kopt_llm_client **out);
    void *llm_user;
    const char *db_path;         /* the store the searches' trees go to (the run's) */
    int argc;                    /* the command the searches' runs record */
    char *const *argv;
    volatile sig_atomic_t *stop; /* set (another thread, a signal): the suite ends after the
                                  * current problem, with what was done stored; NULL: none */
    FILE *text;                  /* kopt bench's text here: the head, each row as it
                                  * finishes, the metrics (NULL: none) */
    int overlap;                 /* optimize: each search asks its next step while a step is
                                  * evaluated (kopt optimize --overlap) */
} kopt_kb_bench_opts;
void kopt_kb_bench_opts_default(kopt_kb_bench_opts *o);

/* Run the suite through `run` (opened by the caller with kind KOPT_RUN_BENCH and, to
 * resume, parent_id = o->resume; finished by the caller). *doc (the caller's) is kopt
 * bench --json's document: the suite's id, folders, options, metrics and "rows"; with
 * "interrupted": true when o->stop ended it early. An error status (message on ctx) when
 * the suite could not run: KOPT_E_INVALID for a resumed suite that cannot be read (or
 * resuming without a store), KOPT_E_NOT_FOUND for a problems folder that cannot be read or
 * holds no problem ("FOLDER: no problem folders in it"), any other for the store or the
 * model. */
kopt_status kopt_kb_bench(kopt_run *run, kopt_ctx *ctx, const kopt_kb_bench_opts *o,
                          struct json_t **doc);

#ifdef __cplusplus
}
#endif
#endif
