// Probes of the target prelude, compiled twice: for gfx942/gfx950 as HIP device
// code to LLVM IR (amd_probe.hip, built by emu/CMakeLists.txt with clang), and
// for the host inside the emulator's instance files (kernels/prelude/target_host.h).
// The emulator's tests compare the two: the host mirror of target_amdgcn.h must
// compute the same lane layouts, swizzles and constants, and its atom, copy and
// wait must issue the same instructions with the same operands.
//
// Needs SKP_FN(name) (a function returning u32, no arguments) and
// SKP_KERNEL(name) (a kernel: void name(...)); every probe is listed in SKP_LIST.

#define SKP_LIST(X) X(sk_probe_a_piece) X(sk_probe_b_piece) X(sk_probe_acc_coord) X(sk_probe_swizzle128) \
  X(sk_probe_swizzle256) X(sk_probe_constants)
#define SKP_KERNEL_LIST(X) X(sk_probe_mma_bf16) X(sk_probe_mma_f16) X(sk_probe_mma_fp8) X(sk_probe_copy) X(sk_probe_arrive)

#define SKP_MIX(h, v) ((h) * 1000003u + (u32)(v))

SKP_FN(sk_probe_a_piece) {
  u32 h = 17;
#pragma unroll
  for (int l = 0; l < 64; ++l) {
    int row, piece;
    atom_a_piece(l, 0, row, piece);
    h = SKP_MIX(h, row * 256 + piece);
  }
  return h;
}

SKP_FN(sk_probe_b_piece) {
  u32 h = 19;
#pragma unroll
  for (int l = 0; l < 64; ++l) {
    int tok, piece;
    atom_b_piece(l, tok, piece);
    h = SKP_MIX(h, tok * 256 + piece);
  }
  return h;
}

SKP_FN(sk_probe_acc_coord) {
  u32 h = 23;
#pragma unroll
  for (int l = 0; l < 64; ++l)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int row, tok;
      atom_acc_coord(l, r, row, tok);
      h = SKP_MIX(h, row * 256 + tok);
    }
  return h;
}

SKP_FN(sk_probe_swizzle128) {
  u32 h = 29;
#pragma unroll
  for (int r = 0; r < 256; ++r) h = SKP_MIX(h, target_swizzle<128>(r));
  return h;
}

SKP_FN(sk_probe_swizzle256) {
  u32 h = 31;
#pragma unroll
  for (int r = 0; r < 256; ++r) h = SKP_MIX(h, target_swizzle<256>(r));
  return h;
}

SKP_FN(sk_probe_constants) {
  u32 h = 37;
  h = SKP_MIX(h, WAVE);
  h = SKP_MIX(h, ATOM_TOKS);
  h = SKP_MIX(h, ATOM_A_PIECES);
  h = SKP_MIX(h, COPY_BY_WAVE ? 1 : 0);
  h = SKP_MIX(h, COPY_BYTES);
  return h;
}

// The atom with operands whose 16-bit units are 1..8 (A) and 9..16 (B): the IR
// shows which elements reach which matrix instruction, in which order.
template <typename T>
SK_DEVICE void sk_probe_mma(f32x4* out) {
  u32x4 a = {0x00020001u, 0x00040003u, 0x00060005u, 0x00080007u};
  u32x4 b = {0x000a0009u, 0x000c000bu, 0x000e000du, 0x0010000fu};
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  atom_mma_k32<T>(acc, &a, b);
  out[0] = f32x4{acc[0], acc[1], acc[2], acc[3]};
}
SKP_KERNEL(sk_probe_mma_bf16)(f32x4* out) { sk_probe_mma<bf16_t>(out); }
SKP_KERNEL(sk_probe_mma_f16)(f32x4* out) { sk_probe_mma<f16_t>(out); }
// The arch's own fp8 (the elements above are then byte pairs): OCP on gfx950, FNUZ on gfx942.
#if defined(__gfx950__) || defined(SK_HOST_GFX950)
SKP_KERNEL(sk_probe_mma_fp8)(f32x4* out) { sk_probe_mma<e4m3_t>(out); }
#else
SKP_KERNEL(sk_probe_mma_fp8)(f32x4* out) { sk_probe_mma<e4m3fnuz_t>(out); }
#endif

// One direct-to-LDS copy and copy_wait<3, 5> (vmcnt 15), then a barrier.
SKP_KERNEL(sk_probe_copy)(f32x4* out) {
  SK_LDS_DECL(smem, 4096);
  copy_async(nullptr, smem + 1024, (const void*)out, true, (const void*)(out + 1));
  copy_wait<3, 5>();
  barrier();
}

// The split-K arrival protocol and the counter reset: fences, barriers and
// atomics with their scopes and orders (as the last arriver sees them).
SKP_KERNEL(sk_probe_arrive)(f32x4* out) {
  SK_LDS_DECL(smem, 64);
  u32* counter = (u32*)(out + 1);
  const bool last = arrive_last(counter, 1u, thread_id(), (u32*)smem);
  if (last) atomic_store_device(counter, 0u);
  out[0].x = last ? 1.f : 0.f;
}
