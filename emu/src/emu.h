// skinnylt wave-level emulator: the machine model, the kernel registry, launches.
// See emu/README.md for what it models and what it cannot.
//
// This header must not include the kernel prelude: the generated instance files
// include it (and the kernel source) inside a namespace per target. It includes the
// kernel ABI (GemmParams), at global scope, which the kernels then share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gemm_params.h"

namespace emu {

enum class Arch : int { Gfx942 = 0, Gfx950 = 1 };
constexpr int NUM_ARCHES = 2;

struct ArchInfo {
  const char* name;
  int lds_limit;       // bytes of LDS a workgroup may use (schema.rs TARGETS)
  int banks;           // LDS banks of 4 bytes (CDNA3/CDNA4 ISA guides: 32 on CDNA3, 64 on CDNA4)
  int copy_bytes;      // bytes per lane of global_load_lds (the prelude's COPY_BYTES; instance files check)
  int mfma_k;          // K of the MFMA the atom uses (16: gfx942, 32: gfx950)
};
constexpr ArchInfo ARCH_INFO[NUM_ARCHES] = {{"gfx942", 64 << 10, 32, 4, 16}, {"gfx950", 160 << 10, 64, 16, 32}};
inline const ArchInfo& arch_info(Arch a) { return ARCH_INFO[(int)a]; }

// A kernel config: the template parameters of SplitK (schema.rs KernelConfig), as
// the library's catalog lists them (`skinnylt kernels`).
struct Config {
  int tile_m = 0, tile_n = 0, tile_k = 0, stages = 0, wm = 1, wn = 1, wk = 1;
  bool b_to_lds = true;
  bool vd = false;
  int waves() const { return wm * wn * wk; }
  int threads() const { return waves() * 64; }
  int w_ring_bytes() const { return b_to_lds ? stages * tile_n * tile_k * 2 : 0; }
  int x_ring_bytes() const { return stages * tile_m * tile_k * 2; }
};

// Parameters of the atom-contract kernel (src/atom_kernel.h).
struct AtomParams {
  const uint16_t* a;  // 16 rows x 32*steps k, row-major
  const uint16_t* b;  // 16 tokens x 32*steps k, row-major
  float* d;           // 16 x 16, d[row * 16 + tok]
  int steps;
};

using KernelFn = void (*)(const void* params);

struct KernelInfo {
  Arch arch;
  int dtype;            // 0 bf16, 1 f16, 2 e4m3, 3 e4m3fnuz (emu.h is_fp8)
  Config cfg;
  std::string name;     // the symbol name of the real kernel (the catalog's)
  std::string variant;  // "" for the kernel source as is, else the source mutant's name
  KernelFn fn;
  int lds_bytes;        // SplitK<...>::LDS_BYTES
  int catalog_lds_bytes;  // the catalog's (schema.rs KernelConfig::lds_bytes)
  int min_copies;       // SplitK<...>::MIN_COPIES
};

// One probe function (emu/probe/amd_probe.h) compiled for the host.
struct ProbeFn {
  const char* name;
  uint32_t (*fn)();
};
struct ProbeKernel {
  const char* name;
  void (*fn)();
};

struct ArchTable {
  Arch arch;
  std::string variant;
  std::vector<KernelInfo> kernels;
  std::vector<ProbeFn> probe_fns;
  std::vector<ProbeKernel> probe_kernels;
  KernelFn atom_kernel[4] = {nullptr, nullptr, nullptr, nullptr};  // per dtype (fp8: the arch's own only)
  bool mutant_applied = true;                      // false: the mutant's pattern was not found
  std::string (*prefetch_check)() = nullptr;       // emu/src/prefetch_check.h: "" or what failed
};

// Filled by the generated instance files' static initialisers.
std::vector<ArchTable>& registry();
struct Registrar {
  explicit Registrar(ArchTable t) { registry().push_back(std::move(t)); }
};

// Deliberate breakage of the emulated matrix instructions (self-check of the tests).
enum class Mutation : int {
  None = 0,
  SwapALanes,      // lanes 5 and 21 exchange their A registers (row 5, k groups 0 and 1)
  AWrongKHalf,     // A element j of a lane is taken as element j ^ (K/8): the other k half
  BKGroupReversed, // B lane group g is read as k group 3 - g
  DTransposed,     // D lane l, register r is written as D[l % 16][4 (l / 16) + r]
};
constexpr Mutation ALL_MUTATIONS[] = {Mutation::SwapALanes, Mutation::AWrongKHalf, Mutation::BKGroupReversed,
                                      Mutation::DTransposed};
const char* mutation_name(Mutation m);

// Global-memory regions a launch may touch through the hooks.
struct Region {
  enum Kind { ReadOnly, Output, Partials, Counters } kind;
  const void* base;
  size_t bytes;
  const char* name;
};

// LDS instruction classes for the bank-conflict report.
enum LdsClass : int { READ_W, READ_X, READ_OTHER, COPY_W, COPY_X, COPY_OTHER, LDS_CLASSES };
const char* lds_class_name(int c);

struct BankStats {
  uint64_t instrs = 0;       // wave instructions
  uint64_t ideal = 0;        // cycles without conflicts (lane groups served)
  uint64_t cycles = 0;       // cycles with conflicts
  uint64_t conflicted = 0;   // instructions with at least one extra cycle
  int worst = 1;             // most cycles any one lane group took
  void add(const BankStats& o) {
    instrs += o.instrs;
    ideal += o.ideal;
    cycles += o.cycles;
    conflicted += o.conflicted;
    if (o.worst > worst) worst = o.worst;
  }
};

struct LaunchOptions {
  uint64_t seed = 1;
  int max_resident = 4;     // workgroups in flight at once (the launch picks 1..max)
  double land_prob = 0.25;  // chance per wave step that its oldest outstanding copy lands
  int resident = 0;         // 0: 1..max_resident, drawn per launch; else exactly this many
  int arrival = 0;          // 0: random wave order; 1: workgroups with low y first; 2: high y first
  Mutation mutation = Mutation::None;
};

struct LaunchResult {
  std::vector<std::string> errors;  // hazards and faults (first few of each kind)
  uint64_t error_count = 0;
  BankStats bank[LDS_CLASSES];
  uint64_t workgroups = 0, wave_steps = 0, mfma = 0, copies = 0, ds_reads = 0, barriers = 0;
  int resident = 0;
  std::vector<std::pair<size_t, int>> arrivals;  // (counter index, workgroup y) of each atomic add, in order
  bool ok() const { return error_count == 0; }
};

// Runs a whole grid (x-fastest dispatch order). Not reentrant per thread; each
// thread gets its own machine.
LaunchResult launch(const KernelInfo& k, const void* params, size_t params_bytes, int grid_x, int grid_y,
                    const std::vector<Region>& regions, const LaunchOptions& opt);

// Hooks called outside a launch record what they are asked to do (probe mode).
struct ProbeEvent {
  std::string instr;          // LLVM intrinsic name after "llvm.amdgcn.", e.g. "mfma.f32.16x16x16bf16.1k"
  std::vector<int> a, b;      // 16-bit operand elements, in vector order
  int c_from = -1;            // accumulator input: index of the event that produced it, -1 for zeros
  int imm = 0;                // size (global.load.lds) or vmcnt (s.waitcnt)
};
std::vector<ProbeEvent>& probe_log();

// Element types, numbered as the prelude's T::id: 0 bf16, 1 f16, 2 fp8 E4M3 (OCP;
// gfx950), 3 fp8 E4M3 FNUZ (gfx942). fp8 elements are bytes; the 16-bit ones halves.
constexpr bool is_fp8(int dtype) { return dtype >= 2; }
constexpr int elem_bytes(int dtype) { return is_fp8(dtype) ? 1 : 2; }

// Matrix-instruction semantics (isa.cpp). `a`, `b`: per lane `nv` = K/8 VGPRs for
// 16-bit elements, K/16 for fp8 (lane-major; mfma_vgprs); `c`, `d`: per lane 4 floats.
constexpr int mfma_vgprs(int k, int dtype) { return k * elem_bytes(dtype) / 16; }
void v_mfma_f32_16x16xk(int k, int dtype, const uint32_t* a, const uint32_t* b, const float* c, float* d,
                        Mutation m = Mutation::None);
bool v_smfmac_f32_16x16xk(int k, int dtype, int bmap, const uint32_t* a, const uint32_t* b, const uint32_t* idx,
                          const float* c, float* d);
double half_to_double(int dtype, uint16_t v);
uint16_t double_to_half(int dtype, double v);  // round to nearest even
double fp8_to_double(int dtype, uint8_t v);  // exact; NaN for the format's NaN codes
uint8_t double_to_fp8(int dtype, double v);  // round to nearest even, saturating
// Element `bits` (the low elem_bytes(dtype) bytes) of any element type.
double elem_to_double(int dtype, uint32_t bits);

// LDS bank model (isa.cpp): cycles one wave instruction takes. Lanes are served in
// groups of consecutive lanes, `banks * 4 / access_bytes` lanes per cycle; within
// a group, a bank serves one distinct dword per cycle (equal addresses broadcast).
BankStats lds_bank_cycles(const uint32_t* lane_addr, uint64_t active, int access_bytes, int banks);

}  // namespace emu
