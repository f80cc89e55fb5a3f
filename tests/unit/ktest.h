/*
 * ktest.h: a tiny assertion framework for kopt's unit tests (header only, C11).
 *
 *     static void test_something(void) { CHECK(1 + 1 == 2); CHECK_EQ_INT(f(), 3); }
 *     int main(int argc, char **argv) {
 *         static const ktest_case cases[] = { KTEST(test_something), ... };
 *         return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
 *     }
 *
 * A failing check prints "file:line: test: what" to stderr and marks the running test
 * failed (the test goes on, so one run shows every failing check). ktest_main runs every
 * case (or only those named on the command line), prints "ok"/"FAIL" per case and the
 * closing line "ktest: N passed, M failed", and returns 1 when any case failed (0 when
 * none did), so CTest sees the failure. Arguments name the cases to run (default: all).
 * A case can also report itself skipped (KTEST_SKIP), which counts as passed
 * and prints "skipped: <why>".
 * Also here: small helpers for temporary folders and files (ktest_tmpdir, ktest_rmtree,
 * ktest_write_file, ktest_read_file).
 */
#ifndef KTEST_H
#define KTEST_H

#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ktest_case {
    const char *name;
    void (*fn)(void);
} ktest_case;

#define KTEST(fn) {#fn, fn}
#define KTEST_COUNT(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

/* The state of the running case. `quiet` silences failure reports (used by the
 * framework's own self-test, which makes checks fail on purpose). */
typedef struct ktest_state {
    const char *current;
    int failures;          /* failed checks in the current case */
    long checks;           /* checks run in total */
    int quiet;
    int skipped;
} ktest_state;

static inline ktest_state *ktest_st(void)
{
    static ktest_state st;
    return &st;
}

static inline void ktest_failf(const char *file, int line, const char *fmt, ...)
{
    ktest_state *st = ktest_st();
    va_list ap;

    st->failures++;
    if (st->quiet)
        return;
    fprintf(stderr, "%s:%d: %s: ", file, line, st->current ? st->current : "?");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static inline int ktest_check_(int ok, const char *expr, const char *file, int line)
{
    ktest_st()->checks++;
    if (!ok)
        ktest_failf(file, line, "CHECK(%s) failed", expr);
    return ok;
}

static inline int ktest_check_int_(long long a, long long b, const char *ea, const char *eb,
                                   const char *file, int line)
{
    ktest_st()->checks++;
    if (a != b)
        ktest_failf(file, line, "CHECK_EQ_INT(%s, %s) failed: %lld != %lld", ea, eb, a, b);
    return a == b;
}

static inline int ktest_check_str_(const char *a, const char *b, const char *ea, const char *eb,
                                   const char *file, int line)
{
    int ok = a && b && strcmp(a, b) == 0;
    ktest_st()->checks++;
    if (!ok)
        ktest_failf(file, line, "CHECK_EQ_STR(%s, %s) failed: \"%s\" != \"%s\"", ea, eb,
                    a ? a : "(null)", b ? b : "(null)");
    return ok;
}

static inline int ktest_check_contains_(const char *h, const char *n, const char *eh,
                                        const char *en, const char *file, int line)
{
    int ok = h && n && strstr(h, n) != NULL;
    ktest_st()->checks++;
    if (!ok)
        ktest_failf(file, line, "CHECK_STR_CONTAINS(%s, %s) failed: \"%s\" does not contain "
                    "\"%s\"", eh, en, h ? h : "(null)", n ? n : "(null)");
    return ok;
}

static inline int ktest_check_near_(double a, double b, double tol, const char *ea,
                                    const char *eb, const char *file, int line)
{
    double d = a > b ? a - b : b - a;
    int ok = d <= tol;   /* false for NaN */
    ktest_st()->checks++;
    if (!ok)
        ktest_failf(file, line, "CHECK_NEAR(%s, %s) failed: %.17g vs %.17g (tol %g)", ea, eb,
                    a, b, tol);
    return ok;
}

/* Each check evaluates to 1 when it held, 0 when it failed (so a test can stop early:
 * `if (!CHECK(p != NULL)) return;`). */
#define CHECK(cond) ktest_check_(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ_INT(a, b) ktest_check_int_((long long)(a), (long long)(b), #a, #b, __FILE__, \
                                            __LINE__)
