/*
 * The PyTorch worker's timing and census, as the parent reads them: the samples libkopt's
 * clock wrote on the event pipe (include/kopt/clock.h) replace those the worker's Python
 * reported, and must equal them; the kernels the candidate's checked call launched
 * (CUPTI activity) are told apart into the candidate's own and libraries', and their names
 * say the lowest precision a library kernel ran at; a host-mode candidate's own SASS
 * (cuobjdump -sass of its shared object) says the lowest its own kernels compute at
 * (docs/integrity.md, "The PyTorch path"). Also: the host memory the workers' output
 * buffers may take (MemAvailable, or $KOPT_HOST_MEMORY_GB).
 */
#include "eval_int.h"
#include "worker_int.h"

#include "kopt/proc.h"
#include "../profile/sass_int.h"
#include "core/core_int.h"
#include "kopt/profile.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The median of a JSON array of numbers (kopt__timing_from_samples'), 0 when empty. */
static double median_of(json_t *arr)
{
    size_t n = json_array_size(arr);
    double *v = calloc(n + 1, sizeof(double));
    kopt_timing t;

    memset(&t, 0, sizeof(t));
    for (size_t i = 0; v && i < n; i++)
        v[i] = json_number_value(json_array_get(arr, i));
    if (v && n)
        kopt__timing_from_samples(v, (int)n, 0, &t);
    free(v);
    return t.median_ms;
}

/* The same numbers in the same order (an integer and a real of one value are the same). */
static int same_samples(json_t *a, json_t *b)
{
    if (json_array_size(a) != json_array_size(b))
        return 0;
    for (size_t i = 0; i < json_array_size(a); i++)
        if (json_number_value(json_array_get(a, i)) != json_number_value(json_array_get(b, i)))
            return 0;
    return 1;
}

int kopt__torch_clock_apply(kopt__worker_run *run, char *msg, size_t n)
{
    json_t *phases = json_object_get(run->result, "phases"), *ev;
    size_t i;

    json_array_foreach(run->clock, i, ev) {
        json_int_t p = json_integer_value(json_object_get(ev, "phase"));
        json_t *ph = json_array_get(phases, (size_t)p);
        json_t *c_samples = json_object_get(ev, "samples_ms");
        json_t *py = json_object_get(ph, "samples_ms");
        if (!json_is_object(ph) || !json_is_array(c_samples))
            continue;
        if (!same_samples(py, c_samples)) {
            if (msg && n)
                snprintf(msg, n, "the timed samples the worker reported for phase %lld (%zu, "
                         "median %.6g ms) differ from those libkopt's clock kept (%zu, median "
                         "%.6g ms): something changed them between the clock and the report",
                         (long long)p, json_array_size(py), median_of(py),
                         json_array_size(c_samples), median_of(c_samples));
            return 1;
        }
        json_object_set_new(ph, "samples_ms", json_deep_copy(c_samples));
        if (json_array_size(json_object_get(ev, "overhead_ms")))
            json_object_set_new(ph, "event_overhead_ms",
                                json_real(median_of(json_object_get(ev, "overhead_ms"))));
        json_object_set(ph, "clock", json_object_get(ev, "clock"));
    }
    return 0;
}

int kopt__kernel_from_library(const char *name)
{
    return kopt_kernel_origin_is_library(kopt_kernel_origin_of(name));
}

/* The lowest precision a kernel's name shows, ranked fp8 < fp16/bf16 < tf32; NULL. */
static const char *name_precision(const char *name, int *rank)
{
    static const struct { const char *tag, *prec; int rank; } tags[] = {
        {"e4m3", "fp8", 1}, {"e5m2", "fp8", 1}, {"fp8", "fp8", 1}, {"Float8_", "fp8", 1},
        {"bf16", "bf16", 2}, {"bfloat16", "bf16", 2}, {"BFloat16", "bf16", 2},
        {"4Half", "fp16", 2}, {"f16", "fp16", 2}, {"h16", "fp16", 2}, {"fp16", "fp16", 2},
        {"hmma", "fp16", 2},
        {"tf32", "tf32", 3}, {"s1688", "tf32", 3}, {"s16816", "tf32", 3},
    };
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
        if (strstr(name, tags[i].tag)) {
            *rank = tags[i].rank;
            return tags[i].prec;
        }
    *rank = 99;
    return NULL;
}

