// What every GEMM family shares: the kernel arguments (gemm_params.h), the entry
// point, the split of K between the CTAs of a tile, the programmatic-dependent-launch
// prologue, and the deterministic split-K combine. A family (splitk_gemm.h,
// wgmma_gemm.h) owns only its main loop, its register fragments and where each
// fragment value lands in the output tile.
#pragma once
#include "gemm_params.h"  // the kernel arguments: GemmParams, PDL_* flags, TmaMaps
#include "prelude/prelude.h"

// The entry point NAME of a kernel class (`...`) whose run(p, smem) takes the
// arguments and the LDS: names the class NAME##_class, so that build.rs can check its
// LDS_BYTES and THREADS against the Rust catalog in the generated instance file.
#define SK_GEMM_ENTRY(NAME, ...)                             \
  using NAME##_class = __VA_ARGS__;                          \
  SK_KERNEL(NAME##_class::THREADS) void NAME(GemmParams p) { \
    using K = NAME##_class;                                  \
    SK_LDS_DECL(smem, K::LDS_BYTES);                         \
    K::run(p, smem);                                         \
  }

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
  if (p.split_unit <= 1) {
    c.kb_begin = (int)((u32)(c.split * nkb) / (u32)S);
    c.kb_end = (int)((u32)((c.split + 1) * nkb) / (u32)S);
    return c;
  }
  // Batch-invariant plans: in units of split_unit blocks (the last one may be
  // partial). A branch of its own: its division is code the common path skips.
  const int g = p.split_unit, units = ceil_div(nkb, g);
  const int b = g * (int)((u32)(c.split * units) / (u32)S), e = g * (int)((u32)((c.split + 1) * units) / (u32)S);
  c.kb_begin = b < nkb ? b : nkb;
  c.kb_end = e < nkb ? e : nkb;
  return c;
}

// The activation prefetch shared by the CTAs of a tile row (one m tile and split,
// every N tile: they all read the same activations): piece q (X row q / pieces,
// `len` k from k_lo + (q % pieces) * len) is issued only by the CTA whose N tile
// is q mod N tiles, as issue(address, bytes). Each CTA prefetching its rows itself
// puts N / TILE_N bulk prefetches on the same few lines; at M = 5-8 and K = 512 on
// N >= 5120 that made 16-row tiles 10-30 % slower on an H100 (docs/design.md,
// section 7). The emulator checks that the row's CTAs issue each piece once, in
// bounds (emu/src/prefetch_check.h).
template <int TILE_M, int TILE_N, int THREADS, typename Issue>
SK_DEVICE void shared_x_pieces(const GemmParams& p, const TileCoord& c, int k_lo, int k_end, int tid, Issue issue) {
  // At most MAX_PIECES per row (a hint need not cover all of K), so every index
  // below stays far inside 32 bits; so does the stride, which is N tiles where
  // that is below the piece count and has the same effect otherwise (only
  // q = N tile < total is then taken, by thread 0).
  constexpr int MAX_PIECES = 256;
  const int len = p.prefetch_row_bytes / 2 & ~7;
  if (len <= 0 || k_end <= k_lo) return;
  const int n_tiles = ceil_div(p.n, TILE_N), rows = p.m - c.m0 < TILE_M ? p.m - c.m0 : TILE_M;
  const int span = ceil_div(k_end - k_lo, len), pieces = span < MAX_PIECES ? span : MAX_PIECES;
  const int total = rows * pieces, stride = n_tiles < total ? n_tiles : total;
  for (int q = c.n0 / TILE_N + tid * stride; q < total; q += THREADS * stride) {
    const int k0 = k_lo + q % pieces * len;
    issue(p.x + (i64)(c.m0 + q / pieces) * p.ldx + k0, (u32)(len < k_end - k0 ? len : k_end - k0) * 2u);
  }
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
    const bool shared = p.pdl_flags & PDL_PREFETCH_X_SHARED;
    const int x_rows = (p.pdl_flags & PDL_PREFETCH_X) && !shared ? TILE_M : 0;
    for (int r = tid; r < TILE_N + x_rows && k_hi > k_lo; r += THREADS) {
      if (r < TILE_N) {
        if (c.n0 + r < p.n) prefetch_l2(p.w + (i64)(c.n0 + r) * p.ldw + k_lo, (u32)(k_hi - k_lo) * 2u);
      } else if (c.m0 + r - TILE_N < p.m) {
        prefetch_l2(p.x + (i64)(c.m0 + r - TILE_N) * p.ldx + k_lo, (u32)(k_hi - k_lo) * 2u);
      }
    }
    if ((p.pdl_flags & PDL_PREFETCH_X) && shared)
      shared_x_pieces<TILE_M, TILE_N, THREADS>(p, c, k_lo, k_end, tid, [](const u16* x, u32 bytes) { prefetch_l2(x, bytes); });
  }
  pdl_wait();
  return trigger_at;
}

