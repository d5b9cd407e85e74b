// Kernel family A: LDS-pipelined split-K GEMM for decode shapes.
//
//   Y[M,N] = alpha * X[M,K] . W[N,K]^T (+ bias[N])     (M = tokens, small)
//
// Three levels of K parallelism (the LDS ring and the inter-CTA split-K after AMD's
// FlyDSL split-K HGEMM in AITER: github.com/ROCm/aiter,
// aiter/ops/flydsl/kernels/splitk_hgemm.py):
//  * inter-CTA split-K: grid = [N tiles x M tiles, SPLIT_K]; each CTA owns a K range;
//  * intra-CTA K slices: WK wave groups take different 32-k steps of every stage and
//    are reduced through LDS in fixed order;
//  * a STAGES-deep LDS ring: copies of block i+STAGES-1 are in flight while block i
//    feeds the matrix unit.
// The inter-CTA combine is deterministic and graph-safe (unlike that kernel's, whose
// CTAs add their bf16/f16 results into Y with atomics, in arrival order, after the
// first arriver has initialised it): every CTA writes an fp32 partial to its own
// workspace slot; the last to arrive (counter per tile) sums the slots in fixed
// order 0..SPLIT_K-1, applies alpha and bias, writes Y, and resets the counter to 0
// inside the kernel, so no memset is needed before a launch or a graph replay (or,
// on sm_90, the splits form a cluster and meet in distributed shared memory). That
// combine, the PDL prologue and the output store are gemm_common.h's, shared with
// the wgmma family.
//
// Parameters: T (bf16_t, f16_t), TILE_M (tokens), TILE_N (weight rows), TILE_K,
// STAGES, WM x WN x WK waves, B_TO_LDS (weights through the LDS ring, or straight
// into registers one block ahead). SPLIT_K, M, N, K, alpha and the bias pointer are
// run-time values. N and M tails are masked; K must be a multiple of 8 (16-B
// copies), which routing guarantees.
#pragma once
#include "gemm_common.h"

// The matrix atom the pipeline is written against: ROWS weight rows x TOKS tokens x
// K k per step. Each lane feeds it W_PIECES weight pieces and X_PIECES token pieces
// (16-byte runs of 8 consecutive k, numbered within the step), accumulates ACC
// physical values and yields 4 outputs after collapse() (out_coord says where they
// go). Family A's atom is the prelude's atom_*; the VDMFMA family's is in
// vdmfma_gemm.h.
struct DenseAtom {
  static constexpr int ROWS = 16, TOKS = ATOM_TOKS, K = 32, W_PIECES = ATOM_A_PIECES, X_PIECES = 1, ACC = 4;
  static SK_DEVICE void w_piece(int lane, int j, int& row, int& piece) { atom_a_piece(lane, j, row, piece); }
  static SK_DEVICE void x_piece(int lane, int /*j*/, int& tok, int& piece) { atom_b_piece(lane, tok, piece); }
  static SK_DEVICE u32 meta(int /*lane*/) { return 0; }
  template <typename T>
  static SK_DEVICE void mma(float* acc, const u32x4* w, const u32x4* x, u32 /*meta*/) { atom_mma_k32<T>(acc, w, x[0]); }
  static SK_DEVICE void collapse(const float* acc, float* out) {
#pragma unroll
    for (int r = 0; r < 4; ++r) out[r] = acc[r];
  }
  static SK_DEVICE void out_coord(int lane, int r, int& row, int& tok) { atom_acc_coord(lane, r, row, tok); }
  // Swizzled chunk, and byte offset, of the token (X) tile: as the weight tile's.
  template <int ROW_BYTES>
  static SK_DEVICE int x_chunk(int row, int chunk) { return lds_chunk<ROW_BYTES>(row, chunk); }
  template <int ROW_BYTES>
  static SK_DEVICE int x_offset(int row, int chunk) { return lds_offset<ROW_BYTES>(row, chunk); }
};

template <typename T, int TILE_M, int TILE_N, int TILE_K, int STAGES, int WM, int WN, int WK, bool B_TO_LDS,
          bool CLUSTER = false, typename Atom = DenseAtom>
