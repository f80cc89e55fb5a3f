/*
 * Nsight Compute (ncu) as a metric source: the command lines that profile a program (or
 * print a saved report) as CSV, and the parsers of that CSV into kopt_profile.
 *
 * The raw page (`--csv --page raw`): row 1 names the columns (ID, Process ID, Kernel Name,
 * Block Size "(256, 1, 1)", Grid Size, Device, CC, then one column per metric), row 2
 * gives each metric's unit, then one row per profiled launch. Numbers keep thousands
 * separators ("131,744") even in base units; a log written with --log-file also carries
 * ncu's "==PROF==" lines, and one table per profiled process (kopt's workers are
 * separate processes). The details page (`--page details`) has one row per section metric
 * or rule result; only the rule rows are kept (kopt_ncu_rule). Columns are found by name.
 */
#include "kopt/profile.h"
#include "kopt/proc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- CSV reading ------------------------------------------------------------------------ */

typedef struct csv_reader {
    const char *start, *p, *end;
    const char *path;
    int line;                /* line of *p, 1-based */
} csv_reader;

typedef struct csv_row {
    char **f;                /* unquoted fields, owned */
    int n, cap;
    int line;                /* line the row starts on */
} csv_row;

static void row_clear(csv_row *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->f[i]);
    r->n = 0;
}

static void row_free(csv_row *r)
{
    row_clear(r);
    free(r->f);
    r->f = NULL;
    r->cap = 0;
}

static int row_push(csv_row *r, kopt_buf *field)
{
    char *s;

    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 32;
        char **f = realloc(r->f, (size_t)cap * sizeof(*f));
        if (!f)
            return -1;
        r->f = f;
        r->cap = cap;
    }
    s = field->ptr ? kopt_buf_detach(field) : strdup("");
    if (!s)
        return -1;
    r->f[r->n++] = s;
    return 0;
}

/* Skip blank lines and ncu's own lines ("==PROF== ...", "==WARNING== ...") between rows. */
static void skip_noise(csv_reader *c)
{
    while (c->p < c->end) {
        const char *eol = memchr(c->p, '\n', (size_t)(c->end - c->p));
        const char *q = c->p;
        while (q < c->end && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        int blank = q == c->end || *q == '\n';
        int noise = c->end - c->p >= 2 && c->p[0] == '=' && c->p[1] == '=';
        if (!blank && !noise)
            return;
        if (!eol) {
            c->p = c->end;
            return;
        }
        c->p = eol + 1;
        c->line++;
    }
}

/* Read one row. 1: a row in *r; 0: end of text; <0: error (message set). */
static int csv_next(csv_reader *c, csv_row *r, kopt_ctx *ctx, kopt_status *st)
{
    kopt_buf field = KOPT_BUF_INIT;

    row_clear(r);
    skip_noise(c);
    if (c->p >= c->end)
        return 0;
    r->line = c->line;
    for (;;) {
        if (c->p < c->end && *c->p == '"') {             /* quoted field */
            int open_line = c->line;
            c->p++;
            for (;;) {
                const char *q = c->p;
                while (q < c->end && *q != '"')
                    q++;
                if (q >= c->end) {
                    *st = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: unterminated quoted field "
                                      "(field %d; the quote opened here)", c->path, open_line,
                                      r->n + 1);
                    goto fail;
                }
                for (const char *s = c->p; s < q; s++)
                    c->line += *s == '\n';
                if (kopt_buf_append(&field, c->p, (size_t)(q - c->p)) < 0)
                    goto nomem;
                c->p = q + 1;
                if (c->p < c->end && *c->p == '"') {      /* "" is a quote */
                    if (kopt_buf_append(&field, "\"", 1) < 0)
                        goto nomem;
                    c->p++;
                    continue;
                }
                break;
            }
            if (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r') {
                *st = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: unexpected '%c' after the "
                                  "closing quote of field %d (unbalanced quotes?)", c->path,
                                  c->line, *c->p, r->n + 1);
                goto fail;
            }
        } else {                                          /* bare field */
            const char *q = c->p;
            while (q < c->end && *q != ',' && *q != '\n' && *q != '\r')
                q++;
            if (kopt_buf_append(&field, c->p, (size_t)(q - c->p)) < 0)
                goto nomem;
            c->p = q;
        }
        if (row_push(r, &field) < 0)
            goto nomem;
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '\r')
            c->p++;
        if (c->p < c->end && *c->p == '\n') {
            c->p++;
            c->line++;
        }
        kopt_buf_free(&field);
        return 1;
    }
