/*
 * kopt/search.h: the search of kopt optimize. A tree whose nodes are candidates and whose
 * edges are plans: the root is the problem's reference; a planner (kopt/agent.h) proposes a
 * change to a node, a coder writes it as a child, an evaluator checks and times it, a
 * debugger repairs a child that failed (a chain of at most debug_attempts repairs), and a
 * templatizer turns a promising node into a template that the evaluator tunes.
 *
 * Selection is UCT over rewards normalized across the tree, with progressive widening (a
 * node may have ceil(widen_c * visits^widen_alpha) plan children), asymmetric branching
 * (nodes in the top quantile of the tree get top_extra more), and dead-end pruning (a node
 * whose last prune_m plan children failed or gained less than prune_eps is closed, with the
 * reason). Greedy, beam and best-of-n are the same loop with another selection. The raw
 * reward of a correct node is log(reference / node) of the objective (time, energy, or
 * both); wrong, cheating (integrity verdicts) and SUSPECT nodes score zero and keep their
 * verdict, and never become the best.
 *
 * The whole tree is in the store (kopt_store_opt_*): a node is written when it is proposed
 * (pending) and again when it is evaluated, so a search killed at any moment goes on from
 * the store with nothing evaluated twice. The loop is a state machine over the stored tree:
 * evaluate what is pending, repair what failed, else expand; everything it decides follows
 * from the tree, so a replay with the recorded replies and outcomes rebuilds the same tree.
 *
 * Width: a search spreads over W GPUs (kopt optimize --gpus; docs/scale.md) by selecting up
 * to W expansions a step (virtual visits make the picks differ) and evaluating up to W
 * pending nodes at once, one per GPU, each GPU with its own evaluator (and so its own
 * evaluation session); outcomes are stored as they arrive and backed up in node order, so
 * the tree depends on W but not on which GPU finished first. W = 1 is the plain search.
 *
 * Ownership: kopt_search_open gives a handle owned by the caller (kopt_search_close). The
 * problem, store, LLM client and evaluator are borrowed and must outlive the search.
 * Nodes returned by kopt_search_node are borrowed (valid until the next kopt_search_go or
 * kopt_search_close). JSON and text returned through char * are caller-owned (free()).
 */
#ifndef KOPT_SEARCH_H
#define KOPT_SEARCH_H

#include <signal.h>
#include <stdio.h>

#include "kopt/agent.h"
#include "kopt/llm.h"
#include "kopt/run.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_SEARCH_API_VERSION 1

typedef enum kopt_search_policy {
    KOPT_SEARCH_MCTS = 0, KOPT_SEARCH_GREEDY, KOPT_SEARCH_BEAM, KOPT_SEARCH_BEST_OF_N
} kopt_search_policy;
const char *kopt_search_policy_name(kopt_search_policy p);       /* "mcts", ... */
int kopt_search_policy_parse(const char *s, kopt_search_policy *out);   /* 0, or -1 */

/* ---- evaluation (pluggable) --------------------------------------------------------------- */

/* What an evaluator says of one candidate. */
typedef struct kopt_search_outcome {
    kopt_verdict verdict;
    double time_ms;             /* median (0: not timed) */
    double energy_mj;           /* per run (0: not measured) */
    char message[1024];
    char *log;                  /* the compiler log or the mismatch report (owned; may be NULL) */
    char cls[24];               /* roofline class ("memory", ...; "" unknown) */
    char *advice;               /* the micro-tools' advice selected by the class, or raw
                                 * metrics when tools are off (owned; may be NULL) */
    char tool[48];              /* the tool of the first piece of advice ("" none) */
    int64_t eval_id;            /* the stored evaluation (0: none) */
    char *tuned_source;         /* tune: the best concrete instantiation (owned) */
    char *facts;                /* resources (registers, shared memory, spills), roofline
                                 * position, the device's measured ceilings (owned; may be
                                 * NULL) */
    kopt_tune_where where;      /* the GPU that evaluated it (known = 0: none, or not said) */
    char profile_note[256];     /* a correct candidate without class or advice: why (the
                                 * profile's error, "profiling is off"); "" otherwise */
} kopt_search_outcome;
void kopt_search_outcome_clear(kopt_search_outcome *o);

