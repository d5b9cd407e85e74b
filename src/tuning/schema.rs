//! The tuning-file schema and the kernel-config vocabulary.
//!
//! Shared verbatim by `build.rs` (which compiles exactly the configs the tuning
//! files and the fallback set name) and by the library (which dispatches on them),
//! so the two can never disagree. Depends on serde only.

use serde::{Deserialize, Serialize};

/// Element type of the operands A (weights) and B (activations). For the 16-bit
/// types C and D have it too; fp8 operands write bf16 or f16 (`Problem::out`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Bf16,
    F16,
    /// OCP FP8 E4M3 (`HIP_R_8F_E4M3`): sm_90 and gfx950.
    E4m3,
    /// FP8 E4M3 FNUZ (`HIP_R_8F_E4M3_FNUZ`): gfx942.
    E4m3Fnuz,
}

impl DType {
    /// The 16-bit types: operands and output alike.
    pub const ALL: [DType; 2] = [DType::Bf16, DType::F16];
    /// Every element type, in declaration order (`DType as usize` indexes it).
    pub const EVERY: [DType; 4] = [DType::Bf16, DType::F16, DType::E4m3, DType::E4m3Fnuz];
    pub fn name(self) -> &'static str {
        match self {
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
            DType::E4m3 => "e4m3",
            DType::E4m3Fnuz => "e4m3fnuz",
        }
    }
    /// The device-code element type (kernels/prelude/prelude.h).
    pub fn device_type(self) -> &'static str {
        match self {
            DType::Bf16 => "bf16_t",
            DType::F16 => "f16_t",
            DType::E4m3 => "e4m3_t",
            DType::E4m3Fnuz => "e4m3fnuz_t",
        }
    }
    pub fn is_fp8(self) -> bool {
        matches!(self, DType::E4m3 | DType::E4m3Fnuz)
    }
    /// Bytes per element.
    pub fn bytes(self) -> u32 {
        if self.is_fp8() { 1 } else { 2 }
    }
    /// Elements per 16-bit unit, the unit the kernels count K and the operand
    /// strides in (`GemmParams`): fp8 data moves as pairs.
    pub fn per_unit(self) -> u32 {
        2 / self.bytes()
    }
}

/// Kernel families.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// LDS-pipelined split-K (kernels/splitk_gemm.h).
    Splitk,
    /// The same pipeline on the virtual-dense 4:2 sparse matrix instructions, for
    /// tiles of 8 tokens (kernels/vdmfma_gemm.h).
    Vdmfma,
    /// The split-K pipeline on Hopper's warpgroup MMA (sm_90a), for 16..128 tokens
    /// (kernels/wgmma_gemm.h). `warps` is [1, 4 * warpgroups, 1].
    Wgmma,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Splitk => "splitk",
            Family::Vdmfma => "vdmfma",
            Family::Wgmma => "wgmma",
        }
    }
    /// The instance macro of kernels/<family>_gemm.h (`tma`: the TMA-fed variant).
    pub fn instance_macro(self, tma: bool) -> &'static str {
        match (self, tma) {
            (Family::Splitk, _) => "SK_SPLITK_INSTANCE",
            (Family::Vdmfma, _) => "SK_VDMFMA_INSTANCE",
            (Family::Wgmma, false) => "SK_WGMMA_INSTANCE",
            (Family::Wgmma, true) => "SK_WGMMA_TMA_INSTANCE",
        }
    }
    /// The matrix atom of the family on a target: (weight rows, tokens, k per step);
    /// DenseAtom (splitk_gemm.h) and VdAtom (vdmfma_gemm.h) with the prelude's
    /// ATOM_TOKS and VD_* constants (build.rs static_asserts both per target), and
    /// wgmma.m64nNk16 (per warpgroup).
    pub fn atom(self, t: &TargetFacts) -> (u32, u32, u32) {
        match self {
            Family::Splitk => (16, t.atom_toks, 32),
            Family::Vdmfma => (2 * t.vd_rows, 8, t.vd_k),
            Family::Wgmma => (64, 8, 16),
        }
    }
}

