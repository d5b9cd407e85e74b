// gfx942 / gfx950 pieces of the prelude (HIP mode, -nogpulib -nogpuinc).
#pragma once

#define SK_DEVICE __attribute__((device)) SK_INLINE
#define SK_KERNEL(threads) extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, threads)))
// Static LDS on AMD, so the code object's metadata states the size (audited).
#define SK_LDS_DECL(name, bytes) __attribute__((shared)) __attribute__((aligned(16))) char name[bytes]

#if defined(__gfx950__)
#define SK_AMD_GFX950 1
#else
#define SK_AMD_GFX950 0
#endif
#include "amd_layouts.h"


// 2^x to about 1 ulp (v_exp_f32; the epilogue's GELU needs no more).
// One fp32 from device memory (target_nvptx.h says why it is a function).
SK_DEVICE float load_global_f32(const float* p) { return *p; }
SK_DEVICE float fast_exp2(float x) { return __builtin_amdgcn_exp2f(x); }
// 1/x to about 1 ulp (v_rcp_f32; target_nvptx.h says why not a division).
SK_DEVICE float fast_rcp(float x) { return __builtin_amdgcn_rcpf(x); }
SK_DEVICE int thread_id() { return __builtin_amdgcn_workitem_id_x(); }
SK_DEVICE int block_x() { return __builtin_amdgcn_workgroup_id_x(); }
SK_DEVICE int block_y() { return __builtin_amdgcn_workgroup_id_y(); }
SK_DEVICE void barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}


typedef __attribute__((address_space(3))) char lds_char;

typedef __attribute__((address_space(3))) const u32x4 lds_u32x4;
// Through an LDS-typed pointer, so the load is a ds_read_b128, not a flat load.
SK_DEVICE u32x4 lds_load16(const char* p) { return *(lds_u32x4*)p; }

SK_DEVICE u32x4 global_load16(const void* p) {
  // Weights are streamed once: non-temporal.
  return __builtin_nontemporal_load((const u32x4*)p);
}

// Direct global -> LDS copy of COPY_BYTES per lane. `lds_wave_base` is the wave's
// (uniform) destination; lane l writes lds_wave_base + l*COPY_BYTES. Out-of-range
// lanes read from a zero page instead, since the instruction has no zero-fill.
SK_DEVICE void copy_async(char* /*lds*/, char* lds_wave_base, const void* g, bool valid, const void* zeros) {
  const void* src = valid ? g : zeros;
  __builtin_amdgcn_global_load_lds((__attribute__((address_space(1))) void*)(void*)src, (lds_char*)lds_wave_base,
                                   COPY_BYTES, 0, 0);
}
SK_DEVICE void copy_commit() {}
// s_waitcnt vmcnt(N): gfx9 encoding, vmcnt in bits [3:0] and [15:14], expcnt (7)
// and lgkmcnt (15) left at "no wait".
template <int PENDING, int COPIES_PER_STAGE>
SK_DEVICE void copy_wait() {
  constexpr int n = PENDING * COPIES_PER_STAGE;
  static_assert(n <= 63, "vmcnt has 6 bits: fewer stages or larger copies");
  __builtin_amdgcn_s_waitcnt((n & 15) | ((n >> 4) << 14) | (7 << 4) | (15 << 8));
}

// ---- split-K handshake: agent-scope release/acquire (MI300's XCDs have their
// own L2s: release writes back L2 (buffer_wbl2 sc1), acquire invalidates (buffer_inv sc1);
// LLVM AMDGPUUsage, "Memory Model GFX942").
#include "scoped_atomics.h"
#include "amd_sync.h"
SK_DEVICE void store_partial(float* p, f32x4 v) { *(f32x4*)p = v; }


typedef short s16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 h16x4 __attribute__((ext_vector_type(4)));
typedef __bf16 b16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 h16x8 __attribute__((ext_vector_type(8)));

template <typename T>
SK_DEVICE void atom_mma_k32(float* acc, const u32x4* a, const u32x4& b) {
  f32x4 c = {acc[0], acc[1], acc[2], acc[3]};
  if constexpr (T::fp8) {
    // v_mfma_f32_16x16x32_fp8_fp8 (FNUZ on gfx942, OCP on gfx950; the kernel's type
    // says which, the build instantiates only the arch's own): lane l holds row l%16,
    // k 8*(l/16)..+7, 8 bytes, as the 16-bit k16 instruction does; two per atom.
    c = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(__builtin_bit_cast(long, (u32 __attribute__((ext_vector_type(2)))){a[0].x, a[0].y}),
                                                   __builtin_bit_cast(long, (u32 __attribute__((ext_vector_type(2)))){b.x, b.y}), c, 0, 0, 0);
    c = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(__builtin_bit_cast(long, (u32 __attribute__((ext_vector_type(2)))){a[0].z, a[0].w}),
                                                   __builtin_bit_cast(long, (u32 __attribute__((ext_vector_type(2)))){b.z, b.w}), c, 0, 0, 0);
    acc[0] = c.x; acc[1] = c.y; acc[2] = c.z; acc[3] = c.w;
    return;
  }
#if defined(__gfx950__)
  if constexpr (T::id == 0)
    c = __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(b16x8, a[0]), __builtin_bit_cast(b16x8, b), c, 0, 0, 0);
  else
    c = __builtin_amdgcn_mfma_f32_16x16x32_f16(__builtin_bit_cast(h16x8, a[0]), __builtin_bit_cast(h16x8, b), c, 0, 0, 0);
