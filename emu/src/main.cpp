// skemu: runs the AMD kernels of skinnylt on the wave-level emulator and checks
// them. Prints one line per failure (every line with -v), the bank-conflict
// report, and finally "N passed, M failed". Exit status 0 only if nothing failed.
//
// usage: skemu [-v] [-j threads] [--filter substring] [--allow file] [--seed n]
// (--seed changes every input and schedule; the default, 0, is what CI runs)
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "emu.h"
#include "mutants.h"
#include "report.h"

namespace emu {
namespace {

// ---- crash reporting (guard pages turn out-of-bounds plain accesses into faults) ----
thread_local const char* t_job = "setup";
uint64_t g_seed = 0;  // --seed
void on_fatal(int sig) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf,
                        "\nskemu: fatal signal %d while running %s (an out-of-bounds access hits a guard page)\n", sig,
                        t_job);
  if (n > 0) (void)!write(2, buf, (size_t)n);
  _exit(3);
}
void install_fatal_handlers() {
  static thread_local std::vector<char> alt(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  sigaltstack(&ss, nullptr);
  struct sigaction sa{};
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  sigaction(SIGFPE, &sa, nullptr);
  sigaction(SIGILL, &sa, nullptr);
}

// ---- buffers ending at a PROT_NONE page ----
struct GBuf {
  unsigned char* map = nullptr;
  size_t map_len = 0;
  unsigned char* p = nullptr;
  size_t bytes = 0, body = 0;
  GBuf() = default;
  explicit GBuf(size_t n) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    bytes = n;
    body = (n + 15) & ~(size_t)15;
    map_len = (body + page - 1) / page * page + page;
    map = (unsigned char*)mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(map + map_len - page, page, PROT_NONE);
    p = map + map_len - page - body;
    std::memset(p, 0xa5, body);  // canary in the slack after `bytes`
  }
  GBuf(const GBuf&) = delete;
  GBuf& operator=(const GBuf&) = delete;
  GBuf(GBuf&& o) noexcept { *this = std::move(o); }
  GBuf& operator=(GBuf&& o) noexcept {
    std::swap(map, o.map);
    std::swap(map_len, o.map_len);
    std::swap(p, o.p);
    std::swap(bytes, o.bytes);
    std::swap(body, o.body);
    return *this;
  }
  ~GBuf() {
    if (map) munmap(map, map_len);
  }
  bool slack_intact() const {
    for (size_t i = bytes; i < body; ++i)
      if (p[i] != 0xa5) return false;
    return true;
  }
  template <typename T>
  T* as() const {
    return (T*)p;
  }
};

