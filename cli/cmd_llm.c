/* kopt llm ping|ask: check an LLM setup with one short request (or N at once), or ask one
 * prompt; every exchange is stored. Also the --llm options every LLM verb shares. */
#include "cli.h"

#include <getopt.h>
#include <stddef.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the shared --llm options ------------------------------------------------------------ */

void cli_llm_init(cli_llm *l)
{
    static const kopt_llm_options dflt = KOPT_LLM_OPTIONS_INIT;

    memset(l, 0, sizeof(*l));
    l->opts = dflt;
}

/* A number option: 0 on success, -1 (with a message) when `arg` is not a number >= min. */
static int number(const char *verb, const char *name, const char *arg, double min, double *out)
{
    char *end;
    double v = strtod(arg, &end);

    if (end == arg || *end || !(v >= min)) {
        fprintf(stderr, "kopt %s: --%s %s: want a number >= %g\n", verb, name, arg, min);
        return -1;
    }
    *out = v;
    return 0;
}

/* The numeric --llm options: where each goes in kopt_llm_options, as what, and its least. */
static const struct {
    int code;
    const char *name;
    double min;
    char type;                   /* 'i' int, 'l' int64_t, 'd' double */
    size_t offset;
} numeric[] = {
    {CLI_LLM_PARALLEL, "llm-parallel", 1, 'i', offsetof(kopt_llm_options, parallel)},
    {CLI_LLM_TIMEOUT, "llm-timeout", 0.001, 'd', offsetof(kopt_llm_options, timeout_s)},
    {CLI_LLM_CONNECT_TIMEOUT, "llm-connect-timeout", 0.001, 'd',
     offsetof(kopt_llm_options, connect_timeout_s)},
    {CLI_LLM_RETRIES, "llm-retries", 0, 'i', offsetof(kopt_llm_options, max_retries)},
    {CLI_LLM_BACKOFF, "llm-backoff", 0.001, 'd', offsetof(kopt_llm_options, backoff_base_s)},
    {CLI_LLM_BACKOFF_MAX, "llm-backoff-max", 0.001, 'd',
     offsetof(kopt_llm_options, backoff_max_s)},
    {CLI_LLM_MAX_CALLS, "max-llm-calls", 1, 'l', offsetof(kopt_llm_options, max_calls)},
    {CLI_LLM_MAX_TOKENS_TOTAL, "max-tokens-total", 1, 'l',
     offsetof(kopt_llm_options, max_tokens_total)},
    {CLI_LLM_MAX_COST, "max-cost", 0, 'd', offsetof(kopt_llm_options, max_cost)},
};

int cli_llm_option(cli_llm *l, const char *verb, int c, const char *arg)
{
    char *field;
    double v = 0;

    switch (c) {
    case CLI_LLM_SPEC: l->spec = arg; return 1;
    case CLI_LLM_KEY_ENV: l->opts.key_env = arg; return 1;
    case CLI_LLM_PRICES: l->opts.prices_path = arg; return 1;
    case CLI_LLM_RECORD: l->record_path = arg; return 1;
    default: break;
    }
    for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
        if (numeric[i].code != c)
            continue;
        if (number(verb, numeric[i].name, arg, numeric[i].min, &v))
            return -1;
        field = (char *)&l->opts + numeric[i].offset;
        if (numeric[i].type == 'i')
            *(int *)(void *)field = (int)v;
        else if (numeric[i].type == 'l')
            *(int64_t *)(void *)field = (int64_t)v;
        else
            *(double *)(void *)field = v;
        return 1;
    }
    return 0;
}

/* Both sinks an exchange may go to: the store and a JSONL file. */
static kopt_status record_both(void *user, kopt_ctx *ctx, const kopt_llm_exchange *x)
{
    cli_llm *l = user;
    kopt_status rc = KOPT_OK;
    int64_t id;

    if (l->store && (rc = kopt_store_llm_put(l->store, ctx, x, &id)) == KOPT_OK)
        l->last_id = id;
    if (l->record_file && kopt_llm_record_jsonl(l->record_file, ctx, x) != KOPT_OK)
        rc = KOPT_E_IO;
    return rc;
}