#define CHECK_EQ_STR(a, b) ktest_check_str_((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_STR_CONTAINS(haystack, needle) \
    ktest_check_contains_((haystack), (needle), #haystack, #needle, __FILE__, __LINE__)
#define CHECK_NEAR(a, b, tol) ktest_check_near_((a), (b), (tol), #a, #b, __FILE__, __LINE__)
/* Fail unconditionally with a message. */
#define KTEST_FAIL(...) ktest_failf(__FILE__, __LINE__, __VA_ARGS__)
/* Mark the running case skipped (it still counts as passed unless a check failed). */
#define KTEST_SKIP(why) (ktest_st()->skipped = 1, printf("  skipped: %s\n", (why)))

static inline int ktest_main(int argc, char **argv, const ktest_case *cases, int n)
{
    ktest_state *st = ktest_st();
    int passed = 0, failed = 0;

    setvbuf(stdout, NULL, _IONBF, 0);
    for (int i = 0; i < n; i++) {
        int selected = argc <= 1;
        for (int a = 1; a < argc; a++)
            selected |= strcmp(argv[a], cases[i].name) == 0;
        if (!selected)
            continue;
        st->current = cases[i].name;
        st->failures = 0;
        st->skipped = 0;
        st->quiet = 0;
        cases[i].fn();
        if (st->failures) {
            failed++;
            printf("FAIL %s (%d failed check%s)\n", cases[i].name, st->failures,
                   st->failures == 1 ? "" : "s");
        } else {
            passed++;
            printf("ok   %s%s\n", cases[i].name, st->skipped ? " (skipped)" : "");
        }
        fflush(stderr);
    }
    st->current = NULL;
    printf("ktest: %d passed, %d failed\n", passed, failed);
    if (passed + failed == 0) {
        fprintf(stderr, "ktest: no test matched the names given\n");
        return 1;
    }
    return failed ? 1 : 0;
}

/* ---- the environment ---------------------------------------------------------------- */

/* Put variable `name` back as it was: `saved` is the copy of its value a test made before
 * changing it (NULL: it was not set). */
static inline void ktest_restore_env(const char *name, const char *saved)
{
    if (saved)
        setenv(name, saved, 1);
    else
        unsetenv(name);
}

/* ---- temporary files ---------------------------------------------------------------- */

/* A fresh folder under $TMPDIR (or /tmp): caller frees the string and removes the
 * folder with ktest_rmtree. NULL (and a failed check) when it cannot be made. */
static inline char *ktest_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char *path;
    size_t n;

    if (!base || !base[0])
        base = "/tmp";
    n = strlen(base) + strlen(tag) + 32;
    path = malloc(n);
    if (!path)
        return NULL;
    snprintf(path, n, "%s/ktest-%s-XXXXXX", base, tag);
    if (!mkdtemp(path)) {
        KTEST_FAIL("mkdtemp(%s) failed", path);
        free(path);
        return NULL;
    }
    return path;
}

static inline int ktest_rm_one_(const char *path, const struct stat *sb, int flag,
                                struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* rm -rf `path` (only ever called on folders made by ktest_tmpdir). */
static inline void ktest_rmtree(const char *path)
{
    if (path && strstr(path, "/ktest-"))
        nftw(path, ktest_rm_one_, 16, FTW_DEPTH | FTW_PHYS);
}

/* Write `text` to dir/name; returns the full path (caller frees) or NULL. */
static inline char *ktest_write_file(const char *dir, const char *name, const char *text)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    FILE *f;

    if (!path)
        return NULL;
    snprintf(path, n, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text)) {
        KTEST_FAIL("cannot write %s", path);
        if (f)
            fclose(f);
        free(path);
        return NULL;
    }
    fclose(f);
    return path;
}

/* The whole file as a NUL-terminated string (caller frees), or NULL. */
static inline char *ktest_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = malloc((size_t)n + 1))) {
        fclose(f);
        return NULL;
    }
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

#endif