nomem:
    *st = kopt_seterr(ctx, KOPT_E_NOMEM, "%s:%d: reading CSV", c->path, c->line);
fail:
    kopt_buf_free(&field);
    return -1;
}

/* The last line of the text (for "nothing found" messages at its end). */
static int last_line(const csv_reader *c)
{
    return c->line > 1 && c->end > c->start && c->end[-1] == '\n' ? c->line - 1 : c->line;
}

static int col_index(const csv_row *header, const char *name)
{
    for (int i = 0; i < header->n; i++)
        if (strcmp(header->f[i], name) == 0)
            return i;
    return -1;
}

static kopt_status check_width(kopt_ctx *ctx, const char *path, const csv_row *r,
                               const csv_row *header, int at_eof)
{
    if (r->n == header->n)
        return KOPT_OK;
    return kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: row has %d field%s, header has %d%s", path,
                       r->line, r->n, r->n == 1 ? "" : "s", header->n,
                       at_eof && r->n < header->n ? " (text truncated?)" : "");
}

/* ---- numbers and units -------------------------------------------------------------- */

/* Parse a number that may carry thousands separators ("131,744", "1,234.5"). Commas must
 * group digits by three (so a decimal comma, "0,5", is refused, not misread). */
static int parse_number(const char *s, double *out)
{
    char buf[128];
    size_t n = 0;
    int digits_since_comma = -1;     /* -1: no comma seen in the integer part */
    int int_digits = 0, in_frac = 0;
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    for (const char *p = s; *p; p++) {
        if (n + 1 >= sizeof(buf))
            return -1;
        if (*p == ',') {
            if (in_frac || int_digits == 0 || (digits_since_comma >= 0 && digits_since_comma != 3))
                return -1;
            digits_since_comma = 0;
            continue;
        }
        if (isdigit((unsigned char)*p) && !in_frac) {
            int_digits++;
            if (digits_since_comma >= 0)
                digits_since_comma++;
        } else if (*p == '.' || *p == 'e' || *p == 'E') {
            if (digits_since_comma >= 0 && digits_since_comma != 3)
                return -1;
            in_frac = 1;
        }
        buf[n++] = *p;
    }
    if (digits_since_comma >= 0 && !in_frac && digits_since_comma != 3)
        return -1;
    while (n && isspace((unsigned char)buf[n - 1]))
        n--;
    buf[n] = '\0';
    if (!n)
        return -1;
    errno = 0;
    *out = strtod(buf, &end);
    if (*end || errno == ERANGE)
        return -1;
    return 0;
}

/* The multiplier of one unit word: "Kbyte" 1e3, "Gbyte" 1e9, "usecond" 1e-6 (*is_time = 1),
 * "cycle" 1, "Ghz" 1e9. Unknown words count as 1: ncu's base units ("byte", "inst",
 * "sector", "warp", "thread", ...) need no conversion. */
