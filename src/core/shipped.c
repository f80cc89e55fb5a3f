/* Finding kopt's shipped files: one search for every caller (src/core/core_int.h). */
#include "core/core_int.h"
#include "kopt/proc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kopt__is_runnable(const char *path, void *arg)
{
    struct stat st;

    (void)arg;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int kopt__is_readable(const char *path, void *arg)
{
    struct stat st;

    (void)arg;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

char *kopt__absolute(const char *path)
{
    char *r = realpath(path, NULL);

    return r ? r : strdup(path);
}

/* The path a place stands for (malloc'd), or NULL when it does not apply here. */
static char *place_path(const kopt__shipped_place *pl)
{
    const char *exe = kopt_self_exe(), *lib = kopt_self_lib(), *base;
    char *dir, *p;

    switch (pl->at) {
    case KOPT__AT_PATH:
        return pl->path ? strdup(pl->path) : NULL;
    case KOPT__AT_EXE:
        base = strrchr(exe, '/');
        return strcmp(base ? base + 1 : exe, pl->path) == 0 ? strdup(exe) : NULL;
    case KOPT__AT_LIB:
        return lib ? strdup(lib) : NULL;
    case KOPT__AT_EXE_DIR:
    case KOPT__AT_LIB_DIR:
        base = pl->at == KOPT__AT_EXE_DIR ? exe : lib;
        if (!base || !(dir = kopt_path_dir(base)))
            return NULL;
        p = kopt_path_join(dir, pl->path);
        free(dir);
        return p;
    }
    return NULL;
}

/* Look at `p`: its absolute path (malloc'd) when it fits; otherwise NULL, and `p` goes on
 * the list of places looked at unless `quiet`. */
static char *look(const kopt__shipped_spec *spec, kopt_buf *looked, const char *p, int quiet)
{
    if (spec->fits(p, spec->arg))
        return kopt__absolute(p);
    if (!quiet)
        kopt_buf_printf(looked, "%s%s", looked->len ? ", " : "", p);
    return NULL;
}

kopt_status kopt__find_shipped(kopt_ctx *ctx, const kopt__shipped_spec *spec, char **path,
                               const char **source)
{
    const char *env = spec->env ? getenv(spec->env) : NULL, *src = NULL;
    kopt_buf looked = KOPT_BUF_INIT;
    char *found = NULL;

    *path = NULL;
    if (env && env[0]) {
        if (!(found = look(spec, &looked, env, 0)) && spec->unfit) {
            kopt_buf_free(&looked);
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s=%s %s", spec->env, env, spec->unfit);
        }
        src = spec->env;
    }
    for (int i = 0; i < spec->nplaces && !found; i++) {
        char *p = place_path(&spec->places[i]);
        if (p && (found = look(spec, &looked, p, spec->places[i].quiet)))
            src = spec->places[i].source;
        free(p);
    }
    if (!found) {
        if (spec->what)
            kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no %s found (looked at %s); %s", spec->what,
                        kopt_buf_cstr(&looked), spec->hint);
        kopt_buf_free(&looked);
        return KOPT_E_NOT_FOUND;
    }
    kopt_buf_free(&looked);
    *path = found;
    if (source)
        *source = src;
    return KOPT_OK;
}
