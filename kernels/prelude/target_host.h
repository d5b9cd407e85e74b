// Host pieces of the prelude: the same kernel source compiles as ordinary C++ so
// that a wave-level CPU emulator (ctest/, a later milestone) can execute the AMD
// kernels. Wave-collective operations are hooks the emulator defines; the matrix
// atom follows the gfx942/gfx950 lane layouts, selected with SK_HOST_GFX950.
#pragma once

#define SK_DEVICE SK_INLINE
#define SK_KERNEL(threads) extern "C"
#define SK_LDS_DECL(name, bytes) char* name = sk_emu_lds()

constexpr int WAVE = 64;
constexpr int ATOM_TOKS = 16;
constexpr int ATOM_A_PIECES = 1;
constexpr bool COPY_BY_WAVE = true;
#if defined(SK_HOST_GFX950)
constexpr int COPY_BYTES = 16;
#else
constexpr int COPY_BYTES = 4;
#endif

extern "C" {
// Provided by the emulator: the current lane's ids and the workgroup's LDS.
int sk_emu_thread_id();
int sk_emu_block_x();
int sk_emu_block_y();
char* sk_emu_lds();
void sk_emu_barrier();
void sk_emu_copy_wave(char* lds_wave_base, const void* src, int bytes);
void sk_emu_wait_copies(int pending);
void sk_emu_mfma_k32(int dtype_id, float* acc, const u32x4* a, const u32x4* b);
u32 sk_emu_atomic_add(u32* p, u32 v);
void sk_emu_fence();
}

SK_DEVICE int thread_id() { return sk_emu_thread_id(); }
SK_DEVICE int block_x() { return sk_emu_block_x(); }
SK_DEVICE int block_y() { return sk_emu_block_y(); }
SK_DEVICE void barrier() { sk_emu_barrier(); }

template <int ROW_BYTES>
SK_DEVICE int target_swizzle(int row) {
#if defined(SK_HOST_GFX950)
  if constexpr (ROW_BYTES == 128) return (row >> 1) & 7;
  else return row & 15;
#else
  return ((row & 1) << 2) | ((row >> 1) & 3);
#endif
}

SK_DEVICE u32x4 lds_load16(const char* p) { return *(const u32x4*)p; }
SK_DEVICE u32x4 global_load16(const void* p) { return *(const u32x4*)p; }
SK_DEVICE void copy_async(char* /*lds*/, char* lds_wave_base, const void* g, bool valid, const void* zeros) {
  sk_emu_copy_wave(lds_wave_base, valid ? g : zeros, COPY_BYTES);
}
SK_DEVICE void copy_commit() {}
template <int PENDING, int COPIES_PER_STAGE>
SK_DEVICE void copy_wait() { sk_emu_wait_copies(PENDING * COPIES_PER_STAGE); }
SK_DEVICE void fence_release_device() { sk_emu_fence(); }
SK_DEVICE void fence_acquire_device() { sk_emu_fence(); }
SK_DEVICE u32 atomic_add_device(u32* p, u32 v) { return sk_emu_atomic_add(p, v); }
SK_DEVICE void atomic_store_device(u32* p, u32 v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
SK_DEVICE f32x4 load_partial(const float* p) { return *(const f32x4*)p; }
SK_DEVICE void store_partial(float* p, f32x4 v) { *(f32x4*)p = v; }

SK_DEVICE void atom_a_piece(int lane, int, int& row, int& piece) { row = lane & 15; piece = lane >> 4; }
SK_DEVICE void atom_b_piece(int lane, int& tok, int& piece) { tok = lane & 15; piece = lane >> 4; }
SK_DEVICE void atom_acc_coord(int lane, int r, int& row, int& tok) { row = 4 * (lane >> 4) + r; tok = lane & 15; }
template <typename T>
SK_DEVICE void atom_mma_k32(float* acc, const u32x4* a, const u32x4& b) { sk_emu_mfma_k32(T::id, acc, a, &b); }
