// Kernel family A: LDS-pipelined split-K GEMM for decode shapes.
//
//   Y[M,N] = alpha * X[M,K] . W[N,K]^T (+ bias[N])     (M = tokens, small)
//
// Three levels of K parallelism (seed 000, "LDS-Pipelined Split-K"):
//  * inter-CTA split-K: grid = [N tiles x M tiles, SPLIT_K]; each CTA owns a K range;
//  * intra-CTA K slices: WK wave groups take different 32-k steps of every stage and
//    are reduced through LDS in fixed order;
//  * a STAGES-deep LDS ring: copies of block i+STAGES-1 are in flight while block i
//    feeds the matrix unit.
// The inter-CTA combine is deterministic and graph-safe (unlike the seed's atomic
// bf16 combine, kernel_anchors.md §1.4): every CTA writes an fp32 partial to its own
// workspace slot; the last to arrive (counter per tile) sums the slots in fixed
// order 0..SPLIT_K-1, applies alpha and bias, writes Y, and resets the counter to 0
// inside the kernel, so no memset is needed before a launch or a graph replay.
//
// Parameters: T (bf16_t, f16_t), TILE_M (tokens), TILE_N (weight rows), TILE_K,
// STAGES, WM x WN x WK waves, B_TO_LDS (weights through the LDS ring, or straight
// into registers one block ahead). SPLIT_K, M, N, K, alpha and the bias pointer are
// run-time values. N and M tails are masked; K must be a multiple of 8 (16-B
// copies), which routing guarantees.
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
};

template <typename T, int TILE_M, int TILE_N, int TILE_K, int STAGES, int WM, int WN, int WK, bool B_TO_LDS>
struct SplitK {
  static constexpr int WAVES = WM * WN * WK;
  static constexpr int THREADS = WAVES * WAVE;
  static constexpr int ROW_BYTES = TILE_K * 2;
  static constexpr int WAVE_ROWS = TILE_N / WN;
  static constexpr int WAVE_TOKS = TILE_M / WM;
  static constexpr int RA = WAVE_ROWS / 16;         // row atoms per wave
  static constexpr int TA = WAVE_TOKS / ATOM_TOKS;  // token atoms per wave
  static constexpr int KC = TILE_K / WK / 32;       // 32-k steps per wave per stage
  static constexpr int FRAG = RA * TA * 4;          // accumulators per lane
  static constexpr int W_STAGE = B_TO_LDS ? TILE_N * ROW_BYTES : 0;
  static constexpr int X_STAGE = TILE_M * ROW_BYTES;
  static constexpr int PIPE_BYTES = STAGES * (W_STAGE + X_STAGE);
  static constexpr int RED_BYTES = (WK - 1) * TILE_M * TILE_N * 4;
  // Split-K combine: the last CTA reduces the S slots with all its threads, C slot
  // chunks at a time, then adds the C chunk sums in order through LDS.
  static constexpr int E4 = TILE_M * TILE_N / 4;  // float4s per slot
  static constexpr int CHUNKS = THREADS >= E4 ? THREADS / E4 : 1;
  static constexpr int COMBINE_BYTES = CHUNKS * E4 * 16;
  static constexpr int FLAG_OFFSET = PIPE_BYTES > RED_BYTES ? (PIPE_BYTES > COMBINE_BYTES ? PIPE_BYTES : COMBINE_BYTES)
                                                            : (RED_BYTES > COMBINE_BYTES ? RED_BYTES : COMBINE_BYTES);
  static constexpr int LDS_BYTES = FLAG_OFFSET + 16;

  static_assert(TILE_N % (16 * WN) == 0, "weight rows per wave: whole 16-row atoms");
  static_assert(TILE_M % (ATOM_TOKS * WM) == 0, "tokens per wave: whole atoms");
  static_assert(TILE_K % (32 * WK) == 0 && TILE_K >= 64, "k per wave: whole 32-k steps");
  static_assert(STAGES >= 2, "a ring needs two stages");
  static_assert(B_TO_LDS || !COPY_BY_WAVE, "AMD: weights always go through the LDS ring (vmcnt accounting)");

