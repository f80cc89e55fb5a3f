/* A growable NUL-terminated string (kopt_buf), used to build messages, JSON and logs. */
#include "kopt/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(kopt_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1, cap;
    char *p;

    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    p = realloc(b->ptr, cap);
    if (!p)
        return -1;
    b->ptr = p;
    b->cap = cap;
    return 0;
}

int kopt_buf_append(kopt_buf *b, const char *s, size_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    memcpy(b->ptr + b->len, s, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return 0;
}

int kopt_buf_vprintf(kopt_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || reserve(b, (size_t)n) < 0)
        return -1;
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int kopt_buf_printf(kopt_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = kopt_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *kopt_buf_cstr(const kopt_buf *b)
{
    return b->ptr ? b->ptr : "";
}

char *kopt_buf_detach(kopt_buf *b)
{
    char *p = b->ptr ? b->ptr : strdup("");

    b->ptr = NULL;
    b->len = b->cap = 0;
    return p;
}

void kopt_buf_free(kopt_buf *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}
