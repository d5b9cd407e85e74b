//! `skinnylt bench`: skinnylt's kernels and the vendor library side by side, in the
//! same run (method: docs/performance.md).
//!
//! * vendor = the fastest of the vendor library's top-8 heuristic algorithms for
//!   the same problem (bf16/fp16, compute 32F, 32 MiB workspace), through its C
//!   API: cuBLASLt on NVIDIA, the real hipBLASLt on AMD (`crate::vendor`);
//! * cold weights: enough weight sets rotate that their total exceeds 3x the L2;
//! * graph replay: one graph holds many GEMMs (one per weight set), the time per
//!   GEMM is a replay's time over their count; median of the replays;
//! * floor = bytes / copy bandwidth measured in the same run (bytes read + written
//!   of a large device-to-device copy); efficiency = floor / time;
//! * `--host`: the host side of a call (routing and launch through the C API, or
//!   the vendor's matmul call), enqueued back to back without waiting, median.

use std::ffi::c_void;
use std::fmt::Write as _;
use std::sync::Arc;

use skinnylt::abi::Status;
use skinnylt::engine::Device;
use skinnylt::gpu::DeviceInfo;
use skinnylt::route::DType;
use skinnylt::tuning::Choice;

use crate::client::{self, Handle, Linear};
use crate::gpu::{Buf, Gpu};
use crate::grid::{self, Shape};
use crate::vendor::{self, OwnedProblem, Problem, Vendor};
use crate::progress::Progress;
use crate::reference::{self, Rng};

/// Which shapes and dtype a command works on (`bench`, `tune`, `plan`).
#[derive(clap::Args)]
pub struct ShapeArgs {
    /// Groups of the public grid to run (G1, G2, G3; "none"). Default: all three,
    /// unless --shape, --set or --from name the shapes.
    #[arg(long, value_delimiter = ',')]
    pub groups: Vec<String>,
    /// Extra shapes "M,N,K[,bias]" (repeatable).
    #[arg(long = "shape")]
    pub shapes: Vec<String>,
    /// Only these token counts of the grid groups (e.g. "32,64,128"; default all).
    #[arg(long = "m", value_delimiter = ',')]
    pub tokens: Vec<u32>,
    /// Decode GEMMs of the open models in tools/models.json (repeatable):
    /// "models" (the training set: fitted and tuned on), "held-out" (never fitted or tuned on) or "all"; at the token
    /// counts of --m, else 1, 3, 5, 8, 12, 16, 24, 32, 48, 64, 100, 128.
    #[arg(long = "set")]
    pub sets: Vec<String>,
    /// Tensor-parallel degrees of --set (default 1, 2, 4, 8).
    #[arg(long, value_delimiter = ',')]
    pub tp: Vec<u32>,
    /// Shapes from a file: a record of an application's calls (`SKINNYLT_RECORD`)
    /// or "M,N,K[,bias]" lines (repeatable; each file is a group named after it).
    #[arg(long = "from")]
    pub files: Vec<String>,
    #[arg(long, value_enum, default_value = "bf16")]
    pub dtype: crate::demo::DTypeArg,
    /// fp8 scales: one per tensor, or one per row of W and one per token
    /// (`OUTER_VEC_32F`, as PyTorch's row-wise `_scaled_mm` passes them).
    #[arg(long, value_enum, default_value = "tensor")]
    pub scales: ScaleArg,
}

/// How a measuring command scales fp8 operands (`--scales`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleArg {
    Tensor,
    Row,
}

impl ShapeArgs {
    /// The scale kind of the measurements: per row only for fp8 operands, whose
    /// calls carry scales (an error for 16-bit ones, which carry none).
    pub fn scale_kind(&self) -> Result<skinnylt::tuning::schema::ScaleKind, String> {
        use skinnylt::tuning::schema::ScaleKind;
        match self.scales {
            ScaleArg::Tensor => Ok(ScaleKind::Tensor),
            ScaleArg::Row if DType::from(self.dtype).is_fp8() => Ok(ScaleKind::Row),
            ScaleArg::Row => Err("--scales row applies to fp8 operands (--dtype e4m3)".into()),
        }
    }
}

impl ShapeArgs {
    /// The selected grid groups, then the extra shapes.
    pub fn shapes(&self) -> Result<Vec<Shape>, String> {
        let groups: &[&str] = if !self.groups.is_empty() {
            &self.groups.iter().map(String::as_str).collect::<Vec<_>>()
        } else if self.shapes.is_empty() && self.files.is_empty() && self.sets.is_empty() {
            &["G1", "G2", "G3"]
        } else {
            &[]
        };
        let mut v: Vec<Shape> = grid::public()
            .into_iter()
            .filter(|s| groups.contains(&s.group) && (self.tokens.is_empty() || self.tokens.contains(&s.m)))
            .collect();
        for sh in &self.shapes {
            v.push(grid::parse(sh)?);
        }
        let tp: &[u32] = if self.tp.is_empty() { &crate::models::TP } else { &self.tp };
        let tokens: &[u32] = if self.tokens.is_empty() { &crate::models::TOKENS } else { &self.tokens };
        // A model's shape whose rows are not 16-byte runs in this dtype (fp8 with
        // K % 16 != 0): neither skinnylt nor the vendor runs it (route.rs forwards
        // it for alignment, cuBLASLt's fp8 kernels refuse it), so there is nothing to time.
        let run = 16 / DType::from(self.dtype).bytes();
        for name in &self.sets {
            let (fit, unfit): (Vec<Shape>, Vec<Shape>) = crate::models::set(name, tp, tokens)?.into_iter().partition(|s| s.k.is_multiple_of(run));
            if !unfit.is_empty() {
                eprintln!("set {name}: {} shapes left out (K not a multiple of {run} elements: 16-byte rows)", unfit.len());
            }
            v.extend(fit);
        }
        for path in &self.files {
            let name = std::path::Path::new(path).file_stem().and_then(|s| s.to_str()).unwrap_or(path);
            let (shapes, skipped) = grid::from_file(path, self.dtype.into(), self.scale_kind()?, name)?;
            if skipped > 0 {
                eprintln!("{path}: {skipped} calls left out (another dtype or scale kind, or a form skinnylt does not run)");
            }
            v.extend(shapes);
        }
        Ok(v)
    }
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub select: ShapeArgs,
    /// Timed graph replays per measurement.
    #[arg(long, default_value_t = 15)]
    pub reps: usize,
    /// Write results as JSON here.
    #[arg(long)]
    pub json: Option<String>,
    /// Write the speedup heatmap (SVG) here.
    #[arg(long)]
    pub svg: Option<String>,
    /// Write latency-vs-M curves (SVG) here.
    #[arg(long)]
    pub curves: Option<String>,
    /// Also time the host side of a call (routing and launch, eager, no wait per
    /// call), skinnylt's and the vendor's, for the shapes skinnylt runs.
    #[arg(long)]
    pub host: bool,
    /// What decides which shapes skinnylt runs, and how.
    #[arg(long, value_enum, default_value = "deployment")]
    pub routing: Routing,
    /// The epilogue of every call, on both sides.
    #[arg(long, value_enum, default_value = "shape")]
    pub epilogue: EpilogueArg,
}