  // Copy instructions of one stage, per copy group (a wave on AMD, the CTA on NVIDIA).
  static constexpr int GROUP_BYTES = COPY_BY_WAVE ? WAVE * COPY_BYTES : THREADS * COPY_BYTES;
  static constexpr int W_INSTR = W_STAGE / GROUP_BYTES;
  static constexpr int X_INSTR = ceil_div(X_STAGE, GROUP_BYTES);
  static_assert(W_STAGE % GROUP_BYTES == 0, "weight stage: whole copy instructions");
  static_assert(!COPY_BY_WAVE || X_STAGE % GROUP_BYTES == 0, "AMD: activation stage must be whole copy instructions");
  // Fewest copies any wave issues per stage: waiting for that many per younger
  // stage is never too early (AMD counts outstanding copies, not stages).
  static constexpr int MIN_COPIES = COPY_BY_WAVE ? W_INSTR / WAVES + X_INSTR / WAVES : 1;

  // Copies `ROWS` rows x TILE_K of a row-major matrix into an LDS stage, swizzled.
  // Rows >= `limit`, k >= K and blocks past the split's end are zero-filled.
  template <int ROWS>
  static SK_DEVICE void copy_tile(char* stage, const u16* base, i64 ld, int row0, int limit, int k0, int K,
                                  bool live, const void* zeros, int tid) {
    constexpr int BYTES = ROWS * ROW_BYTES;
    if constexpr (COPY_BY_WAVE) {
      // One instruction copies WAVE*COPY_BYTES contiguous LDS bytes (M0 + lane*size):
      // the swizzle is applied by choosing each lane's global source.
      constexpr int NI = ceil_div(BYTES, GROUP_BYTES);
      const int wave = tid / WAVE, lane = tid % WAVE;
#pragma unroll
      for (int i0 = 0; i0 < NI; i0 += WAVES) {
        const int i = i0 + wave;
        if (i < NI) {
          const int phys = i * GROUP_BYTES + lane * COPY_BYTES;
          const int row = phys / ROW_BYTES, in_row = phys % ROW_BYTES;
          const int chunk = lds_chunk<ROW_BYTES>(row, in_row / 16);
          const int kk = k0 + chunk * 8;
          const bool valid = live && phys < BYTES && row0 + row < limit && kk < K;
          const char* g = valid ? (const char*)(base + (i64)(row0 + row) * ld + kk) + in_row % 16 : (const char*)zeros;
          copy_async(nullptr, stage + i * GROUP_BYTES, g, valid, zeros);
        }
      }
    } else {
      constexpr int CHUNKS_PER_ROW = ROW_BYTES / 16;
#pragma unroll
      for (int i0 = 0; i0 < ceil_div(BYTES / 16, THREADS); ++i0) {
        const int i = i0 * THREADS + tid;
        if (BYTES / 16 % THREADS == 0 || i < BYTES / 16) {
          const int row = i / CHUNKS_PER_ROW;
          const int chunk = lds_chunk<ROW_BYTES>(row, i % CHUNKS_PER_ROW);
          const int kk = k0 + chunk * 8;
          const bool valid = live && row0 + row < limit && kk < K;
          const u16* g = valid ? base + (i64)(row0 + row) * ld + kk : base;
          copy_async(stage + i * 16, nullptr, g, valid, zeros);
        }
      }
    }
  }

  // Weight pieces of one block straight from global memory (B_TO_LDS = false).
  static SK_DEVICE void load_w_regs(u32x4 (&w)[KC][RA][ATOM_A_PIECES], const GemmParams& p, int n_base, int kb,
                                    bool live, int lane, int wk) {
#pragma unroll
    for (int kc = 0; kc < KC; ++kc)
#pragma unroll
      for (int ra = 0; ra < RA; ++ra)
#pragma unroll
        for (int j = 0; j < ATOM_A_PIECES; ++j) {
          int row, piece;
          atom_a_piece(lane, j, row, piece);
          const int n = n_base + ra * 16 + row;
          const int kk = kb * TILE_K + (wk * KC + kc) * 32 + piece * 8;
          w[kc][ra][j] = (live && n < p.n && kk < p.k) ? global_load16(p.w + (i64)n * p.ldw + kk) : u32x4{0, 0, 0, 0};
        }
  }

