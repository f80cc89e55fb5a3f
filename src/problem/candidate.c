/* Candidates: a .cu file with an optional leading front matter block (JSON) giving its
 * launch plan, params, constraints, scratch buffers, options and mode. */
#include "parse_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void kopt_candidate_free(kopt_candidate *c)
{
    if (!c)
        return;
    free(c->path);
    free(c->dir);
    free(c->source);
    kopt__plan_free(&c->plan);
    kopt_vars_free(&c->params);
    kopt__strv_free(c->nconstraints, c->constraints);
    for (int i = 0; i < c->nscratch; i++)
        kopt__tensor_free(&c->scratch[i]);
    free(c->scratch);
    kopt__strv_free(c->noptions, c->options);
    kopt__strv_free(c->nincludes, c->includes);
    kopt__strv_free(c->nlibraries, c->libraries);
    free(c);
}

/* 1-based line number of position `pos` in `text`. */
static int line_of(const char *text, const char *pos)
{
    int line = 1;
    for (const char *s = text; s < pos; s++)
        line += *s == '\n';
    return line;
}

static kopt_status parse_front_matter(kopt_where *w, kopt_candidate *c, const char *json_text,
                                      const kopt_problem *prob)
{
    static const char *const keys[] = {"launches", "params", "constraints", "scratch", "options",
                                       "includes", "mode", "libraries", NULL};
    json_t *root = NULL, *v, *x;
    char *mode = NULL;
    const char *key;
    size_t i, saved;
    kopt_status rc;

    if ((rc = kopt__load_json(w->ctx, json_text, w->file, &root)) != KOPT_OK)
        return kopt_adderr(w->ctx, rc, "front matter");
    if ((rc = kopt__check_keys(w, root, keys)) != KOPT_OK ||
        (rc = kopt__get_str(w, root, "mode", 0, &mode)) != KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "options", &c->noptions, &c->options)) != KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "includes", &c->nincludes, &c->includes)) != KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "libraries", &c->nlibraries, &c->libraries)) !=
            KOPT_OK ||
        (rc = kopt__get_str_array(w, root, "constraints", &c->nconstraints, &c->constraints)) !=
            KOPT_OK)
        goto cleanup;
    if (mode && strcmp(mode, "host") != 0 && strcmp(mode, "device") != 0) {
        saved = kopt__push(w, "mode");
        rc = kopt__bad(w, "expected \"device\" or \"host\", got '%s'", mode);
        goto cleanup;
    }
    c->host_mode = mode && strcmp(mode, "host") == 0;
    if ((v = json_object_get(root, "params"))) {
        saved = kopt__push(w, "params");
        if (!json_is_object(v)) {
            rc = kopt__bad(w, "expected an object of NAME: integer");
            goto cleanup;
        }
        json_object_foreach(v, key, x) {
            size_t s2 = kopt__push(w, key);
            if (!kopt__is_ident(key))
                rc = kopt__bad(w, "'%s' is not a valid macro name", key);
            else if (json_is_array(x) || json_is_object(x))
                rc = kopt__bad(w, "a list or range of values makes this a template: tune it "
                                  "with `kopt tune`, or give one integer here");
            else if (!json_is_integer(x))
                rc = kopt__bad(w, "expected an integer");
            else if (kopt_vars_find(&prob->sizes, key) >= 0)
                rc = kopt__bad(w, "'%s' is already a size name of the problem", key);
            else
                kopt_vars_set(&c->params, key, json_integer_value(x));
            kopt__pop(w, s2);
            if (rc != KOPT_OK)
                goto cleanup;
        }
        kopt__pop(w, saved);
    }
    if ((v = json_object_get(root, "scratch"))) {
        saved = kopt__push(w, "scratch");
        if (!json_is_array(v)) {
            rc = kopt__bad(w, "expected an array of buffers");
            goto cleanup;
        }
        c->scratch = calloc(json_array_size(v) + 1, sizeof(*c->scratch));
        json_array_foreach(v, i, x) {
            size_t s2 = kopt__push_index(w, (int)i);
            kopt_tensor_spec *t = &c->scratch[i];
            c->nscratch++;
            rc = kopt__parse_tensor(w, x, t, 1);
            if (rc == KOPT_OK && (kopt_problem_find_tensor(prob, t->name) >= 0 ||
                                  kopt_vars_find(&prob->sizes, t->name) >= 0))
                rc = kopt__bad(w, "name '%s' is already used by the problem", t->name);
            for (int j = 0; rc == KOPT_OK && j < (int)i; j++)
                if (strcmp(c->scratch[j].name, t->name) == 0)
                    rc = kopt__bad(w, "duplicate scratch name '%s'", t->name);
            kopt__pop(w, s2);
            if (rc != KOPT_OK)
                goto cleanup;
        }
        kopt__pop(w, saved);
    }
    if ((v = json_object_get(root, "launches"))) {
        saved = kopt__push(w, "launches");
        rc = kopt__parse_plan(w, v, &c->plan);
        kopt__pop(w, saved);
        if (rc != KOPT_OK)
            goto cleanup;
    }
cleanup:
    free(mode);
    json_decref(root);
    return rc;
}

