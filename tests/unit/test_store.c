/*
 * Unit tests of the SQLite store's device ceilings (a temporary database): every field of
 * kopt_ceilings round-trips, a device is replaced by a later measurement, an unknown device
 * is not found, and a row written before kopt measured the L2 and shared memory (planted
 * with plain SQL) still reads, with those two as not measured.
 */
#include "ktest.h"

#include "kopt/store.h"

#include <sqlite3.h>

static kopt_ctx *ctx;
static char *tmp;

static kopt_device_info h200(void)
{
    kopt_device_info d;

    memset(&d, 0, sizeof(d));
    snprintf(d.name, sizeof(d.name), "NVIDIA H200");
    snprintf(d.uuid, sizeof(d.uuid), "GPU-0a1b2c3d-test");
    d.cc_major = 9;
    d.sm_count = 132;
    d.clock_khz = 1980000;
    return d;
}

static kopt_ceilings sample(double scale)
{
    kopt_ceilings c;

    memset(&c, 0, sizeof(c));
    c.valid = 1;
    c.dram_copy_gbs = 4113.5 * scale;
    c.dram_read_gbs = 4370.25 * scale;
    c.dram_write_gbs = 4217.0 * scale;
    c.l2_gbs = 10744.5 * scale;
    c.l2_measured = 1;
    c.smem_gbs = 31560.0 * scale;
    c.fp64_fma_gflops = 33300.9 * scale;
    c.fp64_tc_gflops = 66301.8 * scale;
    c.smem_measured = 1;
    for (int k = 0; k < KOPT_NCOMPUTE; k++) {
        c.gflops[k] = (1000.0 + 37.25 * k) * scale;
        c.measured[k] = k != KOPT_COMPUTE_INT;
    }
    snprintf(c.measured_at, sizeof(c.measured_at), "2026-11-20T10:00:0%dZ", (int)scale % 10);
    return c;
}

static void check_same(const kopt_ceilings *a, const kopt_ceilings *b)
{
    CHECK_EQ_INT(a->valid, b->valid);
    CHECK_NEAR(a->dram_copy_gbs, b->dram_copy_gbs, 1e-9);
    CHECK_NEAR(a->dram_read_gbs, b->dram_read_gbs, 1e-9);
    CHECK_NEAR(a->dram_write_gbs, b->dram_write_gbs, 1e-9);
    CHECK_NEAR(a->l2_gbs, b->l2_gbs, 1e-9);
    CHECK_EQ_INT(a->l2_measured, b->l2_measured);
    CHECK_NEAR(a->smem_gbs, b->smem_gbs, 1e-9);
    CHECK_NEAR(a->fp64_fma_gflops, b->fp64_fma_gflops, 1e-9);
    CHECK_NEAR(a->fp64_tc_gflops, b->fp64_tc_gflops, 1e-9);
    CHECK_EQ_INT(a->smem_measured, b->smem_measured);
    for (int k = 0; k < KOPT_NCOMPUTE; k++) {
        CHECK_NEAR(a->gflops[k], b->gflops[k], 1e-9);
        CHECK_EQ_INT(a->measured[k], b->measured[k]);
    }
    CHECK_EQ_STR(a->measured_at, b->measured_at);
}

static kopt_store *open_db(const char *name, char **path)
{
    kopt_store *s = NULL;

    *path = kopt_path_join(tmp, name);
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, *path), KOPT_OK))
        fprintf(stderr, "  %s\n", kopt_errmsg(ctx));
    return s;
}

