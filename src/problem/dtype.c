/* Data types, roles and compute classes: names, sizes, default tolerances, host loads. */
#include "kopt/problem.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
    int is_float;
    double tol;
} dtypes[KOPT_DTYPE_COUNT] = {
    [KOPT_F32] = {"f32", 4, 1, 1e-4},
    [KOPT_F16] = {"f16", 2, 1, 1e-2},
    [KOPT_BF16] = {"bf16", 2, 1, 2e-2},
    [KOPT_F64] = {"f64", 8, 1, 1e-8},
    [KOPT_I32] = {"i32", 4, 0, 0},
    [KOPT_I64] = {"i64", 8, 0, 0},
};

size_t kopt_dtype_size(kopt_dtype t) { return dtypes[t].size; }
const char *kopt_dtype_name(kopt_dtype t) { return dtypes[t].name; }
int kopt_dtype_is_float(kopt_dtype t) { return dtypes[t].is_float; }
double kopt_dtype_default_tol(kopt_dtype t) { return dtypes[t].tol; }

int kopt_dtype_from_name(const char *name, kopt_dtype *out)
{
    for (int i = 0; i < KOPT_DTYPE_COUNT; i++)
        if (strcmp(name, dtypes[i].name) == 0) {
            *out = (kopt_dtype)i;
            return 0;
        }
    return -1;
}

static double half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;

    if (exp == 0)
        v = ldexp(mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp(mant | 0x400, exp - 25);
    return sign ? -v : v;
}

double kopt_dtype_load(kopt_dtype t, const void *base, int64_t i)
{
    switch (t) {
    case KOPT_F32: return ((const float *)base)[i];
    case KOPT_F64: return ((const double *)base)[i];
    case KOPT_F16: return half_to_double(((const uint16_t *)base)[i]);
    case KOPT_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t *)base)[i] << 16;
        float f;
        memcpy(&f, &bits, sizeof(f));
        return f;
    }
    case KOPT_I32: return ((const int32_t *)base)[i];
    case KOPT_I64: return (double)((const int64_t *)base)[i];
    default: return NAN;
    }
}

const char *kopt_role_name(kopt_role r)
{
    static const char *names[] = {"input", "output", "inout", "scratch"};
    return names[r];
}

const char *kopt_compute_name(kopt_compute c)
{
    static const char *names[KOPT_COMPUTE_COUNT] = {"fp32", "fp64", "fp16", "bf16",
                                                    "tf32", "fp8", "int"};
    return names[c];
}
