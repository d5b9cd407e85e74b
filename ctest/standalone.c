/*
 * Standalone mode (SKINNYLT_STANDALONE=1, no real hipBLASLt): skinnylt is the
 * library. Descriptor objects keep their attributes, argument checks return the
 * statuses hipBLASLt returns, and what skinnylt cannot run (no GPU here, matrix
 * transforms, the newer and ext-op functions) is HIPBLAS_STATUS_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hipblaslt_abi.h"
#include "skinnylt.h"

#define FAKE(x) ((void *)(uintptr_t)(x))

/* Reads attribute `attr` of `obj` as a T; checks status 0, value and size written. */
#define CHECK_GET(fn, obj, attr, T, want, label)                               \
    do {                                                                       \
        T v_;                                                                  \
        size_t w_ = 0;                                                         \
        memset(&v_, 0xEE, sizeof v_);                                          \
        CHECK_EQ(fn(obj, attr, &v_, sizeof v_, &w_), 0, label " (get status)"); \
        CHECK_EQ(v_, want, label);                                             \
        CHECK_EQ(w_, sizeof(T), label " (size written)");                      \
    } while (0)

/* Sets attribute `attr` of `obj` to `value` as a T; checks status 0. */
#define CHECK_SET(fn, obj, attr, T, value, label)                         \
    do {                                                                  \
        T v_ = (value);                                                   \
        CHECK_EQ(fn(obj, attr, &v_, sizeof v_), 0, label " (set status)"); \
    } while (0)

static void test_version_and_arch(hipblasLtHandle_t h) {
    int v = 0;
    CHECK_EQ(hipblasLtGetVersion(h, &v), 0, "GetVersion");
    CHECK_EQ(v, 100200, "GetVersion value");
    CHECK_EQ(hipblasLtGetVersion(NULL, &v), HIPBLAS_STATUS_NOT_INITIALIZED, "GetVersion(NULL handle)");

    char *arch = NULL;
    CHECK_EQ(hipblasLtGetArchName(&arch), 0, "GetArchName");
    CHECK(arch && arch[0], "GetArchName returned an empty name");
    free(arch); /* the caller owns a malloc'd string */
    CHECK_EQ(hipblasLtGetArchName(NULL), HIPBLAS_STATUS_INVALID_VALUE, "GetArchName(NULL)");

    char rev[128] = "";
    CHECK_EQ(hipblasLtGetGitRevision(h, rev), 0, "GetGitRevision");
    CHECK(strncmp(rev, "skinnylt-", 9) == 0, "GetGitRevision wrote \"%s\"", rev);
}

