/*
 * kopt/store.h: the SQLite store of everything kopt measured: devices and their
 * ceilings, problems, candidates (by source hash), compiles and evaluations. The schema
 * is versioned (PRAGMA user_version) and migrated forward on open.
 *
 * Ownership: kopt_store_open() returns a handle owned by the caller (kopt_store_close).
 */
#ifndef KOPT_STORE_H
#define KOPT_STORE_H

#include "kopt/eval.h"
#include "kopt/tune.h"
#include "kopt/llm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_STORE_SCHEMA_VERSION 11

typedef struct kopt_store kopt_store;

kopt_status kopt_store_open(kopt_store **out, kopt_ctx *ctx, const char *path);
void kopt_store_close(kopt_store *s);
int kopt_store_schema_version(kopt_store *s);

/* A group of writes that stand or fall together (an SQLite SAVEPOINT; groups nest): a
 * process killed inside a group leaves none of its writes in the store. For writes that are
 * not transactions of their own (the opt_* puts, not kopt_store_put_eval). _end keeps the
 * writes when `commit` is nonzero, else drops them. */
kopt_status kopt_store_group_begin(kopt_store *s, kopt_ctx *ctx);
kopt_status kopt_store_group_end(kopt_store *s, kopt_ctx *ctx, int commit);

/* Ceilings of a device by UUID; *found = 0 when none were stored. */
kopt_status kopt_store_get_ceilings(kopt_store *s, kopt_ctx *ctx, const char *uuid,
                                    kopt_ceilings *out, int *found);
kopt_status kopt_store_put_device(kopt_store *s, kopt_ctx *ctx, const kopt_device_info *dev,
                                  const kopt_ceilings *c);
/* Record one evaluation (problem, candidate, compile and result); *id gets its row id. */
kopt_status kopt_store_put_eval(kopt_store *s, kopt_ctx *ctx, const kopt_problem *p,
                                const kopt_candidate *c, const kopt_eval_result *r,
                                const char *result_json, int64_t *id);
/* The same, linked to run `run_id` (0: none) with the caller's `tag` for it (NULL: none;
 * e.g. a search-tree node). */
kopt_status kopt_store_put_eval_in_run(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                       const char *tag, const kopt_problem *p,
                                       const kopt_candidate *c, const kopt_eval_result *r,
                                       const char *result_json, int64_t *id);
/* Number of evaluations stored (for tests and reports). */
kopt_status kopt_store_count_evals(kopt_store *s, kopt_ctx *ctx, int64_t *n);

/* ---- torch.compile baselines (src/store/baselines.c; schema version 11) ----------------- */

/* Record a baseline under its key (kopt_torch_baseline: problem, device, torch version,
 * sizes, settings), replacing one stored with that key; run_id and eval_id: what measured
 * it (0: none). *id (may be NULL) gets its row. */
kopt_status kopt_store_torch_baseline_put(kopt_store *s, kopt_ctx *ctx,
                                          const kopt_torch_baseline *b, int64_t run_id,
                                          int64_t eval_id, int64_t *id);
/* The baselines of a problem, newest first, at most `max`: *out is caller-owned (free()),
 * *n its length (0 and NULL when none). */
kopt_status kopt_store_torch_baselines(kopt_store *s, kopt_ctx *ctx, const char *problem_hash,
                                       int max, kopt_torch_baseline **out, int *n);

/* ---- profiles, findings, resolutions (src/store/findings.c; schema version 2) ---------- */

/* One finding as stored (strings borrowed). */
typedef struct kopt_store_finding {
    const char *tool;
    const char *kernel;
    const char *title;
    double gain;                 /* predicted fraction of the candidate's time saved */
    double confidence;
} kopt_store_finding;