// LDS bytes a kernel using `base` bytes per CTA can add without lowering its CTAs
// per SM (0 without clusters: only the cluster combines use it).
constexpr int lds_spare(int base) {
  if (!HAS_CLUSTERS) return 0;
  const int ctas = SM_LDS_BYTES / (base + LDS_RESERVED_PER_CTA);
  return ctas == 0 ? 0 : SM_LDS_BYTES / ctas - LDS_RESERVED_PER_CTA - base;
}

// Tells the compiler what the launch guarantees: a cluster holds at most MAX_CLUSTER
// CTAs (engine.rs caps the cluster split; a larger cluster does not launch). Then the
// combine paths a kernel with enough receive slots never takes (the "go" hop, the
// pull) are dropped: the split-K kernels' PTX shrank by 18-26 %, and their tail,
// which every CTA runs once and cold, got 0.03-0.15 us faster (measured on H100;
// docs/design.md, section 4.2).
template <bool CLUSTER>
SK_DEVICE void cluster_split_bound(int S) {
  if (CLUSTER && S > MAX_CLUSTER) __builtin_unreachable();
}

// The quads of a tile a thread hands the split-K combine: quad q at index
// base + q * stride of the tile's float4s. A thread that holds none (holder false)
// still helps reduce.
struct HeldQuads {
  bool holder;
  int base, stride;
};
// The LDS a split-K combine may use: the first `region` bytes at `smem` (the family
// is done with them), the 16 bytes at `flag` (begin()'s barriers, or the arrival
// flag), and `slots_own` receive slots of the combine's own at `recv` (recv_slots()).
struct CombineLds {
  char* smem;
  u32* flag;
  int region;
  char* recv;
  int slots_own;
};

