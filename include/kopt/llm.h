/*
 * kopt/llm.h: language-model clients behind one interface. A client is opened from a spec
 * string ("openai:MODEL[@BASE_URL]", "anthropic:MODEL[@BASE_URL]", "command:PROGRAM [ARGS]",
 * "replay:FILE|RUN[@order]"); it sends requests one at a time or several in flight at once,
 * retries what is worth retrying, keeps budgets (calls, tokens, cost), and hands every
 * exchange to a record hook the caller installs (the store's kopt_store_llm_record).
 * Replies are untrusted input: each gets a typed outcome, never a crash.
 *
 * Ownership: kopt_llm_open() returns a client owned by the caller (kopt_llm_close). The
 * strings in a kopt_llm_reply are owned by the reply and released by kopt_llm_reply_clear();
 * a request's strings are borrowed for the duration of the call. Strings named by options
 * (key_env, prices_path) are copied at open. API keys are read from the environment at open
 * and never appear in a reply, an error message, a record or a log line.
 * A client may be used by one thread at a time; kopt_llm_call_many runs its requests on
 * threads of its own, calls the record hook from the calling thread, in request order.
 */
#ifndef KOPT_LLM_H
#define KOPT_LLM_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_LLM_API_VERSION 1

/* What became of one request. Everything but OK and LENGTH means "no usable text". */
typedef enum kopt_llm_outcome {
    KOPT_LLM_OK = 0,          /* a complete reply */
    KOPT_LLM_LENGTH,          /* cut at max_tokens: text is the partial reply */
    KOPT_LLM_REFUSAL,         /* the model refused (refusal field, content filter) */
    KOPT_LLM_EMPTY,           /* no choices, no content */
    KOPT_LLM_MALFORMED,       /* the body is not JSON, or not the provider's shape */
    KOPT_LLM_BAD_UTF8,        /* the body or the text is not valid UTF-8 */
    KOPT_LLM_TOO_LARGE,       /* the body passed the size limit (options.max_reply_bytes) */
    KOPT_LLM_TRUNCATED,       /* the connection closed before the whole body came */
    KOPT_LLM_HTTP_ERROR,      /* a status not retried (400, 401, 403, 404, ...) */
    KOPT_LLM_RATE_LIMITED,    /* 429, still after the retries */
    KOPT_LLM_SERVER_ERROR,    /* 5xx, still after the retries */
    KOPT_LLM_TIMEOUT,         /* no (complete) answer in time, still after the retries */
    KOPT_LLM_NETWORK,         /* cannot connect, connection reset, TLS failure */
    KOPT_LLM_COMMAND_FAILED,  /* command backend: the program failed or cannot run */
    KOPT_LLM_REPLAY_MISS,     /* replay backend: no recorded exchange answers the request */
    KOPT_LLM_BUDGET,          /* not sent: a budget is spent */
    KOPT_LLM_OUTCOME_COUNT
} kopt_llm_outcome;

/* "ok", "length", "refusal", ... (stored, printed, in JSON). Never NULL. */
const char *kopt_llm_outcome_name(kopt_llm_outcome o);
/* The outcome of a name; -1 when unknown. */
int kopt_llm_outcome_parse(const char *name);

typedef struct kopt_llm_message {
    const char *role;         /* "user" or "assistant" */
    const char *content;
} kopt_llm_message;

typedef struct kopt_llm_request {
    int version;
    const char *system;       /* NULL: none */
    const kopt_llm_message *messages;
    int nmessages;
    int max_tokens;           /* 0: 1024 */
    double temperature;       /* < 0: the provider's default */
    const char *role;         /* who asks: "planner", "coder", "debugger", "ping"; recorded */
    const char *tag;          /* the caller's label (a tree node, say); recorded; may be NULL */
    int64_t run_id;           /* recorded; 0: none (stored as NULL) */
    /* version 2: */
    const char *name;         /* the prompt's name, as manual mode names its file
                               * ("e1-p1-planner", "e1-p1-coder.turn2"); in the request JSON
                               * (command backends, the record), not in its hash; may be NULL */
} kopt_llm_request;
#define KOPT_LLM_REQUEST_INIT {2, NULL, NULL, 0, 0, -1.0, NULL, NULL, 0, NULL}

