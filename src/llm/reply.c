/* Replies as untrusted input: outcome names, UTF-8 checks, provider error messages, and
 * scrubbing secrets out of anything kopt keeps or shows. */
#include "llm_int.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const outcome_names[KOPT_LLM_OUTCOME_COUNT] = {
    "ok", "length", "refusal", "empty", "malformed", "bad_utf8", "too_large", "truncated",
    "http_error", "rate_limited", "server_error", "timeout", "network", "command_failed",
    "replay_miss", "budget",
};

const char *kopt_llm_outcome_name(kopt_llm_outcome o)
{
    return (unsigned)o < KOPT_LLM_OUTCOME_COUNT ? outcome_names[o] : "unknown";
}

int kopt_llm_outcome_parse(const char *name)
{
    for (int i = 0; name && i < KOPT_LLM_OUTCOME_COUNT; i++)
        if (strcmp(name, outcome_names[i]) == 0)
            return i;
    return -1;
}

void kopt_llm_reply_clear(kopt_llm_reply *r)
{
    if (!r)
        return;
    free(r->text);
    free(r->finish_reason);
    free(r->model);
    free(r->error);
    memset(r, 0, sizeof(*r));
}

void kopt__llm_set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? strdup(s) : NULL;
}

int kopt__llm_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

/* Make `s` one printable line: control characters become spaces, invalid UTF-8 becomes '?'. */
static void one_line(char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F) {
            s[i++] = ' ';
        } else if (c < 0x80) {
            i++;
        } else {
            size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            if (i + len <= n && kopt__llm_utf8_valid(s + i, len))
                i += len;
            else
                s[i++] = '?';
        }
    }
}

void kopt__llm_fail(kopt_llm_reply *out, kopt_llm_outcome o, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    one_line(msg);
    out->outcome = o;
    kopt__llm_set_str(&out->error, msg);
}

void kopt__llm_error_message(const char *body, size_t len, char *msg, size_t cap)
{
    json_t *j = NULL, *e;
    const char *m = NULL, *type = NULL;

    msg[0] = '\0';
    if (!body || !len || cap < 2)
        return;
    if (kopt__llm_utf8_valid(body, len))
        j = json_loadb(body, len, 0, NULL);
    if (json_is_object(j)) {
        e = json_object_get(j, "error");
        if (json_is_object(e)) {
            m = json_string_value(json_object_get(e, "message"));
            type = json_string_value(json_object_get(e, "type"));
        } else if (json_is_string(e)) {
            m = json_string_value(e);
        }
        if (!m)
            m = json_string_value(json_object_get(j, "message"));
        if (!m)
            m = json_string_value(json_object_get(j, "detail"));
    }
    if (m && type)
        snprintf(msg, cap, "%s: %s", type, m);
    else if (m)
        snprintf(msg, cap, "%s", m);
    else {
        /* not a known shape: the body's start, at most 200 bytes */
        size_t n = len < 200 ? len : 200;
        n = n < cap - 1 ? n : cap - 1;
        memcpy(msg, body, n);
        msg[n] = '\0';
    }
    json_decref(j);
    one_line(msg);
}

void kopt__llm_scrub(char **s, const char *secret)
{
    static const char mark[] = "[redacted]";
    size_t sl;
    kopt_buf b = KOPT_BUF_INIT;
    const char *p, *hit;

    if (!s || !*s || !secret || (sl = strlen(secret)) < 8 || !strstr(*s, secret))
        return;
    for (p = *s; (hit = strstr(p, secret)); p = hit + sl) {
        kopt_buf_append(&b, p, (size_t)(hit - p));
        kopt_buf_append(&b, mark, sizeof(mark) - 1);
    }
    kopt_buf_append(&b, p, strlen(p));
    free(*s);
    *s = kopt_buf_detach(&b);
}

json_t *kopt__llm_parse_body(const char *name, const char *body, size_t len,
                             kopt_llm_reply *out)
{
    json_error_t err;
    json_t *j, *e;
    char msg[512];

    if (!kopt__llm_utf8_valid(body, len)) {
        kopt__llm_fail(out, KOPT_LLM_BAD_UTF8, "%s: the reply is not valid UTF-8", name);
        return NULL;
    }
    if (!(j = json_loadb(body, len, 0, &err))) {
        kopt__llm_fail(out, KOPT_LLM_MALFORMED, "%s: the reply is not JSON (line %d: %s)", name,
                       err.line, err.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        kopt__llm_fail(out, KOPT_LLM_MALFORMED, "%s: the reply is not a JSON object", name);
        json_decref(j);
        return NULL;
    }
    e = json_object_get(j, "error");
    if ((e && !json_is_null(e)) || (json_is_string(json_object_get(j, "type")) &&
                                    strcmp(json_string_value(json_object_get(j, "type")),
                                           "error") == 0)) {
        kopt__llm_error_message(body, len, msg, sizeof(msg));
        kopt__llm_fail(out, KOPT_LLM_HTTP_ERROR, "%s: error in a %d reply: %s", name,
                       out->http_status, msg);
        json_decref(j);
        return NULL;
    }
    return j;
}

int64_t kopt__llm_count(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (int64_t)json_integer_value(v) : 0;
}
