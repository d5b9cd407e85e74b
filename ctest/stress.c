/*
 * Multi-thread stress of skinnylt's C API (CPU only).
 *
 * N threads (16 by default) run for a bounded time, each mixing at random: handle
 * create/destroy (a churned handle and short-lived ones), descriptor, layout and
 * preference create/set/get/destroy (whole problems created and destroyed, so
 * addresses are reused across threads at once), hipblasLtMatmulAlgoGetHeuristic,
 * hipblasLtMatmul on problems skinnylt would run itself (decode: bf16/fp16 F.linear
 * with M <= 128 tokens, with and without bias) and on problems it must forward
 * (M > SKINNYLT_MAX_M, fp32, beta != 0 with a C that overlaps D two bytes off),
 * and skinnylt_set_enabled toggles. Matmul
 * and heuristic calls use the thread's own objects, or a handle and problems that
 * all threads share.
 *
 * What each Matmul does on a machine without a GPU is fixed (src/route.rs,
 * src/api/matmul.rs): routing runs first, and a call routing accepts reaches the
 * handle's engine, which has no GPU, so it is forwarded as "no-gpu". The reason
 * is, in route.rs's order: "disabled" while skinnylt_set_enabled(0) holds; else
 * "data-type" for fp32; else "c-d-overlap" for the overlapping C; else "too-many-tokens" for
 * M > 128; else "no-gpu". Interposed, every forward reaches the real library and
 * returns its status (the live stub: 0); standalone, each is refused with
 * HIPBLAS_STATUS_NOT_SUPPORTED. Either way it counts as forwarded, never as
 * intercepted. Toggles take a write lock that Matmul callers hold for reading, so
 * a thread knows which state its call saw; everything else runs concurrently with
 * them.
 *
 * Each thread tallies the calls it makes and the reason each Matmul must be
 * forwarded for. At the end: skinnylt's counters moved by exactly those tallies
 * (intercepted by 0, each reason by its count); interposed, the stub received
 * exactly one call per call made (skinnylt learns the version on the first handle,
 * made before the threads start), no call with a dead or wrong-kind object, and
 * every object it made was destroyed; and the resident set did not grow between
 * the end of the warm-up and the end of the run, both measured with the threads
 * parked holding the same objects (see RSS_SLACK).
 *
 * usage: stress interposed <live stub libhipblaslt.so.1> | stress standalone
 *        [-t seconds] [-j threads] [--no-rss]
 * The duration defaults to $STRESS_SECONDS, else 20. --no-rss: under ASan or
 * valgrind, whose own allocators (quarantine, shadow) decide the resident set.
 * Exits 77 (skipped) when skinnylt finds a usable GPU: it would run the GEMMs on
 * fake pointers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "hipblaslt_abi.h"
#include "skinnylt.h"
#include "stub/stub_live.h"

#define EXIT_SKIP 77
#define MAX_THREADS 256

/* Growth of the resident set allowed between the two parked measurements. Every
 * table (skinnylt's side table and handle map, the stub's registry, each thread's
 * routing memo) and every malloc arena has grown to its working size during the
 * warm-up, with the same objects live at both points; what remains is allocator
 * noise (an arena trimming or keeping a few free pages; a hash map doubling once
 * because more churns than ever overlapped: a few KiB). 1 MiB is far above that
 * and far below a per-call leak: the run makes millions of calls, so a leak of a
 * single byte per churned problem would already exceed it (the summary prints how
 * many there were). */
#define RSS_SLACK (1L << 20)

/* Device pointers: never dereferenced (no GPU), 16-byte aligned as routing asks. */
#define W_PTR ((const void *)(uintptr_t)0x10000000)
#define X_PTR ((const void *)(uintptr_t)0x20000000)
#define Y_PTR ((void *)(uintptr_t)0x30000000)
#define BIAS_PTR 0x40000000ull

/* ---------------------------------------------------------------- what is counted */

