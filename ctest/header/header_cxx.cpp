/*
 * skinnylt.h compiled as C++11: the declarations must have C linkage (the link
 * fails otherwise) and be valid C++.
 */
#include "skinnylt.h"

extern "C" const char *version_from_cxx(void) {
    skinnylt_counters c = skinnylt_counters();
    (void)skinnylt_get_counters(&c);
    return skinnylt_version();
}
