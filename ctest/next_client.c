/*
 * (e) The link-time case: an application linked against skinnylt and then the real
 * hipBLASLt (DT_NEEDED in that order, no LD_PRELOAD, no SKINNYLT_REAL_LIB).
 * skinnylt must find the real library with dlsym(RTLD_NEXT) and forward to it.
 * usage: next_client <log file that SKINNYLT_LOG=info:<file> writes>
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "hipblaslt_abi.h"
#include "skinnylt.h"

static int passed, failed;
static void check(int ok, const char *what) {
    if (ok) passed++; else { failed++; printf("FAIL: %s\n", what); }
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: next_client <log file>\n"); return 2; }
    int (*calls)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "stub_call_count");
    check(calls != NULL, "the stub hipBLASLt is linked");
    hipblasLtHandle_t h = NULL;
    check(hipblasLtCreate(&h) == 0, "hipblasLtCreate succeeds");
    check(h != NULL, "the stub's handle comes back");
    check(skinnylt_has_real_library() == 1, "skinnylt found a real hipBLASLt");
    check(calls && calls() >= 1, "the call reached the stub");
    check(hipblasLtDestroy(h) == 0, "hipblasLtDestroy succeeds");
    char text[4096] = {0};
    FILE *f = fopen(argv[1], "r");
    if (f) { size_t n = fread(text, 1, sizeof text - 1, f); text[n] = 0; fclose(f); }
    check(strstr(text, "(RTLD_NEXT)") != NULL, "found by dlsym(RTLD_NEXT) (per the info log)");
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
