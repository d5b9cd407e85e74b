// Semantics of the emulated AMD instructions that have cross-lane behaviour:
// the MFMAs of the matrix atom, and the LDS bank model.
#include <cmath>
#include <cstring>

#include "emu.h"

namespace emu {

double half_to_double(int dtype, uint16_t v) {
  if (dtype == 0) {  // bf16: the high half of an fp32
    uint32_t u = (uint32_t)v << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &v, 2);
  return (double)h;
}

uint16_t double_to_half(int dtype, double v) {
  if (dtype == 0) {
    float f = (float)v;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
  }
  _Float16 h = (_Float16)v;
  uint16_t r;
  std::memcpy(&r, &h, 2);
  return r;
}

// fp8 E4M3, both flavours (1 sign, 4 exponent, 3 mantissa bits):
//  * OCP (dtype 2; OCP 8-bit floating point specification v1.0, "E4M3"): bias 7,
//    subnormals m * 2^-9, S.1111.111 the only NaNs (no infinities), max 448, -0 exists;
//  * FNUZ (dtype 3; LLVM's Float8E4M3FNUZ, the gfx942 MFMA's fp8): bias 8,
//    subnormals m * 2^-10, 0x80 the only NaN (no -0, no infinities), max 240.
double fp8_to_double(int dtype, uint8_t v) {
  const bool fnuz = dtype == 3;
  const int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
  if (fnuz ? v == 0x80 : (e == 15 && m == 7)) return std::nan("");
  const int bias = fnuz ? 8 : 7;
  const double mag = e == 0 ? std::ldexp(m, 1 - bias - 3) : std::ldexp(8 + m, e - bias - 3);
  return s ? -mag : mag;
}

uint8_t double_to_fp8(int dtype, double v) {
  // The nearest finite code (ties to the even mantissa), by search: test data only.
  int best = -1;
  double best_d = 0;
  for (int c = 0; c < 256; ++c) {
    const double f = fp8_to_double(dtype, (uint8_t)c);
    if (std::isnan(f)) continue;
    const double d = std::fabs(f - v);
    // Ties: a zero of v's sign where the format has one, else the even mantissa.
    const bool better_tie = f == 0 ? std::signbit(f) == std::signbit(v) : (c & 1) == 0;
    if (best < 0 || d < best_d || (d == best_d && better_tie)) best = c, best_d = d;
  }
  return (uint8_t)best;
}

double elem_to_double(int dtype, uint32_t bits) {
  return is_fp8(dtype) ? fp8_to_double(dtype, (uint8_t)bits) : half_to_double(dtype, (uint16_t)bits);
}

// v_mfma_f32_16x16x16_{f16,bf16} (gfx942, k = 16), v_mfma_f32_16x16x32_{f16,bf16}
// (gfx950, k = 32) and v_mfma_f32_16x16x32_fp8_fp8 (FNUZ on gfx942, OCP on gfx950,
// k = 32): D(16x16) = A(16xk) . B(kx16) + C, wave64.
//
// Register layouts, lane l (AMD's CDNA3 and CDNA4 ISA reference guides, matrix
// instructions):
//  * gfx942 16x16x16: from the AMD matrix instruction calculator
//    (ROCm/amd_matrix_instruction_calculator @2ef9189, `-a cdna3 -d`):
//      A: 4 halves in 2 VGPRs, row l%16, k = 4*(l/16) + j, j = 0..3;
//      B: 4 halves in 2 VGPRs, column l%16, k = 4*(l/16) + j;
//      C/D: 4 f32, register i holds row 4*(l/16) + i, column l%16.
//  * gfx950 16x16x32 (CDNA4 ISA reference guide; the calculator does not cover
//    CDNA4; AITER's FlyDSL kernels and IREE's MMA layouts use the same):
//      A: 8 halves in 4 VGPRs, row l%16, k = 8*(l/16) + j, j = 0..7;
//      B: 8 halves in 4 VGPRs, column l%16, k = 8*(l/16) + j;
//      C/D: as above.
//  * 16x16x32 fp8 (both archs; CDNA3 ISA reference guide, and the matrix
//    instruction calculator `-a cdna3 -i v_mfma_f32_16x16x32_fp8_fp8`):
//      A: 8 bytes in 2 VGPRs, row l%16, k = 8*(l/16) + j, j = 0..7;
//      B: 8 bytes in 2 VGPRs, column l%16, k = 8*(l/16) + j;
//      C/D: as above.
//    Byte j is VGPR j/4, bits [8(j%4), +8) (the i64 operand, little-endian).
//  Element j of a 16-bit operand is the j-th element of the builtin's vector operand
//  (<4 x i16> / <8 x bfloat> ...): VGPR j/2, bits [15:0] for even j, [31:16] for
//  odd j (LLVM packs 16-bit vector elements little-endian into consecutive VGPRs;
//  emu/probe checks the element order the real atom passes).
//
// Numerics: the products of two bf16/f16/fp8 values are exact in double; the k
// products and C are summed in double and rounded once to fp32 (round to nearest
// even). The hardware's internal order and precision of that sum are not
// publicly specified, so the emulator matches it to about one fp32 rounding per
// instruction, not bit for bit.
void v_mfma_f32_16x16xk(int k, int dtype, const uint32_t* a, const uint32_t* b, const float* c, float* d,
                        Mutation m) {
  const int nv = mfma_vgprs(k, dtype);  // VGPRs per operand per lane
  const int kpl = k / 4;  // k elements per lane (a lane group holds kpl consecutive k)
  const int eb = elem_bytes(dtype), per_vgpr = 4 / eb;
  // Element j of a lane's operand registers `r`.
  auto elem = [&](const uint32_t* r, int j) { return elem_to_double(dtype, r[j / per_vgpr] >> (8 * eb * (j % per_vgpr))); };
  double A[16][32], B[32][16];
  for (int l = 0; l < 64; ++l) {
    for (int j = 0; j < kpl; ++j) {
      // A: lane l holds row l%16, k = kpl*(l/16) + j.
      int la = l, ja = j;
      if (m == Mutation::SwapALanes && (l == 5 || l == 21)) la = l == 5 ? 21 : 5;
      if (m == Mutation::AWrongKHalf) ja = j ^ (kpl / 2);
      A[l % 16][kpl * (l / 16) + j] = elem(a + la * nv, ja);
      // B: lane l holds column l%16, k = kpl*(l/16) + j.
      const int gb = m == Mutation::BKGroupReversed ? 3 - l / 16 : l / 16;
      B[kpl * gb + j][l % 16] = elem(b + l * nv, j);
    }
  }
  float out[64][4];
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < 4; ++r) {
      // D: lane l, register r holds row 4*(l/16) + r, column l%16.
      int row = 4 * (l / 16) + r, col = l % 16;
      if (m == Mutation::DTransposed) {
        const int t = row;
        row = col;
        col = t;
      }
      double s = 0;
      for (int kk = 0; kk < k; ++kk) s += A[row][kk] * B[kk][col];
      out[l][r] = (float)(s + (double)c[l * 4 + r]);
    }
  std::memcpy(d, out, sizeof out);
}