/* One candidate of a batch evaluated at once (evaluate_many). */
typedef struct kopt_search_job {
    const char *source;         /* the whole .cu file */
    const char *tag;            /* the node ("n12") */
} kopt_search_job;
/* A batch's outcome `index` as it arrives, on the search's thread; `out` is the callee's:
 * take what is kept (set its pointers to NULL). */
typedef void (*kopt_search_done_fn)(void *user, int index, kopt_search_outcome *out);

/* An evaluator: a table of functions over `self`. GPU evaluations are asked for one at a
 * time, or (evaluate_many) a batch at once, spread over GPUs. */
typedef struct kopt_search_evaluator {
    int api_version;            /* KOPT_SEARCH_API_VERSION */
    const char *name;           /* "live", "fake", "replay" */
    void *self;
    /* Evaluate candidate source `source` (a whole .cu file, front matter included); `tag` is
     * the node ("n12"). KOPT_OK whenever out->verdict is set. */
    kopt_status (*evaluate)(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                            kopt_search_outcome *out);
    /* (optional) tune template `source` with at most `budget` evaluations; out describes the
     * best point, out->tuned_source its concrete source. NULL: templates are not tuned. */
    kopt_status (*tune)(void *self, kopt_ctx *ctx, const char *source, const char *tag,
                        int budget, kopt_search_outcome *out);
    /* (optional) release self. */
    void (*close)(void *self);
    /* (optional) get n candidates (sources[i], node tags[i]) ready before they are
     * evaluated one by one (the live evaluator compiles them in parallel into the compile
     * cache). Failures are left for evaluate to report. */
    void (*prepare)(void *self, kopt_ctx *ctx, const char *const *sources,
                    const char *const *tags, int n);
    /* (optional) evaluate jobs[0..n) at once (each as evaluate would), done(user, i, out)
     * called on the caller's thread as each finishes, in any order. An error status stops
     * the batch (outcomes already handed over stay handed over). NULL: the search evaluates
     * a batch one by one with evaluate. */
    kopt_status (*evaluate_many)(void *self, kopt_ctx *ctx, const kopt_search_job *jobs, int n,
                                 kopt_search_done_fn done, void *user);
    /* (optional) the part of an evaluation that must run on the search's thread, after
     * evaluate returned on another one (the live evaluator of one GPU among several stores
     * the result and its profile through the run here: the run is not thread-safe). */
    kopt_status (*commit)(void *self, kopt_ctx *ctx, const char *tag, kopt_search_outcome *out);
    /* (optional) get ready for candidates on this evaluator's GPU, nothing stored (the live
     * evaluator of one GPU among several evaluates the problem's reference once, the result
     * dropped, so its reference run is cached and its workers are started). May run on
     * another thread, as evaluate. An error leaves the evaluator as it was. */
    kopt_status (*warm)(void *self, kopt_ctx *ctx);
} kopt_search_evaluator;
void kopt_search_evaluator_close(kopt_search_evaluator *ev);   /* NULL-safe */

/* The scripted evaluator of the tests: each candidate's outcome is written in its source as
 *     // kopt-test: verdict=OK time=0.5 energy=2 class=memory tool=NAME advice=TEXT...
 * (keys optional; advice runs to the end of the line; `tuned=T` is the time a tune of it
 * reaches; `logfile=PATH` gives a recorded compiler log as the candidate's log). A source without the marker is OK at `ref_ms`, one without __global__ (nor a
 * host entry point) is a COMPILE_ERROR. */
kopt_status kopt_search_evaluator_fake(kopt_search_evaluator *out, kopt_ctx *ctx,
                                       double ref_ms);
