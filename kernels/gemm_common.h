// What every GEMM family shares: the kernel arguments, the split of K between the
// CTAs of a tile, the programmatic-dependent-launch prologue, and the deterministic
// split-K combine. A family (splitk_gemm.h, wgmma_gemm.h) owns only its main loop,
// its register fragments and where each fragment value lands in the output tile.
#pragma once
#include "prelude/prelude.h"

// Kernel arguments, passed by value (layout mirrored by `GemmParams` in Rust).
struct GemmParams {
  const u16* w;      // W(n, k) at w[n * ldw + k]
  const u16* x;      // X(t, k) at x[t * ldx + k]
  u16* y;            // Y(t, n) at y[t * ldy + n]
  const u16* bias;   // bias[n], or null
  float* partials;   // split-K slots: [tiles][SPLIT_K][TILE_M * TILE_N] fp32
  u32* counters;     // arrivals per tile; 0 between launches
  const void* zeros; // >= 16 zero bytes (source for masked copies on AMD)
  i64 ldw, ldx, ldy;
  i32 m, n, k;
  float alpha;
  i32 split_k;
  // Programmatic dependent launch (sm_90): bytes per row of W (and of X, with
  // PDL_PREFETCH_X) each CTA prefetches into L2 before waiting on the previous
  // kernel (0: none), and PDL_* flags.
  i32 prefetch_row_bytes;
  i32 pdl_flags;
};
// PDL_TRIGGER: let the PDL successor launch (pdl_flags >> PDL_LEAD_SHIFT) K blocks
// before the end of our main loop (0 = after it; a lead past the start = at the
// start), so its prefetch overlaps our tail rather than our streaming. Without it,
// the successor may launch only as our CTAs exit (the implicit trigger).
constexpr i32 PDL_TRIGGER = 1, PDL_PREFETCH_X = 2, PDL_LEAD_SHIFT = 8;

// Where a CTA sits: its output tile (n0, m0; `tile` indexes the split-K slots and
// counters) and its K blocks [kb_begin, kb_end) of TILE_K.
struct TileCoord {
  int tile, n0, m0, split, kb_begin, kb_end;
  SK_DEVICE int blocks() const { return kb_end - kb_begin; }
};
template <int TILE_M, int TILE_N, int TILE_K>
SK_DEVICE TileCoord tile_coord(const GemmParams& p) {
  TileCoord c;
  const int m_tiles = ceil_div(p.m, TILE_M);
  c.tile = block_x();
  c.n0 = (c.tile / m_tiles) * TILE_N;
  c.m0 = (c.tile % m_tiles) * TILE_M;
  c.split = block_y();
  const int S = p.split_k, nkb = ceil_div(p.k, TILE_K);
  // nkb < 2^24 and S <= 64: 32-bit products, no 64-bit division.
  c.kb_begin = (int)((u32)(c.split * nkb) / (u32)S);
  c.kb_end = (int)((u32)((c.split + 1) * nkb) / (u32)S);
  return c;
}

// Programmatic dependent launch (sm_90; no-ops elsewhere): pull the first bytes of
// the CTA's weight (and activation) rows into L2 while the previous kernel may
// still be running (a coherent hint, so safe even if that kernel writes them), then
// wait for it before the first real load or any store. Returns the main-loop
// iteration at which to let our own successor launch (-1: never explicitly).
template <int TILE_M, int TILE_N, int TILE_K, int THREADS>
SK_DEVICE int pdl_prologue(const GemmParams& p, const TileCoord& c, int tid) {
  const int nb = c.blocks();
  const int lead = (p.pdl_flags >> PDL_LEAD_SHIFT) & 0xff;
  const int trigger_at = !(p.pdl_flags & PDL_TRIGGER) ? -1 : nb > lead ? nb - lead : 0;
  if (p.prefetch_row_bytes > 0 && nb > 0) {
    const int k_lo = c.kb_begin * TILE_K;
    const int k_end = c.kb_end * TILE_K < p.k ? c.kb_end * TILE_K : p.k;
    const int k_hi = k_lo + p.prefetch_row_bytes / 2 < k_end ? k_lo + (p.prefetch_row_bytes / 2 & ~7) : k_end;
    const int x_rows = p.pdl_flags & PDL_PREFETCH_X ? TILE_M : 0;
    for (int r = tid; r < TILE_N + x_rows && k_hi > k_lo; r += THREADS) {
      if (r < TILE_N) {
        if (c.n0 + r < p.n) prefetch_l2(p.w + (i64)(c.n0 + r) * p.ldw + k_lo, (u32)(k_hi - k_lo) * 2u);
      } else if (c.m0 + r - TILE_N < p.m) {
        prefetch_l2(p.x + (i64)(c.m0 + r - TILE_N) * p.ldx + k_lo, (u32)(k_hi - k_lo) * 2u);
      }
    }
  }
  pdl_wait();
  return trigger_at;
}

