/* Unit tests of src/llm without a network: reply parsing (untrusted input), specs, retries,
 * prices, budgets, the command and replay backends, parallel calls, and the store's record
 * and replay hooks. */
#include "ktest.h"

#include "kopt/llm.h"
#include "kopt/store.h"
#include "../../src/llm/llm_int.h"

#include <math.h>
#include <time.h>

/* ---- helpers --------------------------------------------------------------------------- */

static kopt_llm_reply parse_openai(const char *body)
{
    kopt_llm_reply r = {0};
    r.http_status = 200;
    kopt__llm_openai_parse(body, strlen(body), &r);
    return r;
}

static kopt_llm_reply parse_anthropic(const char *body)
{
    kopt_llm_reply r = {0};
    r.http_status = 200;
    kopt__llm_anthropic_parse(body, strlen(body), &r);
    return r;
}

/* A request with one user message. */
static kopt_llm_request one(const kopt_llm_message *m)
{
    kopt_llm_request rq = KOPT_LLM_REQUEST_INIT;
    rq.messages = m;
    rq.nmessages = 1;
    rq.role = "coder";
    return rq;
}

/* A JSONL replay record answering `content` with `text` (usage p + c tokens). */
static void put_record(FILE *f, const char *content, const char *text, const char *model,
                       int64_t p, int64_t c)
{
    kopt_llm_message m = {"user", content};
    kopt_llm_request rq = one(&m);
    kopt_llm_reply r = {0};
    char *req = kopt_llm_request_json(&rq, model);
    kopt_llm_exchange x = {0, "coder", "", "openai", model, req, &r};

    r.outcome = KOPT_LLM_OK;
    r.text = (char *)text;
    r.model = (char *)model;
    r.usage.prompt_tokens = p;
    r.usage.completion_tokens = c;
    r.attempts = 1;
    kopt_llm_request_hash(&rq, r.request_hash);
    CHECK_EQ_INT(kopt_llm_record_jsonl(f, NULL, &x), KOPT_OK);
    free(req);
}

/* Count the record hook's calls and keep the roles seen. */
typedef struct seen {
    int n;
    char roles[8][16];
    kopt_llm_outcome outcomes[8];
} seen;

static kopt_status count_record(void *user, kopt_ctx *ctx, const kopt_llm_exchange *x)
{
    seen *s = user;
    (void)ctx;
    if (s->n < 8) {
        snprintf(s->roles[s->n], sizeof(s->roles[0]), "%s", x->role);
        s->outcomes[s->n] = x->reply->outcome;
    }
    s->n++;
    CHECK(x->request_json && strstr(x->request_json, "\"messages\""));
    return KOPT_OK;
}

/* Check a parsed reply's outcome, text, model, finish_reason and usage. */
static void expect(kopt_llm_reply *r, kopt_llm_outcome o, const char *text, const char *model,
                   const char *finish, int64_t prompt, int64_t completion, int64_t cached)
{
    CHECK_EQ_INT(r->outcome, o);
    CHECK_EQ_STR(r->text, text);
    CHECK_EQ_STR(r->model, model);
    CHECK_EQ_STR(r->finish_reason, finish);
    CHECK_EQ_INT(r->usage.prompt_tokens, prompt);
    CHECK_EQ_INT(r->usage.completion_tokens, completion);
    CHECK_EQ_INT(r->usage.cached_tokens, cached);
    kopt_llm_reply_clear(r);
}

/* Check a reply's outcome and (when msg) that its error says msg; clears the reply. */
static void outcome_is(kopt_llm_reply r, kopt_llm_outcome o, const char *msg)
{
    CHECK_EQ_INT(r.outcome, o);
    if (msg)
        CHECK_STR_CONTAINS(r.error, msg);
    kopt_llm_reply_clear(&r);
}

/* ---- parsing ----------------------------------------------------------------------------- */

