//! `skinnylt check`: the GPU correctness suite, through the public C API
//! (`hipblasLtMatmul`, standalone mode) on an NVIDIA GPU.
//!
//! * every shape of the public grid, bf16 and fp16, plus random odd shapes (odd M,
//!   N not a multiple of the tile, K not a multiple of TILE_K, padded leading
//!   dimensions, bias or not), against a float64 reference on fresh random inputs,
//!   with the output poisoned (NaN) before each run;
//! * the epilogues and scalars PyTorch uses (beta · C into D or from a C apart,
//!   ReLU/GELU with and without a bias, an fp32 bias, device alpha/beta) on the
//!   public grid's (N, K) at M = 1, 8, 32, 128, heuristic then matmul;
//! * batch invariance (`UNIFORM_SUMMATION_ORDER_EXT`): every row bitwise equal at
//!   every M = 1..128 and place in the batch, with a control that must differ;
//! * determinism: identical bits over 100 runs of split-K shapes;
//! * graph capture of split-K GEMMs and 1000 replays, bitwise equal to eager runs;
//! * two streams at once on one handle, bitwise equal to single-stream runs.
//!
//! `--kernel-sweep` runs instead every compiled kernel of the device's arch (both
//! families, both dtypes), forced through `engine::run_choice` (the launch path of
//! `skinnylt tune`), at several split-K factors on small odd shapes — M = 1..8 for
//! every kernel (plus M just below, at and above the token tile for larger tiles), N
//! and K not multiples of the tiles, padded leading dimensions, bias or not, alpha
//! != 1 — against the float64 reference. This covers kernels the tuning table and
//! the fallback would not pick, e.g. the VDMFMA family on sm_90.

use std::ffi::c_void;
use std::time::Instant;

use skinnylt::engine::Call;
use skinnylt::gpu::Stream;
use skinnylt::kernels::{self, KernelEntry};
use skinnylt::route::{DType, Problem};
use skinnylt::tuning::Choice;

use crate::bench::no_gpu;
use crate::client::{self, Handle, Linear};
use crate::epilogue::{BiasKind, COperand, HostData, VARIANTS, Variant};
use crate::gpu::{Buf, Gpu};
use crate::grid;
use crate::reference::{self, Rng};

#[derive(clap::Args)]
pub struct Args {
    /// Random odd shapes to add to the public grid.
    #[arg(long, default_value_t = 48)]
    pub random: usize,
    /// Seed for inputs and odd shapes (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only the first N grid shapes (for a quick look).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Write per-case results as JSON lines here.
    #[arg(long)]
    pub out: Option<String>,
    /// "fallback": ignore the tuning table, so every shape runs a fallback kernel;
    /// "shipped": use the table (shapes it forwards run the fallback, as in
    /// standalone mode).
    #[arg(long, default_value = "fallback")]
    pub tuning: String,
    /// Run only the kernel sweep: every compiled kernel at several split-K factors on
    /// small odd shapes with M = 1..8 (see the module doc).
    #[arg(long)]
    pub kernel_sweep: bool,
    /// Run only the summation-class check: every compiled kernel at split 1 and 3,
    /// launched batch-invariant, outputs grouped by their bits; the kernels of one
    /// summation class (the unit of batch-invariant planning) must agree.
    #[arg(long)]
    pub summation_classes: bool,
    /// Every epilogue variant on every (N, K) and M of the epilogue cases (by
    /// default each case takes the next variant in turn).
    #[arg(long)]
    pub all_epilogues: bool,
    /// With --kernel-sweep: only kernels whose name contains this text (e.g. "vdmfma").
    #[arg(long)]
    pub kernel_filter: Option<String>,
    /// Run only the fp8 cases (part of the full suite on an arch with fp8 kernels).
    #[arg(long)]
    pub fp8: bool,
    /// Run only the batch-invariance cases (part of the full suite): the public
    /// grid's (N, K), every shape of the table's measured batch-invariant plans with
    /// `--tuning shipped`, and random shapes.
    #[arg(long = "batch-invariance")]
    pub batch_invariance: bool,
}

#[derive(Clone, Copy, Debug)]
struct Case {
    group: &'static str,
    dtype: DType,
    m: usize,
    n: usize,
    k: usize,
    bias: bool,
    ldw: usize,
    ldy: usize,
    /// Pass a caller workspace (else skinnylt's own buffer is used).
    workspace: bool,
}

/// Split-K shapes for the determinism, graph and stream tests.
const SPLIT_CASES: [Case; 3] = [
    Case { group: "det", dtype: DType::Bf16, m: 8, n: 2880, k: 2880, bias: true, ldw: 2880, ldy: 2880, workspace: false },
    Case { group: "det", dtype: DType::Bf16, m: 1, n: 512, k: 7168, bias: false, ldw: 7168, ldy: 512, workspace: false },
    Case { group: "det", dtype: DType::F16, m: 32, n: 5120, k: 2880, bias: true, ldw: 2880, ldy: 5120, workspace: true },
];

/// The split-K factors of the kernel sweep (K holds at least 5 blocks).
const SWEEP_SPLITS: [u32; 4] = [1, 2, 3, 5];

const GRAPH_TEST: &str = "graph capture + 1000 replays (split-K)";
const STREAMS_TEST: &str = "two streams on one handle (split-K)";
const CAPTURE_CREATE_TEST: &str = "handle create, first call, destroy on a thread while another captures (global mode)";
const CHAIN_TEST: &str = "dependent chain (RAW/WAR on X, RAW on W; PDL overlap)";

struct Suite<'a> {
    cu: &'a Gpu,
    h: Handle,
    rng: Rng,
    ws: Buf<'a>,
    ws_bytes: usize,
    passed: usize,
    /// Whether the device launches with programmatic dependent launch.
    pdl: bool,
    failed: Vec<String>,
    log: Vec<String>,
}

pub fn run(a: &Args) -> i32 {
    if a.tuning == "fallback" {
        crate::use_tables_without_entries(false);
    }
    let Some(cu) = Gpu::get() else {
        return no_gpu("check");
    };
    match suite(cu, a) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("suite aborted: {e}");
            1
        }
    }
}

fn suite(cu: &Gpu, a: &Args) -> Result<i32, String> {
    let dev = skinnylt::engine::device(0)?;
    cu.make_current(dev.ctx)?;
    let seed = a.seed.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1);
    println!("device {} ({}); seed {seed}; tuning: {} ({} entries)", dev.info.name, dev.info.arch_name, dev.tuning.source, dev.tuning.entries);
    let ws_bytes = 64 << 20;
    let mut s = Suite { cu, h: Handle::new()?, rng: Rng(seed), ws: Buf(cu, cu.malloc(ws_bytes)?), ws_bytes, passed: 0, pdl: dev.pdl(), failed: Vec::new(), log: Vec::new() };

    if a.summation_classes {
        s.summation_classes(dev.arch)?;
        return s.finish(a);
    }
    if a.kernel_sweep {
        let t0 = Instant::now();
        s.kernel_sweep(dev.arch, a.kernel_filter.as_deref())?;
        println!("kernel sweep: {:.0} s", t0.elapsed().as_secs_f64());
        return s.finish(a);
    }

    if a.batch_invariance {
        s.invariance_group(a, dev.table(dev.pdl()))?;
        return s.finish(a);
    }
    let fp8 = skinnylt::tuning::schema::target(dev.arch.name()).and_then(|t| t.fp8);
    if a.fp8 {
        let fp8 = fp8.ok_or(format!("{} has no fp8 kernels", dev.arch.name()))?;
        s.fp8_group(fp8, a.limit.unwrap_or(usize::MAX), a.random)?;
        return s.finish(a);
    }

    // ---- correctness over the public grid and odd shapes ----
    let mut cases = grid_cases(a.limit.unwrap_or(usize::MAX));
    if a.tuning == "shipped" && a.limit.is_none() {
        cases.extend(table_cases(dev.table(dev.pdl()), &cases));
    }
    cases.extend(odd_cases(&mut s.rng, a.random));
    let t0 = Instant::now();
    for c in &cases {
        s.correctness(c)?;
    }
    println!("correctness: {} cases in {:.0} s", cases.len(), t0.elapsed().as_secs_f64());

    // ---- the epilogues and scalars PyTorch uses, through the C API ----
    let t0 = Instant::now();
    let epilogue_cases = epilogue_cases(a.limit.unwrap_or(usize::MAX), a.all_epilogues);
    for (c, v) in &epilogue_cases {
        s.epilogue(c, v)?;
    }
    println!("epilogues: {} cases in {:.0} s", epilogue_cases.len(), t0.elapsed().as_secs_f64());

    // ---- fp8 operands with their scales, where the arch has fp8 kernels ----
    if let Some(fp8) = fp8 {
        s.fp8_group(fp8, a.limit.unwrap_or(usize::MAX), a.random)?;
    }

    // ---- batch invariance: every row's bits independent of M and of its place ----
    s.invariance_group(a, dev.table(dev.pdl()))?;

    // ---- determinism, graphs, streams on split-K shapes ----
    let split_shapes = SPLIT_CASES;
    s.determinism(&split_shapes)?;
    s.graph_replay(&split_shapes)?;
    s.two_streams(&split_shapes[0], &split_shapes[2])?;
    s.per_thread_stream(&split_shapes[1])?;
    s.capture_safe_creation(&split_shapes[0], &split_shapes[1], dev.ctx)?;
    s.dependent_chain()?;
    s.finish(a)
}

