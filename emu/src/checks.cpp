// Self-checks of the emulator, independent of the GEMM kernels:
//  1. each emulated matrix instruction against a direct matrix product, with the
//     operands packed by an independent transcription of the documented layouts,
//     and one-hot probes of every lane and register of A, B and C/D; the sparse
//     ones' one-hot pairing against what was observed on hardware;
//  2. that those checks fail under each deliberate breakage (Mutation);
//  3. the host prelude (target_host.h) against the real AMD prelude
//     (target_amdgcn.h) compiled for gfx942/gfx950 to LLVM IR (emu/probe/);
//  4. the atom contract of the prelude (atom_* + atom_mma_k32) on the emulator;
//  5. the LDS bank model on known patterns (so that "conflict-free" means something).
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "emu.h"
#include "report.h"

namespace emu {
namespace {

// ---- the documented layouts, transcribed again (not shared with isa.cpp) ----
// AMD's CDNA3 and CDNA4 ISA reference guides: for v_mfma_f32_16x16x{16,32}, a lane
// group g = l/16 holds k/4 consecutive k of row (A) / column (B) l%16, starting
// at (k/4)*g; D register r of lane l is row 4*(l/16)+r, column l%16. A 16-bit
// element j sits in VGPR j/2, low half first; an fp8 one (16x16x32_fp8_fp8) in
// VGPR j/4, byte j%4 (the matrix instruction calculator: "A k: 8 * floor(lane /
// 16) + 4 * GPR_num + floor(GPR_bits / 8)").
struct Doc {
  int k, dtype;
  int nv() const { return k * (is_fp8(dtype) ? 1 : 2) / 16; }
  int per_lane() const { return k / 4; }
  void a(int l, int j, int& row, int& kk) const { row = l % 16, kk = per_lane() * (l / 16) + j; }
  void b(int l, int j, int& col, int& kk) const { col = l % 16, kk = per_lane() * (l / 16) + j; }
  void d(int l, int r, int& row, int& col) const { row = 4 * (l / 16) + r, col = l % 16; }
};

uint32_t enc(int dtype, double v) { return is_fp8(dtype) ? double_to_fp8(dtype, v) : double_to_half(dtype, v); }

void put(uint32_t* regs, const Doc& doc, int l, int j, uint32_t v) {
  const int bits = is_fp8(doc.dtype) ? 8 : 16, per = 32 / bits;
  uint32_t& w = regs[l * doc.nv() + j / per];
  const int sh = bits * (j % per);
  const uint32_t mask = bits == 8 ? 0xffu : 0xffffu;
  w = (w & ~(mask << sh)) | ((v & mask) << sh);
}

// A value that identifies k exactly in the element type: k + 1 in 16 bits; in fp8
// (whose integers stop at 16) 2^(k/8 - 2) * (1 + (k%8)/8), distinct for k < 32.
double ident(int dtype, int kk) { return is_fp8(dtype) ? std::ldexp(8 + kk % 8, kk / 8 - 5) : kk + 1.0; }

// Packs A (16 x k), B (k x 16), C (16 x 16) by the documented layout, runs the
// instruction, unpacks D.
void run_packed(int k, int dtype, const double* A, const double* B, const double* C, double* D, Mutation m) {
  Doc doc{k, dtype};
  uint32_t ra[64 * 4] = {0}, rb[64 * 4] = {0};
  float rc[64 * 4], rd[64 * 4];
  for (int l = 0; l < 64; ++l)
    for (int j = 0; j < doc.per_lane(); ++j) {
      int row, col, kk;
      doc.a(l, j, row, kk);
      put(ra, doc, l, j, enc(dtype, A[row * k + kk]));
      doc.b(l, j, col, kk);
      put(rb, doc, l, j, enc(dtype, B[kk * 16 + col]));
    }
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < 4; ++r) {
      int row, col;
      doc.d(l, r, row, col);
      rc[l * 4 + r] = (float)C[row * 16 + col];
    }
  v_mfma_f32_16x16xk(k, dtype, ra, rb, rc, rd, m);
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < 4; ++r) {
      int row, col;
      doc.d(l, r, row, col);
      D[row * 16 + col] = rd[l * 4 + r];
    }
}

