/* The HTTP backends' shared half: libcurl (TLS verification on, connect and total timeouts,
 * http/https only, no redirects), the size limit on bodies, Retry-After, and the retry loop
 * with exponential backoff and jitter. Each provider (openai.c, anthropic.c) supplies a
 * dialect: its URL, key header, request body and reply parser. */
#include "llm_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct http_state {
    const kopt__llm_dialect *d;
    char *url, *model, *key;
    struct curl_slist *headers;
    kopt_llm_options o;
    pthread_mutex_t lock;          /* the jitter's random state */
    uint64_t rng;
} http_state;

/* What one transfer gave. */
typedef struct http_resp {
    kopt_buf body;
    size_t max;
    int too_large;
    double retry_after_s;          /* -1: none */
} http_resp;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
    http_resp *r = user;
    size_t len = size * n;

    if (r->body.len + len > r->max) {
        r->too_large = 1;
        return 0;                  /* curl stops with CURLE_WRITE_ERROR */
    }
    return kopt_buf_append(&r->body, p, len) == 0 ? len : 0;
}

static size_t on_header(char *p, size_t size, size_t n, void *user)
{
    http_resp *r = user;
    size_t len = size * n;
    char v[128];

    if (len > 15 && strncasecmp(p, "retry-after-ms:", 15) == 0) {
        snprintf(v, sizeof(v), "%.*s", (int)(len - 15), p + 15);
        double ms = kopt__llm_parse_retry_after(v, 0);
        if (ms >= 0)
            r->retry_after_s = ms / 1e3;
    } else if (len > 12 && strncasecmp(p, "retry-after:", 12) == 0 && r->retry_after_s < 0) {
        snprintf(v, sizeof(v), "%.*s", (int)(len - 12), p + 12);
        r->retry_after_s = kopt__llm_parse_retry_after(v, (double)time(NULL));
    }
    return len;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Add to out->error. */
static void append(kopt_llm_reply *out, const char *fmt, ...) KOPT_PRINTF(2, 3);
static void append(kopt_llm_reply *out, const char *fmt, ...)
{
    kopt_buf b = KOPT_BUF_INIT;
    va_list ap;

    kopt_buf_append(&b, out->error ? out->error : "", out->error ? strlen(out->error) : 0);
    va_start(ap, fmt);
    kopt_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (b.ptr) {
        free(out->error);
        out->error = kopt_buf_detach(&b);
    }
}

/* The outcome of a failed transfer and whether it is worth another try. */
static kopt_llm_outcome transport_outcome(CURLcode cc, const http_resp *r, int *retry)
{
    *retry = 1;
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT: return KOPT_LLM_TIMEOUT;
    case CURLE_PARTIAL_FILE: return KOPT_LLM_TRUNCATED;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return KOPT_LLM_NETWORK;
    case CURLE_WRITE_ERROR:
        if (r->too_large) {
            *retry = 0;
            return KOPT_LLM_TOO_LARGE;
        }
        break;
    default:
        break;
    }
    *retry = 0;                    /* TLS, bad URL, protocol: trying again will not help */
    return cc == CURLE_BAD_CONTENT_ENCODING ? KOPT_LLM_MALFORMED : KOPT_LLM_NETWORK;
}

/* One POST. Returns curl's code; *status the HTTP status (0 when none came). */
static CURLcode post(CURL *h, const http_state *s, const char *body, http_resp *r, long *status,
                     char errbuf[CURL_ERROR_SIZE])
{
    CURLcode cc;

    curl_easy_reset(h);
    errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, s->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kopt/" KOPT_VERSION);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(s->o.connect_timeout_s * 1e3));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(s->o.timeout_s * 1e3));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    cc = curl_easy_perform(h);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return cc;
}

/* Try once; fill `out` with the result. Returns 1 when another try may help, with
 * *retry_after_s the server's wish (-1: none). */
static int attempt(CURL *h, http_state *s, const char *body, kopt_llm_reply *out,
                   double *retry_after_s)
{
    http_resp r = {KOPT_BUF_INIT, s->o.max_reply_bytes, 0, -1};
    char errbuf[CURL_ERROR_SIZE], msg[512];
    long status = 0;
    int retry = 0;
    CURLcode cc = post(h, s, body, &r, &status, errbuf);
    const char *name = s->d->name;

    out->http_status = (int)status;
    *retry_after_s = r.retry_after_s;
    if (cc != CURLE_OK) {
        kopt_llm_outcome o = transport_outcome(cc, &r, &retry);
        if (o == KOPT_LLM_TOO_LARGE)
            kopt__llm_fail(out, o, "%s: the reply passed the %zu-byte limit", name, r.max);
        else
            kopt__llm_fail(out, o, "%s: %s%s%s (%s)", name, curl_easy_strerror(cc),
                           errbuf[0] ? ": " : "", errbuf, s->url);
    } else if (status >= 200 && status < 300) {
        s->d->parse(r.body.ptr ? r.body.ptr : "", r.body.len, out);
    } else {
        kopt__llm_error_message(r.body.ptr, r.body.len, msg, sizeof(msg));
        kopt__llm_fail(out, status == 429 ? KOPT_LLM_RATE_LIMITED
                            : status >= 500 ? KOPT_LLM_SERVER_ERROR : KOPT_LLM_HTTP_ERROR,
                       "%s: HTTP %ld: %s", name, status, msg[0] ? msg : "(no message)");
        retry = kopt__llm_status_retryable((int)status);
    }
    kopt_buf_free(&r.body);
    return retry;
}