/* The hipBLASLt functions the threads call (each reaches the real library once). */
#define FUNCTIONS(X)                                                                        \
    X(hipblasLtGetVersion) X(hipblasLtGetArchName) X(hipblasLtCreate) X(hipblasLtDestroy)  \
    X(hipblasLtMatrixLayoutCreate) X(hipblasLtMatrixLayoutDestroy)                          \
    X(hipblasLtMatrixLayoutSetAttribute) X(hipblasLtMatrixLayoutGetAttribute)               \
    X(hipblasLtMatmulDescCreate) X(hipblasLtMatmulDescDestroy)                              \
    X(hipblasLtMatmulDescSetAttribute) X(hipblasLtMatmulDescGetAttribute)                   \
    X(hipblasLtMatmulPreferenceCreate) X(hipblasLtMatmulPreferenceDestroy)                  \
    X(hipblasLtMatmulPreferenceSetAttribute) X(hipblasLtMatmulPreferenceGetAttribute)       \
    X(hipblasLtMatmulAlgoGetHeuristic) X(hipblasLtMatmul)
#define AS_ENUM(f) FN_##f,
enum { FUNCTIONS(AS_ENUM) NUM_FN };
#define AS_NAME(f) #f,
static const char *const FN_NAMES[NUM_FN] = {FUNCTIONS(AS_NAME)};
/* The core functions the threads never call: the stub must see none of them. */
static const char *const UNCALLED[] = {
    "hipblasLtGetGitRevision", "hipblasLtMatrixTransformDescCreate", "hipblasLtMatrixTransformDescDestroy",
    "hipblasLtMatrixTransformDescSetAttribute", "hipblasLtMatrixTransformDescGetAttribute",
    "hipblasLtMatrixTransform"};

/* Forward reasons a Matmul here can have (skinnylt_forwarded_for names). */
enum { R_NO_GPU, R_TOO_MANY, R_DATA_TYPE, R_OVERLAP, R_DISABLED, NUM_REASONS };
static const char *const REASON_NAMES[NUM_REASONS] = {"no-gpu", "too-many-tokens", "data-type", "c-d-overlap",
                                                       "disabled"};

/* Problem kinds: the first three are decode GEMMs skinnylt would run itself. */
enum { P_BF16, P_F16, P_BIAS, P_LARGE_M, P_FP32, NUM_KINDS };

struct problem {
    int kind;
    uint64_t m, n, k;
    hipblasLtMatmulDesc_t desc;
    hipblasLtMatrixLayout_t a, b, d;
};

struct tally {
    long calls[NUM_FN];
    long reasons[NUM_REASONS];
    long churned_problems, churned_handles, toggles, ops;
};

/* ---------------------------------------------------------------- shared state */

static int g_interposed;
static struct stub_live_api g_stub;
/* A handle and one problem of each kind that every thread uses at once (made
 * before the threads start, destroyed after they end): hipBLASLt objects may be
 * shared by threads that only read them. */
static hipblasLtHandle_t g_shared_handle;
static struct problem g_shared[NUM_KINDS];
static pthread_rwlock_t g_toggle;
static pthread_barrier_t g_barrier;
static atomic_int g_phase; /* 0 warm-up, 1 park for the first RSS, 2 run, 3 park and finish */
static atomic_long g_failures;
static pthread_mutex_t g_print = PTHREAD_MUTEX_INITIALIZER;

/* Records a failed expectation from a worker thread (check.h is not thread-safe). */
#define WFAIL(...)                                                             \
    do {                                                                       \
        if (atomic_fetch_add(&g_failures, 1) < 20) {                           \
            pthread_mutex_lock(&g_print);                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            pthread_mutex_unlock(&g_print);                                    \
        }                                                                      \
    } while (0)
#define WEXPECT(got, want, what)                                                      \
    do {                                                                              \
        long long g_ = (long long)(got), w_ = (long long)(want);                      \
        if (g_ != w_) WFAIL("%s: got %lld, want %lld", (what), g_, w_);               \
    } while (0)

/* Calls hipBLASLt function `fn` through skinnylt, tallied. */
#define CALL(w, fn, ...) ((w)->t.calls[FN_##fn]++, fn(__VA_ARGS__))

/* ---------------------------------------------------------------- a worker */