int cli_llm_open(cli_llm *l, kopt_ctx *ctx, const char *db_path)
{
    if (db_path && kopt_store_open(&l->store, ctx, db_path) != KOPT_OK) {
        cli_error(ctx);
        return -1;
    }
    if (l->record_path && !(l->record_file = fopen(l->record_path, "a"))) {
        fprintf(stderr, "kopt: --llm-record %s: cannot open for appending\n", l->record_path);
        return -1;
    }
    l->opts.record = record_both;
    l->opts.record_user = l;
    if (l->store) {
        l->opts.load_run = kopt_store_llm_load_run;
        l->opts.load_user = l->store;
    }
    if (kopt_llm_open(&l->client, ctx, l->spec, &l->opts) != KOPT_OK) {
        cli_error(ctx);
        return -1;
    }
    return 0;
}

void cli_llm_close(cli_llm *l)
{
    kopt_llm_close(l->client);
    kopt_store_close(l->store);
    if (l->record_file)
        fclose(l->record_file);
    l->client = NULL;
    l->store = NULL;
    l->record_file = NULL;
}

/* ---- kopt llm ---------------------------------------------------------------------------- */

static void help(FILE *f)
{
    fprintf(f,
        "usage: kopt llm ping [--llm SPEC] [-n N] [--prompt TEXT] [options]\n"
        "       kopt llm ask  [--llm SPEC] [--system TEXT] [options] PROMPT|-\n"
        "\n"
        "ping sends one short request (N at once with -n) and prints the model, latency,\n"
        "tokens, cost and the reply's first line: how to check a setup before a long search.\n"
        "ask sends PROMPT (- reads standard input) and prints the reply. Every exchange is\n"
        "stored in the store (llm_exchanges). Specs (docs/llm.md):\n"
        "  openai:MODEL[@BASE_URL]     OpenAI or any compatible server ($OPENAI_API_KEY)\n"
        "  anthropic:MODEL[@BASE_URL]  the Anthropic Messages API ($ANTHROPIC_API_KEY)\n"
        "  command:PROGRAM [ARGS]      a program: request JSON on stdin, reply on stdout\n"
        "  replay:FILE|RUN[@order]     answers recorded in a JSONL file or a stored run\n"
        "\n"
        "options:\n"
        "  --llm SPEC               the model (default: $KOPT_LLM)\n"
        "  --llm-key-env NAME       the key's environment variable\n"
        "  --llm-timeout S          per attempt (default 300); --llm-connect-timeout S (10)\n"
        "  --llm-retries N          retries on 429, 5xx, resets, timeouts (default 4)\n"
        "  --llm-backoff S          first backoff (default 1, doubling, jittered);\n"
        "  --llm-backoff-max S      longest wait (default 60)\n"
        "  --llm-parallel N         requests in flight at once (default 4; a search step's,\n"
        "                           asked together: all, at most 16, unless this is given)\n"
        "  --max-llm-calls N, --max-tokens-total N, --max-cost USD   budgets\n"
        "  --llm-prices FILE        extra prices (USD per million tokens, docs/llm.md)\n"
        "  --llm-record FILE        also append every exchange to FILE (JSONL, for replay)\n"
        "  --max-tokens N           reply limit (ping: 32, ask: 1024)\n"
        "  --temperature T, --system TEXT, --role NAME, --run-id N (recorded with the exchange)\n"
        "  --db PATH, --no-store    the store (default ./kopt.db or $KOPT_DB)\n"
        "  --json                   the result as JSON\n"
        "Exit codes: 0 ok (or cut at max_tokens), 2 usage, 10 failure.\n");
}

static json_t *reply_json(const kopt_llm_reply *r)
{
    return json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:i, s:i, s:f, s:{s:I, s:I, s:I}, s:f, s:b,"
                     " s:s}",
                     "outcome", kopt_llm_outcome_name(r->outcome), "text", r->text ? r->text : "",
                     "finish_reason", r->finish_reason, "model", r->model, "error", r->error,
                     "http_status", r->http_status, "attempts", r->attempts, "latency_ms",
                     r->latency_ms, "usage", "prompt_tokens", (json_int_t)r->usage.prompt_tokens,
                     "completion_tokens", (json_int_t)r->usage.completion_tokens,
                     "cached_tokens", (json_int_t)r->usage.cached_tokens, "cost", r->cost,
                     "cost_known", r->cost_known, "request_hash", r->request_hash);
}

static int usable(const kopt_llm_reply *r)
{
    return r->outcome == KOPT_LLM_OK || r->outcome == KOPT_LLM_LENGTH;
}

