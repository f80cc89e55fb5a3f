/*
 * Internal helpers shared by the problem and candidate parsers: a "where" cursor that
 * names the file and the JSON field in every message, typed field readers over jansson,
 * and the parsers for pieces both files have (launch plans, tensor specs, options).
 */
#ifndef KOPT_PARSE_INT_H
#define KOPT_PARSE_INT_H

#include "kopt/problem.h"

#include <jansson.h>

typedef struct kopt_where {
    kopt_ctx *ctx;
    const char *file;
    char field[256];      /* "tensors[1].dtype" */
} kopt_where;

/* Set an error "file: field: message". Returns KOPT_E_INVALID. */
kopt_status kopt__bad(kopt_where *w, const char *fmt, ...) KOPT_PRINTF(2, 3);
/* Push ".name" or "[i]" onto the field path; pop restores the saved length. */
size_t kopt__push(kopt_where *w, const char *name);
size_t kopt__push_index(kopt_where *w, int i);
void kopt__pop(kopt_where *w, size_t saved);

/* Every key of `obj` must be in the NULL-terminated list `allowed`. */
kopt_status kopt__check_keys(kopt_where *w, json_t *obj, const char *const *allowed);
/* String copy of obj[key] (required or optional: *out NULL when absent). */
kopt_status kopt__get_str(kopt_where *w, json_t *obj, const char *key, int required, char **out);
/* An expression: a JSON integer or a string; *out is a string either way. */
kopt_status kopt__get_expr_value(kopt_where *w, json_t *v, char **out);
kopt_status kopt__get_number(kopt_where *w, json_t *obj, const char *key, int required,
                             double *out);
/* An array of strings (options, includes). */
kopt_status kopt__get_str_array(kopt_where *w, json_t *obj, const char *key, int *n,
                                char ***out);
/* A launch plan (array of steps). */
kopt_status kopt__parse_plan(kopt_where *w, json_t *arr, kopt_plan *plan);
/* One tensor spec (problem tensors and candidate scratch). */
kopt_status kopt__parse_tensor(kopt_where *w, json_t *obj, kopt_tensor_spec *t, int scratch_only);
/* A {name: integer} object into vars. */
kopt_status kopt__parse_vars(kopt_where *w, json_t *obj, kopt_vars *vars, int allow_negative);
/* Parse JSON text; syntax errors name file, line and column. */
kopt_status kopt__load_json(kopt_ctx *ctx, const char *text, const char *file, json_t **out);

int kopt__is_ident(const char *s);
void kopt__plan_free(kopt_plan *plan);
kopt_status kopt__plan_copy(kopt_plan *dst, const kopt_plan *src);
void kopt__tensor_free(kopt_tensor_spec *t);
void kopt__strv_free(int n, char **v);

#endif
