/* The loop of kopt optimize: evaluate what is pending, repair what failed, else select a
 * node and expand it with the planner and the coder (or the templatizer); a search of width
 * W selects up to W expansions a step, made to differ by virtual visits, and evaluates up to
 * W pending nodes at once (width.c). Every decision follows from the tree as stored, so a
 * killed search goes on where it stopped. */
#include "search_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- open / close ------------------------------------------------------------------------ */

kopt_status kopt__search_load_tree(kopt_search *s, kopt_ctx *ctx)
{
    char **rows = NULL;
    int nrows = 0;
    kopt_status rc;

    if (!s->store)
        return KOPT_OK;
    if ((rc = kopt_store_opt_nodes(s->store, ctx, s->tree_id, &rows, &nrows)) != KOPT_OK)
        return rc;
    for (int i = 0; i < nrows && rc == KOPT_OK; i++) {
        json_t *j = json_loads(rows[i], 0, NULL);
        kopt_search_node *n = kopt__search_add(s);
        if (!j || !n || kopt__search_node_from_json(n, j) != 0 || n->id != i)
            rc = kopt_seterr(ctx, KOPT_E_DB, "tree %lld: node %d is damaged in the store",
                             (long long)s->tree_id, i);
        json_decref(j);
    }
    for (int i = 0; i < nrows; i++)
        free(rows[i]);
    free(rows);
    return rc;
}

/* The --start kernel as the root's first child, pending (kind "start"); stored with the root
 * by kopt_search_open. */
static kopt_status add_start(kopt_search *s, kopt_ctx *ctx)
{
    kopt_search_node *n = kopt__search_add(s);
    const char *name = s->o.start_name ? strrchr(s->o.start_name, '/') : NULL;

    if (!n || !(n->source = strdup(s->o.start_source)))
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search start node");
    n->parent = 0;
    snprintf(n->kind, sizeof(n->kind), "start");
    snprintf(n->plan.text, sizeof(n->plan.text), "the start kernel %s",
             name ? name + 1 : s->o.start_name ? s->o.start_name : "(--start)");
    snprintf(n->plan.kind, sizeof(n->plan.kind), "start");
    kopt_sha256_hex(n->source, strlen(n->source), n->hash);
    return KOPT_OK;
}

kopt_status kopt_search_open(kopt_search **out, kopt_ctx *ctx, const kopt_problem *prob,
                             kopt_store *store, int64_t tree_id, const kopt_search_opts *o)
{
    kopt_search *s = calloc(1, sizeof(*s));
    kopt_status rc = KOPT_OK;
    int fresh;

    *out = NULL;
    if (!s)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search");
    s->prob = prob;
    s->store = store;
    s->tree_id = tree_id;
    s->o = *o;
    s->best = -1;
    if (s->o.proposals <= 0)
        s->o.proposals = s->o.policy == KOPT_SEARCH_GREEDY ? 1 : 2;
    if (o->prompts_dir)
        s->prompts_dir = strdup(o->prompts_dir);
    else if ((rc = kopt_agent_prompts_dir(ctx, &s->prompts_dir)) != KOPT_OK)
        goto fail;
    for (int r = 0; r < KOPT_AGENT_ROLE_COUNT; r++)
        if ((rc = kopt_agent_prompt_load(ctx, s->prompts_dir, (kopt_agent_role)r,
                                         &s->templates[r])) != KOPT_OK)
            goto fail;
    if ((rc = kopt__search_load_tree(s, ctx)) != KOPT_OK)
        goto fail;
    fresh = s->n == 0;
    if (s->n == 0) {
        kopt_search_node *root = kopt__search_add(s);
        if (!root || !(root->source = strdup(prob->ref_source ? prob->ref_source : ""))) {
            rc = kopt_seterr(ctx, KOPT_E_NOMEM, "search root");
            goto fail;
        }
        snprintf(root->kind, sizeof(root->kind), "root");
        snprintf(root->plan.text, sizeof(root->plan.text), "the reference");
        kopt_sha256_hex(root->source, strlen(root->source), root->hash);
        if (o->start_source && (rc = add_start(s, ctx)) != KOPT_OK)
            goto fail;
    }
    if ((rc = kopt__search_tool_open(s, ctx, fresh)) != KOPT_OK)
        goto fail;
    if (fresh) {   /* the new tree stored whole (the root with the tool decision, the start) */
        if ((rc = kopt__search_group_begin(s, ctx)) != KOPT_OK)
            goto fail;
        for (int i = 0; i < s->n && rc == KOPT_OK; i++)
            rc = kopt__search_save(s, ctx, i);
        if ((rc = kopt__search_group_end(s, ctx, rc)) != KOPT_OK)
            goto fail;
    }
    kopt__search_derive(s);
    *out = s;
    return KOPT_OK;
fail:
    kopt_search_close(s);
    return rc;
}

void kopt_search_close(kopt_search *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        kopt__search_node_clear(&s->nodes[i]);
    free(s->nodes);
    for (int r = 0; r < KOPT_AGENT_ROLE_COUNT; r++)
        free(s->templates[r]);
    free(s->prompts_dir);
    free(s->launch);
    free(s->sizes);
    free(s->abi);
    kopt__search_tool_close(&s->tool);
    free(s->view_problem);
    free(s);
}

/* ---- prompts ------------------------------------------------------------------------------ */

static double speedup_of(const kopt_search *s, const kopt_search_node *n)
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
        kopt_buf_printf(b, "OK, %.4f ms, %.2fx the reference", n->time_ms, speedup_of(s, n));
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
static char *tried_text(const kopt_search *s, int i)
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
                        speedup_of(s, &s->nodes[self]));
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
                        speedup_of(s, &s->nodes[best]), s->nodes[best].plan.text);
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

typedef struct vars {
    kopt_agent_var v[32];
    int n;
    char *owned[32];
    int nowned;
} vars;

static void var(vars *vs, const char *name, const char *value)
{
    if (vs->n < 32)
        vs->v[vs->n++] = (kopt_agent_var){name, value};
}

static void var_own(vars *vs, const char *name, char *value)
{
    if (vs->nowned < 32)
        vs->owned[vs->nowned++] = value;
    var(vs, name, value);
}

