/*
 * A thread-safe stub "real hipBLASLt" with live objects (test fixture, built as
 * libhipblaslt.so.1 in stub-live/), for the multi-thread stress test.
 *
 * Unlike stub.c it keeps no call log: it counts calls per function (atomics), and
 * every object it creates (handle, matmul descriptor, layout, preference,
 * transform descriptor) is a real malloc'd block, freed on Destroy, so addresses
 * are reused at once, as with the real library. A mutex-protected registry holds
 * the live objects and their kinds; every object pointer a function is given is
 * looked up there first. A dead, unknown or wrong-kind pointer (NULL included) is
 * never dereferenced: the call is counted as a dead call, described in a short
 * report, and returns STUB_LIVE_DEAD_STATUS. The pointer is only compared, so
 * this holds even when a dead address has been reused by an object of another kind.
 *
 * Attributes round-trip: SetAttribute keeps the bytes hipBLASLt would copy
 * (stub/attr.h), GetAttribute returns them. The 24 functions of every hipBLASLt
 * version are exported (the newer and ext-op ones are not: an older library).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hipblaslt_abi.h"
#include "stub/attr.h"
#include "stub/stub_live.h"

#define EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- call counts */

#define STUB_LIVE_FUNCTIONS(X)                                                             \
    X(hipblasLtGetVersion) X(hipblasLtGetGitRevision) X(hipblasLtGetArchName)               \
    X(hipblasLtCreate) X(hipblasLtDestroy) X(hipblasLtMatrixLayoutCreate)                   \
    X(hipblasLtMatrixLayoutDestroy) X(hipblasLtMatrixLayoutSetAttribute)                    \
    X(hipblasLtMatrixLayoutGetAttribute) X(hipblasLtMatmulDescCreate)                       \
    X(hipblasLtMatmulDescDestroy) X(hipblasLtMatmulDescSetAttribute)                        \
    X(hipblasLtMatmulDescGetAttribute) X(hipblasLtMatmulPreferenceCreate)                   \
    X(hipblasLtMatmulPreferenceDestroy) X(hipblasLtMatmulPreferenceSetAttribute)            \
    X(hipblasLtMatmulPreferenceGetAttribute) X(hipblasLtMatmulAlgoGetHeuristic)             \
    X(hipblasLtMatmul) X(hipblasLtMatrixTransformDescCreate)                                \
    X(hipblasLtMatrixTransformDescDestroy) X(hipblasLtMatrixTransformDescSetAttribute)      \
    X(hipblasLtMatrixTransformDescGetAttribute) X(hipblasLtMatrixTransform)

#define AS_ENUM(f) F_##f,
enum { STUB_LIVE_FUNCTIONS(AS_ENUM) NUM_FUNCTIONS };
#define AS_NAME(f) #f,
static const char *const g_names[NUM_FUNCTIONS] = {STUB_LIVE_FUNCTIONS(AS_NAME)};

static atomic_long g_calls[NUM_FUNCTIONS];
static atomic_long g_dead;

#define COUNT(f) atomic_fetch_add_explicit(&g_calls[F_##f], 1, memory_order_relaxed)

/* ---------------------------------------------------------------- objects */

enum kind { K_NONE, K_HANDLE, K_DESC, K_LAYOUT, K_PREF, K_TRANSFORM };
static const char *const g_kind_names[] = {"none", "handle", "matmul desc", "layout",
                                           "preference", "transform desc"};

#define MAX_ATTRS 16
struct object {
    enum kind kind;
    int nattrs;
    struct {
        int attr;
        size_t size;
        uint64_t value;
    } attrs[MAX_ATTRS];
};

/* The registry: open addressing with linear probing, keyed by address. 2^15
 * slots: the stress test keeps a few hundred objects alive at once. */
#define REG_BITS 15
#define REG_SLOTS (1u << REG_BITS)
static struct {
    uintptr_t key; /* 0 = empty */
    enum kind kind;
} g_reg[REG_SLOTS];
static long g_live;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first few dead calls, described (under g_lock). */
#define REPORT_MAX 8
static char g_report[REPORT_MAX][160];
static int g_reported;

