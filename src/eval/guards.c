/*
 * The guards that run beside the comparison on the CUDA path (eval.c): a problem that
 * forbids libraries gets the candidate's CUPTI kernel records checked against its own
 * kernels (FORBIDDEN_LIBRARY), and --sanitize runs the subject again under each
 * compute-sanitizer tool (SANITIZER). kopt__eval_core calls them once the workers have
 * run; they fold their findings into the result's verdict (verdicts.c).
 */
#include "eval_int.h"
#include "worker_int.h"
#include "kopt/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 when `name` is a NUL-terminated string inside `data` (a kernel the host code registers
 * itself: its mangled name is in the shared object). */
static int has_string(const char *data, size_t len, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = data; p && (size_t)(p - data) + n < len;) {
        const char *hit = memmem(p, len - (size_t)(p - data), name, n + 1);
        if (!hit)
            break;
        if (hit == data || hit[-1] == '\0')
            return 1;
        p = hit + 1;
    }
    return 0;
}

/* "allow_libraries": false: every kernel that ran during the trials must be the
 * candidate's own. 1 when the verdict was set. */
int kopt__check_libraries(kopt_ctx *ctx, kopt_eval_result *r, const kopt__worker_run *run,
                          const kopt_compiled *comp)
{
    json_t *ks = json_object_get(run->result, "gpu_kernels"), *k;
    char foreign[1024] = "", *so = NULL;
    size_t i, at = 0, so_len = 0;
    int nforeign = 0;

    if (!json_is_array(ks)) {
        set_verdict(r, KOPT_VERDICT_ERROR, "the problem forbids libraries, but the worker did not "
                    "report which kernels ran");
        return 1;
    }
    if (kopt_file_read(ctx, comp->binary_path, &so, &so_len) != KOPT_OK) {
        set_verdict(r, KOPT_VERDICT_ERROR, "cannot list the candidate's own kernels: %s",
                    kopt_errmsg(ctx));
        return 1;
    }
    json_array_foreach(ks, i, k) {
        const char *name = json_string_value(k);
        if (!name)
            continue;
        if (r->ngpu_kernels < 16)
            snprintf(r->gpu_kernels[r->ngpu_kernels++], sizeof(r->gpu_kernels[0]), "%s", name);
        if (has_string(so, so_len, name))
            continue;
        if (nforeign++ < 3 && at < sizeof(foreign))
            at += (size_t)snprintf(foreign + at, sizeof(foreign) - at, "%s%s",
                                   nforeign > 1 ? ", " : "", name);
    }
    free(so);
    if (!nforeign)
        return 0;
    set_verdict(r, KOPT_VERDICT_FORBIDDEN_LIBRARY, "the problem sets \"allow_libraries\": false, "
                "but %d kernel(s) that the candidate does not define ran on the GPU (CUPTI "
                "kernel records): %s", nforeign, foreign);
    return 1;
}

int kopt__sanitizable(kopt_verdict v)
{
    return v == KOPT_VERDICT_OK || v == KOPT_VERDICT_WRONG || v == KOPT_VERDICT_SUSPECT ||
           v == KOPT_VERDICT_RACE || v == KOPT_VERDICT_STATEFUL ||
           v == KOPT_VERDICT_INPUT_MUTATED || v == KOPT_VERDICT_CRASH;
}