typedef struct kopt_store_profile {
    const char *problem_hash;
    const char *candidate_hash;
    int64_t eval_id;             /* the evaluation that checked and timed it; 0: none */
    const char *source;          /* "cupti", "ncu", "static" */
    double median_ms;            /* the candidate's time; 0: not timed */
    double collect_ms;
    int passes;
    const char *metrics_json;    /* per kernel; NULL: none */
    const char *baseline_hash;   /* the earlier candidate to resolve against; NULL: the one
                                    of the same problem profiled most recently before */
    int64_t run_id;              /* the run it belongs to (runs table); 0: none */
} kopt_store_profile;

/* Record a profile and its findings; then, against the baseline candidate's latest profile,
 * record a resolution for every tool that fired on the baseline and no longer fires here:
 * predicted gain = the baseline's largest gain for that tool, realized gain = 1 - this
 * median / the baseline's median (NULL when either was not timed). *id: the profile's row
 * (may be NULL); *nresolved (may be NULL): resolutions recorded. */
kopt_status kopt_store_put_profile(kopt_store *s, kopt_ctx *ctx, const kopt_store_profile *p,
                                   const kopt_store_finding *f, int nf, int64_t *id,
                                   int *nresolved);

typedef struct kopt_tool_stats {
    char tool[48];
    int fired;                   /* profiles on which it fired */
    int resolved;                /* resolutions recorded */
    int resolved_timed;          /* resolutions with a realized gain */
    int improved;                /* ... of which the realized gain was > 0 */
    double mean_predicted;       /* over resolutions */
    double mean_realized;        /* over resolutions with a realized gain */
    double precision;            /* improved / resolved_timed; -1 when none */
} kopt_tool_stats;

/* Per tool, by name. *out is caller-owned (free()); *n its length. */
kopt_status kopt_store_tool_stats(kopt_store *s, kopt_ctx *ctx, kopt_tool_stats **out, int *n);

/* ---- tuning runs and their evaluations (src/store/tune.c; schema version 3) ------------ */

/* A tuning run as stored (kopt tune --runs, --resume, --replay). */
typedef struct kopt_store_tune_run {
    int64_t id;
    char created_at[32];
    kopt_tune_key key;
    char template_path[1024];
    char strategy[64];
    char options[256];
    uint64_t seed;
    char objective[16];          /* "time", "energy", "time_energy" */
    int max_evals;               /* 0: unbounded */
    int finished;
    char stop[16];               /* kopt_tune_stop_name, "" while unfinished */
    char best_label[512];        /* "" when none */
    double best_value;           /* the best objective; 0 when none */
    int64_t nevals;              /* evaluations this run recorded */
    int64_t run_id;              /* the run (runs table) it was part of; 0: none */
} kopt_store_tune_run;

/* The name of an objective as stored ("time", "energy", "time_energy"). */
const char *kopt_store_tune_objective_name(kopt_tune_objective o);

/* Start a run; *run_id gets its id. `options` may be NULL. */
kopt_status kopt_store_tune_begin(kopt_store *s, kopt_ctx *ctx, const kopt_tune_key *key,
                                  const char *template_path, const char *strategy,
                                  const char *options, uint64_t seed,
                                  kopt_tune_objective objective, int max_evals,
                                  int64_t *run_id);
/* Record (or replace) the outcome of `label` under `key`, committed before returning. */
kopt_status kopt_store_tune_put(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                const kopt_tune_key *key, const char *label,
                                const kopt_tune_outcome *o);

/* The persist hook of a cache (kopt_tune_cache_set_persist(c, kopt_store_tune_persist,
 * &sink)): every put is stored under the sink's run and key. The sink is borrowed. */
typedef struct kopt_store_tune_sink {
    kopt_store *store;
    int64_t run_id;
    kopt_tune_key key;
} kopt_store_tune_sink;
kopt_status kopt_store_tune_persist(void *sink, kopt_ctx *ctx, const char *label,
                                    const kopt_tune_outcome *o);

/* Every outcome stored under `cache`'s key, put into `cache` (labels mapped back to points
 * of its space; a label not in the space is an error naming it). Call it before setting
 * the persist hook, or the loaded outcomes are stored again. *nloaded may be NULL. */