#define NUM_PROBLEMS 6
struct worker {
    pthread_t thread;
    int id;
    uint64_t rng;
    hipblasLtHandle_t handle;
    hipblasLtMatmulPreference_t pref;
    struct problem p[NUM_PROBLEMS];
    struct tally t;
};

static uint64_t rnd(struct worker *w) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/* Status of a call skinnylt does not serve itself: the stub's (0) when interposed,
 * NOT_SUPPORTED when standalone without a GPU. */
static int refused_status(void) { return g_interposed ? HIPBLAS_STATUS_SUCCESS : HIPBLAS_STATUS_NOT_SUPPORTED; }

static void set_i32(struct worker *w, hipblasLtMatmulDesc_t d, int attr, int32_t v) {
    WEXPECT(CALL(w, hipblasLtMatmulDescSetAttribute, d, attr, &v, sizeof v), 0, "DescSetAttribute");
}

/* A PyTorch F.linear(x[M,K], W[N,K]) problem of `kind`, as hipBLASLt sees it. */
static void problem_make(struct worker *w, struct problem *p, int kind) {
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->m = kind == P_LARGE_M ? 129 + rnd(w) % 3968 : 1 + rnd(w) % 128;
    p->n = 256 * (1 + rnd(w) % 16);
    p->k = 512 * (1 + rnd(w) % 16);
    int type = kind == P_FP32 ? HIP_R_32F : kind == P_F16 ? HIP_R_16F : HIP_R_16BF;
    WEXPECT(CALL(w, hipblasLtMatmulDescCreate, &p->desc, HIPBLAS_COMPUTE_32F, HIP_R_32F), 0, "DescCreate");
    set_i32(w, p->desc, HIPBLASLT_MATMUL_DESC_TRANSA, HIPBLAS_OP_T);
    set_i32(w, p->desc, HIPBLASLT_MATMUL_DESC_TRANSB, HIPBLAS_OP_N);
    if (kind == P_BIAS) {
        set_i32(w, p->desc, HIPBLASLT_MATMUL_DESC_EPILOGUE, HIPBLASLT_EPILOGUE_BIAS);
        uint64_t bias = BIAS_PTR;
        WEXPECT(CALL(w, hipblasLtMatmulDescSetAttribute, p->desc, HIPBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                     sizeof bias),
                0, "DescSetAttribute(BIAS_POINTER)");
    }
    WEXPECT(CALL(w, hipblasLtMatrixLayoutCreate, &p->a, type, p->k, p->n, (int64_t)p->k), 0, "LayoutCreate A");
    WEXPECT(CALL(w, hipblasLtMatrixLayoutCreate, &p->b, type, p->k, p->m, (int64_t)p->k), 0, "LayoutCreate B");
    WEXPECT(CALL(w, hipblasLtMatrixLayoutCreate, &p->d, type, p->n, p->m, (int64_t)p->n), 0, "LayoutCreate D");
}

static void problem_free(struct worker *w, struct problem *p) {
    WEXPECT(CALL(w, hipblasLtMatrixLayoutDestroy, p->d), 0, "LayoutDestroy D");
    WEXPECT(CALL(w, hipblasLtMatrixLayoutDestroy, p->b), 0, "LayoutDestroy B");
    WEXPECT(CALL(w, hipblasLtMatrixLayoutDestroy, p->a), 0, "LayoutDestroy A");
    WEXPECT(CALL(w, hipblasLtMatmulDescDestroy, p->desc), 0, "DescDestroy");
    memset(p, 0, sizeof *p);
}

/* The reason routing must give, in route.rs's order of checks. */
static int expected_reason(int enabled, int kind, int overlap) {
    if (!enabled) return R_DISABLED;
    if (kind == P_FP32) return R_DATA_TYPE;
    if (overlap) return R_OVERLAP;
    if (kind == P_LARGE_M) return R_TOO_MANY;
    return R_NO_GPU;
}