static void test_openai_ok(void)
{
    kopt_llm_reply r = parse_openai(
        "{\"id\":\"x\",\"model\":\"gpt-4o-2024\",\"choices\":[{\"index\":0,\"message\":"
        "{\"role\":\"assistant\",\"content\":\"hello \\u00e9\"},\"finish_reason\":\"stop\"}],"
        "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"prompt_tokens_details\":"
        "{\"cached_tokens\":8}}}");
    CHECK(r.error == NULL);
    expect(&r, KOPT_LLM_OK, "hello \xc3\xa9", "gpt-4o-2024", "stop", 12, 3, 8);
    /* content as an array of parts; usage with wrong types counts as 0 */
    r = parse_openai("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                     "{\"type\":\"text\",\"text\":\"b\"}]},\"finish_reason\":\"stop\"}],"
                     "\"usage\":{\"prompt_tokens\":\"12\",\"completion_tokens\":-4}}");
    CHECK_EQ_INT(r.outcome, KOPT_LLM_OK);
    CHECK_EQ_STR(r.text, "ab");
    CHECK_EQ_INT(r.usage.prompt_tokens, 0);
    CHECK_EQ_INT(r.usage.completion_tokens, 0);
    kopt_llm_reply_clear(&r);
}

static void test_openai_malformed(void)
{
    static const struct {
        const char *body;
        kopt_llm_outcome want;
        const char *msg;
    } cases[] = {
        {"", KOPT_LLM_MALFORMED, "not JSON"},
        {"{\"choices\": [", KOPT_LLM_MALFORMED, "not JSON"},
        {"<html>502 Bad Gateway</html>", KOPT_LLM_MALFORMED, "not JSON"},
        {"[1, 2]", KOPT_LLM_MALFORMED, "not a JSON object"},
        {"{\"choices\": 3}", KOPT_LLM_MALFORMED, "no \"choices\" array"},
        {"{}", KOPT_LLM_MALFORMED, "no \"choices\" array"},
        {"{\"choices\": [7]}", KOPT_LLM_MALFORMED, "no message"},
        {"{\"choices\": [{\"finish_reason\": \"stop\"}]}", KOPT_LLM_MALFORMED, "no message"},
        {"{\"choices\": []}", KOPT_LLM_EMPTY, "no choices"},
        {"{\"choices\": [{\"message\": {\"content\": null}, \"finish_reason\": \"stop\"}]}",
         KOPT_LLM_EMPTY, "no text (finish_reason stop)"},
        {"{\"choices\": [{\"message\": {\"content\": \"\"}}]}", KOPT_LLM_EMPTY,
         "finish_reason none"},
        {"{\"error\": {\"message\": \"overloaded\", \"type\": \"server_error\"}}",
         KOPT_LLM_HTTP_ERROR, "server_error: overloaded"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kopt_llm_reply r = parse_openai(cases[i].body);
        if (!CHECK_EQ_INT(r.outcome, cases[i].want))
            fprintf(stderr, "  case %zu: %s\n", i, cases[i].body);
        CHECK_STR_CONTAINS(r.error, cases[i].msg);
        CHECK_STR_CONTAINS(r.error, "openai: ");
        kopt_llm_reply_clear(&r);
    }
}

static void test_openai_refusal_and_length(void)
{
    kopt_llm_reply r = parse_openai(
        "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"I can't help with that.\"},"
        "\"finish_reason\":\"stop\"}]}");
    CHECK_EQ_INT(r.outcome, KOPT_LLM_REFUSAL);
    CHECK_EQ_STR(r.text, "I can't help with that.");
    CHECK_STR_CONTAINS(r.error, "refused");
    kopt_llm_reply_clear(&r);
    outcome_is(parse_openai("{\"choices\":[{\"message\":{\"content\":\"\"},"
                            "\"finish_reason\":\"content_filter\"}]}"),
               KOPT_LLM_REFUSAL, "content filter");
    r = parse_openai("{\"choices\":[{\"message\":{\"content\":\"__global__ void k(\"},"
                     "\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":5}}");
    CHECK_EQ_INT(r.outcome, KOPT_LLM_LENGTH);
    CHECK_EQ_STR(r.text, "__global__ void k(");
    CHECK_EQ_STR(r.finish_reason, "length");
    CHECK_STR_CONTAINS(r.error, "cut at max_tokens");
    kopt_llm_reply_clear(&r);
}

static void test_huge_body(void)
{
    size_t n = 20u << 20;   /* 20 MiB of text in one string */
    const char *head = "{\"choices\":[{\"message\":{\"content\":\"";
    const char *tail = "\"},\"finish_reason\":\"stop\"}]}";
    char *body = malloc(strlen(head) + n + strlen(tail) + 1);
    kopt_llm_reply r = {0};

    if (!CHECK(body != NULL))
        return;
    strcpy(body, head);
    memset(body + strlen(head), 'x', n);
    strcpy(body + strlen(head) + n, tail);
    kopt__llm_openai_parse(body, strlen(body), &r);
    CHECK_EQ_INT(r.outcome, KOPT_LLM_OK);
    CHECK_EQ_INT(r.text ? strlen(r.text) : 0, n);
    kopt_llm_reply_clear(&r);
    /* the same body cut in the middle of the string */
    kopt__llm_openai_parse(body, strlen(head) + n / 2, &r);
    CHECK_EQ_INT(r.outcome, KOPT_LLM_MALFORMED);
    kopt_llm_reply_clear(&r);
    free(body);
}

static void test_utf8(void)
{
    static const char *bad[] = {
        "\xff", "a\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\x80",
        "\xf0\x8f\xbf\xbf",
    };
    static const char *good[] = {"", "plain", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    kopt_llm_reply r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!kopt__llm_utf8_valid(bad[i], strlen(bad[i])));
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK(kopt__llm_utf8_valid(good[i], strlen(good[i])));
    outcome_is(parse_openai("{\"choices\":[{\"message\":{\"content\":\"bad \xff\xfe here\"},"
                            "\"finish_reason\":\"stop\"}]}"),
               KOPT_LLM_BAD_UTF8, "not valid UTF-8");
    outcome_is(parse_anthropic("{\"content\":[{\"type\":\"text\",\"text\":\"\xc0\xaf\"}]}"),
               KOPT_LLM_BAD_UTF8, NULL);
    memset(&r, 0, sizeof(r));
    kopt__llm_command_parse("\xff\xfe", 2, &r);
    outcome_is(r, KOPT_LLM_BAD_UTF8, "command: the output is not valid UTF-8");
}

static void test_anthropic_parse(void)
{
    kopt_llm_reply r = parse_anthropic(
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
        "\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \"},"
        "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\",\"input\":{}},"
        "{\"type\":\"text\",\"text\":\"there\"}],\"stop_reason\":\"end_turn\",\"usage\":"
        "{\"input_tokens\":10,\"cache_read_input_tokens\":30,\"cache_creation_input_tokens\":5,"
        "\"output_tokens\":7}}");
    expect(&r, KOPT_LLM_OK, "Hi there", "claude-sonnet-4-5", "end_turn", 45, 7, 30);
    r = parse_anthropic("{\"content\":[{\"type\":\"text\",\"text\":\"partial\"}],"
                        "\"stop_reason\":\"max_tokens\"}");
    CHECK_EQ_INT(r.outcome, KOPT_LLM_LENGTH);
    CHECK_EQ_STR(r.text, "partial");
    kopt_llm_reply_clear(&r);
    outcome_is(parse_anthropic("{\"content\":[],\"stop_reason\":\"refusal\"}"),
               KOPT_LLM_REFUSAL, "refused");
    outcome_is(parse_anthropic("{\"content\":[],\"stop_reason\":\"end_turn\"}"),
               KOPT_LLM_EMPTY, "no text (stop_reason end_turn)");
    outcome_is(parse_anthropic("{\"type\":\"message\"}"), KOPT_LLM_MALFORMED, "\"content\"");
    outcome_is(parse_anthropic("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                               "\"message\":\"Overloaded\"}}"),
               KOPT_LLM_HTTP_ERROR, "overloaded_error: Overloaded");
}

static void test_error_message(void)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"{\"error\":{\"message\":\"Incorrect API key\",\"type\":\"invalid_request_error\"}}",
         "invalid_request_error: Incorrect API key"},
        {"{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"bad\"}}",
         "authentication_error: bad"},
        {"{\"error\":\"model not loaded\"}", "model not loaded"},
        {"{\"detail\":\"Not Found\"}", "Not Found"},
        {"Bad\ngateway\r\n\xff", "Bad gateway  ?"},
        {"", ""},
        /* cut to the buffer */
        {"0123456789012345678901234567890123456789012345678901234567890123456789",
         "012345678901234567890123456789012345678901234567890123456789012"},
    };
    char m[64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kopt__llm_error_message(cases[i].body, strlen(cases[i].body), m, sizeof(m));
        CHECK_EQ_STR(m, cases[i].want);
    }
}