/* Outcomes recorded in tree `tree_id` of the store, by source hash (a source the tree never
 * evaluated is an ERROR outcome saying so). */
kopt_status kopt_search_evaluator_replay(kopt_search_evaluator *out, kopt_ctx *ctx,
                                         kopt_store *store, int64_t tree_id);
/* The live evaluator: one evaluation session of the run (kopt_run_session_*), each result
 * stored with its node tag; a correct candidate is profiled (kopt_run_profile_candidate)
 * for its class and the micro-tools' advice unless `no_profile`; `no_tools` gives raw
 * metrics instead of advice. Templates are tuned with kopt's tuner (kopt_run_tune_*) in
 * `workdir`. */
typedef struct kopt_search_live_opts {
    int version;
    kopt_eval_opts eval;
    int no_profile, no_tools;
    kopt_tune_objective objective;
    double energy_s;            /* > 0: measure energy (objectives energy, time-energy) */
    const char *workdir;        /* where templates are written to be tuned */
    int spread;                 /* one GPU (eval.device) of several: the session is opened
                                 * now (with that GPU's ceilings), evaluate touches neither
                                 * the run nor the store (it may run on another thread), and
                                 * commit stores on the search's thread */
} kopt_search_live_opts;
#define KOPT_SEARCH_LIVE_OPTS_INIT {1, KOPT_EVAL_OPTS_INIT, 0, 0, KOPT_TUNE_TIME, 0.0, NULL, 0}
kopt_status kopt_search_evaluator_live(kopt_search_evaluator *out, kopt_ctx *ctx,
                                       kopt_run *run, const kopt_problem *prob,
                                       const kopt_search_live_opts *o);

/* A CPU stand-in for GPU `index` (tests of --gpus without a GPU, docs/scale.md): each
 * evaluation sleeps `ms`, then answers as the scripted evaluator (ref_ms its reference
 * time); outcomes say they were measured on device `index` of model `model` (NULL: "kopt
 * stand-in"). With $KOPT_SCALE_STANDIN_LOG each evaluation appends "start GPU PID NODE
 * HASH" before and "done ..." after (one write each, O_APPEND). */
kopt_status kopt_search_evaluator_standin(kopt_search_evaluator *out, kopt_ctx *ctx,
                                          double ref_ms, int index, double ms,
                                          const char *model);
/* Evaluations spread over several evaluators, one per GPU (each used by one thread of a
 * scale pool, kopt/scale.h): evaluate_many hands each job to the first free one and each
 * outcome back (after the evaluator's commit) on the caller's thread, with where[i] as its
 * GPU when the evaluator did not say; evaluate is a batch of one, on evs[0] (the first time, the
 * root: every other evaluator warms meanwhile, see `warm`); tune and prepare go to evs[0] on
 * the caller's thread. Takes evs[0..n) (closed with it, also on failure). */
kopt_status kopt_search_evaluator_spread(kopt_search_evaluator *out, kopt_ctx *ctx,
                                         kopt_search_evaluator *evs,
                                         const kopt_tune_where *where, int n);

/* ---- the search ---------------------------------------------------------------------------- */

typedef enum kopt_search_state {
    KOPT_SEARCH_PENDING = 0,    /* proposed, not evaluated */
    KOPT_SEARCH_DONE            /* evaluated, or failed before evaluation (failure set) */
} kopt_search_state;