static void test_layout(void) {
    hipblasLtMatrixLayout_t l = NULL;
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&l, HIP_R_16BF, 4096, 1024, 4096), 0, "LayoutCreate");
    CHECK(l != NULL, "LayoutCreate wrote NULL");
    /* Create-time values and defaults. */
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_TYPE, int32_t, HIP_R_16BF, "layout TYPE");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_ROWS, uint64_t, 4096, "layout ROWS");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_COLS, uint64_t, 1024, "layout COLS");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_LD, int64_t, 4096, "layout LD");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_ORDER, int32_t, 0, "layout ORDER default");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t, 1, "layout BATCH_COUNT default");
    /* Set / get round trip. */
    CHECK_SET(hipblasLtMatrixLayoutSetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_TYPE, int32_t, HIP_R_16F, "layout TYPE");
    CHECK_SET(hipblasLtMatrixLayoutSetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_ORDER, int32_t, 1, "layout ORDER");
    CHECK_SET(hipblasLtMatrixLayoutSetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_ROWS, uint64_t, 77, "layout ROWS");
    CHECK_SET(hipblasLtMatrixLayoutSetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_COLS, uint64_t, 88, "layout COLS");
    CHECK_SET(hipblasLtMatrixLayoutSetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_LD, int64_t, 99, "layout LD");
    CHECK_SET(hipblasLtMatrixLayoutSetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t, 3, "layout BATCH_COUNT");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_TYPE, int32_t, HIP_R_16F, "layout TYPE after set");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_ORDER, int32_t, 1, "layout ORDER after set");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_ROWS, uint64_t, 77, "layout ROWS after set");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_COLS, uint64_t, 88, "layout COLS after set");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_LD, int64_t, 99, "layout LD after set");
    CHECK_GET(hipblasLtMatrixLayoutGetAttribute, l, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t, 3, "layout BATCH_COUNT after set");
    /* Size query: size 0 reports the payload size. */
    size_t written = 0;
    CHECK_EQ(hipblasLtMatrixLayoutGetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_ROWS, NULL, 0, &written), 0, "layout size query");
    CHECK_EQ(written, 8, "layout ROWS size");
    /* Argument errors. */
    uint64_t big = 5;
    uint32_t small = 5;
    CHECK_EQ(hipblasLtMatrixLayoutSetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_ROWS, NULL, 8), HIPBLAS_STATUS_INVALID_VALUE, "layout set NULL buf");
    CHECK_EQ(hipblasLtMatrixLayoutSetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_ROWS, &small, sizeof small), HIPBLAS_STATUS_INVALID_VALUE, "layout set size too small");
    CHECK_EQ(hipblasLtMatrixLayoutSetAttribute(l, 999, &big, sizeof big), HIPBLAS_STATUS_INVALID_VALUE, "layout set unknown attribute");
    CHECK_EQ(hipblasLtMatrixLayoutGetAttribute(l, 999, &big, sizeof big, &written), HIPBLAS_STATUS_INVALID_VALUE, "layout get unknown attribute");
    CHECK_EQ(hipblasLtMatrixLayoutGetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_ROWS, &small, sizeof small, &written), HIPBLAS_STATUS_INVALID_VALUE, "layout get size too small");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(NULL, HIP_R_16BF, 1, 1, 1), HIPBLAS_STATUS_INVALID_VALUE, "LayoutCreate(NULL)");
    CHECK_EQ(hipblasLtMatrixLayoutDestroy(l), 0, "LayoutDestroy");
}

static void test_desc(void) {
    hipblasLtMatmulDesc_t d = NULL;
    CHECK_EQ(hipblasLtMatmulDescCreate(&d, HIPBLAS_COMPUTE_32F, HIP_R_32F), 0, "DescCreate");
    CHECK(d != NULL, "DescCreate wrote NULL");
    CHECK_GET(hipblasLtMatmulDescGetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSA, int32_t, HIPBLAS_OP_N, "desc TRANSA default");
    CHECK_GET(hipblasLtMatmulDescGetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSB, int32_t, HIPBLAS_OP_N, "desc TRANSB default");
    CHECK_GET(hipblasLtMatmulDescGetAttribute, d, HIPBLASLT_MATMUL_DESC_EPILOGUE, int32_t, HIPBLASLT_EPILOGUE_DEFAULT, "desc EPILOGUE default");
    CHECK_SET(hipblasLtMatmulDescSetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSA, int32_t, HIPBLAS_OP_T, "desc TRANSA");
    CHECK_SET(hipblasLtMatmulDescSetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSB, int32_t, HIPBLAS_OP_N, "desc TRANSB");
    CHECK_SET(hipblasLtMatmulDescSetAttribute, d, HIPBLASLT_MATMUL_DESC_EPILOGUE, int32_t, HIPBLASLT_EPILOGUE_BIAS, "desc EPILOGUE");
    CHECK_SET(hipblasLtMatmulDescSetAttribute, d, HIPBLASLT_MATMUL_DESC_BIAS_POINTER, uint64_t, 0xb1a5000, "desc BIAS_POINTER");
    CHECK_GET(hipblasLtMatmulDescGetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSA, int32_t, HIPBLAS_OP_T, "desc TRANSA after set");
    CHECK_GET(hipblasLtMatmulDescGetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSB, int32_t, HIPBLAS_OP_N, "desc TRANSB after set");
    CHECK_GET(hipblasLtMatmulDescGetAttribute, d, HIPBLASLT_MATMUL_DESC_EPILOGUE, int32_t, HIPBLASLT_EPILOGUE_BIAS, "desc EPILOGUE after set");
    CHECK_GET(hipblasLtMatmulDescGetAttribute, d, HIPBLASLT_MATMUL_DESC_BIAS_POINTER, uint64_t, 0xb1a5000, "desc BIAS_POINTER after set");
    uint64_t big = 1;
    uint32_t small = 1;
    size_t written = 0;
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSA, NULL, 4), HIPBLAS_STATUS_INVALID_VALUE, "desc set NULL buf");
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_BIAS_POINTER, &small, sizeof small), HIPBLAS_STATUS_INVALID_VALUE, "desc set size too small");
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, 999, &big, sizeof big), HIPBLAS_STATUS_INVALID_VALUE, "desc set unknown attribute");
    CHECK_EQ(hipblasLtMatmulDescGetAttribute(d, 999, &big, sizeof big, &written), HIPBLAS_STATUS_INVALID_VALUE, "desc get unknown attribute");
    CHECK_EQ(hipblasLtMatmulDescGetAttribute(d, HIPBLASLT_MATMUL_DESC_BIAS_POINTER, &small, sizeof small, &written), HIPBLAS_STATUS_INVALID_VALUE, "desc get size too small");
    CHECK_EQ(hipblasLtMatmulDescCreate(NULL, HIPBLAS_COMPUTE_32F, HIP_R_32F), HIPBLAS_STATUS_INVALID_VALUE, "DescCreate(NULL)");
    CHECK_EQ(hipblasLtMatmulDescDestroy(d), 0, "DescDestroy");
}

