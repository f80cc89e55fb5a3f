/* The CuTe/CUTLASS code-search index: SQLite FTS5 over chunks of the headers and examples.
 *
 * Each file is cut into chunks of about 40 lines (at blank lines, 60 at most). A chunk is
 * one FTS5 row with three columns, each the chunk's terms (terms.c) as space-separated
 * words: `path` (the file's path), `defs` (the names the chunk defines: struct, using,
 * #define, function) and `body` (every identifier in it, comments included). BM25 weighs
 * defs 10, path 3, body 1, so the chunk that defines `make_tma_copy` outranks the hundred
 * that call it. The chunk's text lives in a plain table beside the contentless FTS table.
 * The file is built under a temporary name and renamed, so a reader never sees half. */
#include "cute_int.h"

#include <ctype.h>
#include <ftw.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCHEMA "kopt-cute-index-2"

struct kopt_cute_index {
    sqlite3 *db;
    sqlite3_stmt *query;
    char *path, *root, *version;
    int files, chunks, built;
    double build_ms;
};

void kopt_cute_index_free(kopt_cute_index *ix)
{
    if (!ix)
        return;
    sqlite3_finalize(ix->query);
    sqlite3_close(ix->db);
    free(ix->path);
    free(ix->root);
    free(ix->version);
    free(ix);
}

void kopt_cute_index_get_info(const kopt_cute_index *ix, kopt_cute_index_info *info)
{
    info->path = ix->path;
    info->version = ix->version;
    info->files = ix->files;
    info->chunks = ix->chunks;
    info->built = ix->built;
    info->build_ms = ix->build_ms;
}

/* ---- the files to index ----------------------------------------------------------------- */

typedef struct file_list {
    char **v;
    int n, cap;
} file_list;

static file_list *g_walk;   /* nftw has no user pointer: builds hold g_build_lock */
static pthread_mutex_t g_build_lock = PTHREAD_MUTEX_INITIALIZER;