/// The first `limit` shapes of the public grid, in both dtypes, packed (every
/// third shape with a caller workspace).
fn grid_cases(limit: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, sh) in grid::public().iter().take(limit).enumerate() {
        for dtype in DType::ALL {
            let (m, n, k) = (sh.m as usize, sh.n as usize, sh.k as usize);
            cases.push(Case { group: sh.group, dtype, m, n, k, bias: sh.bias, ldw: k, ldy: n, workspace: i % 3 == 0 });
        }
    }
    cases
}

/// Every (N, K) of the public grid (its first `limit` shapes) at M = 1, 8, 32 and
/// 128, dtypes alternating, each with the next epilogue variant in turn, or with
/// every variant (`all`).
fn epilogue_cases(limit: usize, all: bool) -> Vec<(Case, Variant)> {
    let mut pairs: Vec<(u32, u32)> = grid::public().iter().take(limit).map(|sh| (sh.n, sh.k)).collect();
    pairs.dedup();
    let mut cases = Vec::new();
    for (n, k) in pairs {
        for m in [1, 8, 32, 128] {
            let first = cases.len();
            for j in 0..if all { VARIANTS.len() } else { 1 } {
                let i = first + j;
                let (n, k) = (n as usize, k as usize);
                let v = VARIANTS[i % VARIANTS.len()];
                let case = Case { group: "epilogue", dtype: DType::ALL[i / VARIANTS.len() % 2], m, n, k, bias: false, ldw: k, ldy: n + 4 * (i % 2), workspace: i % 3 == 0 };
                cases.push((case, v));
            }
        }
    }
    cases
}

/// Token rows of the batch-invariance test: every M from 1 to this.
const INVARIANT_ROWS: usize = 128;

/// Every (N, K, bias) of the public grid (its first `limit` shapes), and six random
/// odd ones.
fn invariance_shapes(r: &mut Rng, limit: usize, table: Option<&skinnylt::tuning::Tuning>) -> Vec<(usize, usize, bool)> {
    let mut v: Vec<_> = grid::public().iter().take(limit).map(|sh| (sh.n as usize, sh.k as usize, sh.bias)).collect();
    v.dedup();
    // The table's measured plans (16-bit; K in elements), beyond the grid's.
    if let Some(t) = table.filter(|_| limit == usize::MAX) {
        let planned: Vec<_> = t.invariant_shapes().into_iter().map(|(n, k, bias)| (n as usize, k as usize, bias)).filter(|s| !v.contains(s)).collect();
        v.extend(planned);
    }
    for i in 0..6 {
        v.push((1 + r.below(6000) as usize, 8 * (1 + r.below(1200) as usize), i % 2 == 0));
    }
    v
}

/// Every measured entry of the table that `known` does not already cover, at the M
/// it was measured at, sorted (entries beyond the grid: a user's or a model's shapes).
fn table_cases(table: &skinnylt::tuning::Tuning, known: &[Case]) -> Vec<Case> {
    let covered: std::collections::HashSet<_> = known.iter().map(|c| (c.dtype, c.m, c.n, c.k, c.bias)).collect();
    // The fp8 entries (the public grid) are the fp8 group's shapes.
    let mut runs: Vec<_> = table
        .measured_runs()
        .filter(|(dtype, ..)| !dtype.is_fp8())
        .map(|(dtype, n, k, bias, m)| (dtype, m as usize, n as usize, k as usize, bias))
        .filter(|c| !covered.contains(c))
        .collect();
    runs.sort();
    runs.into_iter().enumerate().map(|(i, (dtype, m, n, k, bias))| Case { group: "table", dtype, m, n, k, bias, ldw: k, ldy: n, workspace: i % 3 == 0 }).collect()
}

/// `count` random odd shapes: M up to 8 or 128, any N, K a multiple of 8, padded
/// leading dimensions, bias or not, dtypes and workspaces alternating.
fn odd_cases(r: &mut Rng, count: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    for i in 0..count {
        let m = 1 + r.below(if i % 2 == 0 { 8 } else { 128 }) as usize;
        let n = 1 + r.below(6000) as usize;
        let k = 8 * (1 + r.below(1200) as usize);
        let dtype = DType::ALL[i % 2];
        let ldw = k + 8 * r.below(3) as usize;
        let ldy = n + r.below(5) as usize;
        cases.push(Case { group: "odd", dtype, m, n, k, bias: r.below(2) == 1, ldw, ldy, workspace: i % 2 == 1 });
    }
    cases
}

/// Random host inputs of one case: W (n rows of `ldw`), X (m × k) and a bias row.
struct HostInputs {
    w: Vec<u16>,
    x: Vec<u16>,
    b: Vec<u16>,
}

/// Those inputs on the device, and an output of m rows of `ldy`.
struct DeviceInputs<'a> {
    dw: Buf<'a>,
    dx: Buf<'a>,
    db: Buf<'a>,
    dy: Buf<'a>,
}

impl HostInputs {
    fn random(rng: &mut Rng, dtype: DType, m: usize, n: usize, k: usize, ldw: usize) -> HostInputs {
        let w = reference::random_matrix(rng, dtype, n, k, ldw);
        let x = reference::random_matrix(rng, dtype, m, k, k);
        let b = reference::random_matrix(rng, dtype, 1, n, n);
        HostInputs { w, x, b }
    }

    fn upload<'a>(&self, cu: &'a Gpu, m: usize, ldy: usize) -> Result<DeviceInputs<'a>, String> {
        let (dw, dx, db, dy) = (Buf(cu, cu.malloc(self.w.len() * 2)?), Buf(cu, cu.malloc(self.x.len() * 2)?), Buf(cu, cu.malloc(self.b.len() * 2)?), Buf(cu, cu.malloc(m * ldy * 2)?));
        cu.htod(dw.1, &self.w)?;
        cu.htod(dx.1, &self.x)?;
        cu.htod(db.1, &self.b)?;
        Ok(DeviceInputs { dw, dx, db, dy })
    }
}

/// Inputs of one case on the host and the device, and its descriptors.
struct Inputs<'a> {
    host: HostInputs,
    dev: DeviceInputs<'a>,
    l: Linear,
}

impl Inputs<'_> {
    /// The float64 output of the case.
    fn reference(&self, c: &Case) -> Vec<f64> {
        let h = &self.host;
        reference::reference(c.dtype, c.m, c.n, c.k, &h.w, c.ldw, &h.x, c.k, c.bias.then_some(&h.b[..]), 1.0)
    }
}

/// Checks an output written over NaN poison against the float64 `want`: the
/// padding columns of Y (n..ldy) untouched (still poisoned), every element
/// written and finite, the relative error within the dtype's tolerance; the error.
fn check_output(dtype: DType, m: usize, n: usize, ldy: usize, y: &[u16], want: &[f64]) -> Result<f64, String> {
    check_output_scaled(dtype, m, n, ldy, y, want, want)
}

/// `check_output` for fp8 operands: the fp8 matrix instructions accumulate with
/// fewer mantissa bits than fp32 (about 14 on Hopper: DeepSeek-V3 technical report,
/// section 3.3.2), so the error grows with K beyond an f16 output's rounding
/// (3.4e-3 at K = 16384, measured on the H100); held to bf16's tolerance.
fn check_fp8_output(out: DType, m: usize, n: usize, y: &[u16], want: &[f64]) -> Result<f64, String> {
    match reference::rel_error(out, m, n, y, n, want) {
        None => Err("output not fully written (NaN poison left) or non-finite".into()),
        Some(e) if e > FP8_TOLERANCE => Err(format!("relative error {e:.3e} > {FP8_TOLERANCE:.0e}")),
        Some(e) => Ok(e),
    }
}

/// The relative error fp8 cases may have (see `check_fp8_output`).
pub const FP8_TOLERANCE: f64 = 1e-2;

/// `check_output` with the error relative to `scale` (`reference::rel_error_scaled`):
/// the values before an activation.
fn check_output_scaled(dtype: DType, m: usize, n: usize, ldy: usize, y: &[u16], want: &[f64], scale: &[f64]) -> Result<f64, String> {
    if (0..m).any(|t| (n..ldy).any(|j| y[t * ldy + j] != 0xffff)) {
        return Err("wrote outside the m×n output".into());
    }
    match reference::rel_error_scaled(dtype, m, n, y, ldy, want, scale) {
        None => Err("output not fully written (NaN poison left) or non-finite".into()),
        Some(e) if e > reference::tolerance(dtype) => Err(format!("relative error {e:.3e} > {:.0e}", reference::tolerance(dtype))),
        Some(e) => Ok(e),
    }
}

