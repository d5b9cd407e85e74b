/*
 * Attribute value sizes as hipBLASLt copies them, shared by the stub real
 * libraries (stub.c, stub_live.c), so that neither reads or writes past what
 * hipBLASLt itself would.
 */
#ifndef SKINNYLT_CTEST_STUB_ATTR_H
#define SKINNYLT_CTEST_STUB_ATTR_H

#include <stddef.h>

/* The descriptor kinds with attributes whose sizes the stubs know. */
enum stub_attr_kind { STUB_LAYOUT, STUB_DESC, STUB_PREF, STUB_OTHER };

/* sizeof the field hipBLASLt copies for `attr` of `kind` (src/abi.rs), or 0 when
 * the attribute is unknown or its size depends on the library version. */
static inline size_t stub_attr_field_size(enum stub_attr_kind kind, int attr) {
    switch (kind) {
    case STUB_LAYOUT:
        switch (attr) {
        case 0: case 2: case 3: case 7: return 4;          /* BATCH_COUNT TYPE ORDER BATCH_MODE */
        case 1: case 4: case 5: case 6: case 8: return 8;  /* offsets, ROWS COLS LD OFFSET */
        default: return 0;
        }
    case STUB_DESC:
        switch (attr) {
        case 0: case 1: case 2: case 4: case 13: case 22: case 23: case 31: case 32: case 33:
        case 100: case 101: case 104: case 105: return 4;
        case 3: case 5: case 6: case 7: case 8: case 9: case 10: case 11: case 12: case 14:
        case 106: return 8;
        default: return 0; /* includes 102/103: a pointer before ROCm 7.1, a float after */
        }
    case STUB_PREF:
        return attr == 0 ? 4 : attr == 1 ? 8 : 0;
    default:
        return 0;
    }
}

/* How many bytes of a (buf, size) attribute value the stubs read or write: what
 * hipBLASLt copies, sizeof(field), never more than `size`; at most 8 for an
 * unknown attribute. A caller may pass a size larger than its buffer (SIZE_MAX
 * included) for a known attribute: hipBLASLt only checks size >= sizeof(field), so
 * reading min(size, 8) there would run past a 4-byte buffer. */
static inline size_t stub_attr_bytes(enum stub_attr_kind kind, int attr, size_t size) {
    size_t field = stub_attr_field_size(kind, attr);
    size_t cap = field ? field : 8;
    return size < cap ? size : cap;
}

#endif /* SKINNYLT_CTEST_STUB_ATTR_H */