struct SplitK {
  static constexpr int WAVES = WM * WN * WK;
  static constexpr int THREADS = WAVES * WAVE;
  static constexpr int ROW_BYTES = TILE_K * 2;
  static constexpr int WAVE_ROWS = TILE_N / WN;
  static constexpr int WAVE_TOKS = TILE_M / WM;
  static constexpr int RA = WAVE_ROWS / Atom::ROWS;  // row atoms per wave
  static constexpr int TA = WAVE_TOKS / Atom::TOKS;  // token atoms per wave
  static constexpr int KC = TILE_K / WK / Atom::K;   // atom k-steps per wave per stage
  static constexpr int KP = Atom::K / 8;             // pieces (16-B chunks) per k-step
  static constexpr int FRAG = RA * TA * 4;           // accumulators per lane (collapsed)
  static constexpr int W_STAGE = B_TO_LDS ? TILE_N * ROW_BYTES : 0;
  static constexpr int X_STAGE = TILE_M * ROW_BYTES;
  static constexpr int PIPE_BYTES = STAGES * (W_STAGE + X_STAGE);
  static constexpr int RED_BYTES = (WK - 1) * TILE_M * TILE_N * 4;
  using Combine = SplitCombine<THREADS, TILE_M * TILE_N, RA * TA, CLUSTER>;
  static constexpr int COMBINE_BYTES = Combine::LDS_BYTES;
  static constexpr int FLAG_OFFSET = PIPE_BYTES > RED_BYTES ? (PIPE_BYTES > COMBINE_BYTES ? PIPE_BYTES : COMBINE_BYTES)
                                                            : (RED_BYTES > COMBINE_BYTES ? RED_BYTES : COMBINE_BYTES);
  // The cluster combine's own receive slots, after the flag (SplitCombine::recv_slots).
  static constexpr int RECV_OFFSET = FLAG_OFFSET + 16;
  static constexpr int RECV_SLOTS = Combine::recv_slots(RECV_OFFSET);
  static constexpr int LDS_BYTES = RECV_OFFSET + RECV_SLOTS * TILE_M * TILE_N * 4;  // mirrored by KernelConfig::lds_bytes

  static_assert(TILE_N % (Atom::ROWS * WN) == 0, "weight rows per wave: whole atoms");
  static_assert(TILE_M % (Atom::TOKS * WM) == 0, "tokens per wave: whole atoms");
  static_assert(TILE_K % (Atom::K * WK) == 0 && TILE_K >= 64, "k per wave: whole atom k-steps");
  static_assert(STAGES >= 2, "a ring needs two stages");
  static_assert(B_TO_LDS || !COPY_BY_WAVE, "AMD: weights always go through the LDS ring (vmcnt accounting)");
  static_assert(!CLUSTER || HAS_CLUSTERS, "cluster split-K needs thread-block clusters (sm_90)");

  // Copy instructions of one stage, per copy group (a wave on AMD, the CTA on NVIDIA).
  static constexpr int GROUP_BYTES = COPY_BY_WAVE ? WAVE * COPY_BYTES : THREADS * COPY_BYTES;
  static constexpr int W_INSTR = W_STAGE / GROUP_BYTES;
  static constexpr int X_INSTR = ceil_div(X_STAGE, GROUP_BYTES);
  static_assert(W_STAGE % GROUP_BYTES == 0, "weight stage: whole copy instructions");
  static_assert(!COPY_BY_WAVE || X_STAGE % GROUP_BYTES == 0, "AMD: activation stage must be whole copy instructions");
  // Fewest copies any wave issues per stage: waiting for that many per younger
  // stage is never too early (AMD counts outstanding copies, not stages).
  static constexpr int MIN_COPIES = COPY_BY_WAVE ? W_INSTR / WAVES + X_INSTR / WAVES : 1;

  // The swizzled chunk of the weight (X_TILE false) or token (X_TILE true) tile.
  template <bool X_TILE>
  static SK_DEVICE int tile_chunk(int row, int chunk) {
    if constexpr (X_TILE) return Atom::template x_chunk<ROW_BYTES>(row, chunk);
    else return lds_chunk<ROW_BYTES>(row, chunk);
  }