/// The operand scales of an fp8 case.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scales {
    None,
    /// One fp32 value per operand.
    Tensor,
    /// One per output feature (A) and one per token (B): `OUTER_VEC_32F`.
    Rows,
    /// A per output feature, B per tensor.
    RowsTensor,
}

impl Scales {
    const ALL: [Scales; 4] = [Scales::None, Scales::Tensor, Scales::Rows, Scales::RowsTensor];
    /// (A is a vector, B is a vector), or None without scales.
    fn vectors(self) -> Option<(bool, bool)> {
        match self {
            Scales::None => None,
            Scales::Tensor => Some((false, false)),
            Scales::Rows => Some((true, true)),
            Scales::RowsTensor => Some((true, false)),
        }
    }
    /// How a case name shows the scales and the output type (nothing for 16-bit).
    fn name(self, out: DType) -> String {
        match self.vectors() {
            None => String::new(),
            Some((a, b)) => format!(" scales={}{} out={}", if a { "row" } else { "tensor" }, if b { "/row" } else { "/tensor" }, out.name()),
        }
    }
}

/// A case's operands, bias and output on the device, its scales, and its product
/// `alpha · sA[n] · sB[t] · Σ X·Wᵀ + bias` (bias in the output type) in float64.
struct Operands<'a> {
    dw: Buf<'a>,
    dx: Buf<'a>,
    db: Buf<'a>,
    dy: Buf<'a>,
    /// A's scales then B's (fp32), when there are any.
    _dscales: Buf<'a>,
    a_scale: u64,
    b_scale: u64,
    /// `SCALE_*_VEC` and `OUT_F16` bits, as routing would set them.
    flags: i32,
    product: Vec<f64>,
}

impl<'a> Operands<'a> {
    /// Random operands of `dtype` (16-bit, or fp8 with an output type `out`), W of
    /// n rows of `ldw`, X packed, Y of m rows of `ldy`.
    fn random(cu: &'a Gpu, r: &mut Rng, (dtype, out): (DType, DType), (m, n, k, ldw, ldy): (usize, usize, usize, usize, usize), bias: bool, alpha: f64, scales: Scales) -> Result<Operands<'a>, String> {
        use skinnylt::kernels::params::{OUT_F16, SCALE_A_VEC, SCALE_B_VEC};
        let b = reference::random_matrix(r, out, 1, n, n);
        let (dw, dx, db, dy) = (Buf(cu, cu.malloc(n * ldw * 2)?), Buf(cu, cu.malloc(m * k * 2)?), Buf(cu, cu.malloc(n * 2)?), Buf(cu, cu.malloc(m * ldy * 2)?));
        cu.htod(db.1, &b)?;
        let bias_at = |j: usize| if bias { reference::from_bits(out, b[j]) as f64 } else { 0.0 };
        if !dtype.is_fp8() {
            let w = reference::random_matrix(r, dtype, n, k, ldw);
            let x = reference::random_matrix(r, dtype, m, k, k);
            cu.htod(dw.1, &w)?;
            cu.htod(dx.1, &x)?;
            let product = reference::reference(dtype, m, n, k, &w, ldw, &x, k, bias.then_some(&b[..]), alpha);
            return Ok(Operands { dw, dx, db, dy, _dscales: Buf(cu, cu.malloc(8)?), a_scale: 0, b_scale: 0, flags: 0, product });
        }
        let w = reference::random_fp8(r, dtype, n, k, ldw);
        let x = reference::random_fp8(r, dtype, m, k, k);
        cu.htod(dw.1, &w)?;
        cu.htod(dx.1, &x)?;
        // Scales in [0.5, 2), so that a scale applied twice or to the wrong row shows.
        let (av, bv) = scales.vectors().unwrap_or((false, false));
        let (na, nb) = (if av { n } else { 1 }, if bv { m } else { 1 });
        let sv: Vec<f32> = (0..na + nb).map(|_| 1.25 + 0.75 * r.unit()).collect();
        let dscales = Buf(cu, cu.malloc(sv.len() * 4)?);
        cu.htod(dscales.1, &sv)?;
        let sa = |j: usize| if scales == Scales::None { 1.0 } else { sv[if av { j } else { 0 }] as f64 };
        let sb = |t: usize| if scales == Scales::None { 1.0 } else { sv[na + if bv { t } else { 0 }] as f64 };
        let value = reference::fp8_table(dtype);
        let dot = reference::reference_by(m, n, k, |j, kk| value[w[j * ldw + kk] as usize], |t, kk| value[x[t * k + kk] as usize]);
        let product = dot.iter().enumerate().map(|(i, d)| alpha * sa(i % n) * sb(i / n) * d + bias_at(i % n)).collect();
        let (a_scale, b_scale) = if scales == Scales::None { (0, 0) } else { (dscales.1, dscales.1 + 4 * na as u64) };
        let flags = if av && scales != Scales::None { SCALE_A_VEC } else { 0 } | if bv { SCALE_B_VEC } else { 0 } | if out == DType::F16 { OUT_F16 } else { 0 };
        Ok(Operands { dw, dx, db, dy, _dscales: dscales, a_scale, b_scale, flags, product })
    }
}

/// A variant's device buffers beyond the product's: C apart from D, the fp32 bias,
/// and alpha and beta as device scalars.
struct ExtraBuffers<'a> {
    c: Buf<'a>,
    bias_f32: Buf<'a>,
    scalars: Buf<'a>,
}

impl<'a> ExtraBuffers<'a> {
    fn upload(cu: &'a Gpu, v: &Variant, h: &HostData, m: usize) -> Result<ExtraBuffers<'a>, String> {
        let c_len = if v.c == COperand::Apart { m * h.ldc } else { 8 };
        let b = ExtraBuffers { c: Buf(cu, cu.malloc(c_len * 2)?), bias_f32: Buf(cu, cu.malloc(h.bias_f32.len() * 4)?), scalars: Buf(cu, cu.malloc(8)?) };
        if v.c == COperand::Apart {
            cu.htod(b.c.1, &h.c)?;
        }
        cu.htod(b.bias_f32.1, &h.bias_f32)?;
        cu.htod(b.scalars.1, &[v.alpha, v.beta])?;
        Ok(b)
    }

    /// The C argument of the call (D itself unless C is apart).
    fn c_arg(&self, v: &Variant, y: u64) -> u64 {
        if v.c == COperand::Apart { self.c.1 } else { y }
    }

    /// alpha and beta as the call passes them: host floats (`host`, which must
    /// outlive the call) or the device scalars.
    fn scalar_args(&self, v: &Variant, host: &[f32; 2]) -> (*const c_void, *const c_void) {
        if v.device_scalars {
            (self.scalars.1 as *const c_void, (self.scalars.1 + 4) as *const c_void)
        } else {
            ((&host[0] as *const f32).cast(), (&host[1] as *const f32).cast())
        }
    }

    /// The problem's output, C and scalar fields as routing fills them (the other
    /// fields are placeholders for the caller to set).
    fn problem(&self, v: &Variant, y: u64, ldy: usize) -> Problem {
        let c = self.c_arg(v, y);
        let (c, alpha_ptr, beta_ptr) = match v.device_scalars {
            true => (c, self.scalars.1, self.scalars.1 + 4),
            false => (if v.beta != 0.0 { c } else { 0 }, 0, 0),
        };
        let ldc = if v.c == COperand::Apart { v.ldc(ldy) } else { ldy } as u64;
        Problem { y, ldy: ldy as u64, c, ldc, alpha: v.alpha, beta: v.beta, alpha_ptr, beta_ptr, ..Problem::packed(DType::Bf16, 1, 1, 1, false) }
    }

    /// Before each run: D poisoned with NaN, or holding C for an in-place update.
    fn prepare_output(&self, cu: &Gpu, v: &Variant, h: &HostData, y: u64, m: usize, ldy: usize) -> Result<(), String> {
        match v.c {
            COperand::InPlace => cu.htod(y, &h.c[..m * ldy]),
            _ => cu.memset16(y, 0xffff, m * ldy),
        }
    }
}

/// A kernel's passed cases and their largest relative error, for its sweep line.
#[derive(Default)]
struct Tally {
    ok: usize,
    worst: f64,
}

impl<'a> Suite<'a> {
    /// Writes the log, prints the failures and the closing line; the exit status.
    fn finish(&self, a: &Args) -> Result<i32, String> {
        if let Some(path) = &a.out {
            std::fs::write(path, self.log.join("\n") + "\n").map_err(|e| e.to_string())?;
        }
        for f in &self.failed {
            println!("FAILED: {f}");
        }
        println!("{} passed, {} failed", self.passed, self.failed.len());
        Ok((!self.failed.is_empty()) as i32)
    }

