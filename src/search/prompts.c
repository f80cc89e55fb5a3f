/* The prompts: the variables every role sees about a node (docs/optimize.md lists them:
 * the problem, the launch plan, the roofline class, advice, tried plans, the leaderboard,
 * the search memory) and a role's template rendered with them. Called by expand.c and
 * repair.c (and the loop for kopt__search_speedup); calls contract.c and tree.c. From
 * kopt__search_speedup to kopt__search_render. */
#include "search_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double kopt__search_speedup(const kopt_search *s, const kopt_search_node *n)
{
    return n->ok && s->nodes[0].ok && n->time_ms > 0 ? s->nodes[0].time_ms / n->time_ms : 0.0;
}

static void outcome_line(const kopt_search *s, const kopt_search_node *n, kopt_buf *b)
{
    if (n->state != KOPT_SEARCH_DONE)
        kopt_buf_printf(b, "pending");
    else if (n->failure[0])
        kopt_buf_printf(b, "%s", n->failure);
    else if (n->ok)
        kopt_buf_printf(b, "OK, %.4f ms, %.2fx the reference", n->time_ms,
                        kopt__search_speedup(s, n));
    else
        kopt_buf_printf(b, "%s", kopt_verdict_name(n->verdict));
}

/* The search memory as planner context: per (class, plan kind), tries and realized gain. */
static char *memory_text(kopt_search *s, kopt_ctx *ctx, const char *cls)
{
    kopt_store_opt_memory *m = NULL;
    kopt_buf b = KOPT_BUF_INIT;
    int n = 0, shown = 0;

    if (s->o.no_memory || !s->store ||
        kopt_store_opt_memory_get(s->store, ctx, s->prob->hash,
                                  s->o.memory_as_of ? s->o.memory_as_of : s->tree_id,
                                  s->tree_id, 200, &m, &n) != KOPT_OK || !n) {
        free(m);
        return strdup(s->o.no_memory ? "(search memory is off)" : "(none yet)");
    }
    for (int i = 0; i < n && shown < 12; i++) {
        int tries = 0, wins = 0, seen = 0;
        double best = 0, sum_pred = 0;
        for (int k = 0; k < i; k++)
            if (strcmp(m[k].plan_kind, m[i].plan_kind) == 0 && strcmp(m[k].cls, m[i].cls) == 0)
                seen = 1;
        if (seen)
            continue;
        for (int k = i; k < n; k++) {
            if (strcmp(m[k].plan_kind, m[i].plan_kind) != 0 || strcmp(m[k].cls, m[i].cls) != 0)
                continue;
            tries++;
            wins += m[k].realized_gain > 1.0 + s->o.prune_eps;
            best = m[k].realized_gain > best ? m[k].realized_gain : best;
            sum_pred += m[k].predicted_gain;
        }
        kopt_buf_printf(&b, "- %s%s class, plan kind \"%s\": %d tries, %d gained, best "
                        "%.2fx, predicted %.2fx on average\n",
                        strcmp(m[i].cls, cls ? cls : "") == 0 ? "(this) " : "",
                        m[i].cls[0] ? m[i].cls : "unknown", m[i].plan_kind, tries, wins, best,
                        tries ? sum_pred / tries : 0.0);
        shown++;
    }
    free(m);
    return kopt_buf_detach(&b);
}

/* Plans already tried from node i, with their outcome (so the planner diversifies). */
char *kopt__search_tried_text(const kopt_search *s, int i)
{
    kopt_buf b = KOPT_BUF_INIT;

    for (int c = i + 1; c < s->n; c++) {
        const kopt_search_node *ch = &s->nodes[c];
        if (ch->parent != i || strcmp(ch->kind, "repair") == 0)
            continue;
        kopt_buf_printf(&b, "- [%s] %s -> ", ch->plan.kind, ch->plan.text);
        outcome_line(s, &s->nodes[kopt__search_chain_end(s, c)], &b);
        kopt_buf_printf(&b, "\n");
    }
    if (!b.len)
        kopt_buf_printf(&b, "(nothing yet)");
    return kopt_buf_detach(&b);
}