static void matmul(struct worker *w, hipblasLtHandle_t h, const struct problem *p) {
    /* beta != 0 with C two bytes past D: an overlap skinnylt forwards. */
    int overlap = rnd(w) % 8 == 0;
    const float alpha = 1.0f, beta = overlap ? 1.0f : 0.0f;
    const char *c = (const char *)Y_PTR + (overlap ? 2 : 0);
    /* Read lock: no toggle between reading the state and the call. */
    pthread_rwlock_rdlock(&g_toggle);
    int enabled = skinnylt_is_enabled();
    int s = CALL(w, hipblasLtMatmul, h, p->desc, &alpha, W_PTR, p->a, X_PTR, p->b, &beta, c, p->d, Y_PTR, p->d,
                 NULL, NULL, 0, NULL);
    pthread_rwlock_unlock(&g_toggle);
    w->t.reasons[expected_reason(enabled, p->kind, overlap)]++;
    WEXPECT(s, refused_status(), "Matmul status");
}

static void heuristic(struct worker *w, hipblasLtHandle_t h, const struct problem *p) {
    hipblasLtMatmulHeuristicResult_t res[4];
    int requested = 1 + (int)(rnd(w) % 4), returned = -1;
    int s = CALL(w, hipblasLtMatmulAlgoGetHeuristic, h, p->desc, p->a, p->b, p->d, p->d, w->pref,
                 requested, res, &returned);
    if (g_interposed) {
        WEXPECT(s, 0, "heuristic status");
        WEXPECT(returned, requested < STUB_LIVE_MAX_HEURISTICS ? requested : STUB_LIVE_MAX_HEURISTICS,
                "heuristic returnAlgoCount");
    } else {
        /* No GPU: skinnylt has no algo for any problem. */
        WEXPECT(s, HIPBLAS_STATUS_NOT_SUPPORTED, "heuristic status");
        WEXPECT(returned, 0, "heuristic returnAlgoCount");
    }
}

/* A whole problem made, read back, used once and destroyed. */
static void churn_problem(struct worker *w) {
    struct problem p;
    problem_make(w, &p, (int)(rnd(w) % NUM_KINDS));
    int32_t one = 1;
    WEXPECT(CALL(w, hipblasLtMatrixLayoutSetAttribute, p.b, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &one, sizeof one),
            0, "LayoutSetAttribute(BATCH_COUNT)");
    int32_t trans = -1;
    size_t written = 0;
    WEXPECT(CALL(w, hipblasLtMatmulDescGetAttribute, p.desc, HIPBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans,
                 &written),
            0, "DescGetAttribute(TRANSA)");
    WEXPECT(trans, HIPBLAS_OP_T, "TRANSA read back");
    WEXPECT(written, sizeof trans, "TRANSA size written");
    uint64_t rows = 0;
    WEXPECT(CALL(w, hipblasLtMatrixLayoutGetAttribute, p.a, HIPBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows,
                 &written),
            0, "LayoutGetAttribute(ROWS)");
    WEXPECT(rows, p.k, "ROWS read back");
    matmul(w, w->handle, &p);
    problem_free(w, &p);
    w->t.churned_problems++;
}

static void churn_pref(struct worker *w) {
    hipblasLtMatmulPreference_t pref = NULL;
    WEXPECT(CALL(w, hipblasLtMatmulPreferenceCreate, &pref), 0, "PreferenceCreate");
    uint64_t bytes = (rnd(w) % 64) << 20, back = ~0ull;
    size_t written = 0;
    WEXPECT(CALL(w, hipblasLtMatmulPreferenceSetAttribute, pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes,
                 sizeof bytes),
            0, "PreferenceSetAttribute");
    WEXPECT(CALL(w, hipblasLtMatmulPreferenceGetAttribute, pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &back,
                 sizeof back, &written),
            0, "PreferenceGetAttribute");
    WEXPECT(back, bytes, "MAX_WORKSPACE_BYTES read back");
    WEXPECT(CALL(w, hipblasLtMatmulPreferenceDestroy, pref), 0, "PreferenceDestroy");
}

/* A new handle replaces the thread's (checked through GetVersion), or a
 * short-lived one runs one Matmul. */
