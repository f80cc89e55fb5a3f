/* Internal: the backend table, the shared HTTP/retry/price/parse helpers of src/llm/. */
#ifndef KOPT_LLM_INT_H
#define KOPT_LLM_INT_H

#include "kopt/llm.h"

#include <stddef.h>

/* Copy `in` (NULL: defaults) into *out with every default filled in. Backends get the
 * resolved options. */
void kopt__llm_options_resolve(kopt_llm_options *out, const kopt_llm_options *in);

/* A backend: one file each (openai.c, anthropic.c, command.c, replay.c), one line in the
 * table of client.c. `call` runs on several threads at once (kopt_llm_call_many) and must
 * touch only its own reply and thread-safe state; it never fails: every problem becomes an
 * outcome with a message in out->error. */
typedef struct kopt__llm_backend_i {
    const char *name;
    int api_version;          /* KOPT_LLM_API_VERSION */
    /* `arg` is the spec after "name:". *model gets the model asked for (caller frees). */
    kopt_status (*open)(void **state, kopt_ctx *ctx, const char *arg, const kopt_llm_options *o,
                        char **model);
    void (*call)(void *state, const kopt_llm_request *rq, const char *request_json,
                 kopt_llm_reply *out);
    void (*close)(void *state);
} kopt__llm_backend_i;

extern const kopt__llm_backend_i kopt__llm_openai;
extern const kopt__llm_backend_i kopt__llm_anthropic;
extern const kopt__llm_backend_i kopt__llm_command;
extern const kopt__llm_backend_i kopt__llm_replay;

/* Split "name:arg" (spaces around kept in arg). KOPT_E_INVALID naming the problem. */
kopt_status kopt__llm_spec_split(kopt_ctx *ctx, const char *spec, char *name, size_t name_cap,
                                 const char **arg);

/* ---- requests (request.c) ---------------------------------------------------------------- */
/* "MODEL[@BASE_URL]": *model and *base_url (NULL when none) are caller-owned. */
kopt_status kopt__llm_split_model_url(kopt_ctx *ctx, const char *backend, const char *arg,
                                      char **model, char **base_url);

/* The request's messages as a JSON array of {"role", "content"}, led by the system prompt as
 * a "system" message when `system_first` (OpenAI's shape). NULL when out of memory. */
struct json_t *kopt__llm_messages_json(const kopt_llm_request *rq, int system_first);
/* A provider's request body: {"model", "messages" (kopt__llm_messages_json), max_key:
 * max_tokens (1024 when 0), "temperature" (when >= 0)}, plus "system" as a member when not
 * `system_first`. The body as compact JSON (caller frees); NULL when out of memory. */
char *kopt__llm_body_json(const kopt_llm_request *rq, const char *model, int system_first,
                          const char *max_key);
/* The request's max_tokens, 1024 when it says none (0). */
int kopt__llm_max_tokens(const kopt_llm_request *rq);

/* ---- replies (reply.c) ------------------------------------------------------------------ */
/* 1 when s[0..n) is valid UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF). */
int kopt__llm_utf8_valid(const char *s, size_t n);
/* Set out->outcome and out->error ("backend: message", one line, printf-style). */
void kopt__llm_fail(kopt_llm_reply *out, kopt_llm_outcome o, const char *fmt, ...)
    KOPT_PRINTF(3, 4);
/* Replace out->X with a copy of s (NULL allowed). */
void kopt__llm_set_str(char **dst, const char *s);
/* The provider's error message in an error body (OpenAI {"error":{"message"}}, Anthropic
 * {"type":"error","error":{"type","message"}}, a bare string, or the body's first line),
 * one line, at most cap - 1 bytes; "" for an empty body. */
void kopt__llm_error_message(const char *body, size_t len, char *msg, size_t cap);
/* Replace every occurrence of `secret` in *s with "[redacted]" (no-op for short secrets). */
void kopt__llm_scrub(char **s, const char *secret);

/* The body as a JSON object, or NULL with out failed (BAD_UTF8, MALFORMED, or HTTP_ERROR for
 * an error object in a 2xx body); `name` prefixes the message. The caller decrefs. */