    /// Every compiled kernel of `arch` (name containing `filter`), forced through
    /// `engine::run_choice`, on small odd shapes at several split-K factors.
    fn kernel_sweep(&mut self, arch: skinnylt::gpu::Arch, filter: Option<&str>) -> Result<(), String> {
        let cat = kernels::for_arch(arch);
        let mut swept = 0;
        for (ki, ke) in cat.kernels.iter().enumerate() {
            if filter.is_some_and(|f| !ke.name.contains(f)) {
                continue;
            }
            swept += 1;
            self.sweep_kernel(ki, ke)?;
        }
        if swept == 0 {
            return Err(format!("no {} kernel matches the filter", arch.name()));
        }
        println!("kernel sweep: {swept} kernels of {}", arch.name());
        Ok(())
    }

    /// Every kernel of `arch` at split 1 and 3, launched batch-invariant (K split
    /// at the same k for every kernel, partials added in order), outputs grouped by
    /// their exact bits. Each kernel is checked
    /// against float64; the kernels of one `planner::summation_class` must land in
    /// one group. Prints the groups (as the classes they hold).
    fn summation_classes(&mut self, arch: skinnylt::gpu::Arch) -> Result<(), String> {
        use skinnylt::tuning::planner::summation_class;
        let cu = self.cu;
        let cat = kernels::for_arch(arch);
        for dtype in DType::ALL {
            for (m, n, k) in [(8usize, 1024usize, 7168usize), (3, 640, 2888), (33, 2112, 2880)] {
                let host = HostInputs::random(&mut self.rng, dtype, m, n, k, k);
                let want = reference::reference(dtype, m, n, k, &host.w, k, &host.x, k, None, 1.0);
                let d = host.upload(cu, m, n)?;
                // Batch-invariant launches: K split at the same k for every kernel.
                let p = Problem { w: d.dw.1, x: d.dx.1, y: d.dy.1, batch_invariant: true, ..Problem::packed(dtype, m as u32, n as u32, k as u32, false) };
                for split in [1u32, 3] {
                    let mut groups: Vec<(Vec<u16>, Vec<usize>)> = Vec::new();
                    let name = format!("summation classes {} M={m} N={n} K={k} split={split}", dtype.name());
                    let mut res = Ok(());
                    for (ki, ke) in cat.kernels.iter().enumerate().filter(|(_, ke)| ke.dtype == dtype) {
                        let call = Call { workspace: 0, workspace_size: 0, stream: Stream(std::ptr::null_mut()) };
                        cu.memset16(d.dy.1, 0xffff, m * n)?;
                        let y = crate::engines()
                            .run_choice(self.h.0 as usize, &p, Choice::Run { kernel: ki, split_k: split }, &call)
                            .map_err(|e| format!("{}: run_choice: {e}", ke.name))
                            .and_then(|_| cu.device_sync())
                            .and_then(|_| {
                                let mut y = vec![0u16; m * n];
                                cu.dtoh(&mut y, d.dy.1)?;
                                Ok(y)
                            })
                            .and_then(|y| check_output(dtype, m, n, n, &y, &want).map(|_| y).map_err(|e| format!("{}: {e}", ke.name)));
                        match y {
                            Ok(y) => match groups.iter_mut().find(|g| g.0 == y) {
                                Some(g) => g.1.push(ki),
                                None => groups.push((y, vec![ki])),
                            },
                            Err(e) => {
                                res = Err(e);
                                break;
                            }
                        }
                    }
                    let class_of = |ki: usize| summation_class(&cat.kernels[ki].config);
                    let describe = |g: &Vec<usize>| {
                        let mut cs: Vec<String> = g.iter().map(|&ki| format!("{:?} k{} wk{}", class_of(ki).0, class_of(ki).1, class_of(ki).2)).collect();
                        cs.sort();
                        cs.dedup();
                        format!("{} kernels [{}]", g.len(), cs.join(", "))
                    };
                    if res.is_ok() {
                        println!("{name}: {} groups", groups.len());
                        for g in &groups {
                            println!("    {}", describe(&g.1));
                        }
                        // A class split over two groups breaks batch-invariant planning.
                        for (i, g) in groups.iter().enumerate() {
                            for h in &groups[i + 1..] {
                                if let Some(&ki) = g.1.iter().find(|&&a| h.1.iter().any(|&b| class_of(a) == class_of(b))) {
                                    res = Err(format!("class {:?} gives two results ({} and {})", class_of(ki), describe(&g.1), describe(&h.1)));
                                }
                            }
                        }
                    }
                    self.record(name, res.map(|_| format!("{} groups", groups.len())));
                }
            }
        }
        Ok(())
    }

    /// Kernel `ki` on M = 1..8, and around its token tile where that is larger;
    /// prints its line.
    fn sweep_kernel(&mut self, ki: usize, ke: &KernelEntry) -> Result<(), String> {
        let tm = ke.config.tile_m as usize;
        let mut ms: Vec<usize> = (1..=8).collect();
        if tm > 8 {
            ms.extend([tm - 1, tm, tm + 1]);
        }
        let mut tally = Tally::default();
        let failed_before = self.failed.len();
        for (mi, &m) in ms.iter().enumerate() {
            self.sweep_shape(ki, ke, (mi, m), &mut tally)?;
        }
        let bad = self.failed.len() - failed_before;
        println!("{:<60} {:>3} ok {:>3} failed  max rel err {:.2e}", ke.name, tally.ok, bad, tally.worst);
        Ok(())
    }

    /// The `mi`-th sweep shape of a kernel, with M = `m`: N and K drawn around its
    /// tiles, padded leading dimensions, bias and alpha != 1 on some; every split.
    fn sweep_shape(&mut self, ki: usize, ke: &KernelEntry, (mi, m): (usize, usize), tally: &mut Tally) -> Result<(), String> {
        let cu = self.cu;
        let (tn, tk) = (ke.config.tile_n as usize, ke.config.tile_k as usize);
        // fp8 kernels count K in pairs: K and the strides in elements are twice theirs.
        let per = ke.dtype.per_unit() as usize;
        let out = if !ke.dtype.is_fp8() { ke.dtype } else { DType::ALL[(ki + mi) % 2] };
        let r = &mut self.rng;
        // N: a partial last tile (sometimes a single partial tile), odd; K: a
        // multiple of 16 bytes with a partial last K block, >= 5 blocks (split 5).
        let n = if mi % 3 == 0 { 1 + 2 * r.below((tn / 2) as u64) as usize } else { tn + 1 + 2 * r.below(tn as u64) as usize };
        let k = per * (5 * tk + 8 * (1 + r.below((tk / 8 - 1) as u64) as usize));
        let (ldw, ldy) = (k + 8 * per * (mi % 3), n + mi % 4);
        // The epilogue: one of its variants, or (every tenth) the plain product with
        // a bias on even shapes and alpha != 1 on some, rotating over kernels.
        let variant = VARIANTS.get((ki + mi) % (VARIANTS.len() + 1)).copied().unwrap_or(Variant {
            alpha: if mi % 4 == 1 { 0.5 } else { 1.0 },
            beta: 0.0,
            c: COperand::Unused,
            act: 0,
            bias: if mi % 2 == 0 { BiasKind::Output } else { BiasKind::None },
            device_scalars: false,
        });
        let scales = if ke.dtype.is_fp8() { Scales::ALL[(ki + mi) % Scales::ALL.len()] } else { Scales::None };
        let out_bias = variant.bias == BiasKind::Output;
        let ops = Operands::random(cu, r, (ke.dtype, out), (m, n, k, ldw, ldy), out_bias, variant.alpha as f64, scales)?;
        let extra = variant.host(r, out, m, n, ldy);
        let want = variant.reference(out, m, n, &ops.product, &extra);
        let scale = variant.pre_activation(out, m, n, &ops.product, &extra);
        let ext = ExtraBuffers::upload(cu, &variant, &extra, m)?;
        let p = Problem {
            bias: match variant.bias {
                BiasKind::None => 0,
                BiasKind::Output => ops.db.1,
                BiasKind::F32 => ext.bias_f32.1,
            },
            epilogue: variant.kernel_bits() | ops.flags,
            dtype: ke.dtype,
            out,
            a_scale: ops.a_scale,
            b_scale: ops.b_scale,
            m: m as u32,
            n: n as u32,
            k: k as u32,
            w: ops.dw.1,
            ldw: ldw as u64,
            x: ops.dx.1,
            ldx: k as u64,
            ..ext.problem(&variant, ops.dy.1, ldy)
        };
        let d = &ops;
        for (si, &split) in SWEEP_SPLITS.iter().enumerate() {
            let name = format!("sweep {} M={m} N={n} K={k} split={split} ldw={ldw} ldy={ldy} {}{}", ke.name, variant.name(), scales.name(out));
            // A caller workspace on every other run.
            let (ws, ws_size) = if (mi + si) % 2 == 1 { (self.ws.1, self.ws_bytes) } else { (0, 0) };
            let call = Call { workspace: ws, workspace_size: ws_size, stream: Stream(std::ptr::null_mut()) };
            ext.prepare_output(cu, &variant, &extra, d.dy.1, m, ldy)?;
            let res = crate::engines()
                .run_choice(self.h.0 as usize, &p, Choice::Run { kernel: ki, split_k: split }, &call)
                .map_err(|e| format!("run_choice: {e}"))
                .and_then(|_| cu.device_sync())
                .and_then(|_| {
                    let mut y = vec![0u16; m * ldy];
                    cu.dtoh(&mut y, d.dy.1)?;
                    Ok(y)
                })
                .and_then(|y| check_output_scaled(out, m, n, ldy, &y, &want, &scale))
                .map(|e| {
                    tally.worst = tally.worst.max(e);
                    tally.ok += 1;
                    format!("rel_err={e:.3e}")
                });
            self.record(name, res);
        }
        Ok(())
    }

