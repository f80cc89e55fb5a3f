/* What the backends build a request from, shared with the client (client.c and the backends
 * call it; it calls neither): MODEL[@BASE_URL] in a spec, the messages array, a provider's
 * request body, the max_tokens default. */
#include "llm_int.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

kopt_status kopt__llm_split_model_url(kopt_ctx *ctx, const char *backend, const char *arg,
                                      char **model, char **base_url)
{
    const char *at = strstr(arg, "@http://");
    const char *ats = strstr(arg, "@https://");
    size_t n;

    *model = *base_url = NULL;
    if (!at || (ats && ats < at))
        at = ats;
    n = at ? (size_t)(at - arg) : strlen(arg);
    if (n == 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: no model in '%s' (want MODEL[@BASE_URL])",
                           backend, arg);
    for (size_t i = 0; i < n; i++)
        if (isspace((unsigned char)arg[i]) || iscntrl((unsigned char)arg[i]))
            return kopt_seterr(ctx, KOPT_E_INVALID, "%s: model name '%.*s' has a space or a "
                               "control character", backend, (int)n, arg);
    if (!(*model = strndup(arg, n)) || (at && !(*base_url = strdup(at + 1)))) {
        free(*model);
        *model = NULL;
        return kopt_seterr(ctx, KOPT_E_NOMEM, "%s", backend);
    }
    return KOPT_OK;
}

int kopt__llm_max_tokens(const kopt_llm_request *rq)
{
    return rq->max_tokens > 0 ? rq->max_tokens : 1024;
}

static int append_message(json_t *msgs, const char *role, const char *content)
{
    json_t *m = json_pack("{s:s, s:s}", "role", role, "content", content);
    return m && json_array_append_new(msgs, m) == 0 ? 0 : -1;
}

json_t *kopt__llm_messages_json(const kopt_llm_request *rq, int system_first)
{
    json_t *msgs = json_array();

    if (msgs && system_first && rq->system && append_message(msgs, "system", rq->system) != 0)
        goto fail;
    for (int i = 0; msgs && i < rq->nmessages; i++)
        if (append_message(msgs, rq->messages[i].role, rq->messages[i].content) != 0)
            goto fail;
    return msgs;
fail:
    json_decref(msgs);
    return NULL;
}

char *kopt__llm_body_json(const kopt_llm_request *rq, const char *model, int system_first,
                          const char *max_key)
{
    json_t *msgs = kopt__llm_messages_json(rq, system_first);
    json_t *o = msgs ? json_pack("{s:s, s:O, s:i}", "model", model, "messages", msgs, max_key,
                                 kopt__llm_max_tokens(rq)) : NULL;
    char *s = NULL;

    if (o && !system_first && rq->system)
        json_object_set_new(o, "system", json_string(rq->system));
    if (o && rq->temperature >= 0)
        json_object_set_new(o, "temperature", json_real(rq->temperature));
    if (o)
        s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(msgs);
    json_decref(o);
    return s;
}