static void test_pref(void) {
    hipblasLtMatmulPreference_t p = NULL;
    CHECK_EQ(hipblasLtMatmulPreferenceCreate(&p), 0, "PreferenceCreate");
    CHECK(p != NULL, "PreferenceCreate wrote NULL");
    CHECK_SET(hipblasLtMatmulPreferenceSetAttribute, p, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t, 1ull << 35, "pref MAX_WORKSPACE_BYTES");
    CHECK_GET(hipblasLtMatmulPreferenceGetAttribute, p, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t, 1ull << 35, "pref MAX_WORKSPACE_BYTES after set");
    CHECK_GET(hipblasLtMatmulPreferenceGetAttribute, p, HIPBLASLT_MATMUL_PREF_SEARCH_MODE, int32_t, 0, "pref SEARCH_MODE default");
    uint64_t v = 1;
    CHECK_EQ(hipblasLtMatmulPreferenceSetAttribute(p, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, NULL, 8), HIPBLAS_STATUS_INVALID_VALUE, "pref set NULL buf");
    /* hipBLASLt 0.11 rejects only size 0 for preferences; a 4-byte
       payload is taken as the value it holds (PyTorch passes a size_t). */
    CHECK_EQ(hipblasLtMatmulPreferenceSetAttribute(p, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &v, 0), HIPBLAS_STATUS_INVALID_VALUE, "pref set size 0");
    uint32_t small = 4096;
    CHECK_EQ(hipblasLtMatmulPreferenceSetAttribute(p, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &small, sizeof small), 0, "pref set 4-byte payload");
    CHECK_GET(hipblasLtMatmulPreferenceGetAttribute, p, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t, 4096, "pref MAX_WORKSPACE_BYTES from a 4-byte payload");
    CHECK_EQ(hipblasLtMatmulPreferenceSetAttribute(p, 999, &v, sizeof v), HIPBLAS_STATUS_INVALID_VALUE, "pref set unknown attribute");
    CHECK_EQ(hipblasLtMatmulPreferenceDestroy(p), 0, "PreferenceDestroy");
}