struct json_t;
struct json_t *kopt__llm_parse_body(const char *name, const char *body, size_t len,
                                    kopt_llm_reply *out);
/* A non-negative integer member of `o` (0 when absent or not one). */
int64_t kopt__llm_count(struct json_t *o, const char *key);

/* Parse a 2xx body into `out` (text, finish_reason, model, usage, outcome). */
void kopt__llm_openai_parse(const char *body, size_t len, kopt_llm_reply *out);
void kopt__llm_anthropic_parse(const char *body, size_t len, kopt_llm_reply *out);
/* The command backend's standard output: JSON {"text", "usage", ...} or plain text. */
void kopt__llm_command_parse(const char *stdout_text, size_t len, kopt_llm_reply *out);

/* ---- retries (retry.c) -------------------------------------------------------------------- */
/* Whether an HTTP status is worth another try: 408, 409, 425, 429, 5xx. */
int kopt__llm_status_retryable(int http_status);
/* The wait before retry number `retry` (0 = the first retry): `retry_after_s` when the
 * server said one (>= 0), else base * 2^retry scaled by a jitter factor in [0.5, 1) from
 * u in [0, 1), capped at max_s. */
double kopt__llm_backoff_s(double base_s, double max_s, int retry, double retry_after_s, double u);
/* A Retry-After value in seconds: delta-seconds or an HTTP date (relative to `now`, a Unix
 * time); -1 when absent or unreadable. */
double kopt__llm_parse_retry_after(const char *value, double now);
/* A uniform number in [0, 1) from a xorshift state (thread-safe with a private state). */
double kopt__llm_uniform(uint64_t *state);

/* ---- HTTP (http.c) -------------------------------------------------------------------------- */
/* An HTTP dialect: how a provider builds its request and reads its reply. */
typedef struct kopt__llm_dialect {
    const char *name;                     /* "openai" */
    const char *default_base;             /* "https://api.openai.com/v1" */
    const char *path;                     /* appended to the base: "/chat/completions" */
    const char *key_env;                  /* "OPENAI_API_KEY" */
    int key_required;                     /* 1: opening without a key fails */
    const char *key_header;               /* the key follows it: "Authorization: Bearer " */
    const char *extra_header;             /* sent always ("anthropic-version: ..."); or NULL */
    /* The request body (caller frees) for `model`, sent to `url`. NULL when out of memory. */
    char *(*build)(const kopt_llm_request *rq, const char *model, const char *url);
    void (*parse)(const char *body, size_t len, kopt_llm_reply *out);
} kopt__llm_dialect;

/* Open/call/close of an HTTP backend speaking `d` (openai.c and anthropic.c wire these). */
kopt_status kopt__llm_http_open(void **state, kopt_ctx *ctx, const kopt__llm_dialect *d,
                                const char *arg, const kopt_llm_options *o, char **model);
void kopt__llm_http_call(void *state, const kopt_llm_request *rq, const char *request_json,
                         kopt_llm_reply *out);
void kopt__llm_http_close(void *state);

/* ---- prices (price.c) ----------------------------------------------------------------------- */
typedef struct kopt__llm_prices kopt__llm_prices;
/* The built-in table plus `path` (NULL: none); KOPT_E_INVALID naming a bad entry. */
kopt_status kopt__llm_prices_load(kopt__llm_prices **out, kopt_ctx *ctx, const char *path);
int kopt__llm_prices_find(const kopt__llm_prices *t, const char *model, kopt_llm_price *out);
void kopt__llm_prices_free(kopt__llm_prices *t);

/* ---- budgets (budget.c) --------------------------------------------------------------------- */
typedef struct kopt__llm_budget {
    int64_t max_calls, max_tokens;
    double max_cost;
    kopt_llm_budget_state spent;
} kopt__llm_budget;
/* Reserve a call: 1 when the budget allows one more (counted), 0 with spent.why set. */
int kopt__llm_budget_reserve(kopt__llm_budget *b);
/* Account a finished call's usage and cost. */
void kopt__llm_budget_add(kopt__llm_budget *b, const kopt_llm_usage *u, double cost,
                          int cost_known);
/* Whether a budget is spent (fills spent.why). */
int kopt__llm_budget_exhausted(kopt__llm_budget *b);

#endif