    fn inputs(&mut self, c: &Case) -> Result<Inputs<'a>, String> {
        let host = HostInputs::random(&mut self.rng, c.dtype, c.m, c.n, c.k, c.ldw);
        let dev = host.upload(self.cu, c.m, c.ldy)?;
        let l = Linear::new(c.dtype, c.m as u64, c.n as u64, c.k as u64, c.ldw as u64, c.k as u64, c.ldy as u64, c.bias.then_some(dev.db.1))?;
        Ok(Inputs { host, dev, l })
    }

    fn launch(&self, c: &Case, i: &Inputs, stream: *mut c_void) -> Result<(), String> {
        let (ws, ws_size) = if c.workspace { (self.ws.1, self.ws_bytes) } else { (0, 0) };
        let before = crate::counters().intercepted;
        let st = i.l.run(&self.h, 1.0, i.dev.dw.1, i.dev.dx.1, i.dev.dy.1, ws, ws_size, stream);
        if st != skinnylt::abi::STATUS_SUCCESS {
            return Err(format!("hipblasLtMatmul returned {} ({})", skinnylt::abi::status_name(st), crate::counters()));
        }
        if crate::counters().intercepted != before + 1 {
            return Err("the call was not run by skinnylt".into());
        }
        Ok(())
    }

    fn read(&self, c: &Case, i: &Inputs) -> Result<Vec<u16>, String> {
        let mut y = vec![0u16; c.m * c.ldy];
        self.cu.dtoh(&mut y, i.dev.dy.1)?;
        Ok(y)
    }

    /// NaN poison over a case's whole output, padding included.
    fn poison(&self, c: &Case, i: &Inputs) -> Result<(), String> {
        self.cu.memset16(i.dev.dy.1, 0xffff, c.m * c.ldy)
    }

    fn record(&mut self, name: String, result: Result<String, String>) {
        match result {
            Ok(detail) => {
                self.passed += 1;
                self.log.push(format!("{{\"case\":{name:?},\"ok\":true,\"detail\":{detail:?}}}"));
            }
            Err(e) => {
                println!("  FAIL {name}: {e}");
                self.log.push(format!("{{\"case\":{name:?},\"ok\":false,\"detail\":{e:?}}}"));
                self.failed.push(format!("{name}: {e}"));
            }
        }
    }

    fn correctness(&mut self, c: &Case) -> Result<(), String> {
        let name = format!("{} {} M={} N={} K={} bias={} ldw={} ldy={} ws={}", c.group, c.dtype.name(), c.m, c.n, c.k, c.bias, c.ldw, c.ldy, c.workspace);
        let i = self.inputs(c)?;
        self.poison(c, &i)?;
        let res = self.launch(c, &i, std::ptr::null_mut()).and_then(|_| self.cu.device_sync()).and_then(|_| self.read(c, &i)).and_then(|y| {
            let r = i.reference(c);
            check_output(c.dtype, c.m, c.n, c.ldy, &y, &r).map(|e| format!("rel_err={e:.3e}"))
        });
        self.record(name, res);
        Ok(())
    }

    /// The sample clients' sequence: the heuristic's first algo, then `hipblasLtMatmul`
    /// with it (scalars, (W, X, C, D), the workspace); the call must be run by
    /// skinnylt. Returns D's first `len` elements after the device is done.
    fn heuristic_then_matmul(&self, l: &Linear, scalars: (*const c_void, *const c_void), ptrs: (u64, u64, u64, u64), ws: (u64, usize), len: usize) -> Result<Vec<u16>, String> {
        let before = crate::counters().intercepted;
        let algo = l.heuristic(&self.h)?;
        match l.run_full(&self.h, Some(&algo), scalars, ptrs, ws, std::ptr::null_mut()) {
            skinnylt::abi::STATUS_SUCCESS if crate::counters().intercepted == before + 1 => {}
            skinnylt::abi::STATUS_SUCCESS => return Err("the call was not run by skinnylt".into()),
            st => return Err(format!("hipblasLtMatmul returned {} ({})", skinnylt::abi::status_name(st), crate::counters())),
        }
        self.cu.device_sync()?;
        let mut y = vec![0u16; len];
        self.cu.dtoh(&mut y, ptrs.3)?;
        Ok(y)
    }

    /// One epilogue case through the C API: descriptors as PyTorch sets them,
    /// heuristic, then matmul with the algo it returned; against float64.
    fn epilogue(&mut self, c: &Case, v: &Variant) -> Result<(), String> {
        let cu = self.cu;
        let name = format!("{} {} M={} N={} K={} ldy={} {}", c.group, c.dtype.name(), c.m, c.n, c.k, c.ldy, v.name());
        let host = HostInputs::random(&mut self.rng, c.dtype, c.m, c.n, c.k, c.ldw);
        let extra = v.host(&mut self.rng, c.dtype, c.m, c.n, c.ldy);
        let d = host.upload(cu, c.m, c.ldy)?;
        let ext = ExtraBuffers::upload(cu, v, &extra, c.m)?;
        let out_bias = v.bias == BiasKind::Output;
        let spec = client::Options {
            epilogue: v.hip_epilogue(),
            bias: match v.bias {
                BiasKind::None => None,
                BiasKind::Output => Some(d.db.1),
                BiasKind::F32 => Some(ext.bias_f32.1),
            },
            bias_type: (v.bias == BiasKind::F32).then_some(skinnylt::abi::R_32F),
            device_scalars: v.device_scalars,
            ldc: (v.c == COperand::Apart).then_some(extra.ldc as u64),
            uniform_order: false,
            ..client::Options::default()
        };
        let l = Linear::with_options(c.dtype, c.m as u64, c.n as u64, c.k as u64, c.ldw as u64, c.k as u64, c.ldy as u64, &spec)?;
        ext.prepare_output(cu, v, &extra, d.dy.1, c.m, c.ldy)?;
        let host_scalars = [v.alpha, v.beta];
        let ws = if c.workspace { (self.ws.1, self.ws_bytes) } else { (0, 0) };
        let res = self
            .heuristic_then_matmul(&l, ext.scalar_args(v, &host_scalars), (d.dw.1, d.dx.1, ext.c_arg(v, d.dy.1), d.dy.1), ws, c.m * c.ldy)
            .and_then(|y| {
                let product = reference::reference(c.dtype, c.m, c.n, c.k, &host.w, c.ldw, &host.x, c.k, out_bias.then_some(&host.b[..]), v.alpha as f64);
                let want = v.reference(c.dtype, c.m, c.n, &product, &extra);
                let scale = v.pre_activation(c.dtype, c.m, c.n, &product, &extra);
                check_output_scaled(c.dtype, c.m, c.n, c.ldy, &y, &want, &scale).map(|e| format!("rel_err={e:.3e}"))
            });
        self.record(name, res);
        Ok(())
    }