// Runs one instruction on raw lane registers and compares every lane/register
// of D with `expect(row, col)` decoded by the documented D layout.
template <typename F>
bool check_d(const float* rd, F expect, std::string& why) {
  const Doc doc{16, 0};  // the D layout is the same for every shape and type
  for (int l = 0; l < 64; ++l)
    for (int r = 0; r < 4; ++r) {
      int row, col;
      doc.d(l, r, row, col);
      const double e = expect(row, col);
      if ((double)rd[l * 4 + r] != e) {
        char m[160];
        std::snprintf(m, sizeof m, "lane %d reg %d (row %d col %d): %g, expected %g", l, r, row, col, rd[l * 4 + r], e);
        why = m;
        return false;
      }
    }
  return true;
}

const char* instr_name(int k, int dtype) {
  if (dtype == 2) return "v_mfma_f32_16x16x32_fp8_fp8 (OCP, gfx950)";
  if (dtype == 3) return "v_mfma_f32_16x16x32_fp8_fp8 (FNUZ, gfx942)";
  if (k == 16) return dtype == 0 ? "v_mfma_f32_16x16x16_bf16" : "v_mfma_f32_16x16x16_f16";
  return dtype == 0 ? "v_mfma_f32_16x16x32_bf16" : "v_mfma_f32_16x16x32_f16";
}

// One-hot probes of one operand (A, or B): every lane, VGPR and element of it in
// turn holds 1, the other operand holds ident(k) at each k, so D must hold
// ident(k0) in the probed element's row (A) or column (B) and 0 elsewhere.
// Returns the first failure, or "".
std::string one_hot(int k, int dtype, Mutation m, bool a_side) {
  Doc doc{k, dtype};
  const uint32_t one = enc(dtype, 1.0);
  // Where element j of lane l of an operand sits: its row (A) or column (B), and k.
  auto place = [&](bool a, int l, int j, int& at, int& kk) {
    if (a)
      doc.a(l, j, at, kk);
    else
      doc.b(l, j, at, kk);
  };
  for (int l = 0; l < 64; ++l)
    for (int j = 0; j < doc.per_lane(); ++j) {
      uint32_t ra[64 * 4] = {0}, rb[64 * 4] = {0};
      float rc[64 * 4] = {0}, rd[64 * 4];
      uint32_t* const probed = a_side ? ra : rb;
      uint32_t* const other = a_side ? rb : ra;
      put(probed, doc, l, j, one);
      for (int lo = 0; lo < 64; ++lo)
        for (int jo = 0; jo < doc.per_lane(); ++jo) {
          int at, kk;
          place(!a_side, lo, jo, at, kk);
          put(other, doc, lo, jo, enc(dtype, ident(dtype, kk)));
        }
      v_mfma_f32_16x16xk(k, dtype, ra, rb, rc, rd, m);
      int at0, k0;
      place(a_side, l, j, at0, k0);
      std::string w;
      if (!check_d(rd, [&](int row, int col) { return (a_side ? row : col) == at0 ? ident(dtype, k0) : 0.0; }, w)) {
        char msg[240];
        std::snprintf(msg, sizeof msg, "%s lane %d element %d (%s %d, k %d): %s", a_side ? "A" : "B", l, j,
                      a_side ? "row" : "col", at0, k0, w.c_str());
        return msg;
      }
    }
  return "";
}

