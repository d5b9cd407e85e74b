/*
 * Forwarding fidelity: every one of the 40 hipBLASLt functions, called through
 * skinnylt (linked), reaches the stub real library (loaded by skinnylt from
 * $SKINNYLT_REAL_LIB) with exactly the caller's argument values, and the status
 * and out-parameter values the stub produces come back to the caller unchanged.
 *
 * usage: fidelity <stub path> full|core-only
 *   full:      the stub exports all 40 functions; each is called with three
 *              programmed statuses (0, 7, 1000 + index).
 *   core-only: the stub exports only the 24 core functions; the 16 others must
 *              return HIPBLAS_STATUS_NOT_SUPPORTED without reaching the stub.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "hipblaslt_abi.h"
#include "skinnylt.h"
#include "stub/stub.h"

#define U STUB_U64

static struct stub_api S;

/* ---------------------------------------------------------------- helpers */

/* The argument values a case passed, in order. */
struct want {
    int n;
    uint64_t args[STUB_MAX_ARGS];
};

static void want_set(struct want *w, const uint64_t *args, int n) {
    w->n = n;
    memcpy(w->args, args, (size_t)n * sizeof *args);
}

#define WANT(...)                                                  \
    want_set(w, (const uint64_t[]){__VA_ARGS__},                   \
             (int)(sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t)))

/* A fresh, distinctive fake pointer (never dereferenced by anyone). */
static void *fake(void) {
    static uintptr_t next = 0x1234567;
    next += 0x10101;
    return (void *)next;
}

/* The stub's record of the last call to `name`, or an empty one. */
static const struct stub_call *rec_of(const char *name) {
    static const struct stub_call none;
    const struct stub_call *r = S.last_call(name);
    return r ? r : &none;
}

/* Buffer for GetAttribute: pre-filled so bytes the stub must not touch show. */
#define UNTOUCHED 0xEE
static uint8_t g_buf[32];
static void clear_buf(void) { memset(g_buf, UNTOUCHED, sizeof g_buf); }

/* Checks what a GetAttribute stub call wrote: min(size, 8) pattern bytes. */
static void check_attr_out(size_t size, size_t written) {
    for (size_t j = 0; j < sizeof g_buf; j++) {
        uint8_t want = j < size && j < 8 ? stub_attr_byte(j) : UNTOUCHED;
        CHECK(g_buf[j] == want, "attribute byte %zu: got 0x%02x want 0x%02x", j, g_buf[j], want);
    }
    CHECK_EQ(written, STUB_ATTR_WRITTEN, "sizeWritten");
}

/* Checks a pointer out-parameter against what the stub wrote. */
static void check_obj_out(const char *name, const void *got) {
    CHECK(U(got) == rec_of(name)->out && got != NULL, "%s: out-parameter %p, stub wrote 0x%" PRIx64,
          name, got, rec_of(name)->out);
}

/* A payload buffer for SetAttribute (skinnylt may read up to 8 bytes of it). */
static const uint64_t g_payload[4] = {0x1111222233334444ull, 2, 3, 4};

/* ---------------------------------------------------------------- the 40 cases */
/* Each case calls one function with fresh distinctive arguments, records them in
 * *w, checks out-parameters when `outs`, and returns the status it got. */

typedef hipblasStatus_t (*case_fn)(struct want *w, int outs);

static hipblasStatus_t c_GetVersion(struct want *w, int outs) {
    void *h = fake();
    int version = -1;
    WANT(U(h), U(&version));
    hipblasStatus_t s = hipblasLtGetVersion(h, &version);
    if (outs) CHECK_EQ(version, STUB_VERSION, "GetVersion *version");
    return s;
}

static hipblasStatus_t c_GetGitRevision(struct want *w, int outs) {
    void *h = fake();
    char rev[64] = "";
    WANT(U(h), U(rev));
    hipblasStatus_t s = hipblasLtGetGitRevision(h, rev);
    if (outs) CHECK(strcmp(rev, STUB_GIT_REVISION) == 0, "GetGitRevision wrote \"%s\"", rev);
    return s;
}