static void test_scrub(void)
{
    char *s = strdup("Incorrect API key provided: sk-test-0123456789. Key sk-test-0123456789!");
    kopt__llm_scrub(&s, "sk-test-0123456789");
    CHECK_EQ_STR(s, "Incorrect API key provided: [redacted]. Key [redacted]!");
    kopt__llm_scrub(&s, NULL);
    kopt__llm_scrub(&s, "short");      /* too short to be a key: left alone */
    CHECK_STR_CONTAINS(s, "[redacted]");
    free(s);
}

/* ---- specs and opening --------------------------------------------------------------------- */

static void test_spec_parse(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char name[16], *model = NULL, *url = NULL;
    const char *arg;

    CHECK_EQ_INT(kopt__llm_spec_split(ctx, "openai:gpt-4o@http://h:1/v1", name, sizeof(name),
                                      &arg), KOPT_OK);
    CHECK_EQ_STR(name, "openai");
    CHECK_EQ_STR(arg, "gpt-4o@http://h:1/v1");
    CHECK_EQ_INT(kopt__llm_spec_split(ctx, "gpt-4o", name, sizeof(name), &arg), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "want BACKEND:ARG");
    CHECK_EQ_INT(kopt__llm_spec_split(ctx, "openai:", name, sizeof(name), &arg), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt__llm_spec_split(ctx, ":x", name, sizeof(name), &arg), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt__llm_spec_split(ctx, "Open AI:x", name, sizeof(name), &arg),
                 KOPT_E_INVALID);
    CHECK_EQ_INT(kopt__llm_split_model_url(ctx, "openai", "m@https://a.b/v1", &model, &url),
                 KOPT_OK);
    CHECK_EQ_STR(model, "m");
    CHECK_EQ_STR(url, "https://a.b/v1");
    free(model);
    free(url);
    /* an '@' that does not start a URL is part of the model's name */
    CHECK_EQ_INT(kopt__llm_split_model_url(ctx, "anthropic", "claude@20250101", &model, &url),
                 KOPT_OK);
    CHECK_EQ_STR(model, "claude@20250101");
    CHECK(url == NULL);
    free(model);
    CHECK_EQ_INT(kopt__llm_split_model_url(ctx, "openai", "@http://x", &model, &url),
                 KOPT_E_INVALID);
    CHECK_EQ_INT(kopt__llm_split_model_url(ctx, "openai", "a b", &model, &url), KOPT_E_INVALID);
    kopt_ctx_free(ctx);
}

static void test_open_errors(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_llm_client *c = NULL;
    kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
    const char *key = "sk-kopt-unit-SECRET-4242";

    unsetenv("KOPT_LLM");
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, NULL, NULL), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "KOPT_LLM");
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "gemini:pro", NULL), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "unknown backend 'gemini'");
    unsetenv("OPENAI_API_KEY");
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "openai:gpt-4o", NULL), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "OPENAI_API_KEY is not set");
    /* a local server needs no key */
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "openai:m@http://127.0.0.1:9/v1", NULL), KOPT_OK);
    CHECK_EQ_STR(kopt_llm_backend(c), "openai");
    CHECK_EQ_STR(kopt_llm_model(c), "m");
    kopt_llm_close(c);
    c = NULL;
    o.key_env = "KOPT_TEST_NO_SUCH_KEY";
    unsetenv("KOPT_TEST_NO_SUCH_KEY");
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "openai:m@http://127.0.0.1:9/v1", &o), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "KOPT_TEST_NO_SUCH_KEY is not set");
    setenv("ANTHROPIC_API_KEY", key, 1);
    setenv("KOPT_LLM", "anthropic:claude-sonnet-4-5", 1);
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, NULL, NULL), KOPT_OK);
    if (c) {
        kopt_llm_price p;
        CHECK_EQ_STR(kopt_llm_backend(c), "anthropic");
        CHECK(kopt_llm_price_of(c, kopt_llm_model(c), &p));
        CHECK_NEAR(p.output, 15.0, 1e-9);
    }
    kopt_llm_close(c);
    c = NULL;
    setenv("ANTHROPIC_API_KEY", "sk-with\nnewline-0123", 1);
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "anthropic:claude-x", NULL), KOPT_E_INVALID);
    CHECK(strstr(kopt_errmsg(ctx), "newline-0123") == NULL);
    unsetenv("ANTHROPIC_API_KEY");
    unsetenv("KOPT_LLM");
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "command:/no/such/program --x", NULL), KOPT_E_NOT_FOUND);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "/no/such/program");
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "command:sh -c 'oops", NULL), KOPT_E_INVALID);
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "replay:/no/such/file.jsonl", NULL), KOPT_E_NOT_FOUND);
    CHECK_EQ_INT(kopt_llm_open(&c, ctx, "replay:12", NULL), KOPT_E_UNSUPPORTED);
    CHECK(c == NULL);
    kopt_llm_close(NULL);
    kopt_ctx_free(ctx);
}

/* ---- retries ------------------------------------------------------------------------------ */