void kopt__torch_census(kopt_eval_result *r, const kopt__worker_run *run)
{
    json_t *ph = json_array_get(json_object_get(run->result, "phases"), 0);
    json_t *names = json_object_get(ph, "kernels"), *k;
    const char *clock = json_string_value(json_object_get(ph, "clock"));
    const char *why = json_string_value(json_object_get(ph, "clock_error"));
    const char *err = json_string_value(json_object_get(ph, "census_error"));
    json_t *ev;
    int best = 99, kept = 0;
    size_t i, used = 0;

    json_array_foreach(run->clock, i, ev)          /* libkopt's own report of phase 0 */
        if (json_integer_value(json_object_get(ev, "phase")) == 0)
            kept = 1;
    if (clock && kept)
        snprintf(r->timer, sizeof(r->timer), "libkopt: %s", clock);
    else if (clock)
        snprintf(r->timer, sizeof(r->timer), "%s%s%s", clock, why ? ": " : "", why ? why : "");
    if (!json_is_array(names)) {
        if (err) {
            r->census = -1;
            snprintf(r->census_note, sizeof(r->census_note), "%s", err);
        }
        return;
    }
    r->census = 1;
    r->kernels_launched = 0;
    r->own_kernels = 0;
    r->own_kernel_names[0] = r->precision[0] = '\0';
    json_array_foreach(names, i, k) {
        const char *name = json_string_value(k);
        const char *prec;
        int rank;
        if (!name || name[0] == '+')      /* "+N more": the list was cut */
            continue;
        r->kernels_launched++;
        if (!kopt__kernel_from_library(name)) {
            int w;
            r->own_kernels++;
            if (used < sizeof(r->own_kernel_names) - 1) {
                w = snprintf(r->own_kernel_names + used, sizeof(r->own_kernel_names) - used,
                             "%s%s", used ? " " : "", name);
                used = w > 0 ? used + (size_t)w : used;
                if (used >= sizeof(r->own_kernel_names))
                    used = sizeof(r->own_kernel_names) - 1;
            }
            continue;
        }
        prec = name_precision(name, &rank);
        if (prec && rank < best) {
            best = rank;
            snprintf(r->precision, sizeof(r->precision), "%s", prec);
        }
    }
}

/* The precision of one SASS instruction's mnemonic (with its suffixes), rank as above;
 * NULL for one that computes at FP32 or wider, or is no arithmetic. A conversion that rounds
 * to a narrower float counts at that float: F2F.BF16.F32 and F2F.F16.F32 (one value),
 * F2FP.BF16[.F32].PACK_AB and F2FP[.F16.F32].PACK_AB (two; no type is FP16), as ptxas
 * writes them for sm_80 and sm_90: a value kept in bf16 between FP32 operations has bf16's
 * precision though no bf16 arithmetic appears (widening back is a shift or PRMT). */
static const char *op_precision(const char *op, int *rank)
{
    int mma = strncmp(op, "HMMA", 4) == 0 || strncmp(op, "HGMMA", 5) == 0;

    *rank = 99;
    if (strncmp(op, "QGMMA", 5) == 0 || strstr(op, "E4M3") || strstr(op, "E5M2"))
        return *rank = 1, "fp8";
    if (strncmp(op, "IMMA", 4) == 0 || strncmp(op, "IGMMA", 5) == 0)
        return *rank = 1, "int8";
    if (strncmp(op, "F2FP.", 5) == 0) {
        if (strncmp(op + 5, "BF16", 4) == 0)
            return *rank = 2, "bf16";
        if (strncmp(op + 5, "F16.", 4) == 0 || strncmp(op + 5, "PACK_AB", 7) == 0)
            return *rank = 2, "fp16";
        return NULL;
    }
    if (strncmp(op, "F2F.", 4) == 0) {   /* F2F.TO.FROM */
        if (strncmp(op + 4, "BF16.", 5) == 0)
            return *rank = 2, "bf16";
        if (strncmp(op + 4, "F16.", 4) == 0)
            return *rank = 2, "fp16";
        return NULL;
    }
    if (strstr(op, "BF16"))
        return (mma || strncmp(op, "HFMA2", 5) == 0 || strncmp(op, "HADD2", 5) == 0 ||
                strncmp(op, "HMUL2", 5) == 0) ? (*rank = 2, "bf16") : NULL;
    if (mma && strstr(op, "TF32"))
        return *rank = 3, "tf32";
    if (mma || strncmp(op, "HFMA2", 5) == 0 || strncmp(op, "HADD2", 5) == 0 ||
        strncmp(op, "HMUL2", 5) == 0)
        return *rank = 2, "fp16";
    return NULL;
}

