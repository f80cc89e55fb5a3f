/*
 * kopt/core.h: status codes, the error/log context, and small shared helpers.
 *
 * Ownership: a kopt_ctx is created with kopt_ctx_new() and freed with kopt_ctx_free().
 * The message returned by kopt_errmsg() is borrowed and valid until the next call that
 * sets an error on the same context. Strings the library returns as `char **out` are
 * owned by the caller and freed with free(). Every *_free() function accepts NULL.
 * The library never prints and never exits: it returns a status and leaves a one-line
 * message on the context; logs go through the callback set with kopt_log_set().
 */
#ifndef KOPT_CORE_H
#define KOPT_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KOPT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KOPT_PRINTF(a, b)
#endif

/* Status: 0 is success, negative values are errors. Only outcomes a caller can act on
 * get their own code; everything else is KOPT_E_ERROR. */
typedef enum kopt_status {
    KOPT_OK = 0,
    KOPT_E_ERROR = -1,       /* anything else; see kopt_errmsg() */
    KOPT_E_NOMEM = -2,       /* host allocation failed */
    KOPT_E_INVALID = -3,     /* bad input: a file, a field, an expression, an option */
    KOPT_E_NOT_FOUND = -4,   /* a file, a kernel, a name that does not exist */
    KOPT_E_IO = -5,          /* reading or writing a file failed */
    KOPT_E_COMPILE = -6,     /* the compiler rejected the source (log on the context) */
    KOPT_E_NO_DEVICE = -7,   /* no driver, no GPU, or a library could not be loaded */
    KOPT_E_CUDA = -8,        /* a CUDA call failed */
    KOPT_E_TIMEOUT = -9,     /* a worker did not answer in time */
    KOPT_E_UNSUPPORTED = -10,/* feature not built in or not available here */
    KOPT_E_DB = -11          /* the store (SQLite) failed */
} kopt_status;

/* The version of the library's binary interface: raised whenever a public struct, an
 * enum's values or a function's signature changes. A binding (the Python package) checks
 * kopt_abi_version() against the one it was written for and refuses another. */
#define KOPT_ABI_VERSION 1
int kopt_abi_version(void);
/* kopt's version ("0.1.0": the CMake project's, kopt --version's). Never NULL. */
const char *kopt_version_string(void);

/* A short constant name for a status ("invalid input", ...). Never NULL. */
const char *kopt_status_str(kopt_status st);

typedef enum kopt_log_level {
    KOPT_LOG_DEBUG = 0, KOPT_LOG_INFO = 1, KOPT_LOG_WARN = 2, KOPT_LOG_ERROR = 3
} kopt_log_level;

typedef void (*kopt_log_fn)(kopt_log_level level, const char *msg, void *user);

typedef struct kopt_ctx kopt_ctx;

/* Create a context (error message slot + log settings). NULL when out of memory. */
kopt_ctx *kopt_ctx_new(void);
void kopt_ctx_free(kopt_ctx *ctx);

/* Route log lines at or above `min_level` to `fn` (NULL: the default, stderr). */
void kopt_log_set(kopt_ctx *ctx, kopt_log_fn fn, void *user, kopt_log_level min_level);
void kopt_log(kopt_ctx *ctx, kopt_log_level level, const char *fmt, ...) KOPT_PRINTF(3, 4);

/* Set the context's message (one line, no trailing newline) and return `st`. */
kopt_status kopt_seterr(kopt_ctx *ctx, kopt_status st, const char *fmt, ...) KOPT_PRINTF(3, 4);
/* Prefix the current message with "prefix: " (adds where-context on the way up). */
kopt_status kopt_adderr(kopt_ctx *ctx, kopt_status st, const char *fmt, ...) KOPT_PRINTF(3, 4);
/* The last message set on the context ("" if none). Borrowed. */
const char *kopt_errmsg(const kopt_ctx *ctx);
/* Longer detail attached to the last error (a compiler log, say), or "". Borrowed. */
const char *kopt_errdetail(const kopt_ctx *ctx);
void kopt_set_errdetail(kopt_ctx *ctx, const char *detail);

/* ---- growable string --------------------------------------------------------------- */
typedef struct kopt_buf {
    char *ptr;      /* NUL-terminated, or NULL while empty */
    size_t len;
    size_t cap;
} kopt_buf;
#define KOPT_BUF_INIT {NULL, 0, 0}
int kopt_buf_append(kopt_buf *b, const char *s, size_t n);        /* 0 or -1 (nomem) */
int kopt_buf_printf(kopt_buf *b, const char *fmt, ...) KOPT_PRINTF(2, 3);
int kopt_buf_vprintf(kopt_buf *b, const char *fmt, va_list ap) KOPT_PRINTF(2, 0);
const char *kopt_buf_cstr(const kopt_buf *b);                       /* never NULL */
char *kopt_buf_detach(kopt_buf *b);                                 /* caller frees */
void kopt_buf_free(kopt_buf *b);

/* ---- files ---------------------------------------------------------------------------- */
/* Read a whole file into a NUL-terminated buffer (*out caller-owned). */
kopt_status kopt_file_read(kopt_ctx *ctx, const char *path, char **out, size_t *len);
/* Write atomically (temp file + rename). */
kopt_status kopt_file_write(kopt_ctx *ctx, const char *path, const void *data, size_t len);
/* mkdir -p. */
kopt_status kopt_mkdirs(kopt_ctx *ctx, const char *path);
/* Join a folder and a relative path (an absolute `rel` is returned as is). Caller frees. */
char *kopt_path_join(const char *dir, const char *rel);
/* The folder part of a path ("." when none). Caller frees. */
char *kopt_path_dir(const char *path);
/* The cache folder: $KOPT_CACHE_DIR, else $XDG_CACHE_HOME/kopt, else ~/.cache/kopt. Caller frees. */
char *kopt_cache_dir(void);

/* ---- hashing -------------------------------------------------------------------------- */
/* Incremental SHA-256; the hex digest has 64 characters plus NUL. */
typedef struct kopt_hash kopt_hash;
kopt_hash *kopt_hash_new(void);
void kopt_hash_add(kopt_hash *h, const void *data, size_t len);
void kopt_hash_add_str(kopt_hash *h, const char *s);   /* adds the string and a separator */
void kopt_hash_hex(kopt_hash *h, char out[65]);         /* finishes and frees h */
void kopt_sha256_hex(const void *data, size_t len, char out[65]);
/* SHA-256 of a file's content (hex). KOPT_E_IO when it cannot be read. */
kopt_status kopt_file_sha256(kopt_ctx *ctx, const char *path, char out[65]);

/* ---- time ----------------------------------------------------------------------------- */
double kopt_now_ms(void);   /* monotonic milliseconds */

/* CPUs this process may run on, at least 1: its affinity (mpirun binds each rank to one core
 * unless told otherwise, a batch system may give a few), and no more than its cgroup's CPU
 * quota allows (a container given 16 CPUs' time of a 64-CPU host: 16). */
int kopt_cpus_usable(void);
/* Whole CPUs of a cgroup v2 cpu.max text ("QUOTA PERIOD", rounded up; e.g. "1600000 100000"
 * is 16), 0 for "max" (no quota) or text that is not one. Pure. */
int kopt_cpus_from_cpu_max(const char *text);

/* Commits this process made to kopt stores (store.c counts them; the file guard reads the
 * count to tell kopt's own writes to a store from a candidate's). */
unsigned long kopt_store_commits(void);
void kopt__store_commit_seen(void);

#ifdef __cplusplus
}
#endif
#endif