static void print_text(const cli_llm *l, const kopt_llm_reply *r, int n, double wall_ms,
                       int whole_text, const char *db)
{
    kopt_llm_budget_state b;

    kopt_llm_budget(l->client, &b);
    printf("llm      %s:%s\n", kopt_llm_backend(l->client), kopt_llm_model(l->client));
    for (int i = 0; i < n; i++) {
        const char *t = r[i].text ? r[i].text : "";
        const char *nl = strchr(t, '\n');
        if (n > 1)
            printf("-- request %d\n", i + 1);
        if (r[i].model)
            printf("model    %s\n", r[i].model);
        printf("outcome  %s%s%s\n", kopt_llm_outcome_name(r[i].outcome),
               r[i].finish_reason ? ", finish_reason " : "",
               r[i].finish_reason ? r[i].finish_reason : "");
        printf("latency  %.0f ms, %d attempt%s\n", r[i].latency_ms, r[i].attempts,
               r[i].attempts == 1 ? "" : "s");
        printf("tokens   prompt %lld, completion %lld, cached %lld\n",
               (long long)r[i].usage.prompt_tokens, (long long)r[i].usage.completion_tokens,
               (long long)r[i].usage.cached_tokens);
        if (r[i].cost_known)
            printf("cost     %.6f USD (estimated)\n", r[i].cost);
        else
            printf("cost     unknown (no price for this model; --llm-prices FILE)\n");
        if (!usable(&r[i]))
            printf("error    %s\n", r[i].error ? r[i].error : "");
        else if (whole_text)
            printf("reply\n%s\n", t);
        else
            printf("reply    %.*s\n", (int)(nl ? (size_t)(nl - t) : strlen(t)), t);
    }
    if (n > 1)
        printf("wall     %.0f ms for %d requests (parallel %d)\n", wall_ms, n,
               l->opts.parallel > 0 ? l->opts.parallel : 4);
    printf("spent    %lld calls, %lld tokens, %.6f USD%s\n", (long long)b.calls,
           (long long)b.tokens_total, b.cost, b.cost_unknown_calls ? " (some prices unknown)" : "");
    if (l->store && l->last_id)
        printf("stored   exchange %lld in %s\n", (long long)l->last_id, db);
}

static void print_json(const cli_llm *l, const kopt_llm_reply *r, int n, double wall_ms,
                       const char *db)
{
    kopt_llm_budget_state b;
    json_t *arr = json_array(), *o;

    kopt_llm_budget(l->client, &b);
    for (int i = 0; i < n; i++)
        json_array_append_new(arr, reply_json(&r[i]));
    o = json_pack("{s:s, s:s, s:o, s:f, s:{s:I, s:I, s:I, s:I, s:f, s:b, s:s}}", "backend",
                  kopt_llm_backend(l->client), "model", kopt_llm_model(l->client), "replies",
                  arr, "wall_ms", wall_ms, "spent", "calls", (json_int_t)b.calls,
                  "prompt_tokens", (json_int_t)b.prompt_tokens, "completion_tokens",
                  (json_int_t)b.completion_tokens, "tokens_total", (json_int_t)b.tokens_total,
                  "cost", b.cost, "exhausted", b.exhausted, "why", b.why);
    if (o && l->store) {
        json_object_set_new(o, "db", json_string(db));
        json_object_set_new(o, "last_exchange_id", json_integer(l->last_id));
    }
    cli_print_json(o);
}

/* The prompt of `ask`: the argument, or standard input for "-". Caller frees. */
static char *read_prompt(const char *arg)
{
    kopt_buf b = KOPT_BUF_INIT;
    char buf[4096];
    size_t n;

    if (strcmp(arg, "-") != 0)
        return strdup(arg);
    while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
        kopt_buf_append(&b, buf, n);
    return b.ptr ? kopt_buf_detach(&b) : strdup("");
}