void kopt__sass_precision(const char *sass, char *out, size_t n)
{
    int best = 99;

    out[0] = '\0';
    for (const char *p = sass; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        /* an instruction's mnemonic: the first upper-case word of the line, after its
         * address (lower-case hex in a comment) and predicate ("@P0") */
        const char *q = p, *end = p + len;
        while (q < end) {
            char op[64];
            size_t k = 0;
            int rank;
            const char *prec;
            if (*q == '@') {               /* a predicate: @P0, @!PT */
                while (q < end && *q != ' ' && *q != '\t')
                    q++;
                continue;
            }
            if (*q < 'A' || *q > 'Z') {
                q++;
                continue;
            }
            while (q < end && k < sizeof(op) - 1 && (((*q >= 'A' && *q <= 'Z') ||
                   (*q >= '0' && *q <= '9') || *q == '.' || *q == '_' || *q == 'x')))
                op[k++] = *q++;
            op[k] = '\0';
            if (strncmp(op, "HFMA2", 5) == 0 && kopt__sass_hfma2_is_move(q, (size_t)(end - q)))
                break;
            if ((prec = op_precision(op, &rank)) && rank < best) {
                best = rank;
                snprintf(out, n, "%s", prec);
            }
            break;            /* one mnemonic a line */
        }
        p = e ? e + 1 : NULL;
    }
}

/* The functions with code in `binary`, comma-separated (malloc'd; "" none): the .text.NAME
 * sections cuobjdump -elf lists (a kernel's, holding the device functions it calls too).
 * NULL when it cannot tell, or the list is too long for one argument. */
static char *text_sections(kopt_ctx *ctx, const char *tool, const char *binary)
{
    const char *argv[] = {tool, "-elf", binary, NULL};
    char *text = NULL, *names = NULL;
    size_t len = 0, cap = 0;
    int code = 0;

    if (kopt_proc_run(ctx, argv, 60, &code, &text) != KOPT_OK || code != 0 || !text) {
        free(text);
        return NULL;
    }
    names = strdup("");
    for (const char *p = text; names && (p = strstr(p, ".text.")) != NULL;) {
        const char *name = p += 6, *comma;
        size_t k = strcspn(name, " \t\r\n,");
        int seen = 0;
        p += k;
        for (const char *q = names; k && *q && !seen; q = (comma = strchr(q, ',')) ? comma + 1 : "")
            seen = strncmp(q, name, k) == 0 && (q[k] == ',' || q[k] == '\0');
        if (!k || seen)
            continue;
        if (len + k + 2 > 64 * 1024) {  /* one argument stays far below Linux's 128 KiB */
            free(names);
            names = NULL;
            break;
        }
        if (len + k + 2 > cap) {
            char *grown = realloc(names, cap = (len + k + 2) * 2);
            if (!grown) {
                free(names);
                names = NULL;
                break;
            }
            names = grown;
        }
        len += (size_t)sprintf(names + len, "%s%.*s", len ? "," : "", (int)k, name);
    }
    free(text);
    return names;
}

/* cuobjdump from the nvidia-cuda-cuobjdump wheel, looked for once (a python3 run). */
static char *pip_cuobjdump;
static pthread_once_t pip_cuobjdump_once = PTHREAD_ONCE_INIT;