typedef struct kopt_search_node {
    int id, parent;             /* parent -1: the root */
    char kind[8];               /* "root", "plan", "repair", "tune" */
    int expansion;              /* the expansion that made it (0: root) */
    int proposal;               /* its index in that expansion */
    kopt_agent_plan plan;       /* the edge: the plan (a repair: the failure it fixes) */
    char advice[512];           /* the advice the planner was shown (first finding) */
    char advice_tool[48];
    char *source;
    char hash[65];
    kopt_search_state state;
    kopt_verdict verdict;       /* when done and no failure */
    char failure[24];           /* an agent failure (kopt_agent_failure_name), "" none */
    double time_ms, energy_mj;
    char message[512];
    char *log;                  /* compiler log, mismatch report, or the agent failure */
    char cls[24];
    char *findings;             /* the evaluator's advice for this node */
    char *facts;                /* the evaluator's resources / roofline / ceilings text */
    char tool[48];
    int64_t eval_id;
    char *tuned_from;           /* tune: the template source (the node's source is the best) */
    int searches;               /* code searches its coder / debugger ran (the tool) */
    char *queries;              /* those searches, one a line: "QUERY (N hits)" (or NULL) */
    char tools[24];             /* root: the tool described to the agents ("cute-search"; "") */
    kopt_tune_where where;      /* the GPU that evaluated it (known = 0: none recorded) */
    char profile_note[256];     /* correct but not profiled: why ("" profiled, or not yet) */
    int arrived;                /* a wide batch's outcome, stored as it arrived, not yet backed
                                 * up (still pending; a resume backs it up, unevaluated) */
    /* derived from the tree (not stored) */
    int ok;                     /* done, verdict OK, no failure */
    double raw_reward, reward;  /* log gain; normalized to [0, 1] over the tree */
    int visits;                 /* evaluated nodes in its subtree */
    double value;               /* sum of normalized rewards in its subtree */
    int plan_children, repair_depth;
    int closed;
    char closed_reason[160];
    int step;                   /* stored: the step (one asking of the model) that made it; 0:
                                 * the root, a start node, or a tree stored before steps were */
} kopt_search_node;

typedef void (*kopt_search_progress_fn)(void *user, const char *line);

typedef struct kopt_search_opts {
    int version;
    kopt_search_policy policy;
    int iterations;             /* expansions in the tree (default 10) */
    int proposals;              /* candidates per expansion (0: 2; greedy 1) */
    double uct_c;               /* exploration constant (default 1.0) */
    double widen_c, widen_alpha;/* progressive widening (1.0, 0.5) */
    double top_quantile;        /* asymmetric branching: the top share of correct nodes (0.25) */
    int top_extra;              /* ... may have this many more children (1) */
    int prune_m;                /* dead ends: the last m plan children (3) ... */
    double prune_eps;           /* ... failed or gained less than eps (0.02) */
    int debug_attempts;         /* repairs in a chain (2) */
    int beam_width;             /* beam: the best w nodes (2) */
    kopt_tune_objective objective;
    int no_tools;               /* raw metrics instead of micro-tool advice in prompts */
    int no_memory;              /* no search memory in prompts */
    int64_t memory_as_of;       /* memory from trees before this one (0: this tree); a
                                 * replay gives the replayed tree, to see what it saw */
    int no_tune;                /* no templatizer */
    int tune_budget;            /* evaluations of a tune inside a node (16) */
    int tune_after;             /* templatize the best node once it has this many plan
                                 * children (2): the LLM's own ideas come first */
    int propose_only;           /* LLM only: leave candidates pending (one round) */
    double max_wall_s;          /* 0: none */
    const char *manual_dir;     /* manual LLM: prompts written here, replies read from here */
    const char *prompts_dir;    /* NULL: kopt_agent_prompts_dir */
    double plan_temperature, code_temperature;   /* 0.8, 0.1 */
    int max_tokens;             /* per reply (8192) */
    kopt_search_progress_fn progress; void *progress_user;
    volatile sig_atomic_t *stop;
    /* the code-search tool of the coder and debugger (docs/optimize.md, "Tools") */
    int cute;                   /* 0 auto: described when CUTLASS is found; 1 always (--cute);
                                 * -1 off (--no-cute): no tool, search blocks are not answered */
    int max_searches;           /* per node (0: 3; < 0: none, as -1 cute) */
    const char *cutlass_dir;    /* NULL: $CUTLASS_PATH, then the Python package */
    const char *cache_dir;      /* the code index's cache (NULL: kopt_cache_dir()) */
    int64_t replay_of;          /* a replay: searches answered from this tree's record */
    /* --start: begin from this kernel (the root's first child, kind "start"; the root is the
     * reference still, for the speedups, but is not expanded while the start kernel or its
     * repair stands). Only read when the tree is new. */
    const char *start_source;
    const char *start_name;     /* its file, for the plan text */
    /* width W (docs/scale.md): expansions selected per step, with virtual visits so that
     * they differ, and pending nodes evaluated at once (0 or 1: one, the plain search) */
    int width;
    /* rounds: a step asks the repairs of what failed and one expansion, then everything
     * pending is evaluated: how --propose/--evaluate drive a tree (stored with it, so that
     * a replay grows it the same way); 0: a repair is evaluated (and repaired again) before
     * the next expansion */
    int rounds;
    /* overlap (docs/optimize.md, "Overlap"): a step's model requests and compiles run while
     * the step before is evaluated, so each step is planned without the outcomes of the one
     * before it (a lag of one step, the same on a resume and a replay; stored with the tree) */
    int overlap;
} kopt_search_opts;
#define KOPT_SEARCH_OPTS_INIT {1, KOPT_SEARCH_MCTS, 10, 0, 1.0, 1.0, 0.5, 0.25, 1, 3, 0.02, 2, \
    2, KOPT_TUNE_TIME, 0, 0, 0, 0, 16, 2, 0, 0.0, NULL, NULL, 0.8, 0.1, 8192, NULL, NULL, NULL, \
    0, 0, NULL, NULL, 0, NULL, NULL, 0, 0, 0}
