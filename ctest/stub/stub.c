/*
 * A stub "real hipBLASLt" (test fixture, built as libhipblaslt.so.1).
 *
 * Every hipBLASLt function records its name and all its arguments (stub.h:
 * STUB_U64) in a global log, writes recognisable fake values to its
 * out-parameters, and returns the status programmed for it with stub_set_status
 * (0 by default). Built with -DSTUB_CORE_ONLY it exports only the 24 functions of
 * every hipBLASLt version, like an older real library. Single-threaded use only.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stub.h"

#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- log and statuses */

#define LOG_CAPACITY 4096

static struct stub_call g_log[LOG_CAPACITY];
static int g_count;
static uint64_t g_next_object = STUB_OBJECT_BASE;

/* Every hipBLASLt name the stub can be asked about (the full list of 40). */
static const char *const g_names[] = {
    "hipblasLtGetVersion", "hipblasLtGetGitRevision", "hipblasLtGetArchName",
    "hipblasLtCreate", "hipblasLtDestroy", "hipblasLtMatrixLayoutCreate",
    "hipblasLtMatrixLayoutDestroy", "hipblasLtMatrixLayoutSetAttribute",
    "hipblasLtMatrixLayoutGetAttribute", "hipblasLtMatmulDescCreate",
    "hipblasLtMatmulDescDestroy", "hipblasLtMatmulDescSetAttribute",
    "hipblasLtMatmulDescGetAttribute", "hipblasLtMatmulPreferenceCreate",
    "hipblasLtMatmulPreferenceDestroy", "hipblasLtMatmulPreferenceSetAttribute",
    "hipblasLtMatmulPreferenceGetAttribute", "hipblasLtMatmulAlgoGetHeuristic",
    "hipblasLtMatmul", "hipblasLtMatrixTransformDescCreate",
    "hipblasLtMatrixTransformDescDestroy", "hipblasLtMatrixTransformDescSetAttribute",
    "hipblasLtMatrixTransformDescGetAttribute", "hipblasLtMatrixTransform",
    "hipblasLtSetSmCountTarget", "hipblasLtGetSmCountTarget",
    "hipblasLtSetUniformSummationOrder", "hipblasLtGetUniformSummationOrder",
    "hipblasLtCheckNumericsDrain", "hipblasLtFusedEpilogueCreate", "hipblasLtFusedEpilogueAdd",
    "hipblasLtFusedEpilogueSetAttribute", "hipblasLtFusedEpilogueDestroy",
    "hipblasLtFusedEpilogueRMSNormDescriptorCreate",
    "hipblasLtFusedEpilogueRMSNormDescriptorSetBuffer",
    "hipblasLtFusedEpilogueRMSNormDescriptorDestroy", "hipblasltExtSoftmax",
    "hipblasltExtLayerNorm", "hipblasltExtAMax", "hipblasltExtAMaxWithScale",
};
#define NUM_NAMES ((int)(sizeof g_names / sizeof g_names[0]))
static int g_status[NUM_NAMES];
/* Benchmarks call millions of times: the log then wraps instead of aborting. */
static int g_ring;

static int name_index(const char *name) {
    for (int i = 0; i < NUM_NAMES; i++)
        if (name && strcmp(g_names[i], name) == 0) return i;
    return -1;
}

/* Appends a call to the log; the caller fills ->out and returns ->status. */
static struct stub_call *record(const char *name, const uint64_t *args, int nargs) {
    int idx = name_index(name);
    if (g_ring && g_count == LOG_CAPACITY) g_count = 0;
    if (idx < 0 || nargs > STUB_MAX_ARGS || g_count == LOG_CAPACITY) {
        fprintf(stderr, "stub: cannot record %s (log full or unknown name)\n", name);
        abort();
    }
    struct stub_call *c = &g_log[g_count++];
    c->name = g_names[idx];
    c->nargs = nargs;
    memcpy(c->args, args, (size_t)nargs * sizeof *args);
    c->out = 0;
    c->status = g_status[idx];
    c->payload = 0;
    return c;
}

/* RECORD(args...) logs the current function's call as `rec`. */
#define RECORD(...)                                                                 \
    struct stub_call *rec = record(__func__, (const uint64_t[]){__VA_ARGS__},       \
                                   (int)(sizeof((const uint64_t[]){__VA_ARGS__}) /  \
                                         sizeof(uint64_t)))
#define U STUB_U64

/* A new fake object pointer, stored through `out` (if non-null) and in rec->out. */
static void new_object(struct stub_call *rec, void *out) {
    g_next_object += 0x10;
    void *p = (void *)(uintptr_t)g_next_object;
    if (out) memcpy(out, &p, sizeof p);
    rec->out = g_next_object;
}