/// One compiled kernel variant (everything that is a template parameter).
/// SPLIT_K, M, N, K, alpha and the bias pointer are launch-time values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    pub family: Family,
    /// Tokens per CTA.
    pub tile_m: u32,
    /// Weight rows (output features) per CTA.
    pub tile_n: u32,
    /// K per pipeline stage.
    pub tile_k: u32,
    pub stages: u32,
    /// Waves along M, N and K (intra-CTA K slices; in the wgmma family, groups of
    /// warpgroups that take alternate K blocks).
    pub warps: [u32; 3],
    /// Weights through the LDS ring (else straight into registers; NVIDIA only).
    pub b_to_lds: bool,
    /// Split-K combine inside a thread-block cluster through distributed shared
    /// memory (sm_90 only; split_k <= MAX_CLUSTER_SPLIT) instead of global slots.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster: bool,
    /// The ring is fed by the tensor memory accelerator from tensor maps encoded at
    /// launch, with one extra producer warp (wgmma family only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tma: bool,
}

/// Largest thread-block cluster on sm_90 (16 is "non-portable": it may not fit
/// every launch, so only measured tuning entries use more than 8). The plan caps
/// the split here, and the kernels tell the compiler no cluster is larger
/// (`MAX_CLUSTER`, prelude/target_nvptx.h; the build asserts the two are equal).
pub const MAX_CLUSTER_SPLIT: u32 = 16;
/// Largest portable cluster: what the fallback may choose without a measurement.
pub const PORTABLE_CLUSTER_SPLIT: u32 = 8;

/// The token counts a wgmma tile may hold: the instruction's N values the prelude
/// (`kernels/prelude/target_nvptx.h`, `Wgmma64`, and the kernel's static_assert)
/// defines, each a multiple of 8. Above 64 tokens they step by 8: a 64-row tile
/// there takes in more activation than weight bytes per stage, so its time follows
/// its token rows, padding included (H100, N = 5120, K = 5120, M = 100: 23.3 µs
/// on a 104-token tile, 26.0 on 112, 33.1 on 128; docs/design.md, section 8.3).
pub const WGMMA_TOKENS: [u32; 13] = [16, 24, 32, 48, 64, 72, 80, 88, 96, 104, 112, 120, 128];

/// Target facts the config rules need. Those the preludes define too (WAVE,
/// ATOM_TOKS, COPY_BYTES, COPY_BY_WAVE = amd, HAS_CLUSTERS = !amd, VD_ROWS, VD_K,
/// SM_LDS_BYTES, LDS_RESERVED_PER_CTA) are static_asserted against
/// kernels/prelude/target_*.h by build.rs, in every target's generated instances.
#[derive(Clone, Copy, Debug)]
pub struct TargetFacts {
    pub name: &'static str,
    pub wave: u32,
    pub atom_toks: u32,
    pub lds_limit: u32,
    pub amd: bool,
    /// Bytes per lane of one asynchronous global-to-LDS copy (COPY_BYTES).
    pub copy_bytes: u32,
    /// The sparse instruction's weight rows (VD_ROWS) and the VDMFMA atom's k per
    /// step (VD_K).
    pub vd_rows: u32,
    pub vd_k: u32,
    /// The VDMFMA family has an fp8 form (VD_HAS_FP8: the AMD fp8 v_smfmac, sm_90's
    /// mma.sp m16n8k64 .e4m3).
    pub vd_fp8: bool,
    /// The planner and the fallback may choose that fp8 form. Its instruction and A
    /// packing are its own, so it does not take its 16-bit twin's times, whose
    /// calibration the planner would use: on sm_90 it measured 1.43x slower than the
    /// dense fp8 split-K (H100, grid at M <= 8; docs/design.md, section 3.5), so
    /// there only a measured table entry or anchor names it.
    pub vd_fp8_planned: bool,
    /// Shared memory per SM and per-CTA reservation where clusters exist (sm90);
    /// 0 elsewhere.
    pub sm_lds: u32,
    pub lds_reserved: u32,
    /// The fp8 type the matrix unit takes (FNUZ on gfx942, OCP on gfx950 and
    /// sm_90), when the arch's fp8 kernels are built.
    pub fp8: Option<DType>,
}