uint64_t fnv(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// ---- shapes ----
struct Case {
  int m, n, k, split;
  bool bias;
  float alpha;
  int ldw_pad, ldx_pad, ldy_pad;
  const char* what;
  // Split-K order check: one K block per split; the partials of splits 0 and 1
  // cancel exactly and dwarf split 2's (2^18 : 1), so any other association of the
  // sum than the kernel's fixed one changes the result visibly. Launched with the
  // last arriver forced to split S-1, then to split 0, then at random: the bits
  // must not change. (No accuracy check: a fixed association other than
  // left-to-right would be legitimate and lose split 2's digits.)
  bool cancel = false;
  // The epilogue (kernels/gemm_params.h): beta * C with C apart from Y (C_APART,
  // ldc = ldy + 8; all NaN when beta = 0, so a read would show) or Y itself
  // (C_IN_PLACE), EPI_* flags, alpha and beta as device scalars.
  float beta = 0.f;
  int c_mode = 0;
  int epi = 0;
  bool dev_scalars = false;
  // Batch-invariant partition: K split in units of this many K blocks, partials
  // added in split order (SPLIT_IN_ORDER).
  int split_unit = 1;
  // fp8 kernels only: the operands' scales (SCALES_*) and an f16 output (OUT_F16;
  // else bf16). m, n, k and the paddings count 16-bit units, as GemmParams does:
  // an fp8 row holds twice the elements.
  int scales = 0;
  bool out_f16 = false;
};
// An fp8 case's scales: none; per-tensor A and B; per-output-feature A and
// per-token B (OUTER_VEC); per-tensor A with per-token B.
enum { SCALES_NONE, SCALES_TENSOR, SCALES_VECTORS, SCALES_MIXED, SCALES_KINDS };
enum { C_NONE, C_APART, C_IN_PLACE };

Case batch_invariant(Case c, int split_unit) {
  c.split_unit = split_unit;
  c.epi |= SPLIT_IN_ORDER;
  return c;
}

Case with_epilogue(Case c, float beta, int c_mode, int epi, bool dev_scalars) {
  c.beta = beta;
  c.c_mode = c_mode;
  c.epi = epi;
  c.dev_scalars = dev_scalars;
  return c;
}

std::vector<Case> cases_for(const KernelInfo& k) {
  const Config& c = k.cfg;
  const int TM = c.tile_m, TN = c.tile_n, TK = c.tile_k, ST = c.stages;
  std::vector<Case> cases = {
      {TM, 2 * TN, 2 * TK, 1, false, 1.0f, 0, 0, 0, "whole tiles, split 1"},
      {std::max(1, TM - 5), TN + 40, 5 * TK + 24, 2, true, 0.5f, 8, 16, 3, "M/N/K tails, split 2, bias, strides"},
      {1, TN / 2 + 8, 24, 3, true, 1.0f, 0, 0, 0, "M=1, K=24 < tile_k, split 3 (empty splits), bias"},
      {TM + 3, 3 * TN - 8, (2 * ST + 3) * TK + 8, 3, true, -1.25f, 0, 8, 0, "2 M tiles, ring wraps, split 3, bias"},
      {2 * TM + 7, TN, (ST + 2) * TK + 56, 1, true, 1.0f, 16, 0, 5, "3 M tiles, ring wraps, split 1, bias"},
      {3, 24, 3 * TK - 8, 2, false, 2.0f, 0, 0, 0, "N=24 (partial atom), split 2"},
      {TM + 3, TN + 16, 3 * TK, 3, true, 1.0f, 0, 0, 0, "split 3, cancelling partials, 3 forced arrival orders", true},
      with_epilogue({TM + 3, TN + 24, 3 * TK + 8, 2, true, 0.5f, 8, 0, 2, "beta C apart, relu, fp32 bias, device scalars, split 2"},
                    -0.75f, C_APART, EPI_RELU | EPI_BIAS_F32, true),
      with_epilogue({2 * TM + 1, 2 * TN - 8, 4 * TK, 3, true, 1.0f, 0, 0, 0, "beta 1 into Y (in place), gelu + bias, split 3"},
                    1.0f, C_IN_PLACE, EPI_GELU, false),
      with_epilogue({3, TN + 8, 2 * TK, 1, false, 1.5f, 0, 0, 0, "device beta 0 (C NaN, unread), gelu, split 1"}, 0.f,
                    C_APART, EPI_GELU, true),
      batch_invariant({TM + 1, TN, 9 * TK + 24, 3, true, 1.0f, 0, 0, 0, "split 3 in units of 4 K blocks, in order (batch-invariant)"}, 4),
  };
  // fp8: the same shapes and epilogues, each with one kind of scales in turn and
  // every other one with an f16 output.
  if (is_fp8(k.dtype))
    for (size_t i = 0; i < cases.size(); ++i) {
      cases[i].scales = (int)(i % SCALES_KINDS);
      cases[i].out_f16 = i % 2 == 1;
    }
  return cases;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x))); }

struct Outcome {
  bool ok = true;
  std::string detail;
  std::set<std::string> caught_by;  // which checks failed
  BankStats bank[LDS_CLASSES];
  double err = 0;
  std::set<int> residents;
  std::set<std::string> arrival_orders;
  void fail(const std::string& check, const std::string& msg) {
    ok = false;
    caught_by.insert(check);
    if (detail.size() < 600) detail += (detail.empty() ? "" : "; ") + msg;
  }
};