  // Copies `ROWS` rows x TILE_K of a row-major matrix into an LDS stage, swizzled.
  // Rows >= `limit`, k >= K and blocks past the split's end are zero-filled.
  template <int ROWS, bool X_TILE>
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
          const int chunk = tile_chunk<X_TILE>(row, in_row / 16);
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
          const int chunk = tile_chunk<X_TILE>(row, i % CHUNKS_PER_ROW);
          const int kk = k0 + chunk * 8;
          const bool valid = live && row0 + row < limit && kk < K;
          const u16* g = valid ? base + (i64)(row0 + row) * ld + kk : base;
          copy_async(stage + i * 16, nullptr, g, valid, zeros);
        }
      }
    }
  }

  // Weight pieces of one block straight from global memory (B_TO_LDS = false).
  static SK_DEVICE void load_w_regs(u32x4 (&w)[KC][RA][Atom::W_PIECES], const GemmParams& p, int n_base, int kb,
                                    bool live, int lane, int wk) {
#pragma unroll
    for (int kc = 0; kc < KC; ++kc)
#pragma unroll
      for (int ra = 0; ra < RA; ++ra)
#pragma unroll
        for (int j = 0; j < Atom::W_PIECES; ++j) {
          int row, piece;
          Atom::w_piece(lane, j, row, piece);
          const int n = n_base + ra * Atom::ROWS + row;
          const int kk = kb * TILE_K + (wk * KC + kc) * Atom::K + piece * 8;
          w[kc][ra][j] = (live && n < p.n && kk < p.k) ? global_load16(p.w + (i64)n * p.ldw + kk) : u32x4{0, 0, 0, 0};
        }
  }

  // LDS byte offset, within a stage, of this lane's token piece j of token atom ta of
  // the wave (whose tokens start at t_wave), at atom k-step `step`; and of its weight
  // piece j of row atom ra of wave column wn.
  static SK_DEVICE int x_piece_offset(int lane, int j, int t_wave, int ta, int step) {
    int tok, piece;
    Atom::x_piece(lane, j, tok, piece);
    return Atom::template x_offset<ROW_BYTES>(t_wave + ta * Atom::TOKS + tok, step * KP + piece);
  }
  static SK_DEVICE int w_piece_offset(int lane, int j, int wn, int ra, int step) {
    int row, piece;
    Atom::w_piece(lane, j, row, piece);
    return lds_offset<ROW_BYTES>(wn * WAVE_ROWS + ra * Atom::ROWS + row, step * KP + piece);
  }

  // A wave's place: lane, K slice wk, and its first weight row (wn * WAVE_ROWS) and
  // token (t_wave) in the tile.
  struct WaveCoord {
    int lane, wk, wn, t_wave;
  };

  static SK_DEVICE void zero_accumulators(float (&mac)[RA][TA][Atom::ACC]) {
#pragma unroll
    for (int ra = 0; ra < RA; ++ra)
#pragma unroll
      for (int ta = 0; ta < TA; ++ta)
#pragma unroll
        for (int r = 0; r < Atom::ACC; ++r) mac[ra][ta][r] = 0.f;
  }

  // The atom MMAs of one K block from the ring stage at ws (weights; or w_regs when
  // B_TO_LDS is false) and xs (tokens): the wave's KC k-steps of the stage (its K
  // slice), every row atom x token atom. A k-step's token pieces (x_step) are loaded
  // once for all row atoms; w_step holds one row atom's weight pieces.
  static SK_DEVICE void multiply_block(float (&mac)[RA][TA][Atom::ACC], u32x4 (&x_step)[TA][Atom::X_PIECES],
                                       u32x4 (&w_step)[Atom::W_PIECES], const char* ws, const char* xs,
                                       const u32x4 (&w_regs)[KC][RA][Atom::W_PIECES], u32 meta, const WaveCoord& w) {
#pragma unroll
    for (int kc = 0; kc < KC; ++kc) {
      const int step = w.wk * KC + kc;  // atom k-step within the stage
#pragma unroll
      for (int ta = 0; ta < TA; ++ta)
#pragma unroll
        for (int j = 0; j < Atom::X_PIECES; ++j)
          x_step[ta][j] = lds_load16(xs + x_piece_offset(w.lane, j, w.t_wave, ta, step));
#pragma unroll
      for (int ra = 0; ra < RA; ++ra) {
#pragma unroll
        for (int j = 0; j < Atom::W_PIECES; ++j) {
          if constexpr (B_TO_LDS)
            w_step[j] = lds_load16(ws + w_piece_offset(w.lane, j, w.wn, ra, step));
          else
            w_step[j] = w_regs[kc][ra][j];
        }
#pragma unroll
        for (int ta = 0; ta < TA; ++ta) Atom::template mma<T>(mac[ra][ta], w_step, x_step[ta], meta);
      }
    }
  }

  // B_TO_LDS false: the next block's weight pieces become the current ones.
  static SK_DEVICE void advance_w_regs(u32x4 (&w_cur)[KC][RA][Atom::W_PIECES],
                                       const u32x4 (&w_next)[KC][RA][Atom::W_PIECES]) {
#pragma unroll
    for (int kc = 0; kc < KC; ++kc)
#pragma unroll
      for (int ra = 0; ra < RA; ++ra)
#pragma unroll
        for (int j = 0; j < Atom::W_PIECES; ++j) w_cur[kc][ra][j] = w_next[kc][ra][j];
  }

  // The atom's outputs: 4 per (row atom, token atom) and lane (a copy for family A),
  // each through `out`.
  static SK_DEVICE void collapse(f32x4 (&acc)[RA * TA], float (&out)[4], const float (&mac)[RA][TA][Atom::ACC]) {
#pragma unroll
    for (int ra = 0; ra < RA; ++ra)
#pragma unroll
      for (int ta = 0; ta < TA; ++ta) {
        Atom::collapse(mac[ra][ta], out);
        acc[ra * TA + ta] = f32x4{out[0], out[1], out[2], out[3]};
      }
  }

  // The intra-CTA K-slice reduction through the idle ring's LDS (`red`): wave groups
  // wk > 0 store their outputs, then group 0 adds them in the fixed order 1, ..., WK-1.
  static SK_DEVICE void store_k_slice(f32x4* red, const f32x4 (&acc)[RA * TA], int wk, int wmn, int lane) {
    f32x4* dst = red + ((wk - 1) * (WM * WN) + wmn) * (RA * TA) * WAVE;
#pragma unroll
    for (int q = 0; q < RA * TA; ++q) dst[q * WAVE + lane] = acc[q];
  }
  static SK_DEVICE void add_k_slices(f32x4 (&acc)[RA * TA], const f32x4* red, int wmn, int lane) {
    for (int s = 1; s < WK; ++s) {
      const f32x4* src = red + ((s - 1) * (WM * WN) + wmn) * (RA * TA) * WAVE;
#pragma unroll
      for (int q = 0; q < RA * TA; ++q) acc[q] += src[q * WAVE + lane];
    }
  }

  // The epilogue of the quads this thread stores (bit q of `owned`), at weight rows
  // from n_wave and tokens from m0 + t_wave (in Y): alpha, beta C, bias, activation,
  // convert, masked store. The lane's bias values go to `bias` first, every load in
  // flight at once (a bias load per output, under the store's conditions, waited out
  // one latency each).
  static SK_DEVICE void store_outputs(const GemmParams& p, const f32x4 (&acc)[RA * TA], float (&bias)[RA][4],
                                      u32 owned, int lane, int n_wave, int m0, int t_wave) {
    const EpilogueArgs e = epilogue_args<T>(p);
    // One branch, then one of the epilogues for every output (see EpilogueArgs);
    // the plain one's bias is of the output type.
    if (e.plain) {
      if constexpr (T::fp8)
        if (p.flags & (SCALE_A_VEC | SCALE_B_VEC)) return store_plain<true>(p, e, acc, bias, owned, lane, n_wave, m0, t_wave);
      store_plain<false>(p, e, acc, bias, owned, lane, n_wave, m0, t_wave);
    } else {
      // fp8 kernels load the lane's scales (1 without vectors) before any store;
      // 16-bit ones carry no scale code. C too: store_output says why.
      load_lane<true>(bias, lane, n_wave, [&](int n) { return bias_at<T>(p, n); });
      float rs[RA][4], ts[TA][4], cv[RA * TA][4];
      lane_scales<T::fp8>(p, rs, ts, lane, n_wave, m0 + t_wave);
      each_output(acc, bias, owned, lane, n_wave, m0, t_wave, [&](int ra, int ta, int r, int n, int t, float, float) {
        cv[ra * TA + ta][r] = c_at<T>(p, e, n, t);
      });
      each_output(acc, bias, owned, lane, n_wave, m0, t_wave, [&](int ra, int ta, int r, int n, int t, float v, float b) {
        store_output<T>(p, e, n, t, v, b, rs[ra][r] * ts[ta][r], cv[ra * TA + ta][r]);
      });
    }
  }
  // The lane's row and token scales (VEC), every load in flight at once, else 1.
  template <bool VEC>
  static SK_DEVICE void lane_scales(const GemmParams& p, float (&rs)[RA][4], float (&ts)[TA][4], int lane, int n_wave, int t_base) {
    load_lane<true>(rs, lane, n_wave, [&](int n) { return VEC ? row_scale<T>(p, n) : 1.f; });
    load_lane<false>(ts, lane, t_base, [&](int t) { return VEC ? token_scale<T>(p, t) : 1.f; });
  }
  // The plain epilogue, with fp8 scale vectors (VEC: the lane's row and token scales
  // loaded with the bias, before any store) or without: the per-tensor and 16-bit
  // code stays as small as it was (see EpilogueArgs).
  template <bool VEC>
  static SK_DEVICE void store_plain(const GemmParams& p, const EpilogueArgs& e, const f32x4 (&acc)[RA * TA], float (&bias)[RA][4],
                                    u32 owned, int lane, int n_wave, int m0, int t_wave) {
    load_lane<true>(bias, lane, n_wave, [&](int n) { return p.bias && n < p.n ? out_to_f32<T>(p.flags, ((const u16*)p.bias)[n]) : 0.f; });
    float rs[RA][4], ts[TA][4];
    lane_scales<VEC>(p, rs, ts, lane, n_wave, m0 + t_wave);
    each_output(acc, bias, owned, lane, n_wave, m0, t_wave, [&](int ra, int ta, int r, int n, int t, float v, float b) {
      store_output_plain<T>(p, e, n, t, v, b, rs[ra][r] * ts[ta][r]);
    });
  }
  // One value per output of the lane, every load in flight at once: by weight row
  // from `base` (ROW: the bias, A's scales; A = RA row atoms) or by token (B's
  // scales; A = TA token atoms).
  template <bool ROW, int A, typename Load>
  static SK_DEVICE void load_lane(float (&out)[A][4], int lane, int base, Load load) {
#pragma unroll
    for (int a = 0; a < A; ++a)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        int row, tok;
        Atom::out_coord(lane, r, row, tok);
        out[a][r] = load(base + (ROW ? a * Atom::ROWS + row : a * Atom::TOKS + tok));
      }
  }
  // Calls f(ra, ta, r, n, t, value, bias) for every output of the quads the thread
  // owns (bit q of `owned`), at weight row n and token t of Y.
  template <typename F>
  static SK_DEVICE void each_output(const f32x4 (&acc)[RA * TA], const float (&bias)[RA][4], u32 owned, int lane,
                                    int n_wave, int m0, int t_wave, F f) {
#pragma unroll
    for (int ra = 0; ra < RA; ++ra)
#pragma unroll
      for (int ta = 0; ta < TA; ++ta)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          if (!(owned >> (ra * TA + ta) & 1)) continue;
          int row, tok;
          Atom::out_coord(lane, r, row, tok);
          f(ra, ta, r, n_wave + ra * Atom::ROWS + row, m0 + t_wave + ta * Atom::TOKS + tok, acc[ra * TA + ta][r], bias[ra][r]);
        }
  }

  // The kernel: prologue, main loop, K-slice reduction, split-K combine, epilogue.
  // The register arrays (accumulators, weight and operand pieces, outputs, bias), the
  // main loop and the wave coordinates are declared here and the phase functions above
  // take the arrays by reference: declared inside those functions, they change the
  // order in which the compiler promotes them to registers, and so the generated code.
  static SK_DEVICE void run(const GemmParams& p, char* smem) {
    // ---- prologue: coordinates, PDL prefetch and wait, the cluster combine's barriers ----
    const int tid = thread_id();
    const int wave = tid / WAVE, lane = tid % WAVE;
    const int wk = wave / (WM * WN), wmn = wave % (WM * WN);
    const int wm = wmn / WN, wn = wmn % WN;
    const TileCoord c = tile_coord<TILE_M, TILE_N, TILE_K>(p);
    const int n0 = c.n0, m0 = c.m0, kb_begin = c.kb_begin, kb_end = c.kb_end, nb = c.blocks();
    const int n_wave = n0 + wn * WAVE_ROWS, t_wave = wm * WAVE_TOKS;
    const WaveCoord w{lane, wk, wn, t_wave};
    const int trigger_at = pdl_prologue<TILE_M, TILE_N, TILE_K, THREADS>(p, c, tid);
    Combine::begin(p, (u32*)(smem + FLAG_OFFSET), tid);  // published while the main loop runs
    // ---- main loop: the STAGES-deep ring, one barrier per block ----
    char* const w_lds = smem;
    char* const x_lds = smem + STAGES * W_STAGE;
    float mac[RA][TA][Atom::ACC];  // the atom's physical accumulators
    zero_accumulators(mac);
    const u32 meta = Atom::meta(lane);
    auto issue = [&](int stage, int kb) {
      const bool live = kb < kb_end;  // past the end: still copy (zeros), so counts stay uniform
      if constexpr (B_TO_LDS)
        copy_tile<TILE_N, false>(w_lds + stage * W_STAGE, p.w, p.ldw, n0, p.n, kb * TILE_K, p.k, live, p.zeros, tid);
      copy_tile<TILE_M, true>(x_lds + stage * X_STAGE, p.x, p.ldx, m0, p.m, kb * TILE_K, p.k, live, p.zeros, tid);
      copy_commit();
    };
    u32x4 w_cur[KC][RA][Atom::W_PIECES], w_next[KC][RA][Atom::W_PIECES];
    if constexpr (!B_TO_LDS) load_w_regs(w_cur, p, n_wave, kb_begin, nb > 0, lane, wk);
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue(s, kb_begin + s);
    for (int i = 0; i < nb; ++i) {
      if (i == trigger_at) pdl_launch_dependents();
      copy_wait<STAGES - 2, MIN_COPIES>();  // block i has landed (this wave's copies) ...
      barrier();                            // ... for every wave; stage i-1 is free again
      issue((i + STAGES - 1) % STAGES, kb_begin + i + STAGES - 1);
      if constexpr (!B_TO_LDS) load_w_regs(w_next, p, n_wave, kb_begin + i + 1, i + 1 < nb, lane, wk);
      u32x4 x_step[TA][Atom::X_PIECES], w_step[Atom::W_PIECES];
      multiply_block(mac, x_step, w_step, w_lds + (i % STAGES) * W_STAGE, x_lds + (i % STAGES) * X_STAGE, w_cur, meta,
                     w);
      if constexpr (!B_TO_LDS) advance_w_regs(w_cur, w_next);
    }
    copy_wait<0, MIN_COPIES>();
    barrier();  // the ring is idle: its LDS may be reused
    if (trigger_at >= nb) pdl_launch_dependents();  // lead 0, or no K blocks at all
    // ---- intra-CTA K-slice reduction, fixed order 0, 1, ..., WK-1 ----
    f32x4 acc[RA * TA];
    float out[4];
    collapse(acc, out, mac);
    f32x4* const red = (f32x4*)smem;
    if constexpr (WK > 1) {
      if (wk > 0) store_k_slice(red, acc, wk, wmn, lane);
      barrier();
      if (wk == 0) add_k_slices(acc, red, wmn, lane);
    }
    // ---- inter-CTA combine: quad q of lane l of wave (wm, wn) at wmn*RA*TA*WAVE + q*WAVE + l ----
    const HeldQuads held{wk == 0, wmn * (RA * TA) * WAVE + lane, WAVE};
    const CombineLds lds{smem, (u32*)(smem + FLAG_OFFSET), FLAG_OFFSET, smem + RECV_OFFSET, RECV_SLOTS};
    const u32 owned = Combine::run(p, lds, acc, held, c, tid);
    if (!owned) return;
    float bias[RA][4];
    store_outputs(p, acc, bias, owned, lane, n_wave, m0, t_wave);
  }
};

// Defines one kernel entry point of the family (instances are generated by build.rs
// from the tuning files and the fallback set).
#define SK_SPLITK_INSTANCE(NAME, T, TM, TN, TK, ST, WM, WN, WK, LDS, CL) \
  SK_GEMM_ENTRY(NAME, SplitK<T, TM, TN, TK, ST, WM, WN, WK, LDS, CL>)