/* A PyTorch F.linear(x[4,4096], W[1024,4096]) in bf16, as hipBLASLt sees it. */
static void test_linear(hipblasLtHandle_t h, int have_gpu) {
    const uint64_t M = 4, N = 1024, K = 4096;
    hipblasLtMatmulDesc_t d = NULL;
    hipblasLtMatrixLayout_t a = NULL, b = NULL, c = NULL, dd = NULL;
    hipblasLtMatmulPreference_t p = NULL;
    CHECK_EQ(hipblasLtMatmulDescCreate(&d, HIPBLAS_COMPUTE_32F, HIP_R_32F), 0, "linear DescCreate");
    CHECK_SET(hipblasLtMatmulDescSetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSA, int32_t, HIPBLAS_OP_T, "linear TRANSA");
    CHECK_SET(hipblasLtMatmulDescSetAttribute, d, HIPBLASLT_MATMUL_DESC_TRANSB, int32_t, HIPBLAS_OP_N, "linear TRANSB");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&a, HIP_R_16BF, K, N, (int64_t)K), 0, "linear A");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&b, HIP_R_16BF, K, M, (int64_t)K), 0, "linear B");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&c, HIP_R_16BF, N, M, (int64_t)N), 0, "linear C");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&dd, HIP_R_16BF, N, M, (int64_t)N), 0, "linear D");
    CHECK_EQ(hipblasLtMatmulPreferenceCreate(&p), 0, "linear PreferenceCreate");
    CHECK_SET(hipblasLtMatmulPreferenceSetAttribute, p, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t, 1u << 22, "linear workspace");

    hipblasLtMatmulHeuristicResult_t results[2];
    int returned = 99;
    memset(results, 0, sizeof results);
    CHECK_EQ(hipblasLtMatmulAlgoGetHeuristic(h, d, a, b, c, dd, p, 0, results, &returned),
             HIPBLAS_STATUS_INVALID_VALUE, "heuristic requestedAlgoCount 0");

    const float alpha = 1.0f, beta = 0.0f;
    void *W = FAKE(0x10000000), *x = FAKE(0x20000000), *y = FAKE(0x30000000);
    if (!have_gpu) {
        returned = 99;
        CHECK_EQ(hipblasLtMatmulAlgoGetHeuristic(h, d, a, b, c, dd, p, 1, results, &returned),
                 HIPBLAS_STATUS_NOT_SUPPORTED, "heuristic without GPU");
        CHECK_EQ(returned, 0, "heuristic returnAlgoCount without GPU");
        int64_t before = skinnylt_forwarded_for("no-gpu");
        CHECK_EQ(hipblasLtMatmul(h, d, &alpha, W, a, x, b, &beta, y, c, y, dd, NULL, NULL, 0, NULL),
                 HIPBLAS_STATUS_NOT_SUPPORTED, "Matmul without GPU");
        CHECK_EQ(skinnylt_forwarded_for("no-gpu"), before + 1, "forwarded_for(no-gpu) after Matmul");
    } else {
        printf("a usable GPU is present: no-GPU checks skipped\n");
    }

    int64_t nulls = skinnylt_forwarded_for("null-argument");
    CHECK_EQ(hipblasLtMatmul(NULL, d, &alpha, W, a, x, b, &beta, y, c, y, dd, NULL, NULL, 0, NULL),
             HIPBLAS_STATUS_NOT_INITIALIZED, "Matmul(NULL handle)");
    CHECK_EQ(hipblasLtMatmul(h, d, NULL, W, a, x, b, &beta, y, c, y, dd, NULL, NULL, 0, NULL),
             HIPBLAS_STATUS_INVALID_VALUE, "Matmul(NULL alpha)");
    CHECK_EQ(skinnylt_forwarded_for("null-argument"), nulls + 2, "forwarded_for(null-argument)");

    CHECK_EQ(hipblasLtMatmulPreferenceDestroy(p), 0, "linear PreferenceDestroy");
    CHECK_EQ(hipblasLtMatrixLayoutDestroy(dd), 0, "linear LayoutDestroy D");
    CHECK_EQ(hipblasLtMatrixLayoutDestroy(c), 0, "linear LayoutDestroy C");
    CHECK_EQ(hipblasLtMatrixLayoutDestroy(b), 0, "linear LayoutDestroy B");
    CHECK_EQ(hipblasLtMatrixLayoutDestroy(a), 0, "linear LayoutDestroy A");
    CHECK_EQ(hipblasLtMatmulDescDestroy(d), 0, "linear DescDestroy");
}

