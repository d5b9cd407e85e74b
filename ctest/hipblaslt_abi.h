/*
 * Minimal C declarations of the hipBLASLt C API, written for skinnylt's test
 * fixtures (so they build without ROCm). Types follow hipblaslt.h on x86-64:
 * enums cross the ABI as int, handles are void*, descriptors are pointers to
 * opaque structs. All 40 functions skinnylt exports are declared here, grouped as
 * in src/real/functions.rs: 24 core, 12 newer (develop only), 4 ext-op.
 */
#ifndef SKINNYLT_CTEST_HIPBLASLT_ABI_H
#define SKINNYLT_CTEST_HIPBLASLT_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- scalar types */

typedef int hipblasStatus_t;
typedef int hipDataType;
typedef int hipblasComputeType_t;
typedef int hipblasOperation_t;
typedef int hipblasLtMatrixLayoutAttribute_t;
typedef int hipblasLtMatmulDescAttributes_t;
typedef int hipblasLtMatmulPreferenceAttributes_t;
typedef int hipblasLtMatrixTransformDescAttributes_t;
typedef int hipblasLtFuseableEpilogue_t;
typedef int hipblasLtFusedEpilogueAttribute_t;
typedef void *hipStream_t;

/* ---------------------------------------------------------------- handles */

typedef void *hipblasLtHandle_t;
typedef struct hipblasLtMatmulDescOpaque_st *hipblasLtMatmulDesc_t;
typedef struct hipblasLtMatrixLayoutOpaque_st *hipblasLtMatrixLayout_t;
typedef struct hipblasLtMatmulPreferenceOpaque_st *hipblasLtMatmulPreference_t;
typedef struct hipblasLtMatrixTransformDescOpaque_st *hipblasLtMatrixTransformDesc_t;
typedef struct hipblasLtFusedEpilogueOpaque_st *hipblasLtFusedEpilogueDescriptor_t;
typedef struct hipblasLtRMSNormOpaque_st *hipblasLtFusedEpilogueRMSNormDescriptor_t;

/* ---------------------------------------------------------------- structs */

typedef struct hipblasLtMatmulAlgo_st {
    uint8_t data[16];
    size_t max_workspace_bytes;
} hipblasLtMatmulAlgo_t; /* 24 bytes */

typedef struct hipblasLtMatmulHeuristicResult_st {
    hipblasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    hipblasStatus_t state;
    float wavesCount;
    int reserved[4];
} hipblasLtMatmulHeuristicResult_t; /* 56 bytes */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(hipblasLtMatmulAlgo_t) == 24, "hipblasLtMatmulAlgo_t is 24 bytes");
_Static_assert(sizeof(hipblasLtMatmulHeuristicResult_t) == 56, "heuristic result is 56 bytes");
_Static_assert(offsetof(hipblasLtMatmulHeuristicResult_t, state) == 32, "state at 32");
#endif

/* ---------------------------------------------------------------- enum values */

enum {
    HIPBLAS_STATUS_SUCCESS = 0,
    HIPBLAS_STATUS_NOT_INITIALIZED = 1,
    HIPBLAS_STATUS_ALLOC_FAILED = 2,
    HIPBLAS_STATUS_INVALID_VALUE = 3,
    HIPBLAS_STATUS_INTERNAL_ERROR = 6,
    HIPBLAS_STATUS_NOT_SUPPORTED = 7
};

enum { HIPBLAS_OP_N = 111, HIPBLAS_OP_T = 112, HIPBLAS_OP_C = 113 };
enum { HIP_R_32F = 0, HIP_R_16F = 2, HIP_R_16BF = 14 };
enum { HIPBLAS_COMPUTE_32F = 2 };
enum { HIPBLASLT_EPILOGUE_DEFAULT = 1, HIPBLASLT_EPILOGUE_BIAS = 4 };

enum {
    HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 0,
    HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 1,
    HIPBLASLT_MATRIX_LAYOUT_TYPE = 2,
    HIPBLASLT_MATRIX_LAYOUT_ORDER = 3,
    HIPBLASLT_MATRIX_LAYOUT_ROWS = 4,
    HIPBLASLT_MATRIX_LAYOUT_COLS = 5,
    HIPBLASLT_MATRIX_LAYOUT_LD = 6
};

