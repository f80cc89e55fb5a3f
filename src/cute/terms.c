/* The code-search index's terms: identifiers split on underscores, case changes and
 * digit-to-capital boundaries, kept whole and as adjacent pairs; and the definitions a
 * header makes (which names a chunk defines weigh more than names it uses). */
#include "cute_int.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Words too common in C++ headers and English to tell chunks apart. */
static const char *const stop[] = {
    "the", "an", "of", "to", "and", "or", "is", "in", "for", "this", "that", "with", "be",
    "it", "as", "on", "by", "are", "if", "else", "we", "can", "not", "from", "at", "how",
    "template", "typename", "class", "struct", "const", "return", "auto", "using", "void",
    "constexpr", "static", "inline", "int", "bool", "cute", "cutlass", "host", "device",
    "namespace", "decltype", "true", "false", "std", "int32", "uint32", NULL};

static int is_stop(const char *w, size_t n)
{
    for (const char *const *s = stop; *s; s++)
        if (strlen(*s) == n && memcmp(*s, w, n) == 0)
            return 1;
    return 0;
}

static void emit(kopt_buf *out, const char *w, size_t n)
{
    char t[160];

    if (n < 2 || n >= sizeof(t))
        return;
    for (size_t i = 0; i < n; i++)
        t[i] = (char)tolower((unsigned char)w[i]);
    if (is_stop(t, n))
        return;
    if (out->len)
        kopt_buf_append(out, " ", 1);
    kopt_buf_append(out, t, n);
}

/* Split one identifier into parts (offsets into id) and emit whole, parts and pairs. */
static void emit_ident(kopt_buf *out, const char *id, size_t n)
{
    size_t start[64], len[64];
    int np = 0;
    char whole[160], pair[160];
    size_t wl = 0;

    for (size_t i = 0; i < n && np < 64;) {
        size_t j;
        if (id[i] == '_') {
            i++;
            continue;
        }
        j = i + 1;
        while (j < n && id[j] != '_') {
            unsigned char a = (unsigned char)id[j - 1], b = (unsigned char)id[j];
            /* fooBar | FOOBar (before the last capital of a run followed by lower) | F32BF16 */
            if ((islower(a) && isupper(b)) || (isdigit(a) && isupper(b)) ||
                (isupper(a) && isupper(b) && j + 1 < n && islower((unsigned char)id[j + 1])))
                break;
            j++;
        }
        start[np] = i;
        len[np++] = j - i;
        i = j;
    }
    for (int k = 0; k < np && wl + len[k] < sizeof(whole); k++) {
        memcpy(whole + wl, id + start[k], len[k]);
        wl += len[k];
    }
    if (np > 1)
        emit(out, whole, wl);
    for (int k = 0; k < np; k++) {
        emit(out, id + start[k], len[k]);
        if (k + 1 < np && np > 2 && len[k] + len[k + 1] < sizeof(pair)) {
            memcpy(pair, id + start[k], len[k]);
            memcpy(pair + len[k], id + start[k + 1], len[k + 1]);
            emit(out, pair, len[k] + len[k + 1]);
        }
    }
}

void kopt__cute_terms_buf(kopt_buf *out, const char *text, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)text[i];
        size_t j = i + 1;
        if (isalpha(c) || c == '_') {
            while (j < n && (isalnum((unsigned char)text[j]) || text[j] == '_'))
                j++;
            emit_ident(out, text + i, j - i);
        } else if (isdigit(c)) {   /* numbers: "64x128x16" whole, plain counts skipped */
            while (j < n && (isalnum((unsigned char)text[j]) || text[j] == '_'))
                j++;
            if (memchr(text + i, 'x', j - i))
                emit_ident(out, text + i, j - i);
        }
        i = j;
    }
}

char *kopt_cute_terms(const char *text)
{
    kopt_buf b = KOPT_BUF_INIT;

    kopt__cute_terms_buf(&b, text ? text : "", text ? strlen(text) : 0);
    if (!b.ptr)
        return strdup("");
    return kopt_buf_detach(&b);
}

void kopt__cute_exact_term(const char *name, size_t n, char out[24])
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)name[i]) * 1099511628211ULL;
    snprintf(out, 24, "xd%016llx", (unsigned long long)h);
}

/* ---- definitions ------------------------------------------------------------------------ */

