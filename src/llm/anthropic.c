/* The "anthropic" backend: the Messages API (POST /v1/messages, x-api-key and
 * anthropic-version headers, content blocks, stop_reason, {"type":"error"} bodies).
 * Spec: anthropic:MODEL[@BASE_URL]; key from $ANTHROPIC_API_KEY (or options.key_env). */
#include "llm_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static char *build(const kopt_llm_request *rq, const char *model, const char *url)
{
    (void)url;
    return kopt__llm_body_json(rq, model, 0, "max_tokens");
}

void kopt__llm_anthropic_parse(const char *body, size_t len, kopt_llm_reply *out)
{
    json_t *j = kopt__llm_parse_body("anthropic", body, len, out), *content, *block, *u;
    kopt_buf text = KOPT_BUF_INIT;
    const char *stop;
    size_t i;

    if (!j)
        return;
    kopt__llm_set_str(&out->model, json_string_value(json_object_get(j, "model")));
    u = json_object_get(j, "usage");
    out->usage.cached_tokens = kopt__llm_count(u, "cache_read_input_tokens");
    /* input_tokens counts only what was neither read from nor written to the cache */
    out->usage.prompt_tokens = kopt__llm_count(u, "input_tokens") + out->usage.cached_tokens +
                               kopt__llm_count(u, "cache_creation_input_tokens");
    out->usage.completion_tokens = kopt__llm_count(u, "output_tokens");
    stop = json_string_value(json_object_get(j, "stop_reason"));
    kopt__llm_set_str(&out->finish_reason, stop);
    content = json_object_get(j, "content");
    if (!json_is_array(content)) {
        kopt__llm_fail(out, KOPT_LLM_MALFORMED, "anthropic: the reply has no \"content\" array");
        goto cleanup;
    }
    json_array_foreach(content, i, block) {
        const char *t = json_string_value(json_object_get(block, "text"));
        const char *type = json_string_value(json_object_get(block, "type"));
        if (t && type && strcmp(type, "text") == 0)
            kopt_buf_append(&text, t, strlen(t));
    }
    kopt__llm_set_str(&out->text, kopt_buf_cstr(&text));
    if (stop && strcmp(stop, "refusal") == 0)
        kopt__llm_fail(out, KOPT_LLM_REFUSAL, "anthropic: the model refused (stop_reason "
                       "refusal)");
    else if (stop && strcmp(stop, "max_tokens") == 0)
        kopt__llm_fail(out, KOPT_LLM_LENGTH, "anthropic: the reply was cut at max_tokens "
                       "(stop_reason max_tokens, %lld output tokens)",
                       (long long)out->usage.completion_tokens);
    else if (!text.len)
        kopt__llm_fail(out, KOPT_LLM_EMPTY, "anthropic: the reply has no text (stop_reason %s)",
                       stop ? stop : "none");
    else
        out->outcome = KOPT_LLM_OK;
cleanup:
    kopt_buf_free(&text);
    json_decref(j);
}

static const kopt__llm_dialect dialect = {
    "anthropic", "https://api.anthropic.com", "/v1/messages", "ANTHROPIC_API_KEY", 1,
    "x-api-key: ", "anthropic-version: 2023-06-01", build, kopt__llm_anthropic_parse,
};

static kopt_status open_anthropic(void **state, kopt_ctx *ctx, const char *arg,
                                  const kopt_llm_options *o, char **model)
{
    return kopt__llm_http_open(state, ctx, &dialect, arg, o, model);
}

const kopt__llm_backend_i kopt__llm_anthropic = {
    "anthropic", KOPT_LLM_API_VERSION, open_anthropic, kopt__llm_http_call,
    kopt__llm_http_close,
};