static void test_retry_policy(void)
{
    static const int retry[] = {408, 409, 425, 429, 500, 502, 503, 504, 529};
    static const int no[] = {200, 400, 401, 403, 404, 413, 422};

    for (size_t i = 0; i < sizeof(retry) / sizeof(retry[0]); i++)
        CHECK(kopt__llm_status_retryable(retry[i]));
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        CHECK(!kopt__llm_status_retryable(no[i]));
    /* exponential with jitter in [0.5, 1) of the nominal wait, capped */
    CHECK_NEAR(kopt__llm_backoff_s(1, 60, 0, -1, 0.0), 0.5, 1e-12);
    CHECK_NEAR(kopt__llm_backoff_s(1, 60, 3, -1, 0.0), 4.0, 1e-12);
    CHECK_NEAR(kopt__llm_backoff_s(1, 60, 3, -1, 0.999), 8.0 * 0.9995, 1e-9);
    CHECK_NEAR(kopt__llm_backoff_s(1, 60, 20, -1, 0.5), 60.0, 1e-12);
    CHECK_NEAR(kopt__llm_backoff_s(1, 60, 1000, -1, 0.5), 60.0, 1e-12);
    /* the server's Retry-After wins, even past the cap (the caller then stops) */
    CHECK_NEAR(kopt__llm_backoff_s(1, 60, 0, 2.5, 0.3), 2.5, 1e-12);
    CHECK_NEAR(kopt__llm_backoff_s(1, 60, 0, 120, 0.3), 120, 1e-12);
    /* Retry-After values */
    CHECK_NEAR(kopt__llm_parse_retry_after("3", 0), 3, 1e-12);
    CHECK_NEAR(kopt__llm_parse_retry_after(" 1.5 \r\n", 0), 1.5, 1e-12);
    CHECK_NEAR(kopt__llm_parse_retry_after("0", 0), 0, 1e-12);
    CHECK(kopt__llm_parse_retry_after("abc", 0) < 0);
    CHECK(kopt__llm_parse_retry_after("-1", 0) < 0);
    CHECK(kopt__llm_parse_retry_after("5 apples", 0) < 0);
    CHECK(kopt__llm_parse_retry_after("", 0) < 0);
    CHECK(kopt__llm_parse_retry_after(NULL, 0) < 0);
    /* Wed, 21 Oct 2015 07:28:00 GMT is 1445412480 */
    CHECK_NEAR(kopt__llm_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470), 10,
               1e-9);
    CHECK_NEAR(kopt__llm_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490), 0,
               1e-9);
    /* the jitter source stays in [0, 1) and moves */
    {
        uint64_t st = 1;
        double a = kopt__llm_uniform(&st), b = kopt__llm_uniform(&st);
        CHECK(a >= 0 && a < 1 && b >= 0 && b < 1 && a != b);
    }
}

/* ---- prices -------------------------------------------------------------------------------- */

static void test_prices(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt__llm_prices *t = NULL;
    kopt_llm_price p;
    kopt_llm_usage u = {1000000, 500000, 400000};
    char *dir = ktest_tmpdir("llmprice"), *good, *bad, *bad2;

    CHECK_EQ_INT(kopt__llm_prices_load(&t, ctx, NULL), KOPT_OK);
    CHECK(kopt__llm_prices_find(t, "gpt-4o-mini-2024-07-18", &p));
    CHECK_NEAR(p.input, 0.15, 1e-12);   /* the longest prefix, not gpt-4o's */
    CHECK(kopt__llm_prices_find(t, "openai/gpt-4o", &p));
    CHECK_NEAR(p.input, 2.5, 1e-12);
    CHECK(!kopt__llm_prices_find(t, "smollm2", &p));
    CHECK(!kopt__llm_prices_find(t, NULL, &p));
    p = (kopt_llm_price){2.0, 0.5, 8.0};
    /* 600k uncached * 2 + 400k cached * 0.5 + 500k out * 8, per million */
    CHECK_NEAR(kopt_llm_cost(&p, &u), 1.2 + 0.2 + 4.0, 1e-12);
    kopt__llm_prices_free(t);
    t = NULL;
    good = ktest_write_file(dir, "p.json", "{\"smollm2\": {\"input\": 0.01, \"output\": 0.02},"
                            " \"gpt-4o\": {\"input\": 1, \"output\": 2, \"cached_input\": 0.1}}");
    bad = ktest_write_file(dir, "bad.json", "{\"m\": {\"input\": -1, \"output\": 2}}");
    bad2 = ktest_write_file(dir, "bad2.json", "{\"m\": ");
    CHECK_EQ_INT(kopt__llm_prices_load(&t, ctx, good), KOPT_OK);
    CHECK(kopt__llm_prices_find(t, "smollm2-135m", &p));
    CHECK_NEAR(p.cached_input, 0.01, 1e-12);     /* defaults to input */
    CHECK(kopt__llm_prices_find(t, "gpt-4o-2024-08-06", &p));
    CHECK_NEAR(p.input, 1, 1e-12);               /* the user's entry overrides */
    CHECK_NEAR(p.cached_input, 0.1, 1e-12);
    kopt__llm_prices_free(t);
    t = NULL;
    CHECK_EQ_INT(kopt__llm_prices_load(&t, ctx, bad), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "model 'm'");
    CHECK_EQ_INT(kopt__llm_prices_load(&t, ctx, bad2), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "bad2.json");
    CHECK(t == NULL);
    kopt__llm_prices_free(NULL);
    free(good);
    free(bad);
    free(bad2);
    ktest_rmtree(dir);
    free(dir);
    kopt_ctx_free(ctx);
}

/* ---- requests ------------------------------------------------------------------------------- */

static void test_request_hash(void)
{
    kopt_llm_message m1 = {"user", "write a kernel"}, m2 = {"user", "write a kernel!"};
    kopt_llm_request a = one(&m1), b = one(&m1), d = one(&m2);
    char ha[65], hb[65], hd[65], *j;

    b.tag = "node 7";
    b.run_id = 3;
    b.name = "e1-p1-coder";
    kopt_llm_request_hash(&a, ha);
    kopt_llm_request_hash(&b, hb);
    kopt_llm_request_hash(&d, hd);
    CHECK_EQ_STR(ha, hb);              /* tag, run and name are not part of the request */
    CHECK(strcmp(ha, hd) != 0);
    b.temperature = 0.7;
    kopt_llm_request_hash(&b, hb);
    CHECK(strcmp(ha, hb) != 0);
    /* the providers' bodies: OpenAI leads with a system message, Anthropic has a member */
    a.system = "be brief";
    j = kopt__llm_body_json(&a, "m", 1, "max_completion_tokens");
    CHECK_EQ_STR(j, "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":"
                    "\"be brief\"},{\"role\":\"user\",\"content\":\"write a kernel\"}],"
                    "\"max_completion_tokens\":1024}");
    free(j);
    b.system = "be brief";
    j = kopt__llm_body_json(&b, "c", 0, "max_tokens");
    CHECK_EQ_STR(j, "{\"model\":\"c\",\"messages\":[{\"role\":\"user\",\"content\":"
                    "\"write a kernel\"}],\"max_tokens\":1024,\"system\":\"be brief\","
                    "\"temperature\":0.7}");
    free(j);
    a.system = NULL;
    j = kopt_llm_request_json(&a, "gpt-4o");
    CHECK_EQ_STR(j, "{\"max_tokens\":1024,\"messages\":[{\"content\":\"write a kernel\","
                    "\"role\":\"user\"}],\"model\":\"gpt-4o\",\"role\":\"coder\"}");
    free(j);
    /* the name (version 2) goes with the request to a command backend and the record */
    a.name = "e1-p1-coder";
    j = kopt_llm_request_json(&a, "gpt-4o");
    CHECK(j && strstr(j, "\"name\":\"e1-p1-coder\""));
    free(j);
    a.version = 1;                     /* a version 1 caller's struct has no name to read */
    j = kopt_llm_request_json(&a, "gpt-4o");
    CHECK(j && !strstr(j, "\"name\""));
    free(j);
}