static void vars_free(vars *vs)
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
static void node_vars(kopt_search *s, kopt_ctx *ctx, vars *vs, int i)
{
    const kopt_search_node *n = &s->nodes[i];
    kopt_buf b = KOPT_BUF_INIT;

    var_own(vs, "problem", problem_text(s->prob));
    var(vs, "reference", s->prob->ref_source);
    var(vs, "reference_lang", source_lang(s->prob->ref_source));
    var(vs, "objective", kopt_run_tune_objective_name(s->o.objective));
    var(vs, "node", NULL);
    var(vs, "source", n->source);
    var(vs, "source_lang", source_lang(n->source));
    var(vs, "reply_note", strcmp(source_lang(n->source), "python") == 0
        ? "The current kernel is the PyTorch program: write the whole new .cu file (edit "
          "blocks apply to a CUDA source only).\n" : "");
    outcome_line(s, n, &b);
    var_own(vs, "outcome", kopt_buf_detach(&b));
    var_own(vs, "time_ms", fmt(n->time_ms, 4));
    var_own(vs, "speedup", fmt(speedup_of(s, n), 2));
    var_own(vs, "class", class_text(n));
    var_own(vs, "advice", advice_text(s, n));
    var(vs, "facts", n->facts && n->facts[0] ? n->facts : "(not known)");
    if (!s->launch)
        s->launch = launch_text(s->prob);
    var(vs, "launch", s->launch);
    if (!s->sizes)
        s->sizes = kopt__search_sizes_text(s->prob);
    var(vs, "sizes", s->sizes);
    if (!s->abi)
        s->abi = kopt__search_abi_text(s, ctx);
    var(vs, "abi", s->abi);
    {
        const char *d = n->facts ? strstr(n->facts, "device: ") : NULL;
        char *dev = d ? strndup(d + 8, strcspn(d + 8, "\n")) : strdup("(not known)");
        var_own(vs, "launch_section", launch_section(s->prob, s->launch, dev ? dev : ""));
        var_own(vs, "device", dev);
    }
    var(vs, "advice_kind", s->o.no_tools ? "Raw metrics" : "Micro-tool advice (selected by "
        "the roofline class)");
    var_own(vs, "tried", tried_text(s, i));
    var_own(vs, "leaders", leaders_text(s, i));
    var_own(vs, "memory", memory_text(s, ctx, n->cls));
    /* the code-search tool, described to the coder and debugger only when it is on */
    var(vs, "tools", s->tool.described ? s->tool.description : "");
}

static char *render(kopt_search *s, kopt_agent_role role, vars *vs)
{
    return kopt_agent_render(s->templates[role], vs->v, vs->n);
}

/* ---- asking -------------------------------------------------------------------------------- */

/* One conversation with a role: the prompt, then (coder and debugger, when the code-search
 * tool is on) pairs of a reply that asked for searches and the results fed back, until a
 * reply without searches. */
typedef struct ask {
    kopt_llm_request rq;
    kopt_llm_message *msgs;     /* the conversation; msgs[0] is the prompt */
    int nmsg, cap;
    char *prompt;
    char key[64];               /* the conversation's name (manual mode's files) */
    char tag[32];
    kopt_llm_reply reply;       /* the latest reply */
    int answered, waiting;
    int tools;                  /* this role may search */
    int searches;               /* searches run for this node */
    int over;                   /* told that the bound is reached */
    int asked_past;             /* the last reply still asked for searches */
    kopt_buf qlog;              /* "QUERY (N hits)" lines, for the node */
} ask;

static void ask_clear(ask *a, int n)
{
    for (int i = 0; i < n; i++) {
        free(a[i].prompt);
        for (int m = 1; m < a[i].nmsg; m++)
            free((char *)a[i].msgs[m].content);
        free(a[i].msgs);
        kopt_buf_free(&a[i].qlog);
        kopt_llm_reply_clear(&a[i].reply);
    }
}

static void ask_init(kopt_search *s, ask *a, kopt_agent_role role, char *prompt, const char *key,
                     const char *tag)
{
    static const char *const system =
        "You are one role of kopt, a tool that makes CUDA kernels faster while computing the "
        "same result. Follow the reply contract in the message exactly.";

    memset(a, 0, sizeof(*a));
    a->prompt = prompt;
    a->tools = s->tool.active && (role == KOPT_AGENT_CODER || role == KOPT_AGENT_DEBUGGER);
    /* the prompt, then at most max + 1 tool turns (the last one says the bound is reached) */
    a->cap = a->tools ? 2 * s->tool.max + 3 : 1;
    a->msgs = calloc((size_t)a->cap, sizeof(*a->msgs));
    if (a->msgs) {
        a->msgs[0].role = "user";
        a->msgs[0].content = prompt ? prompt : "";
        a->nmsg = 1;
    }
    a->rq = (kopt_llm_request)KOPT_LLM_REQUEST_INIT;
    a->rq.system = system;
    a->rq.messages = a->msgs;
    a->rq.nmessages = a->nmsg;
    a->rq.max_tokens = s->o.max_tokens;
    a->rq.temperature = role == KOPT_AGENT_PLANNER ? s->o.plan_temperature :
                        s->o.code_temperature;
    a->rq.role = kopt_agent_role_name(role);
    snprintf(a->key, sizeof(a->key), "%s", key);
    snprintf(a->tag, sizeof(a->tag), "%s", tag);
    a->rq.tag = a->tag;
    a->rq.run_id = s->tree_id;
}

/* The conversation's turn (1: the first prompt) and the manual files' name for it. */
static int ask_turn(const ask *a)
{
    return a->nmsg / 2 + 1;
}

static void turn_key(const ask *a, char *out, size_t len)
{
    if (ask_turn(a) > 1)
        snprintf(out, len, "%s.turn%d", a->key, ask_turn(a));
    else
        snprintf(out, len, "%s", a->key);
}

/* Manual mode: <dir>/<key>.prompt.md written, <key>.reply.md read when it exists (a later
 * turn of a conversation: <key>.turnN.*, its prompt file holding the conversation so far).
 * The exchange is stored like a model's (backend "manual") so a replay finds it. */
static void ask_manual(kopt_search *s, kopt_ctx *ctx, ask *a)
{
    char path[4096], key[96];
    char *text = NULL;
    struct stat st;

    turn_key(a, key, sizeof(key));
    snprintf(path, sizeof(path), "%s/%s.reply.md", s->o.manual_dir, key);
    if (stat(path, &st) == 0 && kopt_file_read(ctx, path, &text, NULL) == KOPT_OK) {
        kopt_llm_exchange x = {0};
        char *rj = kopt_llm_request_json(&a->rq, "manual");
        a->reply.outcome = KOPT_LLM_OK;
        a->reply.text = text;
        a->reply.model = strdup("manual");
        a->reply.finish_reason = strdup("stop");
        kopt_llm_request_hash(&a->rq, a->reply.request_hash);
        a->answered = 1;
        x.run_id = s->tree_id;
        x.role = a->rq.role;
        x.tag = a->tag;
        x.backend = "manual";
        x.model = "manual";
        x.request_json = rj;
        x.reply = &a->reply;
        if (s->store)
            kopt_store_llm_put(s->store, ctx, &x, NULL);
        free(rj);
        return;
    }
    snprintf(path, sizeof(path), "%s/%s.prompt.md", s->o.manual_dir, key);
    if (stat(path, &st) != 0) {
        kopt_buf b = KOPT_BUF_INIT;
        kopt_buf_printf(&b, "<!-- kopt optimize, manual mode: write the reply to %s.reply.md "
                        "in this folder. Role: %s. -->\n\n%s", key, a->rq.role, a->prompt);
        for (int m = 1; m < a->nmsg; m++)
            kopt_buf_printf(&b, "\n\n---\n\n# %s (turn %d)\n\n%s", m % 2 ? "Your reply" :
                            "kopt's answer", (m + 1) / 2, a->msgs[m].content);
        kopt_file_write(ctx, path, b.ptr, b.len);
        kopt_buf_free(&b);
    }
    a->waiting = 1;
    s->st.waiting++;
}