/// The epilogue every call of `bench` asks for, on both sides: what `F.linear`
/// does (the default), or one of the other forms PyTorch calls hipBLASLt with.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EpilogueArg {
    /// A bias of the output type where the shape has one (`F.linear`).
    #[default]
    Shape,
    /// beta = 1 with a C of its own, and the shape's bias (`addmm` into a residual).
    Residual,
    /// A bias on every shape, then ReLU (`RELU_BIAS`, PyTorch's `gemm_and_bias`).
    ReluBias,
    /// A bias on every shape, then GELU in hipBLASLt's tanh form (`GELU_BIAS`).
    GeluBias,
    /// An fp32 bias on every shape (`BIAS_DATA_TYPE` = R_32F).
    BiasF32,
}

impl EpilogueArg {
    /// `sh` as measured: with a bias where the epilogue has one on every shape.
    pub fn shape(self, sh: Shape) -> Shape {
        Shape { bias: sh.bias || matches!(self, EpilogueArg::ReluBias | EpilogueArg::GeluBias | EpilogueArg::BiasF32), ..sh }
    }
    /// The `hipblasLtEpilogue_t` of a call with (`bias`) or without a bias; 0 for
    /// none (DEFAULT).
    pub fn value(self, bias: bool) -> u32 {
        use skinnylt::abi::{EPILOGUE_BIAS, EPILOGUE_GELU_BIAS, EPILOGUE_RELU_BIAS};
        match self {
            EpilogueArg::ReluBias => EPILOGUE_RELU_BIAS,
            EpilogueArg::GeluBias => EPILOGUE_GELU_BIAS,
            _ if bias => EPILOGUE_BIAS,
            _ => 0,
        }
    }
    /// The kernels' flags for it (`GemmParams::flags`: the activation and the bias type).
    pub fn flags(self) -> i32 {
        use skinnylt::kernels::params::{EPI_BIAS_F32, EPI_GELU, EPI_RELU};
        match self {
            EpilogueArg::ReluBias => EPI_RELU,
            EpilogueArg::GeluBias => EPI_GELU,
            EpilogueArg::BiasF32 => EPI_BIAS_F32,
            EpilogueArg::Shape | EpilogueArg::Residual => 0,
        }
    }
    /// beta: 1 for `Residual`, else 0.
    pub fn beta(self) -> f32 {
        if self == EpilogueArg::Residual { 1.0 } else { 0.0 }
    }
}

#[derive(Clone, Debug)]
pub struct Row {
    pub shape: Shape,
    /// skinnylt as deployed: its own time, or the vendor's where it forwards.
    pub ours_us: f64,
    /// skinnylt's own time where it can run the shape (also where deployment
    /// forwards it), NaN where it cannot.
    pub own_us: f64,
    /// The vendor: the fastest of its top-8 algorithms, and its first (the
    /// heuristic's pick, what an application gets by default).
    pub vendor_us: f64,
    pub vendor_top1_us: f64,
    pub floor_us: f64,
    pub forwarded: bool,
}

impl Row {
    pub fn speedup(&self) -> f64 {
        self.vendor_us / self.ours_us
    }
    pub fn efficiency(&self) -> f64 {
        self.floor_us / self.ours_us
    }
    /// The speedup over the vendor's default algorithm.
    pub fn speedup_top1(&self) -> f64 {
        self.vendor_top1_us / self.ours_us
    }
    /// The most any kernel could give: the vendor's time over the larger of the
    /// copy floor at 0.97 efficiency and the fixed cost of a launch (`FIXED_US`).
    pub fn bound(&self) -> f64 {
        self.vendor_us / (self.floor_us / 0.97).max(FIXED_US)
    }
}

/// The fixed cost of one GEMM in a stream of them that is not streaming bytes
/// (predecessor's completion, first stage, combine and stores): about 2 µs on the
/// H100 with programmatic dependent launch (docs/performance.md).
pub const FIXED_US: f64 = 2.0;

/// Runs measuring command `cmd` on the process's GPU runtime (HIP or CUDA); the
/// exit status: 0, 1 after its error, 2 when there is no GPU.
pub fn on_gpu(cmd: &str, f: impl FnOnce(&'static Gpu) -> Result<(), String>) -> i32 {
    let Some(rt) = Gpu::get() else {
        return no_gpu(cmd);
    };
    match f(rt) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{cmd} failed: {e}");
            1
        }
    }
}

/// What a GPU command (`bench`, `tune`, `check`) says on a machine without a GPU,
/// and its exit status, 2.
pub fn no_gpu(cmd: &str) -> i32 {
    eprintln!("skinnylt {cmd} needs a GPU: none found (looked for the HIP runtime, libamdhip64, and the CUDA driver, libcuda, with a device)");
    2
}

/// "N SMs" (NVIDIA) or "N CUs" (AMD).
pub fn units(info: &DeviceInfo) -> String {
    format!("{} {}", info.units, info.backend.unit_name())
}

pub fn run(a: &Args) -> i32 {
    if a.routing == Routing::Planner {
        crate::use_tables_without_entries(true);
    }
    on_gpu("bench", |rt| bench(rt, a))
}

/// Which decides what skinnylt runs in a benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Routing {
    /// As deployed: the tuning tables, then the planner; a shape either forwards
    /// counts as the vendor's time.
    Deployment,
    /// The planner alone (every table without its entries and anchors, its planner constants
    /// kept): the evidence that choices generalise.
    Planner,
}


/// The workspace every measured call gets, skinnylt's and the vendor's (the
/// vendor's heuristic is asked for algorithms that fit in it).
pub const WORKSPACE_BYTES: usize = 32 << 20;

/// One shape's inputs for timing with cold weights: `sets` copies of the weights
/// (together more than 3x the L2), activations and outputs per set, and a bias.
/// fp8 operands come with their scales (`ScaleArg`) and a bf16 output.
pub struct ColdSets<'a> {
    pub sets: usize,
    /// GEMMs per timed graph (at least one per set).
    pub count: usize,
    /// W and X of set 0 as 16-bit units (fp8: two elements per unit, in k order).
    pub w0: Vec<u16>,
    pub x: Vec<u16>,
    pub bias: Vec<u16>,
    pub w: Vec<Buf<'a>>,
    pub xs: Vec<Buf<'a>>,
    pub ys: Vec<Buf<'a>>,
    pub db: Buf<'a>,
    /// The epilogue of the calls (`with_epilogue`; `Shape` unless set), with the C
    /// of each set (beta = 1) and the fp32 bias it needs.
    pub epilogue: EpilogueArg,
    pub cs: Vec<Buf<'a>>,
    pub db32: Option<Buf<'a>>,
    /// The output's type.
    pub out: DType,
    /// fp8: the scales on the device (A's and B's pointers); None for 16-bit operands.
    pub scales: Option<vendor::Scales>,
    /// Their values (one each per tensor; per row: N for W, M for X).
    sa: Vec<f32>,
    sb: Vec<f32>,
    _scales: Buf<'a>,
}

/// Alignment of B's scales after A's in one allocation: cuBLASLt wants each scale
/// pointer aligned (4 bytes apart, every algorithm returned NOT_SUPPORTED).
const SCALE_ALIGN: u64 = 256;

