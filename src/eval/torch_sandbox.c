/*
 * The sandbox of a candidate in kopt's PyTorch worker (docs/kernelbench.md, "The sandbox"):
 * the job's "sandbox" object, and what the worker said it applied.
 *
 * Before exec (kopt__sandbox_enter, spawn.c) the worker gets a private folder, no network,
 * no core dumps, and limits sized for its setup: importing torch and building the model run
 * compilers (load_inline's ninja and nvcc, Triton's ptxas), so CPU time and file size are
 * generous there. Once the model is built, the worker calls kopt_sandbox_lockdown() through
 * ctypes (libexec/kopt_torch_sandbox.py) with the host-mode limits, counted from then on.
 * RLIMIT_AS is set only for a host-mode shared object (as kopt's C worker does): PyTorch's
 * host allocator, pinned buffers and Triton map address space in amounts that say nothing
 * about a candidate's honesty.
 */
#include "eval_int.h"
#include "worker_int.h"
#include "kopt/worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETUP_CPU_S 600.0      /* CPU seconds for the setup, on top of the candidate's */
#define SETUP_FSIZE_MB 1024.0  /* largest file during the setup (compilers' objects) */

json_t *kopt__torch_sandbox_job(kopt_ctx *ctx, const char *subject, const kopt_eval_opts *o)
{
    int host = strcmp(subject, "host") == 0;
    json_t *sb, *lock;
    char *lib = NULL;

    if (o->no_sandbox || (!host && strcmp(subject, "modelnew") != 0))
        return NULL;           /* the reference and torch.compile run the problem's own code */
    lock = json_pack("{s:f, s:f, s:f, s:b}", "cpu_s", o->sandbox_cpu_s, "fsize_mb",
                     o->sandbox_fsize_mb, "as_extra_mb", host ? o->sandbox_as_extra_mb : 0.0,
                     "no_wx", host);
    if (kopt_lib_find(ctx, &lib) == KOPT_OK)
        json_object_set_new(lock, "lib", json_string(lib));
    else
        json_object_set_new(lock, "lib_error", json_string(kopt_errmsg(ctx)));
    free(lib);
    sb = json_pack("{s:f, s:f, s:b, s:o}",
                   "cpu_s", o->sandbox_cpu_s > 0 ? o->sandbox_cpu_s + SETUP_CPU_S : 0.0,
                   "fsize_mb", o->sandbox_fsize_mb > 0 && o->sandbox_fsize_mb < SETUP_FSIZE_MB
                                   ? SETUP_FSIZE_MB : o->sandbox_fsize_mb,
                   "no_network", 1, "lockdown", lock);
    return sb;
}

void kopt__torch_sandbox_report(const kopt__worker_run *run, int asked, char *report,
                                size_t cap, char *note, size_t ncap)
{
    json_t *sb = json_object_get(run->result ? run->result : run->error, "sandbox");
    const char *err = json_string_value(json_object_get(sb, "error"));
    char *text;

    report[0] = note[0] = '\0';
    if (json_is_object(sb) && (text = json_dumps(sb, JSON_COMPACT))) {
        if (strlen(text) >= cap) {        /* too long to keep whole: the processes counted */
            json_t *copy = json_deep_copy(sb);
            json_object_set_new(copy, "ended_processes", json_integer((json_int_t)
                                json_array_size(json_object_get(sb, "ended_processes"))));
            free(text);
            text = json_dumps(copy, JSON_COMPACT);
            json_decref(copy);
        }
        if (text && strlen(text) < cap)
            snprintf(report, cap, "%s", text);
        free(text);
    }
    if (!asked || (!run->result && !sb))
        return;                /* not asked for, or ended before it could say */
    if (!json_is_object(sb))
        snprintf(note, ncap, "NOT SANDBOXED: the worker did not report a lockdown");
    else if (!json_is_true(json_object_get(sb, "locked")))
        snprintf(note, ncap, "NOT SANDBOXED: the candidate ran without the lockdown (%s)",
                 err ? err : "no reason given");
}
