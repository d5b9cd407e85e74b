// Host pieces of the prelude: the same kernel source compiles as ordinary C++
// (clang, for ext_vector_type) so that the wave-level CPU emulator in emu/ can
// execute the AMD kernels. SK_HOST_GFX950 selects gfx950, otherwise gfx942.
//
// Every prelude operation that touches LDS, global memory through the kernel's
// own vocabulary, a barrier, a fence/atomic or the matrix unit calls an
// `sk_emu_*` hook, named after the AMD instruction (or LLVM builtin) that
// target_amdgcn.h emits for it. The emulator runs each lane of a wave as a fiber;
// wave-collective hooks (LDS reads, direct-to-LDS copies, s_waitcnt, s_barrier,
// MFMA) suspend the lane until all 64 lanes of its wave have arrived, then execute
// the instruction for the whole wave. Plain C++ memory accesses of the kernel
// source (the K-slice reduction through LDS, the flag word, bias loads, Y stores)
// run directly on host memory.
//
// The lane layouts, swizzles and constants are the device's own (amd_layouts.h,
// included by both), and so are the no-PDL stand-ins and the split-K arrival
// sequence (amd_sync.h, written on top of the hooks). What this header mirrors — the
// instruction sequences of the atom, the copy and the wait, and the fences and
// atomics under arrive_last — is checked against target_amdgcn.h by emu/ (it
// compiles emu/probe/ for gfx942/gfx950 with clang and compares the LLVM IR with
// what this header does): keep those textually parallel.
#pragma once

#define SK_DEVICE SK_INLINE
// Internal linkage: the emulator wraps each target's instances in a namespace.
#define SK_KERNEL(threads) static
#define SK_LDS_DECL(name, bytes) char* name = sk_emu_lds(bytes)

#if defined(SK_HOST_GFX950)
#define SK_AMD_GFX950 1
#else
#define SK_AMD_GFX950 0
#endif
#include "amd_layouts.h"
// 2^x (the host's libm; the devices' v_exp_f32 is within a few ulp of it).
// One fp32 from device memory (target_nvptx.h says why it is a function).
SK_DEVICE float load_global_f32(const float* p) { return *p; }
SK_DEVICE float fast_exp2(float x) { return __builtin_exp2f(x); }
// 1/x (the devices' approximate reciprocals are within about 1 ulp of it).
SK_DEVICE float fast_rcp(float x) { return 1.f / x; }


// Wave-collective hooks are `convergent`, like the AMD intrinsics they stand for:
// the compiler may not make a call depend on more control flow than the source
// does (the emulator requires all lanes of a wave at the same call).
#define SK_EMU_WAVE __attribute__((convergent))

extern "C" {
// Work-item and workgroup ids of the calling lane (v_workitem_id.x, s_workgroup_id.{x,y}).
int sk_emu_workitem_id_x();
int sk_emu_workgroup_id_x();
int sk_emu_workgroup_id_y();
// The workgroup's LDS; `bytes` is the static size the kernel declares.
char* sk_emu_lds(int bytes);
// s_barrier (with the workgroup-scope fences of target_amdgcn.h's barrier()).
SK_EMU_WAVE void sk_emu_s_barrier();
// ds_read_b128: 16 bytes at an LDS address into `out` (u32x4).
SK_EMU_WAVE void sk_emu_ds_read_b128(const char* lds, void* out);
// global_load_lds_{dword,dwordx4}: lane l copies `size` bytes from `src` to
// lds_base + l*size (lds_base wave-uniform, as M0).
SK_EMU_WAVE void sk_emu_global_load_lds(const void* src, char* lds_base, int size);
// s_waitcnt vmcnt(n).
SK_EMU_WAVE void sk_emu_s_waitcnt_vmcnt(int n);
// 16-byte global load / store (load_partial, store_partial, global_load16).
void sk_emu_global_load_b128(const void* p, void* out);
void sk_emu_global_store_b128(void* p, const void* v);
// Agent-scope fence / atomics; `order` is an __ATOMIC_* constant.
void sk_emu_fence_agent(int order);
u32 sk_emu_atomic_add_agent(u32* p, u32 v, int order);
void sk_emu_atomic_store_agent(u32* p, u32 v, int order);
// v_mfma_f32_16x16x16_{bf16,f16} (dtype 0 = bf16, 1 = f16): per lane, `a` and `b`
// are the 2 VGPRs of the operand, `c` and `d` the 4 accumulator VGPRs.
SK_EMU_WAVE void sk_emu_v_mfma_f32_16x16x16(int dtype, float* d, const u32* a, const u32* b, const float* c);
// v_mfma_f32_16x16x32_{bf16,f16} (gfx950): 4 VGPRs per operand.
SK_EMU_WAVE void sk_emu_v_mfma_f32_16x16x32(int dtype, float* d, const u32* a, const u32* b, const float* c);
// v_mfma_f32_16x16x32_fp8_fp8 (dtype 2 = OCP E4M3 on gfx950, 3 = E4M3 FNUZ on gfx942):
// 2 VGPRs per operand, 8 fp8 per lane.
SK_EMU_WAVE void sk_emu_v_mfma_f32_16x16x32_fp8_fp8(int dtype, float* d, const u32* a, const u32* b, const float* c);
}

