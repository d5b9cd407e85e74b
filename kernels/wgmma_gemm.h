// Kernel family W: the split-K pipeline on Hopper's warpgroup MMA (sm_90a), for
// decode steps of 16..128 tokens, where mma.sync tiles run out of issue slots and
// re-read the activations once per 16 weight rows.
//
//   Y[M,N] = alpha * X[M,K] . W[N,K]^T (+ bias[N])
//
// "Swap AB" as in family A: weight rows are the MMA's M side (64 per warpgroup per
// instruction), tokens its N side (TILE_M). A CTA is WG warpgroups; warpgroup g owns
// weight rows [g*RB*64, (g+1)*RB*64) of the tile, as RB m64 blocks. The W and X
// tiles of each K block of TILE_K sit in a STAGES-deep shared-memory ring in the
// 128-B swizzled K-major layout wgmma reads (rows of 64 k = 128 B; one such
// sub-tile per 64 k), and each block is 4*H*RB
// wgmma.m64nTILE_Mk16 with operands straight from the descriptors. (TILE_K = 128
// or 256 store 2 or 4 sub-tiles: longer contiguous runs of each weight row per
// stage.) Two ways to
// feed the ring (the TMA template flag):
//  * cp.async: every thread both copies and multiplies. Per block: wait for it,
//    fence the generic->async proxy, barrier, issue the copies of block
//    i+STAGES-1 into the stage freed by block i-1, multiply, wait for the MMAs.
//    Simple, but with one CTA per SM the copies in flight cap the bandwidth
//    (about 1.5 TB/s over the whole GPU, measured on H100; docs/design.md,
//    section 8.3).
//  * TMA: one extra producer warp whose lane 0 issues one tensor copy per
//    sub-tile (tensor maps encoded on the host) into a stage as soon as the
//    consumers have released it (mbarrier "empty"), announcing the stage's bytes
//    on its "full" mbarrier. The consumer warpgroups wait on "full", multiply,
//    keep one MMA group in flight (wait_group 1) and release the previous stage.
//    Bytes in flight are bounded by the ring alone, not by issuing threads.
//    With KW = 2 K groups, two sets of WG warpgroups take alternate K blocks into
//    accumulators of their own, each with its own MMA group in flight, and the
//    two sums are added in a fixed order when the tile is staged: 2-4 % faster
//    on the 64-row tiles of 16-112 tokens (H100; docs/design.md, section 8.3).
// Split-K and PDL are gemm_common.h's, shared with family A; the accumulators are
// staged in LDS as fp32 token rows for the combine and the epilogue (StagedTile).
#pragma once
#include "gemm_common.h"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

template <typename T, int TILE_M, int TILE_N, int TILE_K, int STAGES, int WG, int KW, bool CLUSTER, bool TMA>
struct WgmmaSplitK {
  static constexpr int CONSUMERS = WG * KW * 128;
  static constexpr int THREADS = CONSUMERS + (TMA ? 32 : 0);  // + the producer warp
  static constexpr int RB = TILE_N / (64 * WG);  // m64 row blocks per warpgroup
  static constexpr int H = TILE_K / 64;          // 128-B swizzle sub-tiles along k
  static constexpr int NACC = TILE_M / 2;        // accumulators per row block per thread
  static constexpr int W_STAGE = TILE_N * TILE_K * 2;
  static constexpr int X_STAGE = TILE_M * TILE_K * 2;
  static constexpr int STAGE_BYTES = W_STAGE + X_STAGE;
  static constexpr int PIPE_BYTES = STAGES * STAGE_BYTES;
  using Tile = StagedTile<T, THREADS, TILE_M, TILE_N, CLUSTER>;
  static constexpr int FLAG_OFFSET = PIPE_BYTES > Tile::LDS_BYTES ? PIPE_BYTES : Tile::LDS_BYTES;
  // TMA: "full" and "empty" mbarriers per stage, after the combine's flag.
  static constexpr int BAR_OFFSET = FLAG_OFFSET + 16;
  static constexpr int BAR_BYTES = TMA ? STAGES * 16 : 0;
  // The swizzle atoms must start on 1024-B boundaries; the dynamic shared window's
  // alignment is not promised, so the kernel aligns its base itself.
  static constexpr int ALIGN = 1024;
  // The cluster combine's own receive slots where they cost no CTA per SM.
  static constexpr int RECV_OFFSET = BAR_OFFSET + BAR_BYTES;
  static constexpr int RECV_BYTES = Tile::own_recv_bytes(RECV_OFFSET + ALIGN);
  static constexpr int LDS_BYTES = RECV_OFFSET + RECV_BYTES + ALIGN;  // mirrored by KernelConfig::lds_bytes