static void churn_handle(struct worker *w, int replace) {
    hipblasLtHandle_t h = NULL;
    WEXPECT(CALL(w, hipblasLtCreate, &h), 0, "Create");
    if (replace) {
        int v = 0;
        WEXPECT(CALL(w, hipblasLtGetVersion, h, &v), 0, "GetVersion");
        WEXPECT(v, g_interposed ? 100202 : 100200, "GetVersion value");
        WEXPECT(CALL(w, hipblasLtDestroy, w->handle), 0, "Destroy");
        w->handle = h;
    } else {
        matmul(w, h, &w->p[rnd(w) % NUM_PROBLEMS]);
        WEXPECT(CALL(w, hipblasLtDestroy, h), 0, "Destroy (short-lived)");
    }
    w->t.churned_handles++;
}

static void arch_name(struct worker *w) {
    char *name = NULL;
    WEXPECT(CALL(w, hipblasLtGetArchName, &name), 0, "GetArchName");
    if (!name || !name[0]) WFAIL("GetArchName returned no name");
    free(name); /* the caller owns it */
}

static void toggle(struct worker *w) {
    pthread_rwlock_wrlock(&g_toggle);
    skinnylt_set_enabled(!skinnylt_is_enabled());
    pthread_rwlock_unlock(&g_toggle);
    w->t.toggles++;
}

static void one_op(struct worker *w) {
    unsigned r = (unsigned)(rnd(w) % 1000);
    struct problem *p = &w->p[rnd(w) % NUM_PROBLEMS];
    if (r < 350) matmul(w, w->handle, p);
    else if (r < 450) matmul(w, g_shared_handle, &g_shared[rnd(w) % NUM_KINDS]);
    else if (r < 520) heuristic(w, w->handle, p);
    else if (r < 550) heuristic(w, g_shared_handle, &g_shared[rnd(w) % NUM_KINDS]);
    else if (r < 700) churn_problem(w);
    else if (r < 780) {
        problem_free(w, p);
        problem_make(w, p, (int)(rnd(w) % NUM_KINDS));
    } else if (r < 840) churn_handle(w, 1);
    else if (r < 900) churn_handle(w, 0);
    else if (r < 960) churn_pref(w);
    else if (r < 995) arch_name(w);
    else toggle(w);
    w->t.ops++;
}

/* Runs ops until the phase moves past `phase`. */
static void run_until(struct worker *w, int phase) {
    while (atomic_load_explicit(&g_phase, memory_order_relaxed) == phase) one_op(w);
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    WEXPECT(CALL(w, hipblasLtCreate, &w->handle), 0, "Create");
    WEXPECT(CALL(w, hipblasLtMatmulPreferenceCreate, &w->pref), 0, "PreferenceCreate");
    for (int i = 0; i < NUM_PROBLEMS; i++) problem_make(w, &w->p[i], i % NUM_KINDS);
    run_until(w, 0);
    pthread_barrier_wait(&g_barrier); /* parked: first RSS */
    pthread_barrier_wait(&g_barrier);
    run_until(w, 2);
    pthread_barrier_wait(&g_barrier); /* parked: second RSS */
    pthread_barrier_wait(&g_barrier);
    for (int i = 0; i < NUM_PROBLEMS; i++) problem_free(w, &w->p[i]);
    WEXPECT(CALL(w, hipblasLtMatmulPreferenceDestroy, w->pref), 0, "PreferenceDestroy");
    WEXPECT(CALL(w, hipblasLtDestroy, w->handle), 0, "Destroy");
    return NULL;
}

/* ---------------------------------------------------------------- main */