// The suite for one instruction; returns the failures (names + reasons).
std::vector<std::pair<std::string, std::string>> isa_suite(int k, int dtype, Mutation m) {
  std::vector<std::pair<std::string, std::string>> fails;
  Doc doc{k, dtype};
  std::mt19937_64 rng(1234 + k + dtype);
  // 1. random products (small dyadic values, exact in every element type: every
  // product and sum is exact)
  {
    std::uniform_int_distribution<int> q(-8, 8);
    std::string why;
    for (int trial = 0; trial < 8 && why.empty(); ++trial) {
      std::vector<double> A(16 * k), B(k * 16), C(256), D(256);
      for (auto& v : A) v = q(rng) / 4.0;
      for (auto& v : B) v = q(rng) / 8.0;
      for (auto& v : C) v = q(rng) / 2.0;
      run_packed(k, dtype, A.data(), B.data(), C.data(), D.data(), m);
      for (int i = 0; i < 16 && why.empty(); ++i)
        for (int n = 0; n < 16; ++n) {
          double s = C[i * 16 + n];
          for (int kk = 0; kk < k; ++kk) s += A[i * k + kk] * B[kk * 16 + n];
          if (s != D[i * 16 + n]) {
            char msg[120];
            std::snprintf(msg, sizeof msg, "trial %d D[%d][%d] = %g, direct product %g", trial, i, n, D[i * 16 + n], s);
            why = msg;
            break;
          }
        }
    }
    if (!why.empty()) fails.emplace_back("random products", why);
  }
  // 2. one-hot A: every lane, VGPR and half; B[kk][col] = kk + 1 identifies k.
  // 3. one-hot B: A[row][kk] = kk + 1.
  for (const bool a_side : {true, false}) {
    const std::string why = one_hot(k, dtype, m, a_side);
    if (!why.empty()) fails.emplace_back(a_side ? "one-hot A" : "one-hot B", why);
  }
  // 4. one-hot C, A = B = 0: D is C, register for register.
  {
    std::string why;
    for (int l = 0; l < 64 && why.empty(); ++l)
      for (int r = 0; r < 4 && why.empty(); ++r) {
        uint32_t ra[64 * 4] = {0}, rb[64 * 4] = {0};
        float rc[64 * 4] = {0}, rd[64 * 4];
        rc[l * 4 + r] = 1.f;
        v_mfma_f32_16x16xk(k, dtype, ra, rb, rc, rd, m);
        for (int i = 0; i < 256; ++i)
          if (rd[i] != (i == l * 4 + r ? 1.f : 0.f)) {
            char msg[120];
            std::snprintf(msg, sizeof msg, "C lane %d reg %d reaches D lane %d reg %d", l, r, i / 4, i % 4);
            why = msg;
            break;
          }
      }
    if (!why.empty()) fails.emplace_back("one-hot C", why);
  }
  // 5. D layout: A[row][0] = row + 1, B[0][col] = col + 1, all else 0.
  {
    uint32_t ra[64 * 4] = {0}, rb[64 * 4] = {0};
    float rc[64 * 4] = {0}, rd[64 * 4];
    for (int l = 0; l < 64; ++l)
      for (int j = 0; j < doc.per_lane(); ++j) {
        int row, col, kk;
        doc.a(l, j, row, kk);
        if (kk == 0) put(ra, doc, l, j, enc(dtype, row + 1));
        doc.b(l, j, col, kk);
        if (kk == 0) put(rb, doc, l, j, enc(dtype, col + 1));
      }
    v_mfma_f32_16x16xk(k, dtype, ra, rb, rc, rd, m);
    std::string w;
    if (!check_d(rd, [](int row, int col) { return (row + 1.0) * (col + 1.0); }, w)) fails.emplace_back("D layout", w);
  }
  return fails;
}

// The fp8 decode against the formats' defining values (OCP 8-bit floating point
// specification v1.0, E4M3; LLVM APFloat's Float8E4M3FNUZ): extremes, 1.0, the
// subnormal and normal boundaries, zeros and NaNs; every finite code is one value
// (positive codes increase), and the encoder used for test data inverts the decoder.
void run_fp8_decode_selftests(Report& rep) {
  struct Spot {
    uint8_t code;
    double value;  // NaN: a NaN code
  };
  const double nan = std::nan("");
  const std::pair<int, std::vector<Spot>> formats[] = {
      {2, {{0x00, 0.0}, {0x01, std::ldexp(1, -9)}, {0x07, 7 * std::ldexp(1, -9)}, {0x08, std::ldexp(1, -6)},
           {0x38, 1.0}, {0x77, 240.0}, {0x78, 256.0}, {0x7e, 448.0}, {0xfe, -448.0}, {0xb8, -1.0}, {0x7f, nan},
           {0xff, nan}}},
      {3, {{0x00, 0.0}, {0x01, std::ldexp(1, -10)}, {0x08, std::ldexp(1, -7)}, {0x40, 1.0}, {0x78, 128.0},
           {0x7f, 240.0}, {0xff, -240.0}, {0xc0, -1.0}, {0x80, nan}}},
  };
  for (const auto& [dt, spots] : formats) {
    const std::string fmt = dt == 2 ? "OCP E4M3" : "E4M3 FNUZ";
    std::string why;
    for (const Spot& sp : spots) {
      const double got = fp8_to_double(dt, sp.code);
      if (std::isnan(sp.value) ? !std::isnan(got) : got != sp.value) {
        char m[96];
        std::snprintf(m, sizeof m, "code 0x%02x decodes to %g, expected %g", sp.code, got, sp.value);
        why = m;
        break;
      }
    }
    rep.result(why.empty(), "fp8 decode " + fmt + ": defining values", why);
    int nans = 0;
    bool increasing = true, inverse = true;
    for (int c = 0; c < 256; ++c) {
      const double v = fp8_to_double(dt, (uint8_t)c);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      if (c > 0 && c < 0x80 && !(v > fp8_to_double(dt, (uint8_t)(c - 1)))) increasing = false;
      if (double_to_fp8(dt, v) != c) inverse = false;
    }
    const int want_nans = dt == 2 ? 2 : 1;
    char m[120];
    std::snprintf(m, sizeof m, "%d NaN codes (expected %d), positive codes %s, encoder %s", nans, want_nans,
                  increasing ? "increase" : "do NOT increase", inverse ? "inverts the decoder" : "does NOT invert");
    rep.result(nans == want_nans && increasing && inverse, "fp8 decode " + fmt + ": every code", m);
  }
}

