// Lane layouts and constants of the AMD matrix atoms (gfx942, gfx950): pure integer
// functions shared verbatim by target_amdgcn.h (the device code) and target_host.h
// (the emulator), so the emulator executes the very mappings the GPU runs.
// SK_AMD_GFX950 (set by the including target) selects gfx950, otherwise gfx942.
#pragma once

constexpr int WAVE = 64;
constexpr int ATOM_TOKS = 16;    // MFMA 16x16: weights are the A rows, tokens the B columns
constexpr int ATOM_A_PIECES = 1;
constexpr bool COPY_BY_WAVE = true;   // global_load_lds writes LDS at M0 + lane*size
#if SK_AMD_GFX950
constexpr int COPY_BYTES = 16;   // global_load_lds_dwordx4 (gfx950 only)
#else
constexpr int COPY_BYTES = 4;    // global_load_lds_dword: the widest direct-to-LDS load of gfx942
#endif

// Bank rules (the LDS chapters of AMD's CDNA3 and CDNA4 ISA reference guides): gfx942
// has 32 banks (128 B per cycle), gfx950 64 banks (256 B). The MFMA atom's LDS reads
// take, per cycle, lanes 0..7 (gfx942) or 0..15 (gfx950) = rows 0..7 / 0..15 of one
// chunk column; the swizzle makes those rows hit distinct 16-B bank groups.
template <int ROW_BYTES>
SK_DEVICE int target_swizzle(int row) {
#if SK_AMD_GFX950
  if constexpr (ROW_BYTES == 128) return (row >> 1) & 7;  // two rows per 256 B line
  else return row & 15;
#else
  return ((row & 1) << 2) | ((row >> 1) & 3);
#endif
}

// ---- the matrix atom (instruction sequence: atom_mma_k32 in each target) ----
// Lane l: i = l%16 (A row / B column), g = l/16 (k group). Each operand piece is
// the 8 consecutive k [8g, 8g+8) of the 32-k step.
// gfx950 v_mfma_f32_16x16x32_{bf16,f16}: A lane holds row l%16, k 8(l/16)+j — the
// piece exactly (AMD's CDNA4 ISA reference guide; AITER's FlyDSL split-K HGEMM feeds
// it the same way).
// gfx942 v_mfma_f32_16x16x16{bf16_1k,f16}: A lane holds row l%16, k 4(l/16)+j; two
// MFMAs per 32 k, fed the piece's first and second halves — the same k permutation
// for A and B, so the sum is unchanged (AMD's CDNA3 ISA reference guide; the AMD
// Matrix Instruction Calculator, github.com/ROCm/amd_matrix_instruction_calculator).
// D (both): lane l holds rows 4(l/16)+r, column l%16.
SK_DEVICE void atom_a_piece(int lane, int /*j*/, int& row, int& piece) { row = lane & 15; piece = lane >> 4; }
SK_DEVICE void atom_b_piece(int lane, int& tok, int& piece) { tok = lane & 15; piece = lane >> 4; }
SK_DEVICE void atom_acc_coord(int lane, int r, int& row, int& tok) { row = 4 * (lane >> 4) + r; tok = lane & 15; }