pub const TARGETS: [TargetFacts; 3] = [
    TargetFacts { name: "gfx942", wave: 64, atom_toks: 16, lds_limit: 64 << 10, amd: true, copy_bytes: 4, vd_rows: 16, vd_k: 64, vd_fp8: true, vd_fp8_planned: true, sm_lds: 0, lds_reserved: 0, fp8: Some(DType::E4m3Fnuz) },
    TargetFacts { name: "gfx950", wave: 64, atom_toks: 16, lds_limit: 160 << 10, amd: true, copy_bytes: 16, vd_rows: 16, vd_k: 128, vd_fp8: true, vd_fp8_planned: true, sm_lds: 0, lds_reserved: 0, fp8: Some(DType::E4m3) },
    TargetFacts { name: "sm90", wave: 32, atom_toks: 8, lds_limit: 227 << 10, amd: false, copy_bytes: 16, vd_rows: 8, vd_k: 64, vd_fp8: true, vd_fp8_planned: false, sm_lds: 228 << 10, lds_reserved: 1024, fp8: Some(DType::E4m3) },
];

/// gemm_common.h's lds_spare: the LDS bytes a kernel using `base` bytes per CTA can
/// add without lowering its CTAs per SM; 0 where there are no clusters.
fn lds_spare(t: &TargetFacts, base: u32) -> u32 {
    if t.sm_lds == 0 {
        return 0;
    }
    match t.sm_lds / (base + t.lds_reserved) {
        0 => 0, // does not fit at all (check() says so)
        ctas => t.sm_lds / ctas - t.lds_reserved - base,
    }
}

pub fn target(name: &str) -> Option<TargetFacts> {
    TARGETS.iter().copied().find(|t| t.name == name)
}

impl TargetFacts {
    /// Whether the planner and the fallback may choose kernel `c` in `dtype` (a
    /// measured table entry may name any compiled kernel).
    pub fn planned(&self, dtype: DType, c: &KernelConfig) -> bool {
        !(dtype.is_fp8() && c.family == Family::Vdmfma) || self.vd_fp8_planned
    }
}