static unsigned reg_index(uintptr_t key) {
    return (unsigned)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - REG_BITS));
}

/* The slot holding `key`, or the empty slot where it would go. Under g_lock. */
static unsigned reg_find(uintptr_t key) {
    unsigned i = reg_index(key);
    while (g_reg[i].key != 0 && g_reg[i].key != key) i = (i + 1) & (REG_SLOTS - 1);
    return i;
}

/* Removes slot i, shifting later entries of its probe run back. Under g_lock. */
static void reg_remove(unsigned i) {
    unsigned j = i;
    for (;;) {
        g_reg[i].key = 0;
        for (;;) {
            j = (j + 1) & (REG_SLOTS - 1);
            if (g_reg[j].key == 0) return;
            unsigned home = reg_index(g_reg[j].key);
            /* Entry j may move to i only if its home is not cyclically in (i, j]. */
            int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays) break;
        }
        g_reg[i] = g_reg[j];
        i = j;
    }
}

/* Counts and describes a dead call. Under g_lock. */
static void dead_locked(const char *fn, const char *arg, const void *p, enum kind want, enum kind found) {
    atomic_fetch_add_explicit(&g_dead, 1, memory_order_relaxed);
    if (g_reported < REPORT_MAX)
        snprintf(g_report[g_reported++], sizeof g_report[0], "%s: %s %p is %s (want a live %s)", fn, arg,
                 p, found == K_NONE ? "not a live object" : g_kind_names[found], g_kind_names[want]);
}

/* Looks `p` up as a live `want`; takes g_lock and keeps it on success (the caller
 * then uses the object and calls unlock()). On failure counts a dead call,
 * releases the lock and returns NULL. */