  static_assert(TILE_N % (64 * WG) == 0 && RB >= 1 && RB <= 2, "tile_n = 64 * warpgroups * (1 or 2)");
  static_assert(TILE_M % 8 == 0 && TILE_M >= 16 && TILE_M <= 128,
                "tile_m: a wgmma n the prelude defines (schema.rs WGMMA_TOKENS)");
  static_assert(TILE_K == 64 || TILE_K == 128 || TILE_K == 256, "tile_k: 1, 2 or 4 128-B swizzle atoms");
  static_assert(STAGES >= 2, "a ring needs two stages");
  static_assert(X_STAGE / H % ALIGN == 0 && W_STAGE / H % ALIGN == 0, "sub-tiles stay 1024-B aligned");
  static_assert(!TMA || TILE_N <= 256, "a tensor-copy box has at most 256 rows");
  static_assert(KW == 1 || (KW == 2 && TMA), "K-interleaved consumer warpgroups: 1, or 2 with the TMA feed");

  // Copies ROWS rows x TILE_K of a row-major matrix into a ring stage: sub-tile h
  // (k in [64h, 64h+64)) at h*ROWS*128, row r at r*128, logical 16-B chunk c at
  // physical chunk c ^ (r & 7) — the hardware's Swizzle<3,4,3> on the absolute
  // address, given the 1024-B aligned base (the layout a 128-B swizzled tensor copy
  // writes too). Consecutive threads fill consecutive physical chunks
  // (conflict-free); rows >= limit, k >= K and blocks past the split's end are
  // zero-filled.
  template <int ROWS>
  static SK_DEVICE void copy_tile(char* stage, const u16* base, i64 ld, int row0, int limit, int k0, int K, bool live,
                                  int tid) {
    constexpr int CHUNKS = ROWS * TILE_K / 8;
#pragma unroll
    for (int i0 = 0; i0 < ceil_div(CHUNKS, THREADS); ++i0) {
      const int i = i0 * THREADS + tid;
      if (CHUNKS % THREADS == 0 || i < CHUNKS) {
        const int h = i / (ROWS * 8), r = i / 8 % ROWS, phys = i % 8;
        const int kk = k0 + h * 64 + (phys ^ (r & 7)) * 8;
        const bool valid = live && row0 + r < limit && kk < K;
        const u16* g = valid ? base + (i64)(row0 + r) * ld + kk : base;
        copy_async(stage + i * 16, nullptr, g, valid, nullptr);
      }
    }
  }

  // Pins the accumulators around the asynchronous MMAs (prelude: wgmma_fence_operands).
  static SK_DEVICE void pin(float (&d)[RB][NACC]) {
#pragma unroll
    for (int rb = 0; rb < RB; ++rb) wgmma_fence_operands(d[rb]);
  }

