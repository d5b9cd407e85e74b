/*
 * libmid.so: a library between an application and hipBLASLt, as a Python
 * extension module is. It is linked against the stub libhipblaslt.so.1 (found
 * through its rpath) and is itself loaded RTLD_LOCAL by the client, so the stub
 * never enters the global scope; its hipblasLt* references bind to skinnylt only
 * when skinnylt is LD_PRELOADed.
 *
 * mid_run() makes the calls PyTorch makes for F.linear(x[4,4096], W[1024,4096])
 * in bf16 and records each call as it passed it, so the client can compare them
 * with what the stub received.
 */
#include <string.h>

#include "hipblaslt_abi.h"
#include "preload/mid.h"
#include "stub/stub.h"

#define EXPORT __attribute__((visibility("default")))
#define U STUB_U64

static struct mid_log *g_out;

/* Appends one call to the log: name, arguments as passed, status returned. */
static void note(const char *name, const uint64_t *args, int nargs, hipblasStatus_t status) {
    if (g_out->count >= MID_MAX_CALLS) {
        g_out->overflow = 1;
        return;
    }
    struct stub_call *c = &g_out->calls[g_out->count++];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->nargs = nargs;
    memcpy(c->args, args, (size_t)nargs * sizeof *args);
    c->status = status;
}

/* CALL(fn, args...) calls hipblasLt`fn` and logs it. */
#define CALL(fn, ...)                                                              \
    do {                                                                           \
        const uint64_t args_[] = {MID_MAP_U(__VA_ARGS__)};                         \
        hipblasStatus_t s_ = fn(__VA_ARGS__);                                      \
        note(#fn, args_, (int)(sizeof args_ / sizeof args_[0]), s_);               \
    } while (0)

/* MID_MAP_U(a, b, ...) -> U(a), U(b), ... for up to 16 arguments. */
#define MID_MAP_U(...) MID_MAP_N(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)(__VA_ARGS__)
#define MID_MAP_N(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, n, ...) MID_MAP_##n
#define MID_MAP_1(a) U(a)
#define MID_MAP_2(a, ...) U(a), MID_MAP_1(__VA_ARGS__)
#define MID_MAP_3(a, ...) U(a), MID_MAP_2(__VA_ARGS__)
#define MID_MAP_4(a, ...) U(a), MID_MAP_3(__VA_ARGS__)
#define MID_MAP_5(a, ...) U(a), MID_MAP_4(__VA_ARGS__)
#define MID_MAP_6(a, ...) U(a), MID_MAP_5(__VA_ARGS__)
#define MID_MAP_7(a, ...) U(a), MID_MAP_6(__VA_ARGS__)
#define MID_MAP_8(a, ...) U(a), MID_MAP_7(__VA_ARGS__)
#define MID_MAP_9(a, ...) U(a), MID_MAP_8(__VA_ARGS__)
#define MID_MAP_10(a, ...) U(a), MID_MAP_9(__VA_ARGS__)
#define MID_MAP_11(a, ...) U(a), MID_MAP_10(__VA_ARGS__)
#define MID_MAP_12(a, ...) U(a), MID_MAP_11(__VA_ARGS__)
#define MID_MAP_13(a, ...) U(a), MID_MAP_12(__VA_ARGS__)
#define MID_MAP_14(a, ...) U(a), MID_MAP_13(__VA_ARGS__)
#define MID_MAP_15(a, ...) U(a), MID_MAP_14(__VA_ARGS__)
#define MID_MAP_16(a, ...) U(a), MID_MAP_15(__VA_ARGS__)

EXPORT void mid_run(struct mid_log *out) {
    memset(out, 0, sizeof *out);
    g_out = out;

    /* y[M,N] = x[M,K] W[N,K]^T as PyTorch hands it to hipBLASLt (column-major):
     * D = op(A) op(B) with opA = T, opB = N, A = W stored K x N (ld K),
     * B = x stored K x M (ld K), C = D = y stored N x M (ld N). */
    const uint64_t M = 4, N = 1024, K = 4096;
    const int opA = HIPBLAS_OP_T, opB = HIPBLAS_OP_N;
    const uint64_t workspace_size = 1u << 22;
    const float alpha = 1.0f, beta = 0.0f;
    void *W = (void *)0x10000000, *x = (void *)0x20000000, *y = (void *)0x30000000;
    void *workspace = (void *)0x40000000, *stream = (void *)0x50000000;

    hipblasLtHandle_t h = NULL;
    hipblasLtMatmulDesc_t desc = NULL;
    hipblasLtMatrixLayout_t a = NULL, b = NULL, c = NULL, d = NULL;
    hipblasLtMatmulPreference_t pref = NULL;
    hipblasLtMatmulHeuristicResult_t result;
    int returned = 0;
    memset(&result, 0, sizeof result);

    CALL(hipblasLtCreate, &h);
    CALL(hipblasLtMatmulDescCreate, &desc, HIPBLAS_COMPUTE_32F, HIP_R_32F);
    CALL(hipblasLtMatmulDescSetAttribute, desc, HIPBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA);
    CALL(hipblasLtMatmulDescSetAttribute, desc, HIPBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB);
    CALL(hipblasLtMatrixLayoutCreate, &a, HIP_R_16BF, K, N, (int64_t)K);
    CALL(hipblasLtMatrixLayoutCreate, &b, HIP_R_16BF, K, M, (int64_t)K);
    CALL(hipblasLtMatrixLayoutCreate, &c, HIP_R_16BF, N, M, (int64_t)N);
    CALL(hipblasLtMatrixLayoutCreate, &d, HIP_R_16BF, N, M, (int64_t)N);
    CALL(hipblasLtMatmulPreferenceCreate, &pref);
    CALL(hipblasLtMatmulPreferenceSetAttribute, pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
         &workspace_size, sizeof workspace_size);
    CALL(hipblasLtMatmulAlgoGetHeuristic, h, desc, a, b, c, d, pref, 1, &result, &returned);
    out->heuristic_returned = returned;
    out->heuristic_result = result;
    CALL(hipblasLtMatmul, h, desc, &alpha, W, a, x, b, &beta, y, c, y, d, &result.algo, workspace,
         workspace_size, stream);
    CALL(hipblasLtMatmulPreferenceDestroy, pref);
    CALL(hipblasLtMatrixLayoutDestroy, d);
    CALL(hipblasLtMatrixLayoutDestroy, c);
    CALL(hipblasLtMatrixLayoutDestroy, b);
    CALL(hipblasLtMatrixLayoutDestroy, a);
    CALL(hipblasLtMatmulDescDestroy, desc);
    CALL(hipblasLtDestroy, h);

    /* The objects the stub handed out, for the client to match against. */
    out->handle = U(h);
    out->desc = U(desc);
    out->layouts[0] = U(a);
    out->layouts[1] = U(b);
    out->layouts[2] = U(c);
    out->layouts[3] = U(d);
    g_out = NULL;
}
