// The prelude probes for gfx942 / gfx950 (see amd_probe.h); emu/CMakeLists.txt
// compiles this to LLVM IR with the same clang flags build.rs uses for the kernels.
#include "prelude/prelude.h"
#define SKP_FN(name) extern "C" __attribute__((device)) __attribute__((used)) u32 name()
#define SKP_KERNEL(name) extern "C" __attribute__((global)) void name
#include "amd_probe.h"
