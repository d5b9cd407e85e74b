/*
 * The client of the fault-injection fixtures (faults.sh sets up each fault and
 * checks stderr): it links skinnylt and checks what skinnylt made of its
 * environment. Every option is one expectation:
 *
 *   --real 0|1      skinnylt_has_real_library()
 *   --stub PATH     PATH is the real library: loaded by skinnylt, and a Create
 *                   and a Destroy made through skinnylt reach it (stub.h log)
 *   --reentrant     PATH is the stand-in whose constructor called hipBLASLt
 *                   (stub/reentrant.c): the constructor ran to the end, and its
 *                   calls went to skinnylt, not to the stand-in itself
 *   --version N     hipblasLtGetVersion on a new handle
 *   --enabled 0|1   skinnylt_is_enabled()
 *   --max-m N       routing uses N as the largest token count: a decode Matmul
 *                   with N tokens is forwarded as "no-gpu" (or "disabled") and
 *                   one with N+1 as "too-many-tokens" (or "disabled"); skipped
 *                   on a machine with a usable GPU
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hipblaslt_abi.h"
#include "skinnylt.h"
#include "stub/stub.h"

#define FAKE(x) ((void *)(uintptr_t)(x))

/* A decode F.linear(x[tokens,4096], W[1024,4096]) in bf16 on `h`: checks the
 * forward reason skinnylt counts for it. */
static void check_route(hipblasLtHandle_t h, uint64_t tokens, const char *reason, int real) {
    const uint64_t N = 1024, K = 4096;
    hipblasLtMatmulDesc_t d = NULL;
    hipblasLtMatrixLayout_t a = NULL, b = NULL, dd = NULL;
    int32_t op_t = HIPBLAS_OP_T, op_n = HIPBLAS_OP_N;
    CHECK_EQ(hipblasLtMatmulDescCreate(&d, HIPBLAS_COMPUTE_32F, HIP_R_32F), 0, "DescCreate");
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t), 0, "TRANSA");
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n), 0, "TRANSB");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&a, HIP_R_16BF, K, N, (int64_t)K), 0, "layout A");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&b, HIP_R_16BF, K, tokens, (int64_t)K), 0, "layout B");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&dd, HIP_R_16BF, N, tokens, (int64_t)N), 0, "layout D");
    const float alpha = 1.0f, beta = 0.0f;
    int64_t before = skinnylt_forwarded_for(reason);
    int s = hipblasLtMatmul(h, d, &alpha, FAKE(0x10000000), a, FAKE(0x20000000), b, &beta, FAKE(0x30000000), dd,
                            FAKE(0x30000000), dd, NULL, NULL, 0, NULL);
    /* Forwarded to the stub (status 0), or refused standalone. */
    CHECK_EQ(s, real ? 0 : HIPBLAS_STATUS_NOT_SUPPORTED, "Matmul status");
    int64_t got = skinnylt_forwarded_for(reason) - before;
    CHECK(got == 1, "Matmul with %llu tokens: forwarded_for(%s) moved by %lld, want 1",
          (unsigned long long)tokens, reason, (long long)got);
    hipblasLtMatrixLayoutDestroy(dd);
    hipblasLtMatrixLayoutDestroy(b);
    hipblasLtMatrixLayoutDestroy(a);
    hipblasLtMatmulDescDestroy(d);
}

int main(int argc, char **argv) {
    int want_real = -1, reentrant = 0, want_enabled = -1;
    long want_version = -1, max_m = -1;
    const char *stub_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--reentrant") == 0) { reentrant = 1; continue; }
        if (!v) { fprintf(stderr, "faults: %s needs a value\n", o); return 2; }
        if (strcmp(o, "--real") == 0) want_real = atoi(v);
        else if (strcmp(o, "--stub") == 0) stub_path = v;
        else if (strcmp(o, "--version") == 0) want_version = atol(v);
        else if (strcmp(o, "--enabled") == 0) want_enabled = atoi(v);
        else if (strcmp(o, "--max-m") == 0) max_m = atol(v);
        else { fprintf(stderr, "faults: unknown option %s\n", o); return 2; }
        i++;
    }

    int real = skinnylt_has_real_library();
    if (want_real >= 0) CHECK_EQ(real, want_real, "skinnylt_has_real_library");
    if (want_enabled >= 0) CHECK_EQ(skinnylt_is_enabled(), want_enabled, "skinnylt_is_enabled");

    struct stub_api S;
    void *stub = NULL;
    if (stub_path) {
        stub = dlopen(stub_path, RTLD_NOW | RTLD_NOLOAD);
        CHECK(stub != NULL, "skinnylt did not load %s", stub_path);
        if (!stub || stub_api_load(stub, &S) != 0) {
            fprintf(stderr, "cannot reach the stub's inspection API\n");
            return check_summary("faults");
        }
        S.reset();
    }
    if (reentrant && stub) {
        const int *ran = dlsym(stub, "reentrant_ctor_ran");
        const int *elsewhere = dlsym(stub, "reentrant_bound_elsewhere");
        const int *vs = dlsym(stub, "reentrant_version_status");
        const int *cs = dlsym(stub, "reentrant_create_status");
        CHECK(ran && elsewhere && vs && cs, "the stand-in lacks its reentrant_* records");
        if (ran && elsewhere && vs && cs) {
            CHECK_EQ(*ran, 1, "the stand-in's constructor ran to the end");
            CHECK_EQ(*elsewhere, 1, "the constructor's hipBLASLt calls bound to skinnylt");
            printf("nested calls from the constructor: GetVersion -> %d, Create -> %d\n", *vs, *cs);
        }
    }

    hipblasLtHandle_t h = NULL;
    CHECK_EQ(hipblasLtCreate(&h), 0, "Create");
    if (stub) CHECK_EQ(S.calls_to("hipblasLtCreate"), 1, "the Create reached the real library");
    if (want_version >= 0) {
        int v = -1;
        CHECK_EQ(hipblasLtGetVersion(h, &v), 0, "GetVersion");
        CHECK_EQ(v, want_version, "GetVersion value");
    }
    if (max_m >= 0) {
        if (skinnylt_preload(0) == 0) {
            printf("a usable GPU is present: routing checks skipped\n");
        } else {
            int on = skinnylt_is_enabled();
            check_route(h, (uint64_t)max_m, on ? "no-gpu" : "disabled", real);
            check_route(h, (uint64_t)max_m + 1, on ? "too-many-tokens" : "disabled", real);
        }
    }
    CHECK_EQ(hipblasLtDestroy(h), 0, "Destroy");
    if (stub) CHECK_EQ(S.calls_to("hipblasLtDestroy"), 1, "the Destroy reached the real library");
    return check_summary("faults");
}