static double word_scale(const char *w, size_t n, int *is_time)
{
    static const struct { char c; double f; } up[] = {
        {'K', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}, {'P', 1e15}};
    static const struct { char c; double f; } down[] = {{'m', 1e-3}, {'u', 1e-6}, {'n', 1e-9}};
    double f = 1;

    *is_time = 0;
    if (n >= 2 && w[1] == 'i' && n >= 3 && islower((unsigned char)w[2])) {   /* Kibyte */
        for (size_t i = 0; i < sizeof(up) / sizeof(up[0]); i++)
            if (w[0] == up[i].c) {
                f = pow(1024.0, (double)(i + 1));
                w += 2;
                n -= 2;
                break;
            }
    } else if (n >= 2 && islower((unsigned char)w[1])) {
        for (size_t i = 0; i < sizeof(up) / sizeof(up[0]); i++)
            if (w[0] == up[i].c) {
                f = up[i].f;
                w++;
                n--;
                break;
            }
        if (f == 1 && n == 7 && strncmp(w + 1, "second", 6) == 0)
            for (size_t i = 0; i < sizeof(down) / sizeof(down[0]); i++)
                if (w[0] == down[i].c) {
                    f = down[i].f;
                    w++;
                    n--;
                    break;
                }
    }
    if ((n == 6 && strncmp(w, "second", 6) == 0) || (n == 1 && w[0] == 's'))
        *is_time = 1;
    return f;
}

/* Multiplier from a unit as ncu prints it to kopt's base units: bytes, ns for a duration,
 * "per second" for rates ("Gbyte/second" -> bytes/s, "cycle/usecond" -> cycles/s), % as is. */
static double unit_scale(const char *unit)
{
    const char *slash = strchr(unit, '/');
    int num_time, den_time;
    double num, den;

    if (!slash) {
        num = word_scale(unit, strlen(unit), &num_time);
        return num_time ? num * 1e9 : num;      /* a duration: to nanoseconds */
    }
    num = word_scale(unit, (size_t)(slash - unit), &num_time);
    den = word_scale(slash + 1, strlen(slash + 1), &den_time);
    return num / den;
}

/* ---- profiles -------------------------------------------------------------------------- */

void kopt_profile_free(kopt_profile *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nkernels; i++)
        kopt_metrics_clear(&p->kernels[i].metrics);
    free(p->kernels);
    for (int i = 0; i < p->nrules; i++)
        free(p->rules[i].description);
    free(p->rules);
    free(p);
}

const kopt_kernel_profile *kopt_profile_kernel(const kopt_profile *p, const char *name)
{
    const kopt_kernel_profile *best = NULL;
    double best_ns = -1;

    if (!p)
        return NULL;
    for (int i = 0; i < p->nkernels; i++) {
        const kopt_kernel_profile *k = &p->kernels[i];
        if (name) {
            if (strstr(k->kernel, name))
                return k;
            continue;
        }
        double ns = kopt_metrics_value(&k->metrics, "gpu__time_duration.sum", 0);
        if (!best || ns > best_ns) {
            best = k;
            best_ns = ns;
        }
    }
    return best;
}

/* "(256, 1, 1)" -> {256, 1, 1}; "" -> zeros. */
static kopt_status parse_dim3(kopt_ctx *ctx, const char *path, int line, const char *col,
                              const char *s, int out[3])
{
    int used = 0;

    out[0] = out[1] = out[2] = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return KOPT_OK;
    if (sscanf(s, "(%d , %d , %d )%n", &out[0], &out[1], &out[2], &used) == 3 && used > 0 &&
        s[used] == '\0')
        return KOPT_OK;
    return kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: column \"%s\": \"%s\" is not \"(x, y, z)\"",
                       path, line, col, s);
}

/* No value: empty, "n/a", or "no data" (what a saved --set full report gives for a metric
 * the kernel never touched, e.g. local-memory spilling of a kernel without spills). */
static int is_na(const char *s)
{
    return !s[0] || strcasecmp(s, "n/a") == 0 || strcasecmp(s, "no data") == 0;
}

