/*
 * kopt/cute.h: CUTLASS and CuTe as a dependency of candidates, and a code search over them.
 *
 * Discovery: the CUTLASS headers come from, first to last, an explicit folder (`kopt ...
 * --cutlass DIR`), $CUTLASS_PATH, or the installed Python package nvidia-cutlass (which
 * ships them as cutlass_library/source/include). Any of these may name the include folder
 * itself, a CUTLASS checkout (DIR/include), the package folder (DIR/source/include) or an
 * unpacked wheel / pip --target folder (DIR/cutlass_library/source/include). The version
 * comes from include/cutlass/version.h. Candidates whose source includes <cute/...> or
 * <cutlass/...> are compiled with that include folder, and its version is part of their
 * compile cache key (src/cuda/compile.c).
 *
 * Search: kopt_cute_index_open() opens (building once per CUTLASS version and folder) an
 * SQLite FTS5 index of the headers and, when present, CUTLASS's examples, kept in kopt's
 * cache folder; kopt_cute_search() ranks chunks of ~40 lines by BM25 over identifiers split
 * on case and underscores (docs/cute.md). It is meant to be called once per LLM turn.
 *
 * Ownership: kopt_cute_index (kopt_cute_index_free) and kopt_cute_hits (kopt_cute_hits_free)
 * are owned by the caller; the strings inside a hit live as long as its kopt_cute_hits.
 * Strings returned as char * are owned by the caller (free()). Every _free accepts NULL.
 */
#ifndef KOPT_CUTE_H
#define KOPT_CUTE_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a CUTLASS install was found. */
typedef struct kopt_cutlass {
    char include_dir[4096];  /* holds cute/ and cutlass/ (absolute) */
    char examples_dir[4096]; /* CUTLASS's examples/ beside it, or "" */
    char version[32];        /* "4.2.0" from cutlass/version.h */
    char source[32];         /* "--cutlass", "CUTLASS_PATH" or "python package" */
} kopt_cutlass;

/* Find CUTLASS: `dir` when not NULL (an explicit choice: not finding it there is an
 * error), else $CUTLASS_PATH when set (likewise), else the Python package (python3 on
 * PATH, or $KOPT_PYTHON). KOPT_E_NOT_FOUND, saying what was tried, when none is found. */
kopt_status kopt_cutlass_find(kopt_cutlass *out, kopt_ctx *ctx, const char *dir);

/* Whether a source includes CuTe or CUTLASS headers (<cute/...>, <cutlass/...>). */
int kopt_cutlass_used(const char *source);

/* Read "MAJOR.MINOR.PATCH" from <include_dir>/cutlass/version.h into out. */
kopt_status kopt_cutlass_version(kopt_ctx *ctx, const char *include_dir, char out[32]);

/* ---- search ----------------------------------------------------------------------------- */

typedef struct kopt_cute_index kopt_cute_index;

typedef struct kopt_cute_index_opts {
    int version;
    const char *cache_dir;   /* NULL: kopt_cache_dir() */
    int rebuild;             /* build even when a complete index exists */
} kopt_cute_index_opts;
#define KOPT_CUTE_INDEX_OPTS_INIT {1, NULL, 0}

/* Open the index of `cl`'s headers and examples, building it first when it is missing
 * (a few seconds; later opens are instant). The file is <cache>/cute/<version>-<hash of
 * the folders>.sqlite. */
kopt_status kopt_cute_index_open(kopt_cute_index **out, kopt_ctx *ctx, const kopt_cutlass *cl,
                                 const kopt_cute_index_opts *o);
void kopt_cute_index_free(kopt_cute_index *ix);

/* The index's size and provenance (borrowed strings). */
typedef struct kopt_cute_index_info {
    const char *path;        /* the SQLite file */
    const char *version;     /* CUTLASS version indexed */
    int files, chunks;
    int built;               /* built by this open */
    double build_ms;         /* when built */
} kopt_cute_index_info;
void kopt_cute_index_get_info(const kopt_cute_index *ix, kopt_cute_index_info *info);

typedef struct kopt_cute_hit {
    const char *file;        /* relative: "include/cute/atom/mma_atom.hpp", "examples/..." */
    const char *path;        /* absolute */
    int line_start, line_end;/* 1-based, inclusive: the snippet's lines */
    double score;            /* higher is better */
    const char *snippet;     /* those lines, at most max_snippet_chars */
} kopt_cute_hit;

typedef struct kopt_cute_hits {
    int n;
    kopt_cute_hit *hits;
    double query_ms;         /* time spent in kopt_cute_search */
} kopt_cute_hits;

typedef struct kopt_cute_search_opts {
    int version;
    int limit;               /* hits to return; 0: 5 */
    int max_snippet_chars;   /* 0: 1200 (about 300 tokens) */
    int per_file;            /* hits per file at most; 0: 2 */
    int headers_only;        /* leave CUTLASS's examples out */
} kopt_cute_search_opts;
#define KOPT_CUTE_SEARCH_OPTS_INIT {1, 0, 0, 0, 0}

/* Search by identifier ("make_tma_copy", "SM90_64x128x16_F32BF16BF16_SS") or by words
 * ("TMA load multicast"). No match is not an error: *out has n == 0. KOPT_E_INVALID for
 * a query with no word in it. */
kopt_status kopt_cute_search(kopt_cute_hits **out, kopt_ctx *ctx, kopt_cute_index *ix,
                             const char *query, const kopt_cute_search_opts *o);
void kopt_cute_hits_free(kopt_cute_hits *h);

/* The hits as JSON text ({"query":..., "query_ms":..., "hits":[{file, path, line_start,
 * line_end, score, snippet}]}), or as text for a prompt ("## file:12-40" + the snippet in a
 * fenced block). NULL when out of memory. */
char *kopt_cute_hits_json(const kopt_cute_hits *h, const char *query);
char *kopt_cute_hits_text(const kopt_cute_hits *h);

/* Split text into the index's terms, lower case, one space apart: each identifier whole
 * (underscores dropped), its parts (split on '_', case changes and letter/digit runs
 * kept together as in "sm90") and each pair of adjacent parts. Exposed for tests and for
 * callers that want to see what a query becomes. */
char *kopt_cute_terms(const char *text);

/* ---- compile errors --------------------------------------------------------------------- */

/* Summarize an nvcc or NVRTC log whose errors come from inside CUTLASS/CuTe headers: the
 * first error (file:line and message, the header path shortened to cute/... or
 * cutlass/...), the template it was instantiating, and the line of the candidate (any file
 * outside the CUTLASS include folder) that led there, plus the number of errors. A few
 * lines, under ~1500 characters, for a prompt. A log without errors gives "". */
char *kopt_cute_summarize_errors(const char *log);

#ifdef __cplusplus
}
#endif
#endif