SK_DEVICE int thread_id() { return sk_emu_workitem_id_x(); }
SK_DEVICE int block_x() { return sk_emu_workgroup_id_x(); }
SK_DEVICE int block_y() { return sk_emu_workgroup_id_y(); }
SK_DEVICE void barrier() { sk_emu_s_barrier(); }


SK_DEVICE u32x4 lds_load16(const char* p) {
  u32x4 v;
  sk_emu_ds_read_b128(p, &v);
  return v;
}
SK_DEVICE u32x4 global_load16(const void* p) {
  u32x4 v;
  sk_emu_global_load_b128(p, &v);
  return v;
}
SK_DEVICE void copy_async(char* /*lds*/, char* lds_wave_base, const void* g, bool valid, const void* zeros) {
  const void* src = valid ? g : zeros;
  sk_emu_global_load_lds(src, lds_wave_base, COPY_BYTES);
}
SK_DEVICE void copy_commit() {}
template <int PENDING, int COPIES_PER_STAGE>
SK_DEVICE void copy_wait() {
  constexpr int n = PENDING * COPIES_PER_STAGE;
  static_assert(n <= 63, "vmcnt has 6 bits: fewer stages or larger copies");
  sk_emu_s_waitcnt_vmcnt(n);
}
SK_DEVICE void fence_release_device() { sk_emu_fence_agent(__ATOMIC_RELEASE); }
SK_DEVICE void fence_acquire_device() { sk_emu_fence_agent(__ATOMIC_ACQUIRE); }
SK_DEVICE u32 atomic_add_device(u32* p, u32 v) { return sk_emu_atomic_add_agent(p, v, __ATOMIC_ACQ_REL); }
SK_DEVICE void atomic_store_device(u32* p, u32 v) { sk_emu_atomic_store_agent(p, v, __ATOMIC_RELAXED); }
SK_DEVICE f32x4 load_partial(const float* p) {
  f32x4 v;
  sk_emu_global_load_b128(p, &v);
  return v;
}
SK_DEVICE void store_partial(float* p, f32x4 v) { sk_emu_global_store_b128(p, &v); }
// No PDL, no clusters, and the split-K arrival: target_amdgcn.h's own header.
#include "amd_sync.h"

// ---- the matrix atom: same layouts and instruction sequence as target_amdgcn.h ----

template <typename T>
SK_DEVICE void atom_mma_k32(float* acc, const u32x4* a, const u32x4& b) {
  if constexpr (T::fp8) {
    const u32 a_lo[2] = {a[0].x, a[0].y}, a_hi[2] = {a[0].z, a[0].w}, b_lo[2] = {b.x, b.y}, b_hi[2] = {b.z, b.w};
    sk_emu_v_mfma_f32_16x16x32_fp8_fp8(T::id, acc, a_lo, b_lo, acc);
    sk_emu_v_mfma_f32_16x16x32_fp8_fp8(T::id, acc, a_hi, b_hi, acc);
    return;
  }
#if defined(SK_HOST_GFX950)
  const u32 av[4] = {a[0].x, a[0].y, a[0].z, a[0].w}, bv[4] = {b.x, b.y, b.z, b.w};
  sk_emu_v_mfma_f32_16x16x32(T::id, acc, av, bv, acc);
#else
  const u32 a_lo[2] = {a[0].x, a[0].y}, a_hi[2] = {a[0].z, a[0].w}, b_lo[2] = {b.x, b.y}, b_hi[2] = {b.z, b.w};
  sk_emu_v_mfma_f32_16x16x16(T::id, acc, a_lo, b_lo, acc);
  sk_emu_v_mfma_f32_16x16x16(T::id, acc, a_hi, b_hi, acc);
#endif
}