typedef struct kopt_llm_usage {
    int64_t prompt_tokens;    /* all input tokens, cached ones included */
    int64_t completion_tokens;
    int64_t cached_tokens;    /* input tokens served from the provider's cache (0: none said) */
} kopt_llm_usage;

typedef struct kopt_llm_reply {
    kopt_llm_outcome outcome;
    char *text;               /* the reply (partial for LENGTH, the refusal for REFUSAL); "" */
    char *finish_reason;      /* as the provider said it ("stop", "length", "end_turn", ...) */
    char *model;              /* the model that answered, as the provider names it */
    char *error;              /* one line: backend, HTTP status, provider's message; NULL if OK */
    kopt_llm_usage usage;
    int http_status;          /* last HTTP status; 0 when none (command, replay, no answer) */
    int attempts;             /* tries made (1 + retries); 0 when not sent */
    double latency_ms;        /* wall time of the whole call, retries and waits included */
    double cost;              /* estimated cost in USD (0 when the price is unknown) */
    int cost_known;           /* 1 when the model was in the price table */
    char request_hash[65];    /* kopt_llm_request_hash of the request */
} kopt_llm_reply;

/* Release a reply's strings and zero it (safe on a zeroed reply). */
void kopt_llm_reply_clear(kopt_llm_reply *r);

/* One exchange, as handed to the record hook (everything borrowed for the call). */
typedef struct kopt_llm_exchange {
    int64_t run_id;           /* 0: none */
    const char *role;         /* "" when the request had none */
    const char *tag;          /* "" when none */
    const char *backend;      /* "openai", "anthropic", "command", "replay" */
    const char *model;        /* the model asked for (the reply's model may differ) */
    const char *request_json; /* the request as kopt sent it, minus headers (no key) */
    const kopt_llm_reply *reply;
} kopt_llm_exchange;

/* Record hook: called once for every request that was sent (not for budget refusals). A
 * failure is logged on the context and does not fail the call. */
typedef kopt_status (*kopt_llm_record_fn)(void *user, kopt_ctx *ctx, const kopt_llm_exchange *x);

/* Replay loader (for "replay:RUN"): the exchanges of stored run `run_id` as JSONL (one
 * kopt_llm_exchange_json object per line, oldest first) in *jsonl, caller-owned (free()). */
typedef kopt_status (*kopt_llm_load_fn)(void *user, kopt_ctx *ctx, int64_t run_id, char **jsonl);

typedef struct kopt_llm_options {
    int version;
    double connect_timeout_s; /* 0: 10 s */
    double timeout_s;         /* per attempt, whole transfer (or the command's run); 0: 300 s */
    int max_retries;          /* retries after the first try; < 0: 4 */
    double backoff_base_s;    /* first backoff; 0: 1 s (doubles each retry, with jitter) */
    double backoff_max_s;     /* no wait longer than this; a Retry-After past it stops; 0: 60 s */
    int parallel;             /* requests in flight at once (call_many); 0: 4 */
    int64_t max_calls;        /* budgets; 0: unlimited. Calls = requests sent. */
    int64_t max_tokens_total; /* prompt + completion tokens over the client's life */
    double max_cost;          /* estimated USD */
    const char *key_env;      /* the key's environment variable; NULL: the backend's own */
    const char *prices_path;  /* a JSON price table to add (over the built-in one); NULL: none */
    size_t max_reply_bytes;   /* 0: 8 MiB */
    uint64_t seed;            /* for the backoff jitter; 0: from the clock */
    kopt_llm_record_fn record; void *record_user;   /* NULL: exchanges are not recorded */
    kopt_llm_load_fn load_run; void *load_user;     /* for "replay:RUN"; NULL: RUN unsupported */
} kopt_llm_options;
#define KOPT_LLM_OPTIONS_INIT {1, 0, 0, -1, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, NULL, NULL, \
                               NULL, NULL}

typedef struct kopt_llm_client kopt_llm_client;