/* Ask every request not yet answered (nor waiting for a manual reply). */
static void ask_pending(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, ask *a, int n)
{
    double t0 = kopt_now_ms();
    int asked = 0;

    if (s->o.manual_dir) {
        kopt_mkdirs(ctx, s->o.manual_dir);
        for (int i = 0; i < n; i++)
            if (!a[i].answered && !a[i].waiting) {
                ask_manual(s, ctx, &a[i]);
                asked += a[i].answered;
            }
    } else {
        /* at most 16 requests in parallel (a wide step asks more: in turns of 16) */
        for (int from = 0; from < n;) {
            kopt_llm_request rq[16];
            kopt_llm_reply rp[16];
            int who[16], k = 0, i;
            for (i = from; i < n && k < 16; i++)
                if (!a[i].answered) {
                    who[k] = i;
                    rq[k++] = a[i].rq;
                }
            from = i;
            memset(rp, 0, sizeof(rp));
            if (k)
                kopt_llm_call_many(llm, ctx, rq, k, rp);
            for (int j = 0; j < k; j++) {
                a[who[j]].reply = rp[j];
                a[who[j]].answered = 1;
            }
            asked += k;
        }
    }
    s->st.llm_ms += kopt_now_ms() - t0;
    s->st.llm_requests += asked;
}

static const char *reply_text(const ask *a)
{
    return a->reply.outcome == KOPT_LLM_OK || a->reply.outcome == KOPT_LLM_LENGTH ?
           a->reply.text : NULL;
}

/* If a's reply asks for code searches (and the tool is on for it), answer them: the reply
 * and the results join the conversation and a is to be asked again. 1 when it is. */
static int tool_turn(kopt_search *s, kopt_ctx *ctx, ask *a)
{
    const char *text = reply_text(a);
    char **q = NULL, *answer;
    int nq, kept;

    if (!a->answered || !a->tools || !text)
        return 0;
    nq = kopt_agent_parse_searches(text, 16, &q);
    kept = nq < 16 ? nq : 16;
    if (nq == 0) {
        kopt_agent_queries_free(q, kept);
        return 0;
    }
    if (a->over || a->nmsg + 2 > a->cap) {
        a->asked_past = 1;
        kopt_agent_queries_free(q, kept);
        return 0;
    }
    answer = kopt__search_tool_answer(s, ctx, a->key, ask_turn(a), q, kept, nq, &a->searches,
                                      &a->over, &a->qlog);
    kopt_agent_queries_free(q, kept);
    if (!answer)
        return 0;
    a->msgs[a->nmsg].role = "assistant";
    a->msgs[a->nmsg++].content = strdup(text);
    a->msgs[a->nmsg].role = "user";
    a->msgs[a->nmsg++].content = answer;
    a->rq.nmessages = a->nmsg;
    kopt_llm_reply_clear(&a->reply);
    a->answered = 0;
    return 1;
}

/* Ask every request, answering code searches turn by turn; 0 when all were answered
 * (successfully or not), 1 when manual replies are still awaited (nothing should be made
 * of this batch yet). */
static int ask_all(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, ask *a, int n)
{
    int waiting = 0;

    for (;;) {
        int more = 0;
        ask_pending(s, ctx, llm, a, n);
        for (int i = 0; i < n; i++)
            more += tool_turn(s, ctx, &a[i]);
        if (!more)
            break;
    }
    for (int i = 0; i < n; i++)
        waiting += !a[i].answered;
    return waiting ? 1 : 0;
}

/* ---- making nodes --------------------------------------------------------------------------- */

static kopt_agent_guard guard_of(const kopt_search *s)
{
    const char *ref = s->prob->ref_path ? strrchr(s->prob->ref_path, '/') : NULL;
    kopt_agent_guard g = {"problem.json", ref ? ref + 1 : s->prob->ref_path, NULL};
    return g;
}

/* Node i takes the outcome of an evaluated node with the same source, if there is one:
 * nothing is evaluated twice. 1 when it did (no GPU is recorded for it: none evaluated
 * it). */
int kopt__search_reuse(kopt_search *s, int i)
{
    kopt_search_node *n = &s->nodes[i];

    for (int k = 0; k < s->n; k++) {
        const kopt_search_node *o = &s->nodes[k];
        if (k == i || o->state != KOPT_SEARCH_DONE || o->failure[0] ||
            strcmp(o->hash, n->hash) != 0)
            continue;
        n->state = KOPT_SEARCH_DONE;
        n->verdict = o->verdict;
        n->time_ms = o->time_ms;
        n->energy_mj = o->energy_mj;
        n->eval_id = o->eval_id;
        snprintf(n->cls, sizeof(n->cls), "%s", o->cls);
        snprintf(n->profile_note, sizeof(n->profile_note), "%s", o->profile_note);
        snprintf(n->tool, sizeof(n->tool), "%s", o->tool);
        snprintf(n->message, sizeof(n->message), "same source as n%d (not evaluated again)", k);
        free(n->log);
        n->log = o->log ? strdup(o->log) : NULL;
        free(n->findings);
        n->findings = o->findings ? strdup(o->findings) : NULL;
        free(n->facts);
        n->facts = o->facts ? strdup(o->facts) : NULL;
        if (o->tuned_from) {
            free(n->source);
            n->source = strdup(o->source);
            free(n->tuned_from);
            n->tuned_from = strdup(o->tuned_from);
        }
        return 1;
    }
    return 0;
}

/* A child of `parent` from a code reply: pending with its source, or done with the agent
 * failure (its source is the base it should have changed). A source the tree already holds
 * takes that node's outcome: nothing is evaluated twice. */