static hipblasStatus_t c_GetArchName(struct want *w, int outs) {
    char *name = NULL;
    WANT(U(&name));
    hipblasStatus_t s = hipblasLtGetArchName(&name);
    if (outs) {
        check_obj_out("hipblasLtGetArchName", name);
        CHECK(name && strcmp(name, STUB_ARCH_NAME) == 0, "GetArchName wrote \"%s\"",
              name ? name : "(null)");
    }
    free(name);
    return s;
}

static hipblasStatus_t c_Create(struct want *w, int outs) {
    hipblasLtHandle_t h = NULL;
    WANT(U(&h));
    hipblasStatus_t s = hipblasLtCreate(&h);
    if (outs) check_obj_out("hipblasLtCreate", h);
    return s;
}

static hipblasStatus_t c_Destroy(struct want *w, int outs) {
    (void)outs;
    void *h = fake();
    WANT(U(h));
    return hipblasLtDestroy(h);
}

static hipblasStatus_t c_MatrixLayoutCreate(struct want *w, int outs) {
    hipblasLtMatrixLayout_t l = NULL;
    int type = 0x1d;
    uint64_t rows = 0x123456789abull, cols = 0xfedcba987ull;
    int64_t ld = -0x123456789aLL;
    WANT(U(&l), U(type), U(rows), U(cols), U(ld));
    hipblasStatus_t s = hipblasLtMatrixLayoutCreate(&l, type, rows, cols, ld);
    if (outs) check_obj_out("hipblasLtMatrixLayoutCreate", l);
    return s;
}

static hipblasStatus_t c_MatrixLayoutDestroy(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatrixLayout_t l = fake();
    WANT(U(l));
    return hipblasLtMatrixLayoutDestroy(l);
}

static hipblasStatus_t c_MatrixLayoutSetAttribute(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatrixLayout_t l = fake();
    int attr = 0x2a;
    size_t size = 0x1d;
    WANT(U(l), U(attr), U(g_payload), U(size));
    return hipblasLtMatrixLayoutSetAttribute(l, attr, g_payload, size);
}

static hipblasStatus_t c_MatrixLayoutGetAttribute(struct want *w, int outs) {
    hipblasLtMatrixLayout_t l = fake();
    int attr = -5;
    size_t size = 13, written = 0;
    clear_buf();
    WANT(U(l), U(attr), U(g_buf), U(size), U(&written));
    hipblasStatus_t s = hipblasLtMatrixLayoutGetAttribute(l, attr, g_buf, size, &written);
    if (outs) check_attr_out(size, written);
    return s;
}

static hipblasStatus_t c_MatmulDescCreate(struct want *w, int outs) {
    hipblasLtMatmulDesc_t d = NULL;
    int compute = 0x4d, scale = -2;
    WANT(U(&d), U(compute), U(scale));
    hipblasStatus_t s = hipblasLtMatmulDescCreate(&d, compute, scale);
    if (outs) check_obj_out("hipblasLtMatmulDescCreate", d);
    return s;
}

static hipblasStatus_t c_MatmulDescDestroy(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatmulDesc_t d = fake();
    WANT(U(d));
    return hipblasLtMatmulDescDestroy(d);
}

static hipblasStatus_t c_MatmulDescSetAttribute(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatmulDesc_t d = fake();
    int attr = 0x7b;
    size_t size = 0x11;
    WANT(U(d), U(attr), U(g_payload), U(size));
    return hipblasLtMatmulDescSetAttribute(d, attr, g_payload, size);
}

static hipblasStatus_t c_MatmulDescGetAttribute(struct want *w, int outs) {
    hipblasLtMatmulDesc_t d = fake();
    int attr = 0x7c;
    size_t size = 5, written = 0;
    clear_buf();
    WANT(U(d), U(attr), U(g_buf), U(size), U(&written));
    hipblasStatus_t s = hipblasLtMatmulDescGetAttribute(d, attr, g_buf, size, &written);
    if (outs) check_attr_out(size, written);
    return s;
}