/// An fp8 matrix as 16-bit units (an even number of bytes per row).
fn fp8_units(bytes: &[u8]) -> Vec<u16> {
    bytes.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

impl<'a> ColdSets<'a> {
    pub fn new(cu: &'a Gpu, s: *mut c_void, l2_bytes: u64, rng: &mut Rng, dtype: DType, scale: ScaleArg, sh: &Shape) -> Result<ColdSets<'a>, String> {
        let (m, n, k) = (sh.m as usize, sh.n as usize, sh.k as usize);
        let fp8 = dtype.is_fp8();
        if fp8 && !k.is_multiple_of(16) {
            return Err(format!("fp8 needs K a multiple of 16 (16-byte rows), not {k}"));
        }
        let out = if fp8 { DType::Bf16 } else { dtype };
        let e = dtype.bytes() as usize;
        let w_bytes = n * k * e;
        let sets = (3 * l2_bytes as usize).div_ceil(w_bytes).clamp(2, 400);
        let alloc = |bytes: usize| -> Result<Vec<Buf<'a>>, String> { (0..sets).map(|_| cu.malloc(bytes).map(|p| Buf(cu, p))).collect() };
        let matrix = |rng: &mut Rng, rows| if fp8 { fp8_units(&reference::random_fp8(rng, dtype, rows, k, k)) } else { reference::random_matrix(rng, dtype, rows, k, k) };
        // One random weight set, copied to the others.
        let w0 = matrix(rng, n);
        let w = alloc(w_bytes)?;
        cu.htod(w[0].1, &w0)?;
        for b in &w[1..] {
            cu.copy_async(b.1, w[0].1, w_bytes, s)?;
        }
        let x = matrix(rng, m);
        let (xs, ys) = (alloc(m * k * e)?, alloc(m * n * 2)?);
        for b in &xs {
            cu.htod(b.1, &x)?;
        }
        let bias = reference::random_matrix(rng, out, 1, n, n);
        let db = Buf(cu, cu.malloc(n * 2)?);
        cu.htod(db.1, &bias)?;
        // Scales: 1.0 per tensor; per row, exact values in [0.5, 2) that differ
        // between neighbouring rows and tokens.
        let outer_vec = scale == ScaleArg::Row;
        let (na, nb) = if outer_vec { (n, m) } else { (1, 1) };
        let value = |i: usize| if outer_vec { (1.0 + (i % 8) as f32 / 8.0) * if i.is_multiple_of(3) { 0.5 } else { 1.0 } } else { 1.0 };
        let (sa, sb): (Vec<f32>, Vec<f32>) = ((0..na).map(value).collect(), (0..nb).map(|i| value(i + 5)).collect());
        let b_at = (4 * na as u64).next_multiple_of(SCALE_ALIGN);
        let sbuf = Buf(cu, cu.malloc((b_at + 4 * nb as u64) as usize)?);
        cu.htod(sbuf.1, &sa)?;
        cu.htod(sbuf.1 + b_at, &sb)?;
        cu.sync(s)?;
        let scales = fp8.then_some(vendor::Scales { a: sbuf.1, b: sbuf.1 + b_at, outer_vec });
        Ok(ColdSets { sets, count: sets.max(24), w0, x, bias, w, xs, ys, db, epilogue: EpilogueArg::Shape, cs: Vec::new(), db32: None, out, scales, sa, sb, _scales: sbuf })
    }

    /// The sets with epilogue `e`: a random C per set for `Residual`, the bias in
    /// fp32 for `BiasF32`.
    pub fn with_epilogue(mut self, cu: &'a Gpu, s: *mut c_void, rng: &mut Rng, e: EpilogueArg, sh: &Shape) -> Result<Self, String> {
        let (m, n) = (sh.m as usize, sh.n as usize);
        if e == EpilogueArg::Residual {
            let c = reference::random_matrix(rng, self.out, m, n, n);
            for _ in 0..self.sets {
                let b = Buf(cu, cu.malloc(m * n * 2)?);
                cu.htod(b.1, &c)?;
                self.cs.push(b);
            }
        }
        if e == EpilogueArg::BiasF32 {
            let b = Buf(cu, cu.malloc(n * 4)?);
            let v: Vec<f32> = self.bias.iter().map(|&u| reference::from_bits(self.out, u)).collect();
            cu.htod(b.1, &v)?;
            self.db32 = Some(b);
        }
        cu.sync(s)?;
        self.epilogue = e;
        Ok(self)
    }

    /// The bias's device pointer for a call of `sh` (fp32 or of the output type),
    /// 0 without a bias.
    pub fn bias_ptr(&self, sh: &Shape) -> u64 {
        match (&self.db32, sh.bias) {
            (_, false) => 0,
            (Some(b), true) => b.1,
            (None, true) => self.db.1,
        }
    }

    /// The C of call `c` (beta = 1), or its output where C is not read.
    pub fn c_of(&self, c: usize) -> u64 {
        if self.cs.is_empty() { self.set(c).2 } else { self.cs[c % self.sets].1 }
    }

    /// The float64 output of set 0 (every set holds the same weights and
    /// activations): `dtype` is the operands' type the sets were made with.
    pub fn reference(&self, dtype: DType, sh: &Shape) -> Vec<f64> {
        let (m, n, k) = (sh.m as usize, sh.n as usize, sh.k as usize);
        if !dtype.is_fp8() {
            return reference::reference(dtype, m, n, k, &self.w0, k, &self.x, k, sh.bias.then_some(&self.bias[..]), 1.0);
        }
        // Byte i of a row is the low (even i) or high half of unit i / 2.
        let value = reference::fp8_table(dtype);
        let byte = |units: &[u16], i: usize| (units[i / 2] >> (8 * (i % 2))) as u8;
        let dot = reference::reference_by(m, n, k, |j, kk| value[byte(&self.w0, j * k + kk) as usize], |t, kk| value[byte(&self.x, t * k + kk) as usize]);
        let bias = |j: usize| if sh.bias { reference::from_bits(self.out, self.bias[j]) as f64 } else { 0.0 };
        let scale = |v: &[f32], i: usize| v[if v.len() > 1 { i } else { 0 }] as f64;
        dot.iter().enumerate().map(|(i, d)| d * scale(&self.sa, i % n) * scale(&self.sb, i / n) + bias(i % n)).collect()
    }

    /// The weights, activations and output of call `c` of a graph: the sets in
    /// turn, so that each call reads weights the previous ones left out of the L2.
    pub fn set(&self, c: usize) -> (u64, u64, u64) {
        let j = c % self.sets;
        (self.w[j].1, self.xs[j].1, self.ys[j].1)
    }
}

/// What a measuring command (`bench`, `tune`) opens before its first shape, in
/// this order: device 0, made current; the vendor library; a stream; the copy
/// bandwidth measured on that stream.
pub struct Rig<'a> {
    pub cu: &'a Gpu,
    pub lt: Box<dyn Vendor>,
    pub dev: Arc<Device>,
    pub s: *mut c_void,
    /// Bytes read + written per second of a large device copy.
    pub bw: f64,
}

impl<'a> Rig<'a> {
    pub fn open(cu: &'a Gpu) -> Result<Rig<'a>, String> {
        let dev = skinnylt::engine::device(0)?;
        cu.make_current(dev.ctx)?;
        let lt = vendor::for_backend(cu.backend())?;
        let s = cu.stream_create()?;
        let bw = copy_bandwidth(cu, s)?;
        Ok(Rig { cu, lt, dev, s, bw })
    }

    /// skinnylt's handle and the workspace of measured calls. Separate from `open`:
    /// the commands make them only once their own setup (output file, shapes) holds.
    pub fn handle_and_workspace(&self) -> Result<(Handle, Buf<'a>), String> {
        let h = Handle::new()?;
        Ok((h, Buf(self.cu, self.cu.malloc(WORKSPACE_BYTES)?)))
    }

    /// The vendor's problem for `sh` on `cs`, with its heuristic's top-8 algorithms.
    pub fn vendor_problem(&self, dtype: DType, sh: &Shape, cs: &ColdSets) -> Result<OwnedProblem<'_>, String> {
        let e = vendor::Epilogue { value: cs.epilogue.value(sh.bias), bias: cs.bias_ptr(sh), bias_f32: cs.db32.is_some(), beta: cs.epilogue.beta() };
        Ok(OwnedProblem::new(&*self.lt, self.lt.problem(dtype, cs.out, sh.m as u64, sh.n as u64, sh.k as u64, &e, cs.scales, WORKSPACE_BYTES as u64, 8)?))
    }

    /// Call `c` of the vendor's algorithm `algo` on the cold sets.
    pub fn vendor_matmul(&self, p: &Problem, algo: usize, cs: &ColdSets, c: usize, ws: &Buf) -> Result<(), String> {
        let (w, x, y) = cs.set(c);
        self.lt.matmul(p, algo, w, x, cs.c_of(c), y, ws.1, WORKSPACE_BYTES, self.s)
    }

    /// The vendor's time per GEMM (µs) on the cold sets: the fastest of `p`'s
    /// algorithms, each run once eagerly first (hipBLASLt loads a solution's code
    /// object on its first call, which must not happen inside a capture); an
    /// algorithm that fails is left out, and none left gives infinity.
    pub fn vendor_time(&self, reps: usize, p: &Problem, cs: &ColdSets, ws: &Buf) -> f64 {
        self.vendor_times(reps, p, cs, ws).0
    }

    /// The vendor's time with the fastest of its algorithms, and with its first
    /// (infinity where it failed).
    pub fn vendor_times(&self, reps: usize, p: &Problem, cs: &ColdSets, ws: &Buf) -> (f64, f64) {
        let (cu, s) = (self.cu, self.s);
        let (mut best, mut first) = (f64::INFINITY, f64::INFINITY);
        let mut last_error = None;
        for i in 0..p.algos() {
            let t = self.vendor_matmul(p, i, cs, 0, ws).and_then(|_| cu.sync(s)).and_then(|_| {
                time_graph(cu, s, reps, cs.count, || {
                    for c in 0..cs.count {
                        self.vendor_matmul(p, i, cs, c, ws)?;
                    }
                    Ok(())
                })
            });
            match t {
                Ok(t) => {
                    best = best.min(t);
                    if i == 0 {
                        first = t;
                    }
                }
                Err(e) => last_error = Some(e),
            }
        }
        if best.is_infinite() {
            eprintln!("{}: no algorithm ran ({} from the heuristic){}", self.lt.name(), p.algos(), last_error.map_or(String::new(), |e| format!("; the last failed: {e}")));
        }
        (best, first)
    }
}

/// Copy bandwidth (bytes read + written per second) of a 1 GiB device copy.
pub fn copy_bandwidth(cu: &Gpu, s: *mut c_void) -> Result<f64, String> {
    let bytes = 1usize << 30;
    let (src, dst) = (Buf(cu, cu.malloc(bytes)?), Buf(cu, cu.malloc(bytes)?));
    let (e0, e1) = (cu.event()?, cu.event()?);
    let mut t = Vec::new();
    for i in 0..12 {
        cu.record(e0, s)?;
        cu.copy_async(dst.1, src.1, bytes, s)?;
        cu.record(e1, s)?;
        let ms = cu.elapsed_ms(e0, e1)? as f64;
        if i >= 2 {
            t.push(ms);
        }
    }
    cu.event_destroy(e0);
    cu.event_destroy(e1);
    Ok(2.0 * bytes as f64 / (median(t) * 1e-3))
}

/// The median of a non-empty set of times.
pub fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Median time per GEMM (µs) of a graph of `count` GEMMs enqueued by `enqueue`.
pub fn time_graph(cu: &Gpu, s: *mut c_void, reps: usize, count: usize, enqueue: impl Fn() -> Result<(), String>) -> Result<f64, String> {
    let exec = cu.capture(s, &enqueue)?;
    let (e0, e1) = (cu.event()?, cu.event()?);
    for _ in 0..3 {
        cu.graph_launch(exec, s)?;
    }
    let mut t = Vec::new();
    for _ in 0..reps {
        cu.record(e0, s)?;
        cu.graph_launch(exec, s)?;
        cu.record(e1, s)?;
        t.push(cu.elapsed_ms(e0, e1)? as f64 * 1000.0 / count as f64);
    }
    cu.sync(s)?;
    cu.graph_destroy(exec);
    cu.event_destroy(e0);
    cu.event_destroy(e1);
    Ok(median(t))
}

/// Host time per call (µs): `count` calls enqueued back to back without waiting
/// for the GPU (the stream is drained between rounds), median of the rounds.
pub fn host_time(cu: &Gpu, s: *mut c_void, reps: usize, count: usize, call: impl Fn(usize) -> Result<(), String>) -> Result<f64, String> {
    let mut t = Vec::new();
    for _ in 0..reps.max(3) {
        cu.sync(s)?;
        let t0 = std::time::Instant::now();
        for i in 0..count {
            call(i)?;
        }
        t.push(t0.elapsed().as_secs_f64() * 1e6 / count as f64);
    }
    cu.sync(s)?;
    Ok(median(t))
}

fn bench(cu: &Gpu, a: &Args) -> Result<(), String> {
    let rig = Rig::open(cu)?;
    let dtype: DType = a.select.dtype.into();
    a.select.scale_kind()?;
    println!("{}", device_line(&rig));
    if dtype.is_fp8() {
        println!("fp8 scales: {}", if a.select.scales == ScaleArg::Row { "one per row of W and one per token (OUTER_VEC_32F), both sides" } else { "one per tensor" });
    }
    if a.epilogue != EpilogueArg::Shape {
        let name = clap::ValueEnum::to_possible_value(&a.epilogue).map(|v| v.get_name().to_owned()).unwrap_or_default();
        println!("epilogue: {name} (both sides)");
    }
    let shapes = a.select.shapes()?;
    let (h, ws) = rig.handle_and_workspace()?;
    let b = Bencher { rig: &rig, a, dtype, ws, h };
    let mut rng = Rng(0x5eed);
    let mut rows = Vec::new();
    let mut hosts = Vec::new();
    println!("{:<5} {:>4} {:>6} {:>6} {:>4}  {:>9} {:>9} {:>8} {:>7} {:>8}", "group", "M", "N", "K", "bias", "ours µs", "vendor µs", "speedup", "eff", "floor µs");
    let progress = Progress::new(shapes.len());
    for sh in shapes {
        progress.start(&sh);
        let (row, host) = b.measure(sh, &mut rng)?;
        progress.inc();
        if !row.vendor_us.is_finite() {
            // No speedup without a baseline (cuBLASLt has no fp8 kernel for some epilogues).
            let sh = &row.shape;
            progress.println(format!("{:<5} {:>4} {:>6} {:>6}  left out: {} ran none of its algorithms", sh.group, sh.m, sh.n, sh.k, rig.lt.name()));
            continue;
        }
        progress.println(table_line(&row, host));
        rows.push(row);
        hosts.extend(host);
    }
    progress.finish();
    summary(&rows);
    host_summary(&hosts, rig.lt.name());
    write_reports(a, &rows, &rig)
}

/// The first line of `bench`: the device, the copy bandwidth and the vendor library.
fn device_line(rig: &Rig) -> String {
    let (info, lt) = (&rig.dev.info, &rig.lt);
    format!(
        "device {} ({}, L2 {} MiB); copy bandwidth {:.2} TB/s; vendor: {} {} ({})",
        info.name,
        units(info),
        info.l2_bytes >> 20,
        rig.bw / 1e12,
        lt.name(),
        lt.version(),
        lt.path()
    )
}

/// What `bench` measures every shape with: the opened device, the command's
/// arguments, the workspace both sides get and skinnylt's handle.
struct Bencher<'a> {
    rig: &'a Rig<'a>,
    a: &'a Args,
    dtype: DType,
    ws: Buf<'a>,
    h: Handle,
}