static void test_ceilings_round_trip(void)
{
    char *path;
    kopt_store *s = open_db("round.db", &path);
    kopt_device_info d = h200();
    kopt_ceilings in = sample(1.0), in2 = sample(2.0), out;
    int found = -1;

    if (!s)
        goto cleanup;
    CHECK_EQ_INT(kopt_store_put_device(s, ctx, &d, &in), KOPT_OK);
    CHECK_EQ_INT(kopt_store_get_ceilings(s, ctx, d.uuid, &out, &found), KOPT_OK);
    CHECK_EQ_INT(found, 1);
    check_same(&in, &out);
    /* not measured stays not measured */
    in.l2_measured = 0;
    in.smem_measured = 0;
    in.smem_gbs = 0;
    CHECK_EQ_INT(kopt_store_put_device(s, ctx, &d, &in), KOPT_OK);
    CHECK_EQ_INT(kopt_store_get_ceilings(s, ctx, d.uuid, &out, &found), KOPT_OK);
    check_same(&in, &out);
    /* a later measurement replaces the row, and survives closing the store */
    CHECK_EQ_INT(kopt_store_put_device(s, ctx, &d, &in2), KOPT_OK);
    kopt_store_close(s);
    s = NULL;
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_store_get_ceilings(s, ctx, d.uuid, &out, &found), KOPT_OK);
    CHECK_EQ_INT(found, 1);
    check_same(&in2, &out);
    CHECK_EQ_INT(kopt_store_get_ceilings(s, ctx, "GPU-not-there", &out, &found), KOPT_OK);
    CHECK_EQ_INT(found, 0);
    CHECK_EQ_INT(out.valid, 0);
cleanup:
    kopt_store_close(s);
    free(path);
}

/* A row as kopt wrote it before the L2 and shared-memory ceilings existed. */
static void test_ceilings_old_row(void)
{
    static const char old_json[] =
        "{\"dram_copy_gbs\":4100.5,\"dram_read_gbs\":4300.0,\"dram_write_gbs\":4200.0,"
        "\"gflops\":[61000.0,33000.0,990000.0,990000.0,495000.0,1980000.0,33000.0],"
        "\"measured\":[1,0,0,0,0,0,0]}";
    char *path;
    kopt_store *s = open_db("old.db", &path);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    kopt_ceilings out;
    int found = 0;

    if (!s)
        goto cleanup;
    kopt_store_close(s);        /* the schema exists now; plant the row with plain SQL */
    s = NULL;
    if (!CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK) ||
        !CHECK_EQ_INT(sqlite3_prepare_v2(db, "INSERT INTO devices (uuid, name, cc, sm_count, "
                                         "ceilings_json, measured_at) VALUES "
                                         "('GPU-old', 'NVIDIA H200', '9.0', 132, ?, "
                                         "'2026-10-01T00:00:00Z')", -1, &st, NULL), SQLITE_OK))
        goto cleanup;
    sqlite3_bind_text(st, 1, old_json, -1, SQLITE_STATIC);
    CHECK_EQ_INT(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    db = NULL;
    if (!CHECK_EQ_INT(kopt_store_open(&s, ctx, path), KOPT_OK))
        goto cleanup;
    CHECK_EQ_INT(kopt_store_get_ceilings(s, ctx, "GPU-old", &out, &found), KOPT_OK);
    CHECK_EQ_INT(found, 1);
    CHECK_NEAR(out.dram_copy_gbs, 4100.5, 1e-9);
    CHECK_NEAR(out.gflops[KOPT_COMPUTE_FP32], 61000.0, 1e-9);
    CHECK_EQ_INT(out.measured[KOPT_COMPUTE_FP32], 1);
    CHECK_EQ_INT(out.measured[KOPT_COMPUTE_BF16], 0);
    CHECK_NEAR(out.l2_gbs, 0, 0);
    CHECK_EQ_INT(out.l2_measured, 0);
    CHECK_NEAR(out.smem_gbs, 0, 0);
    CHECK_EQ_INT(out.smem_measured, 0);
    CHECK_EQ_STR(out.measured_at, "2026-10-01T00:00:00Z");
cleanup:
    sqlite3_close(db);
    kopt_store_close(s);
    free(path);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_ceilings_round_trip), KTEST(test_ceilings_old_row),
    };
    int rc;

    ctx = kopt_ctx_new();
    tmp = ktest_tmpdir("store");
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    if (tmp)
        ktest_rmtree(tmp);
    free(tmp);
    kopt_ctx_free(ctx);
    return rc;
}
