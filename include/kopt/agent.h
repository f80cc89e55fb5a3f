/*
 * kopt/agent.h: the roles of kopt optimize (planner, coder, debugger, templatizer): their
 * prompt templates (editable text files, prompts/<role>.md, found at run time) and the
 * parsing of their replies. Replies are untrusted text: code is extracted from fenced blocks
 * (several blocks, prose around them, a bare file), search/replace edit blocks are applied
 * to the parent's source (an edit that does not apply is a typed failure), edits to the
 * problem or its reference are rejected, and nothing of a reply ever reaches a shell: the
 * result is only ever a string handed to the compiler.
 *
 * Ownership: strings returned through `char **out` are owned by the caller (free()).
 * Inputs are borrowed for the call. No state; thread-safe.
 */
#ifndef KOPT_AGENT_H
#define KOPT_AGENT_H

#include "kopt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kopt_agent_role {
    KOPT_AGENT_PLANNER = 0,   /* proposes one optimization: what, why, expected gain */
    KOPT_AGENT_CODER,         /* turns a plan into a candidate (a file or edit blocks) */
    KOPT_AGENT_DEBUGGER,      /* repairs a failed candidate from its log or mismatch report */
    KOPT_AGENT_TEMPLATIZER,   /* rewrites a kernel into a template (params, constraints) */
    KOPT_AGENT_ROLE_COUNT
} kopt_agent_role;
const char *kopt_agent_role_name(kopt_agent_role r);   /* "planner", ... */

/* What became of a reply. Everything but OK is fed back to the debugger as the failure. */
typedef enum kopt_agent_failure {
    KOPT_AGENT_OK = 0,
    KOPT_AGENT_NO_REPLY,        /* the model gave no usable text (the LLM outcome says why) */
    KOPT_AGENT_NO_CODE,         /* no code block, an unterminated one, or no kernel in it */
    KOPT_AGENT_EDIT_MALFORMED,  /* an edit block without its separator or end marker */
    KOPT_AGENT_EDIT_NOT_FOUND,  /* a SEARCH text that is not in the parent */
    KOPT_AGENT_EDIT_AMBIGUOUS,  /* a SEARCH text found more than once */
    KOPT_AGENT_FORBIDDEN,       /* the reply edits the problem or its reference */
    KOPT_AGENT_UNCHANGED,       /* the result is the parent itself */
    KOPT_AGENT_TOO_LARGE,       /* the result passed KOPT_AGENT_MAX_SOURCE */
    KOPT_AGENT_NOT_TEMPLATE,    /* templatizer: the result has no tunable params */
    KOPT_AGENT_SEARCH_LIMIT,    /* the last reply still asked for searches, past the bound */
    KOPT_AGENT_FAILURE_COUNT
} kopt_agent_failure;
const char *kopt_agent_failure_name(kopt_agent_failure f);   /* "edit_not_found", ... */

#define KOPT_AGENT_MAX_SOURCE (256 * 1024)

/* ---- prompts ------------------------------------------------------------------------------ */

/* The folder of the prompt templates, first found of: $KOPT_PROMPTS; `prompts/` beside the
 * program or beside libkopt, or `../share/kopt/prompts` from either; the install datadir;
 * the source tree. *out caller-owned. KOPT_E_NOT_FOUND naming where it looked. */
kopt_status kopt_agent_prompts_dir(kopt_ctx *ctx, char **out);
/* The template of `role` (<dir>/<role>.md) into *out. */
kopt_status kopt_agent_prompt_load(kopt_ctx *ctx, const char *dir, kopt_agent_role role,
                                   char **out);

/* A named template beside the roles' (<dir>/<name>.md, e.g. "cute_search": the code-search
 * tool's description) into *out. */
kopt_status kopt_agent_prompt_load_named(kopt_ctx *ctx, const char *dir, const char *name,
                                         char **out);

/* The host-mode candidate ABI for the prompts: the text of kopt/candidate.h, read where
 * host-mode compiles find it (kopt_compile_include_dir), so it is the header a candidate
 * is compiled against. *out caller-owned. KOPT_E_NOT_FOUND, naming the path, when it is not
 * there (the prompt then says so rather than describe it from memory). */
kopt_status kopt_agent_candidate_abi(kopt_ctx *ctx, char **out);

typedef struct kopt_agent_var {
    const char *name, *value;   /* {{name}} in a template; a NULL value renders as "" */
} kopt_agent_var;
/* `tmpl` with each {{name}} replaced by its value ({{name}} unknown: left as it is);
 * the value text is inserted verbatim and never expanded again. NULL when out of memory. */
char *kopt_agent_render(const char *tmpl, const kopt_agent_var *vars, int nvars);

/* ---- replies ------------------------------------------------------------------------------ */

typedef struct kopt_agent_plan {
    char text[2048];            /* the plan, one paragraph */
    char kind[32];              /* KIND: a short label ("tiling", "vectorize", ...); "other" */
    char tool[48];              /* TOOL: the micro-tool whose advice it follows; "" none */
    double gain;                /* GAIN: expected speedup factor (e.g. 1.5); 0 unknown */
} kopt_agent_plan;
/* Parse a planner reply: lines "PLAN:", "KIND:", "TOOL:", "GAIN:" (any case, markdown
 * emphasis allowed); without a PLAN line the first paragraph is the plan. OK or NO_REPLY. */
kopt_agent_failure kopt_agent_parse_plan(const char *reply, kopt_agent_plan *out);

/* Names a reply may not write: the problem file and the reference's file name. */
typedef struct kopt_agent_guard {
    const char *problem_file;   /* "problem.json" */
    const char *reference_file; /* basename of the reference, e.g. "reference.cu" */
    const char *reference_src;  /* a result equal to this is FORBIDDEN too (NULL: no check) */
} kopt_agent_guard;

/* The candidate source a coder, debugger or templatizer reply gives: edit blocks
 *     <<<<<<< SEARCH\n<text of the parent>\n=======\n<replacement>\n>>>>>>> REPLACE
 * applied in order to `parent` (each SEARCH must match exactly once), else the fenced code
 * block that holds a kernel (the longest when several do), else the whole reply when it is
 * bare code. KOPT_AGENT_OK with *out set, or the failure with `why` (one line) and *out
 * NULL. */
kopt_agent_failure kopt_agent_extract_code(const char *reply, const char *parent,
                                           const kopt_agent_guard *guard, char **out,
                                           char *why, size_t whylen);

/* ---- tool calls ----------------------------------------------------------------------------- */

/* The code-search requests of a coder or debugger reply: every non-empty line of every
 * fenced block whose info string is `cute-search`
 *     ```cute-search
 *     make_tma_copy
 *     ```
 * trimmed, at most KOPT_AGENT_MAX_QUERY bytes each (longer ones are cut), at most `max`
 * of them. Returns how many were found (even past `max`: the caller can say which were not
 * run); (*queries)[0..min(n, max)) are caller-owned (kopt_agent_queries_free). A reply with
 * such a block is a search turn: the code in it, if any, is not taken. */
#define KOPT_AGENT_MAX_QUERY 200
int kopt_agent_parse_searches(const char *reply, int max, char ***queries);
void kopt_agent_queries_free(char **queries, int n);

#ifdef __cplusplus
}
#endif
#endif
