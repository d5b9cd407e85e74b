/*
 * A stand-in "real hipBLASLt" for NVIDIA machines: libhipblaslt.so.1 exporting
 * the hipBLASLt C functions that skinnylt forwards, each translated to cuBLASLt
 * (libcublasLt.so.13 or .12, opened with dlopen). It lets `skinnylt stress` run
 * skinnylt interposed, forwarding to a vendor library, where no ROCm exists.
 *
 * Objects pass straight through: a hipblasLtHandle_t is the cublasLtHandle_t,
 * descriptors and layouts are cuBLASLt's own. What differs between the two APIs
 * is translated per call: attribute ids, compute types, operation and status
 * values, and the algo, which does not fit hipBLASLt's 16 bytes (a process-wide
 * table of the cuBLASLt algos the heuristic returned; hipBLASLt's algo holds the
 * index). The enum values are written out here so that this builds without the
 * CUDA headers; built with -DSTANDIN_CHECK_HEADERS and cublasLt.h on the include
 * path, every one is checked against the header at compile time.
 *
 * Handles are the one object not passed through: cublasLtCreate can return the
 * same value to several live handles (seen with CUDA 13's cuBLASLt), where
 * hipBLASLt allocates a new one per call, and skinnylt keys its per-handle state
 * by that value. Each hipBLASLt handle is therefore a small object of its own
 * holding cuBLASLt's; STANDIN_RAW_HANDLES=1 passes cuBLASLt's through instead
 * (to show what a library with aliased handles does to skinnylt).
 *
 * It defines hipblasLtCreate and not skinnylt_version, so skinnylt accepts it as
 * the real library. Thread-safe: cuBLASLt handles and descriptors are, and the
 * algo and handle tables take a lock.
 *
 * Build: gcc -O2 -shared -fPIC -Wl,-Bsymbolic -Wl,-soname,libhipblaslt.so.1 \
 *            -o libhipblaslt.so.1 hipblaslt_cublaslt.c -ldl -lpthread
 * Environment: STANDIN_CUBLASLT=path picks the cuBLASLt to open (else
 * SKINNYLT_CUBLASLT, then the sonames); STANDIN_LOG=1 prints every failed call.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- hipBLASLt values (hipblaslt.h, hipblas-common.h; skinnylt's src/abi.rs) ---- */
enum {
    HIP_SUCCESS = 0, HIP_NOT_INITIALIZED = 1, HIP_ALLOC_FAILED = 2, HIP_INVALID_VALUE = 3,
    HIP_MAPPING_ERROR = 4, HIP_EXECUTION_FAILED = 5, HIP_INTERNAL_ERROR = 6, HIP_NOT_SUPPORTED = 7,
    HIP_ARCH_MISMATCH = 8, HIP_UNKNOWN = 11,
};
enum { HIP_OP_N = 111, HIP_OP_T = 112, HIP_OP_C = 113 };
/* hipblasLtMatmulDescAttributes_t */
enum {
    HIP_DESC_TRANSA = 0, HIP_DESC_TRANSB = 1, HIP_DESC_EPILOGUE = 2, HIP_DESC_BIAS_POINTER = 3,
    HIP_DESC_BIAS_DATA_TYPE = 4, HIP_DESC_A_SCALE_POINTER = 5, HIP_DESC_B_SCALE_POINTER = 6,
    HIP_DESC_C_SCALE_POINTER = 7, HIP_DESC_D_SCALE_POINTER = 8, HIP_DESC_EPILOGUE_AUX_SCALE_POINTER = 9,
    HIP_DESC_EPILOGUE_AUX_POINTER = 10, HIP_DESC_EPILOGUE_AUX_LD = 11, HIP_DESC_EPILOGUE_AUX_BATCH_STRIDE = 12,
    HIP_DESC_POINTER_MODE = 13, HIP_DESC_AMAX_D_POINTER = 14, HIP_DESC_EPILOGUE_AUX_DATA_TYPE = 22,
};
/* hipblasLtMatrixLayoutAttribute_t */
enum {
    HIP_LAYOUT_BATCH_COUNT = 0, HIP_LAYOUT_STRIDED_BATCH_OFFSET = 1, HIP_LAYOUT_TYPE = 2,
    HIP_LAYOUT_ORDER = 3, HIP_LAYOUT_ROWS = 4, HIP_LAYOUT_COLS = 5, HIP_LAYOUT_LD = 6,
};
/* hipblasLtMatmulPreferenceAttributes_t */
enum { HIP_PREF_SEARCH_MODE = 0, HIP_PREF_MAX_WORKSPACE_BYTES = 1 };
/* hipblasComputeType_t */
enum {
    HIP_COMPUTE_16F = 0, HIP_COMPUTE_16F_PEDANTIC = 1, HIP_COMPUTE_32F = 2, HIP_COMPUTE_32F_PEDANTIC = 3,
    HIP_COMPUTE_32F_FAST_16F = 4, HIP_COMPUTE_32F_FAST_16BF = 5, HIP_COMPUTE_32F_FAST_TF32 = 6, HIP_COMPUTE_64F = 7,
};
/* hipDataType values that equal cudaDataType's (R_32F, R_64F, R_16F, R_8I, R_16BF);
 * 255 is HIPBLASLT_DATATYPE_INVALID, the bias type's "same as D". */