// The sparse instructions' pairing, one-hot, against what was observed on hardware
// rather than against the logical layout isa.cpp is written from. A's kept slot a
// (0 .. S-1, S kept elements per lane) of lane group ag, under the {0,1} (even) or
// {2,3} (odd) index in every nibble, multiplies B's slot b of lane group bg:
//  * gfx942 (the CDNA3 matrix instruction calculator) and the gfx950 "map 1"
//    hypothesis: bg = ag, b = 4(a/2) + a%2 (+2 odd);
//  * gfx950 (map 0; the one-hot probes on MI350 published in github.com/efric/
//    hip-matmul, GFX950_SMFMAC_16x16x64.md, for 16x16x64 f16 and 16x16x128 fp8):
//    bg = 2(ag%2) + a/(S/2), b = S(ag/2) + 4((a%(S/2))/2) + a%2 (+2 odd).
// B holds a distinct value per (lane group, slot), the same in every column, A a
// single 1.0, so row l_a%16 of D names the B slot paired with A's slot. Returns ""
// when every slot pairs as the relation `probe_map` (0 or 1) says.
std::string smfmac_pairing(int k, int dt, int bmap, int probe_map) {
  const int eb = elem_bytes(dt), per = 4 / eb, bits = 8 * eb;
  const int na = k * eb / 32, nb = 2 * na, S = na * per, P = nb * per;
  const bool gfx950 = k * eb == 128;
  auto bval = [&](int bg, int e) {
    const int id = bg * P + e;  // < 128
    if (!is_fp8(dt)) return id + 1.0;
    return fp8_to_double(dt, (uint8_t)(id < 100 ? 1 + id : 0x81 + (id - 100)));  // distinct, finite
  };
  auto set = [&](uint32_t* regs, int nv, int l, int e, uint32_t v) {
    uint32_t& w = regs[l * nv + e / per];
    const int sh = bits * (e % per);
    const uint32_t mask = eb == 1 ? 0xffu : 0xffffu;
    w = (w & ~(mask << sh)) | ((v & mask) << sh);
  };
  for (int odd = 0; odd < 2; ++odd)
    for (int ag = 0; ag < 4; ++ag)
      for (int a = 0; a < S; ++a) {
        uint32_t ra[64 * 4] = {0}, rb[64 * 8] = {0}, idx[64];
        float rc[64 * 4] = {0}, rd[64 * 4];
        for (int l = 0; l < 64; ++l) {
          idx[l] = 0;
          for (int g = 0; g < S / 2; ++g) idx[l] |= (odd ? 0xEu : 0x4u) << (4 * g);
          for (int e = 0; e < P; ++e) set(rb, nb, l, e, enc(dt, bval(l / 16, e)));
        }
        const int row = (5 * ag + a) % 16, la = 16 * ag + row;
        set(ra, na, la, a, enc(dt, 1.0));
        v_smfmac_f32_16x16xk(k, dt, bmap, ra, rb, idx, rc, rd);
        int bg, b;
        if (!gfx950 || probe_map == 1) {
          bg = ag, b = 4 * (a / 2) + a % 2 + 2 * odd;
        } else {
          bg = 2 * (ag % 2) + a / (S / 2), b = S * (ag / 2) + 4 * ((a % (S / 2)) / 2) + a % 2 + 2 * odd;
        }
        const float want = (float)bval(bg, b);
        for (int l = 0; l < 64; ++l)
          for (int r = 0; r < 4; ++r) {
            const int drow = 4 * (l / 16) + r;
            const float w = drow == row ? want : 0.f;
            if (rd[l * 4 + r] != w) {
              char m[200];
              std::snprintf(m, sizeof m, "%s index, A slot %d of lane group %d: D row %d column %d = %g, expected %g (B slot %d of lane group %d)",
                            odd ? "{2,3}" : "{0,1}", a, ag, drow, l % 16, rd[l * 4 + r], w, b, bg);
              return m;
            }
          }
      }
  return "";
}

