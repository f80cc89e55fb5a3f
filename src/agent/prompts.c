/* The roles' prompt templates: where they are found and how they are filled in. */
#include "kopt/agent.h"
#include "kopt/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef KOPT_INSTALL_PROMPTS
#define KOPT_INSTALL_PROMPTS "/usr/local/share/kopt/prompts"
#endif
#ifndef KOPT_SOURCE_PROMPTS
#define KOPT_SOURCE_PROMPTS "prompts"
#endif

static const char *const role_names[KOPT_AGENT_ROLE_COUNT] = {
    "planner", "coder", "debugger", "templatizer"};

const char *kopt_agent_role_name(kopt_agent_role r)
{
    return (unsigned)r < KOPT_AGENT_ROLE_COUNT ? role_names[r] : "?";
}

/* A folder holding planner.md counts as a prompts folder. */
static int is_prompts_dir(const char *dir)
{
    struct stat st;
    char *p = kopt_path_join(dir, "planner.md");
    int ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);

    free(p);
    return ok;
}

/* Look at <base>/<rel>; the absolute path (malloc'd) when it is a prompts folder. */
static char *look(kopt_buf *looked, const char *base, const char *rel)
{
    char *p = rel ? kopt_path_join(base, rel) : strdup(base), *r = NULL;

    if (!p)
        return NULL;
    if (is_prompts_dir(p))
        r = realpath(p, NULL);
    else
        kopt_buf_printf(looked, "%s%s", looked->len ? ", " : "", p);
    free(p);
    return r;
}

kopt_status kopt_agent_prompts_dir(kopt_ctx *ctx, char **out)
{
    kopt_buf looked = KOPT_BUF_INIT;
    const char *env = getenv("KOPT_PROMPTS"), *lib = kopt_self_lib();
    const char *bases[2] = {kopt_self_exe(), lib};
    char *found = NULL;

    *out = NULL;
    if (env && env[0]) {
        found = look(&looked, env, NULL);
        kopt_buf_free(&looked);
        if (!found)
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "KOPT_PROMPTS=%s holds no planner.md",
                               env);
        *out = found;
        return KOPT_OK;
    }
    for (int i = 0; i < 2 && !found; i++) {
        char *dir = bases[i] ? kopt_path_dir(bases[i]) : NULL;
        if (dir && !(found = look(&looked, dir, "prompts")))
            found = look(&looked, dir, "../share/kopt/prompts");
        free(dir);
    }
    if (!found)
        found = look(&looked, KOPT_INSTALL_PROMPTS, NULL);
    if (!found)
        found = look(&looked, KOPT_SOURCE_PROMPTS, NULL);
    if (!found) {
        kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no prompt templates found (looked at %s); set "
                    "$KOPT_PROMPTS or --prompts", kopt_buf_cstr(&looked));
        kopt_buf_free(&looked);
        return KOPT_E_NOT_FOUND;
    }
    kopt_buf_free(&looked);
    *out = found;
    return KOPT_OK;
}

kopt_status kopt_agent_prompt_load(kopt_ctx *ctx, const char *dir, kopt_agent_role role,
                                   char **out)
{
    char name[64], *path;
    kopt_status rc;

    snprintf(name, sizeof(name), "%s.md", kopt_agent_role_name(role));
    if (!(path = kopt_path_join(dir, name)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "prompt path");
    rc = kopt_file_read(ctx, path, out, NULL);
    free(path);
    return rc;
}

kopt_status kopt_agent_prompt_load_named(kopt_ctx *ctx, const char *dir, const char *name,
                                         char **out)
{
    char file[128], *path;
    kopt_status rc;

    snprintf(file, sizeof(file), "%s.md", name);
    if (!(path = kopt_path_join(dir, file)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "prompt path");
    rc = kopt_file_read(ctx, path, out, NULL);
    free(path);
    return rc;
}

char *kopt_agent_render(const char *tmpl, const kopt_agent_var *vars, int nvars)
{
    kopt_buf b = KOPT_BUF_INIT;
    const char *p = tmpl;

    while (*p) {
        const char *open = strstr(p, "{{"), *close;
        int done = 0;
        if (!open) {
            kopt_buf_append(&b, p, strlen(p));
            break;
        }
        kopt_buf_append(&b, p, (size_t)(open - p));
        close = strstr(open + 2, "}}");
        if (close) {
            size_t n = (size_t)(close - open - 2);
            for (int i = 0; i < nvars && !done; i++)
                if (strlen(vars[i].name) == n && strncmp(vars[i].name, open + 2, n) == 0) {
                    if (vars[i].value)
                        kopt_buf_append(&b, vars[i].value, strlen(vars[i].value));
                    done = 1;
                }
        }
        if (done) {
            p = close + 2;
        } else {
            kopt_buf_append(&b, "{{", 2);
            p = open + 2;
        }
    }
    return kopt_buf_detach(&b);
}