/* One kernel row of the raw page into k. */
static kopt_status raw_row(kopt_kernel_profile *k, kopt_ctx *ctx, const char *path,
                           const csv_row *header, const csv_row *units, const csv_row *r,
                           int c_name, int c_block, int c_grid)
{
    kopt_status rc;

    memset(k, 0, sizeof(*k));
    snprintf(k->kernel, sizeof(k->kernel), "%s", r->f[c_name]);
    if (c_block >= 0 &&
        (rc = parse_dim3(ctx, path, r->line, "Block Size", r->f[c_block], k->block)) != KOPT_OK)
        return rc;
    if (c_grid >= 0 &&
        (rc = parse_dim3(ctx, path, r->line, "Grid Size", r->f[c_grid], k->grid)) != KOPT_OK)
        return rc;
    for (int i = 0; i < header->n; i++) {
        const char *name = header->f[i], *unit = units ? units->f[i] : "";
        double v;

        if (!strstr(name, "__") || is_na(r->f[i]))     /* not a metric, or no value */
            continue;
        if (parse_number(r->f[i], &v) < 0) {
            /* Counters, ratios and throughputs ("x.sum", "x.pct_of_...") and anything with a
             * unit must be numbers; unit-less attributes may be text (a device's name). */
            if (unit[0] || strchr(name, '.'))
                return kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: column \"%s\"%s%s%s: \"%s\" is "
                                   "not a number", path, r->line, name, unit[0] ? " (" : "",
                                   unit, unit[0] ? ")" : "", r->f[i]);
            continue;
        }
        v *= unit_scale(unit);
        if (kopt_metrics_set(&k->metrics, name, v) != KOPT_OK)
            return kopt_seterr(ctx, KOPT_E_NOMEM, "%s:%d: metrics", path, r->line);
    }
    k->dyn_smem = (int)kopt_metrics_value(&k->metrics, "launch__shared_mem_per_block_dynamic", 0);
    return KOPT_OK;
}

kopt_status kopt_ncu_parse_raw_csv(kopt_profile **out, kopt_ctx *ctx, const char *text,
                                   const char *path)
{
    csv_reader c;
    csv_row header = {0}, units = {0}, r = {0};
    kopt_profile *p = NULL;
    kopt_status rc = KOPT_OK;
    int got, c_id = -1, c_name = -1, c_block = -1, c_grid = -1, cap = 0, have_units = 0;
    int have_header = 0;

    *out = NULL;
    if (!path)
        path = "(ncu csv)";
    c.start = c.p = text ? text : "";
    c.end = c.p + strlen(c.p);
    c.path = path;
    c.line = 1;
    if (!(p = calloc(1, sizeof(*p)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: profile", path);
        goto cleanup;
    }
    snprintf(p->source, sizeof(p->source), "ncu");
    while ((got = csv_next(&c, &r, ctx, &rc)) > 0) {
        /* A header row: the first one, or a later table (another profiled process). */
        if (!have_header || (c_id >= 0 && r.n > c_id && strcmp(r.f[c_id], "ID") == 0)) {
            csv_row t = header;
            header = r;
            r = t;
            have_header = 1;
            have_units = 0;
            c_id = col_index(&header, "ID");
            c_name = col_index(&header, "Kernel Name");
            c_block = col_index(&header, "Block Size");
            c_grid = col_index(&header, "Grid Size");
            if (c_name < 0) {
                rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: no \"Kernel Name\" column: not "
                                 "the output of ncu --csv --page raw", path, header.line);
                goto cleanup;
            }
            continue;
        }
        if ((rc = check_width(ctx, path, &r, &header, c.p >= c.end)) != KOPT_OK)
            goto cleanup;
        /* The units row follows the header: its ID and Kernel Name cells are empty. */
        if (!have_units && (c_id < 0 || !r.f[c_id][0]) && !r.f[c_name][0]) {
            csv_row t = units;
            units = r;
            r = t;
            have_units = 1;
            continue;
        }
        if (!have_units) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: expected the units row (empty ID "
                             "and Kernel Name) after the header on line %d", path, r.line,
                             header.line);
            goto cleanup;
        }
        if (p->nkernels == cap) {
            int ncap = cap ? cap * 2 : 8;
            kopt_kernel_profile *k = realloc(p->kernels, (size_t)ncap * sizeof(*k));
            if (!k) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: profile", path);
                goto cleanup;
            }
            p->kernels = k;
            cap = ncap;
        }
        rc = raw_row(&p->kernels[p->nkernels], ctx, path, &header, &units, &r, c_name, c_block,
                     c_grid);
        p->nkernels++;        /* counted even on failure, so its metrics are freed */
        if (rc != KOPT_OK)
            goto cleanup;
    }
    if (got < 0)
        goto cleanup;
    if (!have_header) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: no CSV header row (empty, or ncu "
                         "profiled no kernel)", path, last_line(&c));
        goto cleanup;
    }
    if (!have_units) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: header row but no units row (text "
                         "truncated?)", path, header.line);
        goto cleanup;
    }
    if (p->nkernels == 0) {
        rc = kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s:%d: no kernel rows: ncu profiled no "
                         "kernel (check -k / --kernel-name and -c)", path, units.line);
        goto cleanup;
    }
    *out = p;
    p = NULL;