void run_smfmac_selftests(Report& rep) {
  struct Instr {
    int k, dtype;
    const char* name;
  };
  static const Instr instrs[] = {
      {32, 0, "v_smfmac_f32_16x16x32_bf16 (gfx942)"},   {32, 1, "v_smfmac_f32_16x16x32_f16 (gfx942)"},
      {64, 3, "v_smfmac_f32_16x16x64_fp8_fp8 (FNUZ, gfx942)"},
      {64, 0, "v_smfmac_f32_16x16x64_bf16 (gfx950)"},   {64, 1, "v_smfmac_f32_16x16x64_f16 (gfx950)"},
      {128, 2, "v_smfmac_f32_16x16x128_fp8_fp8 (OCP, gfx950)"},
  };
  for (const Instr& in : instrs) {
    const bool gfx950 = in.k * elem_bytes(in.dtype) == 128;
    std::string why = smfmac_pairing(in.k, in.dtype, 0, 0);
    rep.result(why.empty(), std::string("isa ") + in.name + ": one-hot pairing as observed on hardware", why);
    if (!gfx950) continue;
    // The disputed gfx950 B map: map 1 is the other relation, and the check tells them apart.
    why = smfmac_pairing(in.k, in.dtype, 1, 1);
    rep.result(why.empty(), std::string("isa ") + in.name + ": one-hot pairing, B map 1 as its hypothesis", why);
    const bool told_apart = !smfmac_pairing(in.k, in.dtype, 0, 1).empty();
    rep.result(told_apart, std::string("isa ") + in.name + ": pairing check tells the two B maps apart",
               told_apart ? "" : "map 0 passes map 1's relation");
  }
}

}  // namespace

void run_isa_selftests(Report& rep) {
  // Every instruction the atoms use: (k, dtype).
  static const std::pair<int, int> instrs[] = {{16, 0}, {16, 1}, {32, 0}, {32, 1}, {32, 2}, {32, 3}};
  for (auto [k, dt] : instrs) {
    auto fails = isa_suite(k, dt, Mutation::None);
    const char* parts[] = {"random products", "one-hot A", "one-hot B", "one-hot C", "D layout"};
    for (const char* p : parts) {
      std::string why;
      for (auto& f : fails)
        if (f.first == p) why = f.second;
      rep.result(why.empty(), std::string("isa ") + instr_name(k, dt) + ": " + p, why);
    }
    for (Mutation m : ALL_MUTATIONS) {
      auto mf = isa_suite(k, dt, m);
      std::string caught;
      for (auto& f : mf) caught += (caught.empty() ? "" : ", ") + f.first;
      rep.result(!mf.empty(), std::string("isa ") + instr_name(k, dt) + ": self-test detects mutation " +
                                  mutation_name(m),
                 mf.empty() ? "NOT detected" : "detected by " + caught);
    }
  }
  run_fp8_decode_selftests(rep);
  run_smfmac_selftests(rep);
}

// ---- LLVM IR of the AMD probes ----
namespace {

struct IrFunction {
  bool found = false;
  bool has_ret = false;
  uint32_t ret = 0;
  std::vector<ProbeEvent> events;
};

std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == '>' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  for (auto& a : out) {
    size_t b = a.find_first_not_of(' ');
    a = b == std::string::npos ? "" : a.substr(b);
  }
  return out;
}

// "<4 x i16> <i16 1, i16 2, ...>" -> {1, 2, ...}; 16-bit patterns. A scalar
// "i64 N" (the fp8 MFMA's operand) -> its four 16-bit units, low first.
std::vector<int> vector_elems(const std::string& arg) {
  std::vector<int> v;
  if (arg.rfind("i64 ", 0) == 0) {
    const uint64_t x = std::strtoull(arg.c_str() + 4, nullptr, 10);
    if (arg.size() > 4 && (arg[4] == '-' || std::isdigit((unsigned char)arg[4])))
      for (int i = 0; i < 4; ++i) v.push_back((int)((x >> (16 * i)) & 0xffff));
    return v;
  }
  size_t p = arg.find('>');
  if (p == std::string::npos) return v;
  size_t o = arg.find('<', p);
  size_t c = arg.rfind('>');
  if (o == std::string::npos || c == std::string::npos || c <= o) return v;
  for (auto& e : split_args(arg.substr(o + 1, c - o - 1))) {
    size_t sp = e.rfind(' ');
    std::string t = sp == std::string::npos ? e : e.substr(sp + 1);
    long x;
    if (t.size() > 3 && t[0] == '0' && t[1] == 'x' && (t[2] == 'H' || t[2] == 'R'))
      x = std::strtol(t.c_str() + 3, nullptr, 16);
    else
      x = std::strtol(t.c_str(), nullptr, 10);
    v.push_back((int)(x & 0xffff));
  }
  return v;
}