// ---- the virtual-dense sparse atom (family VDMFMA): v_smfmac, 4:2 structured sparsity ----
// (instruction sequence: vd_mma in each target)
// Tokens are the sparse A operand, weights the dense B operand (16 columns = 16
// output features, VD_ROWS). Physical A rows 2p and 2p+1 both carry token p (0..7):
// the per-lane-parity sparse index (even lanes = even rows: positions {0,1} of every
// 4-group, nibble 0x4; odd lanes: {2,3}, nibble 0xE; cbsz = 0, abid = 0, so the first
// index set, i.e. the low bits, is used) lets the row pair hold one dense row. D
// lane l holds physical rows 4(l/16)+r, column l%16; rows 4g, 4g+1 are token 2g and
// rows 4g+2, 4g+3 token 2g+1: collapse [d0+d1, d2+d3]. (Idea: the MI300 skinny GEMM
// of Hugging Face's hf-rocm-kernels; formalised as IREE's virtual dense MFMA, VDMFMA,
// in github.com/iree-org/iree.)
//
// gfx942, v_smfmac_f32_16x16x32_{bf16,f16} (CDNA3 ISA reference guide; the Matrix
// Instruction Calculator for CDNA3): A = 2 VGPRs, VGPR r holds the 2 kept halves of
// the dense 4-group k [8g+4r, 8g+4r+4) of row l%16 (g = l/16); B = 4 VGPRs, column
// l%16, k 8g + [0, 8). A step is two instructions (64 k, pieces 0..7), IREE's
// VDMFMA_F32_8x16x64x2 layout: lane l holds token (l%16)/2's piece 2g + (l&1) (X0)
// and weight row l%16's pieces 2g, 2g+1 (W0, W1); instruction s takes
// A = {X0.d[2s], X0.d[2s+1]} and B = {W0.d[2s], W1.d[2s], W0.d[2s+1], W1.d[2s+1]} —
// IREE's B shuffles [0,1,8,9,2,3,10,11] and [4,5,12,13,6,7,14,15] on whole 32-bit
// words, so no ALU work.
//
// gfx950, v_smfmac_f32_16x16x64_{bf16,f16}: A = 4 VGPRs, VGPR r = the kept halves of
// the 4-group k [16g+4r, 16g+4r+4) of row l%16; index: 16-bit set, nibble r for VGPR r
// (LLVM's gfx950 smfmac index rule). B = 8 VGPRs, column l%16; which k a B VGPR holds
// is where published evidence disagrees (docs/amd.md, "The gfx950 SMFMAC B-operand
// caveat"):
//  * SK_GFX950_SMFMAC_B_MAP 0 (default): VGPR r < 4 holds k 8g + 2r + {0,1}, r >= 4
//    holds k 32 + 8g + 2(r-4) + {0,1}, i.e. B lane group g covers k [8g, 8g+8) and
//    [32+8g, 32+8g+8) — the hardware golden test of the sparse dataflow in
//    github.com/ROCm/hip-fpsan (tests/mfma_gfx950_smfmac_test.cpp,
//    SmfmacF16_16x16x64.LayoutMatchesHardware, reported passing on MI350) and the
//    one-hot probes and working packing of github.com/efric/hip-matmul
//    (GFX950_SMFMAC_16x16x64.md), which agree;
//  * SK_GFX950_SMFMAC_B_MAP 1: VGPR r holds k 16g + 2r + {0,1} ("CDNA3 twice as wide"),
//    what IREE's gfx950 lowering assumes (IREE has no gfx950 end-to-end test of it).
// Under either, no single-instruction packing gives both operands whole 16-byte pieces,
// two instructions (128 k, pieces 0..15) do: with the A side fixed by the documented
// A layout, A VGPR r of instruction s in lane (g, parity q) is physical k-pair
// 8g + q + 2r, which we make word 2s + r%2 of the lane's token piece
// pi(g, q, r/2) = 2(g%2) + 8(g/2) + 4q + r/2 (X0 = pi(g,q,0), X1 = pi(g,q,1)). A B
// VGPR r holding physical pair P then must hold word 2s + (P%8/2)%2 of piece
// pi(P/8, P%2, P%8/4); for both maps that gives the same register assembly, B =
// {W0.d[2s], W1.d[2s], W0.d[2s+1], W1.d[2s+1], W2.d[2s], W3.d[2s], W2.d[2s+1],
// W3.d[2s+1]}, and differs only in which pieces W0..W3 are: map 0: pieces g + 4j;
// map 1: pi(g, j%2, j/2). So the whole disagreement is vd_w_piece's one line.
#ifndef SK_GFX950_SMFMAC_B_MAP
#define SK_GFX950_SMFMAC_B_MAP 0
#endif
constexpr int VD_ROWS = 16;
constexpr int VD_TOKS = 8;
constexpr int VD_ACC = 4;
#if SK_AMD_GFX950
constexpr int VD_K = 128;
constexpr int VD_W_PIECES = 4;
constexpr int VD_X_PIECES = 2;
#else
constexpr int VD_K = 64;
constexpr int VD_W_PIECES = 2;
constexpr int VD_X_PIECES = 1;
#endif