/* Read compute-sanitizer's log: the error count and the first findings. */
static void parse_sanitizer_log(const char *log, kopt_sanitizer_report *rep)
{
    const char *line = log;
    size_t at = 0;
    int shown = 0;

    rep->errors = -1;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *summary = memmem(line, len, "ERROR SUMMARY:", 14);
        const char *race = memmem(line, len, "RACECHECK SUMMARY:", 18);
        if (summary) {
            rep->errors = atoi(summary + 14);
        } else if (race) {
            /* "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)": every hazard
             * is a finding */
            rep->errors = atoi(race + 18);
        } else if (len > 10 && strncmp(line, "========= ", 10) == 0 && shown < 6 &&
                   at + len + 2 < sizeof(rep->summary)) {
            const char *t = line + 10;
            size_t tl = len - 10;
            while (tl && *t == ' ')
                t++, tl--;
            /* the headline of each finding and where it happened */
            if (tl && (strncmp(t, "Invalid", 7) == 0 || strncmp(t, "Uninitialized", 13) == 0 ||
                       strncmp(t, "Race", 4) == 0 || strncmp(t, "Error", 5) == 0 ||
                       strncmp(t, "Program hit", 11) == 0 || strncmp(t, "at ", 3) == 0 ||
                       strncmp(t, "Warning", 7) == 0 || memmem(t, tl, "hazard", 6))) {
                memcpy(rep->summary + at, t, tl);
                at += tl;
                rep->summary[at++] = '\n';
                rep->summary[at] = '\0';
                shown += strncmp(t, "at ", 3) != 0;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
}

/* --sanitize: run the subject once at the smallest size set under each compute-sanitizer
 * tool, and fold the findings into the verdict. */
void kopt__run_sanitizers(kopt_ctx *ctx, kopt_eval_result *r, const kopt_problem *prob,
                          const phase_plan *phases, int nphases, const kopt_compiled *comp,
                          const kopt_compiled *rt, const kopt_eval_opts *o, int is_ref)
{
    static const char *const tools[3] = {"memcheck", "racecheck", "initcheck"};
    char *sanitizer = kopt_find_program("KOPT_COMPUTE_SANITIZER", "compute-sanitizer");
    phase_plan ph = phases[nphases > 1 ? 1 : 0];
    int total_errors = 0;
    char found[1024] = "";
    size_t at = 0;

    ph.timed = 0;
    ph.ntrials = 1;
    for (int t = 0; t < 3; t++) {
        kopt_sanitizer_report *rep;
        char logpath[] = "/tmp/kopt-sanitizer-XXXXXX";
        kopt__worker_proc *proc = NULL;
        kopt__worker_run run;
        json_t *extra;
        char *log = NULL;
        size_t len = 0;
        int fd;
        if (!(o->sanitize & (1u << t)))
            continue;
        rep = &r->sanitizer[r->nsanitizer++];
        snprintf(rep->tool, sizeof(rep->tool), "%s", tools[t]);
        if (!sanitizer) {
            snprintf(rep->summary, sizeof(rep->summary), "compute-sanitizer not found (set "
                     "KOPT_COMPUTE_SANITIZER or put it on PATH)");
            continue;
        }
        if ((fd = mkstemp(logpath)) < 0)
            continue;
        close(fd);
        extra = comp->host_mode ? kopt__host_job_fields(prob, o, 1) : json_object();
        /* only the device code's errors: kopt's own probing API calls fail on purpose */
        json_object_set_new(extra, "wrap", json_pack("[s, s, s, s, s, s, s, s, s, s, s]",
                            sanitizer, "--tool", tools[t], "--print-limit", "20", "--log-file",
                            logpath, "--error-exitcode", "86", "--report-api-errors", "no"));
        /* initcheck must see what the candidate leaves unwritten: no poisoning */
        if (t == 2)
            json_object_set_new(extra, "no_poison", json_true());
        memset(&run, 0, sizeof(run));
        if (kopt__start_subject(ctx, is_ref, 0, 0, &ph, 1, kopt__layout(&ph, 1), comp, rt, o, extra, &proc) ==
                KOPT_OK &&
            kopt__worker_ready(ctx, proc) == KOPT_OK &&
            kopt__worker_finish(ctx, proc, o->timeout_s * 30, &run) == KOPT_OK) {
            proc = NULL;
            if (kopt_file_read(ctx, logpath, &log, &len) == KOPT_OK)
                parse_sanitizer_log(log, rep);
            rep->ran = rep->errors >= 0;
            if (!rep->ran)
                snprintf(rep->summary, sizeof(rep->summary), "compute-sanitizer gave no error "
                         "summary (worker exit %d%s)", run.exit_code,
                         run.timed_out ? ", timed out" : "");
        }
        kopt__worker_proc_free(proc);
        kopt__worker_run_free(&run);
        json_decref(extra);
        free(log);
        unlink(logpath);
        if (rep->ran && rep->errors > 0) {
            const char *first = rep->summary;
            size_t fl = strcspn(first, "\n");
            total_errors += rep->errors;
            if (at < sizeof(found))
                at += (size_t)snprintf(found + at, sizeof(found) - at, "%s%s: %d error(s), first: "
                                       "%.*s", at ? "; " : "", rep->tool, rep->errors, (int)fl,
                                       first);
        }
    }
    free(sanitizer);
    if (!total_errors)
        return;
    if (r->verdict == KOPT_VERDICT_OK || r->verdict == KOPT_VERDICT_SUSPECT) {
        set_verdict(r, KOPT_VERDICT_SANITIZER, "correct on its checks, but compute-sanitizer "
                    "found errors: %s", found);
    } else {
        size_t ml = strlen(r->message);
        snprintf(r->message + ml, sizeof(r->message) - ml, " (compute-sanitizer: %s)", found);
    }
}
