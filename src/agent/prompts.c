/* The roles' prompt templates: where they are found and how they are filled in. */
#include "kopt/agent.h"
#include "core/core_int.h"

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
static int is_prompts_dir(const char *dir, void *arg)
{
    struct stat st;
    char *p = kopt_path_join(dir, "planner.md");
    int ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);

    (void)arg;
    free(p);
    return ok;
}

static const kopt__shipped_place prompts_places[] = {
    {KOPT__AT_EXE_DIR, "prompts", NULL, 0},
    {KOPT__AT_EXE_DIR, "../share/kopt/prompts", NULL, 0},
    {KOPT__AT_LIB_DIR, "prompts", NULL, 0},
    {KOPT__AT_LIB_DIR, "../share/kopt/prompts", NULL, 0},
    {KOPT__AT_PATH, KOPT_INSTALL_PROMPTS, NULL, 0},
    {KOPT__AT_PATH, KOPT_SOURCE_PROMPTS, NULL, 0},
};

kopt_status kopt_agent_prompts_dir(kopt_ctx *ctx, char **out)
{
    const kopt__shipped_spec spec = {
        "prompt templates", "set $KOPT_PROMPTS or --prompts", "KOPT_PROMPTS",
        "holds no planner.md", is_prompts_dir, NULL, prompts_places,
        (int)(sizeof(prompts_places) / sizeof(prompts_places[0]))};

    return kopt__find_shipped(ctx, &spec, out, NULL);
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