/* Open a client from `spec` (NULL or "": $KOPT_LLM). KOPT_E_INVALID for a bad spec or an
 * unknown backend, KOPT_E_NOT_FOUND for a missing key, file or run, the message naming it.
 * `o` may be NULL (defaults). */
kopt_status kopt_llm_open(kopt_llm_client **out, kopt_ctx *ctx, const char *spec,
                          const kopt_llm_options *o);
void kopt_llm_close(kopt_llm_client *c);

/* The backend's name ("openai") and the model asked for. Borrowed, live as the client. */
const char *kopt_llm_backend(const kopt_llm_client *c);
const char *kopt_llm_model(const kopt_llm_client *c);

/* Send one request. *out is filled whatever happens (clear it with kopt_llm_reply_clear).
 * Returns KOPT_OK when out->outcome is KOPT_LLM_OK; otherwise KOPT_E_TIMEOUT (timeout),
 * KOPT_E_INVALID (a bad request) or KOPT_E_ERROR, with out->error on the context. */
kopt_status kopt_llm_call(kopt_llm_client *c, kopt_ctx *ctx, const kopt_llm_request *rq,
                          kopt_llm_reply *out);
/* Send n requests, at most options.parallel in flight at once; out[i] answers rq[i]. Returns
 * KOPT_OK when every request got its outcome (look at each out[i].outcome), an error only
 * for bad arguments or no memory. */
kopt_status kopt_llm_call_many(kopt_llm_client *c, kopt_ctx *ctx, const kopt_llm_request *rq,
                               int n, kopt_llm_reply *out);
/* As kopt_llm_call_many, for requests asked together by design (a search step's proposals,
 * as many as its width times --proposals): all n in flight at once, at most
 * KOPT_LLM_TOGETHER_MAX, unless options.parallel was given, which stays the cap. */
#define KOPT_LLM_TOGETHER_MAX 16
kopt_status kopt_llm_call_together(kopt_llm_client *c, kopt_ctx *ctx,
                                   const kopt_llm_request *rq, int n, kopt_llm_reply *out);

/* What the client has spent, and whether a budget stops the next call. */
typedef struct kopt_llm_budget_state {
    int64_t calls;            /* requests sent (or in flight) */
    int64_t prompt_tokens, completion_tokens, cached_tokens;
    int64_t tokens_total;     /* prompt + completion */
    double cost;              /* estimated USD */
    int cost_unknown_calls;   /* calls whose model had no price */
    int exhausted;            /* 1: the next call would be refused */
    char why[128];            /* which budget, when exhausted ("--max-llm-calls 10 reached") */
} kopt_llm_budget_state;
void kopt_llm_budget(kopt_llm_client *c, kopt_llm_budget_state *out);

/* The canonical JSON of a request (what is hashed and recorded; the model is included but
 * not hashed), caller-owned. NULL when out of memory. */
char *kopt_llm_request_json(const kopt_llm_request *rq, const char *model);
/* SHA-256 (hex) of the request's system prompt, messages, max_tokens, temperature, role:
 * the key by which replay finds an answer. */
void kopt_llm_request_hash(const kopt_llm_request *rq, char out[65]);
/* One exchange as a JSON object on one line (the replay file format), caller-owned. */
char *kopt_llm_exchange_json(const kopt_llm_exchange *x);
/* A record hook that appends kopt_llm_exchange_json lines to the FILE* given as user. */
kopt_status kopt_llm_record_jsonl(void *file, kopt_ctx *ctx, const kopt_llm_exchange *x);

/* ---- prices ------------------------------------------------------------------------------ */
/* USD per million tokens. */
typedef struct kopt_llm_price {
    double input, cached_input, output;
} kopt_llm_price;
/* The price of `model` (the longest matching prefix in the client's table: built-in entries
 * plus options.prices_path). Returns 1 and fills *out when known, 0 when not. */
int kopt_llm_price_of(const kopt_llm_client *c, const char *model, kopt_llm_price *out);
/* The estimated cost of `u` at price `p`, USD. */
double kopt_llm_cost(const kopt_llm_price *p, const kopt_llm_usage *u);

#ifdef __cplusplus
}
#endif
#endif