/* The most expansions a step selects (and evaluations at once). */
#define KOPT_SEARCH_MAX_WIDTH 64
/* The searches per node a kopt_search_opts gives (max_searches resolved). */
#define KOPT_SEARCH_DEFAULT_SEARCHES 3

typedef struct kopt_search kopt_search;

/* Open the search of tree `tree_id` (a run's id) in `store` (NULL: in memory only). A tree
 * already stored is loaded (resume); else its root, the reference, is made pending. */
kopt_status kopt_search_open(kopt_search **out, kopt_ctx *ctx, const kopt_problem *prob,
                             kopt_store *store, int64_t tree_id, const kopt_search_opts *o);
/* Run the loop until the budgets, a stop, or nothing to do. `llm` NULL (and no manual_dir):
 * nothing is proposed; `ev` NULL: nothing is evaluated. LLM budgets are the client's. */
kopt_status kopt_search_go(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm,
                           kopt_search_evaluator *ev);
void kopt_search_close(kopt_search *s);

int kopt_search_count(const kopt_search *s);
const kopt_search_node *kopt_search_node_at(const kopt_search *s, int i);
/* The best node: correct (never SUSPECT), highest raw reward; NULL when none but... none. */
const kopt_search_node *kopt_search_best(const kopt_search *s);

typedef struct kopt_search_stats {
    int expansions;             /* in the tree */
    int evaluated;              /* evaluations made by this kopt_search_go */
    int pending;                /* nodes left pending */
    int llm_requests;           /* asked by this go (manual: answered) */
    int waiting;                /* manual: prompts written and not yet answered */
    double wall_ms, llm_ms, eval_ms;
    double prepare_ms;          /* of eval_ms: the pending candidates compiled ahead */
    double overhead_ms_per_iter;/* wall - llm - eval - search, per expansion or evaluation
                                 * step */
    int searches;               /* code searches run by this go */
    double search_ms;           /* their time (index opening included) */
    char stop_reason[128];
    int width;                  /* the search's width (1: the plain search) */
    int root_unevaluated;       /* nothing was asked: the root was never evaluated (--propose
                                 * on a new tree; evaluate it first) */
} kopt_search_stats;
void kopt_search_get_stats(const kopt_search *s, kopt_search_stats *out);

