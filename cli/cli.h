/* The kopt command line: one file per verb, a table of verbs in main.c, shared output
 * helpers here. The CLI uses only the public API in include/kopt/. */
#ifndef KOPT_CLI_H
#define KOPT_CLI_H

#include "kopt/kopt.h"

/* Exit codes (docs/cli.md). Verdicts map through kopt_verdict_exit_code(). */
#define KOPT_EXIT_USAGE 2
#define KOPT_EXIT_INVALID 9
#define KOPT_EXIT_ERROR 10

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

/* A context whose log goes to stderr at warning level (info with verbose). */
kopt_ctx *cli_ctx(int verbose);
/* Print "kopt: <message>" and, if any, the error detail, to stderr. */
void cli_error(kopt_ctx *ctx);
/* The command line as given (the verb and its arguments), for a run's record. */
void cli_run_command(kopt_run_opts *ro);
/* The default store path: $KOPT_DB, else ./kopt.db. */
const char *cli_default_db(void);
/* The evaluation options every evaluating verb takes (getopt_long value CLI_EVAL_OPTION,
 * told apart by name): --trials, --budget-ms, --precision, --reps, --no-flush, --no-check-sizes,
 * --timeout, --device, --arch, --cache-dir. -1 for a bad value. */
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
    {"cache-dir", required_argument, NULL, CLI_EVAL_OPTION}
int cli_eval_option(const char *name, const char *arg, kopt_eval_opts *eo);
/* --size K=V into `sizes`; on a bad value prints "kopt VERB: --size ..." and returns -1. */
int cli_parse_size(kopt_ctx *ctx, const char *verb_name, const char *arg, kopt_vars *sizes);
/* Print `j` as indented JSON on stdout (an empty object or array when it cannot be
 * written), then release it (takes the reference). */
#include <jansson.h>
void cli_print_json(json_t *j);
/* Print JSON text the library made (NULL: "{}") and free it. */
void cli_print_text(char *text);

#endif