std::string call_args(const std::string& line, size_t open) {
  int depth = 0;
  for (size_t i = open; i < line.size(); ++i) {
    if (line[i] == '(') ++depth;
    if (line[i] == ')' && --depth == 0) return line.substr(open + 1, i - open - 1);
  }
  return "";
}

IrFunction parse_ir_function(const std::string& ir, const std::string& name) {
  IrFunction f;
  size_t pos = ir.find("@" + name + "(");
  while (pos != std::string::npos) {
    size_t ls = ir.rfind('\n', pos);
    ls = ls == std::string::npos ? 0 : ls + 1;
    if (ir.compare(ls, 7, "define ") == 0) break;
    pos = ir.find("@" + name + "(", pos + 1);
  }
  if (pos == std::string::npos) return f;
  f.found = true;
  size_t end = ir.find("\n}", pos);
  std::istringstream body(ir.substr(pos, end - pos));
  std::string line;
  std::map<std::string, int> results;
  while (std::getline(body, line)) {
    size_t r = line.find("ret i32 ");
    if (r != std::string::npos) {
      f.has_ret = true;
      f.ret = (uint32_t)std::strtoll(line.c_str() + r + 8, nullptr, 10);
    }
    {
      // Agent-scope fences and atomics (workgroup-scope fences belong to barrier()).
      static const std::pair<const char*, int> orders[] = {
          {" monotonic", __ATOMIC_RELAXED}, {" acquire", __ATOMIC_ACQUIRE}, {" release", __ATOMIC_RELEASE},
          {" acq_rel", __ATOMIC_ACQ_REL},   {" seq_cst", __ATOMIC_SEQ_CST}};
      const bool agent = line.find("syncscope(\"agent\")") != std::string::npos;
      const bool fence = line.find(" fence ") != std::string::npos || line.rfind("fence ", 0) == 0 ||
                         line.find("  fence") == 0;
      const bool rmw = line.find("atomicrmw add ") != std::string::npos;
      const bool st = line.find("store atomic ") != std::string::npos;
      if ((fence || rmw || st) && line.find("syncscope(\"workgroup\")") == std::string::npos) {
        int order = -1;
        for (auto& o : orders)
          if (line.find(o.first) != std::string::npos) order = o.second;
        ProbeEvent e;
        if (fence) e.instr = std::string("fence.") + (order == __ATOMIC_RELEASE ? "release" : "acquire") + ".agent";
        else if (rmw) e.instr = "atomic.add.agent";
        else e.instr = "atomic.store.agent";
        if (!agent) e.instr += "(not agent scope)";
        e.imm = fence ? 0 : order;
        f.events.push_back(e);
        continue;
      }
    }
    size_t at = line.find("@llvm.amdgcn.");
    if (at == std::string::npos) continue;
    size_t open = line.find('(', at);
    std::string instr = line.substr(at + 13, open - at - 13);
    std::vector<std::string> args = split_args(call_args(line, open));
    ProbeEvent e;
    if (instr.rfind("mfma.", 0) == 0 && args.size() >= 3) {
      e.instr = instr;
      e.a = vector_elems(args[0]);
      e.b = vector_elems(args[1]);
      size_t pc = args[2].find('%');
      e.c_from = pc == std::string::npos ? -1 : (results.count(args[2].substr(pc)) ? results[args[2].substr(pc)] : -2);
      for (size_t i = 3; i < args.size(); ++i)
        if (args[i] != "i32 0") e.imm = -1;  // cbsz / abid / blgp must be 0
    } else if (instr == "global.load.lds" && args.size() >= 3) {
      e.instr = instr;
      e.imm = std::atoi(args[2].c_str() + 4);  // "i32 N"
    } else if (instr == "s.waitcnt" && !args.empty()) {
      const int imm = std::atoi(args[0].c_str() + 4);
      e.instr = "s.waitcnt.vmcnt";
      e.imm = (imm & 15) | (((imm >> 14) & 3) << 4);  // gfx9 vmcnt: bits [3:0] and [15:14]
    } else if (instr == "s.barrier") {
      e.instr = instr;
    } else {
      continue;
    }
    size_t eq = line.find(" = ");
    size_t pct = line.find('%');
    if (eq != std::string::npos && pct != std::string::npos && pct < eq)
      results[line.substr(pct, eq - pct)] = (int)f.events.size();
    f.events.push_back(e);
  }
  return f;
}

