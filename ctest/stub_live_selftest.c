/*
 * The live stub checks what it claims to (no skinnylt here: the client links the
 * stub itself): objects round-trip their attributes, a destroyed, unknown,
 * wrong-kind or NULL object is refused and counted as a dead call without being
 * touched, a double Destroy frees nothing twice, and the calls are counted per
 * function. The stress test relies on each of these.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hipblaslt_abi.h"
#include "stub/stub_live.h"

#define DEAD STUB_LIVE_DEAD_STATUS

int main(void) {
    stub_live_reset();
    hipblasLtHandle_t h = NULL;
    hipblasLtMatrixLayout_t l = NULL;
    hipblasLtMatmulDesc_t d = NULL;
    hipblasLtMatmulPreference_t p = NULL;
    CHECK_EQ(hipblasLtCreate(&h), 0, "Create");
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&l, HIP_R_16BF, 4096, 8, 4096), 0, "LayoutCreate");
    CHECK_EQ(hipblasLtMatmulDescCreate(&d, HIPBLAS_COMPUTE_32F, HIP_R_32F), 0, "DescCreate");
    CHECK_EQ(hipblasLtMatmulPreferenceCreate(&p), 0, "PreferenceCreate");
    CHECK_EQ(stub_live_objects(), 4, "live objects");

    /* Attributes: created values, and what was set, read back. */
    uint64_t rows = 0;
    size_t written = 0;
    CHECK_EQ(hipblasLtMatrixLayoutGetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &written), 0,
             "get ROWS");
    CHECK_EQ(rows, 4096, "ROWS");
    CHECK_EQ(written, 8, "ROWS size");
    int32_t t = HIPBLAS_OP_T, back = 0;
    CHECK_EQ(hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSA, &t, SIZE_MAX), 0, "set TRANSA");
    CHECK_EQ(hipblasLtMatmulDescGetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSA, &back, sizeof back, &written), 0,
             "get TRANSA");
    CHECK_EQ(back, HIPBLAS_OP_T, "TRANSA");
    CHECK_EQ(stub_dead_calls(), 0, "no dead calls yet");

    /* A wrong kind, NULL, an unknown pointer: refused and counted. */
    CHECK_EQ(hipblasLtMatrixLayoutSetAttribute((hipblasLtMatrixLayout_t)d, HIPBLASLT_MATRIX_LAYOUT_ROWS, &rows,
                                               sizeof rows),
             DEAD, "desc used as a layout");
    CHECK_EQ(hipblasLtDestroy(NULL), DEAD, "Destroy(NULL)");
    int stack_object;
    CHECK_EQ(hipblasLtMatmulPreferenceDestroy((hipblasLtMatmulPreference_t)(void *)&stack_object), DEAD,
             "unknown pointer");
    CHECK_EQ(stub_dead_calls(), 3, "dead calls after wrong kind, NULL, unknown");

    /* Destroyed objects: every later use is refused, a second Destroy frees nothing. */
    CHECK_EQ(hipblasLtMatrixLayoutDestroy(l), 0, "LayoutDestroy");
    CHECK_EQ(hipblasLtMatrixLayoutDestroy(l), DEAD, "LayoutDestroy twice");
    float one = 1.0f, zero = 0.0f;
    CHECK_EQ(hipblasLtMatmul(h, d, &one, NULL, l, NULL, l, &zero, NULL, l, NULL, l, NULL, NULL, 0, NULL), DEAD,
             "Matmul on a destroyed layout");
    hipblasLtMatmulHeuristicResult_t res[4];
    int n = -1;
    CHECK_EQ(hipblasLtMatmulAlgoGetHeuristic(h, d, l, l, l, l, p, 4, res, &n), DEAD, "heuristic on a destroyed layout");
    /* Matmul and heuristic each name the dead layout four times. */
    CHECK_EQ(stub_dead_calls(), 3 + 1 + 4 + 4, "dead calls after the destroyed layout");
    char report[2048];
    CHECK(stub_live_dead_report(report, sizeof report) == 8, "report holds the first 8 dead calls");
    CHECK(strstr(report, "hipblasLtMatrixLayoutSetAttribute: layout") != NULL, "report names the call: %s", report);

    /* Live objects still work; counts per function. */
    CHECK_EQ(hipblasLtMatmulAlgoGetHeuristic(h, d, NULL, NULL, NULL, NULL, p, 4, res, &n), DEAD, "NULL layouts");
    hipblasLtMatrixLayout_t l2 = NULL;
    CHECK_EQ(hipblasLtMatrixLayoutCreate(&l2, HIP_R_16BF, 64, 8, 64), 0, "LayoutCreate again");
    CHECK_EQ(hipblasLtMatmulAlgoGetHeuristic(h, d, l2, l2, l2, l2, p, 4, res, &n), 0, "heuristic");
    CHECK_EQ(n, STUB_LIVE_MAX_HEURISTICS, "returnAlgoCount");
    CHECK_EQ(stub_live_calls_to("hipblasLtMatrixLayoutCreate"), 2, "LayoutCreate count");
    CHECK_EQ(stub_live_calls_to("hipblasLtMatmulAlgoGetHeuristic"), 3, "heuristic count");
    CHECK_EQ(stub_live_calls_to("hipblasLtMatrixLayoutDestroy"), 2, "LayoutDestroy count");
    CHECK_EQ(stub_live_calls_to("hipblasLtNoSuchFunction"), -1, "unknown name");

    CHECK_EQ(hipblasLtMatrixLayoutDestroy(l2), 0, "LayoutDestroy");
    CHECK_EQ(hipblasLtMatmulPreferenceDestroy(p), 0, "PreferenceDestroy");
    CHECK_EQ(hipblasLtMatmulDescDestroy(d), 0, "DescDestroy");
    CHECK_EQ(hipblasLtDestroy(h), 0, "Destroy");
    CHECK_EQ(stub_live_objects(), 0, "live objects at the end");
    stub_live_reset();
    CHECK_EQ(stub_dead_calls(), 0, "reset");
    return check_summary("stub_live_selftest");
}