/* Check a --start kernel before a search begins from it: `path` parses as a candidate of
 * `prob` (its launch plan, or the reference's, binds to the problem's sizes) and compiles
 * (NVRTC or nvcc, no GPU needed; co NULL: defaults; skipped with a warning where no
 * compiler can be loaded). *source (caller-owned) gets its text. KOPT_E_INVALID "FILE is not
 * a candidate of problem P: ..." or KOPT_E_COMPILE "FILE does not compile: ..." (the log in
 * kopt_errdetail). */
kopt_status kopt_search_start_check(kopt_ctx *ctx, const kopt_problem *prob, const char *path,
                                    const kopt_compile_opts *co, char **source);

/* SHA-256 over every node's parent, kind, source hash and outcome: equal trees, equal. */
void kopt_search_signature(const kopt_search *s, char out[65]);
/* The tree, the best node and the path to it (each step's plan, advice, predicted against
 * realized gain) as JSON; the path as text. */
char *kopt_search_json(const kopt_search *s);
char *kopt_search_path_text(const kopt_search *s);
/* The GPUs that evaluated nodes of the tree, "gpu 0 (NAME) 12, gpu 1 (NAME) 11" (their
 * evaluations); NULL when no node records one (the scripted evaluator without --gpus).
 * --json: "gpus" [{gpu, name, host, evaluations}], and "gpu", "gpu_name", "host" per
 * node. */
char *kopt_search_gpus_text(const kopt_search *s);

/* ---- stored options and read-only views ---------------------------------------------------- */

/* The options that shape a tree, as stored with it (opt_trees.options_json), and back
 * (keys absent from `text` leave *o as it was; keep_iterations: a resume's own count). */
char *kopt_search_opts_json(const kopt_search_opts *o);
void kopt_search_opts_load(kopt_search_opts *o, const char *text, int keep_iterations);
/* Tree `tree_id` of `store` as stored, derived (visits, rewards, best) under the stored
 * options: no problem folder, prompts or model needed (reports, MCP's optimize_tree).
 * kopt_search_go must not be called on it. */
kopt_status kopt_search_view(kopt_search **out, kopt_ctx *ctx, kopt_store *store,
                             int64_t tree_id);
/* Tree `tree_id` of the store at `db_path` as kopt_search_json gives it, plus the stored
 * options and the run's folder; `full`: each node also with its source, log, findings and
 * facts (reports draw diffs from them). KOPT_E_NOT_FOUND when there is no such tree. */
kopt_status kopt_search_stored_json(kopt_ctx *ctx, const char *db_path, int64_t tree_id,
                                    int full, char **out);

/* ---- one optimize invocation (kopt optimize, MCP's optimize tools) ------------------------- */

/* What one invocation does: open a run (kind optimize), begin tree `resume`/`replay` or a
 * new one (the run's id) for `problem`, store its options, pick the model (the caller's
 * client, manual files, or the replayed exchanges) and the evaluator (live, fake, the
 * replayed outcomes), run kopt_search_go, and finish the run with the tree's summary. */