SK_DEVICE void vd_w_piece(int lane, int j, int& row, int& piece) {
  const int g = lane >> 4;
  row = lane & 15;
#if SK_AMD_GFX950
#if SK_GFX950_SMFMAC_B_MAP == 0
  piece = g + 4 * j;
#else
  piece = 2 * (g & 1) + 8 * (g >> 1) + 4 * (j & 1) + (j >> 1);
#endif
#else
  piece = 2 * g + j;
#endif
}
// ---- the fp8 virtual-dense atom: gfx942 v_smfmac_f32_16x16x64_fp8_fp8 (FNUZ),
// gfx950 v_smfmac_f32_16x16x128_fp8_fp8 (OCP) ----
// The fp8 instructions keep the 16-bit ones' geometry in bytes (k counts fp8 here):
//  * gfx942 16x16x64 (CDNA3 ISA reference guide; the Matrix Instruction Calculator
//    for CDNA3): A = 2 VGPRs, the 8 kept bytes of the four 4-groups of dense k
//    [16g, 16g+16) of row l%16, VGPR r = groups 2r, 2r+1 (2 bytes each, in order);
//    index bits [15:0] (the first 16-bit set; cbsz = 0, abid = 0), nibble i for group
//    i; B = 4 VGPRs, column l%16, byte e = k 16g + e.
//  * gfx950 16x16x128: A = 4 VGPRs, dense k [32g, 32g+32), VGPR r = groups 2r, 2r+1,
//    all 32 index bits (nibble i, group i); B = 8 VGPRs, column l%16, byte e = k
//    64(e/16) + 16g + e%16 — what the hardware one-hot probes of github.com/efric/
//    hip-matmul (GFX950_SMFMAC_16x16x64.md, "FP8 16x16x128 Path") give: A byte a of
//    lane group ag meets B byte 16(ag/2) + 4((a%8)/2) + a%2 (+2 for the {2,3} index)
//    of lane group 2(ag%2) + a/8. It is the 16-bit map 0 in bytes; map 1 would be
//    byte e = k 32g + e.
// A 4-group of fp8 is one 32-bit word, so the 16-bit trick (a whole A word per
// kept pair) does not carry over: a row keeping positions {0,1} needs the low 2 bytes
// of two groups in one A VGPR, the {2,3} row their high 2 bytes. We keep B as whole
// weight words — the same B assembly and weight pieces as the 16-bit atom — and pack
// A from whole token words with one v_perm_b32 per A VGPR (the weights are 4x the
// register traffic of the tokens, so permuting tokens is the cheap side). For that
// both lanes of a token read the same token pieces (gfx942 2, gfx950 4 per step):
// A VGPR r of instruction s is bytes {0,1} (even lane) or {2,3} (odd lane) of word
// 2s + r%2 of token pieces X[2(r/2)] and X[2(r/2) + 1], low piece first: each byte
// pair meets the same bytes of the same word of the same weight piece in B (under
// both gfx950 maps).
constexpr bool VD_HAS_FP8 = true;
#if SK_AMD_GFX950
constexpr int VD_X_PIECES_FP8 = 4;
#else
constexpr int VD_X_PIECES_FP8 = 2;
#endif
// gfx942: pieces 2g, 2g+1; gfx950: base, base+4, base+1, base+5 with base = 2(g%2) +
// 8(g/2) (the pieces the weight words of both maps pair with).
SK_DEVICE void vd_x_piece_fp8(int g, int j, int& piece) {
#if SK_AMD_GFX950
  piece = 2 * (g & 1) + 8 * (g >> 1) + 4 * (j & 1) + (j >> 1);
#else
  piece = 2 * g + j;
#endif
}
// v_perm_b32 selector of the A packing: result = {first.b0, first.b1, second.b0,
// second.b1} (even lanes) or {first.b2, first.b3, second.b2, second.b3} (odd), with
// src0 = second, src1 = first. The index says which the lane is: its low nibble is
// 0xE where the row keeps positions {2,3}.
SK_DEVICE u32 vd_fp8_select(u32 meta) { return (meta & 15) == 0xE ? 0x07060302u : 0x05040100u; }
// The A (NA VGPRs) and B (2 NA VGPRs) operands of fp8 instruction s of a step, from
// the lane's token pieces x (VD_X_PIECES_FP8) and weight pieces w (VD_W_PIECES).
// byte_perm is the target's v_perm_b32 (src0, src1, selector).
SK_DEVICE u32 byte_perm(u32 src0, u32 src1, u32 select);
template <int NA>
SK_DEVICE void vd_fp8_operands(u32* a, u32* b, const u32x4* w, const u32x4* x, int s, u32 select) {
#pragma unroll
  for (int r = 0; r < NA; ++r) a[r] = byte_perm(x[2 * (r >> 1) + 1][2 * s + (r & 1)], x[2 * (r >> 1)][2 * s + (r & 1)], select);
  // The 16-bit atom's B words (see vd_mma): pairs of weight pieces, word 2s then 2s+1.
#pragma unroll
  for (int h = 0; h < NA / 2; ++h) {
    b[4 * h + 0] = w[2 * h][2 * s];
    b[4 * h + 1] = w[2 * h + 1][2 * s];
    b[4 * h + 2] = w[2 * h][2 * s + 1];
    b[4 * h + 3] = w[2 * h + 1][2 * s + 1];
  }
}

