/*
 * The MCP tools' argument helpers (tools.c, tools_optimize.c, tools_bench.c): a call's
 * string, integer and boolean arguments, a library JSON text as an object, whether a path
 * is a folder, and arguments.gpus parsed as the command line's --gpus (errors name the
 * field).
 */
#include "mcp_int.h"

#include "kopt/scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

const char *kopt__mcp_arg_str(kopt__mcp_call *c, const char *k)
{
    return json_string_value(json_object_get(c->args, k));
}

json_int_t kopt__mcp_arg_int(kopt__mcp_call *c, const char *k, json_int_t dflt)
{
    json_t *v = json_object_get(c->args, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

int kopt__mcp_arg_bool(kopt__mcp_call *c, const char *k, int dflt)
{
    json_t *v = json_object_get(c->args, k);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

json_t *kopt__mcp_parsed(char *text)
{
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j ? j : json_object();
}

int kopt__mcp_is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

kopt_status kopt__mcp_gpus_arg(kopt__mcp_call *c, kopt_ctx *ctx, int count, int *gpus,
                               int max, int *n)
{
    const char *spec = kopt__mcp_arg_str(c, "gpus");
    char why[512];

    *n = 0;
    if (!spec)
        return KOPT_OK;
    if (kopt_scale_devices_parse(ctx, spec, count, gpus, max, n) != KOPT_OK) {
        snprintf(why, sizeof(why), "%s", kopt_errmsg(ctx));
        return kopt_seterr(ctx, KOPT_E_INVALID, "arguments.gpus: %s", why);
    }
    return KOPT_OK;
}
