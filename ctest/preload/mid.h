/*
 * libmid.so's interface: mid_run() makes a PyTorch-Linear-like sequence of
 * hipBLASLt calls and logs each call exactly as it passed it.
 */
#ifndef SKINNYLT_CTEST_MID_H
#define SKINNYLT_CTEST_MID_H

#include "hipblaslt_abi.h"
#include "stub/stub.h"

#define MID_MAX_CALLS 32

struct mid_log {
    int count;
    int overflow;
    struct stub_call calls[MID_MAX_CALLS]; /* name, args, and the status mid got */
    int heuristic_returned;
    hipblasLtMatmulHeuristicResult_t heuristic_result;
    uint64_t handle, desc, layouts[4]; /* objects mid received (A, B, C, D) */
};

typedef void (*mid_run_fn)(struct mid_log *out);

#endif /* SKINNYLT_CTEST_MID_H */
