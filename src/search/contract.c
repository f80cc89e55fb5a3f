/* What the coder and the debugger are told of a candidate's interface, beyond the problem
 * text: the problem's sizes as named values (at the benchmark sizes and at the check sizes)
 * and, for problems whose candidates are host mode, the candidate ABI: kopt/candidate.h
 * verbatim, as host-mode compiles find it ({{sizes}} and {{abi}}, docs/optimize.md). */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kopt__search_host_problem(const kopt_problem *p)
{
    /* a PyTorch reference (KernelBench): kopt-native candidates are host-mode .cu files;
     * a host-mode reference: its candidates launch their own kernels too */
    return p->ref_torch || p->ref_host_mode;
}

char *kopt__search_sizes_text(const kopt_problem *p)
{
    kopt_buf b = KOPT_BUF_INIT;
    const int host = kopt__search_host_problem(p);
    const int checked = p->has_check_sizes && p->check_sizes.n > 0;

    kopt_buf_printf(&b, "## The problem's sizes\n");
    if (p->sizes.n == 0) {
        kopt_buf_printf(&b, "(the problem names no sizes: every shape is fixed)\n");
        return kopt_buf_detach(&b);
    }
    kopt_buf_printf(&b, "At the benchmark sizes (the ones timed):\n");
    for (int i = 0; i < p->sizes.n; i++)
        kopt_buf_printf(&b, "    %s = %lld\n", p->sizes.names[i],
                        (long long)p->sizes.values[i]);
    if (checked) {
        kopt_buf_printf(&b, "At the check sizes (every candidate is also run and checked "
                        "there; one correct only at the benchmark sizes fails as "
                        "SHAPE_SPECIFIC):\n");
        for (int i = 0; i < p->sizes.n; i++) {
            int k = kopt_vars_find(&p->check_sizes, p->sizes.names[i]);
            kopt_buf_printf(&b, "    %s = %lld%s\n", p->sizes.names[i], (long long)(k >= 0 ?
                            p->check_sizes.values[k] : p->sizes.values[i]),
                            k >= 0 ? "" : "   (unchanged)");
        }
    }
    if (host)
        kopt_buf_printf(&b, "Read each at every call with kopt_size(io, \"NAME\"), e.g. "
                        "kopt_size(io, \"%s\"); never write these numbers into the code.\n",
                        p->sizes.names[0]);
    else
        kopt_buf_printf(&b, "Each reaches the kernel as the launch plan's argument of that "
                        "name (grid, block and smem expressions may use it too); never write "
                        "these numbers into the code.\n");
    return kopt_buf_detach(&b);
}

char *kopt__search_abi_text(kopt_search *s, kopt_ctx *ctx)
{
    kopt_buf b = KOPT_BUF_INIT;
    char *header = NULL;
    size_t len;

    if (!kopt__search_host_problem(s->prob))
        return strdup("");
    kopt_buf_printf(&b, "## The candidate ABI: kopt/candidate.h\n");
    if (kopt_agent_candidate_abi(ctx, &header) != KOPT_OK) {
        /* said, not invented: a model told nothing guesses less than one told wrong */
        kopt_log(ctx, KOPT_LOG_WARN, "the coder's prompt cannot show the candidate ABI: %s",
                 kopt_errmsg(ctx));
        kopt_buf_printf(&b, "kopt could not read the header here (%s), so its declarations "
                        "are not shown. Use only what the problem above says of "
                        "kopt_candidate_io, kopt_tensor and kopt_size; do not assume other "
                        "fields.\n\n", kopt_errmsg(ctx));
        return kopt_buf_detach(&b);
    }
    len = strlen(header);
    kopt_buf_printf(&b, "A candidate of this problem is host mode: front matter "
                    "/*@kopt {\"mode\": \"host\"} */, #include \"kopt/candidate.h\", and "
                    "kopt_candidate_run defined with exactly this signature. The header, "
                    "verbatim (the one the candidate is compiled against):\n```c\n%s%s```\n\n",
                    header, len && header[len - 1] == '\n' ? "" : "\n");
    free(header);
    return kopt_buf_detach(&b);
}