    /// fp8 through the C API as `torch._scaled_mm` calls it: the public grid and
    /// `random` odd shapes (K a multiple of 16),
    /// each with the next of the scale kinds, bias kinds (none, the output type,
    /// fp32) and output types in turn; heuristic then matmul; against float64 of
    /// the decoded fp8 values.
    fn fp8_group(&mut self, fp8: DType, limit: usize, random: usize) -> Result<(), String> {
        let t0 = Instant::now();
        let mut shapes: Vec<(usize, usize, usize)> = grid::public().iter().take(limit).map(|sh| (sh.m as usize, sh.n as usize, sh.k as usize)).collect();
        for _ in 0..random {
            let r = &mut self.rng;
            shapes.push((1 + r.below(128) as usize, 1 + r.below(3000) as usize, 16 * (1 + r.below(400) as usize)));
        }
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let bias = [BiasKind::None, BiasKind::Output, BiasKind::F32][i % 3];
            self.fp8_case(fp8, (m, n, k), Scales::ALL[i / 3 % 4], bias, DType::ALL[i / 12 % 2])?;
        }
        println!("fp8 ({}): {} cases in {:.0} s", fp8.name(), shapes.len(), t0.elapsed().as_secs_f64());
        Ok(())
    }

    fn fp8_case(&mut self, fp8: DType, (m, n, k): (usize, usize, usize), scales: Scales, bias: BiasKind, out: DType) -> Result<(), String> {
        let cu = self.cu;
        let alpha = 0.75f32;
        let name = format!("fp8 {} M={m} N={n} K={k} bias={bias:?}{}", fp8.name(), scales.name(out));
        let ops = Operands::random(cu, &mut self.rng, (fp8, out), (m, n, k, k, n), bias == BiasKind::Output, alpha as f64, scales)?;
        let bias_f32: Vec<f32> = (0..n).map(|_| self.rng.unit()).collect();
        let db32 = Buf(cu, cu.malloc(n * 4)?);
        cu.htod(db32.1, &bias_f32)?;
        let want: Vec<f64> = match bias {
            BiasKind::F32 => ops.product.iter().enumerate().map(|(i, p)| p + bias_f32[i % n] as f64).collect(),
            _ => ops.product.clone(),
        };
        let (av, bv) = scales.vectors().unwrap_or((false, false));
        let spec = client::Options {
            epilogue: if bias == BiasKind::None { 0 } else { skinnylt::abi::EPILOGUE_BIAS },
            bias: match bias {
                BiasKind::None => None,
                BiasKind::Output => Some(ops.db.1),
                BiasKind::F32 => Some(db32.1),
            },
            bias_type: (bias == BiasKind::F32).then_some(skinnylt::abi::R_32F),
            out: Some(out),
            a_scale: (scales != Scales::None).then_some((ops.a_scale, av)),
            b_scale: (scales != Scales::None).then_some((ops.b_scale, bv)),
            ..client::Options::default()
        };
        let l = Linear::with_options(fp8, m as u64, n as u64, k as u64, k as u64, k as u64, n as u64, &spec)?;
        cu.memset16(ops.dy.1, 0xffff, m * n)?;
        let host_scalars = [alpha, 0.0];
        let scalars = ((&host_scalars[0] as *const f32).cast(), (&host_scalars[1] as *const f32).cast());
        let res = self
            .heuristic_then_matmul(&l, scalars, (ops.dw.1, ops.dx.1, ops.dy.1, ops.dy.1), (self.ws.1, self.ws_bytes), m * n)
            .and_then(|y| check_fp8_output(out, m, n, &y, &want).map(|e| format!("rel_err={e:.3e}")));
        self.record(name, res);
        Ok(())
    }

    /// The batch-invariance group: every shape of `invariance_shapes` (the table's
    /// measured plans with `--tuning shipped`), in both 16-bit dtypes in turn, and
    /// the control.
    fn invariance_group(&mut self, a: &Args, table: &skinnylt::tuning::Tuning) -> Result<(), String> {
        let t0 = Instant::now();
        let shapes = invariance_shapes(&mut self.rng, a.limit.unwrap_or(usize::MAX), (a.tuning == "shipped").then_some(table));
        for (i, &(n, k, bias)) in shapes.iter().enumerate() {
            self.batch_invariance(DType::ALL[i % 2], n, k, bias, true)?;
        }
        self.batch_invariance(DType::Bf16, 2880, 2880, true, false)?;
        println!("batch invariance: {} shapes x M = 1..{INVARIANT_ROWS} in {:.0} s", shapes.len(), t0.elapsed().as_secs_f64());
        Ok(())
    }

    /// Batch invariance (`UNIFORM_SUMMATION_ORDER_EXT` on the descriptor): the
    /// outputs of 128 token rows at M = 128 (checked against float64), then every M
    /// from 1 to 128 on a window of those rows at an offset that moves with M, so a
    /// row is seen at many places in many batch sizes: each row bitwise equal to
    /// its M = 128 output.
    ///
    /// Without the attribute (`uniform_order` false: the control), the same
    /// comparison must find a row that differs, or the test could not fail.
    fn batch_invariance(&mut self, dtype: DType, n: usize, k: usize, bias: bool, uniform_order: bool) -> Result<(), String> {
        let (cu, rows) = (self.cu, INVARIANT_ROWS);
        let control = if uniform_order { "" } else { " (control: without UNIFORM_SUMMATION_ORDER_EXT)" };
        let name = format!("batch invariance {} N={n} K={k} bias={bias} M=1..{rows}{control}", dtype.name());
        let host = HostInputs::random(&mut self.rng, dtype, rows, n, k, k);
        let d = host.upload(cu, rows, n)?;
        let run = |m: usize, off: usize, y: u64| -> Result<Vec<u16>, String> {
            let o = client::Options { epilogue: if bias { skinnylt::abi::EPILOGUE_BIAS } else { 0 }, bias: bias.then_some(d.db.1), uniform_order, ..client::Options::default() };
            let l = Linear::with_options(dtype, m as u64, n as u64, k as u64, k as u64, k as u64, n as u64, &o)?;
            cu.memset16(y, 0xffff, m * n)?;
            let before = crate::counters().intercepted;
            let st = l.run(&self.h, 1.0, d.dw.1, d.dx.1 + (off * k * 2) as u64, y, 0, 0, std::ptr::null_mut());
            if st != skinnylt::abi::STATUS_SUCCESS || crate::counters().intercepted != before + 1 {
                return Err(format!("M={m}: not run by skinnylt ({}, {})", skinnylt::abi::status_name(st), crate::counters()));
            }
            cu.device_sync()?;
            let mut out = vec![0u16; m * n];
            cu.dtoh(&mut out, y)?;
            Ok(out)
        };
        let res = (|| {
            let all = run(rows, 0, d.dy.1)?;
            let want = reference::reference(dtype, rows, n, k, &host.w, k, &host.x, k, bias.then_some(&host.b[..]), 1.0);
            let err = check_output(dtype, rows, n, n, &all, &want)?;
            let (mut moved, mut kernels) = (0, std::collections::BTreeSet::new());
            for m in 1..=rows {
                let off = (m * 37) % (rows - m + 1);
                moved += (off > 0) as usize;
                let p = Problem { batch_invariant: uniform_order, ..Problem::packed(dtype, m as u32, n as u32, k as u32, bias) };
                if let Ok(plan) = crate::engines().plan_for(self.h.0 as usize, &p, false) {
                    kernels.insert(plan.kernel);
                }
                let got = run(m, off, d.dy.1)?;
                if let Some(t) = (0..m).find(|&t| got[t * n..(t + 1) * n] != all[(off + t) * n..(off + t + 1) * n]) {
                    return match uniform_order {
                        true => Err(format!("row {} differs at M={m} (place {t}) from M={rows}", off + t)),
                        false => Ok(format!("row {} differs at M={m}, as expected without the attribute", off + t)),
                    };
                }
            }
            match uniform_order {
                true => Ok(format!("rel_err={err:.3e} at M={rows}; every row bitwise equal at M=1..{rows} ({} kernels, {moved} windows moved)", kernels.len())),
                false => Err("no row differs without the attribute: the test could not fail here".into()),
            }
        })();
        self.record(name, res);
        Ok(())
    }

    fn determinism(&mut self, shapes: &[Case]) -> Result<(), String> {
        for c in shapes {
            let i = self.inputs(c)?;
            let mut first: Option<Vec<u16>> = None;
            let mut res = Ok(String::new());
            for run in 0..100 {
                self.poison(c, &i)?;
                if let Err(e) = self.launch(c, &i, std::ptr::null_mut()).and_then(|_| self.cu.device_sync()) {
                    res = Err(e);
                    break;
                }
                let y = self.read(c, &i)?;
                match &first {
                    None => first = Some(y),
                    Some(f) if *f != y => {
                        res = Err(format!("run {run} differs from run 0"));
                        break;
                    }
                    _ => {}
                }
            }
            self.record(format!("determinism x100 {} M={} N={} K={}", c.dtype.name(), c.m, c.n, c.k), res.map(|_| "identical bits".into()));
        }
        Ok(())
    }

    /// Eager runs of `runs` on `streams[0]`, one at a time, each read back (and,
    /// with `poison`, poisoned again for what follows): the results a test
    /// compares against. A failed launch destroys `streams`, records `test` as
    /// failed and ends the suite with the error.
    fn eager_runs(&mut self, test: &str, runs: &[(&Case, &Inputs)], streams: &[*mut c_void], poison: bool) -> Result<Vec<Vec<u16>>, String> {
        let (cu, stream) = (self.cu, streams[0]);
        let mut results = Vec::new();
        for &(c, i) in runs {
            if let Err(e) = self.launch(c, i, stream) {
                for &s in streams {
                    cu.stream_destroy(s);
                }
                self.record(test.into(), Err(e.clone()));
                return Err(e);
            }
            cu.sync(stream)?;
            results.push(self.read(c, i)?);
            if poison {
                self.poison(c, i)?;
            }
        }
        Ok(results)
    }

    fn graph_replay(&mut self, shapes: &[Case]) -> Result<(), String> {
        let cu = self.cu;
        let stream = cu.stream_create()?;
        let inputs: Vec<Inputs> = shapes.iter().map(|c| self.inputs(c)).collect::<Result<_, _>>()?;
        let runs: Vec<(&Case, &Inputs)> = shapes.iter().zip(&inputs).collect();
        // Eager results first.
        let eager = self.eager_runs(GRAPH_TEST, &runs, &[stream], true)?;
        let exec = cu.capture(stream, || {
            for &(c, i) in &runs {
                self.launch(c, i, stream)?;
            }
            Ok(())
        })?;
        let mut res = Ok("1000 replays bitwise equal to eager runs".to_owned());
        'outer: for rep in 1..=1000 {
            cu.graph_launch(exec, stream)?;
            if rep == 1 || rep % 250 == 0 {
                cu.sync(stream)?;
                for (&(c, i), e) in runs.iter().zip(&eager) {
                    if self.read(c, i)? != *e {
                        res = Err(format!("replay {rep}: M={} N={} K={} differs from eager", c.m, c.n, c.k));
                        break 'outer;
                    }
                    self.poison(c, i)?;
                }
            }
        }
        cu.sync(stream)?;
        cu.graph_destroy(exec);
        cu.stream_destroy(stream);
        self.record(GRAPH_TEST.into(), res);
        Ok(())
    }

    /// The per-thread default stream (handle 0x2) is a different stream in every
    /// thread under one value, so it gets no split-K lane: the call must still run,
    /// correctly, without split-K.
    fn per_thread_stream(&mut self, c: &Case) -> Result<(), String> {
        let i = self.inputs(c)?;
        self.poison(c, &i)?;
        let fallbacks = crate::counters().lane_fallbacks;
        let res = self.launch(c, &i, 2usize as *mut c_void).and_then(|_| self.cu.device_sync()).and_then(|_| self.read(c, &i)).and_then(|y| {
            let r = i.reference(c);
            match reference::rel_error(c.dtype, c.m, c.n, &y, c.ldy, &r) {
                Some(e) if e <= reference::tolerance(c.dtype) => Ok(format!("rel_err={e:.3e}, lane fallbacks {}", crate::counters().lane_fallbacks - fallbacks)),
                Some(e) => Err(format!("relative error {e:.3e}")),
                None => Err("output not fully written".into()),
            }
        });
        self.record(format!("per-thread default stream (no lane) M={} N={} K={}", c.m, c.n, c.k), res);
        Ok(())
    }

    /// hipBLASLt's create allocates and synchronises, which ends a graph capture
    /// running on another thread in global mode (the runtimes' default). Here one
    /// thread captures `captured` on a stream (non-blocking, then blocking) while
    /// another creates a handle, runs its first call (`other`) and destroys it, in
    /// global mode: the capture must end cleanly, its replay equal the eager run
    /// bit for bit, and the other thread's result be correct.
    fn capture_safe_creation(&mut self, captured: &Case, other: &Case, ctx: skinnylt::gpu::Context) -> Result<(), String> {
        let cu = self.cu;
        let i = self.inputs(captured)?;
        let stream = cu.stream_create()?;
        let eager = self.eager_runs(CAPTURE_CREATE_TEST, &[(captured, &i)], &[stream], true)?;
        cu.stream_destroy(stream);
        let res = (|| -> Result<String, String> {
            for blocking in [false, true] {
                let o = self.inputs(other)?;
                self.poison(other, &o)?;
                let s = if blocking { cu.stream_create_blocking()? } else { cu.stream_create()? };
                let s2 = cu.stream_create()?;
                let (s_addr, s2_addr) = (s as usize, s2 as usize);
                cu.begin_capture_global(s)?;
                self.launch(captured, &i, s)?;
                let (dw, dx, dy) = (o.dev.dw.1, o.dev.dx.1, o.dev.dy.1);
                let (dtype, m, n, k, ldw, ldy) = (other.dtype, other.m as u64, other.n as u64, other.k as u64, other.ldw as u64, other.ldy as u64);
                let bias = other.bias.then_some(o.dev.db.1);
                let during = std::thread::scope(|scope| {
                    scope
                        .spawn(move || -> Result<(), String> {
                            cu.make_current(ctx)?;
                            let h = Handle::new()?;
                            let l = Linear::new(dtype, m, n, k, ldw, k, ldy, bias)?;
                            let st = l.run(&h, 1.0, dw, dx, dy, 0, 0, s2_addr as *mut c_void);
                            if st != skinnylt::abi::STATUS_SUCCESS {
                                return Err(format!("first call on the new handle returned {}", skinnylt::abi::status_name(st)));
                            }
                            // The test's own wait, out of the rules under test.
                            skinnylt::gpu::capture_relaxed(cu.rt, || cu.sync(s2_addr as *mut c_void))?;
                            drop(h);
                            Ok(())
                        })
                        .join()
                        .map_err(|_| "the creating thread panicked".to_owned())?
                });
                let ended = cu.end_capture(s_addr as *mut c_void);
                during?;
                let exec = ended.map_err(|e| format!("the capture did not survive (stream {}): {e}", if blocking { "blocking" } else { "non-blocking" }))?;
                for _ in 0..10 {
                    cu.graph_launch(exec, s)?;
                }
                cu.sync(s)?;
                cu.graph_destroy(exec);
                let (got, mine) = (self.read(captured, &i)?, self.read(other, &o)?);
                self.poison(captured, &i)?;
                cu.stream_destroy(s);
                cu.stream_destroy(s2);
                if got != eager[0] {
                    return Err("the replay differs from the eager run".into());
                }
                match reference::rel_error(other.dtype, other.m, other.n, &mine, other.ldy, &o.reference(other)) {
                    Some(e) if e <= reference::tolerance(other.dtype) => {}
                    Some(e) => return Err(format!("the new handle's call: relative error {e:.3e}")),
                    None => return Err("the new handle's call did not write its output".into()),
                }
            }
            Ok("capture intact on non-blocking and blocking streams; replays bitwise equal; the new handle's result correct".into())
        })();
        self.record(CAPTURE_CREATE_TEST.into(), res);
        Ok(())
    }

    /// Back-to-back dependent GEMMs on one stream, where programmatic dependent
    /// launch lets a kernel start (and prefetch) before its predecessor ends (see
    /// `Chain`). Eager without syncs and 200 graph replays must equal, bit for bit,
    /// the same chain run one synchronised call at a time; the first step is checked
    /// against float64. Every step must be run by skinnylt.
    fn dependent_chain(&mut self) -> Result<(), String> {
        let cu = self.cu;
        let chain = Chain::new(cu, &mut self.rng)?;
        let intercepted = crate::counters().intercepted;
        let res = chain.check(&self.h, self.pdl);
        cu.sync(chain.stream)?;
        cu.stream_destroy(chain.stream);
        let ran = crate::counters().intercepted - intercepted;
        let res = match res {
            Ok(_) if ran == 0 => Err("no step was run by skinnylt".into()),
            r => r.map(|d| format!("{d}; {ran} calls run by skinnylt")),
        };
        self.record(CHAIN_TEST.into(), res);
        Ok(())
    }

    fn two_streams(&mut self, a: &Case, b: &Case) -> Result<(), String> {
        let cu = self.cu;
        let (s1, s2) = (cu.stream_create()?, cu.stream_create()?);
        let (ia, ib) = (self.inputs(a)?, self.inputs(b)?);
        let want = self.eager_runs(STREAMS_TEST, &[(a, &ia), (b, &ib)], &[s1, s2], false)?;
        let mut res = Ok("bitwise equal to single-stream runs".to_owned());
        for round in 0..50 {
            self.poison(a, &ia)?;
            self.poison(b, &ib)?;
            for _ in 0..4 {
                self.launch(a, &ia, s1)?;
                self.launch(b, &ib, s2)?;
            }
            cu.sync(s1)?;
            cu.sync(s2)?;
            if self.read(a, &ia)? != want[0] || self.read(b, &ib)? != want[1] {
                res = Err(format!("round {round}: results differ"));
                break;
            }
        }
        cu.stream_destroy(s1);
        cu.stream_destroy(s2);
        self.record(STREAMS_TEST.into(), res);
        Ok(())
    }
}

