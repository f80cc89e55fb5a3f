/*
 * SASS analysis without counters: disassemble a cubin with nvdisasm and count, per kernel,
 * the instructions the micro-tools look at (global/shared/local accesses by width, tensor
 * and floating-point instructions, async copies, atomics, barriers, branches, conversions,
 * MUFU), in total and per source line when the cubin carries line info (-lineinfo).
 *
 * Accepted text: `nvdisasm [-c] [-g|-gi] [-hex]` output (functions start at
 * `.section .text.NAME`) and `cuobjdump -sass` output (functions start at `Function : NAME`).
 * An instruction line is `/ *OFFSET* /  [@[!]Pn] OPCODE operands ;` with an optional trailing
 * encoding comment; predicates, `.reuse` flags and encodings do not change what is counted.
 *
 * Counting rules (decided here, relied on by the analyzers and the tests):
 *  - an instruction counts only when its line reaches the `;` that ends it, so a cut-off last
 *    line is left out; lines outside a function (data sections, headers) are ignored;
 *  - NOPs and the branch-to-itself that ends every function are padding: not counted;
 *  - widths: no width modifier = 32 bit, .U8/.S8 = 8, .U16/.S16 = 16, .64, .128 (.256 goes to
 *    the 128 bucket: "128 bits or more"); LDG with .CONSTANT also counts in ldg_constant;
 *  - branches: BRA, BRX, JMP, JMX (jumps that can split a warp); CALL, RET, EXIT and the
 *    convergence barriers BSSY/BSYNC/WARPSYNC are not branches;
 *  - barriers: BAR (bar.sync/arrive/red); mbarrier (SYNCS) and MEMBAR are not barriers;
 *  - atomics: ATOM, ATOMG, ATOMS, RED, REDG (REDUX is a warp reduction, not an atomic);
 *  - conversions: F2F, F2I, I2F, I2FP, F2FP, F2IP, and HADD2.F32 (half -> float); I2I,
 *    integer narrowing, is not;
 *  - tma: UTMALDG, UTMASTG, UTMAREDG, UBLKCP, UBLKRED;
 *  - HFMA2 with `-RZ, RZ` sources is the compiler's way to write a constant, not half math;
 *  - FFMA32I / FMUL32I / FADD32I (immediate forms) count as FFMA / FMUL / FADD;
 *  - per line: global_loads = LDG + LDGSTS, global_stores = STG, shared_accesses = LDS + STS
 *    + LDSM + STSM + ATOMS, local_accesses = LDL + STL, tensor = the six MMA kinds.
 * Generic-space accesses (LD/ST) have no field and only count as instructions.
 */
#include "kopt/profile.h"
#include "kopt/proc.h"
#include "core/core_int.h"
#include "sass_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- parser state ------------------------------------------------------------------- */

typedef struct sass_parser {
    kopt_sass *s;
    int kcap;
    int cur;                 /* index of the function being read, -1 outside code */
    char *file;              /* current line-info file (NULL: none) */
    int line;                /* current line-info line (0: none) */
    char label[128];         /* label of the next instruction ("" when none) */
} sass_parser;

/* A span of the input, not NUL-terminated. */
typedef struct span {
    const char *p;
    size_t n;
} span;

int kopt__sass_hfma2_is_move(const char *operands, size_t n)
{
    const char *q = operands, *end = operands + n, *c = memchr(q, ',', n);

    for (int i = 0; i < 2; i++) {       /* the two factors, after the destination */
        if (!c)
            return 0;
        for (q = c + 1; q < end && (*q == ' ' || *q == '-' || *q == '|'); q++)
            ;
        if (end - q < 2 || strncmp(q, "RZ", 2) != 0 ||
            (end - q > 2 && q[2] != ',' && q[2] != ' ' && q[2] != '|'))
            return 0;
        c = memchr(q, ',', (size_t)(end - q));
    }
    return 1;
}

static int span_eq(span a, const char *s)
{
    size_t n = strlen(s);
    return a.n == n && memcmp(a.p, s, n) == 0;
}

static int span_starts(span a, const char *s)
{
    size_t n = strlen(s);
    return a.n >= n && memcmp(a.p, s, n) == 0;
}