std::string describe(const std::vector<ProbeEvent>& ev) {
  std::string s;
  for (auto& e : ev) {
    s += "[" + e.instr;
    if (!e.a.empty()) {
      s += " a=";
      for (int x : e.a) s += std::to_string(x) + ",";
      s += " b=";
      for (int x : e.b) s += std::to_string(x) + ",";
      s += " c<-" + std::to_string(e.c_from);
    }
    s += " imm=" + std::to_string(e.imm) + "] ";
  }
  return s;
}

bool same(const ProbeEvent& x, const ProbeEvent& y) {
  return x.instr == y.instr && x.a == y.a && x.b == y.b && x.c_from == y.c_from && x.imm == y.imm;
}

}  // namespace

void run_probe_parity(Report& rep) {
  for (const ArchTable& t : registry()) {
    if (!t.variant.empty()) continue;
    const std::string arch = arch_info(t.arch).name;
    const std::string path = std::string(SKEMU_BINARY_DIR) + "/probe_" + arch + ".ll";
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string ir = ss.str();
    if (ir.empty()) {
      rep.result(false, "prelude parity " + arch, "cannot read " + path);
      continue;
    }
    for (const ProbeFn& p : t.probe_fns) {
      IrFunction f = parse_ir_function(ir, p.name);
      const uint32_t host = p.fn();
      char m[160];
      std::snprintf(m, sizeof m, "target_amdgcn.h gives %u, target_host.h %u", f.ret, host);
      rep.result(f.found && f.has_ret && f.ret == host, "prelude parity " + arch + ": " + p.name,
                 !f.found ? "probe missing from the IR" : !f.has_ret ? "IR did not fold to a constant" : m);
    }
    for (const ProbeKernel& p : t.probe_kernels) {
      IrFunction f = parse_ir_function(ir, p.name);
      probe_log().clear();
      p.fn();
      std::vector<ProbeEvent> host = probe_log();
      probe_log().clear();
      std::vector<ProbeEvent> h2 = host;
      bool ok = f.found && !f.events.empty() && f.events.size() == h2.size();
      for (size_t i = 0; ok && i < h2.size(); ++i) ok = same(f.events[i], h2[i]);
      rep.result(ok, "prelude parity " + arch + ": " + p.name,
                 ok ? describe(h2) : "amdgcn " + describe(f.events) + " | host " + describe(h2));
    }
  }
}

void run_bank_selftests(Report& rep) {
  struct T {
    const char* what;
    int banks, bytes;
    uint32_t (*addr)(int lane);
    uint64_t expect_cycles;
  };
  // Expected cycles from the LDS bank rules (README.md, "LDS bank model"): gfx942
  // serves 8 lanes of a 16-byte read per cycle over 32 banks, gfx950 16 lanes over 64.
  static const T tests[] = {
      {"gfx942 ds_read_b128, 64 lanes contiguous", 32, 16, [](int l) { return (uint32_t)l * 16; }, 8},
      {"gfx942 ds_read_b128, all lanes one address (broadcast)", 32, 16, [](int) { return 256u; }, 8},
      {"gfx942 ds_read_b128, row stride 128 B, no swizzle (8-way)", 32, 16, [](int l) { return (uint32_t)l * 128; }, 64},
      {"gfx942 ds_read_b128, row stride 128 B, target_swizzle<128>", 32, 16,
       [](int l) { return (uint32_t)(l * 128 + 16 * ((((l & 1) << 2) | ((l >> 1) & 3)))); }, 8},
      {"gfx942 global_load_lds dword, 64 lanes", 32, 4, [](int l) { return (uint32_t)l * 4; }, 2},
      {"gfx950 ds_read_b128, 64 lanes contiguous", 64, 16, [](int l) { return (uint32_t)l * 16; }, 4},
      {"gfx950 ds_read_b128, row stride 128 B, no swizzle (8-way)", 64, 16, [](int l) { return (uint32_t)l * 128; }, 32},
      {"gfx950 ds_read_b128, row stride 256 B, no swizzle (16-way)", 64, 16, [](int l) { return (uint32_t)l * 256; }, 64},
      {"gfx950 ds_read_b128, row stride 128 B, target_swizzle<128>", 64, 16,
       [](int l) { return (uint32_t)(l * 128 + 16 * ((l >> 1) & 7)); }, 4},
      {"gfx950 ds_read_b128, row stride 256 B, target_swizzle<256>", 64, 16,
       [](int l) { return (uint32_t)(l * 256 + 16 * (l & 15)); }, 4},
      {"gfx950 global_load_lds dwordx4, 64 lanes", 64, 16, [](int l) { return (uint32_t)l * 16; }, 4},
  };
  for (const T& t : tests) {
    uint32_t a[64];
    for (int l = 0; l < 64; ++l) a[l] = t.addr(l);
    BankStats b = lds_bank_cycles(a, ~0ull, t.bytes, t.banks);
    char m[80];
    std::snprintf(m, sizeof m, "%llu cycles, expected %llu", (unsigned long long)b.cycles,
                  (unsigned long long)t.expect_cycles);
    rep.result(b.cycles == t.expect_cycles, std::string("bank model: ") + t.what, m);
  }
}