enum {
    HIPBLASLT_MATMUL_DESC_TRANSA = 0,
    HIPBLASLT_MATMUL_DESC_TRANSB = 1,
    HIPBLASLT_MATMUL_DESC_EPILOGUE = 2,
    HIPBLASLT_MATMUL_DESC_BIAS_POINTER = 3
};

enum {
    HIPBLASLT_MATMUL_PREF_SEARCH_MODE = 0,
    HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1
};

/* ---------------------------------------------------------------- core (24) */

hipblasStatus_t hipblasLtGetVersion(hipblasLtHandle_t handle, int *version);
hipblasStatus_t hipblasLtGetGitRevision(hipblasLtHandle_t handle, char *rev);
hipblasStatus_t hipblasLtGetArchName(char **archName);
hipblasStatus_t hipblasLtCreate(hipblasLtHandle_t *handle);
hipblasStatus_t hipblasLtDestroy(const hipblasLtHandle_t handle);
hipblasStatus_t hipblasLtMatrixLayoutCreate(hipblasLtMatrixLayout_t *matLayout, hipDataType type,
                                            uint64_t rows, uint64_t cols, int64_t ld);
hipblasStatus_t hipblasLtMatrixLayoutDestroy(const hipblasLtMatrixLayout_t matLayout);
hipblasStatus_t hipblasLtMatrixLayoutSetAttribute(hipblasLtMatrixLayout_t matLayout,
                                                  hipblasLtMatrixLayoutAttribute_t attr,
                                                  const void *buf, size_t sizeInBytes);
hipblasStatus_t hipblasLtMatrixLayoutGetAttribute(hipblasLtMatrixLayout_t matLayout,
                                                  hipblasLtMatrixLayoutAttribute_t attr, void *buf,
                                                  size_t sizeInBytes, size_t *sizeWritten);
hipblasStatus_t hipblasLtMatmulDescCreate(hipblasLtMatmulDesc_t *matmulDesc,
                                          hipblasComputeType_t computeType, hipDataType scaleType);
hipblasStatus_t hipblasLtMatmulDescDestroy(const hipblasLtMatmulDesc_t matmulDesc);
hipblasStatus_t hipblasLtMatmulDescSetAttribute(hipblasLtMatmulDesc_t matmulDesc,
                                                hipblasLtMatmulDescAttributes_t attr,
                                                const void *buf, size_t sizeInBytes);
hipblasStatus_t hipblasLtMatmulDescGetAttribute(hipblasLtMatmulDesc_t matmulDesc,
                                                hipblasLtMatmulDescAttributes_t attr, void *buf,
                                                size_t sizeInBytes, size_t *sizeWritten);
hipblasStatus_t hipblasLtMatmulPreferenceCreate(hipblasLtMatmulPreference_t *pref);
hipblasStatus_t hipblasLtMatmulPreferenceDestroy(const hipblasLtMatmulPreference_t pref);
hipblasStatus_t hipblasLtMatmulPreferenceSetAttribute(hipblasLtMatmulPreference_t pref,
                                                      hipblasLtMatmulPreferenceAttributes_t attr,
                                                      const void *buf, size_t sizeInBytes);
hipblasStatus_t hipblasLtMatmulPreferenceGetAttribute(hipblasLtMatmulPreference_t pref,
                                                      hipblasLtMatmulPreferenceAttributes_t attr,
                                                      void *buf, size_t sizeInBytes,
                                                      size_t *sizeWritten);
hipblasStatus_t hipblasLtMatmulAlgoGetHeuristic(
    hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc, hipblasLtMatrixLayout_t Adesc,
    hipblasLtMatrixLayout_t Bdesc, hipblasLtMatrixLayout_t Cdesc, hipblasLtMatrixLayout_t Ddesc,
    hipblasLtMatmulPreference_t pref, int requestedAlgoCount,
    hipblasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount);
hipblasStatus_t hipblasLtMatmul(hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc,
                                const void *alpha, const void *A, hipblasLtMatrixLayout_t Adesc,
                                const void *B, hipblasLtMatrixLayout_t Bdesc, const void *beta,
                                const void *C, hipblasLtMatrixLayout_t Cdesc, void *D,
                                hipblasLtMatrixLayout_t Ddesc, const hipblasLtMatmulAlgo_t *algo,
                                void *workspace, size_t workspaceSizeInBytes, hipStream_t stream);