static span span_trim(span a)
{
    while (a.n && isspace((unsigned char)a.p[0])) {
        a.p++;
        a.n--;
    }
    while (a.n && isspace((unsigned char)a.p[a.n - 1]))
        a.n--;
    return a;
}

static span span_skip(span a, size_t k)
{
    if (k > a.n)
        k = a.n;
    a.p += k;
    a.n -= k;
    return a;
}

/* ---- building the result ------------------------------------------------------------ */

static kopt_status begin_function(sass_parser *ps, kopt_ctx *ctx, span name)
{
    kopt_sass *s = ps->s;
    kopt_sass_counts *k;

    if (s->nkernels == ps->kcap) {
        int cap = ps->kcap ? 2 * ps->kcap : 4;
        kopt_sass_counts *nk = realloc(s->kernels, (size_t)cap * sizeof(*nk));
        if (!nk)
            return kopt_seterr(ctx, KOPT_E_NOMEM, "SASS: kernel table");
        s->kernels = nk;
        ps->kcap = cap;
    }
    k = &s->kernels[s->nkernels];
    memset(k, 0, sizeof(*k));
    if (name.n >= sizeof(k->kernel))
        name.n = sizeof(k->kernel) - 1;
    memcpy(k->kernel, name.p, name.n);
    k->kernel[name.n] = '\0';
    ps->cur = s->nkernels++;
    free(ps->file);
    ps->file = NULL;
    ps->line = 0;
    ps->label[0] = '\0';
    return KOPT_OK;
}

/* The per-line record of the current source position, created on first use; NULL when the
 * instruction has no line info. *err is set on allocation failure. */
static kopt_sass_line *line_record(sass_parser *ps, kopt_sass_counts *k, int *err)
{
    kopt_sass_line *l;

    *err = 0;
    if (!ps->file || ps->line <= 0)
        return NULL;
    /* most instructions continue the line of the previous one */
    for (int i = k->nlines - 1; i >= 0; i--)
        if (k->lines[i].line == ps->line && strcmp(k->lines[i].file, ps->file) == 0)
            return &k->lines[i];
    if (k->nlines == 0 || (k->nlines >= 8 && (k->nlines & (k->nlines - 1)) == 0)) {
        int cap = k->nlines ? 2 * k->nlines : 8;
        kopt_sass_line *nl = realloc(k->lines, (size_t)cap * sizeof(*nl));
        if (!nl) {
            *err = 1;
            return NULL;
        }
        k->lines = nl;
    }
    l = &k->lines[k->nlines];
    memset(l, 0, sizeof(*l));
    l->file = strdup(ps->file);
    if (!l->file) {
        *err = 1;
        return NULL;
    }
    l->line = ps->line;
    k->nlines++;
    return l;
}

/* ---- classifying one instruction ---------------------------------------------------- */

/* Index into the width arrays from an opcode's modifiers (".E.64", ".U8", ...). */
static int access_width(span mods)
{
    int w = 2;   /* 32 bit unless a modifier says otherwise */

    while (mods.n) {
        size_t t = 0;
        span tok;
        if (mods.p[0] == '.')
            mods = span_skip(mods, 1);
        while (t < mods.n && mods.p[t] != '.')
            t++;
        tok.p = mods.p;
        tok.n = t;
        if (span_eq(tok, "U8") || span_eq(tok, "S8"))
            w = 0;
        else if (span_eq(tok, "U16") || span_eq(tok, "S16"))
            w = 1;
        else if (span_eq(tok, "64"))
            w = 3;
        else if (span_eq(tok, "128") || span_eq(tok, "256"))
            w = 4;
        mods = span_skip(mods, t);
    }
    return w;
}

static int has_modifier(span mods, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i + n <= mods.n; i++)
        if (mods.p[i] == '.' && memcmp(mods.p + i + 1, name, n) == 0 &&
            (i + 1 + n == mods.n || mods.p[i + 1 + n] == '.'))
            return 1;
    return 0;
}

static int is_one_of(span op, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (span_eq(op, names[i]))
            return 1;
    return 0;
}

