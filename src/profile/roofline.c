/* Speed of light: spec-derived compute rates per architecture (a labeled fallback for
 * what is not measured) and the roofline position of a timed kernel. */
#include "../eval/eval_int.h"

#include <string.h>

/* Dense FLOP per clock per SM, by kopt_compute (fp32, fp64, fp16-tc, bf16-tc, tf32-tc,
 * fp8-tc, int), and shared-memory bytes per clock per SM. From the architecture
 * whitepapers: e.g. H100 SXM bf16 989 TFLOP/s = 132 SMs x 1.83 GHz x 4096. fp64 is the
 * better of FMA and FP64 tensor cores (H100: 67 TFLOP/s = 256 per SM and clock). The L2's
 * rate is not derivable from the device's attributes (its clock is not the SM's), so it
 * stays 0: unknown. Zero: unknown. */
static const struct {
    int major, minor;
    double per_sm_clk[KOPT_NCOMPUTE];
    double smem_bytes_per_sm_clk;
} arch_rates[] = {
    {9, 0, {256, 256, 4096, 4096, 2048, 8192, 128}, 128},
    {8, 0, {128, 128, 2048, 2048, 1024, 0, 128}, 128},
    {8, 6, {256, 4, 1024, 1024, 512, 0, 128}, 128},
    {8, 9, {256, 4, 1024, 1024, 512, 2048, 128}, 128},
    {10, 0, {256, 128, 8192, 8192, 4096, 16384, 128}, 128},
};

void kopt_ceilings_fill_spec(kopt_ceilings *c, const kopt_device_info *dev)
{
    double clk = dev->clock_khz * 1e3;   /* Hz, the SM's highest clock */

    for (size_t a = 0; a < sizeof(arch_rates) / sizeof(arch_rates[0]); a++) {
        if (arch_rates[a].major != dev->cc_major || arch_rates[a].minor != dev->cc_minor)
            continue;
        for (int k = 0; k < KOPT_NCOMPUTE; k++)
            if (!c->measured[k])
                c->gflops[k] = arch_rates[a].per_sm_clk[k] * dev->sm_count * clk / 1e9;
        if (!c->smem_measured)
            c->smem_gbs = arch_rates[a].smem_bytes_per_sm_clk * dev->sm_count * clk / 1e9;
    }
    if (!c->l2_measured)
        c->l2_gbs = 0;
}

double kopt_ceilings_dram_gbs(const kopt_ceilings *c)
{
    double bw = c->dram_copy_gbs;

    if (c->dram_read_gbs > bw)
        bw = c->dram_read_gbs;
    if (c->dram_write_gbs > bw)
        bw = c->dram_write_gbs;
    return bw;
}

double kopt_dram_spec_gbs(const kopt_device_info *dev)
{
    if (dev->mem_clock_khz <= 0 || dev->mem_bus_width <= 0)
        return 0;
    return 2.0 * dev->mem_clock_khz * 1e3 * (dev->mem_bus_width / 8.0) / 1e9;
}

void kopt__roofline(kopt_roofline *r, double flops, double bytes, int compute,
                    const kopt_ceilings *c, double median_ms)
{
    double bw, rate, t_mem, t_comp;

    memset(r, 0, sizeof(*r));
    if (!c->valid || median_ms <= 0)
        return;
    bw = kopt_ceilings_dram_gbs(c);
    rate = compute >= 0 && compute < KOPT_NCOMPUTE ? c->gflops[compute] : 0;
    t_mem = bw > 0 ? bytes / (bw * 1e6) : 0;           /* GB/s -> bytes per ms */
    t_comp = rate > 0 ? flops / (rate * 1e6) : 0;
    r->valid = 1;
    r->flops = flops;
    r->bytes = bytes;
    r->achieved_gbs = bytes / (median_ms * 1e6);
    r->achieved_gflops = flops / (median_ms * 1e6);
    r->bound_ms = t_mem > t_comp ? t_mem : t_comp;
    r->limiter = t_mem >= t_comp ? "memory" : "compute";
    r->compute_source = compute >= 0 && compute < KOPT_NCOMPUTE && c->measured[compute]
                            ? "measured" : "spec";
    r->pct_of_bound = r->bound_ms > 0 ? 100.0 * r->bound_ms / median_ms : 0;
}

/* An FP32 problem whose outputs all admit KOPT_TF32_ADMITTED_RTOL (device.h) may be
 * computed on the TF32 tensor cores (cuBLAS's FAST_TF32, wmma/mma .tf32) and still pass, so
 * no faster-than-possible verdict is due below the TF32 rate. Others are held to their own
 * precision's rate. */

int kopt__guard_compute(int compute, const kopt_bound *b)
{
    int outputs = 0;

    if (compute != KOPT_COMPUTE_FP32)
        return compute;
    for (int i = 0; i < b->ntensors; i++) {
        const kopt_btensor *t = &b->tensors[i];
        if (t->role != KOPT_ROLE_OUTPUT && t->role != KOPT_ROLE_INOUT)
            continue;
        outputs++;
        if (t->rtol < KOPT_TF32_ADMITTED_RTOL)
            return compute;
    }
    return outputs ? KOPT_COMPUTE_TF32 : compute;
}