impl KernelConfig {
    pub fn waves(&self) -> u32 {
        self.warps.iter().product()
    }
    /// Threads per CTA: the waves, plus the producer warp of a TMA-fed kernel
    /// (the kernel class's THREADS; build.rs static_asserts the two equal).
    pub fn threads(&self, t: &TargetFacts) -> u32 {
        (self.waves() + u32::from(self.tma)) * t.wave
    }
    /// LDS bytes the kernel uses: SplitK::LDS_BYTES in splitk_gemm.h (both
    /// mma.sync families, whose atoms leave 4 outputs per lane), WgmmaSplitK::LDS_BYTES
    /// in wgmma_gemm.h (no K-slice reduction; two mbarriers per stage with TMA; 1 KiB
    /// to align the swizzle atoms). build.rs static_asserts the two equal for every
    /// compiled kernel; sm_90 launches are sized by this.
    pub fn lds_bytes(&self, t: &TargetFacts) -> u32 {
        let row = self.tile_k * 2;
        let w = if self.b_to_lds { self.tile_n * row } else { 0 };
        let pipe = self.stages * (w + self.tile_m * row);
        if self.family == Family::Wgmma {
            let staged = self.tile_m * (self.tile_n + 4) * 4; // StagedTile::LDS_BYTES
            let base = pipe.max(staged) + 16 + if self.tma { 16 * self.stages } else { 0 } + 1024;
            // StagedTile::own_recv_bytes: a tile of receive slots where it costs no CTA per SM.
            let tile = self.tile_m * self.tile_n * 4;
            return base + if self.cluster && tile <= lds_spare(t, base) { tile } else { 0 };
        }
        let e4 = self.tile_m * self.tile_n / 4;
        let combine = (self.threads(t) / e4).max(1) * e4 * 16; // SplitCombine::LDS_BYTES
        let red = (self.warps[2] - 1) * self.tile_m * self.tile_n * 4;
        let base = pipe.max(red).max(combine) + 16;
        base + self.recv_slots(t, base) * e4 * 16
    }
    /// SplitCombine::recv_slots: the cluster combine's own receive slots (one
    /// partial each, at most one per peer of the largest cluster), as many as fit
    /// beside `base` bytes without lowering the CTAs per SM.
    fn recv_slots(&self, t: &TargetFacts, base: u32) -> u32 {
        if !self.cluster {
            return 0;
        }
        (lds_spare(t, base) / (self.tile_m * self.tile_n * 4)).min(MAX_CLUSTER_SPLIT - 1)
    }
    /// The kernel's symbol name for one element type.
    pub fn name(&self, dtype: DType) -> String {
        let [wm, wn, wk] = self.warps;
        format!(
            "skinnylt_{}_{}_m{}n{}k{}_s{}_w{}x{}x{}_{}",
            self.family.name(),
            dtype.name(),
            self.tile_m,
            self.tile_n,
            self.tile_k,
            self.stages,
            wm,
            wn,
            wk,
            if self.b_to_lds { "lds" } else { "reg" }
        ) + if self.cluster { "_cl" } else { "" }
            + if self.tma { "_tma" } else { "" }
    }
    /// The static rules of splitk_gemm.h (and vdmfma_gemm.h) for a target, so a bad
    /// tuning entry fails the build with a message instead of a compiler error.
    pub fn check(&self, t: &TargetFacts) -> Result<(), String> {
        let [wm, wn, wk] = self.warps;
        let (rows, toks, k) = self.family.atom(t);
        let err = |m: &str| Err(format!("{}: {m}", self.name(DType::Bf16)));
        if wm == 0 || wn == 0 || wk == 0 || self.waves() > 16 {
            return err("1..16 waves");
        }
        if self.family == Family::Wgmma {
            return self.check_wgmma(t);
        }
        if self.tma {
            return err("only the wgmma family has a TMA feed");
        }
        if !self.tile_n.is_multiple_of(rows * wn) {
            return err(&format!("tile_n must be a multiple of {rows} (the atom's weight rows) * warps_n"));
        }
        if !self.tile_m.is_multiple_of(toks * wm) {
            return err("tile_m must be a multiple of the atom's tokens * warps_m");
        }
        if self.family == Family::Vdmfma && self.tile_m != 8 {
            return err("the VDMFMA family is for tiles of 8 tokens");
        }
        if self.tile_k < 64 || !self.tile_k.is_multiple_of(k * wk) || !self.tile_k.is_power_of_two() {
            return err(&format!("tile_k must be a power of two >= 64 and a multiple of {k} (the atom's k step) * warps_k"));
        }
        if self.stages < 2 {
            return err("stages >= 2");
        }
        if t.amd && !self.b_to_lds {
            return err("AMD kernels stage weights through LDS");
        }
        if t.amd && self.cluster {
            return err("thread-block clusters are sm_90 only");
        }
        if self.lds_bytes(t) > t.lds_limit {
            return err("LDS over the arch limit");
        }
        if t.amd {
            let group = t.wave * t.copy_bytes;
            if !(self.tile_n * self.tile_k * 2).is_multiple_of(group) {
                return err("weight stage must be whole copy instructions");
            }
            if !(self.tile_m * self.tile_k * 2).is_multiple_of(group) {
                return err("activation stage must be whole copy instructions");
            }
            // The most copies any wave issues per stage, with STAGES-1 stages in
            // flight at once: the counter (6 bits) must never need to exceed 63.
            let per_stage = (self.tile_n * self.tile_k * 2 / group).div_ceil(self.waves())
                + (self.tile_m * self.tile_k * 2).div_ceil(group).div_ceil(self.waves());
            if (self.stages - 1) * per_stage > 63 {
                return err("too many copies in flight for vmcnt (6 bits)");
            }
        }
        Ok(())
    }

