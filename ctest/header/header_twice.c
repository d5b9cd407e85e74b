/* skinnylt.h included twice in one translation unit: it needs an include guard. */
#include "skinnylt.h"
#include "skinnylt.h"

int counters_from_twice(void);

int counters_from_twice(void) {
    skinnylt_counters c;
    return skinnylt_get_counters(&c);
}
