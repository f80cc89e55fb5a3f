/* Asking: a conversation with a role (kopt__search_ask), every request of a step asked at
 * once through the LLM client, or in manual mode as prompt files answered by reply files
 * (kopt_optimize_waiting lists those still waiting), with the code-search tool's turns
 * (tools.c) until a reply without searches. Called by expand.c and repair.c (and optimize.c,
 * search.c for kopt_optimize_waiting); calls tools.c. From kopt__search_ask_clear to
 * kopt_optimize_waiting. */
#include "search_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void kopt__search_ask_clear(kopt__search_ask *a, int n)
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

void kopt__search_ask_init(kopt_search *s, kopt__search_ask *a, kopt_agent_role role,
                           char *prompt, const char *key, const char *tag)
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
static int ask_turn(const kopt__search_ask *a)
{
    return a->nmsg / 2 + 1;
}

static void turn_key(const kopt__search_ask *a, char *out, size_t len)
{
    if (ask_turn(a) > 1)
        snprintf(out, len, "%s.turn%d", a->key, ask_turn(a));
    else
        snprintf(out, len, "%s", a->key);
}

/* Manual mode: <dir>/<key>.prompt.md written, <key>.reply.md read when it exists (a later
 * turn of a conversation: <key>.turnN.*, its prompt file holding the conversation so far).
 * The exchange is stored like a model's (backend "manual") so a replay finds it. */
static void ask_manual(kopt_search *s, kopt_ctx *ctx, kopt__search_ask *a)
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
static void ask_pending(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm,
                        kopt__search_ask *a, int n)
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
        /* every request of the step in flight at once, at most 16 (a wider step asks in
         * turns of 16; --llm-parallel, when given, caps them) */
        for (int from = 0; from < n;) {
            kopt_llm_request rq[KOPT_LLM_TOGETHER_MAX];
            kopt_llm_reply rp[KOPT_LLM_TOGETHER_MAX];
            int who[KOPT_LLM_TOGETHER_MAX], k = 0, i;
            for (i = from; i < n && k < KOPT_LLM_TOGETHER_MAX; i++)
                if (!a[i].answered) {
                    turn_key(&a[i], a[i].name, sizeof(a[i].name));
                    a[i].rq.name = a[i].name;   /* manual mode's name for it */
                    who[k] = i;
                    rq[k++] = a[i].rq;
                }
            from = i;
            memset(rp, 0, sizeof(rp));
            if (k)
                kopt_llm_call_together(llm, ctx, rq, k, rp);
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

const char *kopt__search_reply_text(const kopt__search_ask *a)
{
    return a->reply.outcome == KOPT_LLM_OK || a->reply.outcome == KOPT_LLM_LENGTH ?
           a->reply.text : NULL;
}

/* If a's reply asks for code searches (and the tool is on for it), answer them: the reply
 * and the results join the conversation and a is to be asked again. 1 when it is. */
static int tool_turn(kopt_search *s, kopt_ctx *ctx, kopt__search_ask *a)
{
    const char *text = kopt__search_reply_text(a);
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
int kopt__search_ask_all(kopt_search *s, kopt_ctx *ctx, kopt_llm_client *llm,
                         kopt__search_ask *a, int n)
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

/* ---- manual prompts waiting for a reply --------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

kopt_status kopt_optimize_waiting(kopt_ctx *ctx, const char *workdir, char ***names, int *n)
{
    DIR *d;
    struct dirent *e;
    char **v = NULL;
    int cap = 0;

    *names = NULL;
    *n = 0;
    if (!(d = opendir(workdir)))
        return KOPT_OK;   /* nothing asked yet */
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        char reply[4096];
        struct stat st;
        if (len <= 10 || strcmp(e->d_name + len - 10, ".prompt.md") != 0)
            continue;
        snprintf(reply, sizeof(reply), "%s/%.*s.reply.md", workdir, (int)(len - 10),
                 e->d_name);
        if (stat(reply, &st) == 0)
            continue;
        if (*n == cap) {
            char **g = realloc(v, (size_t)(cap = cap ? 2 * cap : 8) * sizeof(*v));
            if (!g)
                break;
            v = g;
        }
        if (!(v[*n] = strndup(e->d_name, len - 10)))
            break;
        (*n)++;
    }
    closedir(d);
    if (*n > 1)
        qsort(v, (size_t)*n, sizeof(*v), by_name);
    *names = v;
    if (!v && *n)
        return kopt_seterr(ctx, KOPT_E_NOMEM, "waiting prompts");
    return KOPT_OK;
}