/* The best correct nodes outside node i's path (STARK's leaderboard). */
static char *leaders_text(const kopt_search *s, int self)
{
    kopt_buf b = KOPT_BUF_INIT;
    int used[2] = {-1, -1}, top = -1;

    for (int i = 1; i < s->n; i++)
        if (s->nodes[i].ok && (top < 0 || s->nodes[i].raw_reward > s->nodes[top].raw_reward))
            top = i;
    if (self > 0 && top == self)   /* said, so a shorter list does not read as a demotion */
        kopt_buf_printf(&b, "- n%d, the current kernel: %.4f ms (%.2fx), the best so far; the "
                        "others:\n", self, s->nodes[self].time_ms,
                        kopt__search_speedup(s, &s->nodes[self]));
    for (int k = 0; k < 2; k++) {
        int best = -1;
        for (int i = 1; i < s->n; i++)
            if (s->nodes[i].ok && i != self && i != used[0] &&
                (best < 0 || s->nodes[i].raw_reward > s->nodes[best].raw_reward))
                best = i;
        if (best < 0)
            break;
        used[k] = best;
        kopt_buf_printf(&b, "- n%d: %.4f ms (%.2fx), by \"%s\"\n", best, s->nodes[best].time_ms,
                        kopt__search_speedup(s, &s->nodes[best]), s->nodes[best].plan.text);
    }
    if (!b.len)
        kopt_buf_printf(&b, "(none yet)");
    return kopt_buf_detach(&b);
}

/* The problem as every role sees it: sizes by name (and the check sizes, where every
 * candidate is also run), each tensor's shape as an expression of them. */
static char *problem_text(const kopt_problem *p)
{
    kopt_buf b = KOPT_BUF_INIT;
    int checked = p->has_check_sizes && p->check_sizes.n > 0;

    kopt_buf_printf(&b, "%s", p->name);
    if (p->description && p->description[0])
        kopt_buf_printf(&b, ": %s", p->description);
    kopt_buf_printf(&b, "\nsizes:");
    for (int i = 0; i < p->sizes.n; i++)
        kopt_buf_printf(&b, " %s=%lld", p->sizes.names[i], (long long)p->sizes.values[i]);
    if (checked) {
        kopt_buf_printf(&b, "\ncheck sizes:");
        for (int i = 0; i < p->check_sizes.n; i++)
            kopt_buf_printf(&b, " %s=%lld", p->check_sizes.names[i],
                            (long long)p->check_sizes.values[i]);
        kopt_buf_printf(&b, " (every candidate is also run and checked at these sizes, the "
                        "others unchanged; one correct only at the sizes above fails as "
                        "SHAPE_SPECIFIC)");
    }
    kopt_buf_printf(&b, "\ntensors:");
    for (int i = 0; i < p->ntensors; i++) {
        const kopt_tensor_spec *t = &p->tensors[i];
        kopt_buf_printf(&b, " %s (%s, %s, [", t->name, kopt_dtype_name(t->dtype),
                        kopt_role_name(t->role));
        for (int d = 0; d < t->ndim; d++)
            kopt_buf_printf(&b, "%s%s", d ? ", " : "", t->shape[d]);
        kopt_buf_printf(&b, "])");
    }
    kopt_buf_printf(&b, "\nThe sizes are arguments, not constants: take every size and shape "
                    "from the kernel's arguments (or the tensors' shapes), never from the "
                    "numbers above%s.", checked ? ": the check sizes differ" : "");
    if (p->has_tol)
        kopt_buf_printf(&b, "\ntolerance: atol %g, rtol %g", p->atol, p->rtol);
    if (p->work_flops || p->work_bytes)
        kopt_buf_printf(&b, "\nwork: flops %s, bytes %s", p->work_flops ? p->work_flops : "?",
                        p->work_bytes ? p->work_bytes : "?");
    if (p->ref_torch)     /* KernelBench: the root is Python; the candidates are host-mode .cu */
        kopt_buf_printf(&b, "\nreference: a PyTorch program (class Model: the root kernel shown "
                        "is its Python). Write a kopt-native host-mode CUDA file: the front "
                        "matter /*@kopt {\"mode\": \"host\"} */ first, #include \"kopt/candidate.h\","
                        " and extern \"C\" int kopt_candidate_run(const kopt_candidate_io *io) "
                        "that launches its kernels on (cudaStream_t)io->stream and returns 0. "
                        "io->tensors are the tensors above, in that order (data: a device "
                        "pointer; shape; count), kopt_tensor(io, NAME) finds one by name, "
                        "kopt_size(io, NAME) gives a size by its name above; write every "
                        "element of the outputs. Read the sizes and shapes from io at every "
                        "call%s. Only the module's other constructor arguments (numbers that "
                        "are not sizes, such as a scale factor or a slope) are fixed and may be "
                        "written into the code.", checked ? " (they change at the check sizes)"
                                                         : "");
    return kopt_buf_detach(&b);
}