  static SK_DEVICE void run(const GemmParams& p, char* smem) {
    const int tid = thread_id();
    const int wave = tid / WAVE, lane = tid % WAVE;
    const int wk = wave / (WM * WN), wmn = wave % (WM * WN);
    const int wm = wmn / WN, wn = wmn % WN;

    const int m_tiles = ceil_div(p.m, TILE_M);
    const int tile = block_x();
    const int n0 = (tile / m_tiles) * TILE_N, m0 = (tile % m_tiles) * TILE_M;
    const int split = block_y(), S = p.split_k;
    const int nkb = ceil_div(p.k, TILE_K);
    // nkb < 2^24 and S <= 64: 32-bit products, no 64-bit division.
    const int kb_begin = (int)((u32)(split * nkb) / (u32)S), kb_end = (int)((u32)((split + 1) * nkb) / (u32)S);
    const int nb = kb_end - kb_begin;

    char* const w_lds = smem;
    char* const x_lds = smem + STAGES * W_STAGE;
    const int n_wave = n0 + wn * WAVE_ROWS, t_wave = wm * WAVE_TOKS;

    float acc[RA][TA][4];
#pragma unroll
    for (int ra = 0; ra < RA; ++ra)
#pragma unroll
      for (int ta = 0; ta < TA; ++ta)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[ra][ta][r] = 0.f;

    auto issue = [&](int stage, int kb) {
      const bool live = kb < kb_end;  // past the end: still copy (zeros), so counts stay uniform
      if constexpr (B_TO_LDS)
        copy_tile<TILE_N>(w_lds + stage * W_STAGE, p.w, p.ldw, n0, p.n, kb * TILE_K, p.k, live, p.zeros, tid);
      copy_tile<TILE_M>(x_lds + stage * X_STAGE, p.x, p.ldx, m0, p.m, kb * TILE_K, p.k, live, p.zeros, tid);
      copy_commit();
    };

    u32x4 w_cur[KC][RA][ATOM_A_PIECES], w_next[KC][RA][ATOM_A_PIECES];
    if constexpr (!B_TO_LDS) load_w_regs(w_cur, p, n_wave, kb_begin, nb > 0, lane, wk);

    // ---- main loop: one barrier per block ----
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s, kb_begin + s);
    for (int i = 0; i < nb; ++i) {
      copy_wait<STAGES - 2, MIN_COPIES>();  // block i has landed (this wave's copies) ...
      barrier();                            // ... for every wave; stage i-1 is free again
      issue((i + STAGES - 1) % STAGES, kb_begin + i + STAGES - 1);
      if constexpr (!B_TO_LDS) load_w_regs(w_next, p, n_wave, kb_begin + i + 1, i + 1 < nb, lane, wk);

      const char* ws = w_lds + (i % STAGES) * W_STAGE;
      const char* xs = x_lds + (i % STAGES) * X_STAGE;
#pragma unroll
      for (int kc = 0; kc < KC; ++kc) {
        const int step = wk * KC + kc;  // 32-k step within the stage
        u32x4 b[TA];
#pragma unroll
        for (int ta = 0; ta < TA; ++ta) {
          int tok, piece;
          atom_b_piece(lane, tok, piece);
          b[ta] = lds_load16(xs + lds_offset<ROW_BYTES>(t_wave + ta * ATOM_TOKS + tok, step * 4 + piece));
        }
#pragma unroll
        for (int ra = 0; ra < RA; ++ra) {
          u32x4 a[ATOM_A_PIECES];
#pragma unroll
          for (int j = 0; j < ATOM_A_PIECES; ++j) {
            if constexpr (B_TO_LDS) {
              int row, piece;
              atom_a_piece(lane, j, row, piece);
              a[j] = lds_load16(ws + lds_offset<ROW_BYTES>(wn * WAVE_ROWS + ra * 16 + row, step * 4 + piece));
            } else {
              a[j] = w_cur[kc][ra][j];
            }
          }
#pragma unroll
          for (int ta = 0; ta < TA; ++ta) atom_mma_k32<T>(acc[ra][ta], a, b[ta]);
        }
      }
      if constexpr (!B_TO_LDS) {
#pragma unroll
        for (int kc = 0; kc < KC; ++kc)
#pragma unroll
          for (int ra = 0; ra < RA; ++ra)
#pragma unroll
            for (int j = 0; j < ATOM_A_PIECES; ++j) w_cur[kc][ra][j] = w_next[kc][ra][j];
      }
    }
    copy_wait<0, MIN_COPIES>();
    barrier();  // the ring is idle: its LDS may be reused

