/*
 * kopt/store.h: the SQLite store of everything kopt measured: devices and their
 * ceilings, problems, candidates (by source hash), compiles and evaluations. The schema
 * is versioned (PRAGMA user_version) and migrated forward on open.
 *
 * Ownership: kopt_store_open() returns a handle owned by the caller (kopt_store_close).
 */
#ifndef KOPT_STORE_H
#define KOPT_STORE_H

#include "kopt/eval.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_STORE_SCHEMA_VERSION 1

typedef struct kopt_store kopt_store;

kopt_status kopt_store_open(kopt_store **out, kopt_ctx *ctx, const char *path);
void kopt_store_close(kopt_store *s);
int kopt_store_schema_version(kopt_store *s);

/* Ceilings of a device by UUID; *found = 0 when none were stored. */
kopt_status kopt_store_get_ceilings(kopt_store *s, kopt_ctx *ctx, const char *uuid,
                                    kopt_ceilings *out, int *found);
kopt_status kopt_store_put_device(kopt_store *s, kopt_ctx *ctx, const kopt_device_info *dev,
                                  const kopt_ceilings *c);
/* Record one evaluation (problem, candidate, compile and result); *id gets its row id. */
kopt_status kopt_store_put_eval(kopt_store *s, kopt_ctx *ctx, const kopt_problem *p,
                                const kopt_candidate *c, const kopt_eval_result *r,
                                const char *result_json, int64_t *id);
/* Number of evaluations stored (for tests and reports). */
kopt_status kopt_store_count_evals(kopt_store *s, kopt_ctx *ctx, int64_t *n);

#ifdef __cplusplus
}
#endif
#endif