static hipblasStatus_t c_MatmulPreferenceCreate(struct want *w, int outs) {
    hipblasLtMatmulPreference_t p = NULL;
    WANT(U(&p));
    hipblasStatus_t s = hipblasLtMatmulPreferenceCreate(&p);
    if (outs) check_obj_out("hipblasLtMatmulPreferenceCreate", p);
    return s;
}

static hipblasStatus_t c_MatmulPreferenceDestroy(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatmulPreference_t p = fake();
    WANT(U(p));
    return hipblasLtMatmulPreferenceDestroy(p);
}

static hipblasStatus_t c_MatmulPreferenceSetAttribute(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatmulPreference_t p = fake();
    int attr = 3;
    size_t size = 0x21;
    WANT(U(p), U(attr), U(g_payload), U(size));
    return hipblasLtMatmulPreferenceSetAttribute(p, attr, g_payload, size);
}

static hipblasStatus_t c_MatmulPreferenceGetAttribute(struct want *w, int outs) {
    hipblasLtMatmulPreference_t p = fake();
    int attr = 1;
    size_t size = 8, written = 0;
    clear_buf();
    WANT(U(p), U(attr), U(g_buf), U(size), U(&written));
    hipblasStatus_t s = hipblasLtMatmulPreferenceGetAttribute(p, attr, g_buf, size, &written);
    if (outs) check_attr_out(size, written);
    return s;
}

static hipblasStatus_t c_MatmulAlgoGetHeuristic(struct want *w, int outs) {
    void *h = fake();
    hipblasLtMatmulDesc_t d = fake();
    hipblasLtMatrixLayout_t a = fake(), b = fake(), c = fake(), dd = fake();
    hipblasLtMatmulPreference_t p = fake();
    int requested = 2, returned = -1;
    hipblasLtMatmulHeuristicResult_t results[4];
    memset(results, UNTOUCHED, sizeof results);
    WANT(U(h), U(d), U(a), U(b), U(c), U(dd), U(p), U(requested), U(results), U(&returned));
    hipblasStatus_t s = hipblasLtMatmulAlgoGetHeuristic(h, d, a, b, c, dd, p, requested, results,
                                                        &returned);
    if (outs) {
        CHECK_EQ(returned, 2, "heuristic returnAlgoCount");
        for (int i = 0; i < 2; i++) {
            hipblasLtMatmulHeuristicResult_t want = stub_heuristic(i);
            CHECK(memcmp(&results[i], &want, sizeof want) == 0, "heuristic result %d differs", i);
        }
        hipblasLtMatmulHeuristicResult_t untouched;
        memset(&untouched, UNTOUCHED, sizeof untouched);
        CHECK(memcmp(&results[2], &untouched, sizeof untouched) == 0, "heuristic result 2 written");
    }
    return s;
}

static hipblasStatus_t c_Matmul(struct want *w, int outs) {
    (void)outs;
    static const float alpha = 1.5f, beta = 0.25f;
    static const hipblasLtMatmulAlgo_t algo = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 77};
    void *h = fake(), *A = fake(), *B = fake(), *C = fake(), *D = fake(), *ws = fake(), *st = fake();
    hipblasLtMatmulDesc_t d = fake();
    hipblasLtMatrixLayout_t ad = fake(), bd = fake(), cd = fake(), dd = fake();
    size_t ws_size = 0x100000040ull;
    WANT(U(h), U(d), U(&alpha), U(A), U(ad), U(B), U(bd), U(&beta), U(C), U(cd), U(D), U(dd),
         U(&algo), U(ws), U(ws_size), U(st));
    return hipblasLtMatmul(h, d, &alpha, A, ad, B, bd, &beta, C, cd, D, dd, &algo, ws, ws_size, st);
}