/// How skinnylt takes one shape's calls (`Bencher::ours`).
struct Ours {
    /// Its descriptors, for calls through the C API.
    linear: Linear,
    /// A probe call on set 0 succeeded and skinnylt ran it.
    runs: bool,
    /// The calls count as the vendor's: they do not run, or deployment routing
    /// forwards them (a shape the table forwards counts as the vendor's, as it would
    /// with a real hipBLASLt; standalone, the library runs its fallback).
    forwarded: bool,
    /// The choice deployment runs, with the problem it was chosen for, where it is
    /// not the standalone one.
    deployed: Option<(Choice, skinnylt::route::Problem)>,
}

impl Bencher<'_> {
    /// One shape, skinnylt and the vendor on the same cold sets: the table row, and
    /// with --host the host times (for the shapes skinnylt runs).
    fn measure(&self, sh: Shape, rng: &mut Rng) -> Result<(Row, Option<(f64, f64)>), String> {
        let (cu, s, reps) = (self.rig.cu, self.rig.s, self.a.reps);
        let sh = self.a.epilogue.shape(sh);
        let cs = ColdSets::new(cu, s, self.rig.dev.info.l2_bytes, rng, self.dtype, self.a.select.scales, &sh)?.with_epilogue(cu, s, rng, self.a.epilogue, &sh)?;

        // skinnylt through the C API: timed wherever it runs (standalone), and counted
        // as the vendor's where deployment routing forwards.
        let Ours { linear: l, runs, forwarded, deployed } = self.ours(&sh, &cs)?;
        let own = if runs {
            Some(time_graph(cu, s, reps, cs.count, || (0..cs.count).try_for_each(|i| self.call_ours(&l, &cs, i)))?)
        } else {
            None
        };
        // The C API here has no real library, so it routes standalone; where
        // deployment routing runs another choice (transfer lends its kernel only
        // standalone where the anchors do not agree on a win), that choice is timed
        // through the engine.
        let ours = match deployed {
            Some((choice, ref problem)) if runs && !forwarded => {
                Some(time_graph(cu, s, reps, cs.count, || (0..cs.count).try_for_each(|i| self.call_choice(choice, problem, &sh, &cs, i)))?)
            }
            _ => own.filter(|_| !forwarded),
        };

        // The vendor: every one of its top-8 algorithms, keep the fastest (and the first).
        let floor_us = floor_us(&sh, self.dtype, self.rig.bw);
        let p = match self.rig.vendor_problem(self.dtype, &sh, &cs) {
            Ok(p) => p,
            // No baseline for this epilogue (cuBLASLt: no bf16 algorithm with an fp32 bias).
            Err(e) if self.a.epilogue != EpilogueArg::Shape => {
                eprintln!("{}: {e}", self.rig.lt.name());
                let none = f64::INFINITY;
                return Ok((Row { shape: sh, ours_us: own.unwrap_or(none), own_us: own.unwrap_or(f64::NAN), vendor_us: none, vendor_top1_us: none, floor_us, forwarded }, None));
            }
            Err(e) => return Err(e),
        };
        let (vendor, vendor_top1) = self.rig.vendor_times(reps, &p, &cs, &self.ws);
        let host = if self.a.host && !forwarded {
            // The vendor's host cost with its first algorithm (the heuristic's pick).
            let ours_host = host_time(cu, s, reps, cs.count, |i| self.call_ours(&l, &cs, i))?;
            let vendor_host = host_time(cu, s, reps, cs.count, |i| self.rig.vendor_matmul(&p, 0, &cs, i, &self.ws))?;
            Some((ours_host, vendor_host))
        } else {
            None
        };
        drop(p);
        let row = Row { shape: sh, ours_us: ours.unwrap_or(vendor), own_us: own.unwrap_or(f64::NAN), vendor_us: vendor, vendor_top1_us: vendor_top1, floor_us, forwarded };
        Ok((row, host))
    }

    /// How skinnylt takes the calls of `sh` (`Ours`).
    fn ours(&self, sh: &Shape, cs: &ColdSets) -> Result<Ours, String> {
        let (m, n, k) = (sh.m as u64, sh.n as u64, sh.k as u64);
        let fp8 = self.dtype.is_fp8();
        let e = self.a.epilogue;
        let o = client::Options {
            epilogue: e.value(sh.bias),
            bias: sh.bias.then_some(cs.bias_ptr(sh)),
            bias_type: cs.db32.is_some().then_some(skinnylt::abi::R_32F),
            ldc: (e == EpilogueArg::Residual).then_some(n),
            out: fp8.then_some(cs.out),
            a_scale: cs.scales.map(|s| (s.a, s.outer_vec)),
            b_scale: cs.scales.map(|s| (s.b, s.outer_vec)),
            ..client::Options::default()
        };
        let l = Linear::with_options(self.dtype, m, n, k, k, k, n, &o)?;
        let dev = &self.rig.dev;
        use skinnylt::engine::Error;
        // As the calls are routed: batch-invariant under SKINNYLT_BATCH_INVARIANT, by
        // the bands of the calls' scale kind.
        let vec_scales = cs.scales.is_some_and(|s| s.outer_vec);
        let vectors = if vec_scales { skinnylt::kernels::params::SCALE_A_VEC | skinnylt::kernels::params::SCALE_B_VEC } else { 0 };
        let residual = e == EpilogueArg::Residual;
        let problem = skinnylt::route::Problem {
            batch_invariant: skinnylt::process::get().config.batch_invariant,
            epilogue: vectors | e.flags(),
            beta: e.beta(),
            c: if residual { cs.c_of(0) } else { 0 },
            ldc: if residual { n } else { 0 },
            ..sh.problem(self.dtype)
        };
        let deployed = dev.choose(&problem, dev.pdl(), true);
        let deployed_forward = matches!(deployed, Err(Error::TunedForward | Error::PlannerForward | Error::TransferForward));
        let other = match (deployed, dev.choose(&problem, dev.pdl(), false)) {
            (Ok(d), Ok(standalone)) if d != standalone => Some((d, problem)),
            _ => None,
        };
        let before = crate::counters().intercepted;
        let probe = self.run_ours(&l, cs, 0);
        self.rig.cu.sync(self.rig.s)?;
        let runs = probe == skinnylt::abi::STATUS_SUCCESS && crate::counters().intercepted == before + 1;
        Ok(Ours { linear: l, runs, forwarded: deployed_forward || !runs, deployed: other })
    }

    /// Call `c` of `choice` on the cold sets through the engine (the path
    /// `hipblasLtMatmul` takes once routed), for `problem` with set c's operands.
    fn call_choice(&self, choice: Choice, problem: &skinnylt::route::Problem, sh: &Shape, cs: &ColdSets, c: usize) -> Result<(), String> {
        let (w, x, y) = cs.set(c);
        let (a_scale, b_scale) = cs.scales.map_or((0, 0), |s| (s.a, s.b));
        let residual = problem.beta != 0.0;
        let p = skinnylt::route::Problem { w, x, y, bias: cs.bias_ptr(sh), a_scale, b_scale, c: if residual { cs.c_of(c) } else { 0 }, ..*problem };
        let call = skinnylt::engine::Call { workspace: self.ws.1, workspace_size: WORKSPACE_BYTES, stream: skinnylt::gpu::Stream(self.rig.s) };
        crate::engines().run_choice(self.h.0 as usize, &p, choice, &call).map_err(|e| format!("{choice:?}: {e:?}"))
    }

    /// Call `c` of skinnylt on the cold sets, through `hipblasLtMatmul`: its status.
    fn run_ours(&self, l: &Linear, cs: &ColdSets, c: usize) -> Status {
        let (w, x, y) = cs.set(c);
        let (alpha, beta) = (1f32, self.a.epilogue.beta());
        let scalars = ((&alpha as *const f32).cast(), (&beta as *const f32).cast());
        l.run_full(&self.h, None, scalars, (w, x, cs.c_of(c), y), (self.ws.1, WORKSPACE_BYTES), self.rig.s)
    }

    /// `run_ours` for a timed call, whose failure ends the command.
    fn call_ours(&self, l: &Linear, cs: &ColdSets, c: usize) -> Result<(), String> {
        match self.run_ours(l, cs, c) {
            0 => Ok(()),
            st => Err(format!("hipblasLtMatmul: {st}")),
        }
    }
}