/* The branch target inside "`(.L_x_24)" (nvdisasm) or "0x940" (cuobjdump). */
static span branch_target(span operands)
{
    span t = span_trim(operands);
    const char *open = memchr(t.p, '(', t.n);

    if (open) {
        const char *close = memchr(open, ')', t.n - (size_t)(open - t.p));
        if (close) {
            t.p = open + 1;
            t.n = (size_t)(close - open - 1);
            return t;
        }
    }
    for (size_t i = 0; i < t.n; i++)
        if (t.p[i] == ' ' || t.p[i] == ',') {
            t.n = i;
            break;
        }
    return t;
}

static int parse_hex(span t, unsigned long long *out)
{
    unsigned long long v = 0;
    size_t i = 0;

    if (span_starts(t, "0x"))
        i = 2;
    if (i >= t.n)
        return 0;
    for (; i < t.n; i++) {
        int c = (unsigned char)t.p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        if (v >> 60)
            return 0;
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 1;
}

static const char *const BRANCH_OPS[] = {"BRA", "BRX", "JMP", "JMX", NULL};
static const char *const ATOMIC_OPS[] = {"ATOM", "ATOMG", "ATOMS", "RED", "REDG", NULL};
static const char *const CONVERT_OPS[] = {"F2F", "F2I", "I2F", "I2FP", "F2FP", "F2IP", NULL};
static const char *const TMA_OPS[] = {"UTMALDG", "UTMASTG", "UTMAREDG", "UBLKCP", "UBLKRED",
                                      NULL};

/* Count one instruction. `offset` is its address, `op` the opcode with modifiers. */
static kopt_status count_instruction(sass_parser *ps, kopt_ctx *ctx, unsigned long long offset,
                                     span op, span operands)
{
    kopt_sass_counts *k = &ps->s->kernels[ps->cur];
    kopt_sass_line *l;
    span mn = op, mods = {op.p + op.n, 0};
    int err, gld = 0, gst = 0, shared = 0, local = 0, tensor = 0, branch = 0;
    const char *dot = memchr(op.p, '.', op.n);

    if (dot) {
        mn.n = (size_t)(dot - op.p);
        mods.p = dot;
        mods.n = op.n - mn.n;
    }
    if (span_eq(mn, "NOP"))
        return KOPT_OK;
    if (is_one_of(mn, BRANCH_OPS)) {
        span target = branch_target(operands);
        unsigned long long to;
        if ((ps->label[0] && span_eq(target, ps->label)) ||
            (parse_hex(target, &to) && to == offset))
            return KOPT_OK;   /* the self-loop that pads the end of a function */
        branch = 1;
        k->branches++;
    }

    k->instructions++;
    if (span_eq(mn, "LDG")) {
        k->ldg[access_width(mods)]++;
        if (has_modifier(mods, "CONSTANT"))
            k->ldg_constant++;
        gld = 1;
    } else if (span_eq(mn, "STG")) {
        k->stg[access_width(mods)]++;
        gst = 1;
    } else if (span_eq(mn, "LDS")) {
        k->lds[access_width(mods)]++;
        shared = 1;
    } else if (span_eq(mn, "STS")) {
        k->sts[access_width(mods)]++;
        shared = 1;
    } else if (span_eq(mn, "LDSM")) {
        k->ldsm++;
        shared = 1;
    } else if (span_eq(mn, "STSM")) {
        shared = 1;
    } else if (span_eq(mn, "LDL")) {
        k->ldl++;
        local = 1;
    } else if (span_eq(mn, "STL")) {
        k->stl++;
        local = 1;
    } else if (span_eq(mn, "LDGSTS")) {
        k->ldgsts++;
        gld = 1;
    } else if (span_eq(mn, "HMMA")) {
        k->hmma++;
        tensor = 1;
    } else if (span_eq(mn, "HGMMA")) {
        k->hgmma++;
        tensor = 1;
    } else if (span_eq(mn, "IMMA")) {
        k->imma++;
        tensor = 1;
    } else if (span_eq(mn, "IGMMA")) {
        k->igmma++;
        tensor = 1;
    } else if (span_eq(mn, "QGMMA")) {
        k->qgmma++;
        tensor = 1;
    } else if (span_eq(mn, "DMMA")) {
        k->dmma++;
        tensor = 1;
    } else if (span_eq(mn, "FFMA") || span_eq(mn, "FFMA32I")) {
        k->ffma++;
    } else if (span_eq(mn, "FMUL") || span_eq(mn, "FMUL32I")) {
        k->fmul++;
    } else if (span_eq(mn, "FADD") || span_eq(mn, "FADD32I")) {
        k->fadd++;
    } else if (span_eq(mn, "DFMA")) {
        k->dfma++;
    } else if (span_eq(mn, "DMUL")) {
        k->dmul++;
    } else if (span_eq(mn, "DADD")) {
        k->dadd++;
    } else if (span_eq(mn, "HFMA2") || span_eq(mn, "HFMA2_32I")) {
        if (!kopt__sass_hfma2_is_move(operands.p, operands.n))
            k->hfma2++;
    } else if (span_eq(mn, "HMUL2") || span_eq(mn, "HMUL2_32I")) {
        k->hmul2++;
    } else if (span_eq(mn, "HADD2") && has_modifier(mods, "F32")) {
        k->conversions++;    /* HADD2.F32 d, -RZ, h: half -> float */
    } else if (span_eq(mn, "HADD2") || span_eq(mn, "HADD2_32I")) {
        k->hadd2++;
    } else if (is_one_of(mn, TMA_OPS)) {
        k->tma++;
    } else if (is_one_of(mn, ATOMIC_OPS)) {
        k->atomics++;
        shared = span_eq(mn, "ATOMS");
    } else if (span_eq(mn, "BAR")) {
        k->barriers++;
    } else if (is_one_of(mn, CONVERT_OPS)) {
        k->conversions++;
    } else if (span_eq(mn, "MUFU")) {
        k->mufu++;
    }

    l = line_record(ps, k, &err);
    if (err)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "SASS: line table");
    if (l) {
        l->instructions++;
        l->global_loads += gld;
        l->global_stores += gst;
        l->shared_accesses += shared;
        l->local_accesses += local;
        l->tensor += tensor;
        l->branches += branch;
    }
    return KOPT_OK;
}