static hipblasStatus_t c_MatrixTransformDescCreate(struct want *w, int outs) {
    hipblasLtMatrixTransformDesc_t t = NULL;
    int scale = 0x33;
    WANT(U(&t), U(scale));
    hipblasStatus_t s = hipblasLtMatrixTransformDescCreate(&t, scale);
    if (outs) check_obj_out("hipblasLtMatrixTransformDescCreate", t);
    return s;
}

static hipblasStatus_t c_MatrixTransformDescDestroy(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatrixTransformDesc_t t = fake();
    WANT(U(t));
    return hipblasLtMatrixTransformDescDestroy(t);
}

static hipblasStatus_t c_MatrixTransformDescSetAttribute(struct want *w, int outs) {
    (void)outs;
    hipblasLtMatrixTransformDesc_t t = fake();
    int attr = 0x44;
    size_t size = 0x19;
    WANT(U(t), U(attr), U(g_payload), U(size));
    return hipblasLtMatrixTransformDescSetAttribute(t, attr, g_payload, size);
}

static hipblasStatus_t c_MatrixTransformDescGetAttribute(struct want *w, int outs) {
    hipblasLtMatrixTransformDesc_t t = fake();
    int attr = 0x45;
    size_t size = 3, written = 0;
    clear_buf();
    WANT(U(t), U(attr), U(g_buf), U(size), U(&written));
    hipblasStatus_t s = hipblasLtMatrixTransformDescGetAttribute(t, attr, g_buf, size, &written);
    if (outs) check_attr_out(size, written);
    return s;
}

static hipblasStatus_t c_MatrixTransform(struct want *w, int outs) {
    (void)outs;
    static const float alpha = 2.0f, beta = -1.0f;
    void *h = fake(), *A = fake(), *B = fake(), *C = fake(), *st = fake();
    hipblasLtMatrixTransformDesc_t t = fake();
    hipblasLtMatrixLayout_t ad = fake(), bd = fake(), cd = fake();
    WANT(U(h), U(t), U(&alpha), U(A), U(ad), U(&beta), U(B), U(bd), U(C), U(cd), U(st));
    return hipblasLtMatrixTransform(h, t, &alpha, A, ad, &beta, B, bd, C, cd, st);
}

static hipblasStatus_t c_SetSmCountTarget(struct want *w, int outs) {
    (void)outs;
    void *h = fake();
    int32_t count = -17;
    WANT(U(h), U(count));
    return hipblasLtSetSmCountTarget(h, count);
}

static hipblasStatus_t c_GetSmCountTarget(struct want *w, int outs) {
    void *h = fake();
    int32_t count = -1;
    WANT(U(h), U(&count));
    hipblasStatus_t s = hipblasLtGetSmCountTarget(h, &count);
    if (outs) CHECK_EQ(count, STUB_SM_COUNT, "GetSmCountTarget *count");
    return s;
}

static hipblasStatus_t c_SetUniformSummationOrder(struct want *w, int outs) {
    (void)outs;
    void *h = fake();
    int32_t enable = 0x7fffffff;
    WANT(U(h), U(enable));
    return hipblasLtSetUniformSummationOrder(h, enable);
}

static hipblasStatus_t c_GetUniformSummationOrder(struct want *w, int outs) {
    void *h = fake();
    int32_t enable = -1;
    WANT(U(h), U(&enable));
    hipblasStatus_t s = hipblasLtGetUniformSummationOrder(h, &enable);
    if (outs) CHECK_EQ(enable, STUB_SUMMATION_ORDER, "GetUniformSummationOrder *enable");
    return s;
}

static hipblasStatus_t c_CheckNumericsDrain(struct want *w, int outs) {
    void *h = fake();
    uint32_t id = 0;
    WANT(U(h), U(&id));
    hipblasStatus_t s = hipblasLtCheckNumericsDrain(h, &id);
    if (outs) CHECK_EQ(id, STUB_FIRST_NAN_CALL, "CheckNumericsDrain *first_nan_call_id");
    return s;
}

