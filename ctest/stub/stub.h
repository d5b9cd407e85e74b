/*
 * The stub "real hipBLASLt" used by skinnylt's C tests: its call log, its
 * inspection API, and the fake values it writes to out-parameters (so tests can
 * predict them). Clients reach the inspection API through dlopen/dlsym of the stub
 * (stub_api_load) because they never link the stub themselves.
 */
#ifndef SKINNYLT_CTEST_STUB_H
#define SKINNYLT_CTEST_STUB_H

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "hipblaslt_abi.h"
#include "stub/attr.h"

#define STUB_MAX_ARGS 16

/* One call the stub received. Arguments are stored as uint64 (see STUB_U64). */
struct stub_call {
    const char *name;
    int nargs;
    uint64_t args[STUB_MAX_ARGS];
    uint64_t out;    /* value written to the main out-parameter, 0 if none */
    int status;      /* the status the stub returned */
    uint64_t payload; /* core SetAttribute: the first stub_attr_bytes() bytes of buf; else 0 */
};

/* Fake values the stub writes. */
#define STUB_VERSION 100202
#define STUB_GIT_REVISION "stub-rev-42"
#define STUB_ARCH_NAME "gfx-stub"
#define STUB_OBJECT_BASE 0x5100u  /* Create functions write 0x5100 + 0x10 * n */
#define STUB_ATTR_WRITTEN 0x2468u /* *sizeWritten from every GetAttribute */
#define STUB_SM_COUNT 96
#define STUB_SUMMATION_ORDER 0x31
#define STUB_FIRST_NAN_CALL 0xC0FFEEu
#define STUB_MAX_HEURISTICS 3

/* Byte j of what GetAttribute writes to buf (see stub_attr_bytes). */
static inline uint8_t stub_attr_byte(size_t j) { return (uint8_t)(0xB0 + j); }

/* Heuristic result i as the stub writes it. */
static inline hipblasLtMatmulHeuristicResult_t stub_heuristic(int i) {
    hipblasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    for (int j = 0; j < 16; j++) r.algo.data[j] = (uint8_t)(0xA0 + 0x10 * i + j);
    r.algo.max_workspace_bytes = 0x100000u * (size_t)(i + 1);
    r.workspaceSize = 0x10000u * (size_t)(i + 1) + (size_t)i;
    r.state = 0;
    r.wavesCount = 0.5f + (float)i;
    for (int j = 0; j < 4; j++) r.reserved[j] = 0x11 * (i + 1) + j;
    return r;
}

/* ---------------------------------------------------------------- argument encoding */

static inline uint64_t stub_u64_i(long long v) { return (uint64_t)v; }
static inline uint64_t stub_u64_u(unsigned long long v) { return (uint64_t)v; }
static inline uint64_t stub_u64_f(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}
static inline uint64_t stub_u64_p(const void *p) { return (uint64_t)(uintptr_t)p; }

/* Any argument as uint64: signed integers sign-extended, unsigned zero-extended,
 * floats by their bits, pointers by address. */
#define STUB_U64(x)                                                        \
    _Generic((x),                                                          \
        int: stub_u64_i, long: stub_u64_i, long long: stub_u64_i,          \
        unsigned: stub_u64_u, unsigned long: stub_u64_u,                   \
        unsigned long long: stub_u64_u, float: stub_u64_f,                 \
        default: stub_u64_p)(x)

/* ---------------------------------------------------------------- inspection API */

/* Number of calls recorded since the last stub_reset. */
int stub_call_count(void);
/* The i-th call since the last reset (0-based), or NULL. */
const struct stub_call *stub_call_at(int i);
/* The last call to `name` since the last reset, or NULL. */
const struct stub_call *stub_last_call(const char *name);
/* Calls to `name` since the last reset. */
int stub_calls_to(const char *name);
/* Forgets every call and resets every programmed status to 0. */
void stub_reset(void);
/* Non-zero: the call log wraps around instead of aborting when full (benchmarks). */
void stub_set_ring(int on);
/* Makes `name` return `status` from now on; -1 for an unknown name. */
int stub_set_status(const char *name, int status);

/* The inspection API resolved from a dlopen handle of the stub. */
struct stub_api {
    int (*call_count)(void);
    const struct stub_call *(*call_at)(int);
    const struct stub_call *(*last_call)(const char *);
    int (*calls_to)(const char *);
    void (*reset)(void);
    int (*set_status)(const char *, int);
};

/* Fills `api` from `lib`; returns 0, or -1 if a symbol is missing. */
static inline int stub_api_load(void *lib, struct stub_api *api) {
    /* memcpy: ISO C has no direct conversion from void* to a function pointer. */
#define STUB_SYM(field, sym)                        \
    do {                                            \
        void *p_ = dlsym(lib, sym);                 \
        if (!p_) return -1;                         \
        memcpy(&api->field, &p_, sizeof p_);        \
    } while (0)
    STUB_SYM(call_count, "stub_call_count");
    STUB_SYM(call_at, "stub_call_at");
    STUB_SYM(last_call, "stub_last_call");
    STUB_SYM(calls_to, "stub_calls_to");
    STUB_SYM(reset, "stub_reset");
    STUB_SYM(set_status, "stub_set_status");
#undef STUB_SYM
    return 0;
}

#endif /* SKINNYLT_CTEST_STUB_H */
