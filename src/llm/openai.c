/* The "openai" backend: the Chat Completions API, as OpenAI serves it and as every
 * OpenAI-compatible server does (vLLM, SGLang, llama.cpp, Ollama, LM Studio, OpenRouter).
 * Spec: openai:MODEL[@BASE_URL]; key from $OPENAI_API_KEY (or options.key_env). */
#include "llm_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static char *build(const kopt_llm_request *rq, const char *model, const char *url)
{
    /* OpenAI's own API wants max_completion_tokens (its reasoning models refuse max_tokens);
     * compatible servers know max_tokens */
    return kopt__llm_body_json(rq, model, 1, strstr(url, "://api.openai.com/")
                                                 ? "max_completion_tokens" : "max_tokens");
}

/* The text of a message's content: a string, or an array of parts ({"type":"text","text"}). */
static char *content_text(json_t *c)
{
    kopt_buf b = KOPT_BUF_INIT;
    size_t i;
    json_t *part;

    if (json_is_string(c))
        return strdup(json_string_value(c));
    if (!json_is_array(c))
        return NULL;
    json_array_foreach(c, i, part) {
        const char *t = json_string_value(json_object_get(part, "text"));
        if (t)
            kopt_buf_append(&b, t, strlen(t));
    }
    return b.ptr ? kopt_buf_detach(&b) : NULL;
}

void kopt__llm_openai_parse(const char *body, size_t len, kopt_llm_reply *out)
{
    json_t *j = kopt__llm_parse_body("openai", body, len, out), *choices, *ch, *msg, *u;
    const char *fr, *refusal;
    char *text = NULL;

    if (!j)
        return;
    kopt__llm_set_str(&out->model, json_string_value(json_object_get(j, "model")));
    u = json_object_get(j, "usage");
    out->usage.prompt_tokens = kopt__llm_count(u, "prompt_tokens");
    out->usage.completion_tokens = kopt__llm_count(u, "completion_tokens");
    out->usage.cached_tokens =
        kopt__llm_count(json_object_get(u, "prompt_tokens_details"), "cached_tokens");
    choices = json_object_get(j, "choices");
    if (!json_is_array(choices)) {
        kopt__llm_fail(out, KOPT_LLM_MALFORMED, "openai: the reply has no \"choices\" array");
        goto cleanup;
    }
    if (json_array_size(choices) == 0) {
        kopt__llm_fail(out, KOPT_LLM_EMPTY, "openai: the reply has no choices");
        goto cleanup;
    }
    ch = json_array_get(choices, 0);
    msg = json_object_get(ch, "message");
    if (!json_is_object(ch) || !json_is_object(msg)) {
        kopt__llm_fail(out, KOPT_LLM_MALFORMED, "openai: the first choice has no message");
        goto cleanup;
    }
    fr = json_string_value(json_object_get(ch, "finish_reason"));
    kopt__llm_set_str(&out->finish_reason, fr);
    refusal = json_string_value(json_object_get(msg, "refusal"));
    text = content_text(json_object_get(msg, "content"));
    if (refusal && refusal[0]) {
        kopt__llm_set_str(&out->text, refusal);
        kopt__llm_fail(out, KOPT_LLM_REFUSAL, "openai: the model refused: %.200s", refusal);
    } else if (fr && strcmp(fr, "content_filter") == 0) {
        kopt__llm_set_str(&out->text, text);
        kopt__llm_fail(out, KOPT_LLM_REFUSAL, "openai: the reply was withheld by the content "
                       "filter (finish_reason content_filter)");
    } else if (fr && strcmp(fr, "length") == 0) {
        kopt__llm_set_str(&out->text, text);
        kopt__llm_fail(out, KOPT_LLM_LENGTH, "openai: the reply was cut at max_tokens "
                       "(finish_reason length, %lld completion tokens)",
                       (long long)out->usage.completion_tokens);
    } else if (!text || !text[0]) {
        kopt__llm_fail(out, KOPT_LLM_EMPTY, "openai: the reply has no text (finish_reason %s)",
                       fr ? fr : "none");
    } else {
        out->outcome = KOPT_LLM_OK;
        out->text = text;
        text = NULL;
    }
cleanup:
    free(text);
    json_decref(j);
}

static const kopt__llm_dialect dialect = {
    "openai", "https://api.openai.com/v1", "/chat/completions", "OPENAI_API_KEY", 1,
    "Authorization: Bearer ", NULL, build, kopt__llm_openai_parse,
};

static kopt_status open_openai(void **state, kopt_ctx *ctx, const char *arg,
                               const kopt_llm_options *o, char **model)
{
    return kopt__llm_http_open(state, ctx, &dialect, arg, o, model);
}

const kopt__llm_backend_i kopt__llm_openai = {
    "openai", KOPT_LLM_API_VERSION, open_openai, kopt__llm_http_call, kopt__llm_http_close,
};