/* Where a step names a tensor: memset targets and arguments that are plain names. */
static kopt_status check_names(kopt_where *w, const kopt_candidate *c, const kopt_problem *p)
{
    kopt_vars all = KOPT_VARS_INIT;
    kopt_env env = {2, {&all, &c->params}};
    kopt_status rc = KOPT_OK;
    int64_t v;

    kopt_vars_copy(&all, &p->sizes);
    for (int i = 0; rc == KOPT_OK && i < c->plan.n; i++) {
        const kopt_launch *l = &c->plan.steps[i];
        size_t s1 = kopt__push(w, "launches"), s2 = kopt__push_index(w, i);
        int found = 0;
        if (l->is_memset) {
            found = kopt_problem_find_tensor(p, l->memset_tensor) >= 0;
            for (int s = 0; s < c->nscratch; s++)
                found |= strcmp(c->scratch[s].name, l->memset_tensor) == 0;
            if (!found)
                rc = kopt__bad(w, "memset of unknown tensor '%s'", l->memset_tensor);
        }
        for (int a = 0; rc == KOPT_OK && a < l->nargs; a++) {
            const kopt_arg *arg = &l->args[a];
            int is_tensor = 0;
            if (!arg->text)
                continue;
            is_tensor = kopt_problem_find_tensor(p, arg->text) >= 0;
            for (int s = 0; s < c->nscratch; s++)
                is_tensor |= strcmp(c->scratch[s].name, arg->text) == 0;
            if (arg->kind == KOPT_ARG_INT && is_tensor)
                continue;
            if (kopt_expr_eval(w->ctx, arg->text, &env, &v) != KOPT_OK)
                rc = kopt__bad(w, "args[%d]: '%s' is neither a tensor nor a valid expression (%s)",
                               a, arg->text, kopt_errmsg(w->ctx));
        }
        kopt__pop(w, s2);
        kopt__pop(w, s1);
    }
    for (int i = 0; rc == KOPT_OK && i < c->nconstraints; i++) {
        size_t s1 = kopt__push(w, "constraints"), s2 = kopt__push_index(w, i);
        if (kopt_expr_check(w->ctx, c->constraints[i], &env) != KOPT_OK)
            rc = kopt__bad(w, "%s", kopt_errmsg(w->ctx));
        kopt__pop(w, s2);
        kopt__pop(w, s1);
    }
    kopt_vars_free(&all);
    return rc;
}

kopt_status kopt_candidate_parse(kopt_candidate **out, kopt_ctx *ctx, const char *text,
                                 const char *path, const kopt_problem *prob)
{
    kopt_where w = {ctx, path, ""};
    kopt_candidate *c = NULL;
    const char *s = text, *end;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate");
    c->path = strdup(path);
    c->dir = kopt_path_dir(path);
    c->source = strdup(text);
    while (isspace((unsigned char)*s))
        s++;
    if (strncmp(s, "/*@kopt", 7) == 0) {
        char *json;
        c->has_front_matter = 1;
        end = strstr(s, "*/");
        if (!end) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: front matter '/*@kopt' is not closed "
                                                  "by '*/'", path, line_of(text, s));
            goto cleanup;
        }
        json = strndup(s + 7, (size_t)(end - s - 7));
        /* JSON line numbers are relative to the block; say which line the block starts on */
        rc = parse_front_matter(&w, c, json, prob);
        free(json);
        if (rc != KOPT_OK) {
            if (strstr(kopt_errmsg(ctx), "invalid JSON"))
                kopt_adderr(ctx, rc, "(front matter starts on line %d, JSON lines counted from "
                                     "there)", line_of(text, s));
            goto cleanup;
        }
    } else if (strstr(text, "@kopt")) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: '@kopt' found, but the front matter must "
                                              "be the first thing in the file, as /*@kopt {...} */",
                         path, line_of(text, strstr(text, "@kopt")));
        goto cleanup;
    }
    if (c->plan.n == 0 && !c->host_mode) {
        if (prob->ref_plan.n == 0) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: no launch plan: the reference has none "
                                                  "(host mode), so give \"launches\"", path);
            goto cleanup;
        }
        if (kopt__plan_copy(&c->plan, &prob->ref_plan) != KOPT_OK) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "plan");
            goto cleanup;
        }
    }
    if ((rc = check_names(&w, c, prob)) != KOPT_OK)
        goto cleanup;
    kopt_sha256_hex(text, strlen(text), c->hash);
    *out = c;
    c = NULL;
cleanup:
    kopt_candidate_free(c);
    return rc;
}

kopt_status kopt_candidate_load(kopt_candidate **out, kopt_ctx *ctx, const char *path,
                                const kopt_problem *prob)
{
    char *text = NULL;
    kopt_status rc;

    *out = NULL;
    if ((rc = kopt_file_read(ctx, path, &text, NULL)) != KOPT_OK)
        return rc;
    rc = kopt_candidate_parse(out, ctx, text, path, prob);
    free(text);
    return rc;
}

kopt_status kopt_candidate_from_reference(kopt_candidate **out, kopt_ctx *ctx,
                                          const kopt_problem *prob)
{
    kopt_candidate *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "candidate");
    c->is_reference = 1;
    c->path = strdup(prob->ref_path);
    c->dir = strdup(prob->dir);
    c->source = strdup(prob->ref_source);
    c->host_mode = prob->ref_host_mode;
    if (kopt__plan_copy(&c->plan, &prob->ref_plan) != KOPT_OK) {
        kopt_candidate_free(c);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "plan");
    }
    c->options = calloc((size_t)prob->nref_options + 1, sizeof(char *));
    for (int i = 0; i < prob->nref_options; i++)
        c->options[c->noptions++] = strdup(prob->ref_options[i]);
    kopt_sha256_hex(c->source, strlen(c->source), c->hash);
    *out = c;
    return KOPT_OK;
}
