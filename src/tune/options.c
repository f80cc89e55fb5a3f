/*
 * src/tune/options.c: strategy hyper-parameters given as "k=v,k=v" (kopt_tune_option).
 * Every call checks the whole string, so the first option a strategy reads reports any
 * unknown key, a missing value or a bad number, naming it and listing the known keys.
 */
#include "kopt/tune.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "a, b, c" from a NULL-terminated list (truncated to fit). */
static void known_list(const char *const *known, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; known && known[i] && used + 1 < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", known[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (!buf[0])
        snprintf(buf, len, "none");
}

static int is_known(const char *const *known, const char *key)
{
    for (int i = 0; known && known[i]; i++)
        if (strcmp(known[i], key) == 0)
            return 1;
    return 0;
}

kopt_status kopt_tune_option(kopt_ctx *ctx, const char *options, const char *const *known,
                             const char *key, double def, double *out)
{
    const char *p = options;
    char names[512];
    int found = 0;

    *out = def;
    if (!options)
        return KOPT_OK;
    while (*p) {
        const char *item = p, *end = strchr(p, ','), *eq;
        char k[64], v[64];
        size_t klen, vlen;
        char *stop;
        double val;

        if (!end)
            end = p + strlen(p);
        p = *end ? end + 1 : end;
        while (item < end && isspace((unsigned char)*item))
            item++;
        if (item == end)
            continue;                          /* empty item: "a=1,,b=2" or trailing comma */
        eq = memchr(item, '=', (size_t)(end - item));
        if (!eq) {
            klen = (size_t)(end - item);
            return kopt_seterr(ctx, KOPT_E_INVALID,
                               "strategy option '%.*s' has no value (write KEY=VALUE)",
                               (int)(klen > 60 ? 60 : klen), item);
        }
        klen = (size_t)(eq - item);
        while (klen > 0 && isspace((unsigned char)item[klen - 1]))
            klen--;
        if (klen == 0)
            return kopt_seterr(ctx, KOPT_E_INVALID,
                               "strategy options '%s': an option has no name", options);
        if (klen >= sizeof(k))
            klen = sizeof(k) - 1;
        memcpy(k, item, klen);
        k[klen] = '\0';
        if (!is_known(known, k)) {
            known_list(known, names, sizeof(names));
            return kopt_seterr(ctx, KOPT_E_INVALID, "unknown strategy option '%s' (known: %s)",
                               k, names);
        }
        eq++;
        while (eq < end && isspace((unsigned char)*eq))
            eq++;
        vlen = (size_t)(end - eq);
        while (vlen > 0 && isspace((unsigned char)eq[vlen - 1]))
            vlen--;
        if (vlen >= sizeof(v))
            vlen = sizeof(v) - 1;
        memcpy(v, eq, vlen);
        v[vlen] = '\0';
        errno = 0;
        val = strtod(v, &stop);
        if (vlen == 0 || *stop != '\0' || errno == ERANGE || !isfinite(val))
            return kopt_seterr(ctx, KOPT_E_INVALID,
                               "strategy option '%s': '%s' is not a number", k, v);
        if (strcmp(k, key) == 0) {
            if (found)
                return kopt_seterr(ctx, KOPT_E_INVALID, "strategy option '%s' is given twice",
                                   k);
            found = 1;
            *out = val;
        }
    }
    return KOPT_OK;
}
