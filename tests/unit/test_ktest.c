/*
 * Self-test of the ktest framework: every check macro passes on true input and fails (and
 * counts the failure) on false input, so no unit test can pass vacuously. Run with
 * --demo-failure it runs one failing case, which CTest expects to exit non-zero.
 */
#include "ktest.h"

#include <math.h>

/* Run `stmt` quietly and report whether it registered exactly one failure. */
#define FAILS(stmt) (fails_quietly_begin(), (void)(stmt), fails_quietly_end())

static int saved_failures;

static void fails_quietly_begin(void)
{
    saved_failures = ktest_st()->failures;
    ktest_st()->quiet = 1;
}

static int fails_quietly_end(void)
{
    int failed = ktest_st()->failures - saved_failures;
    ktest_st()->failures = saved_failures;
    ktest_st()->quiet = 0;
    return failed == 1;
}

static void test_check_passes_and_fails(void)
{
    CHECK(FAILS(CHECK(1 == 2)));
    CHECK(!FAILS(CHECK(2 == 2)));
    {
        int r = -1;
        CHECK(FAILS(r = CHECK(0)));
        CHECK_EQ_INT(r, 0);   /* a failed check evaluates to 0, a passed one to 1 */
        CHECK(!FAILS(r = CHECK(1)));
        CHECK_EQ_INT(r, 1);
    }
}

static void test_check_eq_int(void)
{
    CHECK(FAILS(CHECK_EQ_INT(3, 4)));
    CHECK(!FAILS(CHECK_EQ_INT(-7, -7)));
    /* 64-bit values are compared whole, not truncated to int */
    CHECK(FAILS(CHECK_EQ_INT(INT64_C(0x100000000), 0)));
}

static void test_check_str(void)
{
    CHECK(FAILS(CHECK_STR_CONTAINS("hello world", "planet")));
    CHECK(!FAILS(CHECK_STR_CONTAINS("hello world", "o w")));
    CHECK(FAILS(CHECK_STR_CONTAINS(NULL, "x")));
    CHECK(FAILS(CHECK_EQ_STR("a", "b")));
    CHECK(FAILS(CHECK_EQ_STR(NULL, "b")));
    CHECK(!FAILS(CHECK_EQ_STR("same", "same")));
}

static void test_check_near(void)
{
    CHECK(!FAILS(CHECK_NEAR(1.0, 1.0 + 1e-12, 1e-9)));
    CHECK(FAILS(CHECK_NEAR(1.0, 1.1, 1e-9)));
    CHECK(FAILS(CHECK_NEAR(NAN, 0.0, 1.0)));
}

static void test_tmpdir_roundtrip(void)
{
    char *dir = ktest_tmpdir("self"), *path, *text;
    struct stat st;

    if (!CHECK(dir != NULL))
        return;
    path = ktest_write_file(dir, "a.txt", "abc\n");
    CHECK(path != NULL);
    text = path ? ktest_read_file(path) : NULL;
    CHECK_EQ_STR(text, "abc\n");
    ktest_rmtree(dir);
    CHECK(stat(dir, &st) != 0);
    free(text);
    free(path);
    free(dir);
}


static void demo_failure(void)
{
    CHECK_EQ_INT(1 + 1, 3);
}

int main(int argc, char **argv)
{
    static const ktest_case cases[] = {
        KTEST(test_check_passes_and_fails), KTEST(test_check_eq_int), KTEST(test_check_str),
        KTEST(test_check_near), KTEST(test_tmpdir_roundtrip),
    };
    static const ktest_case failing[] = {KTEST(demo_failure)};

    if (argc > 1 && strcmp(argv[1], "--demo-failure") == 0)
        return ktest_main(1, argv, failing, KTEST_COUNT(failing));
    return ktest_main(argc, argv, cases, KTEST_COUNT(cases));
}