cleanup:
    row_free(&header);
    row_free(&units);
    row_free(&r);
    kopt_profile_free(p);
    return rc;
}

/* ---- details page: rule rows ---------------------------------------------------------- */

static const char *cell(const csv_row *r, int col)
{
    return col >= 0 && col < r->n ? r->f[col] : "";
}

kopt_status kopt_ncu_parse_details_csv(kopt_profile *p, kopt_ctx *ctx, const char *text,
                                       const char *path)
{
    csv_reader c;
    csv_row header = {0}, r = {0};
    kopt_status rc = KOPT_OK;
    int got, have_header = 0, cap = p->nrules;
    int c_id = -1, c_name = -1, c_section = -1, c_rule = -1, c_type = -1, c_desc = -1;
    int c_stype = -1, c_speedup = -1;

    if (!path)
        path = "(ncu csv)";
    c.start = c.p = text ? text : "";
    c.end = c.p + strlen(c.p);
    c.path = path;
    c.line = 1;
    while ((got = csv_next(&c, &r, ctx, &rc)) > 0) {
        if (!have_header || (c_id >= 0 && r.n > c_id && strcmp(r.f[c_id], "ID") == 0)) {
            csv_row t = header;
            header = r;
            r = t;
            have_header = 1;
            c_id = col_index(&header, "ID");
            c_name = col_index(&header, "Kernel Name");
            c_section = col_index(&header, "Section Name");
            c_rule = col_index(&header, "Rule Name");
            c_type = col_index(&header, "Rule Type");
            c_desc = col_index(&header, "Rule Description");
            c_stype = col_index(&header, "Estimated Speedup Type");
            c_speedup = col_index(&header, "Estimated Speedup");
            if (c_name < 0 || c_rule < 0) {
                rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: no \"%s\" column: not the "
                                 "output of ncu --csv --page details", path, header.line,
                                 c_name < 0 ? "Kernel Name" : "Rule Name");
                goto cleanup;
            }
            continue;
        }
        /* ncu 2025.3 ends a section's metric rows after "Metric Value" (a trailing comma,
         * so the rule columns are missing or one empty field): those are not rule results */
        if (r.n < header.n && (r.n <= c_rule || !r.f[c_rule][0]))
            continue;
        if ((rc = check_width(ctx, path, &r, &header, c.p >= c.end)) != KOPT_OK)
            goto cleanup;
        if (!r.f[c_rule][0])
            continue;                  /* a section metric row, not a rule result */
        if (p->nrules == cap) {
            int ncap = cap ? cap * 2 : 16;
            kopt_ncu_rule *nr = realloc(p->rules, (size_t)ncap * sizeof(*nr));
            if (!nr) {
                rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: rules", path);
                goto cleanup;
            }
            p->rules = nr;
            cap = ncap;
        }
        kopt_ncu_rule *rule = &p->rules[p->nrules];
        memset(rule, 0, sizeof(*rule));
        snprintf(rule->kernel, sizeof(rule->kernel), "%s", cell(&r, c_name));
        snprintf(rule->section, sizeof(rule->section), "%s", cell(&r, c_section));
        snprintf(rule->rule, sizeof(rule->rule), "%s", cell(&r, c_rule));
        snprintf(rule->type, sizeof(rule->type), "%s", cell(&r, c_type));
        snprintf(rule->speedup_type, sizeof(rule->speedup_type), "%s", cell(&r, c_stype));
        if (!is_na(cell(&r, c_speedup)) &&
            parse_number(cell(&r, c_speedup), &rule->speedup_pct) < 0) {
            rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: column \"Estimated Speedup\": \"%s\" "
                             "is not a number", path, r.line, cell(&r, c_speedup));
            goto cleanup;
        }
        if (!(rule->description = strdup(cell(&r, c_desc)))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: rules", path);
            goto cleanup;
        }
        p->nrules++;
    }
    if (got < 0)
        goto cleanup;
    if (!have_header)
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "%s:%d: no CSV header row (empty, or ncu "
                         "profiled no kernel)", path, last_line(&c));