static void find_pip_cuobjdump(void)
{
    kopt_ctx *ctx = kopt_ctx_new();

    if (ctx)
        pip_cuobjdump = kopt__find_pip_program(ctx, "cuobjdump");
    kopt_ctx_free(ctx);
}

/* $KOPT_CUOBJDUMP, PATH, the CUDA toolkit, then the wheel's; malloc'd or NULL. */
static char *find_cuobjdump(void)
{
    char *tool = kopt_find_program("KOPT_CUOBJDUMP", "cuobjdump");

    if (tool)
        return tool;
    pthread_once(&pip_cuobjdump_once, find_pip_cuobjdump);
    return pip_cuobjdump ? strdup(pip_cuobjdump) : NULL;
}

/* One `cuobjdump -sass [-fun names]` of the binary, run on a thread of its own: cuobjdump
 * sets its disassembler up again for every function it prints (about 0.2 s each, measured
 * with cuobjdump 13.0), so a candidate's functions are read by up to SASS_READERS of these at
 * once, each with its share of the names. */
#define SASS_READERS 4
typedef struct {
    const char *tool, *binary;
    char *names;         /* comma-separated, or NULL: every function */
    char *text;          /* its listing (malloc'd) */
    int code, ok;        /* ok: it ran and exited 0 */
    pthread_t thread;
} sass_read;

static void *sass_read_run(void *arg)
{
    sass_read *r = arg;
    kopt_ctx *ctx = kopt_ctx_new();
    const char *argv[6];
    int a = 0;

    argv[a++] = r->tool;
    argv[a++] = "-sass";
    if (r->names) {
        argv[a++] = "-fun";
        argv[a++] = r->names;
    }
    argv[a++] = r->binary;
    argv[a] = NULL;
    r->ok = ctx && kopt_proc_run(ctx, argv, 60, &r->code, &r->text) == KOPT_OK && r->code == 0;
    kopt_ctx_free(ctx);
    return NULL;
}

/* The names (comma-separated) dealt round-robin to `k` readers' lists; 0 when out of memory. */
static int deal_names(const char *names, sass_read *rd, int k)
{
    size_t len = strlen(names) + 1;
    int i = 0;

    for (int j = 0; j < k; j++)
        if (!(rd[j].names = calloc(len, 1)))
            return 0;
    for (const char *p = names; *p; i++) {
        size_t w = strcspn(p, ",");
        char *dst = rd[i % k].names;
        size_t at = strlen(dst);
        if (at)
            dst[at++] = ',';
        memcpy(dst + at, p, w);
        dst[at + w] = '\0';
        p += w;
        if (*p == ',')
            p++;
    }
    return 1;
}

void kopt__binary_precision(kopt_ctx *ctx, const char *binary, char *out, size_t n,
                            char *note, size_t nn)
{
    char *tool = find_cuobjdump(), *names;
    sass_read rd[SASS_READERS];
    kopt_buf all = KOPT_BUF_INIT;
    int k = 1, failed = -1, started[SASS_READERS] = {0};

    out[0] = note[0] = '\0';
    if (!tool) {
        snprintf(note, nn, "no cuobjdump (set KOPT_CUOBJDUMP, install the CUDA toolkit, or pip "
                 "install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm): the candidate's own "
                 "SASS was not read");
        return;
    }
    /* only the cubins with functions are disassembled (a host-mode .so has cudart's
     * too, with none: nvdisasm's ~0.3 s for nothing) */
    names = text_sections(ctx, tool, binary);
    if (names && !names[0]) {          /* no device code at all */
        free(names);
        free(tool);
        return;
    }
    memset(rd, 0, sizeof(rd));
    if (names)
        for (const char *c = names; *c && k < SASS_READERS; c++)
            k += *c == ',';
    for (int j = 0; j < k; j++) {
        rd[j].tool = tool;
        rd[j].binary = binary;
    }
    if (k == 1) {
        rd[0].names = names;
        names = NULL;
    } else if (!deal_names(names, rd, k)) {
        for (int j = 0; j < k; j++)   /* out of memory: one reader, every function */
            free(rd[j].names), rd[j].names = NULL;
        k = 1;
    }
    for (int j = 1; j < k; j++)       /* the first on this thread */
        if (!(started[j] = pthread_create(&rd[j].thread, NULL, sass_read_run, &rd[j]) == 0))
            sass_read_run(&rd[j]);
    sass_read_run(&rd[0]);
    for (int j = 0; j < k; j++) {
        if (started[j])
            pthread_join(rd[j].thread, NULL);
        if (!rd[j].ok && failed < 0)
            failed = j;
        else if (rd[j].text)
            kopt_buf_append(&all, rd[j].text, strlen(rd[j].text));
        free(rd[j].text);
        free(rd[j].names);
    }
    if (failed >= 0)
        snprintf(note, nn, "cuobjdump -sass %s failed (exit %d)", binary, rd[failed].code);
    else
        kopt__sass_precision(kopt_buf_cstr(&all), out, n);
    kopt_buf_free(&all);
    free(names);
    free(tool);
}