static struct object *acquire(const char *fn, const char *arg, const void *p, enum kind want) {
    pthread_mutex_lock(&g_lock);
    unsigned i = reg_find((uintptr_t)p);
    enum kind found = p && g_reg[i].key ? g_reg[i].kind : K_NONE;
    if (found == want) return (struct object *)(uintptr_t)p;
    dead_locked(fn, arg, p, want, found);
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

static void unlock(void) { pthread_mutex_unlock(&g_lock); }

/* Checks that `p` is a live `want` (and lets go of it at once). */
static int live(const char *fn, const char *arg, const void *p, enum kind want) {
    if (!acquire(fn, arg, p, want)) return 0;
    unlock();
    return 1;
}

/* A new object of `kind`, registered, written to *out. */
static hipblasStatus_t create(void *out, enum kind kind) {
    if (!out) return HIPBLAS_STATUS_INVALID_VALUE;
    struct object *o = calloc(1, sizeof *o);
    if (!o) return HIPBLAS_STATUS_ALLOC_FAILED;
    o->kind = kind;
    pthread_mutex_lock(&g_lock);
    if ((unsigned long)g_live >= REG_SLOTS / 2) {
        fprintf(stderr, "stub_live: more than %u live objects\n", REG_SLOTS / 2);
        abort();
    }
    unsigned i = reg_find((uintptr_t)o);
    if (g_reg[i].key != 0) {
        /* malloc returned a block the registry holds: the registry is wrong. */
        fprintf(stderr, "stub_live: %p allocated while registered\n", (void *)o);
        abort();
    }
    g_reg[i].key = (uintptr_t)o;
    g_reg[i].kind = kind;
    g_live++;
    pthread_mutex_unlock(&g_lock);
    memcpy(out, &o, sizeof o);
    return HIPBLAS_STATUS_SUCCESS;
}

/* Unregisters and frees `p` if it is a live `kind`. */
static hipblasStatus_t destroy(const char *fn, const void *p, enum kind kind) {
    if (!acquire(fn, "object", p, kind)) return STUB_LIVE_DEAD_STATUS;
    reg_remove(reg_find((uintptr_t)p));
    g_live--;
    unlock();
    /* Freed after it left the registry: once malloc can hand the address out
     * again, nothing here remembers it. */
    free((void *)(uintptr_t)p);
    return HIPBLAS_STATUS_SUCCESS;
}

/* Stores an attribute value on an acquired object (bytes as hipBLASLt copies). */
static hipblasStatus_t set_attr(struct object *o, enum stub_attr_kind ak, int attr, const void *buf, size_t size) {
    size_t field = stub_attr_field_size(ak, attr);
    /* hipBLASLt: a NULL buffer or size 0 is invalid, and so is a size below the
     * field's, except for preferences (any non-zero size). */
    if (!buf || size == 0 || (ak != STUB_PREF && field && size < field)) return HIPBLAS_STATUS_INVALID_VALUE;
    size_t n = stub_attr_bytes(ak, attr, size);
    uint64_t v = 0;
    memcpy(&v, buf, n);
    int i = 0;
    while (i < o->nattrs && o->attrs[i].attr != attr) i++;
    if (i == MAX_ATTRS) return HIPBLAS_STATUS_INVALID_VALUE;
    if (i == o->nattrs) o->nattrs++;
    o->attrs[i].attr = attr;
    o->attrs[i].size = field ? field : n;
    o->attrs[i].value = v;
    return HIPBLAS_STATUS_SUCCESS;
}

/* Reads an attribute back from an acquired object: size 0 asks for the size. */
static hipblasStatus_t get_attr(struct object *o, enum stub_attr_kind ak, int attr, void *buf, size_t size,
                                size_t *written) {
    int i = 0;
    while (i < o->nattrs && o->attrs[i].attr != attr) i++;
    size_t field = i < o->nattrs ? o->attrs[i].size : stub_attr_field_size(ak, attr);
    uint64_t v = i < o->nattrs ? o->attrs[i].value : 0;
    if (field == 0) return HIPBLAS_STATUS_INVALID_VALUE;
    if (size == 0) {
        if (!written) return HIPBLAS_STATUS_INVALID_VALUE;
        *written = field;
        return HIPBLAS_STATUS_SUCCESS;
    }
    if (!buf || size < field) return HIPBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, &v, field);
    if (written) *written = field;
    return HIPBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- inspection API */

EXPORT long stub_live_calls_to(const char *name) {
    for (int i = 0; i < NUM_FUNCTIONS; i++)
        if (name && strcmp(g_names[i], name) == 0) return atomic_load(&g_calls[i]);
    return -1;
}

EXPORT long stub_dead_calls(void) { return atomic_load(&g_dead); }

EXPORT long stub_live_objects(void) {
    pthread_mutex_lock(&g_lock);
    long n = g_live;
    pthread_mutex_unlock(&g_lock);
    return n;
}

EXPORT int stub_live_dead_report(char *buf, size_t n) {
    pthread_mutex_lock(&g_lock);
    int k = g_reported;
    size_t at = 0;
    if (n) buf[0] = 0;
    for (int i = 0; i < k && at + 1 < n; i++) {
        int w = snprintf(buf + at, n - at, "%s\n", g_report[i]);
        if (w < 0) break;
        at += (size_t)w < n - at ? (size_t)w : n - at - 1;
    }
    pthread_mutex_unlock(&g_lock);
    return k;
}

EXPORT void stub_live_reset(void) {
    for (int i = 0; i < NUM_FUNCTIONS; i++) atomic_store(&g_calls[i], 0);
    pthread_mutex_lock(&g_lock);
    atomic_store(&g_dead, 0);
    g_reported = 0;
    pthread_mutex_unlock(&g_lock);
}

/* ---------------------------------------------------------------- hipBLASLt (24) */

#define STUB_VERSION_LIVE 100202

EXPORT hipblasStatus_t hipblasLtGetVersion(hipblasLtHandle_t handle, int *version) {
    COUNT(hipblasLtGetVersion);
    if (!live(__func__, "handle", handle, K_HANDLE)) return STUB_LIVE_DEAD_STATUS;
    if (!version) return HIPBLAS_STATUS_INVALID_VALUE;
    *version = STUB_VERSION_LIVE;
    return HIPBLAS_STATUS_SUCCESS;
}

EXPORT hipblasStatus_t hipblasLtGetGitRevision(hipblasLtHandle_t handle, char *rev) {
    COUNT(hipblasLtGetGitRevision);
    if (!live(__func__, "handle", handle, K_HANDLE)) return STUB_LIVE_DEAD_STATUS;
    if (!rev) return HIPBLAS_STATUS_INVALID_VALUE;
    strcpy(rev, "stub-live");
    return HIPBLAS_STATUS_SUCCESS;
}

EXPORT hipblasStatus_t hipblasLtGetArchName(char **archName) {
    COUNT(hipblasLtGetArchName);
    if (!archName) return HIPBLAS_STATUS_INVALID_VALUE;
    *archName = strdup("gfx-stub-live");
    return *archName ? HIPBLAS_STATUS_SUCCESS : HIPBLAS_STATUS_ALLOC_FAILED;
}

EXPORT hipblasStatus_t hipblasLtCreate(hipblasLtHandle_t *handle) {
    COUNT(hipblasLtCreate);
    return create(handle, K_HANDLE);
}

EXPORT hipblasStatus_t hipblasLtDestroy(const hipblasLtHandle_t handle) {
    COUNT(hipblasLtDestroy);
    return destroy(__func__, handle, K_HANDLE);
}

EXPORT hipblasStatus_t hipblasLtMatrixLayoutCreate(hipblasLtMatrixLayout_t *matLayout, hipDataType type,
                                                   uint64_t rows, uint64_t cols, int64_t ld) {
    COUNT(hipblasLtMatrixLayoutCreate);
    hipblasStatus_t s = create(matLayout, K_LAYOUT);
    if (s != HIPBLAS_STATUS_SUCCESS) return s;
    struct object *o = acquire(__func__, "new layout", *matLayout, K_LAYOUT);
    if (!o) return STUB_LIVE_DEAD_STATUS;
    int32_t t = type;
    set_attr(o, STUB_LAYOUT, HIPBLASLT_MATRIX_LAYOUT_TYPE, &t, sizeof t);
    set_attr(o, STUB_LAYOUT, HIPBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows);
    set_attr(o, STUB_LAYOUT, HIPBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols);
    set_attr(o, STUB_LAYOUT, HIPBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld);
    unlock();
    return HIPBLAS_STATUS_SUCCESS;
}

EXPORT hipblasStatus_t hipblasLtMatrixLayoutDestroy(const hipblasLtMatrixLayout_t matLayout) {
    COUNT(hipblasLtMatrixLayoutDestroy);
    return destroy(__func__, matLayout, K_LAYOUT);
}

EXPORT hipblasStatus_t hipblasLtMatmulDescCreate(hipblasLtMatmulDesc_t *matmulDesc,
                                                 hipblasComputeType_t computeType,
                                                 hipDataType scaleType) {
    COUNT(hipblasLtMatmulDescCreate);
    (void)computeType;
    (void)scaleType;
    return create(matmulDesc, K_DESC);
}

EXPORT hipblasStatus_t hipblasLtMatmulDescDestroy(const hipblasLtMatmulDesc_t matmulDesc) {
    COUNT(hipblasLtMatmulDescDestroy);
    return destroy(__func__, matmulDesc, K_DESC);
}

EXPORT hipblasStatus_t hipblasLtMatmulPreferenceCreate(hipblasLtMatmulPreference_t *pref) {
    COUNT(hipblasLtMatmulPreferenceCreate);
    return create(pref, K_PREF);
}

EXPORT hipblasStatus_t hipblasLtMatmulPreferenceDestroy(const hipblasLtMatmulPreference_t pref) {
    COUNT(hipblasLtMatmulPreferenceDestroy);
    return destroy(__func__, pref, K_PREF);
}

/* Set/GetAttribute of one object kind: the pointer checked live and of its kind,
 * then the attribute stored or read under the registry's lock. */
#define ATTRIBUTE_EXPORTS(Name, Type, AttrType, what, KIND, TABLE)                             \
    EXPORT hipblasStatus_t hipblasLt##Name##SetAttribute(Type obj, AttrType attr, const void *buf, \
                                                         size_t sizeInBytes) {                  \
        COUNT(hipblasLt##Name##SetAttribute);                                                   \
        struct object *o = acquire(__func__, what, obj, KIND);                                  \
        if (!o) return STUB_LIVE_DEAD_STATUS;                                                   \
        hipblasStatus_t s = set_attr(o, TABLE, attr, buf, sizeInBytes);                         \
        unlock();                                                                               \
        return s;                                                                               \
    }                                                                                           \
    EXPORT hipblasStatus_t hipblasLt##Name##GetAttribute(Type obj, AttrType attr, void *buf,       \
                                                         size_t sizeInBytes, size_t *sizeWritten) { \
        COUNT(hipblasLt##Name##GetAttribute);                                                   \
        struct object *o = acquire(__func__, what, obj, KIND);                                  \
        if (!o) return STUB_LIVE_DEAD_STATUS;                                                   \
        hipblasStatus_t s = get_attr(o, TABLE, attr, buf, sizeInBytes, sizeWritten);            \
        unlock();                                                                               \
        return s;                                                                               \
    }

ATTRIBUTE_EXPORTS(MatrixLayout, hipblasLtMatrixLayout_t, hipblasLtMatrixLayoutAttribute_t, "layout", K_LAYOUT, STUB_LAYOUT)
ATTRIBUTE_EXPORTS(MatmulDesc, hipblasLtMatmulDesc_t, hipblasLtMatmulDescAttributes_t, "matmul desc", K_DESC, STUB_DESC)
ATTRIBUTE_EXPORTS(MatmulPreference, hipblasLtMatmulPreference_t, hipblasLtMatmulPreferenceAttributes_t, "preference", K_PREF, STUB_PREF)

/* Checks every descriptor of a heuristic or matmul call (all of them, so each
 * dead one is reported). */
static int live_problem(const char *fn, hipblasLtHandle_t h, hipblasLtMatmulDesc_t d, hipblasLtMatrixLayout_t a,
                        hipblasLtMatrixLayout_t b, hipblasLtMatrixLayout_t c, hipblasLtMatrixLayout_t dd) {
    int ok = live(fn, "handle", h, K_HANDLE);
    ok &= live(fn, "matmul desc", d, K_DESC);
    ok &= live(fn, "A layout", a, K_LAYOUT);
    ok &= live(fn, "B layout", b, K_LAYOUT);
    ok &= live(fn, "C layout", c, K_LAYOUT);
    ok &= live(fn, "D layout", dd, K_LAYOUT);
    return ok;
}

EXPORT hipblasStatus_t hipblasLtMatmulAlgoGetHeuristic(
    hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc, hipblasLtMatrixLayout_t Adesc,
    hipblasLtMatrixLayout_t Bdesc, hipblasLtMatrixLayout_t Cdesc, hipblasLtMatrixLayout_t Ddesc,
    hipblasLtMatmulPreference_t pref, int requestedAlgoCount,
    hipblasLtMatmulHeuristicResult_t heuristicResultsArray[], int *returnAlgoCount) {
    COUNT(hipblasLtMatmulAlgoGetHeuristic);
    int ok = live_problem(__func__, handle, matmulDesc, Adesc, Bdesc, Cdesc, Ddesc);
    ok &= live(__func__, "preference", pref, K_PREF);
    if (!ok) return STUB_LIVE_DEAD_STATUS;
    if (!heuristicResultsArray || !returnAlgoCount || requestedAlgoCount < 1) return HIPBLAS_STATUS_INVALID_VALUE;
    int n = requestedAlgoCount < STUB_LIVE_MAX_HEURISTICS ? requestedAlgoCount : STUB_LIVE_MAX_HEURISTICS;
    for (int i = 0; i < n; i++) {
        memset(&heuristicResultsArray[i], 0, sizeof heuristicResultsArray[i]);
        heuristicResultsArray[i].algo.data[0] = (uint8_t)(i + 1);
        heuristicResultsArray[i].workspaceSize = 0x1000u * (size_t)i;
    }
    *returnAlgoCount = n;
    return HIPBLAS_STATUS_SUCCESS;
}

EXPORT hipblasStatus_t hipblasLtMatmul(hipblasLtHandle_t handle, hipblasLtMatmulDesc_t matmulDesc,
                                       const void *alpha, const void *A,
                                       hipblasLtMatrixLayout_t Adesc, const void *B,
                                       hipblasLtMatrixLayout_t Bdesc, const void *beta,
                                       const void *C, hipblasLtMatrixLayout_t Cdesc, void *D,
                                       hipblasLtMatrixLayout_t Ddesc,
                                       const hipblasLtMatmulAlgo_t *algo, void *workspace,
                                       size_t workspaceSizeInBytes, hipStream_t stream) {
    COUNT(hipblasLtMatmul);
    (void)A, (void)B, (void)C, (void)D, (void)algo, (void)workspace, (void)workspaceSizeInBytes, (void)stream;
    if (!live_problem(__func__, handle, matmulDesc, Adesc, Bdesc, Cdesc, Ddesc)) return STUB_LIVE_DEAD_STATUS;
    if (!alpha || !beta) return HIPBLAS_STATUS_INVALID_VALUE;
    return HIPBLAS_STATUS_SUCCESS;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescCreate(hipblasLtMatrixTransformDesc_t *transformDesc,
                                                          hipDataType scaleType) {
    COUNT(hipblasLtMatrixTransformDescCreate);
    (void)scaleType;
    return create(transformDesc, K_TRANSFORM);
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescDestroy(hipblasLtMatrixTransformDesc_t transformDesc) {
    COUNT(hipblasLtMatrixTransformDescDestroy);
    return destroy(__func__, transformDesc, K_TRANSFORM);
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescSetAttribute(
    hipblasLtMatrixTransformDesc_t transformDesc, hipblasLtMatrixTransformDescAttributes_t attr,
    const void *buf, size_t sizeInBytes) {
    COUNT(hipblasLtMatrixTransformDescSetAttribute);
    struct object *o = acquire(__func__, "transform desc", transformDesc, K_TRANSFORM);
    if (!o) return STUB_LIVE_DEAD_STATUS;
    hipblasStatus_t s = set_attr(o, STUB_OTHER, attr, buf, sizeInBytes);
    unlock();
    return s;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransformDescGetAttribute(
    hipblasLtMatrixTransformDesc_t transformDesc, hipblasLtMatrixTransformDescAttributes_t attr,
    void *buf, size_t sizeInBytes, size_t *sizeWritten) {
    COUNT(hipblasLtMatrixTransformDescGetAttribute);
    struct object *o = acquire(__func__, "transform desc", transformDesc, K_TRANSFORM);
    if (!o) return STUB_LIVE_DEAD_STATUS;
    hipblasStatus_t s = get_attr(o, STUB_OTHER, attr, buf, sizeInBytes, sizeWritten);
    unlock();
    return s;
}

EXPORT hipblasStatus_t hipblasLtMatrixTransform(hipblasLtHandle_t lightHandle,
                                                hipblasLtMatrixTransformDesc_t transformDesc,
                                                const void *alpha, const void *A,
                                                hipblasLtMatrixLayout_t Adesc, const void *beta,
                                                const void *B, hipblasLtMatrixLayout_t Bdesc,
                                                void *C, hipblasLtMatrixLayout_t Cdesc,
                                                hipStream_t stream) {
    COUNT(hipblasLtMatrixTransform);
    (void)A, (void)B, (void)C, (void)stream;
    int ok = live(__func__, "handle", lightHandle, K_HANDLE);
    ok &= live(__func__, "transform desc", transformDesc, K_TRANSFORM);
    ok &= live(__func__, "A layout", Adesc, K_LAYOUT);
    ok &= live(__func__, "B layout", Bdesc, K_LAYOUT);
    ok &= live(__func__, "C layout", Cdesc, K_LAYOUT);
    if (!ok) return STUB_LIVE_DEAD_STATUS;
    if (!alpha || !beta) return HIPBLAS_STATUS_INVALID_VALUE;
    return HIPBLAS_STATUS_SUCCESS;
}
