/* KernelBench's suite metrics: correctness rate, fast_p, geometric-mean speedups; and the
 * speed-of-light guard of kopt bench (a time below bytes / peak bandwidth). */
#include "kopt/kb.h"

#include <math.h>
#include <string.h>

const double kopt_kb_fast_p[KOPT_KB_NFAST] = {0.0, 1.0, 1.5, 2.0};

void kopt_kb_summarize(const kopt_kb_row *rows, int n, kopt_kb_summary *out)
{
    double log_correct = 0, log_all = 0;
    int nfast[KOPT_KB_NFAST] = {0};

    memset(out, 0, sizeof(*out));
    out->n = n > 0 ? n : 0;
    for (int i = 0; i < out->n; i++) {
        const kopt_kb_row *r = &rows[i];
        int timed = r->correct && r->speedup > 0 && isfinite(r->speedup);
        if (!r->correct) {
            continue;   /* counts 1.0 in geomean_all: log 0 */
        }
        out->ncorrect++;
        for (int p = 0; p < KOPT_KB_NFAST; p++)
            /* fast_0: correct (speed unknown or not); fast_p: strictly faster than p x */
            if (kopt_kb_fast_p[p] == 0 || (timed && r->speedup > kopt_kb_fast_p[p]))
                nfast[p]++;
        if (timed) {
            out->ntimed++;
            log_correct += log(r->speedup);
            log_all += log(r->speedup);
        }
    }
    if (out->n) {
        out->correct_rate = (double)out->ncorrect / out->n;
        for (int p = 0; p < KOPT_KB_NFAST; p++)
            out->fast[p] = (double)nfast[p] / out->n;
        out->geomean_all = exp(log_all / out->n);
    }
    if (out->ntimed)
        out->geomean_correct = exp(log_correct / out->ntimed);
}

/* ---- the speed-of-light guard ---------------------------------------------------------- */

double kopt_kb_peak_gbs(const kopt_device_info *dev, const kopt_ceilings *c)
{
    double best = 0;

    if (dev)
        best = kopt_dram_spec_gbs(dev);
    if (c && c->valid && kopt_ceilings_dram_gbs(c) > best)
        best = kopt_ceilings_dram_gbs(c);
    return best;
}

double kopt_kb_sol_bound_ms(double bytes, double gbs)
{
    if (!(bytes > 0) || !(gbs > 0) || !isfinite(bytes) || !isfinite(gbs))
        return 0;
    return bytes / (gbs * 1e6);           /* GB/s = 1e6 bytes per ms */
}

unsigned kopt_kb_sol_flags(const double *times_ms, int n, double bound_ms)
{
    unsigned flags = 0;

    if (!(bound_ms > 0))
        return 0;
    for (int i = 0; i < n && i < 32; i++)
        if (times_ms[i] > 0 && times_ms[i] < bound_ms)
            flags |= 1u << i;
    return flags;
}
