/*
 * Output comparison (src/eval/verify.c, kopt__compare): the threaded f32 scan of large
 * tensors must report what a plain element-by-element pass reports (largest absolute and
 * relative errors, the first mismatch and its coordinates), wherever in the tensor the
 * interesting element lies.
 */
#include "ktest.h"

#include "../../src/eval/eval_int.h"
#include "../../src/eval/worker_priv.h"

#include <math.h>

enum { ROWS = 3000, COLS = 3001 };   /* 9,003,000 elements: three scan threads */

static float *got, *want;

static kopt_btensor tensor(void)
{
    kopt_btensor t;

    memset(&t, 0, sizeof(t));
    snprintf(t.name, sizeof(t.name), "y");
    t.dtype = KOPT_F32;
    t.count = (int64_t)ROWS * COLS;
    t.ndim = 2;
    t.shape[0] = ROWS;
    t.shape[1] = COLS;
    t.atol = 1e-5;
    t.rtol = 1e-4;
    return t;
}

static void fill(void)
{
    for (int64_t i = 0; i < (int64_t)ROWS * COLS; i++) {
        want[i] = (float)sin((double)i * 0.001) * 10.0f;
        got[i] = want[i];
    }
}

/* Brute force, the definition: the largest errors over every element. */
static void brute(const kopt_btensor *t, double *max_abs, double *max_rel)
{
    *max_abs = *max_rel = 0;
    for (int64_t i = 0; i < t->count; i++) {
        double e = fabs((double)got[i] - (double)want[i]);
        if (e > *max_abs)
            *max_abs = e;
        if (want[i] != 0 && e / fabs((double)want[i]) > *max_rel)
            *max_rel = e / fabs((double)want[i]);
    }
}

static void test_close_errors_match_brute_force(void)
{
    kopt_btensor t = tensor();
    kopt_check c;
    double ma, mr;
    /* small errors in every thread's part, the largest in the last part */
    int64_t at[] = {5, 3000000, 6000001, 9002999};

    fill();
    for (int k = 0; k < 4; k++)
        got[at[k]] = want[at[k]] + (float)(1e-6 * (k + 1));
    memset(&c, 0, sizeof(c));
    kopt__compare(&t, got, want, &c);
    brute(&t, &ma, &mr);
    CHECK_EQ_INT(c.mismatches, 0);
    CHECK_EQ_INT(c.first_index, -1);
    CHECK(c.max_abs_err == ma);
    CHECK(fabs(c.max_rel_err - mr) <= 1e-12 * mr);
    CHECK(ma > 3e-6);
}

static void test_mismatch_in_a_later_part(void)
{
    kopt_btensor t = tensor();
    kopt_check c;
    int64_t bad = (int64_t)2500 * COLS + 17;   /* in the third scan thread's part */

    fill();
    got[bad] = want[bad] + 1.0f;
    got[bad + 5] = NAN;
    memset(&c, 0, sizeof(c));
    kopt__compare(&t, got, want, &c);
    CHECK_EQ_INT(c.mismatches, 2);
    CHECK_EQ_INT(c.first_index, bad);
    CHECK_EQ_INT(c.first_coord[0], 2500);
    CHECK_EQ_INT(c.first_coord[1], 17);
    CHECK(fabs(c.first_got - c.first_want - 1.0) < 1e-5);
}

static void test_nan_where_the_reference_has_nan(void)
{
    kopt_btensor t = tensor();
    kopt_check c;

    fill();
    want[42] = got[42] = NAN;
    memset(&c, 0, sizeof(c));
    kopt__compare(&t, got, want, &c);
    CHECK_EQ_INT(c.mismatches, 0);
    got[43] = NAN;                 /* NaN where the reference has a number */
    kopt__compare(&t, got, want, &c);
    CHECK_EQ_INT(c.mismatches, 1);
    CHECK_EQ_INT(c.first_index, 43);
}

/* The timing's stopping rule: the median's 95% interval against the precision asked. */
static void test_median_precision(void)
{
    float v[400];
    uint64_t x = 88172645463325252ULL;

    /* tight samples: 1.000 +- 0.1%: known to 0.5% from a few dozen on */
    for (int i = 0; i < 400; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v[i] = 1.0f + 0.002f * (float)((double)(x % 1000) / 1000.0 - 0.5);
    }
    qsort(v, 50, sizeof(float), wk_cmp_float);
    CHECK(wk_median_known(v, 50, 0.005));
    CHECK(!wk_median_known(v, 50, 0.00001));
    CHECK(!wk_median_known(v, 4, 0.5));          /* too few to say anything */
    /* wide samples: 1.0 .. 2.0 uniform: the median is not known to 1% from 50 runs */
    for (int i = 0; i < 400; i++)
        v[i] = 1.0f + (float)i / 400.0f;
    CHECK(!wk_median_known(v, 400, 0.01));
    CHECK(wk_median_known(v, 400, 0.1));
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_close_errors_match_brute_force),
        KTEST(test_mismatch_in_a_later_part),
        KTEST(test_nan_where_the_reference_has_nan),
        KTEST(test_median_precision),
    };
    int rc;

    got = malloc(sizeof(float) * ROWS * COLS);
    want = malloc(sizeof(float) * ROWS * COLS);
    if (!got || !want)
        return 1;
    rc = ktest_main(argc, argv, cases, KTEST_COUNT(cases));
    free(got);
    free(want);
    return rc;
}