/* What cuobjdump said of the binaries this process read, by file identity (device, inode,
 * size, modification time): a session's candidates that compile to a binary already read
 * (the compile cache's hit) skip the 0.7-1.5 s it takes. A read ahead (kopt optimize's
 * compiles) is in the table while it runs: an evaluation of that binary waits for it instead
 * of reading it again. Kept in memory only: nothing a candidate could write to. */
#define PRECISION_CACHE 64
enum { SEEN_FREE, SEEN_READING, SEEN_DONE };
static struct {
    int state;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    char out[16];
} precision_seen[PRECISION_CACHE];
static int precision_next;
static pthread_mutex_t precision_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t precision_read = PTHREAD_COND_INITIALIZER;   /* a read ended */

/* The entry of this file (any state), or -1; under precision_mu. */
static int precision_find(const struct stat *st)
{
    for (int i = 0; i < PRECISION_CACHE; i++)
        if (precision_seen[i].state != SEEN_FREE && precision_seen[i].ino == st->st_ino &&
            precision_seen[i].dev == st->st_dev && precision_seen[i].size == st->st_size &&
            st->st_ino && precision_seen[i].mtime.tv_sec == st->st_mtim.tv_sec &&
            precision_seen[i].mtime.tv_nsec == st->st_mtim.tv_nsec)
            return i;
    return -1;
}

/* A new entry for this file in `state` (the oldest replaced, unless it is being read:
 * then none, -1); under precision_mu. */
static int precision_add(const struct stat *st, int state)
{
    int i = precision_next;

    if (precision_seen[i].state == SEEN_READING)
        return -1;
    precision_next = (precision_next + 1) % PRECISION_CACHE;
    precision_seen[i].state = state;
    precision_seen[i].dev = st->st_dev;
    precision_seen[i].ino = st->st_ino;
    precision_seen[i].size = st->st_size;
    precision_seen[i].mtime = st->st_mtim;
    precision_seen[i].out[0] = '\0';
    return i;
}

/* What an earlier read found (1, into out), or 0: none, or one that failed. A read under
 * way is waited for. */
static int precision_lookup(const struct stat *st, char *out, size_t n)
{
    int i, hit = 0;

    pthread_mutex_lock(&precision_mu);
    while ((i = precision_find(st)) >= 0 && precision_seen[i].state == SEEN_READING)
        pthread_cond_wait(&precision_read, &precision_mu);
    if (i >= 0) {
        snprintf(out, n, "%s", precision_seen[i].out);
        hit = 1;
    }
    pthread_mutex_unlock(&precision_mu);
    return hit;
}

/* Whether a read of this file is under way (taken by another thread) or done: 1; else 0. */
static int precision_known(const struct stat *st)
{
    int known;

    pthread_mutex_lock(&precision_mu);
    known = precision_find(st) >= 0;
    pthread_mutex_unlock(&precision_mu);
    return known;
}

