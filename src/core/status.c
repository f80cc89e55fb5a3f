/* Status names, the error context, and the log callback (see kopt/core.h). */
#include "kopt/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kopt_ctx {
    char msg[2048];
    char *detail;
    kopt_log_fn log_fn;
    void *log_user;
    kopt_log_level min_level;
};

const char *kopt_status_str(kopt_status st)
{
    switch (st) {
    case KOPT_OK: return "ok";
    case KOPT_E_ERROR: return "error";
    case KOPT_E_NOMEM: return "out of memory";
    case KOPT_E_INVALID: return "invalid input";
    case KOPT_E_NOT_FOUND: return "not found";
    case KOPT_E_IO: return "i/o error";
    case KOPT_E_COMPILE: return "compile error";
    case KOPT_E_NO_DEVICE: return "no GPU";
    case KOPT_E_CUDA: return "CUDA error";
    case KOPT_E_TIMEOUT: return "timeout";
    case KOPT_E_UNSUPPORTED: return "unsupported";
    case KOPT_E_DB: return "store error";
    }
    return "unknown status";
}

kopt_ctx *kopt_ctx_new(void)
{
    kopt_ctx *ctx = calloc(1, sizeof(*ctx));
    if (ctx)
        ctx->min_level = KOPT_LOG_WARN;
    return ctx;
}

void kopt_ctx_free(kopt_ctx *ctx)
{
    if (!ctx)
        return;
    free(ctx->detail);
    free(ctx);
}

void kopt_log_set(kopt_ctx *ctx, kopt_log_fn fn, void *user, kopt_log_level min_level)
{
    ctx->log_fn = fn;
    ctx->log_user = user;
    ctx->min_level = min_level;
}

void kopt_log(kopt_ctx *ctx, kopt_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warning", "error"};
    char line[2048];
    va_list ap;

    if (!ctx || level < ctx->min_level)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (ctx->log_fn)
        ctx->log_fn(level, line, ctx->log_user);
    else
        fprintf(stderr, "kopt: %s: %s\n", names[level], line);
}

static void strip_newlines(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

kopt_status kopt_seterr(kopt_ctx *ctx, kopt_status st, const char *fmt, ...)
{
    va_list ap;

    if (!ctx)
        return st;
    char tmp[sizeof(ctx->msg)];
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);   /* arguments may point into ctx->msg */
    va_end(ap);
    memcpy(ctx->msg, tmp, sizeof(tmp));
    strip_newlines(ctx->msg);
    free(ctx->detail);
    ctx->detail = NULL;
    return st;
}

kopt_status kopt_adderr(kopt_ctx *ctx, kopt_status st, const char *fmt, ...)
{
    char prefix[1024], old[sizeof(ctx->msg)];
    va_list ap;

    if (!ctx)
        return st;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, ctx->msg, sizeof(old));
    {
        size_t n = strlen(prefix);
        memcpy(ctx->msg, prefix, n);
        ctx->msg[n] = ':';
        ctx->msg[n + 1] = ' ';
        memcpy(ctx->msg + n + 2, old, sizeof(ctx->msg) - n - 3);
        ctx->msg[sizeof(ctx->msg) - 1] = '\0';
    }
    strip_newlines(ctx->msg);
    return st;
}

const char *kopt_errmsg(const kopt_ctx *ctx)
{
    return ctx ? ctx->msg : "";
}

const char *kopt_errdetail(const kopt_ctx *ctx)
{
    return ctx && ctx->detail ? ctx->detail : "";
}

void kopt_set_errdetail(kopt_ctx *ctx, const char *detail)
{
    if (!ctx)
        return;
    free(ctx->detail);
    ctx->detail = detail ? strdup(detail) : NULL;
}
