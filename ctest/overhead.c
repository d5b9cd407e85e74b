/*
 * Host-overhead benchmark (CPU only; prints numbers, asserts nothing): the cost
 * skinnylt adds to a hipblasLtMatmul that it forwards, against calling the stub
 * "real hipBLASLt" directly. Target: <= 100 ns extra (docs/performance.md).
 *   fp32 problem      -> routing rejects it on the data type (early exit);
 *   PyTorch-Linear bf16 -> routing accepts it, the engine finds no GPU here, then
 *                          forwards: the full decision path of an intercepted call.
 * usage: overhead <path to stub libhipblaslt.so.1>   (run with SKINNYLT_REAL_LIB set to it)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hipblaslt_abi.h"

typedef hipblasStatus_t (*matmul_fn)(hipblasLtHandle_t, hipblasLtMatmulDesc_t, const void *, const void *,
                                     hipblasLtMatrixLayout_t, const void *, hipblasLtMatrixLayout_t, const void *,
                                     const void *, hipblasLtMatrixLayout_t, void *, hipblasLtMatrixLayout_t,
                                     const hipblasLtMatmulAlgo_t *, void *, size_t, hipStream_t);

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

struct problem {
    hipblasLtMatmulDesc_t desc;
    hipblasLtMatrixLayout_t a, b, d;
};

static struct problem make(int type, int m, int n, int k) {
    struct problem p;
    int op_t = 112, op_n = 111;
    hipblasLtMatmulDescCreate(&p.desc, 2, 0);
    hipblasLtMatmulDescSetAttribute(p.desc, 0, &op_t, sizeof op_t);
    hipblasLtMatmulDescSetAttribute(p.desc, 1, &op_n, sizeof op_n);
    hipblasLtMatrixLayoutCreate(&p.a, type, k, n, k);
    hipblasLtMatrixLayoutCreate(&p.b, type, k, m, k);
    hipblasLtMatrixLayoutCreate(&p.d, type, n, m, n);
    return p;
}

/* Median over rounds of the mean ns per call of `iters` calls. */
static double time_calls(matmul_fn f, hipblasLtHandle_t h, const struct problem *p, int iters) {
    float alpha = 1.0f, beta = 0.0f;
    const void *w = (const void *)0x10000000, *x = (const void *)0x20000000;
    void *y = (void *)0x30000000;
    double best[9];
    for (int r = 0; r < 9; r++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++)
            f(h, p->desc, &alpha, w, p->a, x, p->b, &beta, y, p->d, y, p->d, NULL, NULL, 0, NULL);
        best[r] = (now_ns() - t0) / iters;
    }
    for (int i = 0; i < 9; i++)
        for (int j = i + 1; j < 9; j++)
            if (best[j] < best[i]) { double t = best[i]; best[i] = best[j]; best[j] = t; }
    return best[4];
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: overhead <stub path>\n"); return 2; }
    void *stub = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    if (!stub) stub = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!stub) { fprintf(stderr, "cannot open %s\n", argv[1]); return 2; }
    matmul_fn direct = (matmul_fn)dlsym(stub, "hipblasLtMatmul");
    void (*ring)(int) = (void (*)(int))dlsym(stub, "stub_set_ring");
    if (!direct || !ring) { fprintf(stderr, "stub lacks hipblasLtMatmul/stub_set_ring\n"); return 2; }
    ring(1);
    hipblasLtHandle_t h;
    if (hipblasLtCreate(&h) != 0) { fprintf(stderr, "create failed\n"); return 2; }
    struct problem fp32 = make(0, 4, 2880, 4096), linear = make(14, 4, 2880, 4096);
    const int iters = (getenv("OVERHEAD_ITERS") ? atoi(getenv("OVERHEAD_ITERS")) : 200000);
    time_calls(hipblasLtMatmul, h, &linear, iters); /* warm */
    double d = time_calls(direct, h, &linear, iters);
    double f32 = time_calls(hipblasLtMatmul, h, &fp32, iters);
    double lin = time_calls(hipblasLtMatmul, h, &linear, iters);
    printf("host overhead of a forwarded hipblasLtMatmul (median of 9 x %d calls):\n", iters);
    printf("  stub called directly:                     %7.1f ns/call\n", d);
    printf("  via skinnylt, fp32 (rejected on type):    %7.1f ns/call  (+%.1f ns)\n", f32, f32 - d);
    printf("  via skinnylt, bf16 Linear (full routing): %7.1f ns/call  (+%.1f ns; target <= 100)\n", lin, lin - d);
    return 0;
}
