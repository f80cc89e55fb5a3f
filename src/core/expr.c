/*
 * Integer expression evaluator: a recursive-descent parser that evaluates as it parses
 * (no tree). Used for sizes, shapes, launch dimensions, work counts and constraints.
 */
#include "kopt/expr.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tables ------------------------------------------------------------------------- */

int kopt_vars_find(const kopt_vars *v, const char *name)
{
    for (int i = 0; v && i < v->n; i++)
        if (strcmp(v->names[i], name) == 0)
            return i;
    return -1;
}

kopt_status kopt_vars_set(kopt_vars *v, const char *name, int64_t value)
{
    int i = kopt_vars_find(v, name);
    char **names;
    int64_t *values;

    if (i >= 0) {
        v->values[i] = value;
        return KOPT_OK;
    }
    names = realloc(v->names, (size_t)(v->n + 1) * sizeof(*names));
    if (!names)
        return KOPT_E_NOMEM;
    v->names = names;
    values = realloc(v->values, (size_t)(v->n + 1) * sizeof(*values));
    if (!values)
        return KOPT_E_NOMEM;
    v->values = values;
    if (!(v->names[v->n] = strdup(name)))
        return KOPT_E_NOMEM;
    v->values[v->n++] = value;
    return KOPT_OK;
}

kopt_status kopt_vars_copy(kopt_vars *dst, const kopt_vars *src)
{
    for (int i = 0; src && i < src->n; i++)
        if (kopt_vars_set(dst, src->names[i], src->values[i]) != KOPT_OK)
            return KOPT_E_NOMEM;
    return KOPT_OK;
}

void kopt_vars_free(kopt_vars *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n; i++)
        free(v->names[i]);
    free(v->names);
    free(v->values);
    v->names = NULL;
    v->values = NULL;
    v->n = 0;
}

static int is_ident(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

kopt_status kopt_vars_parse_assign(kopt_ctx *ctx, const char *text, char **name, int64_t *value)
{
    const char *eq = strchr(text, '=');
    char *end;
    long long v;

    *name = NULL;
    if (!eq || !is_ident(text, (size_t)(eq - text)))
        return kopt_seterr(ctx, KOPT_E_INVALID, "'%s': expected NAME=INTEGER", text);
    errno = 0;
    v = strtoll(eq + 1, &end, 0);
    if (errno || end == eq + 1 || *end)
        return kopt_seterr(ctx, KOPT_E_INVALID, "'%s': the value is not an integer", text);
    *name = strndup(text, (size_t)(eq - text));
    if (!*name)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "name");
    *value = v;
    return KOPT_OK;
}

kopt_status kopt_vars_parse_list(kopt_ctx *ctx, const char *text, kopt_vars *out)
{
    char *copy = strdup(text), *save = NULL;
    kopt_status rc = KOPT_OK;
    int n = 0;

    if (!copy)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "sizes");
    for (char *t = strtok_r(copy, ",", &save); t && rc == KOPT_OK;
         t = strtok_r(NULL, ",", &save), n++) {
        char *name = NULL;
        int64_t v;
        if ((rc = kopt_vars_parse_assign(ctx, t, &name, &v)) == KOPT_OK)
            rc = kopt_vars_set(out, name, v);
        free(name);
    }
    free(copy);
    if (rc == KOPT_OK && !n)
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "'%s' names nothing (K=V,K=V)", text);
    return rc;
}

/* ---- parser ------------------------------------------------------------------------- */

typedef struct parser {
    kopt_ctx *ctx;
    const char *text, *p;
    const kopt_env *env;
    int quiet;           /* > 0: syntax and names only, no arithmetic errors (an untaken
                            branch, or kopt_expr_check) */
    kopt_status rc;
} parser;

static int64_t parse_ternary(parser *ps);

static int64_t fail(parser *ps, kopt_status st, const char *what)
{
    if (ps->rc == KOPT_OK)
        ps->rc = kopt_seterr(ps->ctx, st, "expression '%s': %s at column %d", ps->text, what,
                             (int)(ps->p - ps->text) + 1);
    return 0;
}

/* An arithmetic error: reported unless the value will not be used. */
static int64_t arith_fail(parser *ps, const char *what)
{
    return ps->quiet ? 0 : fail(ps, KOPT_E_INVALID, what);
}

static void skip_ws(parser *ps)
{
    /* the C locale's isspace, without a call per character (hot in tuning scans) */
    while (*ps->p == ' ' || (*ps->p >= '\t' && *ps->p <= '\r'))
        ps->p++;
}