kopt_status kopt_store_tune_load(kopt_store *s, kopt_ctx *ctx, kopt_tune_cache *cache,
                                 size_t *nloaded);
/* The latest unfinished run for `key` (*found = 0 when none). */
kopt_status kopt_store_tune_find_unfinished(kopt_store *s, kopt_ctx *ctx,
                                            const kopt_tune_key *key, kopt_store_tune_run *out,
                                            int *found);
/* Mark a run finished with its stop reason and best configuration (best_label may be NULL). */
kopt_status kopt_store_tune_finish(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                   kopt_tune_stop stop, const char *best_label,
                                   double best_value);
/* Every run, newest first. *out is caller-owned (free()); *n its length. */
kopt_status kopt_store_tune_runs(kopt_store *s, kopt_ctx *ctx, kopt_store_tune_run **out,
                                 int *n);
/* One run by id (its key and template path rebuild the space for --replay RUN_ID);
 * KOPT_E_NOT_FOUND naming the id when there is none. */
kopt_status kopt_store_tune_get_run(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                    kopt_store_tune_run *out);

/* ---- runs (src/store/runs.c; schema version 4) ----------------------------------------- */

/* A run as stored: one kopt eval, profile, tune, optimize, bench, ... with its command line
 * and the environment it ran in (fields "" or 0 where unknown). */
typedef struct kopt_store_run {
    int64_t id;
    char kind[16];               /* "eval", "profile", "tune", "optimize", "bench", ... */
    char status[16];             /* "running", "ok", "failed", "interrupted", "skipped" */
    char command[1024];          /* the command line (truncated) */
    int64_t parent_id;           /* the run this one resumes or replays; 0: none */
    char started_at[32], finished_at[32];
    char kopt_version[32];
    char host[128];
    char device_name[256];
    char device_uuid[64];
    char device_cc[16];          /* "9.0" */
    int driver_version;          /* CUDA driver API version (12080); 0: unknown */
    char nvrtc_version[16];      /* "13.0" */
    int clock_khz, mem_clock_khz;
    char summary[512];           /* a line the caller gives at the end */
    int64_t nevals, nprofiles, ntune_runs;   /* rows linked to it (read only) */
} kopt_store_run;

/* Record a new run (status "running"; id, times and counts are ignored); *id its row. */
kopt_status kopt_store_run_begin(kopt_store *s, kopt_ctx *ctx, const kopt_store_run *r,
                                 int64_t *id);
/* Update its environment (device and version fields) as more becomes known, and its
 * parent_id. */
kopt_status kopt_store_run_set_env(kopt_store *s, kopt_ctx *ctx, int64_t id,
                                   const kopt_store_run *r);
/* Set its final status, finish time and summary (NULL: none). */
kopt_status kopt_store_run_finish(kopt_store *s, kopt_ctx *ctx, int64_t id, const char *status,
                                  const char *summary);
/* One run by id; KOPT_E_NOT_FOUND naming it when there is none. */
kopt_status kopt_store_run_get(kopt_store *s, kopt_ctx *ctx, int64_t id, kopt_store_run *out);
/* Runs newest first, of `kind` (NULL: all), at most `limit` (0: all). *out is caller-owned
 * (free()); *n its length. */
kopt_status kopt_store_runs(kopt_store *s, kopt_ctx *ctx, const char *kind, int limit,
                            kopt_store_run **out, int *n);
/* Link tuning run `tune_run_id` to run `run_id`. */
kopt_status kopt_store_tune_set_run(kopt_store *s, kopt_ctx *ctx, int64_t tune_run_id,
                                    int64_t run_id);
/* The devices tuning run `tune_run_id` evaluated on (scale-out: "gpu 0: NAME@HOST, ..."). */
kopt_status kopt_store_tune_set_devices(kopt_store *s, kopt_ctx *ctx, int64_t tune_run_id,
                                        const char *devices);