/* ---- one line of text --------------------------------------------------------------- */

/* `//## File "path", line N[, ...]` (nvdisasm -g / -gi): the innermost position. */
static kopt_status read_line_info(sass_parser *ps, kopt_ctx *ctx, span t)
{
    const char *q;
    long n = 0;
    size_t i;
    span rest;

    free(ps->file);
    ps->file = NULL;
    ps->line = 0;
    t = span_skip(t, strlen("//## File \""));
    q = memchr(t.p, '"', t.n);
    if (!q)
        return KOPT_OK;   /* malformed: what follows has no line info */
    rest = span_skip(t, (size_t)(q - t.p) + 1);
    rest = span_trim(rest);
    if (!span_starts(rest, ", line "))
        return KOPT_OK;
    rest = span_skip(rest, strlen(", line "));
    for (i = 0; i < rest.n && isdigit((unsigned char)rest.p[i]) && n < 100000000; i++)
        n = n * 10 + (rest.p[i] - '0');
    if (i == 0 || n <= 0)
        return KOPT_OK;
    ps->file = strndup(t.p, (size_t)(q - t.p));
    if (!ps->file)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "SASS: line info");
    ps->line = (int)n;
    return KOPT_OK;
}

/* `/ *0a30* /   @!P0 LDG.E.128 R4, desc[UR6][R2.64] ;   / * 0x... * /` */
static kopt_status read_instruction(sass_parser *ps, kopt_ctx *ctx, span t)
{
    const char *end = NULL, *semi;
    unsigned long long offset;
    span off, body, op, operands;
    size_t i;

    for (i = 2; i + 1 < t.n; i++)
        if (t.p[i] == '*' && t.p[i + 1] == '/') {
            end = t.p + i;
            break;
        }
    if (!end)
        return KOPT_OK;
    off.p = t.p + 2;
    off.n = (size_t)(end - off.p);
    if (!parse_hex(off, &offset))
        return KOPT_OK;   /* an encoding-only line, or not an instruction */
    body = span_trim(span_skip(t, (size_t)(end - t.p) + 2));
    if (body.n && body.p[0] == '{')          /* dual-issue group (old architectures) */
        body = span_trim(span_skip(body, 1));
    if (!body.n || body.p[0] == '.')         /* a data directive (.byte, .word, ...) */
        return KOPT_OK;
    semi = memchr(body.p, ';', body.n);
    if (!semi)
        return KOPT_OK;                      /* cut off before its end: not counted */
    body.n = (size_t)(semi - body.p);
    body = span_trim(body);
    if (body.n && body.p[0] == '@') {        /* predicate guard: @P0, @!PT, @UP1 */
        i = 0;
        while (i < body.n && !isspace((unsigned char)body.p[i]))
            i++;
        body = span_trim(span_skip(body, i));
    }
    op = body;
    for (i = 0; i < op.n; i++)
        if (isspace((unsigned char)op.p[i]))
            break;
    op.n = i;
    if (!op.n || !isupper((unsigned char)op.p[0]))
        return KOPT_OK;
    operands = span_skip(body, op.n);
    if (ps->cur >= 0) {
        kopt_status rc = count_instruction(ps, ctx, offset, op, operands);
        if (rc != KOPT_OK)
            return rc;
    }
    ps->label[0] = '\0';
    return KOPT_OK;
}