// ---- the virtual-dense sparse atom (family VDMFMA): same layouts and instruction
// sequence as target_amdgcn.h (the derivation is in amd_layouts.h) ----
extern "C" {
// v_smfmac_f32_16x16x32_{bf16,f16} (gfx942; dtype 0 = bf16, 1 = f16): per lane, `a` the
// 2 VGPRs of the compressed A operand (VGPR r = the 2 kept halves of the 4-group k
// [8(l/16)+4r, +4) of row l%16), `b` the 4 VGPRs of B (column l%16, k 8(l/16) + [0,8)),
// `idx` the sparse-index VGPR (cbsz = 0, abid = 0: index set 0 = bits [7:0], nibble r
// for A VGPR r: bits [1:0] position of the first kept half, [3:2] of the second), `c` and
// `d` the 4 accumulator VGPRs (rows 4(l/16)+i, column l%16).
SK_EMU_WAVE void sk_emu_v_smfmac_f32_16x16x32(int dtype, float* d, const u32* a, const u32* b, const float* c, u32 idx);
// v_smfmac_f32_16x16x64_{bf16,f16} (gfx950): `a` 4 VGPRs (VGPR r = the 4-group k
// [16(l/16)+4r, +4) of row l%16), `b` 8 VGPRs (column l%16; the k of each VGPR is the
// disputed part: see SK_GFX950_SMFMAC_B_MAP in amd_layouts.h), `idx` bits [15:0]
// (nibble r for A VGPR r; cbsz = 0, abid = 0), `c`/`d` as above.
SK_EMU_WAVE void sk_emu_v_smfmac_f32_16x16x64(int dtype, float* d, const u32* a, const u32* b, const float* c, u32 idx);
// v_smfmac_f32_16x16x64_fp8_fp8 (gfx942, dtype 3 = E4M3 FNUZ) and
// v_smfmac_f32_16x16x128_fp8_fp8 (gfx950, dtype 2 = OCP E4M3): `a` 2 / 4 VGPRs
// (VGPR r = the kept bytes of 4-groups 2r, 2r+1), `b` 4 / 8 VGPRs, `idx` one nibble
// per 4-group (layouts: amd_layouts.h, the fp8 virtual-dense atom).
SK_EMU_WAVE void sk_emu_v_smfmac_f32_16x16x64_fp8_fp8(int dtype, float* d, const u32* a, const u32* b, const float* c, u32 idx);
SK_EMU_WAVE void sk_emu_v_smfmac_f32_16x16x128_fp8_fp8(int dtype, float* d, const u32* a, const u32* b, const float* c, u32 idx);
}

// v_perm_b32: byte i of the result is byte select_i of {src0 (bytes 4..7), src1
// (bytes 0..3)}; the prelude uses selector bytes 0..7 only.
SK_DEVICE u32 byte_perm(u32 src0, u32 src1, u32 select) {
  const unsigned long long both = (unsigned long long)src0 << 32 | src1;
  u32 out = 0;
  for (int i = 0; i < 4; ++i) out |= (u32)((both >> (8 * ((select >> (8 * i)) & 7))) & 0xff) << (8 * i);
  return out;
}


template <typename T>
SK_DEVICE void vd_mma(float* acc, const u32x4* w, const u32x4* x, u32 meta) {
  if constexpr (T::fp8) {
    const u32 select = vd_fp8_select(meta);
    for (int s = 0; s < 2; ++s) {
#if defined(SK_HOST_GFX950)
      u32 a[4], b[8];
      vd_fp8_operands<4>(a, b, w, x, s, select);
      sk_emu_v_smfmac_f32_16x16x128_fp8_fp8(T::id, acc, a, b, acc, meta);
#else
      u32 a[2], b[4];
      vd_fp8_operands<2>(a, b, w, x, s, select);
      sk_emu_v_smfmac_f32_16x16x64_fp8_fp8(T::id, acc, a, b, acc, meta);
#endif
    }
    return;
  }
#if defined(SK_HOST_GFX950)
  for (int s = 0; s < 2; ++s) {
    const u32 a[4] = {x[0][2 * s], x[0][2 * s + 1], x[1][2 * s], x[1][2 * s + 1]};
    const u32 b[8] = {w[0][2 * s], w[1][2 * s], w[0][2 * s + 1], w[1][2 * s + 1],
                      w[2][2 * s], w[3][2 * s], w[2][2 * s + 1], w[3][2 * s + 1]};
    sk_emu_v_smfmac_f32_16x16x64(T::id, acc, a, b, acc, meta);
  }
#else
  for (int s = 0; s < 2; ++s) {
    const u32 a[2] = {x[0][2 * s], x[0][2 * s + 1]};
    const u32 b[4] = {w[0][2 * s], w[1][2 * s], w[0][2 * s + 1], w[1][2 * s + 1]};
    sk_emu_v_smfmac_f32_16x16x32(T::id, acc, a, b, acc, meta);
  }
#endif
}
