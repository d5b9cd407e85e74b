// Targets without thread-block clusters (AMD, and the emulator that runs the AMD
// kernels): split-K always combines through global memory, so the families'
// cluster paths never run there; these stand-ins only let them compile.
#pragma once

constexpr bool HAS_CLUSTERS = false;
constexpr int MAX_CLUSTER = 1;
constexpr int SM_LDS_BYTES = 0;  // unused without clusters (schema.rs TARGETS: sm_lds 0)
constexpr int LDS_RESERVED_PER_CTA = 0;
SK_DEVICE u32 cluster_rank() { return 0; }
SK_DEVICE void cluster_sync() {}
SK_DEVICE void cluster_arrive_relaxed() {}
SK_DEVICE void cluster_wait() {}
SK_DEVICE f32x4 cluster_load16(const void* local, u32) { return *(const f32x4*)local; }
SK_DEVICE void mbar_init(u64*, u32) {}
SK_DEVICE void mbar_init_fence() {}
SK_DEVICE void mbar_arrive_expect_tx(u64*, u32) {}
SK_DEVICE void mbar_wait_cluster(u64*, u32) {}
SK_DEVICE void mbar_arrive_remote(u64*, u32) {}
SK_DEVICE void store16_remote_async(void*, u32, f32x4, u64*) {}