    // ---- intra-CTA K-slice reduction, fixed order 0, 1, ..., WK-1 ----
    float* const red = (float*)smem;
    if constexpr (WK > 1) {
      if (wk > 0) {
        float* dst = red + ((wk - 1) * (WM * WN) + wmn) * FRAG * WAVE;
#pragma unroll
        for (int ra = 0; ra < RA; ++ra)
#pragma unroll
          for (int ta = 0; ta < TA; ++ta)
#pragma unroll
            for (int r = 0; r < 4; ++r) dst[((ra * TA + ta) * 4 + r) * WAVE + lane] = acc[ra][ta][r];
      }
      barrier();
      if (wk == 0) {
        for (int s = 1; s < WK; ++s) {
          const float* src = red + ((s - 1) * (WM * WN) + wmn) * FRAG * WAVE;
#pragma unroll
          for (int ra = 0; ra < RA; ++ra)
#pragma unroll
            for (int ta = 0; ta < TA; ++ta)
#pragma unroll
              for (int r = 0; r < 4; ++r) acc[ra][ta][r] += src[((ra * TA + ta) * 4 + r) * WAVE + lane];
        }
      }
    }

    // ---- inter-CTA combine ----
    if (S > 1) {
      // Slot layout follows the fragments: lane-contiguous 16-B writes and reads.
      float* const slots = p.partials + (i64)tile * S * (TILE_M * TILE_N);
      if (wk == 0) {
        float* mine = slots + (i64)split * (TILE_M * TILE_N) + wmn * FRAG * WAVE;
#pragma unroll
        for (int ra = 0; ra < RA; ++ra)
#pragma unroll
          for (int ta = 0; ta < TA; ++ta)
            store_partial(mine + ((ra * TA + ta) * WAVE + lane) * 4,
                          f32x4{acc[ra][ta][0], acc[ra][ta][1], acc[ra][ta][2], acc[ra][ta][3]});
      }
      // Publish the slot, count the arrival; true in every thread of the last CTA,
      // whose later loads then see every slot (prelude: per-target fence sequence).
      if (!arrive_last(p.counters + tile, (u32)S, tid, (u32*)(smem + FLAG_OFFSET))) return;
      // Fixed-order, all-threads reduction: thread (chunk c, float4 q) sums slots
      // [c*S/C, (c+1)*S/C) in order, BATCH loads in flight; then the C chunk sums
      // are added in order c = 0..C-1. The association depends only on (config, S),
      // never on which CTA arrived last: bitwise reproducible.
      f32x4* const sums = (f32x4*)smem;  // [CHUNKS][E4]
      constexpr int BATCH = 8;
      for (int idx = tid; idx < CHUNKS * E4; idx += THREADS) {
        const int c = idx / E4, q = idx % E4;
        const int s_begin = c * S / CHUNKS, s_end = (c + 1) * S / CHUNKS;
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
          for (int c = 1; c < CHUNKS; ++c) total += sums[c * E4 + q];
          sums[q] = total;
        }
        barrier();
      }
      if (wk == 0) {
#pragma unroll
        for (int ra = 0; ra < RA; ++ra)
#pragma unroll
          for (int ta = 0; ta < TA; ++ta) {
            const f32x4 v = sums[wmn * FRAG * WAVE / 4 + (ra * TA + ta) * WAVE + lane];
            acc[ra][ta][0] = v.x;
            acc[ra][ta][1] = v.y;
            acc[ra][ta][2] = v.z;
            acc[ra][ta][3] = v.w;
          }
      }
      if (tid == 0) atomic_store_device(p.counters + tile, 0u);  // ready for the next launch / replay
    }

    // ---- epilogue: alpha, bias, convert, masked store ----
    if (wk != 0) return;
#pragma unroll
    for (int ra = 0; ra < RA; ++ra)
#pragma unroll
      for (int ta = 0; ta < TA; ++ta)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          int row, tok;
          atom_acc_coord(lane, r, row, tok);
          const int n = n_wave + ra * 16 + row;
          const int t = m0 + t_wave + ta * ATOM_TOKS + tok;
          if (n < p.n && t < p.m) {
            float v = p.alpha * acc[ra][ta][r];
            if (p.bias) v += to_f32(T{}, p.bias[n]);
            p.y[(i64)t * p.ldy + n] = from_f32(T{}, v);
          }
        }
  }
};

// Defines one kernel entry point of the family (instances are generated by build.rs
// from the tuning files and the fallback set).
#define SK_SPLITK_INSTANCE(NAME, T, TM, TN, TK, ST, WM, WN, WK, LDS)                       \
  SK_KERNEL((SplitK<T, TM, TN, TK, ST, WM, WN, WK, LDS>::THREADS)) void NAME(GemmParams p) { \
    using K = SplitK<T, TM, TN, TK, ST, WM, WN, WK, LDS>;                                   \
    SK_LDS_DECL(smem, K::LDS_BYTES);                                                        \
    K::run(p, smem);                                                                        \
  }