/* ---- reading back (src/store/read.c): rows as JSON for reports and MCP ---------------- */
/* Each gives a JSON array (compact text, caller frees) of row objects named as the columns;
 * a column "x_json" is parsed into "x"; NULL columns are null.
 * Evaluations, oldest first: of run `run_id`, or the one evaluation `eval_id` (the other
 * 0); with the problem's name and path and the candidate's path; "result" is the stored
 * kopt_eval_result_json. */
kopt_status kopt_store_evals_json(kopt_store *s, kopt_ctx *ctx, int64_t run_id, int64_t eval_id,
                                  char **out);
/* Profiles (of run `run_id`, or profile `profile_id`), each with "metrics" (per kernel),
 * "findings" (tool, kernel, title, gain, confidence; highest gain first) and "resolutions"
 * (earlier findings this profile resolved: tool, earlier candidate, predicted_gain,
 * realized_gain, earlier_ms, later_ms). */
kopt_status kopt_store_profiles_json(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                     int64_t profile_id, char **out);
/* Tuning runs (of run `run_id`, or tuning run `tune_run_id`), each with "evals": every
 * outcome it recorded, in order (label, state, time_ms, energy_mj, verdict, ...). */
kopt_status kopt_store_tune_runs_json(kopt_store *s, kopt_ctx *ctx, int64_t run_id,
                                      int64_t tune_run_id, char **out);
/* Devices with their "ceilings" (uuid NULL: all). */
kopt_status kopt_store_devices_json(kopt_store *s, kopt_ctx *ctx, const char *uuid, char **out);

/* ---- LLM exchanges (src/store/llm.c; schema version 5) ----------------------------------- */

/* Store one exchange; *id (may be NULL) gets its row id. */
kopt_status kopt_store_llm_put(kopt_store *s, kopt_ctx *ctx, const kopt_llm_exchange *x,
                               int64_t *id);
/* The record hook of an LLM client (options.record = kopt_store_llm_record,
 * options.record_user = the store): every exchange is stored as it completes. */
kopt_status kopt_store_llm_record(void *store, kopt_ctx *ctx, const kopt_llm_exchange *x);
/* The replay loader of an LLM client (options.load_run = kopt_store_llm_load_run,
 * options.load_user = the store): run `run_id`'s exchanges as JSONL, oldest first;
 * KOPT_E_NOT_FOUND naming the run when it has none. */
kopt_status kopt_store_llm_load_run(void *store, kopt_ctx *ctx, int64_t run_id, char **jsonl);
/* Exchanges stored for a run (run_id < 0: all; 0: those without a run). */
kopt_status kopt_store_llm_count(kopt_store *s, kopt_ctx *ctx, int64_t run_id, int64_t *n);
/* The id of the newest exchange (0 when none). */
kopt_status kopt_store_llm_last_id(kopt_store *s, kopt_ctx *ctx, int64_t *id);

/* ---- kopt optimize's trees (src/store/opt.c; schema version 6) --------------------------- */

/* Record a search tree (once; a second call for the same id changes nothing). */
kopt_status kopt_store_opt_tree_put(kopt_store *s, kopt_ctx *ctx, int64_t tree_id,
                                    const char *problem_hash, const char *problem_path,
                                    const char *options_json);
/* A tree's problem path and options (caller-owned; NULL when not stored);
 * KOPT_E_NOT_FOUND when there is no such tree. */
kopt_status kopt_store_opt_tree_get(kopt_store *s, kopt_ctx *ctx, int64_t tree_id,
                                    char **problem_path, char **options_json);
/* Insert or replace one node (its fields as JSON; state "pending" or "done"; `where`: the
 * GPU that evaluated it, NULL or not known: none; schema version 10). Each call is one
 * transaction: a node is either stored whole or not at all. */
kopt_status kopt_store_opt_node_put(kopt_store *s, kopt_ctx *ctx, int64_t tree_id, int node,
                                    int parent, const char *state, const char *source_hash,
                                    const char *verdict, const char *node_json,
                                    const kopt_tune_where *where);
/* A tree's nodes as JSON texts in node order; *out (an array of *n strings, each and the
 * array freed with free()) is caller-owned. */