static kopt_status read_line(sass_parser *ps, kopt_ctx *ctx, span t)
{
    t = span_trim(t);
    if (!t.n)
        return KOPT_OK;
    if (span_starts(t, "/*"))
        return read_instruction(ps, ctx, t);
    if (span_starts(t, "//## File \""))
        return read_line_info(ps, ctx, t);
    if (span_starts(t, "Function :") || span_starts(t, "Function:")) {   /* cuobjdump */
        span name = span_trim(span_skip(t, (size_t)((const char *)memchr(t.p, ':', t.n) - t.p) + 1));
        if (!name.n) {
            ps->cur = -1;
            return KOPT_OK;
        }
        return begin_function(ps, ctx, name);
    }
    if (span_starts(t, ".section")) {       /* nvdisasm: .section .text.NAME,"ax",@progbits */
        span name = span_trim(span_skip(t, strlen(".section")));
        for (size_t i = 0; i < name.n; i++)
            if (name.p[i] == ',' || isspace((unsigned char)name.p[i])) {
                name.n = i;
                break;
            }
        if (span_starts(name, ".text.") && name.n > strlen(".text."))
            return begin_function(ps, ctx, span_skip(name, strlen(".text.")));
        ps->cur = -1;   /* data, constants, debug info */
        return KOPT_OK;
    }
    if (t.p[t.n - 1] == ':' && t.n - 1 < sizeof(ps->label)) {   /* a label: .L_x_24: */
        int plain = 1;
        for (size_t i = 0; i + 1 < t.n; i++)
            plain &= !isspace((unsigned char)t.p[i]);
        if (plain) {
            memcpy(ps->label, t.p, t.n - 1);
            ps->label[t.n - 1] = '\0';
        }
    }
    return KOPT_OK;
}

/* ---- public ------------------------------------------------------------------------- */

static int cmp_lines(const void *a, const void *b)
{
    const kopt_sass_line *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

kopt_status kopt_sass_parse(kopt_sass **out, kopt_ctx *ctx, const char *text, const char *path)
{
    sass_parser ps;
    kopt_status rc = KOPT_OK;
    const char *p;

    if (!out)
        return kopt_seterr(ctx, KOPT_E_INVALID, "kopt_sass_parse: no output pointer");
    *out = NULL;
    if (!path)
        path = "(SASS text)";
    if (!text)
        return kopt_seterr(ctx, KOPT_E_INVALID, "%s: no text", path);
    memset(&ps, 0, sizeof(ps));
    ps.cur = -1;
    ps.s = calloc(1, sizeof(*ps.s));
    if (!ps.s || !(ps.s->text = strdup(text))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "%s: SASS", path);
        goto cleanup;
    }
    p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        span line = {p, nl ? (size_t)(nl - p) : strlen(p)};
        if ((rc = read_line(&ps, ctx, line)) != KOPT_OK)
            goto cleanup;
        if (!nl)
            break;
        p = nl + 1;
    }
    if (ps.s->nkernels == 0) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID,
                         "%s: no SASS function found (expected the output of nvdisasm or "
                         "cuobjdump -sass)", path);
        goto cleanup;
    }
    for (int i = 0; i < ps.s->nkernels; i++)
        if (ps.s->kernels[i].nlines > 1)
            qsort(ps.s->kernels[i].lines, (size_t)ps.s->kernels[i].nlines,
                  sizeof(kopt_sass_line), cmp_lines);
    *out = ps.s;
    ps.s = NULL;