static kopt_status add_child(kopt_search *s, kopt_ctx *ctx, int parent, const char *kind,
                             int expansion, int proposal, const kopt_agent_plan *plan,
                             const char *base, const ask *a, int want_template)
{
    kopt_agent_guard g = guard_of(s);
    char why[512] = "", *src = NULL;
    const char *text = reply_text(a);
    kopt_agent_failure f;
    kopt_search_node *n;
    int id;

    if (text && a->asked_past) {
        f = KOPT_AGENT_SEARCH_LIMIT;
        snprintf(why, sizeof(why), "the reply asked for code searches again after the bound "
                 "of %d per node was reached, instead of giving the code", s->tool.max);
    } else if (!text) {
        f = KOPT_AGENT_NO_REPLY;
        snprintf(why, sizeof(why), "the model gave no usable reply (%s%s%s)",
                 kopt_llm_outcome_name(a->reply.outcome), a->reply.error ? ": " : "",
                 a->reply.error ? a->reply.error : "");
    } else {
        f = kopt_agent_extract_code(text, base, &g, &src, why, sizeof(why));
    }
    if (f == KOPT_AGENT_OK && want_template && !strstr(src, "\"params\"")) {
        f = KOPT_AGENT_NOT_TEMPLATE;
        snprintf(why, sizeof(why), "the templatizer's kernel has no \"params\" in its front "
                 "matter");
        free(src);
        src = NULL;
    }
    if (!(n = kopt__search_add(s))) {
        free(src);
        return kopt_seterr(ctx, KOPT_E_NOMEM, "search node");
    }
    id = n->id;
    n->parent = parent;
    snprintf(n->kind, sizeof(n->kind), "%s", kind);
    n->expansion = expansion;
    n->proposal = proposal;
    if (plan)
        n->plan = *plan;
    n->searches = a->searches;
    if (a->qlog.len)
        n->queries = strndup(a->qlog.ptr, a->qlog.len);
    if (s->nodes[parent].findings) {
        const char *nl = strchr(s->nodes[parent].findings, '\n');
        size_t len = nl ? (size_t)(nl - s->nodes[parent].findings) : strlen(s->nodes[parent].findings);
        snprintf(n->advice, sizeof(n->advice), "%.*s", (int)(len < 500 ? len : 500),
                 s->nodes[parent].findings);
        snprintf(n->advice_tool, sizeof(n->advice_tool), "%s", s->nodes[parent].tool);
    }
    if (f != KOPT_AGENT_OK) {
        n->source = strdup(base ? base : "");
        n->state = KOPT_SEARCH_DONE;
        snprintf(n->failure, sizeof(n->failure), "%s", kopt_agent_failure_name(f));
        snprintf(n->message, sizeof(n->message), "%s", why);
        n->log = strdup(why);
    } else {
        n->source = src;
        kopt_sha256_hex(src, strlen(src), n->hash);
        kopt__search_reuse(s, id);
    }
    return kopt__search_save(s, ctx, id);
}

/* ---- evaluation ------------------------------------------------------------------------------ */

void kopt__search_remember(kopt_search *s, kopt_ctx *ctx, int i)
{
    const kopt_search_node *n = &s->nodes[i], *base = n;
    kopt_store_opt_memory m;

    if (!s->store || strcmp(n->kind, "root") == 0)
        return;
    while (strcmp(base->kind, "repair") == 0 && base->parent >= 0)
        base = &s->nodes[base->parent];
    if (base->parent < 0 || strcmp(base->kind, "start") == 0)   /* given, not planned */
        return;
    memset(&m, 0, sizeof(m));
    snprintf(m.problem_hash, sizeof(m.problem_hash), "%s", s->prob->hash);
    snprintf(m.problem, sizeof(m.problem), "%s", s->prob->name);
    snprintf(m.cls, sizeof(m.cls), "%s", s->nodes[base->parent].cls);
    snprintf(m.plan_kind, sizeof(m.plan_kind), "%s", strcmp(base->kind, "tune") == 0 ? "tune" :
             base->plan.kind);
    snprintf(m.tool, sizeof(m.tool), "%s", base->plan.tool[0] ? base->plan.tool :
             base->advice_tool);
    snprintf(m.verdict, sizeof(m.verdict), "%s", n->failure[0] ? n->failure :
             kopt_verdict_name(n->verdict));
    m.predicted_gain = base->plan.gain;
    m.realized_gain = kopt__search_gain(s, i);
    m.tree_id = s->tree_id;
    m.node = i;
    kopt_store_opt_memory_put(s->store, ctx, &m);
}

/* Node i takes outcome `oc` (its owned parts are taken; the caller clears it), arrived:
 * still pending until kopt__search_settle. */
void kopt__search_apply(kopt_search *s, int i, kopt_search_outcome *oc)
{
    kopt_search_node *n = &s->nodes[i];

    n->arrived = 1;
    n->verdict = oc->verdict;
    n->time_ms = oc->verdict == KOPT_VERDICT_OK || oc->verdict == KOPT_VERDICT_SUSPECT ?
                 oc->time_ms : 0.0;
    n->energy_mj = oc->energy_mj;
    snprintf(n->message, sizeof(n->message), "%.500s", oc->message);
    snprintf(n->cls, sizeof(n->cls), "%s", oc->cls);
    snprintf(n->profile_note, sizeof(n->profile_note), "%s", oc->profile_note);
    snprintf(n->tool, sizeof(n->tool), "%s", oc->tool);
    n->eval_id = oc->eval_id;
    free(n->log);
    n->log = oc->log;
    oc->log = NULL;
    free(n->findings);
    n->findings = oc->advice;
    oc->advice = NULL;
    free(n->facts);
    n->facts = oc->facts;
    oc->facts = NULL;
    if (oc->tuned_source) {
        free(n->tuned_from);
        n->tuned_from = n->source;
        n->source = oc->tuned_source;
        oc->tuned_source = NULL;
    }
    n->where = oc->where;
    s->st.evaluated++;
}

kopt_status kopt__search_settle(kopt_search *s, kopt_ctx *ctx, int i)
{
    s->nodes[i].state = KOPT_SEARCH_DONE;
    s->nodes[i].arrived = 0;
    return kopt__search_save(s, ctx, i);
}