typedef struct defs_state {
    kopt__cute_def *v;
    int n, cap, oom;
} defs_state;

static void add_def(defs_state *d, const char *name, size_t n, int line)
{
    static const char *const skip[] = {"if", "for", "while", "switch", "return", "sizeof",
                                       "decltype", "alignas", "static_assert", "operator",
                                       "CUTE_STATIC_ASSERT", "CUTE_STATIC_ASSERT_V",
                                       "__attribute__", "__launch_bounds__", NULL};
    if (n == 0 || n >= sizeof(d->v[0].name))
        return;
    for (const char *const *s = skip; *s; s++)
        if (strlen(*s) == n && memcmp(*s, name, n) == 0)
            return;
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        kopt__cute_def *v = realloc(d->v, (size_t)cap * sizeof(*v));
        if (!v) {
            d->oom = 1;
            return;
        }
        d->v = v;
        d->cap = cap;
    }
    memcpy(d->v[d->n].name, name, n);
    d->v[d->n].name[n] = '\0';
    d->v[d->n++].line = line;
}

static int is_ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The word `kw` as a whole word in s[0..n), or NULL. */
static const char *find_word(const char *s, size_t n, const char *kw)
{
    size_t k = strlen(kw);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, kw, k) == 0 && (i == 0 || !is_ident_char(s[i - 1])) &&
            (i + k == n || !is_ident_char(s[i + k])))
            return s + i;
    return NULL;
}

/* A statement at namespace/class scope that ends at '{' (opens == 1) or ';': record what
 * it defines. stmt[] holds the statement with comments and strings blanked; lines[] the
 * line of each character. Returns whether a '{' here opens a scope (not a body). */
static int statement(defs_state *d, const char *stmt, const int *lines, size_t n, int opens)
{
    static const char *const scopes[] = {"struct", "class", "union", "enum", NULL};
    const char *p;
    size_t i;

    if (find_word(stmt, n, "namespace") || (find_word(stmt, n, "extern") && !memchr(stmt, '(', n)))
        return 1;
    /* a `template <...>` head: skip it (its '<...>' may hold "class") */
    i = 0;
    while ((p = find_word(stmt + i, n - i, "template")) != NULL) {
        size_t j = (size_t)(p - stmt) + 8;
        int depth = 0;
        while (j < n && stmt[j] != '<')
            j++;
        for (; j < n; j++) {
            depth += stmt[j] == '<' ? 1 : stmt[j] == '>' ? -1 : 0;
            if (depth == 0)
                break;
        }
        i = j < n ? j + 1 : n;
    }
    for (const char *const *s = scopes; *s; s++) {
        const char *q = find_word(stmt + i, n - i, *s);
        if (q && !memchr(stmt + i, '(', (size_t)(q - stmt) - i) && !memchr(stmt + i, '=', (size_t)(q - stmt) - i)) {
            size_t j = (size_t)(q - stmt) + strlen(*s);
            /* skip "class" after "enum", attributes and alignas(...) */
            for (;;) {
                while (j < n && isspace((unsigned char)stmt[j]))
                    j++;
                if (find_word(stmt + j, n - j, "class") == stmt + j)
                    j += 5;
                else if (j + 1 < n && stmt[j] == '[' && stmt[j + 1] == '[')
                    while (j < n && stmt[j] != ']') j++, j += (j < n && stmt[j] == ']');
                else if (find_word(stmt + j, n - j, "alignas") == stmt + j)
                    while (j < n && stmt[j] != ')') j++, j += (j < n);
                else
                    break;
            }
            if (j < n && (isalpha((unsigned char)stmt[j]) || stmt[j] == '_')) {
                size_t e = j;
                while (e < n && is_ident_char(stmt[e]))
                    e++;
                if (opens)   /* a forward declaration defines nothing */
                    add_def(d, stmt + j, e - j, lines[j]);
            }
            return opens;   /* a class body is a scope; a forward declaration ends here */
        }
    }
    if ((p = find_word(stmt + i, n - i, "using")) && !find_word(stmt + i, n - i, "namespace")) {
        size_t j = (size_t)(p - stmt) + 5, e;
        while (j < n && isspace((unsigned char)stmt[j]))
            j++;
        e = j;
        while (e < n && is_ident_char(stmt[e]))
            e++;
        if (e > j && memchr(stmt + e, '=', n - e))
            add_def(d, stmt + j, e - j, lines[j]);
        return 0;
    }
    if (opens && (p = memchr(stmt + i, '(', n - i)) && !memchr(stmt + i, '=', (size_t)(p - stmt) - i)) {
        /* a function definition: the identifier just before the first '(' */
        size_t e = (size_t)(p - stmt), j;
        while (e > i && isspace((unsigned char)stmt[e - 1]))
            e--;
        j = e;
        while (j > i && is_ident_char(stmt[j - 1]))
            j--;
        if (e > j && !isdigit((unsigned char)stmt[j]))
            add_def(d, stmt + j, e - j, lines[j]);
    }
    return 0;
}