/// The time floor of `sh` (µs): the bytes a GEMM must read and write (W and X of
/// `dtype`, the 16-bit Y and bias) at the measured copy bandwidth `bw`.
fn floor_us(sh: &Shape, dtype: DType, bw: f64) -> f64 {
    let (m, n, k) = (sh.m as usize, sh.n as usize, sh.k as usize);
    let bytes = dtype.bytes() as f64 * (n * k + m * k) as f64 + 2.0 * (m * n) as f64 + if sh.bias { 2.0 * n as f64 } else { 0.0 };
    bytes / bw * 1e6
}

/// One shape's line of the table, with its host times after it (--host).
fn table_line(row: &Row, host: Option<(f64, f64)>) -> String {
    let sh = &row.shape;
    let host_note = match host {
        Some((o, v)) => format!("  host {o:.2} / {v:.2} µs"),
        None => String::new(),
    };
    format!(
        "{:<5} {:>4} {:>6} {:>6} {:>4}  {:>9.2} {:>9.2} {:>7.2}x {:>7.2} {:>8.2}{}",
        sh.group,
        sh.m,
        sh.n,
        sh.k,
        if sh.bias { "yes" } else { "no" },
        row.ours_us,
        row.vendor_us,
        row.speedup(),
        row.efficiency(),
        row.floor_us,
        if row.forwarded { "  (forwarded)" } else { "" },
    ) + &host_note
}

