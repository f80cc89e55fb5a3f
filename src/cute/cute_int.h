/* Internal to src/cute: the term splitter and the definition finder the index shares. */
#ifndef KOPT_CUTE_INT_H
#define KOPT_CUTE_INT_H

#include "kopt/cute.h"

/* Append the terms of text[0..n) to out (kopt_cute_terms without the allocation). */
void kopt__cute_terms_buf(kopt_buf *out, const char *text, size_t n);

/* The term that stands for "defines exactly `name`" (case and underscores kept): "xd" and
 * 16 hex digits of its hash. Only a chunk's definitions get it, so a query naming an
 * identifier finds where it is defined, not where a differently cased namesake is. */
void kopt__cute_exact_term(const char *name, size_t n, char out[24]);

/* A name a file defines (struct, class, union, enum, using alias, #define, function) and
 * the 1-based line it is on. */
typedef struct kopt__cute_def {
    char name[128];
    int line;
} kopt__cute_def;

/* The names a C++ header defines at namespace or class scope (not inside function
 * bodies). *out is malloc'd (free()); *n its length. 0, or -1 when out of memory. */
int kopt__cute_find_defs(const char *text, size_t len, kopt__cute_def **out, int *n);

#endif