    /// The static rules of wgmma_gemm.h.
    fn check_wgmma(&self, t: &TargetFacts) -> Result<(), String> {
        let err = |m: &str| Err(format!("{}: {m}", self.name(DType::Bf16)));
        if t.name != "sm90" {
            return err("warpgroup MMA is sm_90a only");
        }
        let [wm, wn, wk] = self.warps;
        if wm != 1 || !(wk == 1 || wk == 2 && self.tma) || !(wn == 4 || wn == 8) {
            return err("warps must be [1, 4 * warpgroups, K groups] with 1 or 2 warpgroups, and 2 K groups only with the TMA feed");
        }
        let rows_per_wg = self.tile_n / (16 * wn);
        if !self.tile_n.is_multiple_of(16 * wn) || !(rows_per_wg == 1 || rows_per_wg == 2) {
            return err("tile_n must be 64 * warpgroups * (1 or 2)");
        }
        if !WGMMA_TOKENS.contains(&self.tile_m) {
            return err(&format!("tile_m must be one of {WGMMA_TOKENS:?} (a wgmma n the prelude defines)"));
        }
        if ![64, 128, 256].contains(&self.tile_k) {
            return err("tile_k must be 64, 128 or 256 (1, 2 or 4 128-B swizzle atoms)");
        }
        if self.stages < 2 {
            return err("stages >= 2");
        }
        if !self.b_to_lds {
            return err("wgmma reads both operands from shared memory (b_to_lds)");
        }
        if self.lds_bytes(t) > t.lds_limit {
            return err("LDS over the arch limit");
        }
        Ok(())
    }
}

/// What a tuning entry says to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub dtype: DType,
    pub n: u32,
    pub k: u32,
    pub bias: bool,
    /// Token range [m_min, m_max] the entry covers.
    pub m_min: u32,
    pub m_max: u32,
    /// `None`: forward to the vendor library (it was faster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelConfig>,
    #[serde(default = "one")]
    pub split_k: u32,
    /// "measured" or "model".
    pub source: String,
    /// Measured (or predicted) latency, and the vendor's, in µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_us: Option<f64>,
    /// fp8: the scales the entry was measured with ("row": per row of W and per
    /// token; absent: per tensor).
    #[serde(default, skip_serializing_if = "ScaleKind::is_tensor")]
    pub scales: ScaleKind,
}

/// How fp8 operands are scaled: one value per tensor, or one per row of W and one
/// per token (hipBLASLt's and cuBLASLt's `OUTER_VEC_32F`). A table's verdict holds
/// for the kind it was measured with: the vendor's speed depends on it (cuBLASLt's
/// outer-vector kernels took 1.08-2.85x as long as its per-tensor ones on the
/// public grid on the H100), skinnylt's hardly (median 1.006x).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScaleKind {
    #[default]
    Tensor,
    Row,
}

impl ScaleKind {
    pub fn is_tensor(&self) -> bool {
        *self == ScaleKind::Tensor
    }
}

fn one() -> u32 {
    1
}

/// Where a file's entries came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    #[serde(default)]
    pub device: String,
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub notes: String,
}

/// `tuning/<arch>.json`, or a device variant `tuning/<arch>-<variant>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningFile {
    pub schema: u32,
    pub arch: String,
    /// A variant's devices: it is chosen on a device whose name contains one of
    /// these (case-insensitive). Empty: the arch's table, for every other device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    #[serde(default)]
    pub provenance: Provenance,
    /// The planner's constants for this device (`crate::tuning::planner`): fitted
    /// to measurements (`skinnylt fit`), or from the hardware's documented numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<CostModel>,
    pub entries: Vec<Entry>,
    /// Measured winners of shapes the entries do not list (each at the one M it was
    /// measured at, `m_min` = `m_max`; the kernel even where the vendor won), with
    /// the vendor's time: not bands, but what a shape no entry covers borrows its
    /// choice from (`Tuning::transfer`). A dtype with anchors plans by transfer,
    /// its entries' measured winners counted among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Entry>,
    /// How narrow a win of the anchors carries at few tokens on this device
    /// (`Tuning::transfer`); absent: the transfer margin at every M.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_transfer: Option<SmallTransfer>,
    /// Measured batch-invariant plans (`skinnylt fit --invariant`): for a (dtype, N,
    /// K, bias), the summation class and split that lost least against the default
    /// over the token counts measured, one entry per M it was measured at, naming
    /// the class's fastest kernel there (its time in `us`, the vendor's in
    /// `vendor_us`). Every entry of a shape has the same split and kernels of one
    /// class (`planner::summation_class`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariant: Vec<Entry>,
}