/* Matrix transforms, newer and ext-op functions: NOT_SUPPORTED without a real library. */
static void test_not_supported(hipblasLtHandle_t h) {
    const int NS = HIPBLAS_STATUS_NOT_SUPPORTED;
    hipblasLtMatrixTransformDesc_t t = NULL;
    uint64_t buf = 0;
    size_t written = 0;
    int32_t i32 = 0;
    uint32_t u32 = 0;
    float f = 1.0f;
    void *s = FAKE(0x5000), *p = FAKE(0x6000);
    CHECK_EQ(hipblasLtMatrixTransformDescCreate(&t, HIP_R_32F), NS, "TransformDescCreate");
    CHECK_EQ(hipblasLtMatrixTransformDescDestroy(FAKE(0x7000)), NS, "TransformDescDestroy");
    CHECK_EQ(hipblasLtMatrixTransformDescSetAttribute(FAKE(0x7000), 0, &buf, 8), NS, "TransformDescSetAttribute");
    CHECK_EQ(hipblasLtMatrixTransformDescGetAttribute(FAKE(0x7000), 0, &buf, 8, &written), NS, "TransformDescGetAttribute");
    CHECK_EQ(hipblasLtMatrixTransform(h, FAKE(0x7000), &f, p, FAKE(0x8000), &f, p, FAKE(0x8000), p, FAKE(0x8000), s), NS, "MatrixTransform");
    CHECK_EQ(hipblasLtSetSmCountTarget(h, 8), NS, "SetSmCountTarget");
    CHECK_EQ(hipblasLtGetSmCountTarget(h, &i32), NS, "GetSmCountTarget");
    CHECK_EQ(hipblasLtSetUniformSummationOrder(h, 1), NS, "SetUniformSummationOrder");
    CHECK_EQ(hipblasLtGetUniformSummationOrder(h, &i32), NS, "GetUniformSummationOrder");
    CHECK_EQ(hipblasLtCheckNumericsDrain(h, &u32), NS, "CheckNumericsDrain");
    hipblasLtFusedEpilogueDescriptor_t fe = NULL;
    hipblasLtFusedEpilogueRMSNormDescriptor_t rms = NULL;
    CHECK_EQ(hipblasLtFusedEpilogueCreate(&fe), NS, "FusedEpilogueCreate");
    CHECK_EQ(hipblasLtFusedEpilogueAdd(FAKE(0x9000), 1), NS, "FusedEpilogueAdd");
    CHECK_EQ(hipblasLtFusedEpilogueSetAttribute(FAKE(0x9000), 0, &buf, 8), NS, "FusedEpilogueSetAttribute");
    CHECK_EQ(hipblasLtFusedEpilogueDestroy(FAKE(0x9000)), NS, "FusedEpilogueDestroy");
    CHECK_EQ(hipblasLtFusedEpilogueRMSNormDescriptorCreate(&rms), NS, "RMSNormDescriptorCreate");
    CHECK_EQ(hipblasLtFusedEpilogueRMSNormDescriptorSetBuffer(FAKE(0xa000), p, 64), NS, "RMSNormDescriptorSetBuffer");
    CHECK_EQ(hipblasLtFusedEpilogueRMSNormDescriptorDestroy(FAKE(0xa000)), NS, "RMSNormDescriptorDestroy");
    CHECK_EQ(hipblasltExtSoftmax(HIP_R_32F, 4, 4, 1, p, p, s), NS, "ExtSoftmax");
    CHECK_EQ(hipblasltExtLayerNorm(HIP_R_32F, p, p, p, p, 4, 4, 1e-5f, p, p, s), NS, "ExtLayerNorm");
    CHECK_EQ(hipblasltExtAMax(HIP_R_32F, HIP_R_32F, p, p, 4, 4, s), NS, "ExtAMax");
    CHECK_EQ(hipblasltExtAMaxWithScale(HIP_R_32F, HIP_R_32F, HIP_R_32F, p, p, p, p, 4, 4, s), NS, "ExtAMaxWithScale");
}

int main(void) {
    CHECK_EQ(skinnylt_has_real_library(), 0, "skinnylt_has_real_library in standalone mode");
    int have_gpu = skinnylt_preload(0) == 0;

    hipblasLtHandle_t h = NULL;
    CHECK_EQ(hipblasLtCreate(NULL), HIPBLAS_STATUS_INVALID_VALUE, "Create(NULL)");
    CHECK_EQ(hipblasLtCreate(&h), 0, "Create");
    CHECK(h != NULL, "Create wrote a NULL handle");

    test_version_and_arch(h);
    test_layout();
    test_desc();
    test_pref();
    test_linear(h, have_gpu);
    test_not_supported(h);

    CHECK_EQ(hipblasLtDestroy(h), 0, "Destroy");
    CHECK_EQ(hipblasLtDestroy(NULL), HIPBLAS_STATUS_NOT_INITIALIZED, "Destroy(NULL)");
    return check_summary("standalone");
}
