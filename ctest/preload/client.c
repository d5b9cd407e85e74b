/*
 * LD_PRELOAD + RTLD_LOCAL: the client links neither skinnylt nor hipBLASLt. It
 * dlopens libmid.so RTLD_LOCAL (as Python loads an extension module); libmid
 * brings in the stub libhipblaslt.so.1 through DT_NEEDED + rpath. With skinnylt
 * LD_PRELOADed (and no SKINNYLT_REAL_LIB), libmid's hipBLASLt calls must land in
 * skinnylt, skinnylt must find the already-loaded stub by itself, and the stub
 * must receive every call exactly as libmid made it. The PyTorch-Linear-shaped
 * hipblasLtMatmul is forwarded with reason "no-gpu" (or "disabled" when
 * SKINNYLT_DISABLE=1).
 *
 * usage: preload_client <libmid.so> <stub libhipblaslt.so.1> enabled|disabled
 * Exits 77 (skipped) when skinnylt finds a usable GPU: it would run the GEMM on
 * the fake pointers instead of forwarding it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "preload/mid.h"
#include "skinnylt.h"
#include "stub/stub.h"

#define EXIT_SKIP 77

/* skinnylt's own API, looked up in the global scope (it is only preloaded). */
static struct {
    __typeof__(&skinnylt_has_real_library) has_real_library;
    __typeof__(&skinnylt_get_counters) get_counters;
    __typeof__(&skinnylt_forwarded_for) forwarded_for;
    __typeof__(&skinnylt_reset_counters) reset_counters;
    __typeof__(&skinnylt_preload) preload;
} K;

