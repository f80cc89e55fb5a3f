/* Finding CUTLASS/CuTe headers (--cutlass, $CUTLASS_PATH, the nvidia-cutlass Python
 * package) and reading their version. Stands on core alone, so the compiler (src/cuda)
 * can ask for the include folder and version of a candidate that uses CuTe. */
#include "kopt/cute.h"
#include "kopt/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kopt_cutlass_used(const char *source)
{
    static const char *const pats[] = {"<cute/", "<cutlass/", "\"cute/", "\"cutlass/", NULL};

    for (const char *const *p = pats; source && *p; p++) {
        const char *s = source;
        while ((s = strstr(s, *p))) {
            /* only in an #include line */
            const char *b = s;
            while (b > source && b[-1] != '\n')
                b--;
            while (*b == ' ' || *b == '\t')
                b++;
            if (*b == '#' && strstr(b, "include") && strstr(b, "include") < s)
                return 1;
            s++;
        }
    }
    return 0;
}

/* The value of `#define NAME <int>` in text, or -1. */
static int define_int(const char *text, const char *name)
{
    const char *s = text;
    size_t n = strlen(name);

    while ((s = strstr(s, "#define "))) {
        s += 8;
        while (*s == ' ')
            s++;
        if (strncmp(s, name, n) == 0 && (s[n] == ' ' || s[n] == '\t'))
            return atoi(s + n);
    }
    return -1;
}

kopt_status kopt_cutlass_version(kopt_ctx *ctx, const char *include_dir, char out[32])
{
    char *path = kopt_path_join(include_dir, "cutlass/version.h"), *text = NULL;
    size_t len = 0;
    kopt_status rc;
    int major, minor, patch;

    out[0] = '\0';
    if (!path)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "path");
    if ((rc = kopt_file_read(ctx, path, &text, &len)) != KOPT_OK)
        goto cleanup;
    major = define_int(text, "CUTLASS_MAJOR");
    minor = define_int(text, "CUTLASS_MINOR");
    patch = define_int(text, "CUTLASS_PATCH");
    if (major < 0 || minor < 0 || patch < 0) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: no CUTLASS_MAJOR/MINOR/PATCH defines", path);
        goto cleanup;
    }
    snprintf(out, 32, "%u.%u.%u", (unsigned)major % 10000u, (unsigned)minor % 10000u,
             (unsigned)patch % 10000u);
cleanup:
    free(path);
    free(text);
    return rc;
}

/* The include folder under `dir`, trying the layouts a CUTLASS install comes in; its
 * absolute path goes to `out`. */
static int resolve(const char *dir, char out[4096])
{
    static const char *const subs[] = {"", "include", "source/include",
                                       "cutlass_library/source/include", NULL};

    for (const char *const *s = subs; dir && dir[0] && *s; s++) {
        char *inc = kopt_path_join(dir, *s), *probe = inc ? kopt_path_join(inc, "cutlass/version.h")
                                                          : NULL;
        char *abs = probe && access(probe, R_OK) == 0 ? realpath(inc, NULL) : NULL;
        int ok = abs && strlen(abs) < 4096 &&
                 snprintf(out, 4096, "%s", abs) > 0;
        free(inc);
        free(probe);
        free(abs);
        if (ok)
            return 1;
    }
    return 0;
}

/* The nvidia-cutlass package's folder, as python3 sees it (without importing it). */
static char *python_package_dir(kopt_ctx *ctx)
{
    const char *py = getenv("KOPT_PYTHON");
    const char *argv[] = {py && py[0] ? py : "python3", "-c",
                          "import importlib.util as u\n"
                          "s = u.find_spec('cutlass_library')\n"
                          "print(s.submodule_search_locations[0] if s else '')", NULL};
    char *out = NULL;
    int code = -1;

    if (kopt_proc_run(ctx, argv, 30, &code, &out) != KOPT_OK || code != 0) {
        free(out);
        return NULL;
    }
    out[strcspn(out, "\r\n")] = '\0';
    if (!out[0]) {
        free(out);
        return NULL;
    }
    return out;
}

kopt_status kopt_cutlass_find(kopt_cutlass *out, kopt_ctx *ctx, const char *dir)
{
    const char *env = getenv("CUTLASS_PATH");
    char *pkg = NULL, *ex = NULL, *root = NULL;
    kopt_status rc;

    memset(out, 0, sizeof(*out));
    if (dir) {
        if (!resolve(dir, out->include_dir))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "--cutlass %s: no cutlass/version.h in it, "
                               "its include/, source/include/ or cutlass_library/source/include/",
                               dir);
        snprintf(out->source, sizeof(out->source), "--cutlass");
    } else if (env && env[0]) {
        if (!resolve(env, out->include_dir))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "CUTLASS_PATH=%s: no cutlass/version.h in "
                               "it, its include/, source/include/ or "
                               "cutlass_library/source/include/", env);
        snprintf(out->source, sizeof(out->source), "CUTLASS_PATH");
    } else {
        pkg = python_package_dir(ctx);
        if (!pkg || !resolve(pkg, out->include_dir)) {
            free(pkg);
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no CUTLASS headers: not given (--cutlass), "
                               "$CUTLASS_PATH unset, and python3 has no nvidia-cutlass package "
                               "(pip install nvidia-cutlass)");
        }
        free(pkg);
        snprintf(out->source, sizeof(out->source), "python package");
    }
    if ((rc = kopt_cutlass_version(ctx, out->include_dir, out->version)) != KOPT_OK)
        return rc;
    /* examples sit beside include/ in a checkout and in the package's source/ */
    root = kopt_path_dir(out->include_dir);
    ex = root ? kopt_path_join(root, "examples") : NULL;
    if (ex && access(ex, R_OK) == 0)
        snprintf(out->examples_dir, sizeof(out->examples_dir), "%s", ex);
    free(root);
    free(ex);
    return KOPT_OK;
}
