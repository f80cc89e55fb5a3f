/* Parsing the roles' replies: untrusted text in, a plan or a candidate source out. Nothing
 * here runs, opens or evaluates any part of a reply. */
#include "kopt/agent.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const failure_names[KOPT_AGENT_FAILURE_COUNT] = {
    "ok", "no_reply", "no_code", "edit_malformed", "edit_not_found", "edit_ambiguous",
    "forbidden", "unchanged", "too_large", "not_template", "search_limit"};

const char *kopt_agent_failure_name(kopt_agent_failure f)
{
    return (unsigned)f < KOPT_AGENT_FAILURE_COUNT ? failure_names[f] : "?";
}

/* ---- plans -------------------------------------------------------------------------------- */

/* If `line` (up to `end`) is "<key>: value" (markdown emphasis, bullets and any case
 * allowed), the start of the value; else NULL. */
static const char *keyed(const char *line, const char *end, const char *key)
{
    size_t k = strlen(key);

    while (line < end && (*line == ' ' || *line == '*' || *line == '-' || *line == '#' ||
                          *line == '_' || *line == '\t'))
        line++;
    if ((size_t)(end - line) < k + 1 || strncasecmp(line, key, k) != 0)
        return NULL;
    line += k;
    while (line < end && (*line == '*' || *line == '_'))
        line++;
    if (line >= end || *line != ':')
        return NULL;
    line++;
    while (line < end && (*line == ' ' || *line == '*' || *line == '_' || *line == '\t'))
        line++;
    return line;
}

/* Copy [a, b) to out (trimmed, at most n - 1 bytes, emphasis markers at the end dropped). */
static void copy_trim(char *out, size_t n, const char *a, const char *b)
{
    size_t len;

    while (a < b && isspace((unsigned char)*a))
        a++;
    while (b > a && (isspace((unsigned char)b[-1]) || b[-1] == '*' || b[-1] == '_'))
        b--;
    len = (size_t)(b - a) < n - 1 ? (size_t)(b - a) : n - 1;
    memcpy(out, a, len);
    out[len] = 0;
}

kopt_agent_failure kopt_agent_parse_plan(const char *reply, kopt_agent_plan *out)
{
    const char *p = reply ? reply : "", *first = NULL, *first_end = NULL;
    int have_plan = 0;

    memset(out, 0, sizeof(*out));
    snprintf(out->kind, sizeof(out->kind), "other");
    while (*p) {
        const char *end = strchr(p, '\n'), *v;
        if (!end)
            end = p + strlen(p);
        if ((v = keyed(p, end, "plan"))) {
            /* the plan runs on until the next keyed line or a blank line */
            const char *q = end;
            while (*q == '\n' && q[1] && q[1] != '\n') {
                const char *e2 = strchr(q + 1, '\n');
                if (!e2)
                    e2 = q + 1 + strlen(q + 1);
                if (keyed(q + 1, e2, "kind") || keyed(q + 1, e2, "tool") ||
                    keyed(q + 1, e2, "gain") || keyed(q + 1, e2, "why"))
                    break;
                q = e2;
            }
            copy_trim(out->text, sizeof(out->text), v, q);
            have_plan = out->text[0] != 0;
            end = q;
        } else if ((v = keyed(p, end, "kind"))) {
            char *c;
            copy_trim(out->kind, sizeof(out->kind), v, end);
            for (c = out->kind; *c; c++)
                *c = isalnum((unsigned char)*c) ? (char)tolower((unsigned char)*c) : '-';
            if (!out->kind[0])
                snprintf(out->kind, sizeof(out->kind), "other");
        } else if ((v = keyed(p, end, "tool"))) {
            copy_trim(out->tool, sizeof(out->tool), v, end);
            if (strcasecmp(out->tool, "none") == 0 || strcmp(out->tool, "-") == 0)
                out->tool[0] = 0;
        } else if ((v = keyed(p, end, "gain"))) {
            double g = strtod(v, NULL);
            out->gain = g >= 1.0 && g <= 1000.0 ? g : 0.0;
        } else if (!first && end > p) {
            const char *a = p;
            while (a < end && isspace((unsigned char)*a))
                a++;
            if (a < end && strncmp(a, "```", 3) != 0) {
                first = a;
                first_end = end;
            }
        }
        p = *end ? end + 1 : end;
    }
    if (!have_plan && first)
        copy_trim(out->text, sizeof(out->text), first, first_end);
    return out->text[0] ? KOPT_AGENT_OK : KOPT_AGENT_NO_REPLY;
}