  // The MMAs of one K block from the ring stage `stage` bytes past the ring's base,
  // whose descriptor low word is `ring` (wgmma_desc_sw128_base), into d.
  static SK_DEVICE void multiply(float (&d)[RB][NACC], u32 ring, u32 stage, int wg) {
    pin(d);
    wgmma_fence();
#pragma unroll
    for (int h = 0; h < H; ++h)
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        const u64 b = wgmma_desc_sw128(ring, stage + W_STAGE + h * TILE_M * 128 + 32 * s);
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) {
          const u64 a = wgmma_desc_sw128(ring, stage + h * TILE_N * 128 + (wg * RB + rb) * 64 * 128 + 32 * s);
          Wgmma64<T, TILE_M>::mma(d[rb], a, b);
        }
      }
    wgmma_commit();
  }

  // The cp.async-fed main loop (every thread copies and multiplies).
  static SK_DEVICE void main_loop_copy(const GemmParams& p, char* smem, const TileCoord& c, int trigger_at, int tid,
                                       float (&d)[RB][NACC]) {
    const int nb = c.blocks();
    auto issue = [&](int stage, int kb) {
      const bool live = kb < c.kb_end;  // past the end: still copy (zeros), so group counts stay uniform
      char* s = smem + stage * STAGE_BYTES;
      copy_tile<TILE_N>(s, p.w, p.ldw, c.n0, p.n, kb * TILE_K, p.k, live, tid);
      copy_tile<TILE_M>(s + W_STAGE, p.x, p.ldx, c.m0, p.m, kb * TILE_K, p.k, live, tid);
      copy_commit();
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s, c.kb_begin + s);
    const u32 ring = wgmma_desc_sw128_base(smem_addr(smem));
    for (int i = 0; i < nb; ++i) {
      if (i == trigger_at) pdl_launch_dependents();
      copy_wait<STAGES - 2, 1>();  // this thread's copies of block i have landed ...
      fence_proxy_async_smem();    // ... and are visible to the async proxy ...
      barrier();                   // ... for every thread; every warpgroup is done with block i-1
      issue((i + STAGES - 1) % STAGES, c.kb_begin + i + STAGES - 1);
      multiply(d, ring, i % STAGES * STAGE_BYTES, tid / 128);
      wgmma_wait<0>();  // the stage is free before the next barrier releases its overwrite
      pin(d);
    }
    copy_wait<0, 1>();
  }

  // The TMA-fed main loop: warp-specialised producer and consumers.
  static SK_DEVICE void main_loop_tma(const TmaMaps& maps, char* smem, u64* full, u64* empty, const TileCoord& c,
                                      int trigger_at, int tid, float (&d)[RB][NACC]) {
    const int nb = c.blocks();
    if (tid >= CONSUMERS) {  // the producer warp (all lanes keep the PDL trigger uniform)
      const u64 w_policy = l2_evict_first(), x_policy = l2_evict_last();
      for (int i = 0; i < nb; ++i) {
        if (i == trigger_at) pdl_launch_dependents();
        const int s = i % STAGES;
        if (i >= STAGES) mbar_wait(empty + s, (u32)(i / STAGES - 1) & 1);
        if (tid == CONSUMERS) {
          char* st = smem + s * STAGE_BYTES;
          const int k0 = (c.kb_begin + i) * TILE_K;
          mbar_arrive_expect_tx(full + s, STAGE_BYTES);
#pragma unroll
          for (int h = 0; h < H; ++h) tma_load_2d(st + h * TILE_N * 128, &maps.w, k0 + 64 * h, c.n0, full + s, w_policy);
#pragma unroll
          for (int h = 0; h < H; ++h)
            tma_load_2d(st + W_STAGE + h * TILE_M * 128, &maps.x, k0 + 64 * h, c.m0, full + s, x_policy);
        }
      }
      return;
    }
    // Consumer group g = tid / 128 / WG multiplies the blocks i = g mod KW into its
    // own accumulators (run() adds the groups' sums in group order).
    const int lane = tid % 32, group = tid / 128 / WG;
    const u32 ring = wgmma_desc_sw128_base(smem_addr(smem));
    for (int i = 0; i < nb; ++i) {
      if (i == trigger_at) pdl_launch_dependents();
      if (KW > 1 && i % KW != group) continue;
      const int s = i % STAGES;
      mbar_wait(full + s, (u32)(i / STAGES) & 1);
      multiply(d, ring, s * STAGE_BYTES, tid / 128 % WG);
      wgmma_wait<1>();  // this group's previous block's MMAs are done: its stage may be refilled
      pin(d);
      if (i >= KW && lane == 0) mbar_arrive(empty + (i - KW) % STAGES);
    }
    wgmma_wait<0>();
    pin(d);
  }

  static SK_DEVICE void run(const GemmParams& p, const TmaMaps* maps, char* smem_raw) {
    char* const smem = smem_raw + ((ALIGN - smem_addr(smem_raw) % ALIGN) % ALIGN);
    const int tid = thread_id();
    const int wg = tid / 128 % WG, group = tid / 128 / WG, warp = tid / 32 % 4, lane = tid % 32;
    const TileCoord c = tile_coord<TILE_M, TILE_N, TILE_K>(p);
    const int nb = c.blocks();
    u64* const full = (u64*)(smem + BAR_OFFSET);
    u64* const empty = full + STAGES;
    if constexpr (TMA) {
      if (tid == CONSUMERS) {
        tensormap_prefetch(&maps->w);
        tensormap_prefetch(&maps->x);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
          mbar_init(full + s, 1);            // the producer's arrive.expect_tx
          mbar_init(empty + s, WG * 4);      // one arrival per warp of the block's consumer group
        }
        mbar_init_fence();
      }
      barrier();
    }
    const int trigger_at = pdl_prologue<TILE_M, TILE_N, TILE_K, THREADS>(p, c, tid);
    Tile::begin(p, (u32*)(smem + FLAG_OFFSET), tid);

    float d[RB][NACC];