kopt_status kopt__search_evaluate(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev,
                                  int i)
{
    kopt_search_outcome oc;
    kopt_search_node *n = &s->nodes[i];
    char tag[32];
    double t0 = kopt_now_ms();
    kopt_status rc;

    memset(&oc, 0, sizeof(oc));
    snprintf(tag, sizeof(tag), "n%d", i);
    if (n->arrived) {   /* evaluated in a batch a kill interrupted: backed up now */
        if ((rc = kopt__search_group_begin(s, ctx)) != KOPT_OK)
            return rc;
        if ((rc = kopt__search_settle(s, ctx, i)) == KOPT_OK) {
            kopt__search_derive(s);
            kopt__search_remember(s, ctx, i);
        }
        return kopt__search_group_end(s, ctx, rc);
    }
    if (kopt__search_reuse(s, i)) {   /* a twin proposed in the same batch was evaluated first */
        kopt__search_derive(s);
        if ((rc = kopt__search_group_begin(s, ctx)) != KOPT_OK)
            return rc;
        if ((rc = kopt__search_save(s, ctx, i)) == KOPT_OK)
            kopt__search_remember(s, ctx, i);
        return kopt__search_group_end(s, ctx, rc);
    }
    if (strcmp(n->kind, "tune") == 0 && ev->tune)
        rc = ev->tune(ev->self, ctx, n->source, tag, s->o.tune_budget, &oc);
    else
        rc = ev->evaluate(ev->self, ctx, n->source, tag, &oc);
    s->st.eval_ms += kopt_now_ms() - t0;
    if (rc != KOPT_OK) {
        kopt_search_outcome_clear(&oc);
        return rc;
    }
    kopt__search_apply(s, i, &oc);
    kopt_search_outcome_clear(&oc);
    /* the outcome and its search-memory row together: none of the memory goes missing */
    if ((rc = kopt__search_group_begin(s, ctx)) != KOPT_OK)
        return rc;
    if ((rc = kopt__search_settle(s, ctx, i)) == KOPT_OK) {
        kopt__search_derive(s);
        kopt__search_remember(s, ctx, i);
    }
    return kopt__search_group_end(s, ctx, rc);
}

/* Hand the pending candidates not yet prepared to the evaluator at once (the live one
 * compiles them in parallel while GPU evaluations stay one at a time). */
static void prepare(kopt_search *s, kopt_ctx *ctx, kopt_search_evaluator *ev)
{
    const char *src[64], *tags[64];
    char names[64][16];
    int n = 0;
    double t0 = kopt_now_ms();

    if (!ev->prepare || s->prepared >= s->n || !s->nodes[0].ok)
        return;
    for (int i = s->prepared; i < s->n && n < 64; i++)
        if (s->nodes[i].state == KOPT_SEARCH_PENDING && strcmp(s->nodes[i].kind, "tune") != 0) {
            snprintf(names[n], sizeof(names[n]), "n%d", i);
            tags[n] = names[n];
            src[n++] = s->nodes[i].source;
        }
    s->prepared = s->n;
    if (n > 1)
        ev->prepare(ev->self, ctx, src, tags, n);
    s->st.eval_ms += kopt_now_ms() - t0;
}

/* ---- selection ------------------------------------------------------------------------------ */

/* What selection sees of node i: its visits and plan children with those the expansions
 * already picked in this step will add (none outside a wide step), and whether it was
 * picked. */
static int vvisits(const kopt_search *s, int i)
{
    return s->nodes[i].visits + (s->virt ? s->virt[i].visits : 0);
}

static int vchildren(const kopt_search *s, int i)
{
    return s->nodes[i].plan_children + (s->virt ? s->virt[i].children : 0);
}

static int picked(const kopt_search *s, int i)
{
    return s->virt && s->virt[i].picks;
}

static int in_top(const kopt_search *s, int i)
{
    int nok = 0, better = 0;

    for (int k = 0; k < s->n; k++)
        if (s->nodes[k].ok) {
            nok++;
            better += s->nodes[k].raw_reward > s->nodes[i].raw_reward;
        }
    return nok > 1 && better < (int)ceil(s->o.top_quantile * nok);
}

static int limit_of(const kopt_search *s, int i)
{
    return kopt_search_widen_limit(s->o.widen_c, s->o.widen_alpha, vvisits(s, i)) +
           (in_top(s, i) ? s->o.top_extra : 0);
}

/* The --start node (the root's child of kind "start"), or -1. */
static int start_node(const kopt_search *s)
{
    return s->n > 1 && strcmp(s->nodes[1].kind, "start") == 0 ? 1 : -1;
}

/* Correct and not a dead end: a node is only planned from once it was evaluated (its
 * time, device and profile are what the planner works from). With --start, the start
 * kernel takes the root's place: the root is not expanded while the start kernel (or the
 * end of its repair chain) is correct or still pending. */
static int open_node(const kopt_search *s, int i)
{
    int st = start_node(s);

    if (st > 0 && i == 0) {
        const kopt_search_node *e = &s->nodes[kopt__search_chain_end(s, st)];
        if (e->ok || e->state == KOPT_SEARCH_PENDING)
            return 0;
    }
    return s->nodes[i].ok && !s->nodes[i].closed;
}

/* The open correct nodes by raw reward, best first (ties: lower id). */
static int ranked(const kopt_search *s, int *out)
{
    int k = 0;

    for (int i = 0; i < s->n; i++)
        if (open_node(s, i))
            out[k++] = i;
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0 && s->nodes[out[b]].raw_reward > s->nodes[out[b - 1]].raw_reward;
             b--) {
            int t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return k;
}

static int select_mcts(const kopt_search *s)
{
    int v = 0;

    for (int depth = 0; depth < 1000; depth++) {
        int best = -1;
        double best_score = -INFINITY;
        if (open_node(s, v) && !picked(s, v) && vchildren(s, v) < limit_of(s, v))
            return v;
        for (int c = v + 1; c < s->n; c++) {
            const kopt_search_node *ch = &s->nodes[c];
            int end;
            double score;
            if (ch->parent != v || strcmp(ch->kind, "repair") == 0)
                continue;
            end = kopt__search_chain_end(s, c);
            if (!s->nodes[end].ok)
                continue;
            score = kopt_search_uct(ch->value, vvisits(s, c), vvisits(s, v), s->o.uct_c);
            if (score > best_score) {
                best_score = score;
                best = end;
            }
        }
        if (best < 0)
            return open_node(s, v) && !picked(s, v) ? v : -1;
        v = best;
    }
    return -1;
}

/* The best open node not picked yet in this step (-1 none). */
static int first_unpicked(const kopt_search *s, const int *r, int k)
{
    for (int i = 0; i < k; i++)
        if (!picked(s, r[i]))
            return r[i];
    return -1;
}