int kopt__cute_find_defs(const char *text, size_t len, kopt__cute_def **out, int *n)
{
    enum { CODE, LINE_COMMENT, BLOCK_COMMENT, STRING, CHAR } st = CODE;
    defs_state d = {NULL, 0, 0, 0};
    unsigned char scope[256];    /* per open brace: 1 namespace/class scope, 0 a body */
    int depth = 0, code_depth = 0, line = 1, bol = 1;
    char *stmt = malloc(8192);
    int *lines = malloc(8192 * sizeof(int));
    size_t sn = 0;

    *out = NULL;
    *n = 0;
    if (!stmt || !lines) {
        free(stmt);
        free(lines);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\n') {
            line++;
            bol = 1;
            if (st == LINE_COMMENT)
                st = CODE;
            if (sn < 8192 && code_depth == 0) {
                lines[sn] = line;
                stmt[sn++] = ' ';
            }
            continue;
        }
        if (st == LINE_COMMENT)
            continue;
        if (st == BLOCK_COMMENT) {
            if (c == '*' && i + 1 < len && text[i + 1] == '/')
                st = CODE, i++;
            continue;
        }
        if (st == STRING || st == CHAR) {
            if (c == '\\')
                i++;
            else if (c == (st == STRING ? '"' : '\''))
                st = CODE;
            continue;
        }
        if (bol && c == '#') {   /* preprocessor line: #define NAME, else skip it */
            size_t j = i + 1, e;
            while (j < len && (text[j] == ' ' || text[j] == '\t'))
                j++;
            if (len - j > 6 && memcmp(text + j, "define", 6) == 0) {
                j += 6;
                while (j < len && (text[j] == ' ' || text[j] == '\t'))
                    j++;
                e = j;
                while (e < len && is_ident_char(text[e]))
                    e++;
                add_def(&d, text + j, e - j, line);
            }
            while (i + 1 < len && text[i + 1] != '\n')   /* continuation lines too */
                i += (text[i + 1] == '\\' && i + 2 < len && text[i + 2] == '\n') ? 2 : 1,
                line += text[i] == '\n';
            continue;
        }
        if (!isspace((unsigned char)c))
            bol = 0;
        if (c == '/' && i + 1 < len && (text[i + 1] == '/' || text[i + 1] == '*')) {
            st = text[i + 1] == '/' ? LINE_COMMENT : BLOCK_COMMENT;
            i++;
            continue;
        }
        if (c == '"' || c == '\'') {
            /* a digit separator (1'000) is not a character literal */
            if (c == '\'' && i > 0 && isxdigit((unsigned char)text[i - 1]))
                continue;
            st = c == '"' ? STRING : CHAR;
            continue;
        }
        if (code_depth > 0) {   /* inside a function body: only track braces */
            if (c == '{')
                code_depth++;
            else if (c == '}')
                code_depth--;
            continue;
        }
        if (c == '{') {
            int is_scope = statement(&d, stmt, lines, sn, 1);
            sn = 0;
            if (is_scope && depth < (int)sizeof(scope))
                scope[depth++] = 1;
            else
                code_depth = 1;
        } else if (c == ';') {
            statement(&d, stmt, lines, sn, 0);
            sn = 0;
        } else if (c == '}') {
            if (depth > 0)
                depth--;
            sn = 0;
        } else if (sn < 8192) {
            lines[sn] = line;
            stmt[sn++] = c;
        }
    }
    free(stmt);
    free(lines);
    if (d.oom) {
        free(d.v);
        return -1;
    }
    *out = d.v;
    *n = d.n;
    return 0;
}