#pragma unroll
    for (int rb = 0; rb < RB; ++rb)
#pragma unroll
      for (int r = 0; r < NACC; ++r) d[rb][r] = 0.f;
    if constexpr (TMA)
      main_loop_tma(*maps, smem, full, empty, c, trigger_at, tid, d);
    else
      main_loop_copy(p, smem, c, trigger_at, tid, d);
    barrier();  // the ring is idle: its LDS may be reused
    if (trigger_at >= nb) pdl_launch_dependents();  // lead 0, or no K blocks at all

    // Stage the tile as fp32 token rows: d[rb][4j + r] = D[16 warp + lane/4 + 8(r>>1)][8j + 2(lane%4) + (r&1)]
    // of row block rb (weight row, token).
    // With K-interleaved groups, the last group stores first and each group before it
    // adds its sum on top, after a barrier: a fixed order.
    auto stage_tile = [&](bool add) {
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
#pragma unroll
        for (int j = 0; j < TILE_M / 8; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            float* at = Tile::at(smem, 8 * j + 2 * (lane % 4) + (r & 1), (wg * RB + rb) * 64 + 16 * warp + lane / 4 + 8 * (r >> 1));
            *at = add ? d[rb][4 * j + r] + *at : d[rb][4 * j + r];
          }
    };
#pragma unroll
    for (int g = KW - 1; g >= 0; --g) {
      if (tid < CONSUMERS && group == g) stage_tile(g < KW - 1);
      barrier();
    }
    Tile::finish(p, smem, (u32*)(smem + FLAG_OFFSET), c, tid, FLAG_OFFSET, RECV_BYTES ? smem + RECV_OFFSET : nullptr);
  }
};

// Kernel entry points (instances generated by build.rs), each naming its class
// NAME##_class. The instance line's warps are [1, WN, WK]: WG = WN / 4 consumer
// warpgroups per K group and KW = WK K groups. The TMA instances take the tensor
// maps as a second, __grid_constant__ parameter.
#define SK_WGMMA_INSTANCE(NAME, T, TM, TN, TK, ST, WM, WN, WK, LDS, CL)       \
  using NAME##_class = WgmmaSplitK<T, TM, TN, TK, ST, WN / 4, WK, CL, false>; \
  SK_KERNEL(NAME##_class::THREADS) void NAME(GemmParams p) {                  \
    using K = NAME##_class;                                                   \
    SK_LDS_DECL(smem, K::LDS_BYTES);                                          \
    K::run(p, nullptr, smem);                                                 \
  }
#define SK_WGMMA_TMA_INSTANCE(NAME, T, TM, TN, TK, ST, WM, WN, WK, LDS, CL)  \
  using NAME##_class = WgmmaSplitK<T, TM, TN, TK, ST, WN / 4, WK, CL, true>; \
  SK_KERNEL(NAME##_class::THREADS)                                           \
  void NAME(GemmParams p, const SK_GRID_CONSTANT TmaMaps maps) {             \
    using K = NAME##_class;                                                  \
    SK_LDS_DECL(smem, K::LDS_BYTES);                                         \
    K::run(p, &maps, smem);                                                  \
  }

#else
#define SK_WGMMA_INSTANCE(NAME, ...) static_assert(false, "wgmma kernels are sm_90a only: " #NAME);
#define SK_WGMMA_TMA_INSTANCE(NAME, ...) static_assert(false, "wgmma kernels are sm_90a only: " #NAME);
#endif