/* The node to expand; in a wide step, one not picked yet (best-of-n: the start again). */
static int select_node(const kopt_search *s)
{
    int *r = malloc(((size_t)s->n + 1) * sizeof(int)), k, pick = -1;

    if (!r)
        return -1;
    k = ranked(s, r);
    switch (s->o.policy) {
    case KOPT_SEARCH_MCTS:
        pick = select_mcts(s);
        if (pick < 0)
            pick = first_unpicked(s, r, k);
        break;
    case KOPT_SEARCH_GREEDY:
        pick = first_unpicked(s, r, k);
        break;
    case KOPT_SEARCH_BEAM: {
        int w = s->o.beam_width < k ? s->o.beam_width : k;
        for (int i = 0; i < w; i++)   /* the least expanded of the best w */
            if (!picked(s, r[i]) && (pick < 0 || vchildren(s, r[i]) < vchildren(s, pick)))
                pick = r[i];
        break;
    }
    case KOPT_SEARCH_BEST_OF_N:   /* every expansion from the start (the root, or --start) */
        pick = open_node(s, 0) ? 0 : -1;
        if (start_node(s) > 0 && pick < 0) {
            int e = kopt__search_chain_end(s, start_node(s));
            pick = open_node(s, e) ? e : -1;
        }
        break;
    }
    free(r);
    return pick;
}

/* Up to `want` nodes to expand in this step, into picks[]; how many. After each pick the
 * node and its ancestors count the visits its proposals will bring, with no value (virtual
 * loss), and the node the plan children, so that the next pick goes elsewhere: down
 * another branch, or to a node that may now widen. One pick is the plain selection. */
static int select_many(kopt_search *s, int *picks, int want)
{
    int n = 0;

    if (want <= 0)
        return 0;
    if (want == 1 || !(s->virt = calloc((size_t)s->n, sizeof(*s->virt))))
        return (picks[0] = select_node(s)) >= 0 ? 1 : 0;
    for (; n < want; n++) {
        int v = select_node(s), k = s->o.proposals > 16 ? 16 : s->o.proposals;
        if (v < 0)
            break;
        picks[n] = v;
        s->virt[v].picks++;
        s->virt[v].children += k;
        for (int a = v; a >= 0; a = s->nodes[a].parent)
            s->virt[a].visits += k;
    }
    free(s->virt);
    s->virt = NULL;
    return n;
}

/* ---- steps ------------------------------------------------------------------------------------ */

static int expansions(const kopt_search *s)
{
    int e = 0;
    for (int i = 0; i < s->n; i++)
        e = s->nodes[i].expansion > e ? s->nodes[i].expansion : e;
    return e;
}

static int needs_repair(const kopt_search *s, int i)
{
    const kopt_search_node *n = &s->nodes[i];

    if (n->state != KOPT_SEARCH_DONE || n->ok || n->parent < 0 ||
        n->verdict == KOPT_VERDICT_SKIPPED || n->repair_depth >= s->o.debug_attempts)
        return 0;
    return kopt__search_chain_end(s, i) == i;
}

/* The log the debugger sees: a compile log whose errors come from inside CuTe/CUTLASS
 * headers is summarized (the first error, the template it was instantiating, the line of
 * the candidate that led there), not given whole; anything else as it is. */
static char *debugger_log(const kopt_search_node *n)
{
    kopt_buf b = KOPT_BUF_INIT;
    char *sum;

    if (!n->log)
        return strdup("(none)");
    if (n->verdict != KOPT_VERDICT_COMPILE_ERROR || n->failure[0] ||
        (!kopt_cutlass_used(n->source) && !strstr(n->log, "/include/cute/") &&
         !strstr(n->log, "/include/cutlass/")))
        return strdup(n->log);
    sum = kopt_cute_summarize_errors(n->log);
    if (!sum || !sum[0]) {
        free(sum);
        return strdup(n->log);
    }
    kopt_buf_printf(&b, "%s(kopt's summary of a compile log of %zu bytes from inside "
                    "CuTe/CUTLASS headers: the first error, the template it was "
                    "instantiating and the line of this candidate that led there)",
                    sum, strlen(n->log));
    free(sum);
    return kopt_buf_detach(&b);
}

/* Ask the debugger to repair every failed node that may still be repaired. 1 when some
 * repair was asked, 0 none, -1 waiting for manual replies. */
static int repair(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm)
{
    ask a[16];
    int who[16], k = 0, w;

    for (int i = 0; i < s->n && k < 16; i++) {
        vars vs = {0};
        const kopt_search_node *n = &s->nodes[i];
        char key[64], tag[32];
        if (!needs_repair(s, i))
            continue;
        node_vars(s, ctx, &vs, i);
        var(&vs, "failure", n->failure[0] ? n->failure : kopt_verdict_name(n->verdict));
        var(&vs, "message", n->message);
        var(&vs, "failure_note", !n->failure[0] && n->verdict == KOPT_VERDICT_SUSPECT
            ? "SUSPECT: the outputs were right, but kopt does not trust the time, so the "
              "candidate does not count. Either the time is below what the device allows for "
              "the problem's stated work (the candidate skips part of that work: it relies on "
              "structure of the generated inputs the problem does not promise, or on "
              "something cached between runs), or the timing itself was disturbed (work left "
              "running after the call returns, another stream). Repair it by doing the "
              "problem's stated work inside the call, on io->stream.\n" : "");
        var_own(&vs, "log", debugger_log(n));
        var(&vs, "plan", n->plan.text);
        var(&vs, "parent_source", n->parent >= 0 ? s->nodes[n->parent].source : "");
        /* STARK's debugger window: what its siblings tried and how that went */
        var_own(&vs, "siblings", tried_text(s, n->parent));
        snprintf(key, sizeof(key), "n%d-debugger", i);
        snprintf(tag, sizeof(tag), "n%d", i);
        ask_init(s, &a[k], KOPT_AGENT_DEBUGGER, render(s, KOPT_AGENT_DEBUGGER, &vs), key, tag);
        vars_free(&vs);
        who[k++] = i;
    }
    if (!k)
        return 0;
    if ((w = ask_all(s, ctx, llm, a, k)) == 0) {
        /* the round's repairs stored together: a resume asks for all of them again or none */
        kopt_status rc = kopt__search_group_begin(s, ctx), crc;
        for (int j = 0; j < k; j++) {
            kopt_agent_plan plan = s->nodes[who[j]].plan;
            crc = add_child(s, ctx, who[j], "repair", s->nodes[who[j]].expansion,
                            s->nodes[who[j]].proposal, &plan, s->nodes[who[j]].source, &a[j],
                            strcmp(s->nodes[who[j]].kind, "tune") == 0);
            rc = rc != KOPT_OK ? rc : crc;
        }
        if (kopt__search_group_end(s, ctx, rc) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "repairs not stored: %s", kopt_errmsg(ctx));
    }
    ask_clear(a, k);
    kopt__search_derive(s);
    return w ? -1 : 1;
}