/// The dependent chain, bf16: `STEPS` square steps of `HIDDEN` on M = `M` tokens,
/// each reading the previous step's output as X (read after write) and overwriting
/// the buffer the previous step read (write after read): bufs[0] = X0; step i reads
/// bufs[i % 2], writes bufs[(i + 1) % 2]. Then a last step Y = X_last · (final
/// buffer)ᵀ reads a previous output as its *weights* (M × HIDDEN), which the
/// kernels prefetch before waiting.
struct Chain<'a> {
    cu: &'a Gpu,
    step: Linear,
    last: Linear,
    /// The steps' weights, and X0: host copies for the float64 check of step 0.
    w: Vec<Vec<u16>>,
    x0: Vec<u16>,
    dws: Vec<Buf<'a>>,
    /// X0, copied into bufs[0] at the start of every run.
    pristine: Buf<'a>,
    bufs: [Buf<'a>; 2],
    /// The last step's X (LAST_M × HIDDEN) and Y (LAST_M × M).
    dxl: Buf<'a>,
    dyl: Buf<'a>,
    stream: *mut c_void,
}

impl<'a> Chain<'a> {
    const DTYPE: DType = DType::Bf16;
    const M: usize = 8;
    const HIDDEN: usize = 2048;
    const STEPS: usize = 6;
    const LAST_M: usize = 4;
    /// Keeps values in range along the chain.
    const ALPHA: f32 = 1.0 / 64.0;