static int accept(parser *ps, const char *tok)
{
    size_t n;

    skip_ws(ps);
    if (*ps->p != tok[0])        /* most tries fail here: keep them cheap */
        return 0;
    n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0)
        return 0;
    /* do not take "<" from "<=", "=" is never a token alone, "&" from "&&", ... */
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && ps->p[1] == '=')
        return 0;
    ps->p += n;
    return 1;
}

static int64_t checked(parser *ps, __int128 v)
{
    if (v > INT64_MAX || v < INT64_MIN)
        return arith_fail(ps, "integer overflow");
    return (int64_t)v;
}

static int lookup(const kopt_env *env, const char *name, size_t len, int64_t *out)
{
    for (int t = 0; env && t < env->n; t++) {
        const kopt_vars *v = env->tables[t];
        for (int i = 0; v && i < v->n; i++)
            if (strlen(v->names[i]) == len && strncmp(v->names[i], name, len) == 0) {
                *out = v->values[i];
                return 1;
            }
    }
    return 0;
}

static int64_t call(parser *ps, const char *name, size_t len)
{
    static const struct { const char *name; int nargs; } fns[] = {
        {"min", 2}, {"max", 2}, {"cdiv", 2}, {"pow2", 1}, {"log2", 1}, {"abs", 1}, {"align", 2},
    };
    int64_t a[2] = {0, 0};
    int f = -1, n;

    for (int i = 0; i < (int)(sizeof(fns) / sizeof(fns[0])); i++)
        if (strlen(fns[i].name) == len && strncmp(fns[i].name, name, len) == 0)
            f = i;
    if (f < 0) {
        ps->p = name;
        return fail(ps, KOPT_E_INVALID, "unknown function");
    }
    n = fns[f].nargs;
    for (int i = 0; i < n; i++) {
        if (i > 0 && !accept(ps, ","))
            return fail(ps, KOPT_E_INVALID, "expected ','");
        a[i] = parse_ternary(ps);
    }
    if (!accept(ps, ")"))
        return fail(ps, KOPT_E_INVALID, "expected ')'");
    if (ps->rc != KOPT_OK)
        return 1;
    switch (f) {
    case 0: return a[0] < a[1] ? a[0] : a[1];
    case 1: return a[0] > a[1] ? a[0] : a[1];
    case 2:
        if (a[1] <= 0)
            return arith_fail(ps, "cdiv by a value <= 0");
        return a[0] >= 0 ? (a[0] / a[1] + (a[0] % a[1] != 0)) : a[0] / a[1];
    case 3: return a[0] > 0 && (a[0] & (a[0] - 1)) == 0;
    case 4: {
        int64_t r = -1;
        if (a[0] <= 0)
            return arith_fail(ps, "log2 of a value <= 0");
        while (a[0]) { a[0] >>= 1; r++; }
        return r;
    }
    case 5:
        if (a[0] == INT64_MIN)
            return arith_fail(ps, "integer overflow");
        return a[0] < 0 ? -a[0] : a[0];
    case 6:
        if (a[1] <= 0)
            return arith_fail(ps, "align to a value <= 0");
        return checked(ps, ((__int128)a[0] + a[1] - 1) / a[1] * a[1]);
    }
    return 0;
}

static int64_t parse_primary(parser *ps)
{
    skip_ws(ps);
    if (accept(ps, "(")) {
        int64_t v = parse_ternary(ps);
        if (!accept(ps, ")"))
            return fail(ps, KOPT_E_INVALID, "expected ')'");
        return v;
    }
    if (isdigit((unsigned char)*ps->p)) {
        char *end;
        unsigned long long v;
        errno = 0;
        v = strtoull(ps->p, &end, 0);
        if (errno || v > INT64_MAX)
            return fail(ps, KOPT_E_INVALID, "integer literal too large");
        if (isalpha((unsigned char)*end) || *end == '.' || *end == '_')
            return fail(ps, KOPT_E_INVALID, "not an integer");
        ps->p = end;
        return (int64_t)v;
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        const char *s = ps->p;
        size_t len;
        int64_t v = 0;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
            ps->p++;
        len = (size_t)(ps->p - s);
        if (accept(ps, "("))
            return call(ps, s, len);
        if (!lookup(ps->env, s, len, &v)) {
            ps->p = s;
            char what[160];
            snprintf(what, sizeof(what), "unknown name '%.*s'", (int)(len < 64 ? len : 64), s);
            return fail(ps, KOPT_E_INVALID, what);
        }
        return v;
    }
    if (*ps->p == '\0')
        return fail(ps, KOPT_E_INVALID, "unexpected end, expected a value");
    return fail(ps, KOPT_E_INVALID, "expected a value");
}