static long rss_bytes(void) {
    long pages = -1, resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {}
}

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s interposed <live stub> | standalone  [-t seconds] [-j threads] [--no-rss]\n", argv0);
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage(argv[0]);
    int argi = 1;
    const char *stub_path = NULL;
    if (strcmp(argv[argi], "interposed") == 0 && argc > 2) {
        g_interposed = 1;
        stub_path = argv[2];
        argi = 3;
    } else if (strcmp(argv[argi], "standalone") == 0) {
        argi = 2;
    } else {
        return usage(argv[0]);
    }
    double seconds = getenv("STRESS_SECONDS") ? atof(getenv("STRESS_SECONDS")) : 20.0;
    int threads = 16, check_rss = 1;
    for (; argi < argc; argi++) {
        if (strcmp(argv[argi], "-t") == 0 && argi + 1 < argc) seconds = atof(argv[++argi]);
        else if (strcmp(argv[argi], "-j") == 0 && argi + 1 < argc) threads = atoi(argv[++argi]);
        else if (strcmp(argv[argi], "--no-rss") == 0) check_rss = 0;
        else return usage(argv[0]);
    }
    if (seconds <= 0 || threads < 1 || threads > MAX_THREADS) return usage(argv[0]);

    CHECK_EQ(skinnylt_has_real_library(), g_interposed, "skinnylt_has_real_library");
    if (g_interposed) {
        void *stub = dlopen(stub_path, RTLD_NOW | RTLD_NOLOAD);
        CHECK(stub != NULL, "skinnylt did not load the stub %s", stub_path);
        if (!stub || stub_live_api_load(stub, &g_stub) != 0) {
            fprintf(stderr, "cannot reach the live stub's inspection API\n");
            return check_summary("stress");
        }
    }
    if (g_failed) return check_summary("stress");
    if (skinnylt_preload(0) == 0) {
        printf("skinnylt found a usable GPU: this test needs a machine without one; skipped\n");
        return EXIT_SKIP;
    }

    /* The first handle makes skinnylt learn the real library's version (one extra
     * GetVersion); from then on every call reaches the stub exactly once. */
    hipblasLtHandle_t first = NULL;
    CHECK_EQ(hipblasLtCreate(&first), 0, "first Create");
    CHECK_EQ(hipblasLtDestroy(first), 0, "first Destroy");
    /* The shared objects, made by a worker that never runs (its calls are not
     * counted: the stub's counts start below). */
    static struct worker maker;
    maker.rng = 0x2545F4914F6CDD1Dull;
    CHECK_EQ(hipblasLtCreate(&g_shared_handle), 0, "shared Create");
    for (int k = 0; k < NUM_KINDS; k++) problem_make(&maker, &g_shared[k], k);
    if (g_interposed) {
        CHECK_EQ(g_stub.calls_to("hipblasLtGetVersion"), 1, "skinnylt's version probe");
        g_stub.reset();
    }
    skinnylt_set_enabled(1);
    skinnylt_counters before = {0, 0};
    CHECK_EQ(skinnylt_get_counters(&before), 0, "get_counters");
    int64_t reasons_before[NUM_REASONS];
    for (int r = 0; r < NUM_REASONS; r++) reasons_before[r] = skinnylt_forwarded_for(REASON_NAMES[r]);

    /* Writers first: with 16 readers a reader-preferring lock would starve toggles. */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&g_toggle, &ra);
    pthread_barrier_init(&g_barrier, NULL, (unsigned)threads + 1);

    static struct worker workers[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        workers[i].id = i;
        workers[i].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
        if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    double warm = seconds / 10 < 0.2 ? 0.2 : seconds / 10 > 2 ? 2 : seconds / 10;
    sleep_s(warm);
    atomic_store(&g_phase, 1);
    pthread_barrier_wait(&g_barrier);
    long rss_warm = rss_bytes();
    atomic_store(&g_phase, 2);
    pthread_barrier_wait(&g_barrier);
    sleep_s(seconds - warm > 0 ? seconds - warm : 0);
    atomic_store(&g_phase, 3);
    pthread_barrier_wait(&g_barrier);
    long rss_end = rss_bytes();
    pthread_barrier_wait(&g_barrier);
    for (int i = 0; i < threads; i++) pthread_join(workers[i].thread, NULL);
    skinnylt_set_enabled(1);

    struct tally sum;
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < threads; i++) {
        const struct tally *t = &workers[i].t;
        for (int f = 0; f < NUM_FN; f++) sum.calls[f] += t->calls[f];
        for (int r = 0; r < NUM_REASONS; r++) sum.reasons[r] += t->reasons[r];
        sum.churned_problems += t->churned_problems;
        sum.churned_handles += t->churned_handles;
        sum.toggles += t->toggles;
        sum.ops += t->ops;
    }
    long fails = atomic_load(&g_failures);
    CHECK(fails == 0, "%ld failed expectations in the threads (first ones above)", fails);

    /* skinnylt's counters: nothing intercepted, every Matmul forwarded for its reason. */
    skinnylt_counters after = {0, 0};
    CHECK_EQ(skinnylt_get_counters(&after), 0, "get_counters");
    CHECK_EQ(after.intercepted - before.intercepted, 0, "intercepted (no GPU)");
    CHECK_EQ(after.forwarded - before.forwarded, sum.calls[FN_hipblasLtMatmul], "forwarded = Matmul calls");
    long reasons_total = 0;
    for (int r = 0; r < NUM_REASONS; r++) {
        CHECK_EQ(skinnylt_forwarded_for(REASON_NAMES[r]) - reasons_before[r], sum.reasons[r], REASON_NAMES[r]);
        reasons_total += sum.reasons[r];
    }
    CHECK_EQ(reasons_total, sum.calls[FN_hipblasLtMatmul], "reasons add up to the Matmul calls");

    if (g_interposed) {
        for (int f = 0; f < NUM_FN; f++) CHECK_EQ(g_stub.calls_to(FN_NAMES[f]), sum.calls[f], FN_NAMES[f]);
        for (size_t u = 0; u < sizeof UNCALLED / sizeof UNCALLED[0]; u++)
            CHECK_EQ(g_stub.calls_to(UNCALLED[u]), 0, UNCALLED[u]);
        long dead = g_stub.dead_calls();
        CHECK_EQ(dead, 0, "calls the stub got with dead or wrong-kind objects");
        if (dead) {
            char report[2048];
            g_stub.dead_report(report, sizeof report);
            fprintf(stderr, "first dead calls:\n%s", report);
        }
    }
    for (int k = 0; k < NUM_KINDS; k++) problem_free(&maker, &g_shared[k]);
    CHECK_EQ(hipblasLtDestroy(g_shared_handle), 0, "shared Destroy");
    long fails_after = atomic_load(&g_failures);
    CHECK(fails_after == fails, "%ld failed expectations freeing the shared objects", fails_after - fails);
    if (g_interposed) {
        CHECK_EQ(g_stub.dead_calls(), 0, "dead calls freeing the shared objects");
        CHECK_EQ(g_stub.live_objects(), 0, "stub objects left alive");
    }

    printf("stress (%s): %d threads, %.1f s (%.1f s warm-up): %ld ops, %ld Matmul (no-gpu %ld, too-many-tokens %ld, "
           "data-type %ld, c-d-overlap %ld, disabled %ld), %ld heuristic, %ld problems and %ld handles churned, %ld toggles\n",
           g_interposed ? "interposed" : "standalone", threads, seconds, warm, sum.ops, sum.calls[FN_hipblasLtMatmul],
           sum.reasons[R_NO_GPU], sum.reasons[R_TOO_MANY], sum.reasons[R_DATA_TYPE], sum.reasons[R_OVERLAP],
           sum.reasons[R_DISABLED], sum.calls[FN_hipblasLtMatmulAlgoGetHeuristic], sum.churned_problems,
           sum.churned_handles, sum.toggles);
    CHECK(sum.reasons[R_NO_GPU] > 0 && sum.reasons[R_DISABLED] > 0 && sum.toggles > 0,
          "the run was too short to mix every kind of call");
    if (check_rss) {
        printf("resident set: %.1f MiB after warm-up, %.1f MiB at the end (%+ld KiB; allowed %ld KiB)\n",
               rss_warm / 1048576.0, rss_end / 1048576.0, (rss_end - rss_warm) / 1024, RSS_SLACK / 1024);
        CHECK(rss_warm > 0 && rss_end > 0, "cannot read /proc/self/statm");
        CHECK(rss_end - rss_warm <= RSS_SLACK, "resident set grew by %ld KiB during the run", (rss_end - rss_warm) / 1024);
    }
    return check_summary(g_interposed ? "stress (interposed)" : "stress (standalone)");
}