/// A 16-bit problem of at most `max_m` tokens borrows an anchor's choice where its
/// nearest anchors beat the vendor by `margin` rather than `TRANSFER_MARGIN`. A fact
/// of the device, chosen by `fit --cross-validate` on its measurements: on the H100
/// the anchors' kernels stream at the copy floor within one 16-token tile, and wins
/// of 1.03x carried (its table: 16 tokens, 1.03x); on the H200 1.03x ran 9 of 994
/// problems below 0.97x, and 1.08x is the lowest margin that added none (its table:
/// 16 tokens, 1.08x).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmallTransfer {
    pub max_m: u32,
    pub margin: f64,
}

/// The constants of the planner's cost model of one device (see
/// `crate::tuning::planner` for the model and tuning/README.md for their meaning).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
    /// "fitted" (to `tune --dump` measurements on the device) or "hardware"
    /// (from documented peak numbers, not measured).
    pub source: String,
    /// One kind of kernel each: a family, with or without clusters and TMA.
    pub kinds: Vec<KindCost>,
    /// Most bytes per µs one compute unit takes in (GB/s).
    pub unit_intake_gbs: f64,
    /// DRAM bandwidth for weights (TB/s).
    pub dram_tbs: f64,
    /// Bandwidth of the global split-K partials (TB/s).
    pub partials_tbs: f64,
    /// Fixed cost of each wave of CTAs (µs): the first stage and the tail.
    pub wave_us: f64,
    /// How a CTA's token rows count in its bytes. Absent (the shipped fits): as
    /// `tile_m` rows at a weight row's cost, whatever M is. Present: the rows its
    /// token tile really holds (M over the token tiles, zero-filled rows cost no
    /// memory traffic), each at this many weight rows' cost: every CTA reads the
    /// same token rows at once, hot lines of L2 (fitted by `skinnylt fit
    /// --token-rows`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_row_weight: Option<f64>,
    /// The bandwidth (TB/s) of the floor that calibration measures a kernel's
    /// excess above (`planner::CostModel::calibration_floor_us`). `dram_tbs` is
    /// fitted to every kernel and lies below what the best ones stream on large
    /// weights, so an excess above it would predict those ~10 % slow; `skinnylt
    /// fit` sets it to what the fastest measurement streamed. Absent: `dram_tbs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_floor_tbs: Option<f64>,
    /// Shared memory (LDS) and threads one compute unit holds, for occupancy.
    pub unit_shared_bytes: u32,
    pub unit_threads: u32,
    /// The vendor library's time: max(fixed + per_m · M/128 + per_kilo_k · K/1024,
    /// base + bytes / bw).
    pub vendor: VendorCost,
    /// The vendor's per-row fp8 kernels (scale vectors on both operands), the same
    /// form fitted to the vendor times of the table's measured per-row entries
    /// (`skinnylt fit`): cuBLASLt's outer-vector kernels are slower than its
    /// 16-bit ones by a factor that grows with K and with mid-size weights, so
    /// `vendor` alone would forward per-row calls skinnylt wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_row: Option<VendorCost>,
    /// skinnylt runs an unlisted shape, when a vendor library is there to forward
    /// to, only where its predicted time beats the vendor's predicted time by this
    /// factor.
    pub margin: f64,
    /// Measured corrections of single kernels (`skinnylt fit`): where present, the
    /// planner plans only the kernels listed here, each at the token-tile counts
    /// it was measured at (`crate::tuning::planner`, calibration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibration: Vec<Calibration>,
}