static void test_bad_request(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    kopt_llm_client *c = NULL;
    kopt_llm_message m = {"user", "bad \xff"}, sys = {"system", "x"};
    kopt_llm_request rq = one(&m);
    kopt_llm_reply r;
    seen s = {0};
    kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;

    o.record = count_record;
    o.record_user = &s;
    if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, "command:cat", &o), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "not valid UTF-8");
    CHECK_EQ_STR(r.text, "");
    kopt_llm_reply_clear(&r);
    rq = one(&sys);
    CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_E_INVALID);
    CHECK_STR_CONTAINS(r.error, "user or assistant");
    kopt_llm_reply_clear(&r);
    CHECK_EQ_INT(s.n, 0);              /* nothing was sent, nothing recorded */
cleanup:
    kopt_llm_close(c);
    kopt_ctx_free(ctx);
}

/* ---- the command backend ------------------------------------------------------------------ */

/* A script in `dir` named `name` with body `sh`; returns "command:PATH ARGS". */
static char *script(const char *dir, const char *name, const char *sh, const char *args)
{
    char *text, *path, *spec;

    if (asprintf(&text, "#!/bin/sh\n%s\n", sh) < 0)
        return NULL;
    path = ktest_write_file(dir, name, text);
    free(text);
    if (!path)
        return NULL;
    chmod(path, 0755);
    if (asprintf(&spec, "command:%s %s", path, args) < 0)
        spec = NULL;
    free(path);
    return spec;
}

static void test_command_backend(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = ktest_tmpdir("llmcmd"), *spec, *in_path = NULL, *got;
    kopt_llm_client *c = NULL;
    kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
    kopt_llm_message m = {"user", "say \"hi\"\nplease"};
    kopt_llm_request rq = one(&m);
    kopt_llm_reply r = {0};

    if (!dir)
        return;
    if (asprintf(&in_path, "%s/stdin.json", dir) < 0)
        goto cleanup;
    /* JSON out, with usage; the request saved where the test can read it */
    spec = script(dir, "json.sh", "cat > \"$1\"; printf '{\"text\": \"hi there\", \"model\": "
                  "\"fake-1\", \"finish_reason\": \"stop\", \"usage\": {\"prompt_tokens\": 9, "
                  "\"completion_tokens\": 2}}'", in_path);
    o.timeout_s = 10;
    if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, &o), KOPT_OK)) {
        free(spec);
        goto cleanup;
    }
    free(spec);
    CHECK_EQ_STR(kopt_llm_model(c), "json.sh");
    CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_OK);
    CHECK_EQ_STR(r.text, "hi there");
    CHECK_EQ_STR(r.model, "fake-1");
    CHECK_EQ_INT(r.usage.prompt_tokens, 9);
    CHECK_EQ_INT(r.attempts, 1);
    got = ktest_read_file(in_path);
    CHECK_STR_CONTAINS(got, "\"content\":\"say \\\"hi\\\"\\nplease\"");
    CHECK_STR_CONTAINS(got, "\"role\":\"coder\"");
    free(got);
    kopt_llm_reply_clear(&r);
    kopt_llm_close(c);
    c = NULL;

    /* plain text out; a failing program; a hanging one; one that writes too much */
    {
        static const struct {
            const char *sh;
            kopt_llm_outcome want;
            const char *msg;
        } cases[] = {
            {"cat >/dev/null; echo 'plain answer'", KOPT_LLM_OK, NULL},
            {"cat >/dev/null; echo 'model not available' >&2; exit 3", KOPT_LLM_COMMAND_FAILED,
             "exited with status 3: model not available"},
            {"exec sleep 20", KOPT_LLM_TIMEOUT, "did not answer in"},
            {"head -c 5000 /dev/zero | tr '\\0' x", KOPT_LLM_TOO_LARGE, "more than 1000 bytes"},
            {"cat >/dev/null; printf '{\"error\": \"quota\"}'", KOPT_LLM_COMMAND_FAILED, "quota"},
            {"cat >/dev/null; printf '{\"text\": \"cut\", \"finish_reason\": \"length\"}'",
             KOPT_LLM_LENGTH, "max_tokens"},
            {"cat >/dev/null", KOPT_LLM_EMPTY, "wrote nothing"},
            {"exit 0", KOPT_LLM_EMPTY, "wrote nothing"},   /* does not read its input */
        };
        o.timeout_s = 0.5;
        o.max_reply_bytes = 1000;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            char name[32];
            double t0 = kopt_now_ms();
            snprintf(name, sizeof(name), "case%zu.sh", i);
            spec = script(dir, name, cases[i].sh, "");
            if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, &o), KOPT_OK)) {
                free(spec);
                continue;
            }
            free(spec);
            kopt_llm_call(c, ctx, &rq, &r);
            if (!CHECK_EQ_INT(r.outcome, cases[i].want))
                fprintf(stderr, "  case %zu: %s\n", i, r.error ? r.error : "");
            if (cases[i].msg)
                CHECK_STR_CONTAINS(r.error, cases[i].msg);
            else
                CHECK_EQ_STR(r.text, "plain answer\n");
            CHECK(kopt_now_ms() - t0 < 5000);
            kopt_llm_reply_clear(&r);
            kopt_llm_close(c);
            c = NULL;
        }
    }