/// The closing line of --host: medians of the host times (skinnylt's, the
/// vendor's) over the shapes skinnylt runs; nothing without --host.
fn host_summary(hosts: &[(f64, f64)], vendor: &str) {
    if hosts.is_empty() {
        return;
    }
    let median_of = |f: fn(&(f64, f64)) -> f64| median(hosts.iter().map(f).collect());
    println!(
        "host time per call (routing + launch, {} shapes skinnylt runs): skinnylt median {:.2} µs, {} median {:.2} µs; skinnylt lower on {} of {}",
        hosts.len(),
        median_of(|h| h.0),
        vendor,
        median_of(|h| h.1),
        hosts.iter().filter(|h| h.0 < h.1).count(),
        hosts.len()
    );
}

/// The files asked for: --json, --svg (heatmap), --curves.
fn write_reports(a: &Args, rows: &[Row], rig: &Rig) -> Result<(), String> {
    let (device, vendor) = (&rig.dev.info.name, rig.lt.name());
    if let Some(path) = &a.json {
        std::fs::write(path, to_json(rows, device, rig.bw)).map_err(|e| e.to_string())?;
    }
    if let Some(path) = &a.svg {
        std::fs::write(path, heatmap(rows, device, vendor)).map_err(|e| e.to_string())?;
    }
    if let Some(path) = &a.curves {
        std::fs::write(path, curves(rows, device, vendor)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub fn geomean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    (s / n.max(1) as f64).exp()
}

/// The groups of `rows`, in their order (rows come grouped).
fn groups(rows: &[Row]) -> Vec<&'static str> {
    let mut groups: Vec<&str> = rows.iter().map(|r| r.shape.group).collect();
    groups.dedup();
    groups
}

pub fn summary(rows: &[Row]) {
    for g in groups(rows).into_iter().chain(std::iter::once("all")) {
        let rs: Vec<&Row> = rows.iter().filter(|r| g == "all" || r.shape.group == g).collect();
        if rs.is_empty() {
            continue;
        }
        let min = |f: fn(&Row) -> f64| rs.iter().map(|r| f(r)).fold(f64::INFINITY, f64::min);
        let eff = rs.iter().map(|r| r.efficiency()).sum::<f64>() / rs.len() as f64;
        let run = rs.iter().filter(|r| !r.forwarded).count();
        println!(
            "{g:<4} {} shapes ({run} run by skinnylt): geomean speedup {:.2}x, min {:.2}x over the best of the vendor's top-8; {:.2}x, min {:.2}x over its default; bound {:.2}x; mean efficiency {:.2}",
            rs.len(),
            geomean(rs.iter().map(|r| r.speedup())),
            min(Row::speedup),
            geomean(rs.iter().map(|r| r.speedup_top1())),
            min(Row::speedup_top1),
            geomean(rs.iter().map(|r| r.bound())),
            eff
        );
        // What skinnylt's own choice does where it must run everything (standalone):
        // the evidence for a table or planner, forwarded shapes included.
        let own: Vec<f64> = rs.iter().filter(|r| r.own_us.is_finite()).map(|r| r.vendor_us / r.own_us).collect();
        if !own.is_empty() {
            println!("{g:<4} skinnylt's own choice on {} shapes (standalone): geomean {:.2}x, min {:.2}x over the best of the vendor's top-8", own.len(), geomean(own.iter().copied()), own.iter().copied().fold(f64::INFINITY, f64::min));
        }
    }
}

fn to_json(rows: &[Row], device: &str, bw: f64) -> String {
    let mut s = format!("{{\n  \"device\": {device:?},\n  \"copy_bandwidth_tbs\": {:.3},\n  \"rows\": [\n", bw / 1e12);
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(s, "    {}{}", json_row(r), if i + 1 < rows.len() { "," } else { "" });
    }
    s.push_str("  ]\n}\n");
    s
}

/// One row of `bench --json`, on one line (`rows_from_json` reads it back).
fn json_row(r: &Row) -> String {
    // Non-finite times (a side that could not run) are null.
    let num = |x: f64| if x.is_finite() { format!("{x:.3}") } else { "null".to_owned() };
    format!(
        "{{\"group\": {:?}, \"m\": {}, \"n\": {}, \"k\": {}, \"bias\": {}, \"ours_us\": {}, \"own_us\": {}, \"vendor_us\": {}, \"vendor_top1_us\": {}, \"floor_us\": {}, \"speedup\": {}, \"efficiency\": {}, \"forwarded\": {}}}",
        r.shape.group,
        r.shape.m,
        r.shape.n,
        r.shape.k,
        r.shape.bias,
        num(r.ours_us),
        num(r.own_us),
        num(r.vendor_us),
        num(r.vendor_top1_us),
        num(r.floor_us),
        num(r.speedup()),
        num(r.efficiency()),
        r.forwarded,
    )
}