hipblasStatus_t hipblasLtMatrixTransformDescCreate(hipblasLtMatrixTransformDesc_t *transformDesc,
                                                   hipDataType scaleType);
hipblasStatus_t hipblasLtMatrixTransformDescDestroy(hipblasLtMatrixTransformDesc_t transformDesc);
hipblasStatus_t hipblasLtMatrixTransformDescSetAttribute(
    hipblasLtMatrixTransformDesc_t transformDesc, hipblasLtMatrixTransformDescAttributes_t attr,
    const void *buf, size_t sizeInBytes);
hipblasStatus_t hipblasLtMatrixTransformDescGetAttribute(
    hipblasLtMatrixTransformDesc_t transformDesc, hipblasLtMatrixTransformDescAttributes_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten);
hipblasStatus_t hipblasLtMatrixTransform(hipblasLtHandle_t lightHandle,
                                         hipblasLtMatrixTransformDesc_t transformDesc,
                                         const void *alpha, const void *A,
                                         hipblasLtMatrixLayout_t Adesc, const void *beta,
                                         const void *B, hipblasLtMatrixLayout_t Bdesc, void *C,
                                         hipblasLtMatrixLayout_t Cdesc, hipStream_t stream);

/* ---------------------------------------------------------------- newer (12) */

hipblasStatus_t hipblasLtSetSmCountTarget(hipblasLtHandle_t handle, int32_t count);
hipblasStatus_t hipblasLtGetSmCountTarget(hipblasLtHandle_t handle, int32_t *count);
hipblasStatus_t hipblasLtSetUniformSummationOrder(hipblasLtHandle_t handle, int32_t enable);
hipblasStatus_t hipblasLtGetUniformSummationOrder(hipblasLtHandle_t handle, int32_t *enable);
hipblasStatus_t hipblasLtCheckNumericsDrain(hipblasLtHandle_t handle, uint32_t *first_nan_call_id);
hipblasStatus_t hipblasLtFusedEpilogueCreate(hipblasLtFusedEpilogueDescriptor_t *desc);
hipblasStatus_t hipblasLtFusedEpilogueAdd(hipblasLtFusedEpilogueDescriptor_t desc,
                                          hipblasLtFuseableEpilogue_t epilogue);
hipblasStatus_t hipblasLtFusedEpilogueSetAttribute(hipblasLtFusedEpilogueDescriptor_t desc,
                                                   hipblasLtFusedEpilogueAttribute_t attr,
                                                   const void *value, size_t size);
hipblasStatus_t hipblasLtFusedEpilogueDestroy(hipblasLtFusedEpilogueDescriptor_t desc);
hipblasStatus_t hipblasLtFusedEpilogueRMSNormDescriptorCreate(
    hipblasLtFusedEpilogueRMSNormDescriptor_t *desc);
hipblasStatus_t hipblasLtFusedEpilogueRMSNormDescriptorSetBuffer(
    hipblasLtFusedEpilogueRMSNormDescriptor_t desc, void *buffer, size_t size);
hipblasStatus_t hipblasLtFusedEpilogueRMSNormDescriptorDestroy(
    hipblasLtFusedEpilogueRMSNormDescriptor_t desc);

/* ---------------------------------------------------------------- ext-op (4) */

hipblasStatus_t hipblasltExtSoftmax(hipDataType datatype, uint32_t m, uint32_t n, uint32_t dim,
                                    void *output, void *input, hipStream_t stream);
hipblasStatus_t hipblasltExtLayerNorm(hipDataType datatype, void *output, void *mean, void *invvar,
                                      void *input, uint32_t m, uint32_t n, float eps, void *gamma,
                                      void *beta, hipStream_t stream);
hipblasStatus_t hipblasltExtAMax(hipDataType datatype, hipDataType outDatatype, void *output,
                                 void *input, uint32_t m, uint32_t n, hipStream_t stream);
hipblasStatus_t hipblasltExtAMaxWithScale(hipDataType datatype, hipDataType outDatatype,
                                          hipDataType scaleDatatype, void *output, void *outputD,
                                          void *input, void *inputScale, uint32_t m, uint32_t n,
                                          hipStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* SKINNYLT_CTEST_HIPBLASLT_ABI_H */