static void *global_sym(const char *name) {
    void *p = dlsym(RTLD_DEFAULT, name);
    CHECK(p != NULL, "%s not in the global scope: is skinnylt LD_PRELOADed?", name);
    return p;
}
#define LOOKUP(field) \
    do { void *p_ = global_sym("skinnylt_" #field); memcpy(&K.field, &p_, sizeof p_); } while (0)

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[3], "enabled") != 0 && strcmp(argv[3], "disabled") != 0)) {
        fprintf(stderr, "usage: %s <libmid.so> <stub libhipblaslt.so.1> enabled|disabled\n", argv[0]);
        return 2;
    }
    const char *mid_path = argv[1], *stub_path = argv[2];
    int disabled = strcmp(argv[3], "disabled") == 0;
    const char *real = getenv("SKINNYLT_REAL_LIB");
    CHECK(!real || !*real, "SKINNYLT_REAL_LIB must be unset for this test");

    LOOKUP(has_real_library);
    LOOKUP(get_counters);
    LOOKUP(forwarded_for);
    LOOKUP(reset_counters);
    LOOKUP(preload);
    if (g_failed) return check_summary(argv[0]);
    if (!disabled && K.preload(0) == 0) {
        printf("skinnylt found a usable GPU: this test needs a machine without one; skipped\n");
        return EXIT_SKIP;
    }

    /* Nothing of hipBLASLt is loaded until libmid is. */
    CHECK(dlopen(stub_path, RTLD_NOW | RTLD_NOLOAD) == NULL, "stub loaded before libmid");
    void *mid = dlopen(mid_path, RTLD_NOW | RTLD_LOCAL);
    CHECK(mid != NULL, "dlopen(%s): %s", mid_path, dlerror());
    void *stub = dlopen(stub_path, RTLD_NOW | RTLD_NOLOAD);
    CHECK(stub != NULL, "libmid did not bring in the stub %s", stub_path);
    struct stub_api S;
    mid_run_fn mid_run = NULL;
    void *run = mid ? dlsym(mid, "mid_run") : NULL;
    memcpy(&mid_run, &run, sizeof run);
    if (!mid_run || !stub || stub_api_load(stub, &S) != 0) {
        fprintf(stderr, "cannot reach mid_run or the stub's inspection API\n");
        return check_summary(argv[0]);
    }
    /* RTLD_LOCAL: the stub is not in the global scope, hipblasLt* names are skinnylt's. */
    CHECK(dlsym(RTLD_DEFAULT, "stub_call_count") == NULL, "stub must not be in the global scope");
    Dl_info mm, kk;
    void *matmul = dlsym(RTLD_DEFAULT, "hipblasLtMatmul");
    CHECK(matmul && dladdr(matmul, &mm) && dladdr((void *)K.has_real_library, &kk) &&
              mm.dli_fbase == kk.dli_fbase,
          "global hipblasLtMatmul is not skinnylt's");

    S.reset();
    K.reset_counters();
    struct mid_log log;
    mid_run(&log);

    CHECK_EQ(K.has_real_library(), 1, "skinnylt_has_real_library");
    CHECK_EQ(log.overflow, 0, "mid log overflow");
    for (int i = 0; i < log.count; i++) CHECK_EQ(log.calls[i].status, 0, log.calls[i].name);

    /* The stub's log must be libmid's calls, in order, with identical arguments;
     * skinnylt may add only one hipblasLtGetVersion on the new handle. */
    int m = 0, version_probes = 0;
    for (int k = 0; k < S.call_count(); k++) {
        const struct stub_call *got = S.call_at(k);
        if (strcmp(got->name, "hipblasLtGetVersion") == 0 && got->args[0] == log.handle) {
            version_probes++;
            continue;
        }
        if (m >= log.count) {
            CHECK(0, "stub received an extra call %s", got->name);
            continue;
        }
        const struct stub_call *want = &log.calls[m++];
        CHECK(strcmp(got->name, want->name) == 0, "call %d: stub got %s, libmid made %s", m - 1,
              got->name, want->name);
        CHECK_EQ(got->nargs, want->nargs, want->name);
        for (int a = 0; a < want->nargs && a < got->nargs; a++)
            CHECK(got->args[a] == want->args[a],
                  "%s argument %d: stub got 0x%" PRIx64 ", libmid passed 0x%" PRIx64, want->name, a,
                  got->args[a], want->args[a]);
    }
    CHECK_EQ(m, log.count, "calls that reached the stub");
    CHECK(version_probes <= 1, "skinnylt probed the version %d times", version_probes);

    /* Objects and heuristic results from the stub reached libmid unchanged. */
    const struct stub_call *c = S.last_call("hipblasLtCreate");
    CHECK(c && c->out == log.handle, "handle changed on its way to libmid");
    c = S.last_call("hipblasLtMatmulDescCreate");
    CHECK(c && c->out == log.desc, "matmul desc changed on its way to libmid");
    int seen = 0;
    for (int i = 0; i < S.call_count(); i++) {
        c = S.call_at(i);
        if (strcmp(c->name, "hipblasLtMatrixLayoutCreate") != 0 || seen == 4) continue;
        CHECK(c->out == log.layouts[seen], "layout %d changed on its way to libmid", seen);
        seen++;
    }
    CHECK_EQ(seen, 4, "layouts created");
    hipblasLtMatmulHeuristicResult_t h0 = stub_heuristic(0);
    CHECK_EQ(log.heuristic_returned, 1, "returnAlgoCount");
    CHECK(memcmp(&log.heuristic_result, &h0, sizeof h0) == 0, "heuristic result changed");

    /* The matmul itself: the stub saw it (checked above) and skinnylt counted why. */
    c = S.last_call("hipblasLtMatmul");
    CHECK(c != NULL && S.calls_to("hipblasLtMatmul") == 1, "hipblasLtMatmul did not reach the stub once");
    skinnylt_counters ctr = {0, 0};
    CHECK_EQ(K.get_counters(&ctr), 0, "skinnylt_get_counters");
    CHECK_EQ(ctr.forwarded, 1, "counters.forwarded");
    CHECK_EQ(ctr.intercepted, 0, "counters.intercepted");
    /* The real library's algo from its heuristic (no GPU: skinnylt offers none). */
    CHECK_EQ(K.forwarded_for("caller-algo"), disabled ? 0 : 1, "forwarded_for(caller-algo)");
    CHECK_EQ(K.forwarded_for("disabled"), disabled ? 1 : 0, "forwarded_for(disabled)");
    CHECK_EQ(K.forwarded_for("unknown-descriptor"), 0, "forwarded_for(unknown-descriptor)");
    return check_summary(disabled ? "preload (SKINNYLT_DISABLE=1)" : "preload");
}