cleanup:
    kopt_llm_close(c);
    free(in_path);
    ktest_rmtree(dir);
    free(dir);
    kopt_ctx_free(ctx);
}

/* call_many keeps `parallel` requests in flight: 4 requests of 0.4 s each. */
static void test_parallel(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = ktest_tmpdir("llmpar"), *spec;
    kopt_llm_message m = {"user", "x"};
    kopt_llm_request rq[4];
    kopt_llm_reply r[4];
    seen s = {0};
    double wall[2];

    if (!dir)
        return;
    spec = script(dir, "slow.sh", "cat >/dev/null; sleep 0.4; echo done", "");
    for (int i = 0; i < 4; i++)
        rq[i] = one(&m);
    rq[2].role = "planner";
    for (int k = 0; k < 2; k++) {
        kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
        kopt_llm_client *c = NULL;
        double t0;
        o.parallel = k == 0 ? 4 : 1;
        o.record = count_record;
        o.record_user = &s;
        s.n = 0;
        if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, &o), KOPT_OK))
            break;
        t0 = kopt_now_ms();
        CHECK_EQ_INT(kopt_llm_call_many(c, ctx, rq, 4, r), KOPT_OK);
        wall[k] = kopt_now_ms() - t0;
        for (int i = 0; i < 4; i++) {
            CHECK_EQ_INT(r[i].outcome, KOPT_LLM_OK);
            CHECK_EQ_STR(r[i].text, "done\n");
            CHECK(r[i].latency_ms >= 350);
            kopt_llm_reply_clear(&r[i]);
        }
        /* recorded once each, in request order, from the calling thread */
        CHECK_EQ_INT(s.n, 4);
        CHECK_EQ_STR(s.roles[2], "planner");
        CHECK_EQ_STR(s.roles[3], "coder");
        kopt_llm_close(c);
    }
    CHECK(wall[0] < 1200);     /* 4 at once: about 0.4 s */
    CHECK(wall[1] >= 1600);    /* one at a time: 1.6 s or more */
    CHECK_EQ_INT(kopt_llm_call_many(NULL, ctx, rq, -1, r), KOPT_E_INVALID);
    free(spec);
    ktest_rmtree(dir);
    free(dir);
    kopt_ctx_free(ctx);
}

/* The most requests the script's log shows in flight at once ("s" at a start, "e" at an end). */
static int peak_in_flight(const char *log)
{
    FILE *f = fopen(log, "r");
    int n = 0, peak = 0, ch;

    while (f && (ch = fgetc(f)) != EOF) {
        n += ch == 's' ? 1 : ch == 'e' ? -1 : 0;
        peak = n > peak ? n : peak;
    }
    if (f)
        fclose(f);
    return peak;
}

/* call_together (a search step's requests, asked together): all of them in flight at once,
 * where call_many keeps to the default 4; a `parallel` that was given stays the cap. */
static void test_call_together(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = ktest_tmpdir("llmtog"), *spec = NULL, *sh = NULL, log[4200];
    kopt_llm_message m = {"user", "x"};
    kopt_llm_request rq[8];
    kopt_llm_reply r[8];
    const struct {
        int parallel, together, n, want;
    } cases[] = {{0, 0, 8, 4}, {0, 1, 8, 8}, {2, 1, 8, 2}, {0, 1, 3, 3}};

    if (!dir)
        return;
    snprintf(log, sizeof(log), "%s/calls.log", dir);
    if (asprintf(&sh, "cat >/dev/null; echo s >> %s; sleep 0.5; echo e >> %s; echo done", log,
                 log) < 0 || !(spec = script(dir, "slow.sh", sh, "")))
        goto out;
    for (int i = 0; i < 8; i++)
        rq[i] = one(&m);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
        kopt_llm_client *c = NULL;
        const int n = cases[k].n;
        o.parallel = cases[k].parallel;
        unlink(log);
        if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, &o), KOPT_OK))
            break;
        CHECK_EQ_INT(cases[k].together ? kopt_llm_call_together(c, ctx, rq, n, r)
                                       : kopt_llm_call_many(c, ctx, rq, n, r), KOPT_OK);
        for (int i = 0; i < n; i++) {
            CHECK_EQ_INT(r[i].outcome, KOPT_LLM_OK);
            kopt_llm_reply_clear(&r[i]);
        }
        if (!CHECK_EQ_INT(peak_in_flight(log), cases[k].want))
            printf("  case %zu: parallel %d, %s of %d\n", k, cases[k].parallel,
                   cases[k].together ? "together" : "many", n);
        kopt_llm_close(c);
    }
    CHECK_EQ_INT(kopt_llm_call_together(NULL, ctx, rq, 2, r), KOPT_E_INVALID);
out:
    free(sh);
    free(spec);
    ktest_rmtree(dir);
    free(dir);
    kopt_ctx_free(ctx);
}

/* ---- replay and budgets --------------------------------------------------------------------- */

static char *replay_file(const char *dir)
{
    char *path = NULL;
    FILE *f;

    if (asprintf(&path, "%s/rec.jsonl", dir) < 0 || !(f = fopen(path, "w")))
        return NULL;
    put_record(f, "q1", "a1", "gpt-4o", 100, 20);
    put_record(f, "q2", "a2", "gpt-4o", 100, 20);
    fprintf(f, "\n");                     /* blank lines are allowed */
    put_record(f, "q1", "a1 again", "gpt-4o", 100, 20);
    fclose(f);
    return path;
}

static kopt_status call_text(kopt_llm_client *c, kopt_ctx *ctx, const char *content,
                             kopt_llm_reply *r)
{
    kopt_llm_message m = {"user", content};
    kopt_llm_request rq = one(&m);
    return kopt_llm_call(c, ctx, &rq, r);
}

