/* The short form of a compile log whose errors come from deep inside CuTe/CUTLASS
 * templates: the first error, the CuTe function it was instantiating, and the candidate's
 * own line that led there. nvcc and NVRTC write
 *     /path/include/cute/algorithm/gemm.hpp(408): error: static assertion failed
 *         static_assert(...);
 *         ^
 *               detected during:
 *                 instantiation of "void cute::gemm(...) [with MMA=...]" at line 475 of ...
 *                 instantiation of "..." at line 25 of broken_cute.cu
 * and the host compiler (gcc) writes "file:line:col: error: message". */
#include "kopt/cute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEMPLATE 240   /* characters of an instantiated signature kept */

/* A header path cut to where CuTe/CUTLASS's own tree begins ("cute/algorithm/gemm.hpp"). */
static const char *short_path(const char *p, size_t n, size_t *out_n)
{
    static const char *const roots[] = {"/include/cute/", "/include/cutlass/", NULL};

    for (const char *const *r = roots; *r; r++) {
        const char *s = p;
        while ((s = strstr(s, *r)) && s < p + n) {
            *out_n = n - (size_t)(s + 9 - p);
            return s + 9;   /* after "/include/" */
        }
    }
    *out_n = n;
    return p;
}

static int in_cutlass(const char *p, size_t n)
{
    size_t sn;
    return short_path(p, n, &sn) != p;
}

/* "path(123): error: msg" or "path:123:4: error: msg": the path, line and message. */
static int parse_error(const char *line, size_t len, const char **path, size_t *plen, int *ln,
                       const char **msg)
{
    const char *e = NULL;

    for (const char *p = line; p + 8 < line + len; p++)
        if (strncmp(p, ": error", 7) == 0 || strncmp(p, ": catastrophic error", 20) == 0) {
            e = p;
            break;
        }
    if (!e)
        return 0;
    *msg = strstr(e, "error") + 5;
    while (**msg == ':' || **msg == ' ')
        (*msg)++;
    if (e > line && e[-1] == ')') {                 /* path(123) */
        const char *o = e - 1;
        while (o > line && o[-1] != '(')
            o--;
        if (o == line)
            return 0;
        *ln = atoi(o);
        *path = line;
        *plen = (size_t)(o - 1 - line);
        return 1;
    }
    {                                               /* path:123:4 */
        const char *c = e - 1;
        int colons = 0;
        while (c > line && colons < 2) {
            if (*c == ':')
                colons++;
            if (colons < 2)
                c--;
        }
        if (colons == 2 && c > line) {
            *path = line;
            *plen = (size_t)(c - line);
            *ln = atoi(c + 1);
            return 1;
        }
    }
    *path = line;
    *plen = 0;
    *ln = 0;
    return 1;
}

char *kopt_cute_summarize_errors(const char *log)
{
    kopt_buf out = KOPT_BUF_INIT;
    const char *line = log, *first = NULL, *first_end = NULL;
    const char *path = NULL, *msg = NULL, *code = NULL, *inner = NULL, *cand = NULL;
    size_t plen = 0, code_len = 0, inner_len = 0, cand_len = 0;
    int ln = 0, nerrors = 0, in_block = 0, nlines = 0;

    for (; line && *line; nlines++) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *p, *m;
        size_t pl;
        int l;

        if (parse_error(line, len, &p, &pl, &l, &m)) {
            nerrors++;
            if (!first) {
                first = line;
                first_end = line + len;
                path = p;
                plen = pl;
                ln = l;
                msg = m;
                in_block = 1;
            } else {
                in_block = 0;
            }
        } else if (first && in_block && !code && len && line[0] == ' ' &&
                   !memmem(line, len, "detected during", 15) && strspn(line, " ^") != len) {
            code = line + strspn(line, " ");
            code_len = len - strspn(line, " ");
        } else if (first && in_block && (p = strstr(line, "instantiation of \"")) &&
                   p < line + len) {
            /* the signature, then "at line N of FILE" */
            const char *sig = p + 18, *at = strstr(sig, "\" at line ");
            if (at && at < line + len) {
                const char *of = strstr(at, " of ");
                size_t siglen = (size_t)(at - sig);
                if (!inner) {   /* with its [with ...] bindings: they name the atom */
                    inner = sig;
                    inner_len = siglen;
                }
                if (of && of < line + len && !in_cutlass(of + 4, (size_t)(line + len - of - 4))) {
                    cand = at + 2;   /* "at line N of FILE", the last such frame wins */
                    cand_len = (size_t)(line + len - cand);
                }
            }
        } else if (first && in_block && len == 0) {
            in_block = 0;
        }
        line = eol ? eol + 1 : NULL;
    }
    if (!first)
        return strdup("");
    {
        size_t sl;
        const char *sp = short_path(path, plen, &sl);
        kopt_buf_printf(&out, "first error: %.*s%s%d: %.*s\n", (int)sl, sp, sl ? ":" : "", ln,
                        (int)(first_end - msg), msg);
    }
    if (code)
        kopt_buf_printf(&out, "  %.*s\n", (int)(code_len > 200 ? 200 : code_len), code);
    if (inner)
        kopt_buf_printf(&out, "while instantiating: %.*s%s\n",
                        (int)(inner_len > MAX_TEMPLATE ? MAX_TEMPLATE : inner_len), inner,
                        inner_len > MAX_TEMPLATE ? " ..." : "");
    if (cand) {
        /* "at line 25 of broken_cute.cu" -> "broken_cute.cu:25" */
        int cl = atoi(cand + 8);
        const char *of = strstr(cand, " of ");
        kopt_buf_printf(&out, "from the candidate: %.*s:%d\n",
                        of ? (int)(cand + cand_len - of - 4) : 0, of ? of + 4 : "", cl);
    } else if (path && !in_cutlass(path, plen)) {
        kopt_buf_printf(&out, "(in the candidate's own code)\n");
    }
    kopt_buf_printf(&out, "%d error%s in a log of %d lines\n", nerrors, nerrors == 1 ? "" : "s",
                    nlines);
    return kopt_buf_detach(&out);
}
