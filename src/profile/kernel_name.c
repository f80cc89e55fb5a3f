/* What a kernel's name tells: which library launched it (cuBLAS, cuDNN, Triton, PyTorch's
 * aten, CUTLASS, CUB/Thrust, or none: the program's own) and a short readable name. Names
 * come mangled from CUPTI activity records and demangled from the PyTorch profiler; both
 * forms are read. One table for every caller: the PyTorch path's kernel census
 * (src/eval/torch_checks.c) and the program profile (src/profile/program.c). */
#include "kopt/profile.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int any_prefix(const char *s, const char *const *prefixes)
{
    for (int i = 0; prefixes[i]; i++)
        if (starts(s, prefixes[i]))
            return 1;
    return 0;
}

static int any_inside(const char *s, const char *const *parts)
{
    for (int i = 0; parts[i]; i++)
        if (strstr(s, parts[i]))
            return 1;
    return 0;
}

/* CUTLASS's generated kernel instances ("cutlass_80_simt_sgemm_...", "cutlass3x_sm90_...")
 * are what cuBLAS ships; PyTorch's own CUTLASS kernels are named by their templates
 * ("cutlass::Kernel<...AttentionKernel...>", mangled "_ZN7cutlass6KernelI..."). */
static int cutlass_instance(const char *s)
{
    for (const char *p = strstr(s, "cutlass"); p; p = strstr(p + 1, "cutlass"))
        if ((p[7] == '_' && isdigit((unsigned char)p[8])) ||
            (isdigit((unsigned char)p[7]) && p[8] == 'x'))
            return 1;
    return 0;
}

kopt_kernel_origin kopt_kernel_origin_of(const char *name)
{
    /* Each list: the mangled form (CUPTI) and the demangled one (the PyTorch profiler). */
    static const char *const cudnn_inside[] = {
        "cudnn", "implicit_convolve_sgemm", "precomputed_convolve_sgemm",
        "explicit_convolve_sgemm", NULL};
    static const char *const conv_kinds[] = {"fprop", "dgrad", "wgrad", NULL};
    static const char *const cub_prefixes[] = {
        "_ZN3cub", "_ZN6thrust", "_ZN14at_cuda_detail3cub", "cub::", "thrust::",
        "at_cuda_detail::cub::", NULL};
    static const char *const aten_prefixes[] = {
        "_ZN2at", "_ZN3c10", "_ZN13pytorch_flash", "at::", "c10::", "pytorch_flash::", NULL};
    static const char *const cublas_prefixes[] = {
        "nvjet", "gemv2", "_Z15gemv2", "gemmk1", "gemmSN", "splitKreduce", "_Z12splitKreduce",
        "_ZN8internal5gemvx", "internal::gemvx", "ampere_", "sm80_", "sm86_", "sm89_", "sm90_",
        "sm100_", "sm120_", "volta_", "turing_", "maxwell_", NULL};
    static const char *const cublas_inside[] = {"cublas", "xmma", NULL};
    const char *s = name;

    if (!s)
        return KOPT_ORIGIN_OTHER;
    if (starts(s, "void "))        /* the demangler writes the return type */
        s += 5;
    if (starts(s, "triton_"))
        return KOPT_ORIGIN_TRITON;
    if (any_inside(s, cudnn_inside) || (strstr(s, "xmma") && any_inside(s, conv_kinds)))
        return KOPT_ORIGIN_CUDNN;
    if (any_prefix(s, cub_prefixes))
        return KOPT_ORIGIN_CUB;
    if (any_prefix(s, aten_prefixes))
        return KOPT_ORIGIN_ATEN;
    if (any_prefix(s, cublas_prefixes) || any_inside(s, cublas_inside) || cutlass_instance(s))
        return KOPT_ORIGIN_CUBLAS;
    if (strstr(s, "cutlass") || strstr(s, "CUTLASS"))
        return KOPT_ORIGIN_CUTLASS;
    return KOPT_ORIGIN_OTHER;
}

const char *kopt_kernel_origin_name(kopt_kernel_origin o)
{
    switch (o) {
    case KOPT_ORIGIN_CUBLAS:
        return "cuBLAS";
    case KOPT_ORIGIN_CUDNN:
        return "cuDNN";
    case KOPT_ORIGIN_TRITON:
        return "Triton";
    case KOPT_ORIGIN_ATEN:
        return "aten";
    case KOPT_ORIGIN_CUTLASS:
        return "CUTLASS";
    case KOPT_ORIGIN_CUB:
        return "CUB";
    default:
        return "other";
    }
}