#define HIP_DATATYPE_INVALID 255
/* hipBLASLt 1.2 (ROCm 7.2): MAJOR * 100000 + MINOR * 100 + PATCH. */
#define STANDIN_VERSION 100200

/* hipblasLtMatmulAlgo_t (24 bytes) and hipblasLtMatmulHeuristicResult_t (56 bytes). */
typedef struct {
    uint8_t data[16];
    size_t max_workspace_bytes;
} hip_algo;
typedef struct {
    hip_algo algo;
    size_t workspace_size;
    int state;
    float waves_count;
    int reserved[4];
} hip_heuristic;
_Static_assert(sizeof(hip_algo) == 24, "hipblasLtMatmulAlgo_t is 24 bytes");
_Static_assert(sizeof(hip_heuristic) == 56, "hipblasLtMatmulHeuristicResult_t is 56 bytes");

/* ---- cuBLASLt values (cublasLt.h, cublas_api.h, library_types.h of CUDA 12/13) ---- */
enum {
    CU_SUCCESS = 0, CU_NOT_INITIALIZED = 1, CU_ALLOC_FAILED = 3, CU_INVALID_VALUE = 7,
    CU_ARCH_MISMATCH = 8, CU_MAPPING_ERROR = 11, CU_EXECUTION_FAILED = 13, CU_INTERNAL_ERROR = 14,
    CU_NOT_SUPPORTED = 15,
};
enum { CU_OP_N = 0, CU_OP_T = 1, CU_OP_C = 2 };
enum {
    CU_DESC_POINTER_MODE = 2, CU_DESC_TRANSA = 3, CU_DESC_TRANSB = 4, CU_DESC_EPILOGUE = 7,
    CU_DESC_BIAS_POINTER = 8, CU_DESC_EPILOGUE_AUX_POINTER = 11, CU_DESC_EPILOGUE_AUX_LD = 12,
    CU_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13, CU_DESC_A_SCALE_POINTER = 17, CU_DESC_B_SCALE_POINTER = 18,
    CU_DESC_C_SCALE_POINTER = 19, CU_DESC_D_SCALE_POINTER = 20, CU_DESC_AMAX_D_POINTER = 21,
    CU_DESC_EPILOGUE_AUX_DATA_TYPE = 22, CU_DESC_EPILOGUE_AUX_SCALE_POINTER = 23, CU_DESC_BIAS_DATA_TYPE = 26,
};
enum {
    CU_LAYOUT_TYPE = 0, CU_LAYOUT_ORDER = 1, CU_LAYOUT_ROWS = 2, CU_LAYOUT_COLS = 3, CU_LAYOUT_LD = 4,
    CU_LAYOUT_BATCH_COUNT = 5, CU_LAYOUT_STRIDED_BATCH_OFFSET = 6,
};
enum { CU_PREF_SEARCH_MODE = 0, CU_PREF_MAX_WORKSPACE_BYTES = 1 };
enum {
    CU_COMPUTE_16F = 64, CU_COMPUTE_16F_PEDANTIC = 65, CU_COMPUTE_32F = 68, CU_COMPUTE_32F_PEDANTIC = 69,
    CU_COMPUTE_64F = 70, CU_COMPUTE_32F_FAST_16F = 74, CU_COMPUTE_32F_FAST_16BF = 75, CU_COMPUTE_32F_FAST_TF32 = 77,
};
typedef struct {
    uint64_t data[8];
} cu_algo;
typedef struct {
    cu_algo algo;
    size_t workspace_size;
    int state;
    float waves_count;
    int reserved[4];
} cu_heuristic;
_Static_assert(sizeof(cu_heuristic) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");

#ifdef STANDIN_CHECK_HEADERS
#include <cublasLt.h>
#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
SAME(CU_SUCCESS, CUBLAS_STATUS_SUCCESS); SAME(CU_NOT_INITIALIZED, CUBLAS_STATUS_NOT_INITIALIZED);
SAME(CU_ALLOC_FAILED, CUBLAS_STATUS_ALLOC_FAILED); SAME(CU_INVALID_VALUE, CUBLAS_STATUS_INVALID_VALUE);
SAME(CU_ARCH_MISMATCH, CUBLAS_STATUS_ARCH_MISMATCH); SAME(CU_MAPPING_ERROR, CUBLAS_STATUS_MAPPING_ERROR);
SAME(CU_EXECUTION_FAILED, CUBLAS_STATUS_EXECUTION_FAILED); SAME(CU_INTERNAL_ERROR, CUBLAS_STATUS_INTERNAL_ERROR);
SAME(CU_NOT_SUPPORTED, CUBLAS_STATUS_NOT_SUPPORTED);
SAME(CU_OP_N, CUBLAS_OP_N); SAME(CU_OP_T, CUBLAS_OP_T); SAME(CU_OP_C, CUBLAS_OP_C);
SAME(CU_DESC_POINTER_MODE, CUBLASLT_MATMUL_DESC_POINTER_MODE); SAME(CU_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSA);
SAME(CU_DESC_TRANSB, CUBLASLT_MATMUL_DESC_TRANSB); SAME(CU_DESC_EPILOGUE, CUBLASLT_MATMUL_DESC_EPILOGUE);
SAME(CU_DESC_BIAS_POINTER, CUBLASLT_MATMUL_DESC_BIAS_POINTER);
SAME(CU_DESC_EPILOGUE_AUX_POINTER, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER);
SAME(CU_DESC_EPILOGUE_AUX_LD, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
SAME(CU_DESC_EPILOGUE_AUX_BATCH_STRIDE, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE);
SAME(CU_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER);
SAME(CU_DESC_B_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER);
SAME(CU_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_C_SCALE_POINTER);
SAME(CU_DESC_D_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER);
SAME(CU_DESC_AMAX_D_POINTER, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER);
SAME(CU_DESC_EPILOGUE_AUX_DATA_TYPE, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE);
SAME(CU_DESC_EPILOGUE_AUX_SCALE_POINTER, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER);
SAME(CU_DESC_BIAS_DATA_TYPE, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
SAME(CU_LAYOUT_TYPE, CUBLASLT_MATRIX_LAYOUT_TYPE); SAME(CU_LAYOUT_ORDER, CUBLASLT_MATRIX_LAYOUT_ORDER);
SAME(CU_LAYOUT_ROWS, CUBLASLT_MATRIX_LAYOUT_ROWS); SAME(CU_LAYOUT_COLS, CUBLASLT_MATRIX_LAYOUT_COLS);
SAME(CU_LAYOUT_LD, CUBLASLT_MATRIX_LAYOUT_LD); SAME(CU_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
SAME(CU_LAYOUT_STRIDED_BATCH_OFFSET, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
SAME(CU_PREF_SEARCH_MODE, CUBLASLT_MATMUL_PREF_SEARCH_MODE);
SAME(CU_PREF_MAX_WORKSPACE_BYTES, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
SAME(CU_COMPUTE_16F, CUBLAS_COMPUTE_16F); SAME(CU_COMPUTE_16F_PEDANTIC, CUBLAS_COMPUTE_16F_PEDANTIC);
SAME(CU_COMPUTE_32F, CUBLAS_COMPUTE_32F); SAME(CU_COMPUTE_32F_PEDANTIC, CUBLAS_COMPUTE_32F_PEDANTIC);
SAME(CU_COMPUTE_64F, CUBLAS_COMPUTE_64F); SAME(CU_COMPUTE_32F_FAST_16F, CUBLAS_COMPUTE_32F_FAST_16F);
SAME(CU_COMPUTE_32F_FAST_16BF, CUBLAS_COMPUTE_32F_FAST_16BF);
SAME(CU_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F_FAST_TF32);
SAME(CUDA_R_32F, 0); SAME(CUDA_R_64F, 1); SAME(CUDA_R_16F, 2); SAME(CUDA_R_8I, 3); SAME(CUDA_R_16BF, 14);
SAME(CUBLASLT_ORDER_COL, 0); SAME(CUBLASLT_ORDER_ROW, 1);
SAME(CUBLASLT_POINTER_MODE_HOST, 0); SAME(CUBLASLT_POINTER_MODE_DEVICE, 1);
SAME(CUBLASLT_EPILOGUE_DEFAULT, 1); SAME(CUBLASLT_EPILOGUE_RELU, 2); SAME(CUBLASLT_EPILOGUE_BIAS, 4);
SAME(CUBLASLT_EPILOGUE_RELU_BIAS, 6); SAME(CUBLASLT_EPILOGUE_GELU, 32); SAME(CUBLASLT_EPILOGUE_GELU_BIAS, 36);
_Static_assert(sizeof(cu_heuristic) == sizeof(cublasLtMatmulHeuristicResult_t), "heuristic result size");
_Static_assert(offsetof(cu_heuristic, workspace_size) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize), "workspaceSize");
_Static_assert(offsetof(cu_heuristic, state) == offsetof(cublasLtMatmulHeuristicResult_t, state), "state");
_Static_assert(offsetof(cu_heuristic, waves_count) == offsetof(cublasLtMatmulHeuristicResult_t, wavesCount), "wavesCount");
_Static_assert(sizeof(cu_algo) == sizeof(cublasLtMatmulAlgo_t), "algo size");
#endif

/* ---- cuBLASLt, loaded once ---- */
typedef void *ptr;
static struct {
    int (*Create)(ptr *);
    int (*Destroy)(ptr);
    int (*MatmulDescCreate)(ptr *, int, int);
    int (*MatmulDescDestroy)(ptr);
    int (*MatmulDescSetAttribute)(ptr, int, const void *, size_t);
    int (*MatmulDescGetAttribute)(ptr, int, void *, size_t, size_t *);
    int (*MatrixLayoutCreate)(ptr *, int, uint64_t, uint64_t, int64_t);
    int (*MatrixLayoutDestroy)(ptr);
    int (*MatrixLayoutSetAttribute)(ptr, int, const void *, size_t);
    int (*MatrixLayoutGetAttribute)(ptr, int, void *, size_t, size_t *);
    int (*MatmulPreferenceCreate)(ptr *);
    int (*MatmulPreferenceDestroy)(ptr);
    int (*MatmulPreferenceSetAttribute)(ptr, int, const void *, size_t);
    int (*MatmulPreferenceGetAttribute)(ptr, int, void *, size_t, size_t *);
    int (*MatmulAlgoGetHeuristic)(ptr, ptr, ptr, ptr, ptr, ptr, ptr, int, cu_heuristic *, int *);
    int (*Matmul)(ptr, ptr, const void *, const void *, ptr, const void *, ptr, const void *, const void *, ptr,
                  void *, ptr, const cu_algo *, void *, size_t, ptr);
} lt;
static int lt_ok;
static int log_failures;
static pthread_once_t lt_once = PTHREAD_ONCE_INIT;

/* What the stand-in did, for `skinnylt stress` to compare with skinnylt's
 * forward counters (read through standin_stats). */
static uint64_t n_matmul, n_matmul_failed, n_heuristic, n_unknown_algo, n_created, n_aliased;
static int raw_handles;

static void load(void) {
    const char *names[] = {getenv("STANDIN_CUBLASLT"), getenv("SKINNYLT_CUBLASLT"), "libcublasLt.so.13", "libcublasLt.so.12"};
    void *lib = NULL;
    const char *used = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) {
        if (names[i] && *names[i]) {
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            used = names[i];
        }
    }
    const char *log = getenv("STANDIN_LOG"), *raw = getenv("STANDIN_RAW_HANDLES");
    log_failures = log && *log && strcmp(log, "0") != 0;
    raw_handles = raw && *raw && strcmp(raw, "0") != 0;
    if (!lib) {
        fprintf(stderr, "standin: no cuBLASLt (set STANDIN_CUBLASLT): %s\n", dlerror());
        return;
    }
    int missing = 0;
#define RESOLVE(name)                                                        \
    do {                                                                     \
        *(void **)&lt.name = dlsym(lib, "cublasLt" #name);                   \
        if (!lt.name) {                                                      \
            fprintf(stderr, "standin: %s lacks cublasLt%s\n", used, #name); \
            missing++;                                                       \
        }                                                                    \
    } while (0)
    RESOLVE(Create); RESOLVE(Destroy);
    RESOLVE(MatmulDescCreate); RESOLVE(MatmulDescDestroy); RESOLVE(MatmulDescSetAttribute); RESOLVE(MatmulDescGetAttribute);
    RESOLVE(MatrixLayoutCreate); RESOLVE(MatrixLayoutDestroy); RESOLVE(MatrixLayoutSetAttribute); RESOLVE(MatrixLayoutGetAttribute);
    RESOLVE(MatmulPreferenceCreate); RESOLVE(MatmulPreferenceDestroy); RESOLVE(MatmulPreferenceSetAttribute);
    RESOLVE(MatmulPreferenceGetAttribute); RESOLVE(MatmulAlgoGetHeuristic); RESOLVE(Matmul);
#undef RESOLVE
    lt_ok = missing == 0;
    if (log_failures)
        fprintf(stderr, "standin: forwarding to %s\n", used);
}

static int ready(void) {
    pthread_once(&lt_once, load);
    return lt_ok;
}

static int status(int s, const char *what) {
    int h;
    switch (s) {
    case CU_SUCCESS: return HIP_SUCCESS;
    case CU_NOT_INITIALIZED: h = HIP_NOT_INITIALIZED; break;
    case CU_ALLOC_FAILED: h = HIP_ALLOC_FAILED; break;
    case CU_INVALID_VALUE: h = HIP_INVALID_VALUE; break;
    case CU_ARCH_MISMATCH: h = HIP_ARCH_MISMATCH; break;
    case CU_MAPPING_ERROR: h = HIP_MAPPING_ERROR; break;
    case CU_EXECUTION_FAILED: h = HIP_EXECUTION_FAILED; break;
    case CU_INTERNAL_ERROR: h = HIP_INTERNAL_ERROR; break;
    case CU_NOT_SUPPORTED: h = HIP_NOT_SUPPORTED; break;
    default: h = HIP_UNKNOWN; break;
    }
    if (log_failures)
        fprintf(stderr, "standin: cublasLt%s returned %d\n", what, s);
    return h;
}

#define NEED_LT() \
    if (!ready()) return HIP_NOT_INITIALIZED

static int op_to_cu(int op) { return op == HIP_OP_N ? CU_OP_N : op == HIP_OP_T ? CU_OP_T : op == HIP_OP_C ? CU_OP_C : -1; }
static int op_to_hip(int op) { return op == CU_OP_N ? HIP_OP_N : op == CU_OP_T ? HIP_OP_T : op == CU_OP_C ? HIP_OP_C : -1; }

static int dtype_to_cu(int t) {
    switch (t) {
    case 0: case 1: case 2: case 3: case 14: return t; /* R_32F, R_64F, R_16F, R_8I, R_16BF */
    default: return -1;
    }
}

static int compute_to_cu(int c) {
    switch (c) {
    case HIP_COMPUTE_16F: return CU_COMPUTE_16F;
    case HIP_COMPUTE_16F_PEDANTIC: return CU_COMPUTE_16F_PEDANTIC;
    case HIP_COMPUTE_32F: return CU_COMPUTE_32F;
    case HIP_COMPUTE_32F_PEDANTIC: return CU_COMPUTE_32F_PEDANTIC;
    case HIP_COMPUTE_32F_FAST_16F: return CU_COMPUTE_32F_FAST_16F;
    case HIP_COMPUTE_32F_FAST_16BF: return CU_COMPUTE_32F_FAST_16BF;
    case HIP_COMPUTE_32F_FAST_TF32: return CU_COMPUTE_32F_FAST_TF32;
    case HIP_COMPUTE_64F: return CU_COMPUTE_64F;
    default: return -1;
    }
}

/* hipBLASLt matmul-descriptor attribute -> cuBLASLt's; -1 for one we do not map. */
static int desc_attr_to_cu(int a) {
    switch (a) {
    case HIP_DESC_TRANSA: return CU_DESC_TRANSA;
    case HIP_DESC_TRANSB: return CU_DESC_TRANSB;
    case HIP_DESC_EPILOGUE: return CU_DESC_EPILOGUE; /* epilogue values agree */
    case HIP_DESC_BIAS_POINTER: return CU_DESC_BIAS_POINTER;
    case HIP_DESC_BIAS_DATA_TYPE: return CU_DESC_BIAS_DATA_TYPE;
    case HIP_DESC_A_SCALE_POINTER: return CU_DESC_A_SCALE_POINTER;
    case HIP_DESC_B_SCALE_POINTER: return CU_DESC_B_SCALE_POINTER;
    case HIP_DESC_C_SCALE_POINTER: return CU_DESC_C_SCALE_POINTER;
    case HIP_DESC_D_SCALE_POINTER: return CU_DESC_D_SCALE_POINTER;
    case HIP_DESC_EPILOGUE_AUX_SCALE_POINTER: return CU_DESC_EPILOGUE_AUX_SCALE_POINTER;
    case HIP_DESC_EPILOGUE_AUX_POINTER: return CU_DESC_EPILOGUE_AUX_POINTER;
    case HIP_DESC_EPILOGUE_AUX_LD: return CU_DESC_EPILOGUE_AUX_LD;
    case HIP_DESC_EPILOGUE_AUX_BATCH_STRIDE: return CU_DESC_EPILOGUE_AUX_BATCH_STRIDE;
    case HIP_DESC_POINTER_MODE: return CU_DESC_POINTER_MODE; /* HOST 0, DEVICE 1 in both */
    case HIP_DESC_AMAX_D_POINTER: return CU_DESC_AMAX_D_POINTER;
    case HIP_DESC_EPILOGUE_AUX_DATA_TYPE: return CU_DESC_EPILOGUE_AUX_DATA_TYPE;
    default: return -1;
    }
}

static int layout_attr_to_cu(int a) {
    switch (a) {
    case HIP_LAYOUT_BATCH_COUNT: return CU_LAYOUT_BATCH_COUNT;
    case HIP_LAYOUT_STRIDED_BATCH_OFFSET: return CU_LAYOUT_STRIDED_BATCH_OFFSET;
    case HIP_LAYOUT_TYPE: return CU_LAYOUT_TYPE;
    case HIP_LAYOUT_ORDER: return CU_LAYOUT_ORDER; /* COL 0, ROW 1 in both */
    case HIP_LAYOUT_ROWS: return CU_LAYOUT_ROWS;
    case HIP_LAYOUT_COLS: return CU_LAYOUT_COLS;
    case HIP_LAYOUT_LD: return CU_LAYOUT_LD;
    default: return -1;
    }
}

/* ---- the algo table: cuBLASLt's 64-byte algos, never removed, so an index a
 * caller holds stays valid for the life of the process ---- */
#define ALGO_SLOTS 4096
static const uint8_t ALGO_MAGIC[4] = {'C', 'B', 'L', 'T'};
static cu_algo algos[ALGO_SLOTS];
static int n_algos; /* written under algo_lock, read with acquire loads */
static pthread_mutex_t algo_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot holding `a`, added if new; -1 when the table is full. */
static int algo_slot(const cu_algo *a) {
    pthread_mutex_lock(&algo_lock);
    int i = 0;
    while (i < n_algos && memcmp(&algos[i], a, sizeof *a) != 0)
        i++;
    if (i == n_algos) {
        if (n_algos == ALGO_SLOTS) {
            i = -1;
        } else {
            algos[i] = *a;
            __atomic_store_n(&n_algos, n_algos + 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&algo_lock);
    return i;
}

/* The cuBLASLt algo behind a hipBLASLt algo this library returned, else NULL
 * (cuBLASLt then picks one itself, as hipBLASLt does for a null algo). */
static const cu_algo *algo_of(const hip_algo *a) {
    if (!a)
        return NULL;
    int32_t i;
    memcpy(&i, a->data, 4);
    if (memcmp(a->data + 4, ALGO_MAGIC, 4) != 0 || i < 0 || i >= __atomic_load_n(&n_algos, __ATOMIC_ACQUIRE)) {
        __atomic_fetch_add(&n_unknown_algo, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    return &algos[i];
}

/* ---- handles: each hipBLASLt handle its own object; the cuBLASLt values in
 * use are counted, to see whether cuBLASLt hands one value to several ---- */
typedef struct {
    ptr lt;
} standin_handle;

#define LIVE_SLOTS 1024
static struct {
    ptr value;
    int refs;
} live[LIVE_SLOTS];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_created(ptr v) {
    pthread_mutex_lock(&live_lock);
    int free_slot = -1, i;
    for (i = 0; i < LIVE_SLOTS; i++) {
        if (live[i].refs > 0 && live[i].value == v)
            break;
        if (live[i].refs == 0 && free_slot < 0)
            free_slot = i;
    }
    n_created++;
    if (i < LIVE_SLOTS) {
        live[i].refs++;
        n_aliased++;
        if (log_failures)
            fprintf(stderr, "standin: cublasLtCreate returned %p, a handle already live\n", v);
    } else if (free_slot >= 0) {
        live[free_slot].value = v;
        live[free_slot].refs = 1;
    }
    pthread_mutex_unlock(&live_lock);
}

static void note_destroyed(ptr v) {
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < LIVE_SLOTS; i++) {
        if (live[i].refs > 0 && live[i].value == v) {
            live[i].refs--;
            break;
        }
    }
    pthread_mutex_unlock(&live_lock);
}

/* cuBLASLt's handle behind a hipBLASLt one. */
static ptr lt_of(ptr handle) {
    return raw_handles ? handle : ((standin_handle *)handle)->lt;
}

/* ---- the hipBLASLt C API ---- */

EXPORT int hipblasLtGetVersion(ptr handle, int *version) {
    if (!handle)
        return HIP_NOT_INITIALIZED;
    if (!version)
        return HIP_INVALID_VALUE;
    *version = STANDIN_VERSION;
    return HIP_SUCCESS;
}

EXPORT int hipblasLtGetGitRevision(ptr handle, char *rev) { (void)handle; (void)rev; return HIP_NOT_SUPPORTED; }
EXPORT int hipblasLtGetArchName(char **name) { (void)name; return HIP_NOT_SUPPORTED; }

EXPORT int hipblasLtCreate(ptr *handle) {
    NEED_LT();
    if (!handle)
        return HIP_INVALID_VALUE;
    ptr h = NULL;
    int s = status(lt.Create(&h), "Create");
    if (s != HIP_SUCCESS)
        return s;
    note_created(h);
    if (raw_handles) {
        *handle = h;
        return HIP_SUCCESS;
    }
    standin_handle *w = malloc(sizeof *w);
    if (!w) {
        note_destroyed(h);
        lt.Destroy(h);
        return HIP_ALLOC_FAILED;
    }
    w->lt = h;
    *handle = w;
    return HIP_SUCCESS;
}

EXPORT int hipblasLtDestroy(ptr handle) {
    NEED_LT();
    if (!handle)
        return HIP_NOT_INITIALIZED;
    ptr h = lt_of(handle);
    note_destroyed(h);
    if (!raw_handles)
        free(handle);
    return status(lt.Destroy(h), "Destroy");
}

EXPORT int hipblasLtMatrixLayoutCreate(ptr *layout, int dtype, uint64_t rows, uint64_t cols, int64_t ld) {
    NEED_LT();
    int t = dtype_to_cu(dtype);
    if (t < 0)
        return HIP_NOT_SUPPORTED;
    return status(lt.MatrixLayoutCreate(layout, t, rows, cols, ld), "MatrixLayoutCreate");
}

EXPORT int hipblasLtMatrixLayoutDestroy(ptr layout) {
    NEED_LT();
    return status(lt.MatrixLayoutDestroy(layout), "MatrixLayoutDestroy");
}

EXPORT int hipblasLtMatrixLayoutSetAttribute(ptr layout, int attr, const void *buf, size_t size) {
    NEED_LT();
    int a = layout_attr_to_cu(attr);
    if (a < 0)
        return HIP_NOT_SUPPORTED;
    if (a == CU_LAYOUT_TYPE && buf && size >= 4) {
        int32_t t;
        memcpy(&t, buf, 4);
        t = dtype_to_cu(t);
        if (t < 0)
            return HIP_NOT_SUPPORTED;
        return status(lt.MatrixLayoutSetAttribute(layout, a, &t, 4), "MatrixLayoutSetAttribute");
    }
    return status(lt.MatrixLayoutSetAttribute(layout, a, buf, size), "MatrixLayoutSetAttribute");
}

EXPORT int hipblasLtMatrixLayoutGetAttribute(ptr layout, int attr, void *buf, size_t size, size_t *written) {
    NEED_LT();
    int a = layout_attr_to_cu(attr);
    if (a < 0)
        return HIP_NOT_SUPPORTED;
    /* Types and orders read back as they were given: the values agree. */
    return status(lt.MatrixLayoutGetAttribute(layout, a, buf, size, written), "MatrixLayoutGetAttribute");
}

EXPORT int hipblasLtMatmulDescCreate(ptr *desc, int compute, int scale) {
    NEED_LT();
    int c = compute_to_cu(compute), s = dtype_to_cu(scale);
    if (c < 0 || s < 0)
        return HIP_NOT_SUPPORTED;
    return status(lt.MatmulDescCreate(desc, c, s), "MatmulDescCreate");
}

EXPORT int hipblasLtMatmulDescDestroy(ptr desc) {
    NEED_LT();
    return status(lt.MatmulDescDestroy(desc), "MatmulDescDestroy");
}

EXPORT int hipblasLtMatmulDescSetAttribute(ptr desc, int attr, const void *buf, size_t size) {
    NEED_LT();
    int a = desc_attr_to_cu(attr);
    if (a < 0)
        return HIP_NOT_SUPPORTED;
    if ((a == CU_DESC_TRANSA || a == CU_DESC_TRANSB) && buf && size >= 4) {
        int32_t op;
        memcpy(&op, buf, 4);
        op = op_to_cu(op);
        if (op < 0)
            return HIP_INVALID_VALUE;
        return status(lt.MatmulDescSetAttribute(desc, a, &op, 4), "MatmulDescSetAttribute");
    }
    if (a == CU_DESC_BIAS_DATA_TYPE && buf && size >= 4) {
        int32_t t;
        memcpy(&t, buf, 4);
        if (t == HIP_DATATYPE_INVALID)
            return HIP_SUCCESS; /* "the type of D": cuBLASLt's default already */
        t = dtype_to_cu(t);
        if (t < 0)
            return HIP_NOT_SUPPORTED;
        return status(lt.MatmulDescSetAttribute(desc, a, &t, 4), "MatmulDescSetAttribute");
    }
    return status(lt.MatmulDescSetAttribute(desc, a, buf, size), "MatmulDescSetAttribute");
}

EXPORT int hipblasLtMatmulDescGetAttribute(ptr desc, int attr, void *buf, size_t size, size_t *written) {
    NEED_LT();
    int a = desc_attr_to_cu(attr);
    if (a < 0)
        return HIP_NOT_SUPPORTED;
    int s = status(lt.MatmulDescGetAttribute(desc, a, buf, size, written), "MatmulDescGetAttribute");
    if (s == HIP_SUCCESS && (a == CU_DESC_TRANSA || a == CU_DESC_TRANSB) && buf && size >= 4) {
        int32_t op;
        memcpy(&op, buf, 4);
        op = op_to_hip(op);
        memcpy(buf, &op, 4);
    }
    return s;
}

EXPORT int hipblasLtMatmulPreferenceCreate(ptr *pref) {
    NEED_LT();
    return status(lt.MatmulPreferenceCreate(pref), "MatmulPreferenceCreate");
}

EXPORT int hipblasLtMatmulPreferenceDestroy(ptr pref) {
    NEED_LT();
    return status(lt.MatmulPreferenceDestroy(pref), "MatmulPreferenceDestroy");
}

EXPORT int hipblasLtMatmulPreferenceSetAttribute(ptr pref, int attr, const void *buf, size_t size) {
    NEED_LT();
    if (attr != HIP_PREF_SEARCH_MODE && attr != HIP_PREF_MAX_WORKSPACE_BYTES)
        return HIP_NOT_SUPPORTED;
    return status(lt.MatmulPreferenceSetAttribute(pref, attr == HIP_PREF_SEARCH_MODE ? CU_PREF_SEARCH_MODE : CU_PREF_MAX_WORKSPACE_BYTES, buf, size),
                  "MatmulPreferenceSetAttribute");
}

EXPORT int hipblasLtMatmulPreferenceGetAttribute(ptr pref, int attr, void *buf, size_t size, size_t *written) {
    NEED_LT();
    if (attr != HIP_PREF_SEARCH_MODE && attr != HIP_PREF_MAX_WORKSPACE_BYTES)
        return HIP_NOT_SUPPORTED;
    return status(lt.MatmulPreferenceGetAttribute(pref, attr == HIP_PREF_SEARCH_MODE ? CU_PREF_SEARCH_MODE : CU_PREF_MAX_WORKSPACE_BYTES, buf, size, written),
                  "MatmulPreferenceGetAttribute");
}

EXPORT int hipblasLtMatmulAlgoGetHeuristic(ptr handle, ptr desc, ptr a, ptr b, ptr c, ptr d, ptr pref, int requested,
                                           hip_heuristic *results, int *returned) {
    NEED_LT();
    if (!handle)
        return HIP_NOT_INITIALIZED;
    if (!results || !returned || requested <= 0)
        return HIP_INVALID_VALUE;
    __atomic_fetch_add(&n_heuristic, 1, __ATOMIC_RELAXED);
    if (requested > 64)
        requested = 64;
    cu_heuristic got[64];
    int n = 0;
    int s = status(lt.MatmulAlgoGetHeuristic(lt_of(handle), desc, a, b, c, d, pref, requested, got, &n), "MatmulAlgoGetHeuristic");
    if (s != HIP_SUCCESS)
        return s;
    int out = 0;
    for (int i = 0; i < n; i++) {
        int slot = algo_slot(&got[i].algo);
        if (slot < 0)
            break;
        hip_heuristic *r = &results[out++];
        memset(r, 0, sizeof *r);
        memcpy(r->algo.data, &slot, 4);
        memcpy(r->algo.data + 4, ALGO_MAGIC, 4);
        r->algo.max_workspace_bytes = got[i].workspace_size;
        r->workspace_size = got[i].workspace_size;
        r->state = got[i].state == CU_SUCCESS ? HIP_SUCCESS : HIP_NOT_SUPPORTED;
        r->waves_count = got[i].waves_count;
    }
    *returned = out;
    return HIP_SUCCESS;
}

EXPORT int hipblasLtMatmul(ptr handle, ptr desc, const void *alpha, const void *a, ptr a_desc, const void *b, ptr b_desc,
                           const void *beta, const void *c, ptr c_desc, void *d, ptr d_desc, const hip_algo *algo,
                           void *workspace, size_t workspace_size, ptr stream) {
    NEED_LT();
    if (!handle)
        return HIP_NOT_INITIALIZED;
    __atomic_fetch_add(&n_matmul, 1, __ATOMIC_RELAXED);
    int s = status(lt.Matmul(lt_of(handle), desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo_of(algo), workspace,
                             workspace_size, stream),
                   "Matmul");
    if (s != HIP_SUCCESS)
        __atomic_fetch_add(&n_matmul_failed, 1, __ATOMIC_RELAXED);
    return s;
}

/* Matrix transforms: not needed by the workload; hipBLASLt's status for an
 * operation a library does not provide. */
EXPORT int hipblasLtMatrixTransformDescCreate(ptr *desc, int scale) { (void)desc; (void)scale; return HIP_NOT_SUPPORTED; }
EXPORT int hipblasLtMatrixTransformDescDestroy(ptr desc) { (void)desc; return HIP_NOT_SUPPORTED; }
EXPORT int hipblasLtMatrixTransformDescSetAttribute(ptr desc, int attr, const void *buf, size_t size) {
    (void)desc; (void)attr; (void)buf; (void)size;
    return HIP_NOT_SUPPORTED;
}
EXPORT int hipblasLtMatrixTransformDescGetAttribute(ptr desc, int attr, void *buf, size_t size, size_t *written) {
    (void)desc; (void)attr; (void)buf; (void)size; (void)written;
    return HIP_NOT_SUPPORTED;
}
EXPORT int hipblasLtMatrixTransform(ptr handle, ptr desc, const void *alpha, const void *a, ptr a_desc, const void *beta,
                                    const void *b, ptr b_desc, void *c, ptr c_desc, ptr stream) {
    (void)handle; (void)desc; (void)alpha; (void)a; (void)a_desc; (void)beta; (void)b; (void)b_desc; (void)c; (void)c_desc; (void)stream;
    return HIP_NOT_SUPPORTED;
}

/* The stand-in's own counters: Matmul calls received and failed, heuristic
 * queries, algos it did not recognise, handles created, and creates where
 * cuBLASLt returned a value already live. Not a hipBLASLt function. */
EXPORT void standin_stats(uint64_t out[6]) {
    out[0] = __atomic_load_n(&n_matmul, __ATOMIC_RELAXED);
    out[1] = __atomic_load_n(&n_matmul_failed, __ATOMIC_RELAXED);
    out[2] = __atomic_load_n(&n_heuristic, __ATOMIC_RELAXED);
    out[3] = __atomic_load_n(&n_unknown_algo, __ATOMIC_RELAXED);
    pthread_mutex_lock(&live_lock);
    out[4] = n_created;
    out[5] = n_aliased;
    pthread_mutex_unlock(&live_lock);
}