#else
  typedef u32 u32x2 __attribute__((ext_vector_type(2)));
  u32x2 a_lo = {a[0].x, a[0].y}, a_hi = {a[0].z, a[0].w}, b_lo = {b.x, b.y}, b_hi = {b.z, b.w};
  if constexpr (T::id == 0) {
    c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(s16x4, a_lo), __builtin_bit_cast(s16x4, b_lo), c, 0, 0, 0);
    c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(s16x4, a_hi), __builtin_bit_cast(s16x4, b_hi), c, 0, 0, 0);
  } else {
    c = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(h16x4, a_lo), __builtin_bit_cast(h16x4, b_lo), c, 0, 0, 0);
    c = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(h16x4, a_hi), __builtin_bit_cast(h16x4, b_hi), c, 0, 0, 0);
  }
#endif
  acc[0] = c.x; acc[1] = c.y; acc[2] = c.z; acc[3] = c.w;
}


typedef short s16x8 __attribute__((ext_vector_type(8)));
typedef __bf16 b16x16 __attribute__((ext_vector_type(16)));
typedef _Float16 h16x16 __attribute__((ext_vector_type(16)));

typedef int i32x2 __attribute__((ext_vector_type(2)));
typedef int i32x4 __attribute__((ext_vector_type(4)));
typedef int i32x8 __attribute__((ext_vector_type(8)));
SK_DEVICE u32 byte_perm(u32 src0, u32 src1, u32 select) { return __builtin_amdgcn_perm(src0, src1, select); }

template <typename T>
SK_DEVICE void vd_mma(float* acc, const u32x4* w, const u32x4* x, u32 meta) {
  f32x4 c = {acc[0], acc[1], acc[2], acc[3]};
  if constexpr (T::fp8) {
    // v_smfmac_f32_16x16x{64,128}_fp8_fp8: operands packed by amd_layouts.h.
    const u32 select = vd_fp8_select(meta);
    constexpr int NA = SK_AMD_GFX950 ? 4 : 2;
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      u32 a[NA], b[2 * NA];
      vd_fp8_operands<NA>(a, b, w, x, s, select);
#if defined(__gfx950__)
      c = __builtin_amdgcn_smfmac_f32_16x16x128_fp8_fp8(i32x4{(int)a[0], (int)a[1], (int)a[2], (int)a[3]},
                                                         i32x8{(int)b[0], (int)b[1], (int)b[2], (int)b[3], (int)b[4], (int)b[5], (int)b[6], (int)b[7]},
                                                         c, (int)meta, 0, 0);
#else
      c = __builtin_amdgcn_smfmac_f32_16x16x64_fp8_fp8(i32x2{(int)a[0], (int)a[1]}, i32x4{(int)b[0], (int)b[1], (int)b[2], (int)b[3]}, c,
                                                        (int)meta, 0, 0);
#endif
    }
    acc[0] = c.x; acc[1] = c.y; acc[2] = c.z; acc[3] = c.w;
    return;
  }
#if defined(__gfx950__)
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const u32x4 a = {x[0][2 * s], x[0][2 * s + 1], x[1][2 * s], x[1][2 * s + 1]};
    typedef u32 u32x8 __attribute__((ext_vector_type(8)));
    const u32x8 b = {w[0][2 * s], w[1][2 * s], w[0][2 * s + 1], w[1][2 * s + 1],
                     w[2][2 * s], w[3][2 * s], w[2][2 * s + 1], w[3][2 * s + 1]};
    if constexpr (T::id == 0)
      c = __builtin_amdgcn_smfmac_f32_16x16x64_bf16(__builtin_bit_cast(b16x8, a), __builtin_bit_cast(b16x16, b), c, (int)meta, 0, 0);
    else
      c = __builtin_amdgcn_smfmac_f32_16x16x64_f16(__builtin_bit_cast(h16x8, a), __builtin_bit_cast(h16x16, b), c, (int)meta, 0, 0);
  }
#else
  typedef u32 u32x2 __attribute__((ext_vector_type(2)));
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const u32x2 a = {x[0][2 * s], x[0][2 * s + 1]};
    const u32x4 b = {w[0][2 * s], w[1][2 * s], w[0][2 * s + 1], w[1][2 * s + 1]};
    if constexpr (T::id == 0)
      c = __builtin_amdgcn_smfmac_f32_16x16x32_bf16(__builtin_bit_cast(s16x4, a), __builtin_bit_cast(s16x8, b), c, (int)meta, 0, 0);
    else
      c = __builtin_amdgcn_smfmac_f32_16x16x32_f16(__builtin_bit_cast(h16x4, a), __builtin_bit_cast(h16x8, b), c, (int)meta, 0, 0);
  }
#endif
  acc[0] = c.x; acc[1] = c.y; acc[2] = c.z; acc[3] = c.w;
}
