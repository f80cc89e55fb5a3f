/* Random numbers for the tuner: xoshiro256** seeded through splitmix64, with an unbiased
 * bounded draw, uniform doubles and Box-Muller normals. Each strategy owns its stream. */
#include "kopt/tune.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void kopt_rng_seed(kopt_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
    /* an all-zero state never leaves zero; splitmix64 cannot give four zeros, but be sure */
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1;
}

uint64_t kopt_rng_next(kopt_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

uint64_t kopt_rng_below(kopt_rng *r, uint64_t n)
{
    /* reject the lowest (2^64 mod n) values so every residue is equally likely */
    uint64_t threshold, x;

    if (n <= 1)
        return 0;
    threshold = (0 - n) % n;
    do
        x = kopt_rng_next(r);
    while (x < threshold);
    return x % n;
}

double kopt_rng_unit(kopt_rng *r)
{
    return (double)(kopt_rng_next(r) >> 11) * 0x1.0p-53;
}

double kopt_rng_normal(kopt_rng *r)
{
    /* Box-Muller; u1 in (0, 1] keeps the log finite */
    double u1 = 1.0 - kopt_rng_unit(r), u2 = kopt_rng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}