static int64_t parse_unary(parser *ps)
{
    if (accept(ps, "-"))
        return checked(ps, -(__int128)parse_unary(ps));
    if (accept(ps, "+"))
        return parse_unary(ps);
    if (accept(ps, "!"))
        return !parse_unary(ps);
    return parse_primary(ps);
}

static int64_t parse_mul(parser *ps)
{
    int64_t v = parse_unary(ps);

    for (;;) {
        int op = accept(ps, "*") ? '*' : accept(ps, "/") ? '/' : accept(ps, "%") ? '%' : 0;
        int64_t r;
        if (!op)
            return v;
        r = parse_unary(ps);
        if (ps->rc != KOPT_OK)
            return 0;
        if (op == '*') {
            v = checked(ps, (__int128)v * r);
        } else if (r == 0) {
            v = arith_fail(ps, "division by zero");
        } else if (v == INT64_MIN && r == -1) {
            v = arith_fail(ps, "integer overflow");
        } else {
            v = op == '/' ? v / r : v % r;
        }
    }
}

static int64_t parse_add(parser *ps)
{
    int64_t v = parse_mul(ps);

    for (;;) {
        if (accept(ps, "+"))
            v = checked(ps, (__int128)v + parse_mul(ps));
        else if (accept(ps, "-"))
            v = checked(ps, (__int128)v - parse_mul(ps));
        else
            return v;
    }
}

static int64_t parse_rel(parser *ps)
{
    int64_t v = parse_add(ps);

    for (;;) {
        if (accept(ps, "<="))      v = v <= parse_add(ps);
        else if (accept(ps, ">=")) v = v >= parse_add(ps);
        else if (accept(ps, "<"))  v = v < parse_add(ps);
        else if (accept(ps, ">"))  v = v > parse_add(ps);
        else return v;
    }
}

static int64_t parse_eq(parser *ps)
{
    int64_t v = parse_rel(ps);

    for (;;) {
        if (accept(ps, "=="))      v = v == parse_rel(ps);
        else if (accept(ps, "!=")) v = v != parse_rel(ps);
        else return v;
    }
}

/* The right side of && and ||, and the untaken branch of ?:, are parsed (so syntax and
 * names are checked) but their arithmetic errors do not count: "K > 0 ? N / K : 0". */
static int64_t parse_quiet_if(parser *ps, int quiet, int64_t (*sub)(parser *))
{
    int64_t v;
    ps->quiet += quiet;
    v = sub(ps);
    ps->quiet -= quiet;
    return v;
}

static int64_t parse_and(parser *ps)
{
    int64_t v = parse_eq(ps);

    while (accept(ps, "&&")) {
        int64_t r = parse_quiet_if(ps, !v, parse_eq);
        v = v && r;
    }
    return v;
}

static int64_t parse_or(parser *ps)
{
    int64_t v = parse_and(ps);

    while (accept(ps, "||")) {
        int64_t r = parse_quiet_if(ps, v != 0, parse_and);
        v = v || r;
    }
    return v;
}

static int64_t parse_ternary(parser *ps)
{
    int64_t c = parse_or(ps), a, b;

    if (!accept(ps, "?"))
        return c;
    a = parse_quiet_if(ps, !c, parse_ternary);
    if (!accept(ps, ":"))
        return fail(ps, KOPT_E_INVALID, "expected ':'");
    b = parse_quiet_if(ps, c != 0, parse_ternary);
    return c ? a : b;
}

static kopt_status run(kopt_ctx *ctx, const char *text, const kopt_env *env, int check,
                       int64_t *out)
{
    parser ps = {ctx, text, text, env, check ? 1 : 0, KOPT_OK};
    int64_t v;

    if (!text)
        return kopt_seterr(ctx, KOPT_E_INVALID, "missing expression");
    v = parse_ternary(&ps);
    skip_ws(&ps);
    if (ps.rc == KOPT_OK && *ps.p)
        fail(&ps, KOPT_E_INVALID, "unexpected text");
    if (ps.rc == KOPT_OK && out)
        *out = v;
    return ps.rc;
}

kopt_status kopt_expr_eval(kopt_ctx *ctx, const char *text, const kopt_env *env, int64_t *out)
{
    return run(ctx, text, env, 0, out);
}

kopt_status kopt_expr_check(kopt_ctx *ctx, const char *text, const kopt_env *env)
{
    return run(ctx, text, env, 1, NULL);
}