cleanup:
    free(ps.file);
    kopt_sass_free(ps.s);
    return rc;
}

void kopt_sass_free(kopt_sass *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nkernels; i++) {
        for (int j = 0; j < s->kernels[i].nlines; j++)
            free(s->kernels[i].lines[j].file);
        free(s->kernels[i].lines);
    }
    free(s->kernels);
    free(s->text);
    free(s);
}

/* Exact name; then an Itanium-mangled name of the launch-plan name's identifier
 * ("gemm<128,8>" -> "_Z4gemm..."); then a plain prefix. */
const kopt_sass_counts *kopt_sass_kernel(const kopt_sass *s, const char *name)
{
    char mangled[300];
    size_t base;

    if (!s || !name || !name[0])
        return NULL;
    for (int i = 0; i < s->nkernels; i++)
        if (strcmp(s->kernels[i].kernel, name) == 0)
            return &s->kernels[i];
    base = strcspn(name, "<( ");
    if (base > 0 && base < 256) {
        snprintf(mangled, sizeof(mangled), "_Z%zu%.*s", base, (int)base, name);
        for (int i = 0; i < s->nkernels; i++)
            if (strncmp(s->kernels[i].kernel, mangled, strlen(mangled)) == 0)
                return &s->kernels[i];
    }
    for (int i = 0; i < s->nkernels; i++)
        if (strncmp(s->kernels[i].kernel, name, strlen(name)) == 0)
            return &s->kernels[i];
    return NULL;
}

/* ---- nvdisasm ----------------------------------------------------------------------- */

static int is_executable(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* $KOPT_NVDISASM, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, the Python package. */
static kopt_status find_nvdisasm(kopt_ctx *ctx, char **out)
{
    const char *env = getenv("KOPT_NVDISASM");

    *out = NULL;
    if (env && env[0]) {
        if (!is_executable(env))
            return kopt_seterr(ctx, KOPT_E_NOT_FOUND,
                               "KOPT_NVDISASM=%s: not an executable file", env);
        return (*out = strdup(env)) ? KOPT_OK : kopt_seterr(ctx, KOPT_E_NOMEM, "nvdisasm");
    }
    if ((*out = kopt_find_program(NULL, "nvdisasm")) ||
        (*out = kopt__find_pip_program(ctx, "nvdisasm")))
        return KOPT_OK;
    return kopt_seterr(ctx, KOPT_E_NOT_FOUND,
                       "nvdisasm not found (set KOPT_NVDISASM, put it on PATH, install the CUDA "
                       "toolkit, or pip install nvidia-cuda-nvdisasm)");
}

kopt_status kopt_sass_from_cubin(kopt_sass **out, kopt_ctx *ctx, const char *cubin_path)
{
    char *tool = NULL, *output = NULL;
    const char *argv[5];
    kopt_status rc;
    struct stat st;
    int code = -1;

    if (!out)
        return kopt_seterr(ctx, KOPT_E_INVALID, "kopt_sass_from_cubin: no output pointer");
    *out = NULL;
    if (!cubin_path || stat(cubin_path, &st) != 0)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "%s: no such cubin",
                           cubin_path ? cubin_path : "(null)");
    if ((rc = find_nvdisasm(ctx, &tool)) != KOPT_OK)
        return rc;
    argv[0] = tool;
    argv[1] = "--print-code";         /* code sections only */
    argv[2] = "--print-line-info";    /* //## File "...", line N (when built with -lineinfo) */
    argv[3] = cubin_path;
    argv[4] = NULL;
    rc = kopt_proc_run(ctx, argv, 300, &code, &output);
    if (rc != KOPT_OK) {
        kopt_adderr(ctx, rc, "%s", tool);
        goto cleanup;
    }
    if (code != 0) {
        size_t n = output ? strcspn(output, "\n") : 0;
        kopt_set_errdetail(ctx, output ? output : "");
        rc = kopt_seterr(ctx, KOPT_E_ERROR, "%s failed on %s (exit %d): %.*s", tool, cubin_path,
                         code, (int)(n > 300 ? 300 : n), output ? output : "");
        goto cleanup;
    }
    rc = kopt_sass_parse(out, ctx, output ? output : "", cubin_path);
cleanup:
    free(tool);
    free(output);
    return rc;
}