static void test_replay(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = ktest_tmpdir("llmreplay"), *path = dir ? replay_file(dir) : NULL, *spec = NULL;
    kopt_llm_client *c = NULL;
    kopt_llm_reply r = {0};

    if (!CHECK(path != NULL))
        goto cleanup;
    if (asprintf(&spec, "replay:%s", path) < 0 ||
        !CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, NULL), KOPT_OK))
        goto cleanup;
    CHECK_EQ_STR(kopt_llm_model(c), "gpt-4o");
    /* by hash: q2 first, then q1 twice (in recorded order), then a miss */
    CHECK_EQ_INT(call_text(c, ctx, "q2", &r), KOPT_OK);
    CHECK_EQ_STR(r.text, "a2");
    CHECK_EQ_INT(r.usage.prompt_tokens, 100);
    CHECK(r.cost_known && r.cost > 0);
    kopt_llm_reply_clear(&r);
    CHECK_EQ_INT(call_text(c, ctx, "q1", &r), KOPT_OK);
    CHECK_EQ_STR(r.text, "a1");
    kopt_llm_reply_clear(&r);
    CHECK_EQ_INT(call_text(c, ctx, "q1", &r), KOPT_OK);
    CHECK_EQ_STR(r.text, "a1 again");
    kopt_llm_reply_clear(&r);
    CHECK_EQ_INT(call_text(c, ctx, "q1", &r), KOPT_E_ERROR);
    CHECK_EQ_INT(r.outcome, KOPT_LLM_REPLAY_MISS);
    CHECK_STR_CONTAINS(kopt_errmsg(ctx), "3 recorded, 3 used");
    kopt_llm_reply_clear(&r);
    kopt_llm_close(c);
    c = NULL;
    /* in order, whatever is asked */
    free(spec);
    if (asprintf(&spec, "replay:%s@order", path) < 0 ||
        !CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, NULL), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(call_text(c, ctx, "anything", &r), KOPT_OK);
    CHECK_EQ_STR(r.text, "a1");
    kopt_llm_reply_clear(&r);
    CHECK_EQ_INT(call_text(c, ctx, "else", &r), KOPT_OK);
    CHECK_EQ_STR(r.text, "a2");
    kopt_llm_reply_clear(&r);
    kopt_llm_close(c);
    c = NULL;
    /* a broken record names its line */
    {
        char *bad = ktest_write_file(dir, "bad.jsonl", "\n{\"reply\": {}}\n");
        free(spec);
        if (asprintf(&spec, "replay:%s", bad) >= 0) {
            CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, NULL), KOPT_E_INVALID);
            CHECK_STR_CONTAINS(kopt_errmsg(ctx), "bad.jsonl:2");
        }
        free(bad);
    }
cleanup:
    kopt_llm_close(c);
    free(spec);
    free(path);
    ktest_rmtree(dir);
    free(dir);
    kopt_ctx_free(ctx);
}

/* In order, role by role: a coder asking first gets the first coder answer, planners the
 * planner answers in their order; an answer recorded twice for the same request (manual
 * mode reads a reply file again) is handed out once. */
static void test_replay_order_by_role(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = ktest_tmpdir("llmorder"), *path = NULL, *spec = NULL;
    const char *const lines[][3] = {{"planner", "1", "p1"}, {"planner", "2", "p2"},
                                    {"planner", "1", "p1"}, {"coder", "3", "c1"}};
    const char *const asked[][2] = {{"coder", "c1"}, {"planner", "p1"}, {"planner", "p2"}};
    kopt_llm_client *c = NULL;
    kopt_llm_reply r = {0};
    FILE *f;

    if (!CHECK(dir != NULL) || asprintf(&path, "%s/roles.jsonl", dir) < 0 ||
        !CHECK((f = fopen(path, "w")) != NULL))
        goto cleanup;
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        fprintf(f, "{\"role\": \"%s\", \"request_hash\": \"%064d\", \"reply\": "
                "{\"outcome\": \"ok\", \"text\": \"%s\"}}\n", lines[i][0], atoi(lines[i][1]),
                lines[i][2]);
    fclose(f);
    if (asprintf(&spec, "replay:%s@order", path) < 0 ||
        !CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, NULL), KOPT_OK))
        goto cleanup;
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
        kopt_llm_message m = {"user", "whatever"};
        kopt_llm_request rq = one(&m);
        rq.role = asked[i][0];
        CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_OK);
        CHECK_EQ_STR(r.text, asked[i][1]);
        kopt_llm_reply_clear(&r);
    }
    {
        kopt_llm_message m = {"user", "whatever"};
        kopt_llm_request rq = one(&m);
        rq.role = "planner";                       /* the duplicate was kept once */
        CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_E_ERROR);
        CHECK_EQ_INT(r.outcome, KOPT_LLM_REPLAY_MISS);
        kopt_llm_reply_clear(&r);
    }
cleanup:
    kopt_llm_close(c);
    free(spec);
    if (dir)
        ktest_rmtree(dir);
    free(path);
    free(dir);
    kopt_ctx_free(ctx);
}

static void test_budgets(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = ktest_tmpdir("llmbudget"), *path = dir ? replay_file(dir) : NULL, *spec = NULL;
    kopt_llm_reply r = {0};
    kopt_llm_budget_state b;
    kopt_llm_price p;

    if (!CHECK(path != NULL) || asprintf(&spec, "replay:%s@order", path) < 0)
        goto cleanup;
    for (int which = 0; which < 3; which++) {
        kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
        kopt_llm_client *c = NULL;
        seen s = {0};
        o.record = count_record;
        o.record_user = &s;
        if (which == 0)
            o.max_calls = 2;
        else if (which == 1)
            o.max_tokens_total = 150;   /* 120 a call: the second call crosses it */
        else
            o.max_cost = 1e-9;          /* the first call's cost crosses it */
        if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, &o), KOPT_OK))
            continue;
        CHECK_EQ_INT(call_text(c, ctx, "a", &r), KOPT_OK);
        kopt_llm_reply_clear(&r);
        if (which < 2) {
            CHECK_EQ_INT(call_text(c, ctx, "b", &r), KOPT_OK);
            kopt_llm_reply_clear(&r);
        }
        kopt_llm_budget(c, &b);
        CHECK(b.exhausted);
        CHECK_STR_CONTAINS(b.why, which == 0 ? "--max-llm-calls 2" : which == 1 ?
                           "--max-tokens-total 150" : "--max-cost");
        CHECK_EQ_INT(call_text(c, ctx, "c", &r), KOPT_E_ERROR);
        CHECK_EQ_INT(r.outcome, KOPT_LLM_BUDGET);
        CHECK_EQ_INT(r.attempts, 0);
        CHECK_STR_CONTAINS(r.error, "budget spent");
        kopt_llm_reply_clear(&r);
        kopt_llm_budget(c, &b);
        CHECK_EQ_INT(b.calls, which < 2 ? 2 : 1);       /* the refused call is not counted */
        CHECK_EQ_INT(b.tokens_total, which < 2 ? 240 : 120);
        CHECK_EQ_INT(s.n, which < 2 ? 2 : 1);          /* nor recorded */
        CHECK(kopt_llm_price_of(c, "gpt-4o", &p));
        CHECK_NEAR(b.cost, (which < 2 ? 2 : 1) * (100 * p.input + 20 * p.output) / 1e6, 1e-12);
        kopt_llm_close(c);
    }
    /* call_many past the call budget: the first ones go, the rest are refused */
    {
        kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
        kopt_llm_client *c = NULL;
        kopt_llm_message m = {"user", "z"};
        kopt_llm_request rq[3] = {one(&m), one(&m), one(&m)};
        kopt_llm_reply rs[3];
        int ok = 0, refused = 0;
        o.max_calls = 2;
        o.parallel = 3;
        if (CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, &o), KOPT_OK)) {
            CHECK_EQ_INT(kopt_llm_call_many(c, ctx, rq, 3, rs), KOPT_OK);
            for (int i = 0; i < 3; i++) {
                ok += rs[i].outcome == KOPT_LLM_OK;
                refused += rs[i].outcome == KOPT_LLM_BUDGET;
                kopt_llm_reply_clear(&rs[i]);
            }
            CHECK_EQ_INT(ok, 2);
            CHECK_EQ_INT(refused, 1);
        }
        kopt_llm_close(c);
    }