cleanup:
    row_free(&header);
    row_free(&r);
    return rc;
}

/* ---- command lines ----------------------------------------------------------------------- */

static int is_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

kopt_status kopt_ncu_find(char **out, kopt_ctx *ctx)
{
    const char *env = getenv("KOPT_NCU");

    *out = NULL;
    if (env && env[0]) {
        if (!is_exec(env))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "$KOPT_NCU=%s is not an executable", env);
        return (*out = strdup(env)) ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "ncu");
    }
    if ((*out = kopt_find_program(NULL, "ncu")))
        return KOPT_OK;
    return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "ncu not found ($KOPT_NCU, PATH, "
                       "/usr/local/cuda/bin/ncu); install Nsight Compute or set KOPT_NCU");
}

typedef struct argv_builder {
    char **v;
    int n, cap;
    int failed;
} argv_builder;

static void add(argv_builder *a, const char *s)
{
    if (a->failed)
        return;
    if (a->n + 2 > a->cap) {
        int cap = a->cap ? a->cap * 2 : 32;
        char **v = realloc(a->v, (size_t)cap * sizeof(*v));
        if (!v) {
            a->failed = 1;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    if (!(a->v[a->n] = strdup(s))) {
        a->failed = 1;
        return;
    }
    a->n++;
    a->v[a->n] = NULL;
}

void kopt_ncu_argv_free(char **argv)
{
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

static kopt_status check_page(kopt_ctx *ctx, const char **page)
{
    if (!*page)
        *page = "raw";
    if (strcmp(*page, "raw") && strcmp(*page, "details"))
        return kopt_seterr(ctx, KOPT_E_INVALID, "ncu page \"%s\": expected raw or details",
                           *page);
    return KOPT_OK;
}

static kopt_status finish_argv(argv_builder *a, kopt_ctx *ctx, char ***out, int *argc)
{
    if (a->failed) {
        kopt_ncu_argv_free(a->v);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "ncu command line");
    }
    *out = a->v;
    if (argc)
        *argc = a->n;
    return KOPT_OK;
}

kopt_status kopt_ncu_argv(char ***out, int *argc, kopt_ctx *ctx, const kopt_ncu_opts *opts)
{
    static const kopt_ncu_opts defaults = KOPT_NCU_OPTS_INIT;
    argv_builder a = {NULL, 0, 0, 0};
    char *ncu = NULL, num[32];
    const char *page;
    kopt_status rc;

    *out = NULL;
    if (argc)
        *argc = 0;
    if (!opts)
        opts = &defaults;
    if (opts->version != KOPT_NCU_OPTS_VERSION)
        return kopt_seterr(ctx, KOPT_E_INVALID, "kopt_ncu_opts version %d (expected %d): "
                           "start from KOPT_NCU_OPTS_INIT", opts->version, KOPT_NCU_OPTS_VERSION);
    page = opts->page;
    if ((rc = check_page(ctx, &page)) != KOPT_OK)
        return rc;
    if (opts->launch_count < 0 || opts->launch_skip < 0)
        return kopt_seterr(ctx, KOPT_E_INVALID, "ncu launch count/skip must be >= 0");
    if ((rc = kopt_ncu_find(&ncu, ctx)) != KOPT_OK)
        return rc;
    add(&a, ncu);
    free(ncu);
    add(&a, "--target-processes");
    add(&a, "all");
    add(&a, "--clock-control");
    add(&a, opts->lock_clocks ? "base" : "none");
    if (opts->metrics && opts->metrics[0]) {
        kopt_buf list = KOPT_BUF_INIT;
        for (int i = 0; opts->metrics[i]; i++) {
            if (!opts->metrics[i][0] || strchr(opts->metrics[i], ',')) {
                kopt_buf_free(&list);
                kopt_ncu_argv_free(a.v);
                return kopt_seterr(ctx, KOPT_E_INVALID, "metric name \"%s\" is empty or "
                                   "holds a comma", opts->metrics[i]);
            }
            if (kopt_buf_printf(&list, "%s%s", i ? "," : "", opts->metrics[i]) < 0)
                a.failed = 1;
        }
        add(&a, "--metrics");
        add(&a, kopt_buf_cstr(&list));
        kopt_buf_free(&list);
    }
    if (opts->set) {
        add(&a, "--set");
        add(&a, opts->set);
    }
    for (int i = 0; opts->sections && opts->sections[i]; i++) {
        add(&a, "--section");
        add(&a, opts->sections[i]);
    }
    if (opts->kernel_regex) {
        kopt_buf k = KOPT_BUF_INIT;
        if (kopt_buf_printf(&k, "regex:%s", opts->kernel_regex) < 0)
            a.failed = 1;
        add(&a, "-k");
        add(&a, kopt_buf_cstr(&k));
        kopt_buf_free(&k);
    }
    if (opts->nvtx_range) {
        kopt_buf k = KOPT_BUF_INIT;
        if (kopt_buf_printf(&k, "%s/", opts->nvtx_range) < 0)
            a.failed = 1;
        add(&a, "--nvtx");
        add(&a, "--nvtx-include");
        add(&a, kopt_buf_cstr(&k));
        kopt_buf_free(&k);
    }
    if (opts->launch_skip) {
        snprintf(num, sizeof(num), "%d", opts->launch_skip);
        add(&a, "-s");
        add(&a, num);
    }
    if (opts->launch_count) {
        snprintf(num, sizeof(num), "%d", opts->launch_count);
        add(&a, "-c");
        add(&a, num);
    }
    if (opts->export_path) {
        add(&a, "-o");
        add(&a, opts->export_path);
        add(&a, "-f");
    } else {
        add(&a, "--csv");
        add(&a, "--page");
        add(&a, page);
        add(&a, "--print-units");
        add(&a, "base");
    }
    if (opts->log_file) {
        add(&a, "--log-file");
        add(&a, opts->log_file);
    }
    return finish_argv(&a, ctx, out, argc);
}

kopt_status kopt_ncu_import_argv(char ***out, int *argc, kopt_ctx *ctx, const char *report,
                                 const char *page)
{
    argv_builder a = {NULL, 0, 0, 0};
    char *ncu = NULL;
    kopt_status rc;

    *out = NULL;
    if (argc)
        *argc = 0;
    if ((rc = check_page(ctx, &page)) != KOPT_OK)
        return rc;
    if (!report || access(report, R_OK) != 0)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: cannot read the ncu report",
                           report ? report : "(null)");
    if ((rc = kopt_ncu_find(&ncu, ctx)) != KOPT_OK)
        return rc;
    add(&a, ncu);
    free(ncu);
    add(&a, "-i");
    add(&a, report);
    add(&a, "--csv");
    add(&a, "--page");
    add(&a, page);
    add(&a, "--print-units");
    add(&a, "base");
    return finish_argv(&a, ctx, out, argc);
}
