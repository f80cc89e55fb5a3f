/* Internal: the run's handle and what the run API's files share. */
#ifndef KOPT_RUN_INT_H
#define KOPT_RUN_INT_H

#include "kopt/run.h"

#define KOPT__RUN_MAX_DEVICES 16
/* Search spaces (kopt tune): points scanned when counting the valid ones (--space, text and
 * JSON) or a replay's missing ones, and pruning reasons listed. */
#define KOPT__RUN_SPACE_SCAN_LIMIT 1000000
#define KOPT__RUN_SPACE_REASONS 5

typedef struct kopt__run_ceilings {
    int device;                  /* ordinal */
    kopt_ceilings c;             /* valid: known (store or measured) */
} kopt__run_ceilings;

struct kopt_run {
    kopt_run_kind kind;
    kopt_store *store;           /* NULL: none */
    char *db_path;
    int64_t id;                  /* 0: not recorded */
    kopt_store_run env;          /* the row as recorded */
    int env_from_worker;         /* a worker's device properties were noted */
    int finished;
    kopt_run_fault fault;
    char *cache_dir;
    int nceil;
    kopt__run_ceilings ceil[KOPT__RUN_MAX_DEVICES];
};

/* Record the fault of the step that failed (returns rc, for `return kopt__run_fail(...)`). */
kopt_status kopt__run_fail(kopt_run *run, kopt_run_fault f, kopt_status rc);
/* The ceilings of `device` known to the run or stored; NULL when neither (no measuring). */
const kopt_ceilings *kopt__run_known_ceilings(kopt_run *run, kopt_ctx *ctx, int device);
/* The ceilings of n devices measured at once, each in a worker of its own on a thread of
 * its own (threaded, or n > 1; else in the call): _begin starts the measurements of those
 * neither known nor stored, and returns at once (NULL: out of memory, the error set); _end
 * waits for them, stores and keeps what they measured, and fills out[0..n-1] (invalid:
 * not measured, warned). kopt_run_ceilings_many is the two in a row. */
typedef struct kopt__run_ceilings_wave kopt__run_ceilings_wave;
kopt__run_ceilings_wave *kopt__run_ceilings_begin(kopt_run *run, kopt_ctx *ctx,
                                                  const int *devices, int n, int threaded);
void kopt__run_ceilings_end(kopt__run_ceilings_wave *w, kopt_ctx *ctx, kopt_ceilings *out);
/* After an evaluation on GPU `device`: ceilings it measured (kept and stored once) and the
 * device's full properties (the environment). */
void kopt__run_note_result(kopt_run *run, kopt_ctx *ctx, int device, const kopt_eval_result *r);
/* Store an evaluation linked to the run (a warning when it fails; r->eval_id set), and the
 * torch.compile baseline it measured, when fresh and trusted and its verdict is OK. */
void kopt__run_store_eval(kopt_run *run, kopt_ctx *ctx, const kopt_problem *prob,
                          const kopt_candidate *cand, kopt_eval_result *r, const char *tag);
/* The store's torch.compile baselines of `prob` (newest first) put into o->torch_baselines
 * when the evaluation will time torch.compile (a PyTorch reference, o->torch_compile, timing
 * on) and the caller gave none; returns them (the caller frees them once the evaluation, or
 * the session, is over), or NULL. kopt__run_store_eval stores a fresh, trusted one. */
#define KOPT__RUN_MAX_BASELINES 64
kopt_torch_baseline *kopt__run_load_baselines(kopt_run *run, kopt_ctx *ctx,
                                              const kopt_problem *prob, kopt_eval_opts *o);
/* A profile and its findings into the run's store, with resolutions against its baseline
 * (run_profile_store.c); a PyTorch program's (program_json set) as source "program". */
void kopt__run_profile_store(kopt_run *run, kopt_run_profile *s, kopt_ctx *ctx);
/* The profile of a PyTorch program (s->subject->torch_module: a PyTorch reference, or a
 * ModelNew .py candidate), called by kopt_run_profile_candidate in place of the kernel path
 * (compile, SASS, metrics), with s set up (problem, subject, reference, options) and
 * nothing checked (its caller evaluated it): the program's kernels recorded and analyzed
 * into s->an (the program's class, the findings), s->program (the analysis as text) and
 * s->program_json, stored unless detached. KOPT_E_UNSUPPORTED, saying why, when no GPU ran
 * its kernels (run_profile_program.c). */
kopt_status kopt__run_profile_program(kopt_run *run, kopt_ctx *ctx, kopt_run_profile *s,
                                      const kopt_run_profile_opts *o);
/* Note `parent` as the run's parent (the run a resumed or replayed one came from). */
void kopt__run_set_parent(kopt_run *run, kopt_ctx *ctx, int64_t parent);
/* A stored run's row as a JSON object (run_doc.c; kopt_run_list_json, documents). */
#include <jansson.h>
json_t *kopt__run_row_json(const kopt_store_run *r);
/* What the print functions (print_*.c) give for --json: `j` as indented JSON on its own line
 * (an empty array or object when it cannot be written), released; JSON text the library
 * made (NULL: "{}"), freed. */
#include <stdio.h>
void kopt__run_print_json(FILE *f, json_t *j);
void kopt__run_print_text(FILE *f, char *text);
/* Open the store at `db_path` for a query (no run row). */
kopt_status kopt__run_open_query(kopt_run **out, kopt_ctx *ctx, const char *db_path);

/* run_served.c: whether `cand` can be evaluated by the kopt serve at o->server (a
 * candidate with a file, options `kopt eval` takes on its command line), and that
 * evaluation: in the server's session for this problem and plan, the result read back (not
 * stored: the caller stores it through the run). */
int kopt__run_servable(const kopt_eval_opts *o, const kopt_problem *prob,
                       const kopt_candidate *cand);
kopt_status kopt__run_served_eval(kopt_ctx *ctx, const kopt_problem *prob,
                                  const kopt_candidate *cand, const kopt_eval_opts *o,
                                  kopt_eval_result **out);

#endif
