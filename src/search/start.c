/* kopt optimize --start FILE: the check a start kernel passes before a search begins from
 * it (a candidate of this problem that compiles), so a wrong file is a clear error at once
 * rather than a failed node later. */
#include "search_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Does `src` name identifier [name, name + n) as a whole word? */
static int names(const char *src, const char *name, size_t n)
{
    for (const char *p = src; (p = strstr(p, name)); p++) {
        char before = p == src ? ' ' : p[-1], after = p[n];
        if (!(isalnum((unsigned char)before) || before == '_') &&
            !(isalnum((unsigned char)after) || after == '_'))
            return 1;
    }
    return 0;
}

kopt_status kopt_search_start_check(kopt_ctx *ctx, const kopt_problem *prob, const char *path,
                                    const kopt_compile_opts *co, char **source)
{
    kopt_compile_opts dflt = KOPT_COMPILE_OPTS_INIT;
    kopt_candidate *c = NULL;
    kopt_compiled *cc = NULL;
    kopt_bound *b = NULL;
    kopt_vars sizes;
    kopt_status rc;

    *source = NULL;
    memset(&sizes, 0, sizeof(sizes));
    if ((rc = kopt_candidate_load(&c, ctx, path, prob)) != KOPT_OK) {
        kopt_adderr(ctx, rc, "--start %s is not a candidate of problem %s", path, prob->name);
        return rc == KOPT_E_NOT_FOUND ? rc : KOPT_E_INVALID;
    }
    if ((rc = kopt_candidate_check_concrete(ctx, c)) != KOPT_OK) {
        kopt_adderr(ctx, rc, "--start %s (tune a template with kopt tune first, and start "
                    "from its best instance)", path);
        goto done;
    }
    if ((rc = kopt_sizes_resolve(&sizes, ctx, prob, NULL)) != KOPT_OK ||
        (rc = kopt_bind(&b, ctx, prob, c, &sizes)) != KOPT_OK) {
        kopt_adderr(ctx, KOPT_E_INVALID, "--start %s is not a candidate of problem %s", path,
                    prob->name);
        rc = KOPT_E_INVALID;
        goto done;
    }
    /* the launch plan's kernels (the problem's, unless the file gives its own) */
    for (int i = 0; i < c->plan.n && !c->host_mode; i++) {
        const kopt_launch *l = &c->plan.steps[i];
        char base[256];
        size_t n;
        if (l->is_memset || !l->kernel)
            continue;
        n = strcspn(l->kernel, "< ");
        snprintf(base, sizeof(base), "%.*s", (int)n, l->kernel);
        if (!names(c->source, base, strlen(base))) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "--start %s is not a candidate of problem "
                             "%s: it defines no kernel %s (the %s launch plan's)", path,
                             prob->name, base, c->has_front_matter ? "file's" : "problem's");
            goto done;
        }
    }
    rc = kopt_compile(&cc, ctx, c, co ? co : &dflt);
    if (rc == KOPT_E_NO_DEVICE) {
        /* no compiler to load here: the evaluator will say it */
        kopt_log(ctx, KOPT_LOG_WARN, "--start %s: not compiled before the search (%s)", path,
                 kopt_errmsg(ctx));
        rc = KOPT_OK;
    } else if (rc != KOPT_OK) {
        kopt_adderr(ctx, rc, "--start %s does not compile", path);
        goto done;
    } else {
        for (int i = 0; i < c->plan.n; i++) {
            const kopt_launch *l = &c->plan.steps[i];
            if (l->is_memset || c->host_mode || kopt_compiled_kernel(cc, l->kernel))
                continue;
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "--start %s is not a candidate of problem "
                             "%s: it defines no kernel %s (the launch plan's)", path,
                             prob->name, l->kernel);
            goto done;
        }
    }
    if (!(*source = strdup(c->source)))
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "--start source");
done:
    kopt_compiled_free(cc);
    kopt_bound_free(b);
    kopt_vars_free(&sizes);
    kopt_candidate_free(c);
    return rc;
}