/// Heatmap cell size and left margin (the M labels stand in the margin).
const CELL_W: f64 = 118.0;
const CELL_H: f64 = 40.0;
const HEAT_LEFT: f64 = 60.0;

/// Speedup heatmap: one panel per group, M down, (N, K, bias) across; each cell
/// coloured by speedup and showing both latencies. (A table of coloured cells:
/// plain SVG text, no plotting crate needed.)
pub fn heatmap(rows: &[Row], device: &str, vendor: &str) -> String {
    let mut body = String::new();
    let mut y0 = 90.0;
    let mut width: f64 = 600.0;
    for g in groups(rows) {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.shape.group == g).collect();
        let (w, h) = heatmap_panel(&mut body, g, &rs, vendor, y0);
        width = width.max(w);
        y0 += h + 80.0;
    }
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{}' font-family='sans-serif'><rect width='100%' height='100%' fill='white'/><text x='10' y='20' font-size='16'>skinnylt vs {vendor} (best of its top-8) on {device}: speedup per shape</text><text x='10' y='38' font-size='12'>cell text: skinnylt / vendor µs (graph replay, cold weights); fwd = forwarded to the vendor by the tuning table</text>{body}</svg>\n",
        y0 - 40.0
    )
}

/// Group `g`'s panel, its cells from `y0` down: the title and column heads above,
/// then a row of cells per M. Its width, and the height of its cells.
fn heatmap_panel(body: &mut String, g: &str, rs: &[&Row], vendor: &str, y0: f64) -> (f64, f64) {
    let (cw, ch, left) = (CELL_W, CELL_H, HEAT_LEFT);
    let mut cols: Vec<(u32, u32, bool)> = rs.iter().map(|r| (r.shape.n, r.shape.k, r.shape.bias)).collect();
    cols.dedup();
    let mut ms: Vec<u32> = rs.iter().map(|r| r.shape.m).collect();
    ms.sort();
    ms.dedup();
    let gm = geomean(rs.iter().map(|r| r.speedup()));
    let _ = write!(body, "<text x='{left}' y='{}' font-size='15' font-weight='bold'>{g}: geomean speedup {gm:.2}x over {vendor}</text>", y0 - 28.0);
    for (ci, (n, k, b)) in cols.iter().enumerate() {
        let x = left + cw * ci as f64;
        let _ = write!(body, "<text x='{}' y='{}' font-size='11' text-anchor='middle'>N={n} K={k}{}</text>", x + cw / 2.0, y0 - 8.0, if *b { " +b" } else { "" });
    }
    for (mi, m) in ms.iter().enumerate() {
        let y = y0 + ch * mi as f64;
        let _ = write!(body, "<text x='{}' y='{}' font-size='12' text-anchor='end'>M={m}</text>", left - 6.0, y + ch / 2.0 + 4.0);
        for (ci, col) in cols.iter().enumerate() {
            let Some(r) = rs.iter().find(|r| r.shape.m == *m && (r.shape.n, r.shape.k, r.shape.bias) == *col) else { continue };
            heatmap_cell(body, r, left + cw * ci as f64, y);
        }
    }
    (left + cw * cols.len() as f64 + 20.0, ch * ms.len() as f64)
}

/// One heatmap cell at (`x`, `y`): coloured by the speedup, which it shows, with
/// both latencies below.
fn heatmap_cell(body: &mut String, r: &Row, x: f64, y: f64) {
    let (cw, ch) = (CELL_W, CELL_H);
    let sp = r.speedup();
    let _ = write!(
        body,
        "<rect x='{x}' y='{y}' width='{cw}' height='{ch}' fill='{}' stroke='white'/><text x='{}' y='{}' font-size='14' text-anchor='middle' font-weight='bold'>{sp:.2}x</text><text x='{}' y='{}' font-size='9' text-anchor='middle'>{:.1} / {:.1} µs{}</text>",
        color(sp),
        x + cw / 2.0,
        y + 17.0,
        x + cw / 2.0,
        y + 32.0,
        r.ours_us,
        r.vendor_us,
        if r.forwarded { " fwd" } else { "" }
    );
}

/// Red below 1x, white at 1x, green above (saturating at 0.5x and 2x).
fn color(speedup: f64) -> String {
    let t = speedup.ln() / 2f64.ln(); // -1 at 0.5x, +1 at 2x
    let t = t.clamp(-1.0, 1.0);
    let (r, g, b) = if t >= 0.0 {
        (255.0 - 155.0 * t, 255.0 - 50.0 * t, 255.0 - 155.0 * t)
    } else {
        (255.0, 255.0 + 155.0 * t, 255.0 + 155.0 * t)
    };
    format!("rgb({},{},{})", r as u8, g as u8, b as u8)
}

/// A panel of the latency curves: group, N, K, bias.
type CurveKey = (&'static str, u32, u32, bool);

/// Curve panel size, and panels per row.
const PANEL_W: f64 = 260.0;
const PANEL_H: f64 = 170.0;
const PANELS_PER_ROW: usize = 4;

/// Latency against M, one small panel per (N, K, bias): skinnylt and the vendor,
/// log2 M across, µs up (each panel scaled to its own range).
pub fn curves(rows: &[Row], device: &str, vendor: &str) -> String {
    let mut keys: Vec<CurveKey> = rows.iter().map(|r| (r.shape.group, r.shape.n, r.shape.k, r.shape.bias)).collect();
    keys.dedup();
    let (pw, ph, cols) = (PANEL_W, PANEL_H, PANELS_PER_ROW);
    let rows_n = keys.len().div_ceil(cols);
    let mut body = String::new();
    for (i, key) in keys.iter().enumerate() {
        let (x0, y0) = (20.0 + (i % cols) as f64 * (pw + 30.0), 50.0 + (i / cols) as f64 * (ph + 50.0));
        let rs: Vec<&Row> = rows.iter().filter(|r| (r.shape.group, r.shape.n, r.shape.k, r.shape.bias) == *key).collect();
        curve_panel(&mut body, key, &rs, x0, y0);
    }
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='sans-serif'><rect width='100%' height='100%' fill='white'/><text x='10' y='22' font-size='15'>Latency vs M on {device}: <tspan fill='#1a7f37'>skinnylt</tspan> and <tspan fill='#cf222e'>{vendor} (best of top-8)</tspan>; forwarded shapes show the vendor's time</text>{body}</svg>\n",
        40.0 + cols as f64 * (pw + 30.0),
        70.0 + rows_n as f64 * (ph + 50.0)
    )
}