// The inter-CTA split-K combine of one TILE_M x TILE_N output tile, deterministic
// and graph-safe. The tile's fp32 values are E4 float4 "quads"; a family hands in,
// per thread, Q quads and where they sit (HeldQuads).
//  * CLUSTER, push: the S splits are one thread-block cluster (cluster dims
//    (1, S, 1)); the peers write their partials into rank 0's LDS with asynchronous
//    remote stores that complete on rank 0's "receive" barrier, and exit; rank 0
//    adds its own partial and the received ones in rank order and stores. Into
//    receive slots of rank 0's own (recv_slots, when S-1 fit) at once: one hop,
//    about 0.25 us for an 8 x 16 tile on the H100. Otherwise into rank 0's idle ring,
//    once rank 0 has released each peer (a remote arrival on its "go" barrier): two
//    hops, 0.5-0.85 us. The old pull below took about 1.5 us: its two cluster
//    barriers cost about 0.5 us each (measured on H100; docs/design.md, section
//    4.2). `begin` initialises
//    the two barriers and arrives on the cluster barrier that makes them visible.
//  * CLUSTER, pull (partials larger than the ring): each CTA leaves its partial in
//    its own LDS; the values are then totalled in
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
  static_assert(THREADS >= MAX_CLUSTER, "one thread per peer releases it");
  static constexpr u32 ALL = Q == 32 ? ~0u : (1u << Q) - 1;
  static constexpr bool SCATTER = E4 > THREADS;

  // Whether rank 0's first `region` bytes of LDS hold the other S-1 partials.
  static SK_DEVICE bool push(int S, int region) { return (S - 1) * E4 * 16 <= region; }
  // Receive slots of their own, after the family's `base` bytes of LDS: as many
  // partials (up to MAX_CLUSTER - 1) as fit without lowering the CTAs per SM that
  // `base` allows. With them the peers need no "go": one hop instead of two.
  static constexpr int recv_slots(int base) {
    if (!CLUSTER) return 0;
    return lds_spare(base) / (E4 * 16) < MAX_CLUSTER - 1 ? lds_spare(base) / (E4 * 16) : MAX_CLUSTER - 1;
  }

  // Before the main loop (every thread): the push path's barriers, in the 16 bytes at
  // `flag`, and the first half of the cluster barrier that publishes them.
  static SK_DEVICE void begin(const GemmParams& p, u32* flag, int tid) {
    if (!CLUSTER || p.split_k <= 1) return;
    if (tid == 0) {
      mbar_init((u64*)flag, 1);      // "go": rank 0's remote arrival
      mbar_init((u64*)flag + 1, 1);  // "receive": rank 0's expect_tx, then the peers' bytes
      mbar_init_fence();
    }
    cluster_arrive_relaxed();
  }

  // The push path (one hop into receive slots of rank 0's own when `direct`, else
  // two, into its idle ring after its "go"): the peers send their partials and exit;
  // rank 0 adds them to its own.
  static SK_DEVICE u32 push_combine(const CombineLds& lds, f32x4 (&acc)[Q], const HeldQuads& h, int S, int tid) {
    // As run() decides it (recomputed: passed as a bool, it changed the generated code).
    const bool direct = S - 1 <= lds.slots_own;
    u64* const go = (u64*)lds.flag;
    u64* const received = go + 1;
    f32x4* const slots = (f32x4*)(direct ? lds.recv : lds.smem);  // rank 0: [S-1][E4] partials of ranks 1..S-1
    const u32 rank = cluster_rank();
    if (rank != 0) {
      if (!direct) mbar_wait_cluster(go, 0);  // rank 0 is done with its LDS
      if (h.holder) {
#pragma unroll
        for (int q = 0; q < Q; ++q) store16_remote_async(slots + (rank - 1) * E4 + h.base + q * h.stride, 0, acc[q], received);
      }
      return 0;
    }
    if (tid == 0) mbar_arrive_expect_tx(received, (u32)((S - 1) * E4 * 16));
    if (!direct) {
      barrier();  // whatever the family did with LDS before has finished
      // Thread r releases peer r: a cluster-scope release costs about 0.5 us (measured
      // on H100), so the S-1 of them run in parallel, not one after another.
      if (tid >= 1 && tid < S) mbar_arrive_remote(go, (u32)tid);
    }
    mbar_wait_cluster(received, 0);
    if (!h.holder) return 0;
    add_received(acc, slots, h, S);
    return ALL;
  }

  // Rank 0 of the push path: its own partial plus the received ones, in rank order,
  // BATCH loads in flight (a load-add chain would wait out one LDS latency per peer).
  static SK_DEVICE void add_received(f32x4 (&acc)[Q], const f32x4* slots, const HeldQuads& h, int S) {
    constexpr int BATCH = Q == 1 ? 8 : 4;  // 8 with more quads measured slower
    const f32x4 zero = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      f32x4 total = acc[q];
      for (int r0 = 1; r0 < S; r0 += BATCH) {
        f32x4 v[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) v[b] = r0 + b < S ? slots[(r0 + b - 1) * E4 + h.base + q * h.stride] : zero;
#pragma unroll
        for (int b = 0; b < BATCH; ++b)
          if (r0 + b < S) total += v[b];
      }
      acc[q] = total;
    }
  }

  // The pull path: every CTA leaves its partial in its own LDS; the owners of each
  // quad (rank 0, or with SCATTER rank (q + tid) % S) total it over the ranks in order
  // through distributed shared memory, between two cluster barriers.
  static SK_DEVICE u32 pull_combine(char* smem, f32x4 (&acc)[Q], const HeldQuads& h, int S, int tid) {
    f32x4* const mine = (f32x4*)smem;
    barrier();  // whatever the family did with LDS before has finished
    if (h.holder) {
#pragma unroll
      for (int q = 0; q < Q; ++q) mine[h.base + q * h.stride] = acc[q];
    }
    cluster_sync();
    const int rank = (int)cluster_rank();
    u32 owned = 0;
    if (h.holder) {
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        if (SCATTER ? (q + tid) % S != rank : rank != 0) continue;
        owned |= 1u << q;
        const f32x4* at = mine + h.base + q * h.stride;
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

  // The global path: every CTA writes its partial to its slot; the last to arrive
  // sums the slots in order (CHUNKS threads per quad, then the chunk sums through
  // LDS) and resets the tile's counter for the next launch.
  static SK_DEVICE u32 global_combine(const GemmParams& p, const CombineLds& lds, f32x4 (&acc)[Q], const HeldQuads& h,
                                      const TileCoord& c, int S, int tid) {
    // Slot layout follows the fragments: lane-contiguous 16-B writes and reads.
    float* const slots = p.partials + (i64)c.tile * S * (4 * E4);
    if (h.holder) {
      float* mine = slots + (i64)c.split * (4 * E4);
#pragma unroll
      for (int q = 0; q < Q; ++q) store_partial(mine + (h.base + q * h.stride) * 4, acc[q]);
    }
    // Publish the slot, count the arrival; true in every thread of the last CTA,
    // whose later loads then see every slot (prelude: per-target fence sequence).
    if (!arrive_last(p.counters + c.tile, (u32)S, tid, lds.flag)) return 0;
    f32x4* const sums = (f32x4*)lds.smem;  // [CHUNKS][E4]
    constexpr int BATCH = 8;
    // In order: one chunk, so the sum is the left fold over splits 0..S-1. The
    // chunk bounds divide by the constant CHUNKS (a runtime divisor costs a
    // division routine in every combining thread).
    const bool in_order = p.flags & SPLIT_IN_ORDER;
    for (int idx = tid; idx < (in_order ? E4 : CHUNKS * E4); idx += THREADS) {
      const int ch = idx / E4, q = idx % E4;
      const int s_begin = in_order ? 0 : ch * S / CHUNKS, s_end = in_order ? S : (ch + 1) * S / CHUNKS;
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
    if (CHUNKS > 1 && !in_order) {
      for (int q = tid; q < E4; q += THREADS) {
        f32x4 total = sums[q];
#pragma unroll
        for (int ch = 1; ch < CHUNKS; ++ch) total += sums[ch * E4 + q];
        sums[q] = total;
      }
      barrier();
    }
    if (h.holder) {
#pragma unroll
      for (int q = 0; q < Q; ++q) acc[q] = sums[h.base + q * h.stride];
    }
    if (tid == 0) atomic_store_device(p.counters + c.tile, 0u);  // ready for the next launch / replay
    return h.holder ? ALL : 0;
  }

  // The combine of the thread's quads `acc`, placed as `h` says, through `lds`.
  static SK_DEVICE u32 run(const GemmParams& p, const CombineLds& lds, f32x4 (&acc)[Q], const HeldQuads& h,
                           const TileCoord& c, int tid) {
    const int S = p.split_k;
    if (S <= 1) return h.holder ? ALL : 0;
    // One quad per thread only: with two (m16 tiles) the pruned code measured 0.25-0.45 us
    // slower at S = 3 and 5 on H100 (code placement in a cold tail).
    if (Q == 1) cluster_split_bound<CLUSTER>(S);
    if (CLUSTER) cluster_wait();  // every CTA's barriers are initialised
    const bool direct = S - 1 <= lds.slots_own;  // receive slots of its own: no "go"
    if (CLUSTER && (direct || push(S, lds.region))) return push_combine(lds, acc, h, S, tid);
    if (CLUSTER) return pull_combine(lds.smem, acc, h, S, tid);
    return global_combine(p, lds, acc, h, c, S, tid);
  }
};

// ---- the epilogue: act(alpha * acc + beta * C + bias), after the combine ----

// tanh with an absolute error below 1e-6 (what GELU's 0.5 x (1 + tanh) needs; a
// relative error near 0 does not matter there), from the target's fast exp2 and
// reciprocal.
SK_DEVICE float tanh_abs(float u) {
  const float a = u < 0.f ? -u : u;
  const float t = 1.f - 2.f * fast_rcp(fast_exp2(a * 2.8853900817779268f) + 1.f);  // e^(2a) = 2^(2a log2 e)
  return u < 0.f ? -t : t;
}
// hipBLASLt's GELU (its client reference `_gelu`): the tanh form.
SK_DEVICE float gelu(float x) {
  return 0.5f * (x * (1.f + tanh_abs(0.7978845608028654f * (x * (1.f + 0.044715f * (x * x))))));
}

// The output side (Y, C, a 16-bit bias) of a kernel whose operands are T.
template <typename T>
SK_DEVICE float out_to_f32(int flags, u16 v) {
  if constexpr (T::fp8) return flags & OUT_F16 ? to_f32(f16_t{}, v) : to_f32(bf16_t{}, v);
  else return to_f32(T{}, v);
}
template <typename T>
SK_DEVICE u16 out_from_f32(int flags, float f) {
  if constexpr (T::fp8) return flags & OUT_F16 ? from_f32(f16_t{}, f) : from_f32(bf16_t{}, f);
  else return from_f32(T{}, f);
}

// What the epilogue reads once per thread: alpha and beta (from the device in
// pointer mode DEVICE, after the PDL wait like every other load), whether C is read,
// and, for fp8 operands, their per-tensor scales, folded into alpha (scale vectors
// are loaded per output, all of a thread's before it stores: row_scale, token_scale). Routing sends scales with fp8
// operands only, so 16-bit kernels carry no scale code: the epilogue's code size
// shows in small shapes' times (docs/design.md).
//
// `plain`: alpha (with per-tensor scales), scale vectors (fp8) and a bias of the
// output type, nothing else: the decode GEMM's common case, per-row fp8 included.
// Its code is kept apart from the full epilogue's and as small as before the full
// one existed: an epilogue runs once per CTA, from an instruction cache that the
// streamed weights keep cold, so its code size shows in small shapes' times (the
// full epilogue inlined into every output doubled the kernels' SASS and cost
// N = 64, K = 7168 0.37 us: 2.49 -> 2.86 us, measured on the H100).
struct EpilogueArgs {
  float alpha, beta;
  bool read_c, plain;
};
template <typename T>
SK_DEVICE EpilogueArgs epilogue_args(const GemmParams& p) {
  EpilogueArgs e;
  e.alpha = p.alpha;
  e.beta = p.beta;
  if (p.alpha_ptr) e.alpha = load_global_f32(p.alpha_ptr);
  if (p.beta_ptr) e.beta = load_global_f32(p.beta_ptr);
  e.read_c = p.c && e.beta != 0.f;  // beta = 0: C is never read (a NaN there stays out)
  e.plain = !e.read_c && !(p.flags & (EPI_RELU | EPI_GELU | EPI_BIAS_F32));
  if constexpr (T::fp8) {
    if (p.a_scale && !(p.flags & SCALE_A_VEC)) e.alpha *= load_global_f32(p.a_scale);
    if (p.b_scale && !(p.flags & SCALE_B_VEC)) e.alpha *= load_global_f32(p.b_scale);
  }
  return e;
}

// The scale-vector entries of an output: A's (weights) per output feature n, B's
// (activations) per token t; 1 without vectors, past N or M, and in 16-bit kernels
// (which so carry no scale code). Callers load a thread's scales before it stores
// anything: a load after a store to Y waits for the store (they may alias), and a
// scale load per output measured +0.3-0.6 us per GEMM on the H100.
template <typename T>
SK_DEVICE float row_scale(const GemmParams& p, int n) {
  if constexpr (T::fp8)
    if ((p.flags & SCALE_A_VEC) && n < p.n) return p.a_scale[n];
  return 1.f;
}
template <typename T>
SK_DEVICE float token_scale(const GemmParams& p, int t) {
  if constexpr (T::fp8)
    if ((p.flags & SCALE_B_VEC) && t < p.m) return p.b_scale[t];
  return 1.f;
}

// bias[n] as fp32, or 0 without a bias or past N.
template <typename T>
SK_DEVICE float bias_at(const GemmParams& p, int n) {
  if (!p.bias || n >= p.n) return 0.f;
  return p.flags & EPI_BIAS_F32 ? ((const float*)p.bias)[n] : out_to_f32<T>(p.flags, ((const u16*)p.bias)[n]);
}

// One output value from its accumulated total `v`, its vector scale, the bias
// (already loaded) and C: hipBLASLt's act(alpha * scaleA * scaleB * acc + beta * C + bias).
SK_DEVICE float epilogue_value(const GemmParams& p, const EpilogueArgs& e, float v, float scale, float bias, float c) {
  v *= e.alpha * scale;
  if (e.read_c) v += e.beta * c;
  if (p.bias) v += bias;
  if (p.flags & EPI_RELU) v = v > 0.f ? v : 0.f;
  if (p.flags & EPI_GELU) v = gelu(v);
  return v;
}

// C(t, n) as fp32 where the epilogue reads C, else 0 (and past M or N).
template <typename T>
SK_DEVICE float c_at(const GemmParams& p, const EpilogueArgs& e, int n, int t) {
  return e.read_c && n < p.n && t < p.m ? out_to_f32<T>(p.flags, p.c[(i64)t * p.ldc + n]) : 0.f;
}

// The epilogue of one output value: the above, convert, masked store. `bias`:
// bias_at(n), `scale`: row_scale(n) * token_scale(t) (1 in 16-bit kernels) and `c`:
// c_at(n, t), all loaded before a caller's first store: C may be Y, so a C load
// after a store to Y waits for it, one exposed latency per output. A caller
// branches once on `e.plain` and stores a whole group of outputs with one of the
// two (see EpilogueArgs).
template <typename T>
SK_DEVICE void store_output(const GemmParams& p, const EpilogueArgs& e, int n, int t, float v, float bias, float scale, float c) {
  if (n < p.n && t < p.m) p.y[(i64)t * p.ldy + n] = out_from_f32<T>(p.flags, epilogue_value(p, e, v, scale, bias, c));
}
template <typename T>
SK_DEVICE void store_output_plain(const GemmParams& p, const EpilogueArgs& e, int n, int t, float v, float bias, float scale) {
  if (n < p.n && t < p.m) {
    v *= e.alpha * scale;
    if (p.bias) v += bias;
    p.y[(i64)t * p.ldy + n] = out_from_f32<T>(p.flags, v);
  }
}

// The inter-CTA split-K combine and the epilogue of a tile staged in shared memory
// as fp32 token rows (Y's layout: [TILE_M][TILE_N + 4], the pad spreads a wgmma
// fragment store's four token rows over distinct banks). Everything after the
// staging is a rolled loop over 8-output chunks (two float4, one 16-B store of
// Y): an unrolled per-fragment combine and epilogue is code every CTA runs once,
// cold, and measured 1-2 us (epilogue) and 3-5 us (cluster combine) per CTA of a
// 64 x 128 tile (measured on H100).
//  * CLUSTER: the S splits are one cluster; rank r combines and stores chunks
//    [r*CHUNKS/S, (r+1)*CHUNKS/S), summing the ranks' stages in order 0..S-1.
//    Push: every rank writes each peer's slice of its stage into that peer's
//    receive slots with asynchronous remote stores completing on the peer's
//    "receive" barrier, waits for its own slice from everyone and exits: no
//    cluster barrier at the end (see SplitCombine). The slots are the family's own
//    (own_recv_bytes, where they cost no CTA per SM) and written at once: one hop;
//    or they lie in the peer's idle ring, written once every peer has released
//    this rank (remote arrivals on its "go" barrier, sent in parallel): two hops.
//    One bulk copy per peer measured the same as the remote stores and would also
//    need a barrier at the end to keep the source alive. Pull otherwise: read the
//    slice from every rank's stage through distributed shared memory between two
//    cluster barriers.
//  * otherwise: each CTA copies its stage to its global slot; the last to arrive
//    sums the slots in order 0..S-1, stores, and resets the tile's counter.
// The association depends only on S: bitwise reproducible.
template <typename T, int THREADS, int TILE_M, int TILE_N, bool CLUSTER>
struct StagedTile {
  static constexpr int LD = TILE_N + 4;  // floats per staged token row
  static constexpr int LDS_BYTES = TILE_M * LD * 4;  // mirrored by KernelConfig::lds_bytes
  static constexpr int CHUNKS = TILE_M * TILE_N / 8;
  static constexpr int SLOT = TILE_M * TILE_N;  // floats per split-K slot, chunk-major
  static_assert(TILE_N % 8 == 0, "whole chunks per row");
  static_assert(THREADS >= MAX_CLUSTER, "one thread per peer releases it");

  // Push path: the other ranks' parts of this rank's slice, [S-1][slice] chunks
  // after the stage.
  static constexpr int RECV_OFFSET = LDS_BYTES;
  static SK_DEVICE int slice_begin(int rank, int S) { return rank * CHUNKS / S; }
  // Receiver `to`'s slot for sender `from` (no slot for itself).
  static SK_DEVICE int slot_of(int from, int to) { return from < to ? from : from - 1; }
  static SK_DEVICE bool push(int S, int region) { return RECV_OFFSET + (S - 1) * ceil_div(CHUNKS, S) * 32 <= region; }
  // One hop: a tile's worth of receive slots of the family's own (after its `base`
  // bytes), which any S fits, where they cost no CTA per SM; then no "go".
  static constexpr int own_recv_bytes(int base) {
    return CLUSTER && TILE_M * TILE_N * 4 <= lds_spare(base) ? TILE_M * TILE_N * 4 : 0;
  }

  // Before the main loop (every thread): the push path's barriers, in the 16 bytes
  // at `flag`, and the first half of the cluster barrier that publishes them.
  static SK_DEVICE void begin(const GemmParams& p, u32* flag, int tid) {
    if (!CLUSTER || p.split_k <= 1) return;
    if (tid == 0) {
      mbar_init((u64*)flag, (u32)(p.split_k - 1));  // "go": one remote arrival per peer
      mbar_init((u64*)flag + 1, 1);                 // "receive": our expect_tx, then the peers' bytes
      mbar_init_fence();
    }
    cluster_arrive_relaxed();
  }

  static SK_DEVICE float* at(char* smem, int t, int n) { return (float*)smem + t * LD + n; }
  static SK_DEVICE float* chunk(char* smem, int ch) { return at(smem, ch / (TILE_N / 8), ch % (TILE_N / 8) * 8); }

  // A chunk's total over S partials, added in order 0..S-1 (the association that
  // makes results reproducible), BATCH loads in flight; load(s, h) is partial s's
  // outputs 4h..4h+3.
  template <typename Load>
  static SK_DEVICE void sum_in_order(int S, Load load, f32x4& a, f32x4& b) {
    constexpr int BATCH = 4;
    const f32x4 zero = {0.f, 0.f, 0.f, 0.f};
    a = b = zero;
    for (int s0 = 0; s0 < S; s0 += BATCH) {
      f32x4 va[BATCH], vb[BATCH];
#pragma unroll
      for (int i = 0; i < BATCH; ++i) {
        va[i] = s0 + i < S ? load(s0 + i, 0) : zero;
        vb[i] = s0 + i < S ? load(s0 + i, 1) : zero;
      }
#pragma unroll
      for (int i = 0; i < BATCH; ++i)
        if (s0 + i < S) {
          a += va[i];
          b += vb[i];
        }
    }
  }

  // The plain epilogue of one chunk (see EpilogueArgs), with fp8 scale vectors (VEC:
  // the chunk's, loaded before its store) or without (the per-tensor and 16-bit
  // code, kept as small as it was).
  template <bool VEC>
  static SK_DEVICE void store_chunk_plain(const GemmParams& p, const EpilogueArgs& e, int t, int n, const float (&v)[8]) {
    float s[8];
    chunk_scales<VEC>(p, t, n, s);
    const bool vec = n + 8 <= p.n && (((u64)p.y | (u64)p.ldy * 2 | (u64)p.bias) & 15) == 0;
    if (!vec) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        if (n + j < p.n) store_output_plain<T>(p, e, n + j, t, v[j], p.bias ? out_to_f32<T>(p.flags, ((const u16*)p.bias)[n + j]) : 0.f, s[j]);
      return;
    }
    u32x4 b = {0, 0, 0, 0};
    if (p.bias) b = *(const u32x4*)((const u16*)p.bias + n);
    const u32 bw[4] = {b.x, b.y, b.z, b.w};
    u32 out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float a0 = v[2 * j] * (e.alpha * s[2 * j]), a1 = v[2 * j + 1] * (e.alpha * s[2 * j + 1]);
      if (p.bias) {
        a0 += out_to_f32<T>(p.flags, (u16)(bw[j] & 0xffff));
        a1 += out_to_f32<T>(p.flags, (u16)(bw[j] >> 16));
      }
      out[j] = (u32)out_from_f32<T>(p.flags, a0) | (u32)out_from_f32<T>(p.flags, a1) << 16;
    }
    *(u32x4*)(p.y + (i64)t * p.ldy + n) = u32x4{out[0], out[1], out[2], out[3]};
  }

  // The chunk's vector scales, all loaded before its store (VEC), else 1.
  template <bool VEC>
  static SK_DEVICE void chunk_scales(const GemmParams& p, int t, int n, float (&s)[8]) {
    const float ts = VEC ? token_scale<T>(p, t) : 1.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s[j] = VEC ? row_scale<T>(p, n + j) * ts : 1.f;
  }

  // Eight outputs of token row t, columns [n, n+8) of the tile through the
  // epilogue (the plain one apart: store_chunk_plain): 16-B loads of C and the bias
  // and one 16-B store where their alignment allows, else per-output loads and
  // masked scalar stores.
  static SK_DEVICE void store_chunk(const GemmParams& p, const EpilogueArgs& e, const TileCoord& c, int ch, f32x4 lo,
                                    f32x4 hi) {
    const int t = c.m0 + ch / (TILE_N / 8), n = c.n0 + ch % (TILE_N / 8) * 8;
    if (t >= p.m || n >= p.n) return;
    const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    if (e.plain) {
      if constexpr (T::fp8)
        if (p.flags & (SCALE_A_VEC | SCALE_B_VEC)) return store_chunk_plain<true>(p, e, t, n, v);
      return store_chunk_plain<false>(p, e, t, n, v);
    }
    // fp8 kernels load the scales (1 without vectors); 16-bit ones carry no scale code.
    float s[8];
    chunk_scales<T::fp8>(p, t, n, s);
    const u64 c_bits = e.read_c ? (u64)p.c | (u64)p.ldc * 2 : 0;
    const bool vec = n + 8 <= p.n && (((u64)p.y | (u64)p.ldy * 2 | (u64)p.bias | c_bits) & 15) == 0;
    if (!vec) {
      float b[8], cv[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) b[j] = bias_at<T>(p, n + j), cv[j] = c_at<T>(p, e, n + j, t);
#pragma unroll
      for (int j = 0; j < 8; ++j) store_output<T>(p, e, n + j, t, v[j], b[j], s[j], cv[j]);
      return;
    }
    float b[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (p.bias && (p.flags & EPI_BIAS_F32)) {
      const f32x4 b0 = *((const f32x4*)p.bias + n / 4), b1 = *((const f32x4*)p.bias + n / 4 + 1);
      b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
    } else if (p.bias) {
      const u32x4 bw = *(const u32x4*)((const u16*)p.bias + n);
      const u32 w[4] = {bw.x, bw.y, bw.z, bw.w};
#pragma unroll
      for (int j = 0; j < 4; ++j)
        b[2 * j] = out_to_f32<T>(p.flags, (u16)(w[j] & 0xffff)), b[2 * j + 1] = out_to_f32<T>(p.flags, (u16)(w[j] >> 16));
    }
    u32 cw[4] = {0, 0, 0, 0};
    if (e.read_c) {
      const u32x4 cv = *(const u32x4*)(p.c + (i64)t * p.ldc + n);
      cw[0] = cv.x, cw[1] = cv.y, cw[2] = cv.z, cw[3] = cv.w;
    }
    u32 out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float c0 = out_to_f32<T>(p.flags, (u16)(cw[j] & 0xffff)), c1 = out_to_f32<T>(p.flags, (u16)(cw[j] >> 16));
      const float a0 = epilogue_value(p, e, v[2 * j], s[2 * j], b[2 * j], c0);
      const float a1 = epilogue_value(p, e, v[2 * j + 1], s[2 * j + 1], b[2 * j + 1], c1);
      out[j] = (u32)out_from_f32<T>(p.flags, a0) | (u32)out_from_f32<T>(p.flags, a1) << 16;
    }
    *(u32x4*)(p.y + (i64)t * p.ldy + n) = u32x4{out[0], out[1], out[2], out[3]};
  }

  // The push path of the cluster combine (see above).
  static SK_DEVICE void push_combine(const GemmParams& p, char* smem, u32* flag, const TileCoord& c, int tid,
                                     char* own_recv) {
    const int S = p.split_k, rank = (int)cluster_rank(), slice = ceil_div(CHUNKS, S);
    u64* const go = (u64*)flag;
    u64* const received = go + 1;
    char* const recv = own_recv ? own_recv : smem + RECV_OFFSET;
    const int lo = slice_begin(rank, S), hi = slice_begin(rank + 1, S);
    if (tid == 0) mbar_arrive_expect_tx(received, (u32)((S - 1) * (hi - lo) * 32));
    if (!own_recv) {
      // Our ring is idle (the caller's barrier): peers may write our receive slots.
      // A cluster-scope release costs about 0.5 us on the H100: S-1 threads, in parallel.
      if (tid >= 1 && tid < S) mbar_arrive_remote(go, (u32)((rank + tid) % S));
      mbar_wait_cluster(go, 0);  // every peer's receive slots are free
    }
    // The (S-1) x slice x 2 remote 16-B stores, spread evenly over all threads. With
    // one thread per chunk sending to every peer in turn, this phase grew by about
    // 0.25 us per peer on the H100 (a thread's remote stores go one after another);
    // spread, S = 8 went from 3.1 to 2.1 us (measured on H100; docs/design.md,
    // section 4.3).
    for (int i = tid; i < (S - 1) * slice * 2; i += THREADS) {
      const int t = 1 + i / (slice * 2), j = i % (slice * 2);
      const int q = (rank + t) % S, q_lo = slice_begin(q, S), ch = q_lo + j / 2;
      if (ch >= slice_begin(q + 1, S)) continue;
      const f32x4* v = (const f32x4*)chunk(smem, ch);
      store16_remote_async(recv + (slot_of(rank, q) * slice + ch - q_lo) * 32 + (j & 1) * 16, (u32)q, v[j & 1], received);
    }
    mbar_wait_cluster(received, 0);  // our slice from every peer
    const EpilogueArgs e = epilogue_args<T>(p);
    for (int ch = lo + tid; ch < hi; ch += THREADS) {
      f32x4 a, b;
      sum_in_order(S, [&](int r, int h) {
        const f32x4* v = r == rank ? (const f32x4*)chunk(smem, ch)
                                   : (const f32x4*)(recv + (slot_of(r, rank) * slice + ch - lo) * 32);
        return v[h];
      }, a, b);
      store_chunk(p, e, c, ch, a, b);
    }
  }

  // Call after every thread has staged its values and a barrier; `region` bytes of
  // LDS from `smem` are free (the idle ring); `own_recv`: the own_recv_bytes()
  // slots, or null.
  static SK_DEVICE void finish(const GemmParams& p, char* smem, u32* flag, const TileCoord& c, int tid, int region,
                               char* own_recv) {
    const int S = p.split_k;
    if (S <= 1) {
      const EpilogueArgs e = epilogue_args<T>(p);
      for (int ch = tid; ch < CHUNKS; ch += THREADS) {
        const f32x4* v = (const f32x4*)chunk(smem, ch);
        store_chunk(p, e, c, ch, v[0], v[1]);
      }
      return;
    }
    if (CLUSTER) cluster_wait();  // every CTA's barriers are initialised
    if (CLUSTER && (own_recv || push(S, region))) {
      push_combine(p, smem, flag, c, tid, own_recv);
      return;
    }
    if (CLUSTER) {
      cluster_sync();  // every rank's stage is written
      const int rank = (int)cluster_rank();
      const int lo = rank * CHUNKS / S, hi = (rank + 1) * CHUNKS / S;
      const EpilogueArgs e = epilogue_args<T>(p);
      for (int ch = lo + tid; ch < hi; ch += THREADS) {
        const float* v = chunk(smem, ch);
        f32x4 a, b;
        sum_in_order(S, [&](int r, int h) { return cluster_load16(v + 4 * h, (u32)r); }, a, b);
        store_chunk(p, e, c, ch, a, b);
      }
      cluster_sync();  // keep every stage alive until all ranks have read it
      return;
    }
    float* const slots = p.partials + (i64)c.tile * S * SLOT;
    float* const mine = slots + (i64)c.split * SLOT;
    for (int ch = tid; ch < CHUNKS; ch += THREADS) {
      const f32x4* v = (const f32x4*)chunk(smem, ch);
      store_partial(mine + ch * 8, v[0]);
      store_partial(mine + ch * 8 + 4, v[1]);
    }
    if (!arrive_last(p.counters + c.tile, (u32)S, tid, flag)) return;
    const EpilogueArgs e = epilogue_args<T>(p);
    for (int ch = tid; ch < CHUNKS; ch += THREADS) {
      f32x4 a, b;
      sum_in_order(S, [&](int s, int h) { return load_partial(slots + (i64)s * SLOT + ch * 8 + 4 * h); }, a, b);
      store_chunk(p, e, c, ch, a, b);
    }
    if (tid == 0) atomic_store_device(p.counters + c.tile, 0u);  // ready for the next launch / replay
  }
};