// Runs `runs` launches of one case (fresh inputs; output and partials poisoned
// before each; counters never reset by the harness) and checks everything.
Outcome run_case(const KernelInfo& k, const Case& cs, int runs, uint64_t seed_base, Mutation mut) {
  // runs: launches (2 by default: determinism across two random schedules)
  Outcome out;
  // Operand elements of type dt (fp8: bytes, `per` to a 16-bit unit); Y, C and a
  // 16-bit bias of type odt.
  const int dt = k.dtype, per = 2 / elem_bytes(dt), odt = is_fp8(dt) ? (cs.out_f16 ? 1 : 0) : dt;
  const Config& c = k.cfg;
  const int M = cs.m, N = cs.n, K = cs.k, S = cs.split;
  const int64_t ldw = K + cs.ldw_pad, ldx = K + cs.ldx_pad, ldy = N + cs.ldy_pad;
  const int m_tiles = (M + c.tile_m - 1) / c.tile_m, n_tiles = (N + c.tile_n - 1) / c.tile_n;
  const int tiles = m_tiles * n_tiles;
  seed_base ^= g_seed * 0x9E3779B97F4A7C15ull;
  std::mt19937_64 rng(seed_base);
  std::uniform_real_distribution<double> u(-1, 1);

  GBuf W((size_t)((N - 1) * ldw + K) * 2), X((size_t)((M - 1) * ldx + K) * 2), Y((size_t)((M - 1) * ldy + N) * 2);
  const bool bias_f32 = cs.epi & EPI_BIAS_F32;
  const int64_t ldc = cs.c_mode == C_APART ? ldy + 8 : ldy;
  GBuf Bias(cs.bias ? (size_t)N * (bias_f32 ? 4 : 2) : 0), Z(16);
  GBuf Cm(cs.c_mode == C_APART ? (size_t)((M - 1) * ldc + N) * 2 : 0), Sc(8);
  std::vector<uint16_t> c_in_place;  // Y's contents before each launch (C = Y)
  GBuf P(S > 1 ? (size_t)tiles * S * c.tile_m * c.tile_n * 4 : 0), C(S > 1 ? (size_t)tiles * 4 : 0);
  // Operand element i of a buffer (row r of stride ld units at element r * ld * per).
  auto get = [&](const GBuf& b, size_t i) {
    return is_fp8(dt) ? fp8_to_double(dt, b.p[i]) : half_to_double(dt, b.as<uint16_t>()[i]);
  };
  auto set = [&](GBuf& b, size_t i, double v) {
    if (is_fp8(dt)) b.p[i] = double_to_fp8(dt, v);
    else b.as<uint16_t>()[i] = double_to_half(dt, v);
  };
  for (size_t i = 0; i < W.bytes / elem_bytes(dt); ++i) set(W, i, u(rng));
  for (size_t i = 0; i < X.bytes / elem_bytes(dt); ++i) set(X, i, u(rng));
  if (cs.cancel) {  // W periodic in k with period tile_k; X blocks: +big x, -big x, x / small
    const int TK = c.tile_k * per;  // elements
    const double big = is_fp8(dt) ? 16 : 4096, small = is_fp8(dt) ? 16 : 64;  // within fp8's range
    for (int n = 0; n < N; ++n)
      for (int kk = TK; kk < K * per; ++kk) set(W, n * ldw * per + kk, get(W, n * ldw * per + kk % TK));
    for (int t = 0; t < M; ++t)
      for (int kk = 0; kk < K * per; ++kk) {
        const size_t x = t * ldx * per;
        const double v = get(X, x + kk % TK);
        const int blk = kk / TK;
        if (blk == 0) set(X, x + kk, v * big);
        else if (blk == 1) set(X, x + kk, -get(X, x + kk - TK));
        else set(X, x + kk, get(X, x + kk) / small);
      }
  }
  if (bias_f32)
    for (int n = 0; n < N; ++n) Bias.as<float>()[n] = (float)u(rng);
  else
    for (size_t i = 0; i < Bias.bytes / 2; ++i) Bias.as<uint16_t>()[i] = double_to_half(odt, u(rng));
  for (size_t i = 0; i < Cm.bytes / 2; ++i) Cm.as<uint16_t>()[i] = cs.beta == 0.f ? 0xffff : double_to_half(odt, u(rng));
  if (cs.c_mode == C_IN_PLACE) {
    c_in_place.assign(Y.bytes / 2, 0xffff);  // NaN in the padding: the poison there
    for (int t = 0; t < M; ++t)
      for (int n = 0; n < N; ++n) c_in_place[t * ldy + n] = double_to_half(odt, u(rng));
  }
  // fp8 scales: A's per output feature n, B's per token t (a per-tensor scale is
  // entry 0, the same for all); dyadic, so the reference's products stay exact.
  const bool a_vec = cs.scales == SCALES_VECTORS, b_vec = cs.scales == SCALES_VECTORS || cs.scales == SCALES_MIXED;
  GBuf SA(cs.scales ? (size_t)(a_vec ? N : 1) * 4 : 0), SB(cs.scales ? (size_t)(b_vec ? M : 1) * 4 : 0);
  for (size_t i = 0; i < SA.bytes / 4; ++i) SA.as<float>()[i] = std::ldexp(1.0f + (float)(i % 4) / 4, (int)(i % 3) - 1);
  for (size_t i = 0; i < SB.bytes / 4; ++i) SB.as<float>()[i] = std::ldexp(1.0f + (float)(i % 3) / 2, 1 - (int)(i % 4));
  auto scale = [&](const GBuf& b, bool vec, int i) { return b.bytes ? (double)b.as<float>()[vec ? i : 0] : 1.0; };
  Sc.as<float>()[0] = cs.alpha;
  Sc.as<float>()[1] = cs.beta;
  std::memset(Z.p, 0, 16);
  if (S > 1) std::memset(C.p, 0, C.bytes);  // zeroed once, as the engine does
  const std::vector<unsigned char> w0(W.p, W.p + W.bytes), x0(X.p, X.p + X.bytes), b0(Bias.p, Bias.p + Bias.bytes),
      c0(Cm.p, Cm.p + Cm.bytes);

  // float64 reference
  std::vector<double> ref((size_t)M * N);
  for (int t = 0; t < M; ++t)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int kk = 0; kk < K * per; ++kk) s += get(X, t * ldx * per + kk) * get(W, n * ldw * per + kk);
      s *= cs.alpha * scale(SA, a_vec, n) * scale(SB, b_vec, t);
      if (cs.c_mode == C_APART && cs.beta != 0.f) s += cs.beta * half_to_double(odt, Cm.as<uint16_t>()[t * ldc + n]);
      if (cs.c_mode == C_IN_PLACE) s += cs.beta * half_to_double(odt, c_in_place[t * ldy + n]);
      if (cs.bias) s += bias_f32 ? Bias.as<float>()[n] : half_to_double(odt, Bias.as<uint16_t>()[n]);
      if (cs.epi & EPI_RELU) s = s > 0 ? s : 0;
      if (cs.epi & EPI_GELU) s = gelu(s);
      ref[(size_t)t * N + n] = s;
    }

  GemmParams prm{};
  prm.w = W.as<uint16_t>();
  prm.x = X.as<uint16_t>();
  prm.y = Y.as<uint16_t>();
  prm.bias = cs.bias ? Bias.p : nullptr;
  // What routing passes (src/route.rs): C unless beta is a host 0; device scalars.
  const uint16_t* c_arg = cs.c_mode == C_APART ? Cm.as<uint16_t>() : Y.as<uint16_t>();
  prm.c = cs.c_mode != C_NONE && (cs.dev_scalars || cs.beta != 0.f) ? c_arg : nullptr;
  prm.ldc = ldc;
  prm.beta = cs.beta;
  prm.alpha_ptr = cs.dev_scalars ? Sc.as<float>() : nullptr;
  prm.beta_ptr = cs.dev_scalars ? Sc.as<float>() + 1 : nullptr;
  prm.flags = cs.epi | (a_vec ? SCALE_A_VEC : 0) | (b_vec ? SCALE_B_VEC : 0) | (cs.out_f16 ? OUT_F16 : 0);
  prm.a_scale = SA.bytes ? SA.as<float>() : nullptr;
  prm.b_scale = SB.bytes ? SB.as<float>() : nullptr;
  prm.partials = S > 1 ? P.as<float>() : nullptr;
  prm.counters = S > 1 ? C.as<uint32_t>() : nullptr;
  prm.zeros = Z.p;
  prm.ldw = ldw;
  prm.ldx = ldx;
  prm.ldy = ldy;
  prm.m = M;
  prm.n = N;
  prm.k = K;
  prm.alpha = cs.alpha;
  prm.split_k = S;
  prm.split_unit = cs.split_unit;
  std::vector<Region> regions = {{Region::ReadOnly, W.p, W.bytes, "W"},
                                 {Region::ReadOnly, X.p, X.bytes, "X"},
                                 {Region::ReadOnly, Z.p, 16, "zeros"},
                                 {Region::Output, Y.p, Y.bytes, "Y"}};
  if (cs.bias) regions.push_back({Region::ReadOnly, Bias.p, Bias.bytes, "bias"});
  if (Cm.bytes) regions.push_back({Region::ReadOnly, Cm.p, Cm.bytes, "C"});
  if (cs.dev_scalars) regions.push_back({Region::ReadOnly, Sc.p, 8, "scalars"});
  if (SA.bytes) regions.push_back({Region::ReadOnly, SA.p, SA.bytes, "A scales"});
  if (SB.bytes) regions.push_back({Region::ReadOnly, SB.p, SB.bytes, "B scales"});
  if (S > 1) {
    regions.push_back({Region::Partials, P.p, P.bytes, "partials"});
    regions.push_back({Region::Counters, C.p, C.bytes, "counters"});
  }

  std::vector<uint16_t> first;
  std::vector<std::string> last_arrivers;
  if (cs.cancel) runs = std::max(runs, 3);
  for (int run = 0; run < runs; ++run) {
    if (cs.c_mode == C_IN_PLACE) std::memcpy(Y.p, c_in_place.data(), Y.bytes);
    else std::memset(Y.p, 0xff, Y.bytes);  // poison: NaN in bf16 and f16
    if (S > 1) std::memset(P.p, 0xff, P.bytes);
    if (S > 1)
      for (int i = 0; i < tiles; ++i)
        if (C.as<uint32_t>()[i] != 0) {
          out.fail("counters", "a counter is not zero before launch " + std::to_string(run));
          break;
        }
    LaunchOptions opt;
    opt.seed = seed_base * 31 + (uint64_t)run * 7919 + 1;
    opt.mutation = mut;
    if (cs.cancel && run < 2) {  // every workgroup resident; low y first, then high y first
      opt.resident = std::min(tiles * S, 16);
      opt.arrival = run + 1;
    }
    LaunchResult r = launch(k, &prm, sizeof prm, tiles, S, regions, opt);
    out.residents.insert(r.resident);
    if (!r.ok()) {
      std::string e;
      for (auto& s : r.errors) e += (e.empty() ? "" : " | ") + s;
      out.fail("hazard", "launch " + std::to_string(run) + ": " + std::to_string(r.error_count) + " errors: " + e);
      for (auto& s : r.errors) out.caught_by.insert("hazard:" + s.substr(0, s.find(':')));
    }
    for (int i = 0; i < LDS_CLASSES; ++i) out.bank[i].add(r.bank[i]);
    if (S > 1) {
      std::map<size_t, std::string> order;
      std::map<size_t, int> last;
      for (auto& a : r.arrivals) {
        order[a.first] += std::to_string(a.second);
        last[a.first] = a.second;
      }
      std::string sig, lsig;
      for (auto& o : order) sig += o.second + "/";
      for (auto& l : last) lsig += std::to_string(l.second) + "/";
      out.arrival_orders.insert(sig);
      last_arrivers.push_back(lsig);
      for (int i = 0; i < tiles; ++i)
        if (C.as<uint32_t>()[i] != 0) {
          out.fail("counters", "counter of tile " + std::to_string(i) + " is " + std::to_string(C.as<uint32_t>()[i]) +
                                   " after launch " + std::to_string(run));
          break;
        }
    }
    // results
    double e2 = 0, r2 = 0;
    int nonfinite = 0, pad_touched = 0;
    for (int t = 0; t < M; ++t) {
      for (int n = 0; n < N; ++n) {
        const double y = half_to_double(odt, Y.as<uint16_t>()[t * ldy + n]);
        const double rf = ref[(size_t)t * N + n];
        if (!std::isfinite(y)) {
          ++nonfinite;
          continue;
        }
        e2 += (y - rf) * (y - rf);
        r2 += rf * rf;
      }
      if (t + 1 < M)
        for (int64_t n = N; n < ldy; ++n) pad_touched += Y.as<uint16_t>()[t * ldy + n] != 0xffff;
    }
    const double rel = std::sqrt(e2 / (r2 > 0 ? r2 : 1));
    out.err = std::max(out.err, rel);
    const double tol = odt == 0 ? 1e-2 : 2e-3;  // the output's rounding
    if (nonfinite) out.fail("values", std::to_string(nonfinite) + " outputs not written or not finite");
    if (!cs.cancel && !(rel <= tol)) {
      char m[120];
      std::snprintf(m, sizeof m, "relative Frobenius error %.3e > %.0e (launch %d)", rel, tol, run);
      out.fail("values", m);
    }
    if (pad_touched || !Y.slack_intact()) out.fail("bounds", "Y written outside the M x N matrix");
    if (std::memcmp(W.p, w0.data(), W.bytes) || std::memcmp(X.p, x0.data(), X.bytes) ||
        (Bias.bytes && std::memcmp(Bias.p, b0.data(), Bias.bytes)) || (Cm.bytes && std::memcmp(Cm.p, c0.data(), Cm.bytes)))
      out.fail("bounds", "inputs modified");
    for (int i = 0; i < 16; ++i)
      if (Z.p[i]) {
        out.fail("bounds", "zero page modified");
        break;
      }
    std::vector<uint16_t> bits(Y.as<uint16_t>(), Y.as<uint16_t>() + Y.bytes / 2);
    if (run == 0) first = bits;
    else if (bits != first) {
      size_t diff = 0;
      for (size_t i = 0; i < bits.size(); ++i) diff += bits[i] != first[i];
      out.fail("determinism", "launch " + std::to_string(run) + " differs from launch 0 in " + std::to_string(diff) +
                                  " outputs (last arrivers " + last_arrivers.back() + " vs " + last_arrivers.front() +
                                  ")");
    }
  }
  if (cs.cancel && S > 1 && last_arrivers.size() >= 2 && last_arrivers[0] == last_arrivers[1])
    out.fail("harness", "the forced arrival orders did not change the last arriver (" + last_arrivers[0] + ")");
  return out;
}