// v_smfmac_f32_16x16x32 (gfx942) / 16x16x64 (gfx950) in bf16/f16, and
// v_smfmac_f32_16x16x64_fp8_fp8 (gfx942, FNUZ) / 16x16x128_fp8_fp8 (gfx950, OCP), from
// the documented layouts (kernels/prelude/amd_layouts.h states them with their
// sources), written independently of the kernel's atom. k counts elements; the
// operands are 64 (gfx942) or 128 (gfx950) bytes of dense k, so each lane group g
// holds P = k/4 dense k of A: 4-groups i = 0 .. P/4 - 1 at k P*g + 4i, kept element e
// of the lane (group e/2) at byte e * element size, index nibble i for group i. B
// holds P k per lane: element e at k P*g + e (gfx942, and gfx950 map 1), or at
// (P/2)*g + e % (P/2) + (k/2)*(e / (P/2)) (gfx950 map 0).
bool v_smfmac_f32_16x16xk(int k, int dtype, int bmap, const uint32_t* a, const uint32_t* b, const uint32_t* idx,
                          const float* c, float* d) {
  const int eb = elem_bytes(dtype), per = 4 / eb, bits = 8 * eb;
  const int na = k * eb / 32, nb = k * eb / 16, P = k / 4;
  const bool gfx950 = k * eb == 128;
  auto elem = [&](const uint32_t* r, int e) { return elem_to_double(dtype, r[e / per] >> (bits * (e % per))); };
  double A[16][128] = {}, B[128][16] = {};
  bool ok = true;
  for (int l = 0; l < 64; ++l) {
    const int g = l / 16, i = l % 16;
    for (int grp = 0; grp < P / 4; ++grp) {
      const int nib = (idx[l] >> (4 * grp)) & 15, p0 = nib & 3, p1 = nib >> 2;
      if (p0 >= p1) ok = false;
      A[i][P * g + 4 * grp + p0] = elem(a + l * na, 2 * grp);
      A[i][P * g + 4 * grp + p1] = elem(a + l * na, 2 * grp + 1);
    }
    for (int e = 0; e < P; ++e) {
      const int kk = gfx950 && bmap == 0 ? P / 2 * g + e % (P / 2) + k / 2 * (e / (P / 2)) : P * g + e;
      B[kk][i] = elem(b + l * nb, e);
    }
  }
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < 4; ++r) {
      const int row = 4 * (l / 16) + r, col = l % 16;
      double s = 0;
      for (int kk = 0; kk < k; ++kk) s += A[row][kk] * B[kk][col];
      d[l * 4 + r] = (float)(s + (double)c[l * 4 + r]);
    }
  return ok;
}

BankStats lds_bank_cycles(const uint32_t* lane_addr, uint64_t active, int access_bytes, int banks) {
  BankStats st;
  st.instrs = 1;
  st.worst = 0;
  int per_cycle = banks * 4 / access_bytes;
  if (per_cycle < 1) per_cycle = 1;
  if (per_cycle > 64) per_cycle = 64;
  const int dwords = access_bytes >= 4 ? access_bytes / 4 : 1;
  for (int g0 = 0; g0 < 64; g0 += per_cycle) {
    // distinct dword addresses per bank within the group
    uint32_t seen[64 * 4];
    int nseen = 0;
    int count[64] = {0};
    bool any = false;
    for (int l = g0; l < g0 + per_cycle && l < 64; ++l) {
      if (!((active >> l) & 1)) continue;
      any = true;
      for (int q = 0; q < dwords; ++q) {
        const uint32_t dw = lane_addr[l] / 4 + q;
        bool dup = false;
        for (int s = 0; s < nseen; ++s)
          if (seen[s] == dw) {
            dup = true;
            break;
          }
        if (dup) continue;  // same address: broadcast
        seen[nseen++] = dw;
        ++count[dw % banks];
      }
    }
    if (!any) continue;
    int cyc = 1;
    for (int bk = 0; bk < banks; ++bk)
      if (count[bk] > cyc) cyc = count[bk];
    st.ideal += 1;
    st.cycles += cyc;
    if (cyc > st.worst) st.worst = cyc;
  }
  if (st.worst == 0) st.worst = 1;
  st.conflicted = st.cycles > st.ideal ? 1 : 0;
  return st;
}

}  // namespace emu