static hipblasStatus_t c_FusedEpilogueCreate(struct want *w, int outs) {
    hipblasLtFusedEpilogueDescriptor_t d = NULL;
    WANT(U(&d));
    hipblasStatus_t s = hipblasLtFusedEpilogueCreate(&d);
    if (outs) check_obj_out("hipblasLtFusedEpilogueCreate", d);
    return s;
}

static hipblasStatus_t c_FusedEpilogueAdd(struct want *w, int outs) {
    (void)outs;
    hipblasLtFusedEpilogueDescriptor_t d = fake();
    int epilogue = 0x5e;
    WANT(U(d), U(epilogue));
    return hipblasLtFusedEpilogueAdd(d, epilogue);
}

static hipblasStatus_t c_FusedEpilogueSetAttribute(struct want *w, int outs) {
    (void)outs;
    hipblasLtFusedEpilogueDescriptor_t d = fake();
    int attr = 6;
    size_t size = 0x23;
    WANT(U(d), U(attr), U(g_payload), U(size));
    return hipblasLtFusedEpilogueSetAttribute(d, attr, g_payload, size);
}

static hipblasStatus_t c_FusedEpilogueDestroy(struct want *w, int outs) {
    (void)outs;
    hipblasLtFusedEpilogueDescriptor_t d = fake();
    WANT(U(d));
    return hipblasLtFusedEpilogueDestroy(d);
}

static hipblasStatus_t c_FusedEpilogueRMSNormDescriptorCreate(struct want *w, int outs) {
    hipblasLtFusedEpilogueRMSNormDescriptor_t d = NULL;
    WANT(U(&d));
    hipblasStatus_t s = hipblasLtFusedEpilogueRMSNormDescriptorCreate(&d);
    if (outs) check_obj_out("hipblasLtFusedEpilogueRMSNormDescriptorCreate", d);
    return s;
}

static hipblasStatus_t c_FusedEpilogueRMSNormDescriptorSetBuffer(struct want *w, int outs) {
    (void)outs;
    hipblasLtFusedEpilogueRMSNormDescriptor_t d = fake();
    void *buffer = fake();
    size_t size = 0x400000001ull;
    WANT(U(d), U(buffer), U(size));
    return hipblasLtFusedEpilogueRMSNormDescriptorSetBuffer(d, buffer, size);
}

static hipblasStatus_t c_FusedEpilogueRMSNormDescriptorDestroy(struct want *w, int outs) {
    (void)outs;
    hipblasLtFusedEpilogueRMSNormDescriptor_t d = fake();
    WANT(U(d));
    return hipblasLtFusedEpilogueRMSNormDescriptorDestroy(d);
}

static hipblasStatus_t c_ExtSoftmax(struct want *w, int outs) {
    (void)outs;
    int dtype = 14;
    uint32_t m = 0x89abcdefu, n = 7, dim = 1;
    void *out = fake(), *in = fake(), *st = fake();
    WANT(U(dtype), U(m), U(n), U(dim), U(out), U(in), U(st));
    return hipblasltExtSoftmax(dtype, m, n, dim, out, in, st);
}

static hipblasStatus_t c_ExtLayerNorm(struct want *w, int outs) {
    (void)outs;
    int dtype = 2;
    void *out = fake(), *mean = fake(), *invvar = fake(), *in = fake();
    uint32_t m = 0xffffffffu, n = 3;
    float eps = 1.25e-5f;
    void *gamma = fake(), *beta = fake(), *st = fake();
    WANT(U(dtype), U(out), U(mean), U(invvar), U(in), U(m), U(n), U(eps), U(gamma), U(beta), U(st));
    return hipblasltExtLayerNorm(dtype, out, mean, invvar, in, m, n, eps, gamma, beta, st);
}

static hipblasStatus_t c_ExtAMax(struct want *w, int outs) {
    (void)outs;
    int dtype = 0, out_dtype = 14;
    void *out = fake(), *in = fake(), *st = fake();
    uint32_t m = 0x80000001u, n = 0x10000;
    WANT(U(dtype), U(out_dtype), U(out), U(in), U(m), U(n), U(st));
    return hipblasltExtAMax(dtype, out_dtype, out, in, m, n, st);
}