// ---- allow-list of bank conflicts ----
std::map<std::string, std::string> read_allow(const std::string& path) {
  std::map<std::string, std::string> m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string arch, name, reason;
    ls >> arch >> name;
    std::getline(ls, reason);
    if (!arch.empty() && !name.empty()) m[arch + " " + name] = reason;
  }
  return m;
}

template <typename F>
void parallel(int n, int threads, F f) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      install_fatal_handlers();
      for (int i; (i = next++) < n;) f(i);
    });
  for (auto& th : pool) th.join();
}

}  // namespace
}  // namespace emu

int main(int argc, char** argv) {
  using namespace emu;
  Report rep;
  int threads = (int)std::max(1u, std::thread::hardware_concurrency());
  std::string filter, allow_path = std::string(SKEMU_SOURCE_DIR) + "/bank_conflicts_allow.txt";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v") rep.verbose = true;
    else if (a == "-j" && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--allow" && i + 1 < argc) allow_path = argv[++i];
    else if (a == "--seed" && i + 1 < argc) g_seed = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: skemu [-v] [-j threads] [--filter substring] [--allow file] [--seed n]\n");
      return 2;
    }
  }
  install_fatal_handlers();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  // 1. the emulator's own instructions, its prelude against the AMD one, the atom
  std::printf("== self-checks: emulated instructions, prelude parity with target_amdgcn.h, atom contract, bank model, shared prefetch\n");
  t_job = "isa self-tests";
  run_isa_selftests(rep);
  t_job = "prelude parity";
  run_probe_parity(rep);
  t_job = "atom contract";
  run_atom_contract(rep);
  t_job = "bank model";
  run_bank_selftests(rep);
  t_job = "shared activation prefetch";
  run_prefetch_check(rep);

  // 2. every kernel of every AMD arch, every case
  struct Job {
    const KernelInfo* k;
    Case cs;
    int idx;
    Outcome out;
    std::string label;
  };
  std::vector<Job> jobs;
  int kernels = 0;
  for (const ArchTable& t : registry()) {
    if (!t.variant.empty()) continue;
    for (const KernelInfo& k : t.kernels) {
      const std::string label = std::string(arch_info(k.arch).name) + " " + k.name;
      if (!filter.empty() && label.find(filter) == std::string::npos) continue;
      ++kernels;
      const auto cs = cases_for(k);
      for (size_t i = 0; i < cs.size(); ++i) jobs.push_back(Job{&k, cs[i], (int)i, Outcome{}, label});
    }
  }
  std::printf("== kernels: %d AMD kernels x %zu cases, 2 launches each (%d threads)\n", kernels,
              jobs.empty() ? (size_t)0 : jobs.size() / std::max(1, kernels), threads);
  for (const ArchTable& t : registry()) {
    if (!t.variant.empty()) continue;
    for (const KernelInfo& k : t.kernels) {
      const std::string label = std::string(arch_info(k.arch).name) + " " + k.name;
      if (!filter.empty() && label.find(filter) == std::string::npos) continue;
      const bool ok = k.lds_bytes == k.catalog_lds_bytes && k.lds_bytes <= arch_info(k.arch).lds_limit;
      rep.result(ok, label + ": LDS_BYTES matches schema.rs lds_bytes and the arch limit",
                 std::to_string(k.lds_bytes) + " vs " + std::to_string(k.catalog_lds_bytes));
    }
  }
  parallel((int)jobs.size(), threads, [&](int i) {
    Job& j = jobs[(size_t)i];
    std::string name = j.label + " case " + std::to_string(j.idx);
    t_job = name.c_str();
    j.out = run_case(*j.k, j.cs, 2, fnv(j.label, 0x51ed + (uint64_t)j.idx), Mutation::None);
    char m[200];
    std::snprintf(m, sizeof m, "M=%d N=%d K=%d split=%d%s: err %.2e", j.cs.m, j.cs.n, j.cs.k, j.cs.split,
                  j.cs.bias ? " bias" : "", j.out.err);
    rep.result(j.out.ok, name + " (" + j.cs.what + ")", j.out.ok ? m : std::string(m) + ": " + j.out.detail);
  });
  {
    std::set<std::string> orders;
    std::set<int> res;
    for (auto& j : jobs) {
      for (auto& o : j.out.arrival_orders) orders.insert(j.label + o);
      res.insert(j.out.residents.begin(), j.out.residents.end());
    }
    std::printf("   (schedules: %zu distinct split-K arrival orders, %zu residency levels)\n", orders.size(), res.size());
  }

  // 3. bank conflicts, per kernel over all its cases
  {
    auto allow = read_allow(allow_path);
    std::printf("\n== LDS bank conflicts (extra cycles over conflict-free, all cases, both launches)\n");
    std::printf("   gfx942: 32 banks x 4 B, 128 B/cycle: ds_read_b128 8 lanes/cycle, global_load_lds dword 32 lanes/cycle\n");
    std::printf("   gfx950: 64 banks x 4 B, 256 B/cycle: ds_read_b128 16 lanes/cycle, global_load_lds dwordx4 16 lanes/cycle\n");
    std::printf("   %-52s %-22s %-22s %-22s %-22s %s\n", "kernel", "ds_read W (A)", "ds_read X (B)", "copy W", "copy X",
                "verdict");
    std::map<std::string, std::pair<const KernelInfo*, BankStats[LDS_CLASSES]>> per;
    std::vector<std::string> order;
    for (auto& j : jobs) {
      auto& e = per[j.label];
      if (!e.first) {
        e.first = j.k;
        order.push_back(j.label);
      }
      for (int c = 0; c < LDS_CLASSES; ++c) e.second[c].add(j.out.bank[c]);
    }
    std::set<std::string> used;
    for (auto& label : order) {
      auto& e = per[label];
      uint64_t extra = 0;
      std::string cols;
      for (int c : {READ_W, READ_X, COPY_W, COPY_X}) {
        const BankStats& b = e.second[c];
        char m[40];
        std::snprintf(m, sizeof m, "%llu/+%llu w%d", (unsigned long long)b.instrs,
                      (unsigned long long)(b.cycles - b.ideal), b.worst);
        char pad[40];
        std::snprintf(pad, sizeof pad, "%-22s ", m);
        cols += pad;
      }
      for (int c = 0; c < LDS_CLASSES; ++c) extra += e.second[c].cycles - e.second[c].ideal;
      const std::string key = std::string(arch_info(e.first->arch).name) + " " + e.first->name;
      const bool allowed = allow.count(key) > 0;
      if (allowed) used.insert(key);
      std::string verdict = extra == 0 ? "conflict-free" : allowed ? "allowed:" + allow[key] : "CONFLICTS";
      std::printf("   %-52s %s%s\n", label.c_str(), cols.c_str(), verdict.c_str());
      rep.result(extra == 0 || allowed, "bank conflicts " + label,
                 extra == 0 ? "none" : std::to_string(extra) + " extra cycles" + (allowed ? " (allow-listed)" : ""));
    }
    for (auto& a : allow)
      if (!used.count(a.first) && filter.empty())
        std::printf("   note: allow-list entry '%s' matches no conflicting kernel (stale?)\n", a.first.c_str());
    std::printf("   (instr/+extra cycles wN: instructions, extra cycles, most cycles one lane group took)\n\n");
  }

  // 4. lane-mapping mutations of the emulated MFMAs must fail the kernel tests
  if (filter.empty()) {
    std::printf("== mutation: broken MFMA lane mappings must fail the kernel tests\n");
    struct MJob {
      const KernelInfo* k;
      Mutation m;
      int fails = 0, runs = 0;
      std::string how;
    };
    std::vector<MJob> mj;
    for (const ArchTable& t : registry()) {
      if (!t.variant.empty() || t.kernels.empty()) continue;
      for (Mutation m : ALL_MUTATIONS) mj.push_back(MJob{&t.kernels[0], m});
    }
    parallel((int)mj.size(), threads, [&](int i) {
      MJob& j = mj[(size_t)i];
      t_job = "lane-mapping mutation";
      const auto cs = cases_for(*j.k);
      for (int ci : {1, 3}) {
        Outcome o = run_case(*j.k, cs[(size_t)ci], 1, 777 + (uint64_t)ci, j.m);
        ++j.runs;
        if (!o.ok) {
          ++j.fails;
          j.how = o.detail.substr(0, 120);
        }
      }
    });
    for (auto& j : mj)
      rep.result(j.fails > 0, std::string("mutation ") + mutation_name(j.m) + " caught by " +
                                  arch_info(j.k->arch).name + " " + j.k->name,
                 std::to_string(j.fails) + "/" + std::to_string(j.runs) + " cases failed" +
                     (j.how.empty() ? "" : ": " + j.how));

    // 5. kernel-source mutants must fail
    std::printf("== mutation: kernel-source mutants (synchronisation removed) must fail\n");
    struct SJob {
      const ArchTable* t;
      const KernelInfo* k;
      int fails = 0, runs = 0;
      std::set<std::string> by;
    };
    std::vector<SJob> sj;
    for (const ArchTable& t : registry()) {
      if (t.variant.empty()) continue;
      for (const KernelInfo& k : t.kernels) sj.push_back(SJob{&t, &k});
    }
    parallel((int)sj.size(), threads, [&](int i) {
      SJob& j = sj[(size_t)i];
      if (!j.t->mutant_applied) return;
      t_job = "source mutant";
      const auto cs = cases_for(*j.k);
      for (int ci : {1, 3, 5, 6})
        for (int seed = 0; seed < 2; ++seed) {
          Outcome o = run_case(*j.k, cs[(size_t)ci], 2, 4242 + (uint64_t)ci * 17 + (uint64_t)seed, Mutation::None);
          ++j.runs;
          if (!o.ok) ++j.fails;
          j.by.insert(o.caught_by.begin(), o.caught_by.end());
        }
    });
    // one verdict per (mutant, arch): caught if any of its kernels failed
    std::map<std::string, std::vector<const SJob*>> groups;
    std::vector<std::string> gorder;
    for (auto& j : sj) {
      const std::string key = j.t->variant + " " + arch_info(j.t->arch).name;
      if (!groups.count(key)) gorder.push_back(key);
      groups[key].push_back(&j);
    }
    for (auto& key : gorder) {
      auto& g = groups[key];
      const ArchTable* t = g.front()->t;
      std::string what;
      for (auto& mi : SKEMU_MUTANT_INFO)
        if (t->variant == mi[0]) what = mi[1];
      if (!t->mutant_applied) {
        rep.result(false, "source mutant " + key,
                   "its pattern no longer matches kernels/splitk_gemm.h or gemm_common.h: update emu/cmake/mutants.cmake");
        continue;
      }
      int fails = 0;
      std::string detail;
      std::set<std::string> by;
      for (auto* j : g) {
        fails += j->fails;
        by.insert(j->by.begin(), j->by.end());
        detail += (detail.empty() ? "" : ", ") + j->k->name.substr(16) + " " + std::to_string(j->fails) + "/" +
                  std::to_string(j->runs);
      }
      std::string checks;
      for (auto& b : by) checks += (checks.empty() ? "" : " ") + b;
      rep.result(fails > 0, "source mutant " + key + " (" + what + ") caught",
                 detail + (checks.empty() ? "" : "; by: " + checks));
    }
  }

  std::printf("\n%d passed, %d failed\n", rep.passed, rep.failed);
  return rep.failed ? 1 : 0;
}