    fn new(cu: &'a Gpu, rng: &mut Rng) -> Result<Chain<'a>, String> {
        let (dtype, m, h, mw) = (Self::DTYPE, Self::M, Self::HIDDEN, Self::LAST_M);
        let w: Vec<Vec<u16>> = (0..Self::STEPS).map(|_| reference::random_matrix(rng, dtype, h, h, h)).collect();
        let x0 = reference::random_matrix(rng, dtype, m, h, h);
        let xl = reference::random_matrix(rng, dtype, mw, h, h);
        let dws: Vec<Buf> = w.iter().map(|v| cu.malloc(v.len() * 2).map(|p| Buf(cu, p))).collect::<Result<_, _>>()?;
        for (d, v) in dws.iter().zip(&w) {
            cu.htod(d.1, v)?;
        }
        let (pristine, bufs) = (Buf(cu, cu.malloc(m * h * 2)?), [Buf(cu, cu.malloc(m * h * 2)?), Buf(cu, cu.malloc(m * h * 2)?)]);
        let (dxl, dyl) = (Buf(cu, cu.malloc(mw * h * 2)?), Buf(cu, cu.malloc(mw * m * 2)?));
        cu.htod(pristine.1, &x0)?;
        cu.htod(dxl.1, &xl)?;
        let step = Linear::new(dtype, m as u64, h as u64, h as u64, h as u64, h as u64, h as u64, None)?;
        let last = Linear::new(dtype, mw as u64, m as u64, h as u64, h as u64, h as u64, m as u64, None)?;
        let stream = cu.stream_create()?;
        Ok(Chain { cu, step, last, w, x0, dws, pristine, bufs, dxl, dyl, stream })
    }

    /// The whole chain on the stream, from X0; with `sync`, waiting after each step.
    fn run(&self, h: &Handle, sync: bool) -> Result<(), String> {
        let (cu, stream) = (self.cu, self.stream);
        cu.copy_async(self.bufs[0].1, self.pristine.1, Self::M * Self::HIDDEN * 2, stream)?;
        for (i, dw) in self.dws.iter().enumerate() {
            let st = self.step.run(h, Self::ALPHA, dw.1, self.bufs[i % 2].1, self.bufs[(i + 1) % 2].1, 0, 0, stream);
            if st != skinnylt::abi::STATUS_SUCCESS {
                return Err(format!("step {i}: {}", skinnylt::abi::status_name(st)));
            }
            if sync {
                cu.sync(stream)?;
            }
        }
        let st = self.last.run(h, 1.0, self.bufs[Self::STEPS % 2].1, self.dxl.1, self.dyl.1, 0, 0, stream);
        if st != skinnylt::abi::STATUS_SUCCESS {
            return Err(format!("last step: {}", skinnylt::abi::status_name(st)));
        }
        Ok(())
    }

    /// The chain's outputs once the stream is done: the final buffer and Y.
    fn read(&self) -> Result<(Vec<u16>, Vec<u16>), String> {
        let (m, h, mw) = (Self::M, Self::HIDDEN, Self::LAST_M);
        let (mut a, mut b) = (vec![0u16; m * h], vec![0u16; mw * m]);
        self.cu.sync(self.stream)?;
        self.cu.dtoh(&mut a, self.bufs[Self::STEPS % 2].1)?;
        self.cu.dtoh(&mut b, self.dyl.1)?;
        Ok((a, b))
    }

    /// NaN poison over both step buffers and Y.
    fn poison(&self) -> Result<(), String> {
        let (m, h, mw) = (Self::M, Self::HIDDEN, Self::LAST_M);
        self.cu.memset16(self.bufs[0].1, 0xffff, m * h)?;
        self.cu.memset16(self.bufs[1].1, 0xffff, m * h)?;
        self.cu.memset16(self.dyl.1, 0xffff, mw * m)
    }

    /// The test: step 0 against float64, then the synchronised chain, the eager
    /// chain and the graph replays compared bit for bit.
    fn check(&self, h: &Handle, pdl: bool) -> Result<String, String> {
        self.first_step(h)?;
        self.poison()?;
        self.run(h, true)?;
        let want = self.read()?;
        if want.1.contains(&0xffff) {
            return Err("synchronised chain left poison in the output".into());
        }
        self.poison()?;
        self.run(h, false)?;
        if self.read()? != want {
            return Err("eager chain without syncs differs from the synchronised chain".into());
        }
        self.replays(h, &want)?;
        Ok(format!("{} steps; eager and 200 replays bitwise equal to synchronised runs; PDL {pdl}", Self::STEPS + 1))
    }

    /// The first step alone, against float64.
    fn first_step(&self, h: &Handle) -> Result<(), String> {
        let (cu, stream, dtype, m, hd) = (self.cu, self.stream, Self::DTYPE, Self::M, Self::HIDDEN);
        self.poison()?;
        cu.copy_async(self.bufs[0].1, self.pristine.1, m * hd * 2, stream)?;
        let st = self.step.run(h, Self::ALPHA, self.dws[0].1, self.bufs[0].1, self.bufs[1].1, 0, 0, stream);
        if st != skinnylt::abi::STATUS_SUCCESS {
            return Err(format!("step 0: {}", skinnylt::abi::status_name(st)));
        }
        cu.sync(stream)?;
        let mut y1 = vec![0u16; m * hd];
        cu.dtoh(&mut y1, self.bufs[1].1)?;
        let r = reference::reference(dtype, m, hd, hd, &self.w[0], hd, &self.x0, hd, None, Self::ALPHA as f64);
        match reference::rel_error(dtype, m, hd, &y1, hd, &r) {
            Some(e) if e <= reference::tolerance(dtype) => Ok(()),
            e => Err(format!("step 0 against float64: {e:?}")),
        }
    }

    /// 200 replays of the captured eager chain, compared with `want` every 50th.
    fn replays(&self, h: &Handle, want: &(Vec<u16>, Vec<u16>)) -> Result<(), String> {
        let (cu, stream) = (self.cu, self.stream);
        let exec = cu.capture(stream, || self.run(h, false))?;
        for rep in 1..=200 {
            if rep % 50 == 0 {
                self.poison()?;
            }
            cu.graph_launch(exec, stream)?;
            if rep % 50 == 0 && self.read()? != *want {
                cu.graph_destroy(exec);
                return Err(format!("graph replay {rep} differs from the synchronised chain"));
            }
        }
        cu.graph_destroy(exec);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the shipped table, the invariance group covers every shape of its
    /// measured batch-invariant plans beside the grid's (N, K), once each; without
    /// it (the fallback suite), the grid's and the random ones only.
    #[test]
    fn invariance_shapes_cover_the_tables_plans() {
        let table = skinnylt::tuning::Tuning::parse(skinnylt::gpu::Arch::Sm90, skinnylt::tuning::embedded(skinnylt::gpu::Arch::Sm90), "embedded").unwrap();
        let plain = invariance_shapes(&mut Rng(7), usize::MAX, None);
        let with = invariance_shapes(&mut Rng(7), usize::MAX, Some(&table));
        let planned: std::collections::BTreeSet<_> = table.invariant_shapes().into_iter().map(|(n, k, b)| (n as usize, k as usize, b)).collect();
        assert!(!planned.is_empty());
        assert!(planned.iter().all(|s| with.contains(s)), "a planned shape is not checked");
        let mut unique = with.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), with.len(), "a shape is checked twice");
        assert!(with.len() > plain.len() && plain.iter().all(|s| with.contains(s)));
        // --limit (a quick look) keeps to the grid's first shapes.
        assert_eq!(invariance_shapes(&mut Rng(7), 3, Some(&table)).len(), invariance_shapes(&mut Rng(7), 3, None).len());
    }
}