/* The templatizer on the best node, once per node. 1 done, 0 not wanted, -1 waiting. */
static int templatize(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, int e)
{
    int b = s->best, w;
    ask a;
    vars vs = {0};
    char key[64], tag[32];
    kopt_agent_plan plan;

    if (s->o.no_tune || b <= 0 || strcmp(s->nodes[b].kind, "tune") == 0 ||
        s->nodes[b].tuned_from || s->nodes[b].plan_children < s->o.tune_after)
        return 0;
    for (int c = b + 1; c < s->n; c++)
        if (s->nodes[c].parent == b && strcmp(s->nodes[c].kind, "tune") == 0)
            return 0;
    node_vars(s, ctx, &vs, b);
    snprintf(key, sizeof(key), "e%d-n%d-templatizer", e, b);
    snprintf(tag, sizeof(tag), "n%d", b);
    ask_init(s, &a, KOPT_AGENT_TEMPLATIZER, render(s, KOPT_AGENT_TEMPLATIZER, &vs), key, tag);
    vars_free(&vs);
    if ((w = ask_all(s, ctx, llm, &a, 1)) == 0) {
        memset(&plan, 0, sizeof(plan));
        snprintf(plan.text, sizeof(plan.text), "templatize n%d and tune its params", b);
        snprintf(plan.kind, sizeof(plan.kind), "tune");
        add_child(s, ctx, b, "tune", e, 0, &plan, s->nodes[b].source, &a, 1);
    }
    ask_clear(&a, 1);
    kopt__search_derive(s);
    return w ? -1 : 1;
}

/* "j of k" for proposal j of pick p: a node picked more than once in a step (best-of-n)
 * numbers the proposals of its expansions one after the other ("3 of 4"). */
static const char *proposal_label(const int *vs, int m, int p, int j, int k, char *buf,
                                  size_t len)
{
    int before = 0, times = 0;

    for (int o = 0; o < m; o++) {
        before += o < p && vs[o] == vs[p];
        times += vs[o] == vs[p];
    }
    snprintf(buf, len, "%d of %d", before * k + j + 1, times * k);
    return buf;
}

/* Planner then coder for `s->o.proposals` children of each node vs[0..m) (expansions e,
 * e + 1, ...), every request of a kind asked in parallel. 1 done, -1 waiting. */
static int expand(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm, const int *vs, int m,
                  int e)
{
    int k = s->o.proposals > 16 ? 16 : s->o.proposals, n = m * k, w = 1;
    ask *pa = calloc((size_t)n, sizeof(*pa)), *ca = calloc((size_t)n, sizeof(*ca));
    kopt_agent_plan *plans = calloc((size_t)n, sizeof(*plans));
    char key[64], tag[32], prop[32];

    if (!pa || !ca || !plans)
        goto out;
    for (int q = 0; q < n; q++) {
        vars vs_ = {0};
        int p = q / k, j = q % k, v = vs[p];
        node_vars(s, ctx, &vs_, v);
        var(&vs_, "proposal", proposal_label(vs, m, p, j, k, prop, sizeof(prop)));
        snprintf(key, sizeof(key), "e%d-p%d-planner", e + p, j + 1);
        snprintf(tag, sizeof(tag), "n%d", v);
        ask_init(s, &pa[q], KOPT_AGENT_PLANNER, render(s, KOPT_AGENT_PLANNER, &vs_), key, tag);
        vars_free(&vs_);
    }
    if ((w = ask_all(s, ctx, llm, pa, n)) != 0)
        goto out;
    for (int q = 0; q < n; q++) {
        vars vs_ = {0};
        char gain[32];
        int p = q / k, j = q % k, v = vs[p];
        if (kopt_agent_parse_plan(reply_text(&pa[q]), &plans[q]) != KOPT_AGENT_OK)
            snprintf(plans[q].text, sizeof(plans[q].text), "(the planner gave no plan: %s) "
                     "make one well-chosen optimization", kopt_llm_outcome_name(pa[q].reply.outcome));
        node_vars(s, ctx, &vs_, v);
        var(&vs_, "proposal", proposal_label(vs, m, p, j, k, prop, sizeof(prop)));
        var(&vs_, "plan", plans[q].text);
        var(&vs_, "plan_kind", plans[q].kind);
        snprintf(gain, sizeof(gain), "%.2f", plans[q].gain);
        var(&vs_, "plan_gain", gain);
        snprintf(key, sizeof(key), "e%d-p%d-coder", e + p, j + 1);
        snprintf(tag, sizeof(tag), "n%d", v);
        ask_init(s, &ca[q], KOPT_AGENT_CODER, render(s, KOPT_AGENT_CODER, &vs_), key, tag);
        vars_free(&vs_);
    }
    ask_clear(pa, n);
    memset(pa, 0, (size_t)n * sizeof(*pa));
    if ((w = ask_all(s, ctx, llm, ca, n)) == 0) {
        /* the expansion's children stored together: a kill -9 between two of them would
         * leave an expansion that a resume counts as done with a proposal missing */
        kopt_status rc = kopt__search_group_begin(s, ctx), crc;
        for (int q = 0; q < n; q++) {
            crc = add_child(s, ctx, vs[q / k], "plan", e + q / k, q % k + 1, &plans[q],
                            s->nodes[vs[q / k]].source, &ca[q], 0);
            rc = rc != KOPT_OK ? rc : crc;
        }
        if (kopt__search_group_end(s, ctx, rc) != KOPT_OK)
            kopt_log(ctx, KOPT_LOG_WARN, "an expansion not stored: %s", kopt_errmsg(ctx));
    }
    ask_clear(ca, n);
    memset(ca, 0, (size_t)n * sizeof(*ca));
    kopt__search_derive(s);
out:
    if (pa)
        ask_clear(pa, n);
    if (ca)
        ask_clear(ca, n);
    free(pa);
    free(ca);
    free(plans);
    if (!pa || !ca || !plans)
        return -1;
    return w ? -1 : 1;
}

/* ---- the loop ----------------------------------------------------------------------------------- */

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

static int width_of(const kopt_search *s)
{
    int w = s->o.width < 1 ? 1 : s->o.width;
    return w > KOPT_SEARCH_MAX_WIDTH ? KOPT_SEARCH_MAX_WIDTH : w;
}

static void progress(kopt_search *s, kopt_llm_client *llm, const char *what)
{
    char line[512];
    const kopt_search_node *b = kopt_search_best(s);
    kopt_llm_budget_state bs;

    if (!s->o.progress)
        return;
    memset(&bs, 0, sizeof(bs));
    if (llm)
        kopt_llm_budget(llm, &bs);
    snprintf(line, sizeof(line), "iter %d/%d | %s | best %.2fx (n%d) | %lld llm calls, %lld "
             "tokens, $%.4f | %.1f s", expansions(s), s->o.iterations, what,
             b ? speedup_of(s, b) : 0.0, b ? b->id : 0, (long long)bs.calls,
             (long long)bs.tokens_total, bs.cost, (kopt_now_ms() - s->t_start) / 1000.0);
    s->o.progress(s->o.progress_user, line);
}