/* ---- code --------------------------------------------------------------------------------- */

static kopt_agent_failure fail(kopt_agent_failure f, char *why, size_t n, const char *fmt, ...)
    KOPT_PRINTF(4, 5);
static kopt_agent_failure fail(kopt_agent_failure f, char *why, size_t n, const char *fmt, ...)
{
    va_list ap;

    if (why && n) {
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return f;
}

/* Does a label (a fence's info string, or a "File: x" line) name a protected file? */
static const char *names_protected(const char *a, const char *b, const kopt_agent_guard *g)
{
    const char *names[2] = {g ? g->problem_file : NULL, g ? g->reference_file : NULL};

    for (int i = 0; i < 2; i++) {
        size_t k;
        if (!names[i] || !names[i][0])
            continue;
        k = strlen(names[i]);
        for (const char *p = a; p + k <= b; p++)
            if (strncmp(p, names[i], k) == 0 &&
                (p == a || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                (p + k == b || !(isalnum((unsigned char)p[k]) || p[k] == '_')))
                return names[i];
    }
    return NULL;
}

/* The line before `at` (within text), as [a, b). */
static void line_before(const char *text, const char *at, const char **a, const char **b)
{
    const char *e = at, *s;

    if (e > text && e[-1] == '\n')
        e--;
    s = e;
    while (s > text && s[-1] != '\n')
        s--;
    *a = s;
    *b = e;
}

/* Count occurrences of `needle` (length n) in `hay`; *first set to the first. */
static int occurrences(const char *hay, const char *needle, size_t n, const char **first)
{
    int count = 0;

    *first = NULL;
    for (const char *p = hay; (p = strstr(p, needle)); p++) {
        (void)n;
        if (!count)
            *first = p;
        count++;
    }
    return count;
}

#define EDIT_SEARCH "<<<<<<< SEARCH"
#define EDIT_SEP "======="
#define EDIT_END ">>>>>>> REPLACE"

/* Apply the edit blocks of `reply` to `parent`. */
static kopt_agent_failure apply_edits(const char *reply, const char *parent,
                                      const kopt_agent_guard *g, char **out, char *why,
                                      size_t n)
{
    char *cur = strdup(parent ? parent : ""), *search = NULL;
    const char *p = reply;
    int nblock = 0;
    kopt_agent_failure f = KOPT_AGENT_OK;

    while (cur && (p = strstr(p, EDIT_SEARCH))) {
        const char *s0 = strchr(p, '\n'), *sep, *r0, *end, *la, *lb, *hit, *prot;
        size_t slen;
        kopt_buf b = KOPT_BUF_INIT;
        char num[32];

        nblock++;
        snprintf(num, sizeof(num), "%d", nblock);
        line_before(reply, p, &la, &lb);
        if ((prot = names_protected(la, lb, g))) {
            f = fail(KOPT_AGENT_FORBIDDEN, why, n, "an edit block targets %s, which may not "
                     "be changed", prot);
            goto out;
        }
        /* from the newline that ends the SEARCH line, so an empty SEARCH text is seen */
        if (!s0 || !(sep = strstr(s0, "\n" EDIT_SEP)) || !(end = strstr(sep, "\n" EDIT_END))) {
            f = fail(KOPT_AGENT_EDIT_MALFORMED, why, n, "edit block %s has no '=======' "
                     "separator or no '>>>>>>> REPLACE' end", num);
            goto out;
        }
        slen = (size_t)(sep - s0);   /* s0 is the newline: the text is (s0, sep) */
        s0++;
        slen = slen ? slen - 1 : 0;
        r0 = sep + 1 + strlen(EDIT_SEP);
        if (*r0 == '\n')
            r0++;
        if (slen == 0) {
            f = fail(KOPT_AGENT_EDIT_MALFORMED, why, n, "edit block %s has an empty SEARCH "
                     "text", num);
            goto out;
        }
        free(search);
        if (!(search = strndup(s0, slen)))
            break;
        switch (occurrences(cur, search, slen, &hit)) {
        case 0:
            f = fail(KOPT_AGENT_EDIT_NOT_FOUND, why, n, "the SEARCH text of edit block %s is "
                     "not in the parent kernel (it must match exactly, whitespace included)",
                     num);
            goto out;
        case 1:
            break;
        default:
            f = fail(KOPT_AGENT_EDIT_AMBIGUOUS, why, n, "the SEARCH text of edit block %s "
                     "occurs more than once in the parent kernel; quote more lines", num);
            goto out;
        }
        kopt_buf_append(&b, cur, (size_t)(hit - cur));
        if (end > r0)
            kopt_buf_append(&b, r0, (size_t)(end - r0));
        kopt_buf_append(&b, hit + slen, strlen(hit + slen));
        free(cur);
        cur = kopt_buf_detach(&b);
        p = end + 1 + strlen(EDIT_END);
    }
    if (!cur) {
        f = fail(KOPT_AGENT_TOO_LARGE, why, n, "out of memory");
        goto out;
    }
    *out = cur;
    cur = NULL;
out:
    free(search);
    free(cur);
    return f;
}

static int looks_like_kernel(const char *a, size_t len)
{
    static const char *const marks[] = {"__global__", "kopt_candidate_run"};

    for (size_t m = 0; m < 2; m++) {
        size_t k = strlen(marks[m]);
        for (size_t i = 0; i + k <= len; i++)
            if (memcmp(a + i, marks[m], k) == 0)
                return 1;
    }
    return 0;
}

/* The best fenced block: the longest that holds a kernel. */
static kopt_agent_failure pick_fenced(const char *reply, const kopt_agent_guard *g, char **out,
                                      char *why, size_t n, int *nfences)
{
    const char *p = reply, *best = NULL;
    size_t best_len = 0;
    const char *forbidden = NULL;
    int unterminated = 0;

    *nfences = 0;
    while ((p = strstr(p, "```"))) {
        const char *info = p + 3, *nl = strchr(info, '\n'), *close, *la, *lb, *prot;
        if (!nl) {
            unterminated = 1;
            break;
        }
        close = strstr(nl + 1, "```");
        /* a closing fence must start a line */
        while (close && close[-1] != '\n')
            close = strstr(close + 3, "```");
        (*nfences)++;
        if (!close) {
            unterminated = 1;
            break;
        }
        line_before(reply, p, &la, &lb);
        prot = names_protected(info, nl, g);
        if (!prot && lb > la && lb - la < 120)
            prot = names_protected(la, lb, g);
        if (looks_like_kernel(nl + 1, (size_t)(close - nl - 1))) {
            if (prot)
                forbidden = prot;
            else if ((size_t)(close - nl - 1) > best_len) {
                best = nl + 1;
                best_len = (size_t)(close - nl - 1);
            }
        }
        p = close + 3;
    }
    if (best) {
        *out = strndup(best, best_len);
        return *out ? KOPT_AGENT_OK : KOPT_AGENT_TOO_LARGE;
    }
    if (forbidden)
        return fail(KOPT_AGENT_FORBIDDEN, why, n, "the reply's code block is %s, which may not "
                    "be changed; write the candidate kernel instead", forbidden);
    if (unterminated)
        return fail(KOPT_AGENT_NO_CODE, why, n, "a code block is not closed with ``` (was the "
                    "reply cut short?)");
    return KOPT_AGENT_NO_CODE;
}

kopt_agent_failure kopt_agent_extract_code(const char *reply, const char *parent,
                                           const kopt_agent_guard *g, char **out, char *why,
                                           size_t whylen)
{
    kopt_agent_failure f;
    const char *t = reply ? reply : "";
    char *src = NULL;
    int nfences = 0;

    *out = NULL;
    if (why && whylen)
        why[0] = 0;
    if (!t[0])
        return fail(KOPT_AGENT_NO_REPLY, why, whylen, "the reply is empty");
    if (strstr(t, EDIT_SEARCH)) {
        if ((f = apply_edits(t, parent, g, &src, why, whylen)) != KOPT_AGENT_OK)
            return f;
    } else if ((f = pick_fenced(t, g, &src, why, whylen, &nfences)) != KOPT_AGENT_OK) {
        const char *a = t;
        if (f != KOPT_AGENT_NO_CODE || nfences)
            goto nocode;
        while (isspace((unsigned char)*a))
            a++;
        /* bare code: the whole reply, when it starts like a source file */
        if (!(looks_like_kernel(a, strlen(a)) &&
              (*a == '#' || *a == '/' || strncmp(a, "__global__", 10) == 0 ||
               strncmp(a, "extern", 6) == 0 || strncmp(a, "template", 8) == 0 ||
               strncmp(a, "static", 6) == 0)))
            goto nocode;
        if (!(src = strdup(a)))
            return KOPT_AGENT_TOO_LARGE;
    }
    if (strlen(src) > KOPT_AGENT_MAX_SOURCE) {
        free(src);
        return fail(KOPT_AGENT_TOO_LARGE, why, whylen, "the candidate is larger than 256 KiB");
    }
    if (!looks_like_kernel(src, strlen(src))) {
        free(src);
        return fail(KOPT_AGENT_NO_CODE, why, whylen, "the result has no __global__ kernel "
                    "(nor a host-mode kopt_candidate_run)");
    }
    if (parent && strcmp(src, parent) == 0) {
        free(src);
        return fail(KOPT_AGENT_UNCHANGED, why, whylen, "the result is the parent kernel "
                    "unchanged");
    }
    if (g && g->reference_src && strcmp(src, g->reference_src) == 0 &&
        !(parent && strcmp(parent, g->reference_src) == 0)) {
        free(src);
        return fail(KOPT_AGENT_FORBIDDEN, why, whylen, "the result is the reference itself");
    }
    *out = src;
    return KOPT_AGENT_OK;
nocode:
    if (why && whylen && !why[0])
        snprintf(why, whylen, "no code block with a __global__ kernel in the reply (put the "
                 "whole .cu file in one ```cuda block, or use SEARCH/REPLACE edit blocks)");
    return f == KOPT_AGENT_OK ? KOPT_AGENT_NO_CODE : f;
}

/* ---- tool calls ----------------------------------------------------------------------------- */

/* One trimmed query line [a, b) into the list (counted even when not kept). */
static void add_query(char **q, int cap, int *n, const char *a, const char *b)
{
    while (a < b && isspace((unsigned char)*a))
        a++;
    while (b > a && isspace((unsigned char)b[-1]))
        b--;
    if (b == a)
        return;
    if (*n < cap && q) {
        size_t len = (size_t)(b - a) < KOPT_AGENT_MAX_QUERY ? (size_t)(b - a) :
                     KOPT_AGENT_MAX_QUERY;
        q[*n] = strndup(a, len);
    }
    (*n)++;
}

int kopt_agent_parse_searches(const char *reply, int max, char ***queries)
{
    const char *p = reply ? reply : "";
    int n = 0, cap = max > 0 ? max : 0;

    *queries = cap ? calloc((size_t)cap, sizeof(char *)) : NULL;
    while ((p = strstr(p, "```"))) {
        const char *info = p + 3, *nl, *body, *close;
        int ours;
        if (p != reply && p[-1] != '\n') {   /* a fence starts a line */
            p += 3;
            continue;
        }
        if (!(nl = strchr(info, '\n')))
            break;
        while (info < nl && (*info == ' ' || *info == '\t'))
            info++;
        ours = (size_t)(nl - info) >= 11 && strncmp(info, "cute-search", 11) == 0 &&
               (info + 11 == nl || isspace((unsigned char)info[11]));
        body = nl + 1;
        /* the closing fence starts a line; an unterminated block runs to the end */
        close = strncmp(body, "```", 3) == 0 ? body - 1 : strstr(nl, "\n```");
        if (ours) {
            const char *end = close ? close : body + strlen(body), *q = body;
            while (q < end) {
                const char *e = memchr(q, '\n', (size_t)(end - q));
                if (!e)
                    e = end;
                add_query(*queries, cap, &n, q, e);
                q = e + 1;
            }
        }
        if (!close)
            break;
        p = close + 4;
    }
    return n;
}

void kopt_agent_queries_free(char **queries, int n)
{
    if (!queries)
        return;
    for (int i = 0; i < n; i++)
        free(queries[i]);
    free(queries);
}
