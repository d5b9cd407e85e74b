// skinnylt device prelude: the small vocabulary every kernel is written in.
//
// One kernel source per family; what differs between targets lives behind this
// interface, in one header per target:
//   target_nvptx.h  — sm_90 (PTX through clang's CUDA mode, no CUDA headers)
//   target_amdgcn.h — gfx942 / gfx950 (HIP mode, -nogpulib -nogpuinc)
//   target_host.h   — the host, for the wave-level emulator (no GPU code)
// with the pieces two of them share written once: amd_layouts.h and amd_sync.h
// (the AMD device and host targets), scoped_atomics.h (the two GPU targets),
// no_clusters.h (targets without thread-block clusters).
//
// Vocabulary: lane/wave/workgroup ids, barriers, LDS, 16-byte global loads,
// asynchronous global->LDS copies (copy_async: each target uses either the
// thread's own LDS destination (NVIDIA) or the group's base, to which lane l
// writes at base + l*COPY_BYTES (AMD direct-to-LDS loads)), fences and atomics for the split-K handshake,
// and the matrix "atom": 16 weight rows x ATOM_TOKS tokens x 32 k, whose operand
// pieces are 16-byte runs of 8 consecutive k (see atom_* below).
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef u32 u32x4 __attribute__((ext_vector_type(4)));
typedef float f32x4 __attribute__((ext_vector_type(4)));

#define SK_INLINE __attribute__((always_inline)) inline

// Element types of the operands W and X. Data moves as 16-bit units: one bf16/f16
// element, or two fp8 elements in k order (so a kernel's K, ldw and ldx count
// units, and every copy, swizzle and fragment layout is the same for both sizes;
// the fp8 atoms take twice the k per register). The atom knows how to feed a type
// to the matrix unit. The output Y (and C, and a bias not in fp32) is bf16/f16:
// the operand type for 16-bit operands, OUT_F16 in GemmParams::flags for fp8.
//   e4m3_t: OCP FP8 E4M3 (sm_90, gfx950); e4m3fnuz_t: E4M3 FNUZ (gfx942).
struct bf16_t { static constexpr int id = 0; static constexpr bool fp8 = false; };
struct f16_t { static constexpr int id = 1; static constexpr bool fp8 = false; };
struct e4m3_t { static constexpr int id = 2; static constexpr bool fp8 = true; };
struct e4m3fnuz_t { static constexpr int id = 3; static constexpr bool fp8 = true; };

#if defined(__NVPTX__)
#include "target_nvptx.h"
#elif defined(__AMDGPU__) || defined(__AMDGCN__)
#include "target_amdgcn.h"
#else
#include "target_host.h"
#endif

// ---- conversions (identical on every target) ----

SK_DEVICE float to_f32(bf16_t, u16 v) { return __builtin_bit_cast(float, (u32)v << 16); }
SK_DEVICE float to_f32(f16_t, u16 v) { return (float)__builtin_bit_cast(_Float16, v); }

// Round to nearest even; NaN stays NaN (quiet).
SK_DEVICE u16 from_f32(bf16_t, float f) {
  u32 u = __builtin_bit_cast(u32, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (u16)(u >> 16);
}
SK_DEVICE u16 from_f32(f16_t, float f) { return __builtin_bit_cast(u16, (_Float16)f); }

// ---- LDS tile layout ----
// A tile is rows of ROW_BYTES (= TILE_K * 2) bytes, stored in 16-byte chunks whose
// index within the row is XOR-swizzled by a function of the row, so that the
// matrix atom's reads of one chunk column across rows spread over all banks.
// The swizzle is an involution on the chunk index: lds_chunk(row, lds_chunk(row, c)) == c.
template <int ROW_BYTES>
SK_DEVICE int lds_chunk(int row, int chunk) { return chunk ^ target_swizzle<ROW_BYTES>(row); }

template <int ROW_BYTES>
SK_DEVICE int lds_offset(int row, int chunk) { return row * ROW_BYTES + lds_chunk<ROW_BYTES>(row, chunk) * 16; }

// constexpr functions are host+device in clang's CUDA/HIP modes.
template <typename T>
constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }
