// Launch ordering and the split-K arrival of the AMD targets, written in the prelude
// vocabulary and shared verbatim by target_amdgcn.h (the device code) and
// target_host.h (the emulator), so the emulator runs the device's own sequence.
// Include after the target's barrier, fences and atomics.
#pragma once

// No programmatic dependent launch: stream order alone orders kernels.
SK_DEVICE void pdl_launch_dependents() {}
SK_DEVICE void pdl_wait() {}
SK_DEVICE void prefetch_l2(const void*, u32) {}
#include "no_clusters.h"
// Split-K arrival. Every thread releases its own slot writes (vmcnt, and so the
// wait in the release sequence, is per wave), the CTA barrier gathers them, one
// agent-scope atomic counts the arrival, and in the last CTA every thread
// acquires (buffer_inv sc1) before reading other CTAs' slots.
SK_DEVICE bool arrive_last(u32* counter, u32 splits, int tid, u32* flag) {
  fence_release_device();
  barrier();
  if (tid == 0) *flag = atomic_add_device(counter, 1u) == splits - 1;
  barrier();
  if (!*flag) return false;
  fence_acquire_device();
  return true;
}