void kopt__search_var(kopt__search_vars *vs, const char *name, const char *value)
{
    if (vs->n < 32)
        vs->v[vs->n++] = (kopt_agent_var){name, value};
}

void kopt__search_var_own(kopt__search_vars *vs, const char *name, char *value)
{
    if (vs->nowned < 32)
        vs->owned[vs->nowned++] = value;
    kopt__search_var(vs, name, value);
}

void kopt__search_vars_free(kopt__search_vars *vs)
{
    for (int i = 0; i < vs->nowned; i++)
        free(vs->owned[i]);
}

static char *fmt(double a, int digits)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%.*f", digits, a);
    return strdup(buf);
}

/* The reference's launch plan as the problem file writes it, for the coder's contract. */
static char *launch_text(const kopt_problem *p)
{
    json_t *doc = p->path ? json_load_file(p->path, 0, NULL) : NULL;
    json_t *ref = json_object_get(doc, "reference"), *l = json_object_get(ref, "launches");
    char *out = NULL;

    if (json_is_array(l)) {
        char *txt = json_dumps(l, JSON_COMPACT);
        if (txt && asprintf(&out, "%s", txt) < 0)
            out = NULL;
        free(txt);
    }
    json_decref(doc);
    return out ? out : strdup(p->ref_torch ? "(none: the reference is a PyTorch program; a "
                                             "candidate is host mode and launches its own "
                                             "kernels from kopt_candidate_run, the candidate "
                                             "ABI above)"
                                           : "(the reference launches its own kernels: host "
                                             "mode; the candidate ABI above)");
}

/* The coder's section on how the candidate runs: a device-mode problem's launch plan (kept
 * unless the file gives its own in front matter), or host mode's entry point and the front
 * matter keys a host-mode file may use. */
static char *launch_section(const kopt_problem *p, const char *launch, const char *device)
{
    kopt_buf b = KOPT_BUF_INIT;

    if (p->ref_torch || p->ref_host_mode) {
        kopt_buf_printf(&b, "## How the candidate runs\n"
            "Host mode: kopt compiles the file with nvcc into a shared object and calls "
            "kopt_candidate_run(io) for every run, checked and timed alike; it launches its "
            "kernels on (cudaStream_t)io->stream, with grids and blocks of its own choosing, "
            "and returns 0. The file starts with its front matter:\n"
            "```\n/*@kopt\n{\"mode\": \"host\"%s, \"scratch\": [{\"name\": \"tmp\", "
            "\"dtype\": \"f32\", \"shape\": [\"N\", \"M\"]}]}\n*/\n```\n"
            "`scratch` (optional): extra device buffers, after the problem's tensors in "
            "io->tensors, their contents undefined at each run; shapes are expressions of the "
            "problem's sizes.%s\nThe device: %s\n",
            p->allow_libraries ? ", \"libraries\": [\"cublas\"]" : "",
            p->allow_libraries ? " `libraries` (optional): [\"cublas\"] links cuBLAS "
                                 "(cublas_v2.h: cublasGemmEx, ...; cublasLt.h's functions "
                                 "resolve through it)." :
                                 " This problem does not allow library calls.",
            device);
        return kopt_buf_detach(&b);
    }
    kopt_buf_printf(&b, "## How the kernel is launched\n"
        "The problem's launch plan: `%s`\nThe device: %s\n"
        "The kernel is launched as that plan says (same kernel name, grid, block and arguments)\n"
        "unless the file starts with its own, for example:\n```\n/*@kopt\n"
        "{\"launches\": [{\"kernel\": \"my_kernel\", \"grid\": [\"cdiv(B, 4)\"], \"block\": [128],\n"
        "               \"smem\": \"4 * 128 * 4\", \"args\": [\"x\", \"y\", \"B\", \"N\"]}]}\n*/\n```\n"
        "Grid, block and `smem` (dynamic shared memory in bytes) are integer expressions of the\n"
        "problem's sizes (`+ - * / %%`, `min`, `max`, `cdiv`); there is no SM-count variable (write\n"
        "the number). `args` name the problem's tensors (device pointers) and sizes; a launch plan\n"
        "may hold several launches, run in order.\n", launch, device);
    return kopt_buf_detach(&b);
}

/* The roofline class for the prompts; without one, why (the profile's note), so that a
 * planner is not left to guess whether the kernel was profiled at all. */