static hipblasStatus_t c_ExtAMaxWithScale(struct want *w, int outs) {
    (void)outs;
    int dtype = 2, out_dtype = -1, scale_dtype = 0x7fffffff;
    void *out = fake(), *out_d = fake(), *in = fake(), *in_scale = fake(), *st = fake();
    uint32_t m = 5, n = 0xfffffffeu;
    WANT(U(dtype), U(out_dtype), U(scale_dtype), U(out), U(out_d), U(in), U(in_scale), U(m), U(n),
         U(st));
    return hipblasltExtAMaxWithScale(dtype, out_dtype, scale_dtype, out, out_d, in, in_scale, m, n,
                                     st);
}

/* The 40 functions; `core` marks the 24 every hipBLASLt version has. */
static const struct fcase {
    const char *name;
    int core;
    case_fn fn;
} CASES[] = {
#define CORE(n) {"hipblasLt" #n, 1, c_##n}
#define NEWER(n) {"hipblasLt" #n, 0, c_##n}
#define EXTOP(n) {"hipblaslt" #n, 0, c_##n}
    CORE(GetVersion), CORE(GetGitRevision), CORE(GetArchName), CORE(Create), CORE(Destroy),
    CORE(MatrixLayoutCreate), CORE(MatrixLayoutDestroy), CORE(MatrixLayoutSetAttribute),
    CORE(MatrixLayoutGetAttribute), CORE(MatmulDescCreate), CORE(MatmulDescDestroy),
    CORE(MatmulDescSetAttribute), CORE(MatmulDescGetAttribute), CORE(MatmulPreferenceCreate),
    CORE(MatmulPreferenceDestroy), CORE(MatmulPreferenceSetAttribute),
    CORE(MatmulPreferenceGetAttribute), CORE(MatmulAlgoGetHeuristic), CORE(Matmul),
    CORE(MatrixTransformDescCreate), CORE(MatrixTransformDescDestroy),
    CORE(MatrixTransformDescSetAttribute), CORE(MatrixTransformDescGetAttribute),
    CORE(MatrixTransform),
    NEWER(SetSmCountTarget), NEWER(GetSmCountTarget), NEWER(SetUniformSummationOrder),
    NEWER(GetUniformSummationOrder), NEWER(CheckNumericsDrain), NEWER(FusedEpilogueCreate),
    NEWER(FusedEpilogueAdd), NEWER(FusedEpilogueSetAttribute), NEWER(FusedEpilogueDestroy),
    NEWER(FusedEpilogueRMSNormDescriptorCreate), NEWER(FusedEpilogueRMSNormDescriptorSetBuffer),
    NEWER(FusedEpilogueRMSNormDescriptorDestroy),
    EXTOP(ExtSoftmax), EXTOP(ExtLayerNorm), EXTOP(ExtAMax), EXTOP(ExtAMaxWithScale),
#undef CORE
#undef NEWER
#undef EXTOP
};
#define NUM_CASES ((int)(sizeof CASES / sizeof CASES[0]))
_Static_assert(sizeof CASES / sizeof CASES[0] == 40, "all 40 functions");

/* ---------------------------------------------------------------- oversize sizes */

/* A 4-byte attribute value passed with a size larger than its buffer (SIZE_MAX, or
 * a too-large size): hipBLASLt copies sizeof(field) and checks only size >= it, so
 * neither skinnylt nor the stub may touch a byte past the value. The value sits at
 * the end of a page followed by an inaccessible one: a read or write past it is a
 * SIGSEGV here (and an ASan report in the sanitizer build). */
