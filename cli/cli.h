/* The kopt command line: one file per verb, a table of verbs in main.c, the helpers the verbs
 * share in cli_util.c (declared here). The CLI uses only the public API in include/kopt/. */
#ifndef KOPT_CLI_H
#define KOPT_CLI_H

#include "kopt/kopt.h"

#include <stdio.h>

/* Exit codes (docs/cli.md). Verdicts map through kopt_verdict_exit_code(). */
#define KOPT_EXIT_USAGE 2
#define KOPT_EXIT_INVALID 9
#define KOPT_EXIT_ERROR 10
/* kopt optimize --propose: the tree's root was never evaluated, so nothing was proposed */
#define KOPT_EXIT_NOT_EVALUATED 19

typedef struct cli_common {
    const char *db_path;      /* NULL: no store */
    const char *cache_dir;
    int json;
    int verbose;
} cli_common;

int cmd_eval(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_llm(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_cute(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_kb(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* Workers started ahead, for kopt eval run inside kopt serve (NULL otherwise). */
extern kopt_eval_pool *cli_eval_pool;
/* Where kopt eval's last run spent its time (ms), for kopt serve's log: loading the problem
 * and candidate, opening the run (store, environment), the evaluation (its total_ms), what
 * the run did around it (the store's baselines, storing the result), finishing the run,
 * printing the result. */
enum { CLI_EVAL_STEP_LOAD, CLI_EVAL_STEP_OPEN, CLI_EVAL_STEP_EVAL, CLI_EVAL_STEP_STORE, CLI_EVAL_STEP_FINISH,
       CLI_EVAL_STEP_PRINT, CLI_EVAL_NSTEPS };
extern double cli_eval_steps[CLI_EVAL_NSTEPS];
/* kopt serve's evaluation sessions (cli/serve_session.c; `kopt eval --server --session`):
 * set while kopt serve runs a request (NULL otherwise). A session is found by its name and
 * its plan (cli_serve_session_key); the table holds at most `max`, the least recently used
 * closed to make room, and those idle `idle_s` seconds or more are closed. */
#define CLI_SERVE_MAX_SESSIONS 16
typedef struct cli_serve_sessions cli_serve_sessions;
typedef struct serve_session serve_session;
extern cli_serve_sessions *cli_eval_sessions;
cli_serve_sessions *cli_serve_sessions_new(int max, double idle_s);
/* Close the sessions idle too long (each said on `log`, unless NULL); how many. */
int cli_serve_sessions_expire(cli_serve_sessions *t, FILE *log);
void cli_serve_sessions_free(cli_serve_sessions *t);
int cli_serve_sessions_count(const cli_serve_sessions *t);
/* What the requests since the last clear did with the table ("; session ..." parts). */
const char *cli_serve_sessions_note(cli_serve_sessions *t);
void cli_serve_sessions_note_clear(cli_serve_sessions *t);
/* Everything the session's reference run depends on, as text (caller frees): the problem's
 * hash and real path, every option, the sizes, the store, the KOPT_* settings. */
char *cli_serve_session_key(const kopt_problem *prob, const kopt_eval_opts *o,
                            const char *db_path);
/* The session of this name and plan (marked used), or NULL. */
serve_session *cli_serve_session_find(cli_serve_sessions *t, const char *name, const char *key);
/* Open one (its first evaluation runs the reference), taking *key and *prob (set to NULL);
 * the least recently used is closed first when the table is full. */
kopt_status cli_serve_session_open(cli_serve_sessions *t, kopt_ctx *ctx, kopt_run *run,
                                   const char *name, char **key, kopt_problem **prob,
                                   const kopt_eval_opts *opts, serve_session **out);
/* Evaluate a candidate in it, noted and stored through `run`; a kopt error closes it. */
kopt_status cli_serve_session_eval(cli_serve_sessions *t, serve_session *e, kopt_ctx *ctx,
                                   kopt_run *run, const kopt_candidate *cand,
                                   kopt_eval_result **out);
const kopt_problem *cli_serve_session_problem(const serve_session *e);
const char *cli_serve_session_name(const serve_session *e);
int cli_serve_session_evaluations(const serve_session *e);

/* A context whose log goes to stderr at warning level (info with verbose). */
kopt_ctx *cli_ctx(int verbose);
/* Print "kopt: <message>" and, if any, the error detail, to stderr. */
void cli_error(kopt_ctx *ctx);
/* The command line as given (the verb and its arguments), for a run's record: main.c sets it
 * (a copy of the array: getopt_long reorders argv) before it calls the verb, and clears it
 * (0, NULL) after. */
void cli_command_set(int argc, char **argv);
void cli_run_command(kopt_run_opts *ro);
/* The default store path: $KOPT_DB, else ./kopt.db. */
const char *cli_default_db(void);
/* The evaluation options every evaluating verb takes (getopt_long value CLI_EVAL_OPTION,
 * told apart by name): --trials, --budget-ms, --precision, --reps, --no-flush, --no-check-sizes,
 * --timeout, --device, --arch, --cache-dir, --cutlass (sets $CUTLASS_PATH for the compile).
 * -1 for a bad value. */
#define CLI_EVAL_OPTION 1900
#define CLI_EVAL_LONG_OPTIONS                                                                  \
    {"trials", required_argument, NULL, CLI_EVAL_OPTION},                                      \
    {"budget-ms", required_argument, NULL, CLI_EVAL_OPTION},                                   \
    {"precision", required_argument, NULL, CLI_EVAL_OPTION},                                   \
    {"reps", required_argument, NULL, CLI_EVAL_OPTION},                                        \
    {"no-flush", no_argument, NULL, CLI_EVAL_OPTION},                                          \
    {"no-check-sizes", no_argument, NULL, CLI_EVAL_OPTION},                                    \
    {"timeout", required_argument, NULL, CLI_EVAL_OPTION},                                     \
    {"device", required_argument, NULL, CLI_EVAL_OPTION},                                      \
    {"arch", required_argument, NULL, CLI_EVAL_OPTION},                                        \
    {"cache-dir", required_argument, NULL, CLI_EVAL_OPTION},                                   \
    {"cutlass", required_argument, NULL, CLI_EVAL_OPTION}
int cli_eval_option(const char *name, const char *arg, kopt_eval_opts *eo);
/* --server[=PATH] of a verb that evaluates through a run (optimize, bench): `asked` when the
 * option was given (`path` its value, or NULL: $KOPT_SERVER or the default socket). *out is
 * the socket of a kopt serve that answers, or NULL (not asked, or only $KOPT_SERVER set and
 * no server there: evaluate here). -1, said on stderr, when asked and none answers. */
int cli_server_socket(const char *verb, int asked, const char *path, const char **out);
/* kopt profile of a problem with a PyTorch reference (cli/profile_program.c): the
 * reference's program (cand NULL) or a candidate's, evaluated first; the exit code. */
int cli_profile_program(kopt_ctx *ctx, kopt_run *run, const kopt_problem *prob,
                        const kopt_candidate *cand, const char *cand_path,
                        const kopt_eval_opts *eo, int json, int with_ncu);
/* --gpus SPEC against `count` GPUs here (-1: not checked) into gpus[KOPT_SCALE_MAX_SLOTS]
 * and *n; on a bad value prints "kopt VERB: ..." and returns -1. */
int cli_gpus(kopt_ctx *ctx, const char *verb_name, const char *spec, int count, int *gpus,
             int *n);
/* Open the verb's run (kopt_run_open) with its command line and the device and compile
 * cache of `eo`; prints the error and returns -1 when it cannot. */
int cli_run_open(kopt_ctx *ctx, kopt_run_opts *ro, const kopt_eval_opts *eo, kopt_run **run);
/* The exit code of the run's failed step (docs/internals/run.md): USAGE 2, INPUT 9, COMPILE
 * and LAUNCH their verdicts' codes, anything else 10. */
int cli_fault_code(const kopt_run *run);
/* --size K=V into `sizes`; on a bad value prints "kopt VERB: --size ..." and returns -1. */
int cli_parse_size(kopt_ctx *ctx, const char *verb_name, const char *arg, kopt_vars *sizes);
/* Print `j` as indented JSON on stdout (an empty object or array when it cannot be
 * written), then release it (takes the reference). */
#include <jansson.h>
void cli_print_json(json_t *j);
/* Print JSON text the library made (NULL: "{}") and free it. */
void cli_print_text(char *text);

/* ---- Ctrl-C (cli/sigint.c) -------------------------------------------------------------- */
#include <signal.h>
/* The first Ctrl-C sets *flag (the library stops after its current step) and writes `msg`
 * to stderr; a second exits at once (130). *old (may be NULL) gets the previous action. */
void cli_sigint_stop(volatile sig_atomic_t *flag, const char *msg, struct sigaction *old);

/* ---- the --llm options of every verb that talks to a model (cli/cmd_llm.c) ------------- */
#include <stdio.h>
enum {
    CLI_LLM_SPEC = 0x1000, CLI_LLM_KEY_ENV, CLI_LLM_PRICES, CLI_LLM_RECORD, CLI_LLM_PARALLEL,
    CLI_LLM_TIMEOUT, CLI_LLM_CONNECT_TIMEOUT, CLI_LLM_RETRIES, CLI_LLM_BACKOFF,
    CLI_LLM_BACKOFF_MAX, CLI_LLM_MAX_CALLS, CLI_LLM_MAX_TOKENS_TOTAL, CLI_LLM_MAX_COST,
};
/* Entries for a verb's struct option table. */
#define CLI_LLM_LONG_OPTIONS                                                                   \
    {"llm", required_argument, NULL, CLI_LLM_SPEC},                                            \
    {"llm-key-env", required_argument, NULL, CLI_LLM_KEY_ENV},                                 \
    {"llm-prices", required_argument, NULL, CLI_LLM_PRICES},                                   \
    {"llm-record", required_argument, NULL, CLI_LLM_RECORD},                                   \
    {"llm-parallel", required_argument, NULL, CLI_LLM_PARALLEL},                               \
    {"llm-timeout", required_argument, NULL, CLI_LLM_TIMEOUT},                                 \
    {"llm-connect-timeout", required_argument, NULL, CLI_LLM_CONNECT_TIMEOUT},                 \
    {"llm-retries", required_argument, NULL, CLI_LLM_RETRIES},                                 \
    {"llm-backoff", required_argument, NULL, CLI_LLM_BACKOFF},                                 \
    {"llm-backoff-max", required_argument, NULL, CLI_LLM_BACKOFF_MAX},                         \
    {"max-llm-calls", required_argument, NULL, CLI_LLM_MAX_CALLS},                             \
    {"max-tokens-total", required_argument, NULL, CLI_LLM_MAX_TOKENS_TOTAL},                   \
    {"max-cost", required_argument, NULL, CLI_LLM_MAX_COST}

typedef struct cli_llm {
    const char *spec;            /* --llm; NULL: $KOPT_LLM */
    const char *record_path;     /* --llm-record */
    kopt_llm_options opts;
    kopt_llm_client *client;     /* after cli_llm_open */
    kopt_store *store;           /* where exchanges go; NULL with --no-store */
    FILE *record_file;
    int64_t last_id;             /* the last exchange stored */
} cli_llm;
void cli_llm_init(cli_llm *l);
/* Handle option `c` of CLI_LLM_LONG_OPTIONS: 1 handled, 0 not ours, -1 bad value (said). */
int cli_llm_option(cli_llm *l, const char *verb, int c, const char *arg);
/* Open the store (db_path NULL: none), the record file and the client; prints the error
 * and returns -1 on failure. */
int cli_llm_open(cli_llm *l, kopt_ctx *ctx, const char *db_path);
void cli_llm_close(cli_llm *l);

#endif