/* What a SetAttribute was given, so a test can check the value behind buf after
 * the caller's buffer is gone: the bytes hipBLASLt would copy (stub_attr_bytes),
 * never min(size, 8), which runs past a 4-byte value passed with a larger size. */
static void keep_payload(struct stub_call *rec, enum stub_attr_kind kind, int attr,
                         const void *buf, size_t size) {
    if (buf) memcpy(&rec->payload, buf, stub_attr_bytes(kind, attr, size));
}

/* What every GetAttribute writes: a byte pattern (as many bytes as hipBLASLt would
 * write, see keep_payload) and a fake size. */
static void fill_attr(struct stub_call *rec, enum stub_attr_kind kind, int attr, void *buf,
                      size_t size, size_t *written) {
    size_t n = stub_attr_bytes(kind, attr, size);
    if (buf)
        for (size_t j = 0; j < n; j++) ((uint8_t *)buf)[j] = stub_attr_byte(j);
    if (written) *written = STUB_ATTR_WRITTEN;
    rec->out = STUB_ATTR_WRITTEN;
}

/* ---------------------------------------------------------------- inspection API */

EXPORT int stub_call_count(void) { return g_count; }

EXPORT const struct stub_call *stub_call_at(int i) {
    return i >= 0 && i < g_count ? &g_log[i] : NULL;
}

EXPORT const struct stub_call *stub_last_call(const char *name) {
    for (int i = g_count - 1; i >= 0; i--)
        if (strcmp(g_log[i].name, name) == 0) return &g_log[i];
    return NULL;
}

EXPORT int stub_calls_to(const char *name) {
    int n = 0;
    for (int i = 0; i < g_count; i++) n += strcmp(g_log[i].name, name) == 0;
    return n;
}

EXPORT void stub_set_ring(int on) { g_ring = on; }

EXPORT void stub_reset(void) {
    g_count = 0;
    memset(g_status, 0, sizeof g_status);
}

EXPORT int stub_set_status(const char *name, int status) {
    int idx = name_index(name);
    if (idx < 0) return -1;
    g_status[idx] = status;
    return 0;
}

/* ---------------------------------------------------------------- core (24) */

