/*
 * Pass/fail counting for skinnylt's C tests: every CHECK counts one check, prints
 * the failing ones, and check_summary() prints "N passed, M failed".
 */
#ifndef SKINNYLT_CTEST_CHECK_H
#define SKINNYLT_CTEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>

static int g_passed, g_failed;

/* Counts one check; prints `what` (printf-style) when it fails. */
#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (cond) {                                             \
            g_passed++;                                         \
        } else {                                                \
            g_failed++;                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                       \
            fputc('\n', stderr);                                \
        }                                                       \
    } while (0)

/* Checks two integers (as int64) for equality; `label` names them on failure. */
#define CHECK_EQ(got, want, label)                                                   \
    do {                                                                             \
        int64_t got_ = (int64_t)(got), want_ = (int64_t)(want);                      \
        CHECK(got_ == want_, "%s: got %" PRId64 " (0x%" PRIx64 "), want %" PRId64     \
              " (0x%" PRIx64 ")", (label), got_, (uint64_t)got_, want_, (uint64_t)want_); \
    } while (0)

/* Prints the summary line; returns the process exit status. */
static inline int check_summary(const char *test) {
    printf("%s: %d passed, %d failed\n", test, g_passed, g_failed);
    return g_failed == 0 && g_passed > 0 ? 0 : 1;
}

#endif /* SKINNYLT_CTEST_CHECK_H */