static void test_oversize_sizes(void) {
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED, "mmap");
    if (map == MAP_FAILED) return;
    CHECK(mprotect(map + page, (size_t)page, PROT_NONE) == 0, "mprotect guard page");
    int32_t *v = (int32_t *)(map + page - sizeof(int32_t));
    const size_t sizes[] = {SIZE_MAX, 64};
    static const struct {
        const char *set, *get;
        int attr;
    } cases[] = {
        {"hipblasLtMatrixLayoutSetAttribute", "hipblasLtMatrixLayoutGetAttribute", HIPBLASLT_MATRIX_LAYOUT_TYPE},
        {"hipblasLtMatmulDescSetAttribute", "hipblasLtMatmulDescGetAttribute", HIPBLASLT_MATMUL_DESC_TRANSA},
        {"hipblasLtMatmulPreferenceSetAttribute", "hipblasLtMatmulPreferenceGetAttribute", HIPBLASLT_MATMUL_PREF_SEARCH_MODE},
    };
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        for (int c = 0; c < 3; c++) {
            void *obj = fake();
            size_t size = sizes[si], written = 0;
            hipblasStatus_t s;
            S.reset();
            *v = 0x0a0b0c0d;
            if (c == 0) s = hipblasLtMatrixLayoutSetAttribute(obj, cases[c].attr, v, size);
            else if (c == 1) s = hipblasLtMatmulDescSetAttribute(obj, cases[c].attr, v, size);
            else s = hipblasLtMatmulPreferenceSetAttribute(obj, cases[c].attr, v, size);
            CHECK_EQ(s, 0, cases[c].set);
            const struct stub_call *r = rec_of(cases[c].set);
            CHECK(r->args[3] == size, "%s: size 0x%" PRIx64 " reached the stub as 0x%" PRIx64, cases[c].set,
                  (uint64_t)size, r->args[3]);
            CHECK(r->payload == 0x0a0b0c0d, "%s with size 0x%zx: stub kept 0x%" PRIx64, cases[c].set, size,
                  r->payload);

            *v = -1;
            if (c == 0) s = hipblasLtMatrixLayoutGetAttribute(obj, cases[c].attr, v, size, &written);
            else if (c == 1) s = hipblasLtMatmulDescGetAttribute(obj, cases[c].attr, v, size, &written);
            else s = hipblasLtMatmulPreferenceGetAttribute(obj, cases[c].attr, v, size, &written);
            CHECK_EQ(s, 0, cases[c].get);
            uint8_t want[4];
            for (size_t j = 0; j < 4; j++) want[j] = stub_attr_byte(j);
            CHECK(memcmp(v, want, 4) == 0, "%s with size 0x%zx: value not written", cases[c].get, size);
        }
    }
    munmap(map, 2 * (size_t)page);
}

/* ---------------------------------------------------------------- driver */

/* Calls case i with the stub programmed to return `status`; checks that the stub saw
 * the caller's exact arguments, once, and that `status` came back unchanged. */
static void run_forwarded(int i, int status) {
    const struct fcase *c = &CASES[i];
    struct want w = {0};
    int failed_before = g_failed;
    S.reset();
    CHECK(S.set_status(c->name, status) == 0, "stub does not know %s", c->name);
    hipblasStatus_t got = c->fn(&w, 1);
    CHECK_EQ(got, status, c->name);
    CHECK_EQ(S.calls_to(c->name), 1, c->name);
    const struct stub_call *r = rec_of(c->name);
    CHECK_EQ(r->nargs, w.n, c->name);
    for (int a = 0; a < w.n && a < r->nargs; a++)
        CHECK(r->args[a] == w.args[a], "%s argument %d: stub got 0x%" PRIx64 ", caller passed 0x%" PRIx64,
              c->name, a, r->args[a], w.args[a]);
    /* skinnylt may make no other call, except learning the version after the first
     * successful hipblasLtCreate. */
    for (int k = 0; k < S.call_count(); k++) {
        const struct stub_call *o = S.call_at(k);
        if (strcmp(o->name, c->name) == 0) continue;
        int allowed = strcmp(c->name, "hipblasLtCreate") == 0 && status == 0 &&
                      strcmp(o->name, "hipblasLtGetVersion") == 0 && o->args[0] == r->out;
        CHECK(allowed, "%s: skinnylt also called %s", c->name, o->name);
    }
    if (g_failed != failed_before) fprintf(stderr, "  ^ in %s with status %d\n", c->name, status);
}

