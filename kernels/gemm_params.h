// The kernel ABI: what the host hands every skinnylt kernel. Shared by the device
// code (gemm_common.h), the wave-level emulator's host code (emu/) and any C or C++
// tool; self-contained (standard fixed-width types, no prelude).
//
// The Rust side is src/kernels/params.rs. build.rs writes, into every target's
// generated instance file, static_asserts of the size and alignment of each struct,
// the offset and size of every field, the field count and the flag values, with the
// numbers taken from the Rust definitions: a mismatch fails the build on every arch.
//
// Include it at global scope: the emulator includes the kernel source inside a
// namespace per target, after this header (the include guard then skips it there).
#ifndef SKINNYLT_GEMM_PARAMS_H
#define SKINNYLT_GEMM_PARAMS_H

#include <stdint.h>

#ifdef __cplusplus
#define SK_ABI_ALIGNAS(n) alignas(n)
#else
#define SK_ABI_ALIGNAS(n) _Alignas(n)
#endif

// Kernel arguments, passed by value.
typedef struct GemmParams {
  const uint16_t* w;     // W(n, k) at w[n * ldw + k]
  const uint16_t* x;     // X(t, k) at x[t * ldx + k]
  uint16_t* y;           // Y(t, n) at y[t * ldy + n]
  const void* bias;      // bias[n] in T (fp32 with EPI_BIAS_F32), or null
  const uint16_t* c;     // C(t, n) at c[t * ldc + n], times beta; null when beta = 0; may be y
  const float* alpha_ptr;  // device alpha / beta (pointer mode DEVICE), or null: the
  const float* beta_ptr;   // host values below
  // fp8 operand scales (fp32, on the device), or null: one value, or with
  // SCALE_A_VEC / SCALE_B_VEC one per output feature n (A = W) / per token t (B = X).
  const float* a_scale;
  const float* b_scale;
  float* partials;       // split-K slots: [tiles][SPLIT_K][TILE_M * TILE_N] fp32
  uint32_t* counters;    // arrivals per tile; 0 between launches
  const void* zeros;     // >= 16 zero bytes (source for masked copies on AMD)
  // W and X strides and k count 16-bit units: elements of bf16/f16, pairs of fp8.
  int64_t ldw, ldx, ldy, ldc;
  int32_t m, n, k;
  float alpha, beta;
  int32_t split_k;
  // Programmatic dependent launch (sm_90): bytes per row of W each CTA prefetches
  // into L2 before waiting on the previous kernel (0: none); with PDL_PREFETCH_X as
  // much of each X row too (with PDL_PREFETCH_X_SHARED, pieces of this size shared
  // by a tile row's CTAs). And the PDL_* flags.
  int32_t prefetch_row_bytes;
  int32_t pdl_flags;
  int32_t flags;  // EPI_* and SPLIT_IN_ORDER
  // K is split between a tile's CTAs in units of this many K blocks (1 = a block;
  // batch-invariant plans: the same k for every kernel).
  int32_t split_unit;
} GemmParams;

// Bits of GemmParams::pdl_flags. PDL_TRIGGER: let the PDL successor launch
// (pdl_flags >> PDL_LEAD_SHIFT) K blocks before the end of our main loop (0 = after
// it; a lead past the start = at the start), so its prefetch overlaps our tail
// rather than our streaming. Without it, the successor may launch only as our CTAs
// exit (the implicit trigger). PDL_PREFETCH_X: prefetch the activations too;
// with PDL_PREFETCH_X_SHARED the CTAs of a tile row share that prefetch, each
// piece by one of them.
enum { PDL_TRIGGER = 1, PDL_PREFETCH_X = 2, PDL_PREFETCH_X_SHARED = 4, PDL_LEAD_SHIFT = 8 };

// Bits of GemmParams::flags. After the split-K combine every output is
// act(alpha * scaleA * scaleB * acc + beta * C + bias), hipBLASLt's order; act is
// ReLU (EPI_RELU), GELU in hipBLASLt's tanh form (EPI_GELU) or none. EPI_BIAS_F32:
// the bias is fp32. SPLIT_IN_ORDER: the global split-K combine adds the partials
// strictly in split order (batch-invariant mode: the bits then do not depend on
// the tile). SCALE_A_VEC / SCALE_B_VEC: a_scale / b_scale are vectors. OUT_F16:
// an fp8 kernel's output (Y, C, 16-bit bias) is f16, else bf16.
enum { EPI_RELU = 1, EPI_GELU = 2, EPI_BIAS_F32 = 4, SPLIT_IN_ORDER = 8, SCALE_A_VEC = 16, SCALE_B_VEC = 32, OUT_F16 = 64 };

// A tensor map for the tensor memory accelerator (CUtensorMap, sm_90): 128 opaque
// bytes the driver encodes (cuTensorMapEncodeTiled), passed by value.
typedef struct TensorMap {
  SK_ABI_ALIGNAS(64) uint64_t opaque[16];
} TensorMap;

// The second kernel argument of the TMA-fed kernels (wgmma_gemm.h), a
// __grid_constant__ parameter: W as [N rows][K] with 64 x TILE_N boxes, X as
// [M rows][K] with 64 x TILE_M boxes, both 128-B swizzled.
typedef struct TmaMaps {
  TensorMap w, x;
} TmaMaps;

#endif  // SKINNYLT_GEMM_PARAMS_H