int kopt_kernel_origin_is_library(kopt_kernel_origin o)
{
    return o != KOPT_ORIGIN_OTHER && o != KOPT_ORIGIN_TRITON && o < KOPT_ORIGIN_COUNT;
}

/* ---- the short name --------------------------------------------------------------------- */

/* The last identifier of an Itanium-mangled name: "_Z11my_softmaxPKfPfi" -> "my_softmax",
 * "_ZN2at6native18reduce_kernelILi512E..." -> "reduce_kernel". 0 when not mangled. */
static int mangled_last(const char *s, char *out, size_t n)
{
    const char *p = s + 2, *last = NULL;
    size_t last_len = 0;

    if (!starts(s, "_Z"))
        return 0;
    if (*p == 'N')
        p++;
    while (*p == 'K' || *p == 'V')   /* cv-qualifiers of a nested name */
        p++;
    while (isdigit((unsigned char)*p)) {
        size_t len = 0;
        while (isdigit((unsigned char)*p))
            len = len * 10 + (size_t)(*p++ - '0');
        if (len == 0 || strnlen(p, len) < len)
            break;
        last = p;
        last_len = len;
        p += len;
        if (s[2] != 'N')             /* a plain function: one identifier */
            break;
    }
    if (!last)
        return 0;
    snprintf(out, n, "%.*s", (int)last_len, last);
    return 1;
}

/* The text of [from, to) outside template brackets, trailing spaces dropped. */
static void strip_templates(const char *from, const char *to, char *out, size_t n)
{
    size_t used = 0;
    int depth = 0;

    for (const char *p = from; p < to && used + 1 < n; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth > 0)
            depth--;
        else if (depth == 0)
            out[used++] = *p;
    }
    while (used > 0 && out[used - 1] == ' ')
        used--;
    out[used] = '\0';
}

/* The last "::" component of [s, end) at template depth 0. */
static const char *last_component(const char *s, const char *end)
{
    const char *start = s;
    int depth = 0;

    for (const char *p = s; p < end; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>' && depth > 0)
            depth--;
        else if (depth == 0 && p[0] == ':' && p[1] == ':')
            start = p + 2;
    }
    return start;
}

/* Generic launchers whose first template argument is the kernel that runs
 * ("cutlass::Kernel2<cutlass_80_simt_sgemm_...>"). */
static int wrapper_name(const char *base)
{
    static const char *const wrappers[] = {"Kernel", "Kernel2", "device_kernel", "kernel",
                                           NULL};
    for (int i = 0; wrappers[i]; i++)
        if (strcmp(base, wrappers[i]) == 0)
            return 1;
    return 0;
}

void kopt_kernel_short_name(const char *name, char *out, size_t n)
{
    const char *s = name ? name : "", *end, *start, *lt;
    int depth = 0;

    if (!n)
        return;
    if (mangled_last(s, out, n))
        return;
    if (starts(s, "void "))
        s += 5;
    /* The parameter list: the first '(' outside template brackets that does not open
     * "(anonymous namespace)". */
    for (end = s; *end; end++) {
        if (*end == '<')
            depth++;
        else if (*end == '>' && depth > 0)
            depth--;
        else if (*end == '(' && depth == 0 && !starts(end, "(anonymous namespace)"))
            break;
    }
    start = last_component(s, end);
    strip_templates(start, end, out, n);
    lt = strchr(start, '<');
    if (wrapper_name(out) && lt && lt < end) {
        /* Kernel2<first argument's own short name> */
        const char *arg = lt + 1, *arg_end = arg;
        char inner[256];
        depth = 0;
        for (; arg_end < end; arg_end++) {
            if (*arg_end == '<')
                depth++;
            else if (*arg_end == '>' && depth == 0)
                break;
            else if (*arg_end == '>')
                depth--;
            else if (*arg_end == ',' && depth == 0)
                break;
        }
        while (*arg == ' ')
            arg++;
        strip_templates(last_component(arg, arg_end), arg_end, inner, sizeof(inner));
        if (inner[0]) {
            size_t used = strlen(out);
            snprintf(out + used, n - used, "<%s>", inner);
        }
    }
    if (!out[0])
        snprintf(out, n, "%s", name ? name : "");
}
