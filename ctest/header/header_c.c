/*
 * skinnylt.h compiled as strict C99 (-pedantic): every declaration is valid C.
 * Holds main(), which calls into the C++ translation unit and prints the version.
 */
#include <stdio.h>

#include "skinnylt.h"

/* Defined in header_cxx.cpp and header_twice.c. */
const char *version_from_cxx(void);
int counters_from_twice(void);

int main(void) {
    const char *v = skinnylt_version();
    skinnylt_counters c;
    int ok = v != NULL && v[0] != '\0' && skinnylt_get_counters(&c) == 0 &&
             version_from_cxx() == v && counters_from_twice() == 0;
    printf("skinnylt_version() = %s\n", v ? v : "(null)");
    printf("header: %s\n", ok ? "1 passed, 0 failed" : "0 passed, 1 failed");
    return ok ? 0 : 1;
}
