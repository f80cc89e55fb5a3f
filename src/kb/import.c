/* kopt kb import: KernelBench problem files -> kopt problem folders. The Python side
 * (libexec/kopt_torch_worker.py, "import") runs each file and writes its folder; this side
 * reads its one-line JSON reports and loads every written problem back. */
#include "kopt/kb.h"
#include "kopt/problem.h"
#include "kopt/proc.h"
#include "kopt/worker.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kopt_kb_import_free(kopt_kb_import_record *recs, int n)
{
    for (int i = 0; recs && i < n; i++) {
        free(recs[i].file);
        free(recs[i].problem);
        free(recs[i].error);
        free(recs[i].sizes);
        free(recs[i].check_sizes);
        free(recs[i].check_sizes_note);
        free(recs[i].check_sizes_error);
    }
    free(recs);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* A JSON object member as compact text, or NULL when it is absent or not an object. */
static char *object_text(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    return json_is_object(v) ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
}

kopt_status kopt_kb_import(kopt_ctx *ctx, const char *src, const char *out_dir,
                           const kopt_kb_import_opts *opts, kopt_kb_import_record **out,
                           int *n)
{
    kopt_kb_import_opts o = KOPT_KB_IMPORT_OPTS_INIT;
    char *script = NULL, *output = NULL, atol[32], rtol[32];
    const char *argv[16];
    kopt_kb_import_record *recs = NULL;
    int exit_code = 0, count = 0, cap = 0, k = 0, answered = 0;
    kopt_status rc;

    *out = NULL;
    *n = 0;
    if (opts)
        o = *opts;
    if ((rc = kopt_torch_worker_find(ctx, &script)) != KOPT_OK)
        return rc;
    snprintf(atol, sizeof(atol), "%.17g", o.atol);
    snprintf(rtol, sizeof(rtol), "%.17g", o.rtol);
    argv[k++] = kopt_torch_python();
    argv[k++] = script;
    argv[k++] = "import";
    argv[k++] = src;
    argv[k++] = out_dir;
    argv[k++] = "--atol";
    argv[k++] = atol;
    argv[k++] = "--rtol";
    argv[k++] = rtol;
    if (o.prefix) {
        argv[k++] = "--prefix";
        argv[k++] = o.prefix;
    }
    argv[k++] = "--device";
    argv[k++] = o.device ? o.device : "cpu";
    argv[k] = NULL;
    rc = kopt_proc_run(ctx, argv, o.timeout_s, &exit_code, &output);
    free(script);
    if (rc != KOPT_OK) {
        free(output);
        return kopt_adderr(ctx, rc, "kopt kb import: running %s", kopt_torch_python());
    }
    for (char *line = output; line && *line;) {
        char *eol = strchr(line, '\n');
        json_t *j;
        if (eol)
            *eol = '\0';
        if (line[0] == '{' && (j = json_loads(line, 0, NULL))) {
            kopt_kb_import_record *r;
            const char *err = json_string_value(json_object_get(j, "error"));
            answered = 1;
            if (count == cap) {
                kopt_kb_import_record *g = realloc(recs, (size_t)(cap = cap ? 2 * cap : 16) *
                                                              sizeof(*recs));
                if (!g) {
                    json_decref(j);
                    kopt_kb_import_free(recs, count);
                    free(output);
                    return kopt_seterr(ctx, KOPT_E_NOMEM, "import records");
                }
                recs = g;
            }
            r = &recs[count++];
            memset(r, 0, sizeof(*r));
            r->file = dup_or_null(json_string_value(json_object_get(j, "file")));
            r->error = dup_or_null(err);
            if (!err) {
                kopt_problem *p = NULL;
                json_t *c;
                size_t i;
                r->problem = dup_or_null(json_string_value(json_object_get(j, "problem")));
                r->sizes = object_text(j, "sizes");
                r->check_sizes = object_text(j, "check_sizes");
                r->check_sizes_note = dup_or_null(json_string_value(
                    json_object_get(j, "check_sizes_note")));
                r->check_sizes_error = dup_or_null(json_string_value(
                    json_object_get(j, "check_sizes_error")));
                r->bytes = json_number_value(json_object_get(j, "bytes"));
                r->flops = json_number_value(json_object_get(j, "flops"));
                json_array_foreach(json_object_get(j, "counts"), i, c)
                    r->has_flops |= json_string_value(c) &&
                                    strcmp(json_string_value(c), "flops") == 0;
                /* what was written must load as a kopt problem */
                if (!r->problem || kopt_problem_load(&p, ctx, r->problem) != KOPT_OK) {
                    char msg[1024];
                    snprintf(msg, sizeof(msg), "%s: the problem written to %s does not load: %s",
                             r->file ? r->file : "?", r->problem ? r->problem : "?",
                             kopt_errmsg(ctx));
                    r->error = strdup(msg);
                }
                kopt_problem_free(p);
            }
            json_decref(j);
        }
        line = eol ? eol + 1 : NULL;
    }
    if (!answered) {
        /* the script failed before reporting any file: say what it printed */
        size_t len = output ? strlen(output) : 0;
        const char *tail = len > 1500 ? output + len - 1500 : output ? output : "";
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "kopt kb import: %s exited %d without importing "
                         "anything: %s", kopt_torch_python(), exit_code, tail);
        free(output);
        kopt_kb_import_free(recs, count);
        return rc;
    }
    free(output);
    *out = recs;
    *n = count;
    return KOPT_OK;
}