/// The panel of `key` at (`x0`, `y0`): its frame and title, skinnylt's and the
/// vendor's latencies as two lines, and the M of each point below.
fn curve_panel(body: &mut String, key: &CurveKey, rs: &[&Row], x0: f64, y0: f64) {
    let (pw, ph) = (PANEL_W, PANEL_H);
    let (mmin, mmax) = (rs.iter().map(|r| r.shape.m).min().unwrap_or(1) as f64, rs.iter().map(|r| r.shape.m).max().unwrap_or(2) as f64);
    let hi = rs.iter().map(|r| r.ours_us.max(r.vendor_us)).fold(0.0, f64::max);
    let lo = rs.iter().map(|r| r.ours_us.min(r.vendor_us)).fold(f64::INFINITY, f64::min);
    // Each panel zooms on its own range, so small differences stay visible.
    let (tmin, tmax) = (lo * 0.9, hi * 1.05);
    let x = |m: u32| x0 + 30.0 + (pw - 40.0) * if mmax > mmin { ((m as f64).log2() - mmin.log2()) / (mmax.log2() - mmin.log2()) } else { 0.5 };
    let y = |t: f64| y0 + ph - 20.0 - (ph - 30.0) * (t - tmin) / (tmax - tmin).max(1e-9);
    let _ = write!(body, "<rect x='{x0}' y='{y0}' width='{pw}' height='{ph}' fill='none' stroke='#ccc'/><text x='{}' y='{}' font-size='11'>{} N={} K={}{} ({:.1}–{:.1} µs)</text>", x0 + 4.0, y0 - 6.0, key.0, key.1, key.2, if key.3 { " +bias" } else { "" }, lo, hi);
    for (series, color) in [(0, "#1a7f37"), (1, "#cf222e")] {
        let pts: Vec<String> = rs.iter().map(|r| format!("{:.1},{:.1}", x(r.shape.m), y(if series == 0 { r.ours_us } else { r.vendor_us }))).collect();
        let _ = write!(body, "<polyline points='{}' fill='none' stroke='{color}' stroke-width='2'/>", pts.join(" "));
    }
    for r in rs {
        let _ = write!(body, "<text x='{:.1}' y='{}' font-size='9' text-anchor='middle'>{}</text>", x(r.shape.m), y0 + ph - 6.0, r.shape.m);
    }
}

/// Reads rows back from `bench --json` output.
pub fn rows_from_json(text: &str) -> Result<(String, Vec<Row>), String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let device = v["device"].as_str().unwrap_or("?").to_owned();
    let group = grid::group_name;
    let rows = v["rows"]
        .as_array()
        .ok_or("no rows")?
        .iter()
        .map(|r| Row {
            shape: Shape {
                group: group(r["group"].as_str().unwrap_or("")),
                m: r["m"].as_u64().unwrap_or(0) as u32,
                n: r["n"].as_u64().unwrap_or(0) as u32,
                k: r["k"].as_u64().unwrap_or(0) as u32,
                bias: r["bias"].as_bool().unwrap_or(false),
            },
            ours_us: r["ours_us"].as_f64().unwrap_or(f64::NAN),
            own_us: r["own_us"].as_f64().unwrap_or(f64::NAN),
            vendor_us: r["vendor_us"].as_f64().unwrap_or(f64::NAN),
            vendor_top1_us: r["vendor_top1_us"].as_f64().unwrap_or(f64::NAN),
            floor_us: r["floor_us"].as_f64().unwrap_or(f64::NAN),
            forwarded: r["forwarded"].as_bool().unwrap_or(false),
        })
        .collect();
    Ok((device, rows))
}

#[derive(clap::Args)]
pub struct PlotArgs {
    /// A `skinnylt bench --json` file.
    pub json: String,
    #[arg(long)]
    pub heatmap: Option<String>,
    #[arg(long)]
    pub curves: Option<String>,
    /// The vendor library the file was measured against (`bench --json` does not
    /// record it): cuBLASLt on NVIDIA, hipBLASLt on AMD.
    #[arg(long, default_value = "cuBLASLt")]
    pub vendor: String,
}

/// `skinnylt plot`: redraws the pictures of a saved benchmark (no GPU needed).
pub fn plot(a: &PlotArgs) -> i32 {
    let r = std::fs::read_to_string(&a.json).map_err(|e| e.to_string()).and_then(|t| rows_from_json(&t)).and_then(|(device, rows)| {
        summary(&rows);
        if let Some(p) = &a.heatmap {
            std::fs::write(p, heatmap(&rows, &device, &a.vendor)).map_err(|e| e.to_string())?;
        }
        if let Some(p) = &a.curves {
            std::fs::write(p, curves(&rows, &device, &a.vendor)).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("plot failed: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<Row> {
        [1, 4]
            .into_iter()
            .map(|m| Row { shape: Shape { group: "G1", m, n: 2880, k: 2880, bias: true }, ours_us: 5.0, own_us: 5.0, vendor_us: 7.5, vendor_top1_us: 8.0, floor_us: 4.0, forwarded: false })
            .collect()
    }

    #[test]
    fn pictures_name_the_vendor_they_were_measured_against() {
        for (vendor, other) in [("cuBLASLt", "hipBLASLt"), ("hipBLASLt", "cuBLASLt")] {
            let h = heatmap(&rows(), "gpu", vendor);
            assert!(h.contains(&format!("skinnylt vs {vendor} (best of its top-8) on gpu")));
            assert!(h.contains(&format!("geomean speedup 1.50x over {vendor}")));
            let c = curves(&rows(), "gpu", vendor);
            assert!(c.contains(&format!("{vendor} (best of top-8)")));
            assert!(!h.contains(other) && !c.contains(other));
        }
    }

    #[test]
    fn units_use_the_vendor_word() {
        let info = |backend, units| DeviceInfo { backend, ordinal: 0, name: "gpu".into(), arch_name: "x".into(), arch: None, units, l2_bytes: 0 };
        assert_eq!(units(&info(skinnylt::gpu::Backend::Cuda, 132)), "132 SMs");
        assert_eq!(units(&info(skinnylt::gpu::Backend::Hip, 304)), "304 CUs");
    }

    /// Each `--epilogue` asks both sides for the same thing: hipBLASLt's epilogue
    /// value (which cuBLASLt shares), the kernels' flags and beta, and a bias on
    /// every shape exactly where the epilogue has one.
    #[test]
    fn epilogue_args_ask_both_sides_for_the_same_call() {
        use skinnylt::abi::{EPILOGUE_BIAS, EPILOGUE_GELU_BIAS, EPILOGUE_RELU_BIAS};
        use skinnylt::kernels::params::{EPI_BIAS_F32, EPI_GELU, EPI_RELU};
        let plain = Shape { group: "t", m: 8, n: 64, k: 7168, bias: false };
        let biased = Shape { bias: true, ..plain };
        // (epilogue, value without / with the shape's bias, flags, beta, bias forced)
        let cases = [
            (EpilogueArg::Shape, 0, EPILOGUE_BIAS, 0, 0.0, false),
            (EpilogueArg::Residual, 0, EPILOGUE_BIAS, 0, 1.0, false),
            (EpilogueArg::ReluBias, EPILOGUE_RELU_BIAS, EPILOGUE_RELU_BIAS, EPI_RELU, 0.0, true),
            (EpilogueArg::GeluBias, EPILOGUE_GELU_BIAS, EPILOGUE_GELU_BIAS, EPI_GELU, 0.0, true),
            (EpilogueArg::BiasF32, 0, EPILOGUE_BIAS, EPI_BIAS_F32, 0.0, true),
        ];
        for (e, bare, with_bias, flags, beta, forced) in cases {
            assert_eq!(e.shape(plain).bias, forced, "{e:?}");
            assert!(e.shape(biased).bias, "{e:?} keeps the shape's bias");
            assert_eq!(e.value(e.shape(plain).bias), if forced { with_bias } else { bare }, "{e:?}");
            assert_eq!(e.value(true), with_bias, "{e:?}");
            assert_eq!(e.flags(), flags, "{e:?}");
            assert_eq!(e.beta(), beta, "{e:?}");
        }
    }
}
