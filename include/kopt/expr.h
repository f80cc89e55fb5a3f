/*
 * kopt/expr.h: integer expressions over named values (sizes, params).
 *
 * Grammar (C precedence): ternary `c ? a : b`, `|| && `, `== != < <= > >=`, `+ -`,
 * `* / %`, unary `- + !`, parentheses, 64-bit integer literals, names, and the functions
 * min, max, cdiv, pow2, log2, abs, align. Arithmetic is int64; overflow and division by
 * zero are errors. Names are looked up in a kopt_env (a stack of name/value tables).
 * Nothing is allocated by evaluation; tables own their names (freed by kopt_vars_free).
 */
#ifndef KOPT_EXPR_H
#define KOPT_EXPR_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A table of named integers, in insertion order (sizes or params). */
typedef struct kopt_vars {
    int n;
    char **names;      /* owned */
    int64_t *values;
} kopt_vars;
#define KOPT_VARS_INIT {0, NULL, NULL}

/* Set (add or replace) a value. Returns KOPT_OK or KOPT_E_NOMEM. */
kopt_status kopt_vars_set(kopt_vars *v, const char *name, int64_t value);
/* Index of `name` or -1. */
int kopt_vars_find(const kopt_vars *v, const char *name);
kopt_status kopt_vars_copy(kopt_vars *dst, const kopt_vars *src);
void kopt_vars_free(kopt_vars *v);
/* Parse "K=V" (V an integer) into *name (caller frees) and *value. */
kopt_status kopt_vars_parse_assign(kopt_ctx *ctx, const char *text, char **name, int64_t *value);
/* Parse "K=V,K=V" (at least one) into `out`. */
kopt_status kopt_vars_parse_list(kopt_ctx *ctx, const char *text, kopt_vars *out);

/* A lookup environment: tables searched from first to last. */
#define KOPT_ENV_MAX 4
typedef struct kopt_env {
    int n;
    const kopt_vars *tables[KOPT_ENV_MAX];
} kopt_env;

/* Evaluate `text`. On error the message names the expression and the column. */
kopt_status kopt_expr_eval(kopt_ctx *ctx, const char *text, const kopt_env *env, int64_t *out);
/* Check syntax and that every name is in `env`, without arithmetic errors (division by
 * zero, overflow): used to validate files before the real sizes are known. */
kopt_status kopt_expr_check(kopt_ctx *ctx, const char *text, const kopt_env *env);

#ifdef __cplusplus
}
#endif
#endif