void kopt__llm_http_call(void *state, const kopt_llm_request *rq, const char *request_json,
                         kopt_llm_reply *out)
{
    http_state *s = state;
    char *body = s->d->build(rq, s->model, s->url);
    CURL *h = body ? curl_easy_init() : NULL;

    (void)request_json;
    if (!h) {
        kopt__llm_fail(out, KOPT_LLM_NETWORK, "%s: cannot start a transfer (out of memory)",
                       s->d->name);
        free(body);
        return;
    }
    for (int n = 0;; n++) {
        double retry_after = -1, wait, u;
        int again;
        kopt_llm_reply fresh = {0};

        memcpy(fresh.request_hash, out->request_hash, sizeof(fresh.request_hash));
        kopt_llm_reply_clear(out);
        *out = fresh;
        again = attempt(h, s, body, out, &retry_after);
        out->attempts = n + 1;
        if (!again || n >= s->o.max_retries)
            break;
        pthread_mutex_lock(&s->lock);
        u = kopt__llm_uniform(&s->rng);
        pthread_mutex_unlock(&s->lock);
        wait = kopt__llm_backoff_s(s->o.backoff_base_s, s->o.backoff_max_s, n, retry_after, u);
        if (wait > s->o.backoff_max_s) {
            append(out, " (the server asks to wait %.0f s, more than the %.0f s limit)", wait,
                   s->o.backoff_max_s);
            break;
        }
        sleep_s(wait);
    }
    curl_easy_cleanup(h);
    free(body);
    if (out->error && out->attempts > 1)
        append(out, " [after %d attempts]", out->attempts);
    /* the provider may quote the key back ("Incorrect API key provided: ..."): never keep it */
    kopt__llm_scrub(&out->error, s->key);
    kopt__llm_scrub(&out->text, s->key);
    kopt__llm_scrub(&out->model, s->key);
    kopt__llm_scrub(&out->finish_reason, s->key);
}

void kopt__llm_http_close(void *state)
{
    http_state *s = state;

    if (!s)
        return;
    curl_slist_free_all(s->headers);
    if (s->key)
        memset(s->key, 0, strlen(s->key));
    free(s->key);
    free(s->url);
    free(s->model);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* The key from the environment (NULL: none); an error when it is needed and missing. */
static kopt_status read_key(kopt_ctx *ctx, const kopt__llm_dialect *d, const kopt_llm_options *o,
                            int custom_base, char **key)
{
    const char *env = o->key_env ? o->key_env : d->key_env;
    const char *v = getenv(env);

    *key = NULL;
    if (v && v[0])
        return (*key = strdup(v)) ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "%s", d->name);
    if (o->key_env)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: the key variable %s is not set", d->name,
                           env);
    if (d->key_required && !custom_base)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: %s is not set (a local server needs no "
                           "key: %s:MODEL@http://127.0.0.1:PORT%s)", d->name, env, d->name,
                           strcmp(d->name, "openai") == 0 ? "/v1" : "");
    return KOPT_OK;
}

kopt_status kopt__llm_http_open(void **state, kopt_ctx *ctx, const kopt__llm_dialect *d,
                                const char *arg, const kopt_llm_options *o, char **model)
{
    http_state *s = NULL;
    char *base = NULL, h1[2048];
    kopt_status rc = KOPT_OK;
    size_t n;

    *state = NULL;
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return kopt_seterr(ctx, KOPT_E_UNSUPPORTED, "%s: libcurl: %s", d->name,
                           curl_easy_strerror(curl_init_rc));
    if (!(s = calloc(1, sizeof(*s))))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "%s", d->name);
    pthread_mutex_init(&s->lock, NULL);
    s->d = d;
    s->o = *o;
    s->rng = o->seed;
    if ((rc = kopt__llm_split_model_url(ctx, d->name, arg, &s->model, &base)) != KOPT_OK)
        goto cleanup;
    if ((rc = read_key(ctx, d, o, base != NULL, &s->key)) != KOPT_OK)
        goto cleanup;
    if (!base && !(base = strdup(d->default_base))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", d->name);
        goto cleanup;
    }
    n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        base[--n] = '\0';
    if (asprintf(&s->url, "%s%s", base, d->path) < 0) {
        s->url = NULL;
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", d->name);
        goto cleanup;
    }
    if (s->key && (strpbrk(s->key, "\r\n") ||
                   snprintf(h1, sizeof(h1), "%s%s", d->key_header, s->key) >= (int)sizeof(h1))) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s: the key in %s is too long or has a line "
                         "break", d->name, o->key_env ? o->key_env : d->key_env);
        goto cleanup;
    }
    s->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (s->headers && s->key)
        s->headers = curl_slist_append(s->headers, h1);
    if (s->headers && d->extra_header)
        s->headers = curl_slist_append(s->headers, d->extra_header);
    memset(h1, 0, sizeof(h1));
    if (!s->headers) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", d->name);
        goto cleanup;
    }
    if (!(*model = strdup(s->model))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s", d->name);
        goto cleanup;
    }
    *state = s;
    s = NULL;
cleanup:
    free(base);
    kopt__llm_http_close(s);
    return rc;
}