static int stopped(kopt_search *s, kopt_llm_client *llm)
{
    kopt_llm_budget_state bs;

    if (s->o.stop && *s->o.stop) {
        snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "stopped");
        return 1;
    }
    if (s->o.max_wall_s > 0 && kopt_now_ms() - s->t_start > s->o.max_wall_s * 1000.0) {
        snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "wall time %.0f s reached",
                 s->o.max_wall_s);
        return 1;
    }
    if (llm) {
        kopt_llm_budget(llm, &bs);
        if (bs.exhausted) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "%s", bs.why);
            return 2;   /* nothing more may be asked; pending nodes may still be evaluated */
        }
    }
    return 0;
}

/* 1 when the manual folder holds a prompt without its reply (a step still waiting). */
static int manual_outstanding(kopt_ctx *ctx, const char *dir)
{
    char **names = NULL;
    int n = 0;

    if (dir)   /* fails only out of memory, keeping the names it had */
        (void)kopt_optimize_waiting(ctx, dir, &names, &n);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return n > 0;
}

kopt_status kopt_search_go(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm,
                           kopt_search_evaluator *ev)
{
    int can_ask = llm || s->o.manual_dir, proposed = 0, steps = 0;
    kopt_status rc = KOPT_OK;
    char what[160];

    memset(&s->st, 0, sizeof(s->st));
    s->t_start = kopt_now_ms();
    s->st.width = width_of(s);
    kopt__search_derive(s);
    for (;;) {
        int pend = -1, st = stopped(s, llm), r, e, np, picks[KOPT_SEARCH_MAX_WIDTH];
        if (st == 1)
            break;
        if (st == 2)
            can_ask = 0;
        for (int i = 0; i < s->n && pend < 0; i++)
            if (s->nodes[i].state == KOPT_SEARCH_PENDING)
                pend = i;
        if (ev && pend >= 0) {
            int batch[KOPT_SEARCH_MAX_WIDTH], nb;
            prepare(s, ctx, ev);
            nb = kopt__search_batch(s, pend, batch);
            if ((rc = nb > 1 ? kopt__search_evaluate_batch(s, ctx, ev, batch, nb)
                             : kopt__search_evaluate(s, ctx, ev, pend)) != KOPT_OK)
                break;
            for (int b = 0; b < nb; b++) {   /* in node order, as they were backed up */
                const kopt_search_node *n = &s->nodes[batch[b]];
                if (n->state != KOPT_SEARCH_DONE)
                    continue;
                snprintf(what, sizeof(what), "n%d %s", batch[b], n->ok ? "OK" :
                         (n->failure[0] ? n->failure : kopt_verdict_name(n->verdict)));
                if (n->where.known && s->st.width > 1)
                    snprintf(what + strlen(what), sizeof(what) - strlen(what), " (gpu %d)",
                             n->where.device);
                progress(s, llm, what);
            }
            if (!s->nodes[0].ok && pend == 0) {
                snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "the reference did not "
                         "evaluate OK (%s)", kopt_verdict_name(s->nodes[0].verdict));
                break;
            }
            continue;
        }
        if (!can_ask) {
            if (!s->st.stop_reason[0])
                snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), pend >= 0 ?
                         "candidates left pending" : "nothing left to evaluate");
            break;
        }
        if (proposed && s->o.propose_only) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "proposed: evaluate with "
                     "--evaluate");
            break;
        }
        /* nothing is planned from a root that was never evaluated (a new tree's --propose):
         * a planner would see no time, no device and no profile */
        if (s->nodes[0].state != KOPT_SEARCH_DONE) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "the root (the reference) "
                     "has not been evaluated: nothing proposed; evaluate it first");
            s->st.root_unevaluated = 1;
            break;
        }
        if (!s->nodes[0].ok) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "the reference did not "
                     "evaluate OK (%s)", s->nodes[0].failure[0] ? s->nodes[0].failure :
                     kopt_verdict_name(s->nodes[0].verdict));
            break;
        }
        /* --propose again before the last proposals were evaluated: nothing new (another
         * step would select without their outcomes), unless a step's manual prompts are
         * still waiting for replies (that step is asked again to read them) */
        if (s->o.propose_only && !proposed && steps == 0 && pend >= 0 &&
            !manual_outstanding(ctx, s->o.manual_dir)) {
            int npend = 0;
            for (int i = 0; i < s->n; i++)
                npend += s->nodes[i].state == KOPT_SEARCH_PENDING;
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "%d candidate(s) pending "
                     "evaluation: nothing more proposed; evaluate them first (--evaluate)",
                     npend);
            break;
        }
        if ((r = repair(s, ctx, llm)) != 0) {
            if (r < 0)
                break;
            steps++;
            progress(s, llm, "repairs asked");
            if (!s->o.propose_only && !s->o.rounds)
                continue;
        }
        if ((e = expansions(s)) >= s->o.iterations) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "%d iterations done",
                     s->o.iterations);
            break;
        }
        e++;
        /* a step: the templatizer first if it is due, then up to the width in expansions,
         * within the iterations left (one, and either, for the plain search) */
        if ((r = templatize(s, ctx, llm, e)) < 0)
            break;
        np = select_many(s, picks, min_int(s->st.width - r, s->o.iterations - (e - 1) - r));
        if (np == 0 && r == 0) {
            snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "no node left to "
                     "expand (all closed or failed)");
            break;
        }
        if (np > 0 && expand(s, ctx, llm, picks, np, e + r) < 0)
            break;
        steps++;
        proposed = 1;
        if (r + np > 1)
            snprintf(what, sizeof(what), "expansions %d-%d", e, e + r + np - 1);
        else
            snprintf(what, sizeof(what), "expansion %d", e);
        progress(s, llm, what);
    }
    if (s->st.waiting)
        snprintf(s->st.stop_reason, sizeof(s->st.stop_reason), "waiting for %d manual "
                 "replies in %s", s->st.waiting, s->o.manual_dir);
    s->st.wall_ms = kopt_now_ms() - s->t_start;
    s->st.expansions = expansions(s);
    for (int i = 0; i < s->n; i++)
        s->st.pending += s->nodes[i].state == KOPT_SEARCH_PENDING;
    steps = steps > s->st.evaluated ? steps : s->st.evaluated;
    /* kopt's own time: what the LLM, the evaluations and the code searches did not take */
    s->st.overhead_ms_per_iter = steps ? (s->st.wall_ms - s->st.llm_ms - s->st.eval_ms -
                                          s->st.search_ms) / steps : 0.0;
    return rc;
}