/// How far one kernel's measured time above the copy floor differs from the
/// model's, at one count of token tiles (⌈M / tile_m⌉, counts from
/// `planner::CALIBRATED_TILES` on sharing one entry), over every measurement of
/// that kernel on the device.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub kernel: KernelConfig,
    pub token_tiles: u32,
    /// Measured time above the floor over predicted time above the floor: the
    /// median (ranks the kernels) and a high quantile (`planner::SPREAD_QUANTILE`;
    /// decides whether a predicted win is sure enough to run).
    pub excess: f64,
    pub excess_high: f64,
    /// Measurements the factors were taken over.
    pub samples: u32,
}

/// The cost constants of one kind of kernel.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindCost {
    pub family: Family,
    #[serde(default)]
    pub cluster: bool,
    #[serde(default)]
    pub tma: bool,
    /// Fixed time of a launch (µs).
    pub launch_us: f64,
    /// Bytes per µs one CTA streams (GB/s).
    pub cta_gbs: f64,
    /// Split-K: fixed cost, per split, and per KiB of one CTA's partial tile (µs).
    pub split_us: f64,
    pub per_split_us: f64,
    pub partial_us_per_kib: f64,
    /// Matrix throughput one compute unit reaches with this kind (TFLOP/s).
    pub unit_tflops: f64,
}

/// The vendor library's time model (µs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorCost {
    pub fixed_us: f64,
    pub per_m_us: f64,
    /// Its floor grows with K (a longer reduction, split or not).
    #[serde(default)]
    pub per_kilo_k_us: f64,
    pub base_us: f64,
    pub tbs: f64,
    /// Narrow outputs stream slower (fewer output tiles to spread over the
    /// device): below `full_n` output features the bandwidth falls as
    /// (N / full_n)^`narrow_exponent`. 0: no such fall (`full_n` absent).
    #[serde(default)]
    pub full_n: f64,
    #[serde(default)]
    pub narrow_exponent: f64,
}

impl TuningFile {
    /// Adds the entries of another table of the same arch (the one without PDL, a
    /// device variant), so that the kernels all name are compiled: build.rs and its test.
    pub fn append(&mut self, other: TuningFile) -> Result<(), String> {
        if other.arch != self.arch {
            return Err(format!("a table for {} appended to one for {}", other.arch, self.arch));
        }
        self.entries.extend(other.entries);
        self.anchors.extend(other.anchors);
        self.invariant.extend(other.invariant);
        Ok(())
    }
}

/// `tuning/fallback.json`: per arch, the configs the hardware-aware fallback
/// chooses from for shapes no tuning entry covers (compiled for both dtypes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackFile {
    pub schema: u32,
    pub sets: Vec<FallbackSet>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackSet {
    pub arch: String,
    pub configs: Vec<KernelConfig>,
}

/// The (dtype, config) pairs an arch's binary must contain: every kernel a tuning
/// entry or anchor names, plus the fallback set in both 16-bit dtypes; and every config
/// of those in the arch's fp8 type, where it has one (the sparse family only where
/// it has an fp8 form, `TargetFacts::vd_fp8`). Sorted, deduplicated.
pub fn compiled_set(arch: &str, tuning: &TuningFile, fallback: &FallbackFile) -> Vec<(DType, KernelConfig)> {
    let mut set: Vec<(DType, KernelConfig)> =
        tuning.entries.iter().chain(&tuning.anchors).chain(&tuning.invariant).filter_map(|e| e.kernel.map(|k| (e.dtype, k))).collect();
    for s in fallback.sets.iter().filter(|s| s.arch == arch) {
        for c in &s.configs {
            for d in DType::ALL {
                set.push((d, *c));
            }
        }
    }
    if let Some(t) = target(arch)
        && let Some(fp8) = t.fp8
    {
        let in_fp8: Vec<KernelConfig> =
            set.iter().filter(|(d, c)| !d.is_fp8() && (t.vd_fp8 || c.family != Family::Vdmfma)).map(|(_, c)| *c).collect();
        set.extend(in_fp8.into_iter().map(|c| (fp8, c)));
    }
    set.sort();
    set.dedup();
    set
}
