// The split-K handshake's fences and atomics on the GPU targets (target_amdgcn.h,
// target_nvptx.h), through clang's scoped builtins: device scope (agent scope on
// AMD). The emulator's host target has its own hooks for them (target_host.h).
#pragma once

SK_DEVICE void fence_release_device() { __scoped_atomic_thread_fence(__ATOMIC_RELEASE, __MEMORY_SCOPE_DEVICE); }
SK_DEVICE void fence_acquire_device() { __scoped_atomic_thread_fence(__ATOMIC_ACQUIRE, __MEMORY_SCOPE_DEVICE); }
SK_DEVICE u32 atomic_add_device(u32* p, u32 v) {
  return __scoped_atomic_fetch_add(p, v, __ATOMIC_ACQ_REL, __MEMORY_SCOPE_DEVICE);
}
SK_DEVICE void atomic_store_device(u32* p, u32 v) { __scoped_atomic_store_n(p, v, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE); }
// Partials written by other CTAs. Plain loads: after the acquire fence the memory
// model makes the releasing CTAs' writes visible to them, and, unlike volatile asm,
// they can all be in flight at once.
SK_DEVICE f32x4 load_partial(const float* p) { return *(const f32x4*)p; }