EXPORT hipblasStatus_t hipblasLtGetVersion(hipblasLtHandle_t handle, int *version) {
    RECORD(U(handle), U(version));
    if (version) *version = STUB_VERSION;
    rec->out = STUB_VERSION;
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtGetGitRevision(hipblasLtHandle_t handle, char *rev) {
    RECORD(U(handle), U(rev));
    if (rev) strcpy(rev, STUB_GIT_REVISION);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtGetArchName(char **archName) {
    RECORD(U(archName));
    if (archName) {
        *archName = strdup(STUB_ARCH_NAME);
        rec->out = U(*archName);
    }
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtCreate(hipblasLtHandle_t *handle) {
    RECORD(U(handle));
    new_object(rec, handle);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtDestroy(const hipblasLtHandle_t handle) {
    RECORD(U(handle));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixLayoutCreate(hipblasLtMatrixLayout_t *matLayout,
                                                   hipDataType type, uint64_t rows, uint64_t cols,
                                                   int64_t ld) {
    RECORD(U(matLayout), U(type), U(rows), U(cols), U(ld));
    new_object(rec, matLayout);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixLayoutDestroy(const hipblasLtMatrixLayout_t matLayout) {
    RECORD(U(matLayout));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixLayoutSetAttribute(hipblasLtMatrixLayout_t matLayout,
                                                         hipblasLtMatrixLayoutAttribute_t attr,
                                                         const void *buf, size_t sizeInBytes) {
    RECORD(U(matLayout), U(attr), U(buf), U(sizeInBytes));
    keep_payload(rec, STUB_LAYOUT, attr, buf, sizeInBytes);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixLayoutGetAttribute(hipblasLtMatrixLayout_t matLayout,
                                                         hipblasLtMatrixLayoutAttribute_t attr,
                                                         void *buf, size_t sizeInBytes,
                                                         size_t *sizeWritten) {
    RECORD(U(matLayout), U(attr), U(buf), U(sizeInBytes), U(sizeWritten));
    fill_attr(rec, STUB_LAYOUT, attr, buf, sizeInBytes, sizeWritten);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulDescCreate(hipblasLtMatmulDesc_t *matmulDesc,
                                                 hipblasComputeType_t computeType,
                                                 hipDataType scaleType) {
    RECORD(U(matmulDesc), U(computeType), U(scaleType));
    new_object(rec, matmulDesc);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulDescDestroy(const hipblasLtMatmulDesc_t matmulDesc) {
    RECORD(U(matmulDesc));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulDescSetAttribute(hipblasLtMatmulDesc_t matmulDesc,
                                                       hipblasLtMatmulDescAttributes_t attr,
                                                       const void *buf, size_t sizeInBytes) {
    RECORD(U(matmulDesc), U(attr), U(buf), U(sizeInBytes));
    keep_payload(rec, STUB_DESC, attr, buf, sizeInBytes);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulDescGetAttribute(hipblasLtMatmulDesc_t matmulDesc,
                                                       hipblasLtMatmulDescAttributes_t attr,
                                                       void *buf, size_t sizeInBytes,
                                                       size_t *sizeWritten) {
    RECORD(U(matmulDesc), U(attr), U(buf), U(sizeInBytes), U(sizeWritten));
    fill_attr(rec, STUB_DESC, attr, buf, sizeInBytes, sizeWritten);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulPreferenceCreate(hipblasLtMatmulPreference_t *pref) {
    RECORD(U(pref));
    new_object(rec, pref);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulPreferenceDestroy(const hipblasLtMatmulPreference_t pref) {
    RECORD(U(pref));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulPreferenceSetAttribute(
    hipblasLtMatmulPreference_t pref, hipblasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t sizeInBytes) {
    RECORD(U(pref), U(attr), U(buf), U(sizeInBytes));
    keep_payload(rec, STUB_PREF, attr, buf, sizeInBytes);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulPreferenceGetAttribute(
    hipblasLtMatmulPreference_t pref, hipblasLtMatmulPreferenceAttributes_t attr, void *buf,
    size_t sizeInBytes, size_t *sizeWritten) {
    RECORD(U(pref), U(attr), U(buf), U(sizeInBytes), U(sizeWritten));
    fill_attr(rec, STUB_PREF, attr, buf, sizeInBytes, sizeWritten);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmulAlgoGetHeuristic(
    hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc, hipblasLtMatrixLayout_t Adesc,
    hipblasLtMatrixLayout_t Bdesc, hipblasLtMatrixLayout_t Cdesc, hipblasLtMatrixLayout_t Ddesc,
    hipblasLtMatmulPreference_t pref, int requestedAlgoCount,
    hipblasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount) {
    RECORD(U(handle), U(matmulDesc), U(Adesc), U(Bdesc), U(Cdesc), U(Ddesc), U(pref),
           U(requestedAlgoCount), U(heuristicResultsArray), U(returnAlgoCount));
    int n = requestedAlgoCount < STUB_MAX_HEURISTICS ? requestedAlgoCount : STUB_MAX_HEURISTICS;
    if (n < 0 || !heuristicResultsArray) n = 0;
    for (int i = 0; i < n; i++) heuristicResultsArray[i] = stub_heuristic(i);
    if (returnAlgoCount) *returnAlgoCount = n;
    rec->out = (uint64_t)n;
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatmul(hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc,
                                       const void *alpha, const void *A,
                                       hipblasLtMatrixLayout_t Adesc, const void *B,
                                       hipblasLtMatrixLayout_t Bdesc, const void *beta,
                                       const void *C, hipblasLtMatrixLayout_t Cdesc, void *D,
                                       hipblasLtMatrixLayout_t Ddesc,
                                       const hipblasLtMatmulAlgo_t *algo, void *workspace,
                                       size_t workspaceSizeInBytes, hipStream_t stream) {
    RECORD(U(handle), U(matmulDesc), U(alpha), U(A), U(Adesc), U(B), U(Bdesc), U(beta), U(C),
           U(Cdesc), U(D), U(Ddesc), U(algo), U(workspace), U(workspaceSizeInBytes), U(stream));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescCreate(
    hipblasLtMatrixTransformDesc_t *transformDesc, hipDataType scaleType) {
    RECORD(U(transformDesc), U(scaleType));
    new_object(rec, transformDesc);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescDestroy(
    hipblasLtMatrixTransformDesc_t transformDesc) {
    RECORD(U(transformDesc));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescSetAttribute(
    hipblasLtMatrixTransformDesc_t transformDesc, hipblasLtMatrixTransformDescAttributes_t attr,
    const void *buf, size_t sizeInBytes) {
    RECORD(U(transformDesc), U(attr), U(buf), U(sizeInBytes));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescGetAttribute(
    hipblasLtMatrixTransformDesc_t transformDesc, hipblasLtMatrixTransformDescAttributes_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
    RECORD(U(transformDesc), U(attr), U(buf), U(sizeInBytes), U(sizeWritten));
    fill_attr(rec, STUB_OTHER, attr, buf, sizeInBytes, sizeWritten);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransform(hipblasLtHandle_t lightHandle,
                                                hipblasLtMatrixTransformDesc_t transformDesc,
                                                const void *alpha, const void *A,
                                                hipblasLtMatrixLayout_t Adesc, const void *beta,
                                                const void *B, hipblasLtMatrixLayout_t Bdesc,
                                                void *C, hipblasLtMatrixLayout_t Cdesc,
                                                hipStream_t stream) {
    RECORD(U(lightHandle), U(transformDesc), U(alpha), U(A), U(Adesc), U(beta), U(B), U(Bdesc),
           U(C), U(Cdesc), U(stream));
    return rec->status;
}

#ifndef STUB_CORE_ONLY

/* ---------------------------------------------------------------- newer (12) */

EXPORT hipblasStatus_t hipblasLtSetSmCountTarget(hipblasLtHandle_t handle, int32_t count) {
    RECORD(U(handle), U(count));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtGetSmCountTarget(hipblasLtHandle_t handle, int32_t *count) {
    RECORD(U(handle), U(count));
    if (count) *count = STUB_SM_COUNT;
    rec->out = STUB_SM_COUNT;
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtSetUniformSummationOrder(hipblasLtHandle_t handle,
                                                         int32_t enable) {
    RECORD(U(handle), U(enable));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtGetUniformSummationOrder(hipblasLtHandle_t handle,
                                                         int32_t *enable) {
    RECORD(U(handle), U(enable));
    if (enable) *enable = STUB_SUMMATION_ORDER;
    rec->out = STUB_SUMMATION_ORDER;
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtCheckNumericsDrain(hipblasLtHandle_t handle,
                                                   uint32_t *first_nan_call_id) {
    RECORD(U(handle), U(first_nan_call_id));
    if (first_nan_call_id) *first_nan_call_id = STUB_FIRST_NAN_CALL;
    rec->out = STUB_FIRST_NAN_CALL;
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtFusedEpilogueCreate(hipblasLtFusedEpilogueDescriptor_t *desc) {
    RECORD(U(desc));
    new_object(rec, desc);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtFusedEpilogueAdd(hipblasLtFusedEpilogueDescriptor_t desc,
                                                 hipblasLtFuseableEpilogue_t epilogue) {
    RECORD(U(desc), U(epilogue));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtFusedEpilogueSetAttribute(hipblasLtFusedEpilogueDescriptor_t desc,
                                                          hipblasLtFusedEpilogueAttribute_t attr,
                                                          const void *value, size_t size) {
    RECORD(U(desc), U(attr), U(value), U(size));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtFusedEpilogueDestroy(hipblasLtFusedEpilogueDescriptor_t desc) {
    RECORD(U(desc));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtFusedEpilogueRMSNormDescriptorCreate(
    hipblasLtFusedEpilogueRMSNormDescriptor_t *desc) {
    RECORD(U(desc));
    new_object(rec, desc);
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtFusedEpilogueRMSNormDescriptorSetBuffer(
    hipblasLtFusedEpilogueRMSNormDescriptor_t desc, void *buffer, size_t size) {
    RECORD(U(desc), U(buffer), U(size));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasLtFusedEpilogueRMSNormDescriptorDestroy(
    hipblasLtFusedEpilogueRMSNormDescriptor_t desc) {
    RECORD(U(desc));
    return rec->status;
}

/* ---------------------------------------------------------------- ext-op (4) */

EXPORT hipblasStatus_t hipblasltExtSoftmax(hipDataType datatype, uint32_t m, uint32_t n,
                                           uint32_t dim, void *output, void *input,
                                           hipStream_t stream) {
    RECORD(U(datatype), U(m), U(n), U(dim), U(output), U(input), U(stream));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasltExtLayerNorm(hipDataType datatype, void *output, void *mean,
                                             void *invvar, void *input, uint32_t m, uint32_t n,
                                             float eps, void *gamma, void *beta,
                                             hipStream_t stream) {
    RECORD(U(datatype), U(output), U(mean), U(invvar), U(input), U(m), U(n), U(eps), U(gamma),
           U(beta), U(stream));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasltExtAMax(hipDataType datatype, hipDataType outDatatype,
                                        void *output, void *input, uint32_t m, uint32_t n,
                                        hipStream_t stream) {
    RECORD(U(datatype), U(outDatatype), U(output), U(input), U(m), U(n), U(stream));
    return rec->status;
}

EXPORT hipblasStatus_t hipblasltExtAMaxWithScale(hipDataType datatype, hipDataType outDatatype,
                                                 hipDataType scaleDatatype, void *output,
                                                 void *outputD, void *input, void *inputScale,
                                                 uint32_t m, uint32_t n, hipStream_t stream) {
    RECORD(U(datatype), U(outDatatype), U(scaleDatatype), U(output), U(outputD), U(input),
           U(inputScale), U(m), U(n), U(stream));
    return rec->status;
}

#endif /* STUB_CORE_ONLY */
