/* Metric maps (name -> value, ncu's names), the metric sets kopt collects, and the FLOP the
 * counters of the roofline set add up to. */
#include "kopt/profile.h"

#include <stdlib.h>
#include <string.h>

/* Two replay passes on GH100 (measured with the host API, tests/unit/test_cupti_host.c):
 * time, DRAM bytes, FLOP counters by precision, tensor-pipe instructions, and the SM clock
 * the kernel ran at (CUPTI does not lock clocks; ncu locks them to base unless told not). */
#define ROOFLINE_METRICS \
    "gpu__time_duration.sum", \
    "dram__bytes_read.sum", \
    "dram__bytes_write.sum", \
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", \
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", \
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", \
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", \
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", \
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", \
    "sm__inst_executed_pipe_tensor.sum", \
    "sm__cycles_elapsed.avg.per_second",

const char *const kopt_metrics_roofline[] = {
    ROOFLINE_METRICS
    NULL,
};

/* A PyTorch program's kernels (kopt profile of a program): the roofline set plus the SM and
 * memory throughput (% of peak), so a kernel whose FLOP the counters miss (tensor cores) or
 * that has none (a copy, a ReLU) still gets a measured class. */
const char *const kopt_metrics_program[] = {
    ROOFLINE_METRICS
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    NULL,
};

/* What the micro-tools read (src/analyze/rules/). */
const char *const kopt_metrics_rules[] = {
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.per_cycle_active",
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__inst_executed_pipe_tensor.sum",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
    NULL,
};

static int find(const kopt_metrics *ms, const char *name)
{
    for (int i = 0; i < ms->n; i++)
        if (strcmp(ms->m[i].name, name) == 0)
            return i;
    return -1;
}

kopt_status kopt_metrics_set(kopt_metrics *ms, const char *name, double value)
{
    int i = find(ms, name);
    char *copy;

    if (i >= 0) {
        ms->m[i].value = value;
        return KOPT_OK;
    }
    if (ms->n == ms->cap) {
        int cap = ms->cap ? ms->cap * 2 : 32;
        kopt_metric *m = realloc(ms->m, (size_t)cap * sizeof(*m));
        if (!m)
            return KOPT_E_NOMEM;
        ms->m = m;
        ms->cap = cap;
    }
    if (!(copy = strdup(name)))
        return KOPT_E_NOMEM;
    ms->m[ms->n].name = copy;
    ms->m[ms->n].value = value;
    ms->n++;
    return KOPT_OK;
}

int kopt_metrics_get(const kopt_metrics *ms, const char *name, double *out)
{
    int i = ms ? find(ms, name) : -1;
    if (i < 0)
        return 0;
    *out = ms->m[i].value;
    return 1;
}

double kopt_metrics_value(const kopt_metrics *ms, const char *name, double dflt)
{
    double v = dflt;
    kopt_metrics_get(ms, name, &v);
    return v;
}

void kopt_metrics_clear(kopt_metrics *ms)
{
    if (!ms)
        return;
    for (int i = 0; i < ms->n; i++)
        free(ms->m[i].name);
    free(ms->m);
    ms->m = NULL;
    ms->n = ms->cap = 0;
}

int kopt_metrics_flops(const kopt_metrics *ms, double *flops)
{
    static const struct { const char *name; double per_inst; } counters[] = {
        {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 1},
        {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 1},
        {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 2},
        {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", 1},
        {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", 1},
        {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 2},
    };
    double sum = 0, v;
    int any = 0;

    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
        if (kopt_metrics_get(ms, counters[i].name, &v)) {
            sum += counters[i].per_inst * v;
            any = 1;
        }
    if (any)
        *flops = sum;
    return any;
}