void run_atom_contract(Report& rep) {
  for (const ArchTable& t : registry()) {
    if (!t.variant.empty()) continue;
    for (int dt = 0; dt < 4; ++dt) {
      if (!t.atom_kernel[dt]) continue;  // fp8: the arch's own flavour only
      const int steps = 3, K = 32 * steps, per = 2 / elem_bytes(dt);  // K in 16-bit units
      std::mt19937_64 rng(99 + dt);
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<uint16_t> A(16 * K), B(16 * K);
      // Element i of a row-major operand (fp8: byte i).
      auto get = [&](const std::vector<uint16_t>& v, int i) {
        return is_fp8(dt) ? fp8_to_double(dt, ((const uint8_t*)v.data())[i]) : half_to_double(dt, v[(size_t)i]);
      };
      for (auto* v : {&A, &B})
        for (int i = 0; i < 16 * K * per; ++i) {
          if (is_fp8(dt)) ((uint8_t*)v->data())[i] = double_to_fp8(dt, u(rng));
          else (*v)[(size_t)i] = double_to_half(dt, u(rng));
        }
      std::vector<float> D(256, NAN);
      AtomParams p{A.data(), B.data(), D.data(), steps};
      std::vector<Region> regions = {{Region::ReadOnly, A.data(), A.size() * 2, "A"},
                                     {Region::ReadOnly, B.data(), B.size() * 2, "B"}};
      KernelInfo ki{t.arch, dt, Config{16, 16, 64, 2, 1, 1, 1, true}, "atom", "", t.atom_kernel[dt], 0, 0};
      LaunchResult r = launch(ki, &p, sizeof p, 1, 1, regions, LaunchOptions{});
      double err = 0, ref2 = 0;
      for (int i = 0; i < 16; ++i)
        for (int n = 0; n < 16; ++n) {
          double s = 0;
          for (int kk = 0; kk < K * per; ++kk) s += get(A, i * K * per + kk) * get(B, n * K * per + kk);
          err += (D[i * 16 + n] - s) * (D[i * 16 + n] - s);
          ref2 += s * s;
        }
      const double rel = std::sqrt(err / ref2);
      static const char* names[] = {"bf16", "f16", "e4m3", "e4m3fnuz"};
      char m[120];
      std::snprintf(m, sizeof m, "relative error %.2e over %d k%s", rel, K * per,
                    r.ok() ? "" : (" " + r.errors[0]).c_str());
      rep.result(r.ok() && rel < 1e-6, std::string("atom contract ") + arch_info(t.arch).name + " " + names[dt] +
                                           " (atom_*_piece, atom_mma_k32, atom_acc_coord)",
                 m);
    }
  }
}

// The shared activation prefetch's assignment (gemm_common.h, shared_x_pieces), as
// each target's instance file compiles it.
void run_prefetch_check(Report& rep) {
  for (const ArchTable& t : registry()) {
    if (!t.variant.empty() || !t.prefetch_check) continue;
    const std::string err = t.prefetch_check();
    rep.result(err.empty(), std::string("shared activation prefetch ") + arch_info(t.arch).name +
                                " (each piece of a tile row once, in bounds)", err);
  }
}

}  // namespace emu