static char *class_text(const kopt_search_node *n)
{
    kopt_buf b = KOPT_BUF_INIT;

    if (n->cls[0])
        kopt_buf_printf(&b, "%s", n->cls);
    else if (n->profile_note[0])
        kopt_buf_printf(&b, "unknown (not profiled: %s)", n->profile_note);
    else
        kopt_buf_printf(&b, "unknown");
    return kopt_buf_detach(&b);
}

static char *advice_text(const kopt_search *s, const kopt_search_node *n)
{
    kopt_buf b = KOPT_BUF_INIT;

    if (n->findings && n->findings[0])
        kopt_buf_printf(&b, "%s", n->findings);
    else if (s->o.no_tools)
        kopt_buf_printf(&b, "(no metrics recorded)");
    else if (n->profile_note[0])
        kopt_buf_printf(&b, "(no advice: this kernel was not profiled: %s)", n->profile_note);
    else
        kopt_buf_printf(&b, "(no advice: no profile of this kernel)");
    return kopt_buf_detach(&b);
}

/* The language of a source, for its code fence: a PyTorch program (the reference of a
 * KernelBench problem, a ModelNew) is Python, everything else CUDA. */
static const char *source_lang(const char *src)
{
    return src && strstr(src, "import torch") ? "python" : "cuda";
}

/* The variables every role sees about node i (docs/optimize.md lists them). */
void kopt__search_node_vars(kopt_search *s, kopt_ctx *ctx, kopt__search_vars *vs, int i)
{
    const kopt_search_node *n = &s->nodes[i];
    kopt_buf b = KOPT_BUF_INIT;

    kopt__search_var_own(vs, "problem", problem_text(s->prob));
    kopt__search_var(vs, "reference", s->prob->ref_source);
    kopt__search_var(vs, "reference_lang", source_lang(s->prob->ref_source));
    kopt__search_var(vs, "objective", kopt_run_tune_objective_name(s->o.objective));
    kopt__search_var(vs, "node", NULL);
    kopt__search_var(vs, "source", n->source);
    kopt__search_var(vs, "source_lang", source_lang(n->source));
    kopt__search_var(vs, "reply_note", strcmp(source_lang(n->source), "python") == 0
        ? "The current kernel is the PyTorch program: write the whole new .cu file (edit "
          "blocks apply to a CUDA source only).\n" : "");
    outcome_line(s, n, &b);
    kopt__search_var_own(vs, "outcome", kopt_buf_detach(&b));
    kopt__search_var_own(vs, "time_ms", fmt(n->time_ms, 4));
    kopt__search_var_own(vs, "speedup", fmt(kopt__search_speedup(s, n), 2));
    kopt__search_var_own(vs, "class", class_text(n));
    kopt__search_var_own(vs, "advice", advice_text(s, n));
    kopt__search_var(vs, "facts", n->facts && n->facts[0] ? n->facts : "(not known)");
    if (!s->launch)
        s->launch = launch_text(s->prob);
    kopt__search_var(vs, "launch", s->launch);
    if (!s->sizes)
        s->sizes = kopt__search_sizes_text(s->prob);
    kopt__search_var(vs, "sizes", s->sizes);
    if (!s->abi)
        s->abi = kopt__search_abi_text(s, ctx);
    kopt__search_var(vs, "abi", s->abi);
    {
        const char *d = n->facts ? strstr(n->facts, "device: ") : NULL;
        char *dev = d ? strndup(d + 8, strcspn(d + 8, "\n")) : strdup("(not known)");
        kopt__search_var_own(vs, "launch_section",
                             launch_section(s->prob, s->launch, dev ? dev : ""));
        kopt__search_var_own(vs, "device", dev);
    }
    kopt__search_var(vs, "advice_kind", s->o.no_tools ? "Raw metrics" :
                     "Micro-tool advice (selected by the roofline class)");
    kopt__search_var_own(vs, "tried", kopt__search_tried_text(s, i));
    kopt__search_var_own(vs, "leaders", leaders_text(s, i));
    kopt__search_var_own(vs, "memory", memory_text(s, ctx, n->cls));
    /* the code-search tool, described to the coder and debugger only when it is on */
    kopt__search_var(vs, "tools", s->tool.described ? s->tool.description : "");
}

char *kopt__search_render(kopt_search *s, kopt_agent_role role, kopt__search_vars *vs)
{
    return kopt_agent_render(s->templates[role], vs->v, vs->n);
}
