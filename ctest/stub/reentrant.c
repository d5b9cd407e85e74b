/*
 * Linked into a copy of the stub (stub.c) to make a real library whose
 * initialiser calls hipBLASLt while skinnylt is loading it: the constructor runs
 * inside skinnylt's dlopen of $SKINNYLT_REAL_LIB, and its calls go through the
 * global scope, where skinnylt (loaded first) defines every hipblasLt* name. A
 * real hipBLASLt (or a library it pulls in) may do this; skinnylt must answer
 * instead of waiting for the decision it is in the middle of.
 */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "stub/stub.h"

#define EXPORT __attribute__((visibility("default")))

/* What the constructor saw, for the client (faults.c --reentrant). */
EXPORT int reentrant_ctor_ran;
EXPORT int reentrant_bound_elsewhere;
EXPORT int reentrant_version_status = -1;
EXPORT int reentrant_create_status = -1;

__attribute__((constructor)) static void call_hipblaslt_while_loaded(void) {
    /* The names resolve through the GOT: to skinnylt's definitions, not ours. */
    Dl_info self, target;
    void *create = (void *)&hipblasLtCreate;
    reentrant_bound_elsewhere = dladdr((void *)&reentrant_ctor_ran, &self) && dladdr(create, &target) &&
                                self.dli_fbase != target.dli_fbase;
    int v = 0;
    reentrant_version_status = hipblasLtGetVersion(NULL, &v);
    hipblasLtHandle_t h = NULL;
    reentrant_create_status = hipblasLtCreate(&h);
    if (reentrant_create_status == HIPBLAS_STATUS_SUCCESS && h) hipblasLtDestroy(h);
    reentrant_ctor_ran = 1;
}
