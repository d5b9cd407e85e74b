/*
 * The caller's algorithm, interposed on the stub real library (no GPU: skinnylt
 * offers no algo of its own and runs nothing).
 *
 * usage: algo <stub path> own|any   (SKINNYLT_ALGO unset, or =any)
 *   - the sample client sequence: heuristic, then matmul with the first result:
 *     the stub's algo reaches the stub untouched (the same pointer);
 *   - own: a real library's algo is forwarded as "caller-algo" before skinnylt
 *     routes; any: it is routed as if no algo were given ("no-gpu" here);
 *   - skinnylt's own algo bytes, which the real library cannot read, reach it as
 *     NULL (its own heuristic's choice), as does a NULL algo.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "hipblaslt_abi.h"
#include "skinnylt.h"
#include "stub/stub.h"

#define U STUB_U64

static struct stub_api S;

/* skinnylt's own algo bytes: solution index -1, then "SKLT" (docs/design.md). */
static hipblasLtMatmulAlgo_t own_algo(void) {
    hipblasLtMatmulAlgo_t a;
    memset(&a, 0, sizeof a);
    int32_t index = -1;
    memcpy(a.data, &index, 4);
    memcpy(a.data + 4, "SKLT", 4);
    return a;
}

/* The algo argument (index 12) the stub's last matmul received. */
static uint64_t algo_seen(void) {
    const struct stub_call *c = S.last_call("hipblasLtMatmul");
    return c ? c->args[12] : 0xdeadull;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <stub> own|any\n", argv[0]);
        return 2;
    }
    int any = strcmp(argv[2], "any") == 0;
    /* skinnylt loads the real library on first need. */
    CHECK_EQ(skinnylt_has_real_library(), 1, "interposed on the stub");
    void *stub = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    CHECK(stub != NULL && stub_api_load(stub, &S) == 0, "the stub is not loaded");
    if (!stub) return check_summary(argv[0]);

    /* F.linear for 8 tokens, 4096 -> 1024, bf16: a decode GEMM skinnylt would run. */
    hipblasLtHandle_t h;
    hipblasLtMatmulDesc_t d;
    hipblasLtMatrixLayout_t a, b, c;
    hipblasLtMatmulPreference_t p;
    int32_t opT = HIPBLAS_OP_T, opN = HIPBLAS_OP_N;
    CHECK_EQ(hipblasLtCreate(&h), 0, "Create");
    CHECK_EQ(hipblasLtMatmulDescCreate(&d, HIPBLAS_COMPUTE_32F, HIP_R_32F), 0, "DescCreate");
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSA, &opT, 4), 0, "TRANSA");
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSB, &opN, 4), 0, "TRANSB");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&a, HIP_R_16BF, 4096, 1024, 4096), 0, "layout W");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&b, HIP_R_16BF, 4096, 8, 4096), 0, "layout X");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&c, HIP_R_16BF, 1024, 8, 1024), 0, "layout Y");
    CHECK_EQ(hipblasLtMatmulPreferenceCreate(&p), 0, "PreferenceCreate");

    /* AMD's sample sequence: heuristic, then matmul with the first result. */
    hipblasLtMatmulHeuristicResult_t results[STUB_MAX_HEURISTICS];
    int returned = 0;
    CHECK_EQ(hipblasLtMatmulAlgoGetHeuristic(h, d, a, b, c, c, p, STUB_MAX_HEURISTICS, results, &returned), 0, "heuristic");
    CHECK_EQ(returned, STUB_MAX_HEURISTICS, "no GPU: the stub's results alone");
    hipblasLtMatmulHeuristicResult_t h0 = stub_heuristic(0);
    CHECK(memcmp(&results[0], &h0, sizeof h0) == 0, "the stub's first result reached the caller untouched");

    float alpha = 1.0f, beta = 0.0f;
    void *W = (void *)0x7000000, *X = (void *)0x7100000, *Y = (void *)0x7200000;
    void *stream = (void *)0x5ee;
    skinnylt_reset_counters();
#define MATMUL(algo) hipblasLtMatmul(h, d, &alpha, W, a, X, b, &beta, Y, c, Y, c, (algo), NULL, 0, stream)
    CHECK_EQ(MATMUL(&results[0].algo), 0, "matmul with the stub's algo");
    CHECK_EQ(algo_seen(), U(&results[0].algo), "the stub's algo reaches it untouched (same pointer)");
    CHECK_EQ(skinnylt_forwarded_for("caller-algo"), any ? 0 : 1, "forwarded_for(caller-algo)");
    CHECK_EQ(skinnylt_forwarded_for("no-gpu"), any ? 1 : 0, "forwarded_for(no-gpu)");

    hipblasLtMatmulAlgo_t own = own_algo();
    CHECK_EQ(MATMUL(&own), 0, "matmul with skinnylt's algo");
    CHECK_EQ(algo_seen(), 0, "skinnylt's algo reaches the real library as NULL");
    CHECK_EQ(MATMUL(NULL), 0, "matmul with no algo");
    CHECK_EQ(algo_seen(), 0, "no algo stays NULL");
    CHECK_EQ(skinnylt_forwarded_for("no-gpu"), any ? 3 : 2, "own and NULL algos are routed (no GPU here)");

    /* Disabled: every call is the real library's, reason "disabled". */
    skinnylt_set_enabled(0);
    CHECK_EQ(MATMUL(&results[0].algo), 0, "disabled matmul");
    CHECK_EQ(skinnylt_forwarded_for("disabled"), 1, "forwarded_for(disabled)");
    skinnylt_set_enabled(1);

    skinnylt_counters ctr = {0, 0};
    CHECK_EQ(skinnylt_get_counters(&ctr), 0, "counters");
    CHECK_EQ(ctr.forwarded, 4, "counters.forwarded");
    CHECK_EQ(S.calls_to("hipblasLtMatmul"), 4, "every matmul reached the stub");
    hipblasLtMatmulPreferenceDestroy(p);
    hipblasLtMatrixLayoutDestroy(a);
    hipblasLtMatrixLayoutDestroy(b);
    hipblasLtMatrixLayoutDestroy(c);
    hipblasLtMatmulDescDestroy(d);
    hipblasLtDestroy(h);
    return check_summary(any ? "algo (SKINNYLT_ALGO=any)" : "algo");
}
