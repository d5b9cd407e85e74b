// The atom contract, as a one-wave kernel written in the prelude vocabulary:
// lane l loads its A piece (atom_a_piece) and B piece (atom_b_piece) of each
// 32-k step from row-major A (16 x 32*steps) and B (16 tokens x 32*steps), runs
// atom_mma_k32, and stores its accumulators where atom_acc_coord says. Under a
// correct emulator and prelude, D = A . B^T. Offsets count 16-bit units (fp8: two
// elements each). Included inside a target namespace.
#pragma once

template <typename T>
SK_DEVICE void sk_atom_contract(const emu::AtomParams& p) {
  const int lane = thread_id() % WAVE;
  const int K = 32 * p.steps;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int s = 0; s < p.steps; ++s) {
    u32x4 a[ATOM_A_PIECES];
    for (int j = 0; j < ATOM_A_PIECES; ++j) {
      int row, piece;
      atom_a_piece(lane, j, row, piece);
      a[j] = global_load16(p.a + row * K + s * 32 + piece * 8);
    }
    int tok, piece;
    atom_b_piece(lane, tok, piece);
    const u32x4 b = global_load16(p.b + tok * K + s * 32 + piece * 8);
    atom_mma_k32<T>(acc, a, b);
  }
  for (int r = 0; r < 4; ++r) {
    int row, tok;
    atom_acc_coord(lane, r, row, tok);
    p.d[row * 16 + tok] = acc[r];
  }
}

static void sk_atom_contract_bf16(const void* p) { sk_atom_contract<bf16_t>(*(const emu::AtomParams*)p); }
static void sk_atom_contract_f16(const void* p) { sk_atom_contract<f16_t>(*(const emu::AtomParams*)p); }
// The arch's own fp8 (its units are byte pairs): OCP on gfx950, FNUZ on gfx942.
#if defined(SK_HOST_GFX950)
using sk_atom_fp8_t = e4m3_t;
#else
using sk_atom_fp8_t = e4m3fnuz_t;
#endif
static void sk_atom_contract_fp8(const void* p) { sk_atom_contract<sk_atom_fp8_t>(*(const emu::AtomParams*)p); }