// Token piece j of a lane (fp8: vd_x_piece_fp8).
template <bool FP8>
SK_DEVICE void vd_x_piece(int lane, int j, int& tok, int& piece) {
  const int g = lane >> 4;
  tok = (lane & 15) >> 1;
  if constexpr (FP8) {
    vd_x_piece_fp8(g, j, piece);
    return;
  }
#if SK_AMD_GFX950
  piece = 2 * (g & 1) + 8 * (g >> 1) + 4 * (lane & 1) + j;
#else
  (void)j;
  piece = 2 * g + (lane & 1);
#endif
}
// Swizzle (chunk XOR) of the token tile's rows. ds_read_b128 serves 8 lanes (gfx942)
// or 16 lanes (gfx950) per cycle; rows are ROW_BYTES >= 128 (gfx950: >= 256) apart, so
// a 16-B chunk's bank group is its swizzled index mod 8 (16). gfx942: a cycle reads
// tokens 4h..4h+3 x chunks {2g, 2g+1}; 2(row & 3) sends the 4 rows' chunk pairs to
// distinct aligned pairs. gfx950: tokens 0..7 x chunks {c, c+4} (c's bit 2 clear);
// XOR with row bits 0, 1 -> chunk bits 0, 1 and row bit 2 -> chunk bit 3 gives 16
// distinct chunks. (Family A's swizzle gives 2-way conflicts here.)
template <int ROW_BYTES>
SK_DEVICE int vd_x_swizzle(int row) {
#if SK_AMD_GFX950
  if constexpr (ROW_BYTES == 128) return row & 7;
  else return (row & 3) | ((row & 4) << 1);
#else
  return 2 * (row & 3);
#endif
}
// Sparse index of a lane: parity selects positions {0,1} (even) or {2,3} (odd), one
// nibble per 4-group of the lane's A operand (2 groups on gfx942 16-bit, 4 on gfx950
// 16-bit and gfx942 fp8, 8 on gfx950 fp8).
template <bool FP8>
SK_DEVICE u32 vd_meta(int lane) {
  const bool odd = lane & 1;
#if SK_AMD_GFX950
  if constexpr (FP8) return odd ? 0xEEEEEEEEu : 0x44444444u;
  return odd ? 0xEEEEu : 0x4444u;
#else
  if constexpr (FP8) return odd ? 0xEEEEu : 0x4444u;
  return odd ? 0xEEu : 0x44u;
#endif
}
// Collapsed output r (0, 1) of a lane: feature l%16, token 2(l/16) + r.
SK_DEVICE void vd_out_coord(int lane, int r, int& row, int& tok) { row = lane & 15; tok = 2 * (lane >> 4) + r; }
SK_DEVICE void vd_collapse(const float* acc, float* out) {
  out[0] = acc[0] + acc[1];
  out[1] = acc[2] + acc[3];
}