kopt_status kopt_store_opt_nodes(kopt_store *s, kopt_ctx *ctx, int64_t tree_id, char ***out,
                                 int *n);

/* One row of the search memory. */
typedef struct kopt_store_opt_memory {
    char problem_hash[65], problem[128], cls[24], plan_kind[32], tool[48], verdict[24];
    double predicted_gain;       /* the planner's (0: none given) */
    double realized_gain;        /* parent time / child time (0: the child failed) */
    int64_t tree_id;
    int node;
} kopt_store_opt_memory;
/* Add a row (once per tree node: a second call for the same node changes nothing). */
kopt_status kopt_store_opt_memory_put(kopt_store *s, kopt_ctx *ctx,
                                      const kopt_store_opt_memory *m);
/* Rows of `problem_hash` (NULL: every problem's) from trees before `before_tree` and from
 * tree `tree_id` (what a search knew when it began, plus its own; a replay passes the
 * replayed tree as before_tree and so sees what the original saw), newest first, at most
 * `limit` (0: all); *out caller-owned (free()). */
kopt_status kopt_store_opt_memory_get(kopt_store *s, kopt_ctx *ctx, const char *problem_hash,
                                      int64_t before_tree, int64_t tree_id, int limit,
                                      kopt_store_opt_memory **out, int *n);

/* One query of the agents' code-search tool (schema version 7): conversation `key` of tree
 * `tree_id` ("e3-p1-coder", "n5-debugger": the prompt's name in manual mode), the reply
 * that asked (`turn`, 1 the first) and its place in that reply (`idx`). */
typedef struct kopt_store_opt_search {
    int64_t tree_id;
    const char *key;
    int turn, idx;
    const char *query;
    const char *result;          /* the text fed back to the model for it */
    const char *hits_json;       /* kopt_cute_hits_json (NULL: no search ran) */
    int nhits;
    double query_ms;
} kopt_store_opt_search;
/* Insert or replace one search. */
kopt_status kopt_store_opt_search_put(kopt_store *s, kopt_ctx *ctx,
                                      const kopt_store_opt_search *x);
/* The recorded result of search (tree_id, key, turn, idx) if its query was `query`:
 * *result and *hits_json (may be NULL: not wanted) caller-owned, NULL when there is none;
 * *nhits (may be NULL) its hit count. */
kopt_status kopt_store_opt_search_get(kopt_store *s, kopt_ctx *ctx, int64_t tree_id,
                                      const char *key, int turn, int idx, const char *query,
                                      char **result, char **hits_json, int *nhits);

/* ---- kopt bench's suites (src/store/bench.c; schema version 8) --------------------------- */

/* Record a suite (once; a second call for the same id changes nothing but a non-NULL
 * summary, which replaces the stored one). */
kopt_status kopt_store_bench_suite_put(kopt_store *s, kopt_ctx *ctx, int64_t suite_id,
                                       const char *problems_dir, const char *candidates,
                                       const char *options_json, const char *summary_json);
/* A suite's problems folder, candidates and options (caller-owned; NULL when not stored);
 * KOPT_E_NOT_FOUND when there is no such suite. */
kopt_status kopt_store_bench_suite_get(kopt_store *s, kopt_ctx *ctx, int64_t suite_id,
                                       char **problems_dir, char **candidates,
                                       char **options_json);
/* Insert or replace a suite's row for `problem` (its result as JSON), one transaction. */
kopt_status kopt_store_bench_row_put(kopt_store *s, kopt_ctx *ctx, int64_t suite_id,
                                     const char *problem, int64_t run_id, const char *verdict,
                                     const char *row_json);
/* A suite's rows as JSON texts in problem order; *out (an array of *n strings, each and
 * the array freed with free()) is caller-owned. */
kopt_status kopt_store_bench_rows(kopt_store *s, kopt_ctx *ctx, int64_t suite_id, char ***out,
                                  int *n);

#ifdef __cplusplus
}
#endif
#endif