typedef struct kopt_optimize_opts {
    int version;
    kopt_search_opts search;    /* progress and stop are honoured */
    kopt_search_live_opts live;
    const char *db_path;        /* the store (required: the tree lives there) */
    int argc; char *const *argv;/* the command recorded with the run */
    const char *problem;        /* a new tree's problem folder (resume, replay: the stored) */
    int64_t resume, replay;     /* go on with / replay tree N (0: a new tree) */
    int keep_iterations;        /* resume: search.iterations given now, not the stored */
    int propose_only, evaluate_only;
    int manual;                 /* prompts and replies as files in the workdir */
    kopt_llm_client *llm;       /* the model (borrowed); NULL: none, manual or the replay */
    const char *evaluator;      /* "live", "fake"; NULL: the tree's stored one, else live */
    double fake_ref_ms;         /* fake: the reference's time (0: stored, else 1.0) */
    const char *workdir;        /* NULL: the stored one, else kopt-optimize/TREE */
    int create_only;            /* store the tree and its pending root; search nothing */
    const char *start;          /* a new tree begins from this kernel (checked first) */
    /* --gpus: evaluate on these GPUs at once, each with its own evaluator and session (CPU
     * stand-ins with the fake evaluator or $KOPT_SCALE_STANDIN). A new tree's width is
     * their number; a resumed or replayed tree keeps the width it began with. */
    const int *gpus;
    int ngpus;
} kopt_optimize_opts;
#define KOPT_OPTIMIZE_OPTS_INIT {1, KOPT_SEARCH_OPTS_INIT, KOPT_SEARCH_LIVE_OPTS_INIT, NULL, \
    0, NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, 0.0, NULL, 0, NULL, NULL, 0}

typedef struct kopt_optimize kopt_optimize;
/* Open: the run, the tree, the problem, the model and the evaluator (errors name the
 * problem, tree or option). */
kopt_status kopt_optimize_open(kopt_optimize **out, kopt_ctx *ctx, const kopt_optimize_opts *o);
/* Search (unless create_only) and finish the run. *exit_code (may be NULL): 0, or the
 * verdict's exit code when the reference itself does not run OK. */
kopt_status kopt_optimize_go(kopt_optimize *op, kopt_ctx *ctx, int *exit_code);
void kopt_optimize_close(kopt_optimize *op);
kopt_search *kopt_optimize_search(kopt_optimize *op);        /* borrowed */
const kopt_problem *kopt_optimize_problem(const kopt_optimize *op);
int64_t kopt_optimize_tree_id(const kopt_optimize *op);
int64_t kopt_optimize_run_id(const kopt_optimize *op);
const char *kopt_optimize_workdir(const kopt_optimize *op);
const char *kopt_optimize_evaluator(const kopt_optimize *op);
/* What kopt optimize prints on stdout once kopt_optimize_go is done, as text or (`json`)
 * the tree's JSON (kopt_search_json) (src/search/print_optimize.c): the run, the tree and
 * its counts, why it stopped, the best node against the reference, the GPUs that evaluated,
 * the path from the reference, kopt's overhead, the tree's signature, the manual prompts
 * waiting, and (`propose`) the --evaluate step that comes next. */
void kopt_optimize_print(FILE *f, kopt_optimize *op, int propose, int json);

/* Manual prompts of a workdir still without a reply: names (NAME of NAME.prompt.md),
 * sorted; *n of them. Caller frees each and the array. */
kopt_status kopt_optimize_waiting(kopt_ctx *ctx, const char *workdir, char ***names, int *n);

/* ---- the math (exposed for tests) --------------------------------------------------------- */
/* ceil(c * n^alpha), at least 1. */
int kopt_search_widen_limit(double c, double alpha, int visits);
/* UCT score of a child: mean + c * sqrt(ln(parent_visits) / visits); +inf for no visits. */
double kopt_search_uct(double value, int visits, int parent_visits, double c);
/* Raw reward: log(ref / x) of the objective; 0 for a missing measurement. */
double kopt_search_raw_reward(kopt_tune_objective obj, double ref_ms, double ms,
                              double ref_mj, double mj);
/* Normalize raw rewards of the correct entries (ok[i]) to 0.1 + 0.9 * (r - min) / (max -
 * min) (all 1 when they are equal); entries not ok get 0. */
void kopt_search_normalize(const double *raw, const int *ok, int n, double *out);
/* Dead end: the last m of n children (gains[i]: realized speedup factor, 0 failed) all
 * failed or gained < eps. 1 with the reason in why, else 0. */
int kopt_search_dead_end(const double *gains, int n, int m, double eps, char *why, size_t len);

#ifdef __cplusplus
}
#endif
#endif