/* A read ends: `out` remembered (failed: the entry dropped, so that the next reads again). */
static void precision_remember(const struct stat *st, const char *out, int failed)
{
    int i;

    pthread_mutex_lock(&precision_mu);
    if ((i = precision_find(st)) < 0 && !failed)
        i = precision_add(st, SEEN_DONE);
    if (i >= 0) {
        precision_seen[i].state = failed ? SEEN_FREE : SEEN_DONE;
        snprintf(precision_seen[i].out, sizeof(precision_seen[0].out), "%s", out);
    }
    pthread_cond_broadcast(&precision_read);
    pthread_mutex_unlock(&precision_mu);
}

static void *precision_thread(void *arg)
{
    kopt__precision_job *j = arg;
    kopt_ctx *ctx = kopt_ctx_new();     /* a context of its own: errors stay in this thread */

    if (!ctx) {
        snprintf(j->note, sizeof(j->note), "no memory for cuobjdump's context");
        if (j->have_stat)
            precision_remember(&j->st, "", 1);
        return NULL;
    }
    kopt__binary_precision(ctx, j->binary, j->out, sizeof(j->out), j->note, sizeof(j->note));
    if (j->have_stat)
        precision_remember(&j->st, j->out, j->note[0] != '\0');
    kopt_ctx_free(ctx);
    return NULL;
}

void kopt__binary_precision_start(kopt__precision_job *j, const char *binary)
{
    memset(j, 0, sizeof(*j));
    snprintf(j->binary, sizeof(j->binary), "%s", binary);
    j->have_stat = stat(binary, &j->st) == 0;
    if (j->have_stat && precision_known(&j->st)) {
        j->cached = 1;                 /* read before, unchanged since, or being read: _wait */
        return;
    }
    j->started = pthread_create(&j->thread, NULL, precision_thread, j) == 0;
    if (!j->started)
        snprintf(j->note, sizeof(j->note), "cuobjdump's thread did not start");
}

void kopt__binary_precision_wait(kopt__precision_job *j)
{
    kopt__binary_precision_end(j);
    if (j->cached && !j->waited) {     /* the read ahead's outcome, or ours if it failed */
        j->waited = 1;
        if (!precision_lookup(&j->st, j->out, sizeof(j->out))) {
            j->cached = 0;
            precision_thread(j);       /* on this thread */
        }
    }
}

void kopt__binary_precision_end(kopt__precision_job *j)
{
    if (j->started)
        pthread_join(j->thread, NULL);
    j->started = 0;
}

/* The read ahead's thread: the job is its own. */
static void *read_ahead_thread(void *arg)
{
    precision_thread(arg);
    free(arg);
    return NULL;
}

void kopt_eval_read_ahead(const kopt_problem *prob, const kopt_compiled *comp)
{
    kopt__precision_job *j;
    pthread_attr_t attr;
    int taken = 0;

    if (!prob || !prob->ref_torch || !comp || !comp->host_mode || !comp->binary_path ||
        !(j = calloc(1, sizeof(*j))))
        return;
    snprintf(j->binary, sizeof(j->binary), "%s", comp->binary_path);
    if (stat(j->binary, &j->st) == 0) {
        pthread_mutex_lock(&precision_mu);
        taken = precision_find(&j->st) < 0 && precision_add(&j->st, SEEN_READING) >= 0;
        pthread_mutex_unlock(&precision_mu);
    }
    j->have_stat = taken;
    /* in a thread of its own, not waited for: the evaluation that needs it waits (its
     * _start finds the entry), the compiles ahead do not */
    if (taken && pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&j->thread, &attr, read_ahead_thread, j) == 0) {
            pthread_attr_destroy(&attr);
            return;
        }
        pthread_attr_destroy(&attr);
    }
    if (taken)
        precision_remember(&j->st, "", 1);   /* no thread: the evaluation reads it */
    free(j);
}

size_t kopt__host_available_bytes(void)
{
    const char *env = getenv("KOPT_HOST_MEMORY_GB");   /* what kopt may assume, if set */
    FILE *f;
    char line[256];
    unsigned long long kb = 0;

    if (env && env[0] && atof(env) > 0)
        return (size_t)(atof(env) * 1e9);
    if (!(f = fopen("/proc/meminfo", "r")))
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (size_t)kb * 1024;
}