/* Calls case i against the core-only stub: a non-core function must return
 * NOT_SUPPORTED without any call reaching the stub. */
static void run_missing(int i) {
    const struct fcase *c = &CASES[i];
    struct want w = {0};
    S.reset();
    hipblasStatus_t got = c->fn(&w, 0);
    CHECK_EQ(got, HIPBLAS_STATUS_NOT_SUPPORTED, c->name);
    CHECK_EQ(S.call_count(), 0, c->name);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[2], "full") != 0 && strcmp(argv[2], "core-only") != 0)) {
        fprintf(stderr, "usage: %s <stub libhipblaslt.so.1> full|core-only\n", argv[0]);
        return 2;
    }
    const char *stub_path = argv[1];
    int core_only = strcmp(argv[2], "core-only") == 0;
    const char *env = getenv("SKINNYLT_REAL_LIB");
    CHECK(env && strcmp(env, stub_path) == 0, "SKINNYLT_REAL_LIB must be the stub path");

    /* The calls go to skinnylt, not to any hipBLASLt. */
    Dl_info mine, theirs;
    void *create = dlsym(RTLD_DEFAULT, "hipblasLtCreate");
    CHECK(create && dladdr(create, &theirs) && dladdr((void *)skinnylt_version, &mine) &&
              theirs.dli_fbase == mine.dli_fbase,
          "hipblasLtCreate does not resolve to skinnylt");

    /* skinnylt loads the stub itself, from $SKINNYLT_REAL_LIB. */
    CHECK(dlopen(stub_path, RTLD_NOW | RTLD_NOLOAD) == NULL, "stub loaded before skinnylt asked");
    CHECK_EQ(skinnylt_has_real_library(), 1, "skinnylt_has_real_library");
    void *stub = dlopen(stub_path, RTLD_NOW | RTLD_NOLOAD);
    CHECK(stub != NULL, "skinnylt did not load the stub %s", stub_path);
    if (!stub || stub_api_load(stub, &S) != 0) {
        fprintf(stderr, "cannot reach the stub's inspection API\n");
        return check_summary(argv[0]);
    }
    CHECK(dlsym(RTLD_DEFAULT, "stub_call_count") == NULL, "stub must not be in the global scope");

    skinnylt_reset_counters();
    int matmuls = 0;
    for (int i = 0; i < NUM_CASES; i++) {
        int has = dlsym(stub, CASES[i].name) != NULL;
        CHECK_EQ(has, core_only ? CASES[i].core : 1, CASES[i].name);
        if (core_only && !CASES[i].core) {
            run_missing(i);
            continue;
        }
        const int statuses[] = {0, HIPBLAS_STATUS_NOT_SUPPORTED, 1000 + i};
        for (int k = 0; k < (core_only ? 1 : 3); k++) {
            run_forwarded(i, statuses[core_only ? 2 : k]);
            matmuls += strcmp(CASES[i].name, "hipblasLtMatmul") == 0;
        }
    }

    /* Matmul with the real library's algo: forwarded untouched, as caller-algo,
     * before skinnylt looks at the descriptors (which it never saw). */
    skinnylt_counters ctr = {0, 0};
    CHECK_EQ(skinnylt_get_counters(&ctr), 0, "skinnylt_get_counters");
    CHECK_EQ(ctr.forwarded, matmuls, "counters.forwarded");
    CHECK_EQ(ctr.intercepted, 0, "counters.intercepted");
    CHECK_EQ(skinnylt_forwarded_for("caller-algo"), matmuls, "forwarded_for(caller-algo)");

    test_oversize_sizes();
    return check_summary(core_only ? "fidelity (core-only stub)" : "fidelity (full stub)");
}