static int walk_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    static const char *const exts[] = {".h", ".hpp", ".inl", ".cuh", ".cu", ".cpp", NULL};
    const char *dot = strrchr(path, '.');

    (void)st;
    (void)ftw;
    if (type != FTW_F || !dot)
        return 0;
    for (const char *const *e = exts; *e; e++) {
        if (strcmp(dot, *e) != 0)
            continue;
        if (g_walk->n == g_walk->cap) {
            int cap = g_walk->cap ? g_walk->cap * 2 : 1024;
            char **v = realloc(g_walk->v, (size_t)cap * sizeof(*v));
            if (!v)
                return 1;
            g_walk->v = v;
            g_walk->cap = cap;
        }
        return (g_walk->v[g_walk->n++] = strdup(path)) == NULL;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void file_list_free(file_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* ---- building --------------------------------------------------------------------------- */

typedef struct builder {
    kopt_ctx *ctx;
    sqlite3 *db;
    sqlite3_stmt *ins_file, *ins_chunk, *ins_fts;
    int files, chunks;
} builder;

static kopt_status sql_err(kopt_ctx *ctx, sqlite3 *db, const char *what)
{
    return kopt_seterr(ctx, KOPT_E_DB, "cute index: %s: %s", what,
                       db ? sqlite3_errmsg(db) : "cannot open");
}

/* One chunk: lines [l0, l1] of the file, text[0..n). */
static kopt_status add_chunk(builder *b, sqlite3_int64 file_id, const char *path_terms,
                             const kopt__cute_def *defs, int ndefs, int l0, int l1,
                             const char *text, size_t n)
{
    kopt_buf dt = KOPT_BUF_INIT, bt = KOPT_BUF_INIT;
    kopt_status rc = KOPT_OK;
    sqlite3_int64 id;

    for (int i = 0; i < ndefs; i++)
        if (defs[i].line >= l0 && defs[i].line <= l1) {
            char exact[24];
            kopt__cute_exact_term(defs[i].name, strlen(defs[i].name), exact);
            kopt__cute_terms_buf(&dt, defs[i].name, strlen(defs[i].name));
            kopt_buf_printf(&dt, " %s", exact);
        }
    kopt__cute_terms_buf(&bt, text, n);
    sqlite3_reset(b->ins_chunk);
    sqlite3_bind_int64(b->ins_chunk, 1, file_id);
    sqlite3_bind_int(b->ins_chunk, 2, l0);
    sqlite3_bind_int(b->ins_chunk, 3, l1);
    sqlite3_bind_text(b->ins_chunk, 4, text, (int)n, SQLITE_STATIC);
    if (sqlite3_step(b->ins_chunk) != SQLITE_DONE) {
        rc = sql_err(b->ctx, b->db, "insert chunk");
        goto cleanup;
    }
    id = sqlite3_last_insert_rowid(b->db);
    sqlite3_reset(b->ins_fts);
    sqlite3_bind_int64(b->ins_fts, 1, id);
    sqlite3_bind_text(b->ins_fts, 2, path_terms, -1, SQLITE_STATIC);
    sqlite3_bind_text(b->ins_fts, 3, kopt_buf_cstr(&dt), -1, SQLITE_STATIC);
    sqlite3_bind_text(b->ins_fts, 4, kopt_buf_cstr(&bt), -1, SQLITE_STATIC);
    if (sqlite3_step(b->ins_fts) != SQLITE_DONE)
        rc = sql_err(b->ctx, b->db, "insert terms");
    b->chunks++;
cleanup:
    kopt_buf_free(&dt);
    kopt_buf_free(&bt);
    return rc;
}

/* Index one file, `rel` being its path relative to the root ("include/cute/..."). */
static kopt_status add_file(builder *b, const char *abs, const char *rel, int kind)
{
    char *text = NULL, *path_terms = NULL;
    size_t len = 0;
    kopt__cute_def *defs = NULL;
    int ndefs = 0, line = 1, l0 = 1;
    const char *c0;
    kopt_status rc;
    sqlite3_int64 file_id;

    if ((rc = kopt_file_read(b->ctx, abs, &text, &len)) != KOPT_OK)
        return rc;
    if (kopt__cute_find_defs(text, len, &defs, &ndefs) != 0 ||
        !(path_terms = kopt_cute_terms(rel))) {
        rc = kopt_seterr(b->ctx, KOPT_E_NOMEM, "cute index");
        goto cleanup;
    }
    sqlite3_reset(b->ins_file);
    sqlite3_bind_text(b->ins_file, 1, rel, -1, SQLITE_STATIC);
    sqlite3_bind_int(b->ins_file, 2, kind);
    if (sqlite3_step(b->ins_file) != SQLITE_DONE) {
        rc = sql_err(b->ctx, b->db, "insert file");
        goto cleanup;
    }
    file_id = sqlite3_last_insert_rowid(b->db);
    b->files++;
    c0 = text;
    for (const char *p = text; p < text + len; line++) {
        const char *eol = memchr(p, '\n', (size_t)(text + len - p));
        const char *next = eol ? eol + 1 : text + len;
        int blank = 1, lines = line - l0 + 1;
        for (const char *q = p; q < next; q++)
            if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r')
                blank = 0;
        /* close a chunk at a blank line once it has 24 lines, or at 60, or at the end */
        if ((blank && lines >= 24) || lines >= 60 || next >= text + len) {
            if ((rc = add_chunk(b, file_id, path_terms, defs, ndefs, l0, line, c0,
                                (size_t)(next - c0))) != KOPT_OK)
                goto cleanup;
            l0 = line + 1;
            c0 = next;
        }
        p = next;
    }
cleanup:
    free(text);
    free(path_terms);
    free(defs);
    return rc;
}

static kopt_status build(kopt_ctx *ctx, const char *tmp, const kopt_cutlass *cl,
                         const char *root, int *files, int *chunks)
{
    builder b = {ctx, NULL, NULL, NULL, NULL, 0, 0};
    file_list list = {NULL, 0, 0};
    kopt_status rc = KOPT_OK;
    const char *dirs[2] = {cl->include_dir, cl->examples_dir};
    size_t rootlen = strlen(root);

    if (sqlite3_open(tmp, &b.db) != SQLITE_OK) {
        rc = sql_err(ctx, b.db, tmp);
        goto cleanup;
    }
    if (sqlite3_exec(b.db,
                     "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
                     "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                     "CREATE TABLE files(id INTEGER PRIMARY KEY, rel TEXT, kind INTEGER);"
                     "CREATE TABLE chunks(id INTEGER PRIMARY KEY, file INTEGER, line0 INTEGER,"
                     " line1 INTEGER, text TEXT);"
                     "CREATE VIRTUAL TABLE fts USING fts5(path, defs, body, content='',"
                     " tokenize='unicode61');", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(b.db, "INSERT INTO files(rel, kind) VALUES(?, ?)", -1, &b.ins_file,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(b.db, "INSERT INTO chunks(file, line0, line1, text) VALUES(?,?,?,?)",
                           -1, &b.ins_chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(b.db, "INSERT INTO fts(rowid, path, defs, body) VALUES(?,?,?,?)", -1,
                           &b.ins_fts, NULL) != SQLITE_OK) {
        rc = sql_err(ctx, b.db, "schema");
        goto cleanup;
    }
    for (int k = 0; k < 2; k++) {
        int from = list.n;
        if (!dirs[k][0])
            continue;
        g_walk = &list;
        if (nftw(dirs[k], walk_cb, 16, FTW_PHYS) != 0) {
            rc = kopt_seterr(ctx, KOPT_E_IO, "cute index: cannot list %s", dirs[k]);
            goto cleanup;
        }
        qsort(list.v + from, (size_t)(list.n - from), sizeof(char *), cmp_str);
        for (int i = from; i < list.n; i++) {
            const char *rel = strncmp(list.v[i], root, rootlen) == 0 ? list.v[i] + rootlen + 1
                                                                     : list.v[i];
            if ((rc = add_file(&b, list.v[i], rel, k)) != KOPT_OK)
                goto cleanup;
        }
    }
    {
        char *sql = sqlite3_mprintf("INSERT INTO meta VALUES('schema', %Q), ('version', %Q),"
                                    " ('root', %Q), ('files', %d), ('chunks', %d);"
                                    "INSERT INTO fts(fts) VALUES('optimize'); COMMIT;",
                                    SCHEMA, cl->version, root, b.files, b.chunks);
        if (!sql || sqlite3_exec(b.db, sql, NULL, NULL, NULL) != SQLITE_OK)
            rc = sql_err(ctx, b.db, "finish");
        sqlite3_free(sql);
    }
    *files = b.files;
    *chunks = b.chunks;
cleanup:
    g_walk = NULL;
    file_list_free(&list);
    sqlite3_finalize(b.ins_file);
    sqlite3_finalize(b.ins_chunk);
    sqlite3_finalize(b.ins_fts);
    sqlite3_close(b.db);
    return rc;
}

/* The value of a meta key, or NULL (malloc'd). */
static char *meta_get(sqlite3 *db, const char *key)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;

    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            v = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return v;
}

static kopt_status open_db(kopt_cute_index *ix, kopt_ctx *ctx)
{
    char *schema = NULL, *files = NULL, *chunks = NULL;
    kopt_status rc = KOPT_OK;

    if (sqlite3_open_v2(ix->path, &ix->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return sql_err(ctx, ix->db, ix->path);
    schema = meta_get(ix->db, "schema");
    if (!schema || strcmp(schema, SCHEMA) != 0) {
        rc = KOPT_E_NOT_FOUND;   /* an older or broken index: rebuild */
        goto cleanup;
    }
    ix->root = meta_get(ix->db, "root");
    ix->version = meta_get(ix->db, "version");
    files = meta_get(ix->db, "files");
    chunks = meta_get(ix->db, "chunks");
    ix->files = files ? atoi(files) : 0;
    ix->chunks = chunks ? atoi(chunks) : 0;
    if (!ix->root || !ix->version)
        rc = KOPT_E_NOT_FOUND;
cleanup:
    if (rc != KOPT_OK) {
        sqlite3_close(ix->db);
        ix->db = NULL;
        free(ix->root);
        free(ix->version);
        ix->root = ix->version = NULL;
    }
    free(schema);
    free(files);
    free(chunks);
    return rc;
}

kopt_status kopt_cute_index_open(kopt_cute_index **out, kopt_ctx *ctx, const kopt_cutlass *cl,
                                 const kopt_cute_index_opts *o)
{
    kopt_cute_index *ix = calloc(1, sizeof(*ix));
    char *cache = o && o->cache_dir ? strdup(o->cache_dir) : kopt_cache_dir();
    char *dir = cache ? kopt_path_join(cache, "cute") : NULL, *root = NULL, *tmp = NULL;
    char key[65];
    kopt_hash *h;
    kopt_status rc = KOPT_OK;

    *out = NULL;
    if (!ix || !dir || !(root = kopt_path_dir(cl->include_dir))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "cute index");
        goto cleanup;
    }
    if ((rc = kopt_mkdirs(ctx, dir)) != KOPT_OK)
        goto cleanup;
    h = kopt_hash_new();
    kopt_hash_add_str(h, SCHEMA);
    kopt_hash_add_str(h, cl->include_dir);
    kopt_hash_add_str(h, cl->examples_dir);
    kopt_hash_hex(h, key);
    key[12] = '\0';
    if (asprintf(&ix->path, "%s/%s-%s.sqlite", dir, cl->version, key) < 0 ||
        asprintf(&tmp, "%s.%d.tmp", ix->path, (int)getpid()) < 0) {
        ix->path = NULL;
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "cute index");
        goto cleanup;
    }
    if (!(o && o->rebuild) && access(ix->path, R_OK) == 0 && open_db(ix, ctx) == KOPT_OK)
        goto ready;
    {
        double t0 = kopt_now_ms();
        unlink(tmp);
        pthread_mutex_lock(&g_build_lock);
        rc = build(ctx, tmp, cl, root, &ix->files, &ix->chunks);
        pthread_mutex_unlock(&g_build_lock);
        if (rc != KOPT_OK) {
            unlink(tmp);
            goto cleanup;
        }
        if (rename(tmp, ix->path) != 0) {
            unlink(tmp);
            rc = kopt_seterr(ctx, KOPT_E_IO, "cute index: cannot rename to %s", ix->path);
            goto cleanup;
        }
        ix->build_ms = kopt_now_ms() - t0;
        ix->built = 1;
        kopt_log(ctx, KOPT_LOG_INFO, "cute index: %d files, %d chunks in %.0f ms: %s",
                 ix->files, ix->chunks, ix->build_ms, ix->path);
    }
    if ((rc = open_db(ix, ctx)) != KOPT_OK) {
        if (rc == KOPT_E_NOT_FOUND)
            rc = kopt_seterr(ctx, KOPT_E_DB, "cute index: %s is incomplete", ix->path);
        goto cleanup;
    }
ready:
    if (sqlite3_prepare_v2(ix->db,
                           /* rank the FTS rows alone, then fetch text for the best */
                           "SELECT f.rel, f.kind, c.line0, c.line1, c.text, r.s"
                           " FROM (SELECT rowid AS id, bm25(fts, 3.0, 10.0, 1.0) AS s FROM fts"
                           "       WHERE fts MATCH ? ORDER BY s LIMIT 200) r"
                           " JOIN chunks c ON c.id = r.id JOIN files f ON f.id = c.file"
                           " ORDER BY r.s", -1, &ix->query, NULL) !=
        SQLITE_OK) {
        rc = sql_err(ctx, ix->db, "query");
        goto cleanup;
    }
    *out = ix;
    ix = NULL;
cleanup:
    kopt_cute_index_free(ix);
    free(cache);
    free(dir);
    free(root);
    free(tmp);
    return rc;
}

/* ---- searching -------------------------------------------------------------------------- */

void kopt_cute_hits_free(kopt_cute_hits *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n; i++) {
        free((char *)h->hits[i].file);
        free((char *)h->hits[i].path);
        free((char *)h->hits[i].snippet);
    }
    free(h->hits);
    free(h);
}

/* How many of the query's terms (a space-separated list) the line holds. */
static int line_score(const char *line, size_t n, char **terms, int nterms)
{
    kopt_buf b = KOPT_BUF_INIT;
    int score = 0;

    kopt__cute_terms_buf(&b, line, n);
    for (int i = 0; i < nterms; i++) {
        const char *p = kopt_buf_cstr(&b);
        size_t tl = strlen(terms[i]);
        while ((p = strstr(p, terms[i]))) {
            if ((p == b.ptr || p[-1] == ' ') && (p[tl] == ' ' || p[tl] == '\0')) {
                score += (int)tl;   /* longer terms (whole identifiers) count more */
                break;
            }
            p++;
        }
    }
    kopt_buf_free(&b);
    return score;
}

/* The part of a chunk to show: from a little before its best line, at most `max` chars,
 * whole lines. Sets *first and *last to the lines shown. */
static char *snippet(const char *text, int line0, char **terms, int nterms, int max, int *first,
                     int *last)
{
    const char *best = text, *p = text, *start, *end;
    int best_score = 0, ln = line0, best_ln = line0, skip;

    for (; *p; ln++) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        int s = line_score(p, n, terms, nterms);
        if (s > best_score) {
            best_score = s;
            best = p;
            best_ln = ln;
        }
        p = eol ? eol + 1 : p + n;
    }
    /* up to 3 lines of context before the best line */
    start = text;
    *first = line0;
    for (skip = best_ln - line0 - 3; skip > 0; skip--) {
        start = strchr(start, '\n') + 1;
        (*first)++;
    }
    (void)best;
    end = start;
    *last = *first - 1;
    while (*end && end - start < max) {
        const char *eol = strchr(end, '\n');
        const char *next = eol ? eol + 1 : end + strlen(end);
        if (next - start > max && end > start)
            break;
        end = next;
        (*last)++;
    }
    if (*last < *first)
        *last = *first;
    return strndup(start, (size_t)(end - start > max ? max : end - start));
}

static size_t trailing_blanks(const char *s)
{
    size_t n = strlen(s), k = 0;
    while (k < n && s[n - 1 - k] == ' ')
        k++;
    return k;
}

kopt_status kopt_cute_search(kopt_cute_hits **out, kopt_ctx *ctx, kopt_cute_index *ix,
                             const char *query, const kopt_cute_search_opts *o)
{
    kopt_cute_search_opts so = KOPT_CUTE_SEARCH_OPTS_INIT;
    kopt_cute_hits *h = calloc(1, sizeof(*h));
    char *terms = kopt_cute_terms(query), **tv = NULL, *save = NULL, *tok;
    kopt_buf match = KOPT_BUF_INIT;
    double t0 = kopt_now_ms();
    int nt = 0, limit, per_file, max_chars, step = SQLITE_DONE;
    kopt_status rc = KOPT_OK;
    char (*seen)[512] = NULL;
    int *seen_n = NULL, nseen = 0;

    *out = NULL;
    if (o)
        so = *o;
    limit = so.limit > 0 ? so.limit : 5;
    per_file = so.per_file > 0 ? so.per_file : 2;
    max_chars = so.max_snippet_chars > 0 ? so.max_snippet_chars : 1200;
    if (!h || !terms || !(tv = calloc(strlen(terms) / 2 + 2, sizeof(char *))) ||
        !(h->hits = calloc((size_t)limit, sizeof(*h->hits))) ||
        !(seen = calloc((size_t)limit, sizeof(*seen))) ||
        !(seen_n = calloc((size_t)limit, sizeof(int)))) {
        rc = kopt_seterr(ctx, KOPT_E_NOMEM, "cute search");
        goto cleanup;
    }
    for (tok = strtok_r(terms, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int dup = 0;
        for (int i = 0; i < nt; i++)
            dup |= strcmp(tv[i], tok) == 0;
        if (dup)
            continue;
        tv[nt++] = tok;
        kopt_buf_printf(&match, "%s\"%s\"", match.len ? " OR " : "", tok);
    }
    /* each identifier in the query, exactly as written, may name a definition: a word
     * with '_' or inner capitals, or the query's only word (plain words like "mma" would
     * pull in whatever happens to define a function of that name) */
    for (const char *p = query; *p;) {
        size_t n = 0, inner_caps = 0, under = 0;
        char exact[24];
        while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_')) {
            inner_caps += n > 0 && isupper((unsigned char)p[n]);
            under += p[n] == '_';
            n++;
        }
        if (n >= 3 && !isdigit((unsigned char)p[0]) &&
            (inner_caps || under || strspn(query, " ") + n == strlen(query) - trailing_blanks(query))) {
            kopt__cute_exact_term(p, n, exact);
            kopt_buf_printf(&match, "%s\"%s\"", match.len ? " OR " : "", exact);
        }
        p += n ? n : 1;
    }
    if (nt == 0) {
        rc = kopt_seterr(ctx, KOPT_E_INVALID, "cute search: the query '%s' has no searchable "
                         "word (identifiers or words of two letters or more)", query);
        goto cleanup;
    }
    sqlite3_reset(ix->query);
    sqlite3_bind_text(ix->query, 1, kopt_buf_cstr(&match), -1, SQLITE_TRANSIENT);
    while (h->n < limit && (step = sqlite3_step(ix->query)) == SQLITE_ROW) {
        const char *rel = (const char *)sqlite3_column_text(ix->query, 0);
        int kind = sqlite3_column_int(ix->query, 1), f = -1;
        kopt_cute_hit *hit = &h->hits[h->n];
        if (kind == 1 && so.headers_only)
            continue;
        for (int i = 0; i < nseen; i++)
            if (strcmp(seen[i], rel) == 0)
                f = i;
        if (f >= 0 && seen_n[f] >= per_file)
            continue;
        if (f < 0 && nseen < limit) {
            snprintf(seen[nseen], sizeof(seen[0]), "%s", rel);
            seen_n[f = nseen++] = 0;
        }
        if (f >= 0)
            seen_n[f]++;
        hit->file = strdup(rel);
        hit->path = kopt_path_join(ix->root, rel);
        hit->score = -sqlite3_column_double(ix->query, 5);
        hit->snippet = snippet((const char *)sqlite3_column_text(ix->query, 4),
                               sqlite3_column_int(ix->query, 2), tv, nt, max_chars,
                               &hit->line_start, &hit->line_end);
        h->n++;
        if (!hit->file || !hit->path || !hit->snippet) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "cute search");
            goto cleanup;
        }
    }
    sqlite3_reset(ix->query);
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        rc = sql_err(ctx, ix->db, "search");
        goto cleanup;
    }
    h->query_ms = kopt_now_ms() - t0;
    *out = h;
    h = NULL;
cleanup:
    kopt_cute_hits_free(h);
    kopt_buf_free(&match);
    free(terms);
    free(tv);
    free(seen);
    free(seen_n);
    return rc;
}