// The inter-CTA split-K combine of one TILE_M x TILE_N output tile, deterministic
// and graph-safe. The tile's fp32 values are E4 float4 "quads"; a family hands in,
// per thread, Q quads and where they sit (quad q at index base + q * stride), and
// threads that hold none (holder false) still help reduce.
//  * CLUSTER: the S splits are one thread-block cluster (cluster dims (1, S, 1)).
//    Each CTA leaves its partial in its own LDS; the values are then totalled in
//    rank order 0..S-1 through distributed shared memory. Small tiles (no more
//    quads than threads): rank 0 sums and stores everything, one round of loads.
//    Larger tiles: a reduce-scatter — the value a thread holds as quad q is totalled
//    and stored by the same thread of CTA rank (q + tid) % S, so every CTA reads
//    about one S-th of the tile from each rank instead of one CTA reading all of it
//    S times (measured on the H100: 17 vs 29 us for a 64 x 128 tile at S = 4; the
//    scatter cost ~0.1 us on 8 x 16 tiles). Nothing to reset.
//  * otherwise: every CTA writes its partial to its own global slot; the last to
//    arrive (counter per tile) sums the slots in fixed order and resets the counter
//    inside the kernel, so no memset is needed before a launch or a graph replay.
// The association depends only on (config, S), never on arrival order: bitwise
// reproducible. Returns the quads this thread must store (bit q: acc[q] holds the
// tile's total there); 0 when it stores none.
template <int THREADS, int TILE_ELEMS, int Q, bool CLUSTER>
struct SplitCombine {
  static constexpr int E4 = TILE_ELEMS / 4;  // float4s per slot
  // The slot reduction: thread (chunk c, quad q) sums slots [c*S/C, (c+1)*S/C), then
  // the C chunk sums are added in order through LDS.
  static constexpr int CHUNKS = THREADS >= E4 ? THREADS / E4 : 1;
  static constexpr int LDS_BYTES = CHUNKS * E4 * 16;  // >= the cluster path's E4 * 16
  static_assert(Q <= 32, "the owned-quad mask is 32 bits");
  static constexpr u32 ALL = Q == 32 ? ~0u : (1u << Q) - 1;
  static constexpr bool SCATTER = E4 > THREADS;

  static SK_DEVICE u32 run(const GemmParams& p, char* smem, u32* flag, f32x4 (&acc)[Q], bool holder, int base,
                            int stride, const TileCoord& c, int tid) {
    const int S = p.split_k;
    if (S <= 1) return holder ? ALL : 0;
    if (CLUSTER) {
      f32x4* const mine = (f32x4*)smem;
      barrier();  // whatever the family did with LDS before has finished
      if (holder) {
#pragma unroll
        for (int q = 0; q < Q; ++q) mine[base + q * stride] = acc[q];
      }
      cluster_sync();
      const int rank = (int)cluster_rank();
      u32 owned = 0;
      if (holder) {
#pragma unroll
        for (int q = 0; q < Q; ++q) {
          if (SCATTER ? (q + tid) % S != rank : rank != 0) continue;
          owned |= 1u << q;
          const f32x4* at = mine + base + q * stride;
          f32x4 v[MAX_CLUSTER];
#pragma unroll
          for (int r = 0; r < MAX_CLUSTER; ++r) v[r] = r < S ? cluster_load16(at, (u32)r) : f32x4{0.f, 0.f, 0.f, 0.f};
          f32x4 total = v[0];
#pragma unroll
          for (int r = 1; r < MAX_CLUSTER; ++r)
            if (r < S) total += v[r];
          acc[q] = total;
        }
      }
      cluster_sync();  // keep every CTA's LDS alive until all have read it
      return owned;
    }
    // Slot layout follows the fragments: lane-contiguous 16-B writes and reads.
    float* const slots = p.partials + (i64)c.tile * S * (4 * E4);
    if (holder) {
      float* mine = slots + (i64)c.split * (4 * E4);
#pragma unroll
      for (int q = 0; q < Q; ++q) store_partial(mine + (base + q * stride) * 4, acc[q]);
    }
    // Publish the slot, count the arrival; true in every thread of the last CTA,
    // whose later loads then see every slot (prelude: per-target fence sequence).
    if (!arrive_last(p.counters + c.tile, (u32)S, tid, flag)) return 0;
    f32x4* const sums = (f32x4*)smem;  // [CHUNKS][E4]
    constexpr int BATCH = 8;
    for (int idx = tid; idx < CHUNKS * E4; idx += THREADS) {
      const int ch = idx / E4, q = idx % E4;
      const int s_begin = ch * S / CHUNKS, s_end = (ch + 1) * S / CHUNKS;
      f32x4 total = {0.f, 0.f, 0.f, 0.f};
      for (int s0 = s_begin; s0 < s_end; s0 += BATCH) {
        f32x4 v[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
          v[b] = s0 + b < s_end ? load_partial(slots + ((i64)(s0 + b) * E4 + q) * 4) : f32x4{0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
          if (s0 + b < s_end) total += v[b];
      }
      sums[idx] = total;
    }
    barrier();
    if constexpr (CHUNKS > 1) {
      for (int q = tid; q < E4; q += THREADS) {
        f32x4 total = sums[q];
#pragma unroll
        for (int ch = 1; ch < CHUNKS; ++ch) total += sums[ch * E4 + q];
        sums[q] = total;
      }
      barrier();
    }
    if (holder) {
#pragma unroll
      for (int q = 0; q < Q; ++q) acc[q] = sums[base + q * stride];
    }
    if (tid == 0) atomic_store_device(p.counters + c.tile, 0u);  // ready for the next launch / replay
    return holder ? ALL : 0;
  }
};

// The epilogue of one output value: alpha, bias, convert, masked store.
template <typename T>
SK_DEVICE void store_output(const GemmParams& p, int n, int t, float v) {
  if (n < p.n && t < p.m) {
    v *= p.alpha;
    if (p.bias) v += to_f32(T{}, p.bias[n]);
    p.y[(i64)t * p.ldy + n] = from_f32(T{}, v);
  }
}