cleanup:
    free(spec);
    free(path);
    ktest_rmtree(dir);
    free(dir);
    kopt_ctx_free(ctx);
}

/* Exchanges go into the store through its record hook, and come back as a replay. */
static void test_store_record_and_replay(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = ktest_tmpdir("llmstore"), *db = NULL, *spec = NULL;
    kopt_store *st = NULL;
    kopt_llm_client *c = NULL;
    kopt_llm_reply r = {0};
    int64_t n = -1, id = 0;

    if (!dir || asprintf(&db, "%s/k.db", dir) < 0 ||
        !CHECK_EQ_INT(kopt_store_open(&st, ctx, db), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_store_schema_version(st), KOPT_STORE_SCHEMA_VERSION);
    spec = script(dir, "echo.sh", "cat >/dev/null; printf '{\"text\": \"stored answer\", "
                  "\"usage\": {\"prompt_tokens\": 4, \"completion_tokens\": 2}}'", "");
    {
        kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
        kopt_llm_message m = {"user", "remember me"};
        kopt_llm_request rq = one(&m);
        o.record = kopt_store_llm_record;
        o.record_user = st;
        if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, spec, &o), KOPT_OK))
            goto cleanup;
        rq.run_id = 17;
        rq.tag = "node-3";
        CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_OK);
        kopt_llm_reply_clear(&r);
        rq.run_id = 0;
        CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_OK);
        kopt_llm_reply_clear(&r);
        kopt_llm_close(c);
        c = NULL;
    }
    CHECK_EQ_INT(kopt_store_llm_count(st, ctx, -1, &n), KOPT_OK);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(kopt_store_llm_count(st, ctx, 17, &n), KOPT_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(kopt_store_llm_count(st, ctx, 0, &n), KOPT_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(kopt_store_llm_last_id(st, ctx, &id), KOPT_OK);
    CHECK_EQ_INT(id, 2);
    /* replay run 17 from the store */
    {
        kopt_llm_options o = KOPT_LLM_OPTIONS_INIT;
        o.load_run = kopt_store_llm_load_run;
        o.load_user = st;
        CHECK_EQ_INT(kopt_llm_open(&c, ctx, "replay:99", &o), KOPT_E_NOT_FOUND);
        CHECK_STR_CONTAINS(kopt_errmsg(ctx), "run 99");
        if (!CHECK_EQ_INT(kopt_llm_open(&c, ctx, "replay:17", &o), KOPT_OK))
            goto cleanup;
        CHECK_EQ_INT(call_text(c, ctx, "forget me", &r), KOPT_E_ERROR);    /* not recorded */
        CHECK_EQ_INT(r.outcome, KOPT_LLM_REPLAY_MISS);
        kopt_llm_reply_clear(&r);
        {
            kopt_llm_message m = {"user", "remember me"};
            kopt_llm_request rq = one(&m);
            CHECK_EQ_INT(kopt_llm_call(c, ctx, &rq, &r), KOPT_OK);
            CHECK_EQ_STR(r.text, "stored answer");
            CHECK_EQ_INT(r.usage.completion_tokens, 2);
            kopt_llm_reply_clear(&r);
        }
    }
cleanup:
    kopt_llm_close(c);
    kopt_store_close(st);
    free(spec);
    free(db);
    ktest_rmtree(dir);
    free(dir);
    kopt_ctx_free(ctx);
}

static void test_outcome_names(void)
{
    for (int i = 0; i < KOPT_LLM_OUTCOME_COUNT; i++)
        CHECK_EQ_INT(kopt_llm_outcome_parse(kopt_llm_outcome_name((kopt_llm_outcome)i)), i);
    CHECK_EQ_INT(kopt_llm_outcome_parse("nope"), -1);
    CHECK_EQ_STR(kopt_llm_outcome_name((kopt_llm_outcome)99), "unknown");
    kopt_llm_reply_clear(NULL);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_openai_ok), KTEST(test_openai_malformed), KTEST(test_openai_refusal_and_length),
        KTEST(test_huge_body), KTEST(test_utf8), KTEST(test_anthropic_parse),
        KTEST(test_error_message), KTEST(test_scrub), KTEST(test_spec_parse),
        KTEST(test_open_errors), KTEST(test_retry_policy), KTEST(test_prices),
        KTEST(test_request_hash), KTEST(test_bad_request), KTEST(test_command_backend),
        KTEST(test_parallel), KTEST(test_call_together),
        KTEST(test_replay), KTEST(test_replay_order_by_role), KTEST(test_budgets),
        KTEST(test_store_record_and_replay), KTEST(test_outcome_names),
    };
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