int cmd_llm(int argc, char **argv)
{
    enum { O_PROMPT = 1, O_SYSTEM, O_MAXTOK, O_TEMP, O_ROLE, O_RUN, O_JSON, O_DB, O_NOSTORE };
    static const struct option opts[] = {
        CLI_LLM_LONG_OPTIONS,
        {"prompt", required_argument, NULL, O_PROMPT},
        {"system", required_argument, NULL, O_SYSTEM},
        {"max-tokens", required_argument, NULL, O_MAXTOK},
        {"temperature", required_argument, NULL, O_TEMP}, {"role", required_argument, NULL, O_ROLE},
        {"run-id", required_argument, NULL, O_RUN}, {"json", no_argument, NULL, O_JSON},
        {"db", required_argument, NULL, O_DB}, {"no-store", no_argument, NULL, O_NOSTORE},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    kopt_llm_request rq = KOPT_LLM_REQUEST_INIT, *rqs = NULL;
    kopt_llm_reply *replies = NULL;
    kopt_llm_message msg = {"user", NULL};
    const char *db = cli_default_db(), *verb, *prompt = NULL;
    char *prompt_text = NULL;
    int c, json = 0, n = 1, code = KOPT_EXIT_ERROR, ask, handled;
    double v, t0;
    cli_llm l;
    kopt_ctx *ctx = cli_ctx(0);

    cli_llm_init(&l);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        help(argc < 2 ? stderr : stdout);
        kopt_ctx_free(ctx);
        return argc < 2 ? KOPT_EXIT_USAGE : 0;
    }
    verb = argv[1];
    ask = strcmp(verb, "ask") == 0;
    if (!ask && strcmp(verb, "ping") != 0) {
        fprintf(stderr, "kopt llm: unknown command '%s' (ping, ask)\n", verb);
        kopt_ctx_free(ctx);
        return KOPT_EXIT_USAGE;
    }
    rq.role = ask ? "ask" : "ping";
    rq.max_tokens = ask ? 1024 : 32;
    optind = 1;
    while ((c = getopt_long(argc - 1, argv + 1, "hn:", opts, NULL)) != -1) {
        if ((handled = cli_llm_option(&l, "llm", c, optarg)) < 0)
            goto usage;
        if (handled)
            continue;
        switch (c) {
        case O_PROMPT: prompt = optarg; break;
        case O_SYSTEM: rq.system = optarg; break;
        case O_ROLE: rq.role = optarg; break;
        case O_JSON: json = 1; break;
        case O_DB: db = optarg; break;
        case O_NOSTORE: db = NULL; break;
        case O_MAXTOK:
            if (number("llm", "max-tokens", optarg, 1, &v)) goto usage;
            rq.max_tokens = (int)v;
            break;
        case O_TEMP:
            if (number("llm", "temperature", optarg, 0, &v)) goto usage;
            rq.temperature = v;
            break;
        case O_RUN:
            if (number("llm", "run-id", optarg, 1, &v)) goto usage;
            rq.run_id = (int64_t)v;
            break;
        case 'n':
            if (number("llm", "n", optarg, 1, &v) || v > 64) {
                fprintf(stderr, "kopt llm: -n wants 1 to 64\n");
                goto usage;
            }
            n = (int)v;
            break;
        case 'h': help(stdout); code = 0; goto cleanup;
        default: goto usage;
        }
    }
    if (ask) {
        if (optind + 1 != argc - 1) {
            fprintf(stderr, "kopt llm ask: give one PROMPT (or - for standard input)\n");
            goto usage;
        }
        prompt = argv[optind + 1];
    } else if (optind + 1 != argc) {
        fprintf(stderr, "kopt llm ping: unexpected argument '%s'\n", argv[optind + 1]);
        goto usage;
    }
    if (!(prompt_text = read_prompt(prompt ? prompt : "Reply with one word: pong.")))
        goto cleanup;
    msg.content = prompt_text;
    rq.messages = &msg;
    rq.nmessages = 1;
    if (cli_llm_open(&l, ctx, db) != 0)
        goto cleanup;
    rqs = calloc((size_t)n, sizeof(*rqs));
    replies = calloc((size_t)n, sizeof(*replies));
    if (!rqs || !replies)
        goto cleanup;
    for (int i = 0; i < n; i++)
        rqs[i] = rq;
    t0 = kopt_now_ms();
    if (kopt_llm_call_many(l.client, ctx, rqs, n, replies) != KOPT_OK) {
        cli_error(ctx);
        goto cleanup;
    }
    if (json)
        print_json(&l, replies, n, kopt_now_ms() - t0, db);
    else
        print_text(&l, replies, n, kopt_now_ms() - t0, ask, db);
    code = 0;
    for (int i = 0; i < n; i++)
        if (!usable(&replies[i])) {
            const char *e = replies[i].error;
            fprintf(stderr, "kopt: %s\n", e ? e : kopt_llm_outcome_name(replies[i].outcome));
            code = KOPT_EXIT_ERROR;
        }
    goto cleanup;
usage:
    help(stderr);
    code = KOPT_EXIT_USAGE;
cleanup:
    for (int i = 0; replies && i < n; i++)
        kopt_llm_reply_clear(&replies[i]);
    free(replies);
    free(rqs);
    free(prompt_text);
    cli_llm_close(&l);
    kopt_ctx_free(ctx);
    return code;
}
