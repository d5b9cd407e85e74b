/*
 * The live-object stub "real hipBLASLt" (stub_live.c, built as libhipblaslt.so.1
 * in stub-live/): thread-safe, it mallocs every object it creates and frees it on
 * Destroy, so addresses are reused as with the real library, and it checks that
 * every object pointer it is given is live and of the right kind. Its inspection
 * API, reached through dlopen/dlsym of the stub like stub.h's (its names differ
 * from stub.h's, so a test may include both).
 */
#ifndef SKINNYLT_CTEST_STUB_LIVE_H
#define SKINNYLT_CTEST_STUB_LIVE_H

#include <dlfcn.h>
#include <string.h>

/* Status of a call given a dead, unknown or wrong-kind object (or NULL). */
#define STUB_LIVE_DEAD_STATUS 3 /* HIPBLAS_STATUS_INVALID_VALUE */
/* Heuristic results the stub writes at most. */
#define STUB_LIVE_MAX_HEURISTICS 3

/* Calls to the hipBLASLt function `name` since the last reset; -1 for a name the
 * stub does not export. */
long stub_live_calls_to(const char *name);
/* Calls since the last reset that passed a pointer which was not a live object of
 * the kind the argument names. */
long stub_dead_calls(void);
/* Objects created and not yet destroyed (all kinds). */
long stub_live_objects(void);
/* Writes a description of the first dead calls since the last reset to buf
 * (NUL-terminated, at most n bytes); returns how many are described. */
int stub_live_dead_report(char *buf, size_t n);
/* Zeroes the call and dead-call counts (live objects stay live). */
void stub_live_reset(void);

struct stub_live_api {
    long (*calls_to)(const char *);
    long (*dead_calls)(void);
    long (*live_objects)(void);
    int (*dead_report)(char *, size_t);
    void (*reset)(void);
};

/* Fills `api` from `lib`; returns 0, or -1 if a symbol is missing. */
static inline int stub_live_api_load(void *lib, struct stub_live_api *api) {
    /* memcpy: ISO C has no direct conversion from void* to a function pointer. */
#define STUB_LIVE_SYM(field, sym)                   \
    do {                                            \
        void *p_ = dlsym(lib, sym);                 \
        if (!p_) return -1;                         \
        memcpy(&api->field, &p_, sizeof p_);        \
    } while (0)
    STUB_LIVE_SYM(calls_to, "stub_live_calls_to");
    STUB_LIVE_SYM(dead_calls, "stub_dead_calls");
    STUB_LIVE_SYM(live_objects, "stub_live_objects");
    STUB_LIVE_SYM(dead_report, "stub_live_dead_report");
    STUB_LIVE_SYM(reset, "stub_live_reset");
#undef STUB_LIVE_SYM
    return 0;
}

#endif /* SKINNYLT_CTEST_STUB_LIVE_H */
