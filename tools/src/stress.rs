//! `skinnylt stress`: many host threads and streams through the hipBLASLt C API in
//! one process, for minutes, then CUDA graph replays of split-K shapes.
//!
//! * Mode: interposed on the real hipBLASLt named by `--real-lib` (or
//!   `SKINNYLT_REAL_LIB`), on NVIDIA the cuBLASLt-backed stand-in of
//!   `tools/standin/`; standalone when none is named, where the calls skinnylt
//!   does not run must return NOT_SUPPORTED and leave the output untouched.
//! * A mix of problems ([`catalog`]): decode GEMMs skinnylt runs (bf16 and fp16,
//!   M = 1 to 100, real-model N and K, bias, padded leading dimensions, the gemv
//!   form, split-K shapes, beta != 0 with a C apart from D), and ones it forwards
//!   (M = 256 and 512, K not a multiple of 8). Each problem is first run alone, and the counters say how it
//!   is routed; that route is then expected for every later call of it.
//! * `--threads` host threads, each with `--streams` streams and its own instance of
//!   every problem (fresh random inputs, never zeros, and a float64 reference). A
//!   round launches one problem per stream (1 to 3 times back to back, output
//!   poisoned with NaN first), on a handle shared by all threads, one shared by a
//!   few threads, or the thread's own (destroyed and re-created every
//!   `--churn` rounds, with one problem's descriptors), with or without a workspace
//!   and a heuristic algo; then syncs each stream and checks the output against
//!   float64 and, for problems skinnylt runs, bit for bit against the problem's
//!   first output.
//! * Counters: every call is tallied by its expected route; at the end the
//!   `skinnylt_get_counters` / `skinnylt_forwarded_for` deltas must equal the tally
//!   exactly, and interposed, the stand-in must have received exactly the forwarded
//!   calls.
//! * Graphs: each intercepted shape planned with split-K > 1 is captured (one
//!   matmul) on its own stream and thread, and the replays (`--replays` in all) run
//!   in bursts of at most 100: in one kind every replay is preceded by NaN poison
//!   and its output copied aside, in the other the burst runs back to back; each
//!   burst's outputs are compared bit for bit with the eager output.
//! * `--tuning fallback` (standalone): tables without entries or planner, so the
//!   fallback rule picks the kernels; on sm_90 its split-K plans combine in global
//!   memory through the handles' stream lanes, which the shipped tables' cluster
//!   plans never use.
//!
//! Bits and lanes: a handle serves split-K on at most `engine::LANES` streams (the
//! first to use it); further streams run such plans unsplit, so their bits differ
//! (docs/design.md §5). Outputs of a handle used on more streams than that are
//! therefore compared per (problem, stream), and how many of those differ from the
//! problem's first output is reported, not failed. Handles are assigned so that the
//! shared-by-a-few and own handles never exceed the lanes.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{CString, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use skinnylt::abi::{self, *};
use skinnylt::ffi::hipblaslt as lt;
use skinnylt::ffi::skinnylt as sk;
use skinnylt::gpu::Backend;
use skinnylt::route::{DType, Form, Problem, Reason};

use crate::bench::no_gpu;
use crate::client::hip_type;
use crate::gpu::{Buf, Gpu, Raw};
use crate::reference::{self, Rng};

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Seconds of the multi-threaded phase (after setup).
    #[arg(long, default_value_t = 600.0)]
    pub seconds: f64,
    /// Host threads.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// Streams per thread.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub streams: u32,
    /// Graph replays in all, over the split-K shapes (0: no graph phase).
    #[arg(long, default_value_t = 10_000)]
    pub replays: u64,
    /// The real hipBLASLt to interpose on (e.g. the cuBLASLt stand-in); default
    /// `$SKINNYLT_REAL_LIB`, else standalone.
    #[arg(long)]
    pub real_lib: Option<String>,
    /// Rounds between a thread's own handle being destroyed and re-created.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub churn: u64,
    /// Stop early after this many failures (mismatches, bit differences, errors).
    #[arg(long, default_value_t = 50)]
    pub max_failures: u64,
    /// Seed for inputs and choices (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the JSON summary here.
    #[arg(long)]
    pub out: Option<String>,
    /// "shipped": the device's tables (what applications get); "fallback": tables
    /// without entries or planner, so standalone runs the fallback rule, which on
    /// sm_90 picks split-K plans outside clusters (stream lanes, global combine).
    #[arg(long, default_value = "shipped", value_parser = ["shipped", "fallback"])]
    pub tuning: String,
}

// ---------------------------------------------------------------- the problem mix

/// One problem of the mix: `Y[M,N] = alpha · X[M,K] · W[N,K]ᵀ (+ bias) + beta · C`,
/// in `F.linear` form (opA = T, opB = N) or, with `gemv`, the 1-token gemv form
/// (opA = N, opB = N, x as A).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spec {
    pub dtype: DType,
    pub gemv: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub ldw: usize,
    pub ldy: usize,
    pub bias: bool,
    pub alpha: f32,
    pub beta: f32,
    /// The forward reason the design gives this problem, or `None` for a decode GEMM
    /// skinnylt may run (interposed, its table or planner may still forward it).
    pub expect: Option<&'static str>,
}

impl Spec {
    const fn linear(dtype: DType, m: usize, n: usize, k: usize, bias: bool) -> Spec {
        Spec { dtype, gemv: false, m, n, k, ldw: k, ldy: n, bias, alpha: 1.0, beta: 0.0, expect: None }
    }

    pub fn name(&self) -> String {
        let mut s = format!("{} M={} N={} K={}", self.dtype.name(), self.m, self.n, self.k);
        if self.bias {
            s += " +bias";
        }
        if self.gemv {
            s += " gemv";
        }
        if self.ldw != self.k {
            s += &format!(" ldw={}", self.ldw);
        }
        if self.ldy != self.n {
            s += &format!(" ldy={}", self.ldy);
        }
        if self.alpha != 1.0 {
            s += &format!(" alpha={}", self.alpha);
        }
        if self.beta != 0.0 {
            s += &format!(" beta={}", self.beta);
        }
        s
    }

    /// The problem as routing and planning see it (placeholder pointers).
    pub fn problem(&self) -> Problem {
        let mut p = Problem::packed(self.dtype, self.m as u32, self.n as u32, self.k as u32, self.bias);
        p.form = if self.gemv { Form::Gemv } else { Form::Linear };
        p.ldw = self.ldw as u64;
        p.ldy = self.ldy as u64;
        p.alpha = self.alpha;
        p
    }

    /// Elements of Y, padding included (what is poisoned and read back).
    pub fn y_len(&self) -> usize {
        self.m * self.ldy
    }
}

/// The mix: decode shapes of real models (Llama-3-8B-like 4096/14336, a 7168-wide
/// MoE down projection, 2880 with bias), the split-K shapes of `skinnylt check`,
/// padded leading dimensions, alpha != 1, the gemv form; and problems the design
/// forwards, with the reason it gives.
pub fn catalog() -> Vec<Spec> {
    use DType::{Bf16, F16};
    let l = Spec::linear;
    vec![
        l(Bf16, 1, 4096, 4096, false),
        Spec { gemv: true, ..l(F16, 1, 4096, 4096, false) },
        l(Bf16, 3, 14336, 4096, false),
        Spec { ldy: 4104, ..l(F16, 8, 4096, 4096, false) },
        l(Bf16, 16, 4096, 14336, false),
        l(F16, 32, 1024, 7168, false),
        l(Bf16, 64, 2880, 2880, true),
        Spec { alpha: 0.5, ..l(Bf16, 100, 2880, 2880, true) },
        l(F16, 100, 1024, 7168, false),
        l(F16, 3, 2880, 2880, true),
        // The split-K shapes of `skinnylt check`.
        l(Bf16, 8, 2880, 2880, true),
        l(Bf16, 1, 512, 7168, false),
        l(F16, 32, 5120, 2880, true),
        Spec { ldw: 7176, ..l(Bf16, 1, 1024, 7168, false) },
        l(F16, 16, 14336, 4096, true),
        l(Bf16, 32, 4096, 4096, true),
        // Forwarded by design.
        Spec { expect: Some("too-many-tokens"), ..l(Bf16, 256, 1024, 2048, true) },
        Spec { expect: Some("too-many-tokens"), ..l(F16, 512, 512, 1024, false) },
        // beta != 0 with C apart from D (run by skinnylt).
        Spec { beta: 1.0, ..l(Bf16, 8, 2048, 2048, false) },
        Spec { beta: 0.5, ..l(Bf16, 64, 4096, 4096, true) },
        Spec { expect: Some("alignment"), ..l(F16, 4, 1536, 2052, false) },
    ]
}

// ---------------------------------------------------------------- routes and counters

/// How a problem's calls are routed, as the counters showed for its first call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Route {
    /// Run by skinnylt.
    Ours,
    /// Forwarded, with the counter's reason name.
    Forwarded(String),
}

/// skinnylt's counters, read through its C API.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub intercepted: u64,
    pub forwarded: u64,
    pub by_reason: BTreeMap<String, u64>,
}

impl Counters {
    /// `skinnylt_get_counters` and `skinnylt_forwarded_for` of every reason.
    pub fn read() -> Counters {
        let mut c = sk::skinnylt_counters::default();
        // SAFETY: a writable local of the struct the function fills.
        unsafe { sk::skinnylt_get_counters(&mut c) };
        let mut by_reason = BTreeMap::new();
        for r in Reason::ALL {
            let name = CString::new(r.name()).expect("reason names have no NUL");
            // SAFETY: a NUL-terminated string that lives through the call.
            let n = unsafe { sk::skinnylt_forwarded_for(name.as_ptr()) };
            if n > 0 {
                by_reason.insert(r.name().to_owned(), n as u64);
            }
        }
        Counters { intercepted: c.intercepted, forwarded: c.forwarded, by_reason }
    }

    /// What changed since `before`.
    pub fn since(&self, before: &Counters) -> Counters {
        let mut by_reason = BTreeMap::new();
        for (r, n) in &self.by_reason {
            let d = n.saturating_sub(before.by_reason.get(r).copied().unwrap_or(0));
            if d > 0 {
                by_reason.insert(r.clone(), d);
            }
        }
        Counters { intercepted: self.intercepted.saturating_sub(before.intercepted), forwarded: self.forwarded.saturating_sub(before.forwarded), by_reason }
    }

    /// The route of the one call made between `before` and `self`, if exactly one
    /// was counted.
    pub fn route_of_one_call(&self, before: &Counters) -> Option<Route> {
        let d = self.since(before);
        match (d.intercepted, d.forwarded, d.by_reason.len()) {
            (1, 0, 0) => Some(Route::Ours),
            (0, 1, 1) if d.by_reason.values().all(|&n| n == 1) => d.by_reason.into_keys().next().map(Route::Forwarded),
            _ => None,
        }
    }
}

/// Calls made, by the route each was expected to take.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub intercepted: u64,
    pub forwarded: BTreeMap<String, u64>,
}

impl Tally {
    pub fn add(&mut self, r: &Route, calls: u64) {
        match r {
            Route::Ours => self.intercepted += calls,
            Route::Forwarded(reason) => *self.forwarded.entry(reason.clone()).or_default() += calls,
        }
    }

    pub fn merge(&mut self, other: &Tally) {
        self.intercepted += other.intercepted;
        for (r, n) in &other.forwarded {
            *self.forwarded.entry(r.clone()).or_default() += n;
        }
    }

    pub fn forwarded_total(&self) -> u64 {
        self.forwarded.values().sum()
    }

    pub fn calls(&self) -> u64 {
        self.intercepted + self.forwarded_total()
    }

    /// Every way the counters' change `delta` differs from this tally; empty
    /// when they agree exactly (totals and every reason).
    pub fn compare(&self, delta: &Counters) -> Vec<String> {
        let mut out = Vec::new();
        if delta.intercepted != self.intercepted {
            out.push(format!("intercepted: counters {} != calls {}", delta.intercepted, self.intercepted));
        }
        if delta.forwarded != self.forwarded_total() {
            out.push(format!("forwarded: counters {} != calls {}", delta.forwarded, self.forwarded_total()));
        }
        let reasons: std::collections::BTreeSet<&String> = delta.by_reason.keys().chain(self.forwarded.keys()).collect();
        for r in reasons {
            let (got, want) = (delta.by_reason.get(r).copied().unwrap_or(0), self.forwarded.get(r).copied().unwrap_or(0));
            if got != want {
                out.push(format!("forwarded for {r}: counters {got} != calls {want}"));
            }
        }
        out
    }
}

// ---------------------------------------------------------------- handle and replay plans

/// Streams one handle serves with split-K (`engine::LANES`).
pub const LANES: usize = skinnylt::engine::LANES;

/// Which threads share a "group" handle: as many consecutive threads as fit their
/// streams in the handle's lanes (at least one), so a group handle has a lane for
/// every stream that uses it whenever the streams per thread allow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HandlePlan {
    /// The group of each thread.
    pub group_of: Vec<usize>,
    /// Streams that use each group's handle.
    pub group_streams: Vec<usize>,
    /// Streams that use the handle shared by every thread.
    pub global_streams: usize,
}

impl HandlePlan {
    pub fn new(threads: usize, streams: usize) -> HandlePlan {
        let per_group = (LANES / streams.max(1)).max(1);
        let group_of: Vec<usize> = (0..threads).map(|t| t / per_group).collect();
        let groups = threads.div_ceil(per_group);
        let group_streams = (0..groups).map(|g| group_of.iter().filter(|&&x| x == g).count() * streams).collect();
        HandlePlan { group_of, group_streams, global_streams: threads * streams }
    }

    pub fn groups(&self) -> usize {
        self.group_streams.len()
    }

    /// Whether every stream on group `g`'s handle gets a lane.
    pub fn group_lane_safe(&self, g: usize) -> bool {
        self.group_streams[g] <= LANES
    }

    pub fn global_lane_safe(&self) -> bool {
        self.global_streams <= LANES
    }
}

/// Replays of each of `shapes` graphs: `total` split as evenly as it goes.
pub fn split_replays(total: u64, shapes: usize) -> Vec<u64> {
    if shapes == 0 {
        return Vec::new();
    }
    let (each, rest) = (total / shapes as u64, total % shapes as u64);
    (0..shapes as u64).map(|i| each + (i < rest) as u64).collect()
}

/// A burst of graph replays between two read-backs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    pub replays: u64,
    /// Poison before, and a copy of the output after, every replay (else the burst
    /// runs back to back and only its last output is kept).
    pub each: bool,
}

/// The most replays between two read-backs.
pub const MAX_BURST: u64 = 100;

/// `replays` as bursts of at most [`MAX_BURST`], alternating the two kinds,
/// starting with the per-replay kind.
pub fn bursts(replays: u64) -> Vec<Burst> {
    let mut out = Vec::new();
    let mut left = replays;
    while left > 0 {
        let n = left.min(MAX_BURST);
        out.push(Burst { replays: n, each: out.len() % 2 == 0 });
        left -= n;
    }
    out
}

// ---------------------------------------------------------------- device helpers

type CuResult = c_int;

skinnylt::dl_table!(AsyncFns {
    cuMemsetD16Async: fn(u64, u16, usize, Raw) -> CuResult;
});

/// The NaN both 16-bit types read as.
const POISON: u16 = 0xffff;

/// Bytes of each stream's workspace (and the heuristic's limit): more than a lane
/// of skinnylt's own buffer, which caps its partials (docs/design.md §5).
pub const WORKSPACE_BYTES: usize = 8 << 20;

struct Dev {
    cu: &'static Gpu,
    fns: AsyncFns,
}

impl Dev {
    /// Stream-ordered NaN poison: a device-wide `memset16` would serialise every
    /// thread's streams.
    fn poison(&self, dst: u64, count: usize, stream: usize) -> Result<(), String> {
        skinnylt::dl_call!(self.fns, "libcuda", cuMemsetD16Async(dst, POISON, count, stream as Raw), |r| self.cu.rt.error_string(r))
    }

    fn buf(&self, bytes: usize) -> Result<Buf<'static>, String> {
        Ok(Buf(self.cu, self.cu.malloc(bytes)?))
    }

    fn upload(&self, v: &[u16]) -> Result<Buf<'static>, String> {
        let b = self.buf(v.len() * 2)?;
        self.cu.htod(b.1, v)?;
        Ok(b)
    }

    fn read(&self, src: u64, len: usize) -> Result<Vec<u16>, String> {
        let mut y = vec![0u16; len];
        self.cu.dtoh(&mut y, src)?;
        Ok(y)
    }
}

fn ok(s: Status, what: &str) -> Result<(), String> {
    if s == STATUS_SUCCESS { Ok(()) } else { Err(format!("{what}: {}", abi::status_name(s))) }
}

/// `hipblasLtCreate`, the handle as a plain value.
pub fn create_handle() -> Result<usize, String> {
    let mut h: abi::Handle = std::ptr::null_mut();
    // SAFETY: `h` is a writable local.
    ok(unsafe { lt::hipblasLtCreate(&mut h) }, "hipblasLtCreate")?;
    Ok(h as usize)
}

/// `hipblasLtDestroy` of a handle `create_handle` made, with no work of it in flight.
pub fn destroy_handle(h: usize) -> Result<(), String> {
    // SAFETY: a handle `create_handle` made, destroyed once, with no work of it
    // left in flight (its streams were synchronised).
    ok(unsafe { lt::hipblasLtDestroy(h as abi::Handle) }, "hipblasLtDestroy")
}

/// The device operands of one call: W, X, C (D itself when beta = 0) and Y = D.
#[derive(Clone, Copy, Debug)]
pub struct Operands {
    pub w: u64,
    pub x: u64,
    pub c: u64,
    pub y: u64,
}

/// One problem's descriptors as an application makes them; destroyed on drop.
/// Kept as plain values: they go only to the C API, from one thread at a time.
pub struct Descs {
    desc: usize,
    a: usize,
    b: usize,
    d: usize,
}

impl Descs {
    /// The descriptors of `s` (with `bias` as the bias pointer when it has one).
    pub fn new(s: &Spec, bias: u64) -> Result<Descs, String> {
        let t = hip_type(s.dtype);
        let (m, n, k) = (s.m as u64, s.n as u64, s.k as u64);
        let mut d = Descs { desc: 0, a: 0, b: 0, d: 0 };
        let layout = |rows: u64, cols: u64, ld: u64| -> Result<usize, String> {
            let mut l: MatrixLayout = std::ptr::null_mut();
            // SAFETY: `l` is a writable local.
            ok(unsafe { lt::hipblasLtMatrixLayoutCreate(&mut l, t, rows, cols, ld as i64) }, "MatrixLayoutCreate")?;
            Ok(l as usize)
        };
        let mut desc: MatmulDesc = std::ptr::null_mut();
        // SAFETY: `desc` is a writable local.
        ok(unsafe { lt::hipblasLtMatmulDescCreate(&mut desc, COMPUTE_32F, R_32F) }, "MatmulDescCreate")?;
        d.desc = desc as usize;
        let set = |attr: i32, v: &[u8]| {
            // SAFETY: the descriptor just made, and a value that lives through the call.
            ok(unsafe { lt::hipblasLtMatmulDescSetAttribute(desc, attr, v.as_ptr().cast(), v.len()) }, "MatmulDescSetAttribute")
        };
        set(desc_attr::TRANSA, &(if s.gemv { OP_N } else { OP_T }).to_le_bytes())?;
        set(desc_attr::TRANSB, &OP_N.to_le_bytes())?;
        if s.bias {
            set(desc_attr::EPILOGUE, &EPILOGUE_BIAS.to_le_bytes())?;
            set(desc_attr::BIAS_POINTER, &bias.to_le_bytes())?;
        }
        if s.gemv {
            // x as A (1 × K), W as B (K × N, K contiguous), y as D (1 × N).
            d.a = layout(1, k, 1)?;
            d.b = layout(k, n, s.ldw as u64)?;
            d.d = layout(1, n, 1)?;
        } else {
            d.a = layout(k, n, s.ldw as u64)?;
            d.b = layout(k, m, k)?;
            d.d = layout(n, m, s.ldy as u64)?;
        }
        Ok(d)
    }

    /// Reads the operations and the epilogue back (GetAttribute, forwarded when
    /// interposed) and checks them.
    pub fn check_readback(&self, s: &Spec) -> Result<(), String> {
        let get = |attr: i32| -> Result<u32, String> {
            let mut v = [0u8; 4];
            let mut written = 0usize;
            // SAFETY: this set's descriptor, a 4-byte buffer and a writable local.
            ok(unsafe { lt::hipblasLtMatmulDescGetAttribute(self.desc as MatmulDesc, attr, v.as_mut_ptr().cast(), 4, &mut written) }, "MatmulDescGetAttribute")?;
            Ok(u32::from_le_bytes(v))
        };
        let want = [(desc_attr::TRANSA, if s.gemv { OP_N } else { OP_T } as u32), (desc_attr::TRANSB, OP_N as u32), (desc_attr::EPILOGUE, if s.bias { EPILOGUE_BIAS } else { EPILOGUE_DEFAULT })];
        for (attr, v) in want {
            let got = get(attr)?;
            if got != v {
                return Err(format!("MatmulDescGetAttribute({attr}) read {got}, set {v}"));
            }
        }
        Ok(())
    }

    /// The heuristic's first algo for this problem on `handle` (preference: a
    /// workspace of `WORKSPACE_BYTES`), or `None` when it has none.
    pub fn heuristic(&self, handle: usize) -> Option<MatmulAlgo> {
        let mut pref: MatmulPreference = std::ptr::null_mut();
        // SAFETY: `pref` is a writable local.
        if unsafe { lt::hipblasLtMatmulPreferenceCreate(&mut pref) } != STATUS_SUCCESS {
            return None;
        }
        let ws = WORKSPACE_BYTES as u64;
        let mut res = [HeuristicResult::default(); 1];
        let mut returned = 0i32;
        // SAFETY: the preference just made, this set's descriptors and the caller's
        // handle, a value and out-parameters that live through the calls.
        let st = unsafe {
            lt::hipblasLtMatmulPreferenceSetAttribute(pref, pref_attr::MAX_WORKSPACE_BYTES, (&ws as *const u64).cast(), 8);
            let d = self.d as MatrixLayout;
            let st = lt::hipblasLtMatmulAlgoGetHeuristic(handle as abi::Handle, self.desc as MatmulDesc, self.a as MatrixLayout, self.b as MatrixLayout, d, d, pref, 1, res.as_mut_ptr(), &mut returned);
            lt::hipblasLtMatmulPreferenceDestroy(pref);
            st
        };
        (st == STATUS_SUCCESS && returned >= 1 && res[0].workspace_size <= WORKSPACE_BYTES).then_some(res[0].algo)
    }
}

impl Descs {
    /// One `hipblasLtMatmul` of `s` with these descriptors: alpha and beta from
    /// `s`, a workspace of `WORKSPACE_BYTES` at `ws` or none, `algo` or none.
    #[allow(clippy::not_unsafe_ptr_arg_deref)] // device pointers are numbers here
    pub fn matmul(&self, s: &Spec, handle: usize, o: Operands, ws: Option<u64>, algo: Option<&MatmulAlgo>, stream: usize) -> Status {
        let (alpha, beta) = (s.alpha, s.beta);
        let (a, b) = if s.gemv { (o.x, o.w) } else { (o.w, o.x) };
        let algo = algo.map_or(std::ptr::null(), |a| a as *const MatmulAlgo);
        let (ws, ws_size) = ws.map_or((0, 0), |p| (p, WORKSPACE_BYTES));
        // SAFETY: this set's descriptors, host scalars that live through the call;
        // device pointers, handle and stream are the caller's, passed as the C API
        // takes them (the library never dereferences device pointers on the host).
        unsafe {
            lt::hipblasLtMatmul(
                handle as abi::Handle,
                self.desc as MatmulDesc,
                (&alpha as *const f32).cast(),
                a as *const c_void,
                self.a as MatrixLayout,
                b as *const c_void,
                self.b as MatrixLayout,
                (&beta as *const f32).cast(),
                o.c as *const c_void,
                self.d as MatrixLayout,
                o.y as *mut c_void,
                self.d as MatrixLayout,
                algo,
                ws as *mut c_void,
                ws_size,
                stream as *mut c_void,
            )
        }
    }
}

impl Drop for Descs {
    fn drop(&mut self) {
        // SAFETY: the descriptors `new` made (0 where it stopped early), destroyed once.
        unsafe {
            for l in [self.a, self.b, self.d].into_iter().filter(|&l| l != 0) {
                lt::hipblasLtMatrixLayoutDestroy(l as MatrixLayout);
            }
            if self.desc != 0 {
                lt::hipblasLtMatmulDescDestroy(self.desc as MatmulDesc);
            }
        }
    }
}

/// One problem with its own random inputs on the device, its float64 result, its
/// descriptors, and the outputs its bits are compared with.
struct Instance {
    spec: usize,
    w: Buf<'static>,
    x: Buf<'static>,
    bias: Buf<'static>,
    /// C, apart from D, when beta != 0.
    c: Option<Buf<'static>>,
    y: Buf<'static>,
    want: Vec<f64>,
    descs: Descs,
    algo: Option<MatmulAlgo>,
    /// The first output (lane-safe handles).
    first: Option<Vec<u16>>,
    /// The first output per (handle kind, stream) on handles with more streams than lanes.
    per_stream: HashMap<(u8, usize), Vec<u16>>,
}

impl Instance {
    fn new(dev: &Dev, rng: &mut Rng, specs: &[Spec], spec: usize) -> Result<Instance, String> {
        let s = &specs[spec];
        let w = reference::random_matrix(rng, s.dtype, s.n, s.k, s.ldw);
        let x = reference::random_matrix(rng, s.dtype, s.m, s.k, s.k);
        let b = reference::random_matrix(rng, s.dtype, 1, s.n, s.n);
        let c = (s.beta != 0.0).then(|| reference::random_matrix(rng, s.dtype, s.m, s.n, s.ldy));
        let mut want = reference::reference(s.dtype, s.m, s.n, s.k, &w, s.ldw, &x, s.k, s.bias.then_some(&b[..]), s.alpha as f64);
        if let Some(c) = &c {
            for t in 0..s.m {
                for j in 0..s.n {
                    want[t * s.n + j] += s.beta as f64 * reference::from_bits(s.dtype, c[t * s.ldy + j]) as f64;
                }
            }
        }
        let (w, x, bias) = (dev.upload(&w)?, dev.upload(&x)?, dev.upload(&b)?);
        let c = c.map(|c| dev.upload(&c)).transpose()?;
        let y = dev.buf(s.y_len() * 2)?;
        let descs = Descs::new(s, if s.bias { bias.1 } else { 0 })?;
        Ok(Instance { spec, w, x, bias, c, y, want, descs, algo: None, first: None, per_stream: HashMap::new() })
    }

    /// New descriptors for the same problem (the old ones destroyed first, so the
    /// library may reuse their addresses).
    fn renew_descs(&mut self, s: &Spec) -> Result<(), String> {
        self.descs = Descs { desc: 0, a: 0, b: 0, d: 0 };
        self.descs = Descs::new(s, if s.bias { self.bias.1 } else { 0 })?;
        self.descs.check_readback(s)
    }

    /// One `hipblasLtMatmul` of this problem.
    fn launch(&self, s: &Spec, handle: usize, stream: usize, ws: Option<u64>, use_algo: bool) -> Status {
        let c = self.c.as_ref().map_or(self.y.1, |c| c.1);
        let algo = self.algo.as_ref().filter(|_| use_algo);
        self.descs.matmul(s, handle, Operands { w: self.w.1, x: self.x.1, c, y: self.y.1 }, ws, algo, stream)
    }
}

/// An output written over NaN poison against float64: the padding columns of Y
/// untouched, every element written and finite, the relative error within the
/// dtype's tolerance (as `skinnylt check`); the error.
pub fn check_output(s: &Spec, y: &[u16], want: &[f64]) -> Result<f64, String> {
    if (0..s.m).any(|t| (s.n..s.ldy).any(|j| y[t * s.ldy + j] != POISON)) {
        return Err("wrote outside the m×n output".into());
    }
    match reference::rel_error(s.dtype, s.m, s.n, y, s.ldy, want) {
        None => Err("output not fully written (NaN poison left) or non-finite".into()),
        Some(e) if e > reference::tolerance(s.dtype) => Err(format!("relative error {e:.3e} > {:.0e}", reference::tolerance(s.dtype))),
        Some(e) => Ok(e),
    }
}

// ---------------------------------------------------------------- the threads

/// What every thread reads.
struct Shared {
    dev: Dev,
    ctx: skinnylt::gpu::Context,
    specs: Vec<Spec>,
    routes: Vec<Route>,
    plan: HandlePlan,
    global: usize,
    groups: Vec<usize>,
    interposed: bool,
    /// Streams per thread.
    streams: usize,
    seconds: f64,
    churn: u64,
    max_failures: u64,
    stop: AtomicBool,
    failures: AtomicU64,
    calls: AtomicU64,
    checked: AtomicU64,
}

impl Shared {
    fn fail(&self) {
        if self.failures.fetch_add(1, Ordering::Relaxed) + 1 >= self.max_failures {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// One problem's results over a phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SpecStats {
    pub calls: u64,
    pub checked: u64,
    pub mismatches: u64,
    pub bitwise_diffs: u64,
    pub errors: u64,
    /// Standalone: forwarded calls answered NOT_SUPPORTED with the output untouched.
    pub refused: u64,
    pub max_rel_err: f64,
}

impl SpecStats {
    fn merge(&mut self, o: &SpecStats) {
        self.calls += o.calls;
        self.checked += o.checked;
        self.mismatches += o.mismatches;
        self.bitwise_diffs += o.bitwise_diffs;
        self.errors += o.errors;
        self.refused += o.refused;
        self.max_rel_err = self.max_rel_err.max(o.max_rel_err);
    }
}

/// A thread's results (and, merged, the phase's).
#[derive(Clone, Debug, Default, Serialize)]
pub struct WorkerStats {
    pub tally: Tally,
    pub per_spec: Vec<SpecStats>,
    pub rounds: u64,
    pub handles_created: u64,
    pub handles_destroyed: u64,
    pub descs_renewed: u64,
    pub algos_used: u64,
    /// Calls with a caller workspace.
    pub with_workspace: u64,
    /// (problem, stream) outputs on lane-oversubscribed handles, and how many of
    /// them differ in bits from the problem's first output (a stream without a
    /// lane runs split-K plans unsplit).
    pub oversubscribed_outputs: u64,
    pub lane_variants: u64,
    pub failures: Vec<String>,
}

impl WorkerStats {
    fn new(specs: usize) -> WorkerStats {
        WorkerStats { per_spec: vec![SpecStats::default(); specs], ..Default::default() }
    }

    fn merge(&mut self, o: &WorkerStats) {
        self.tally.merge(&o.tally);
        for (a, b) in self.per_spec.iter_mut().zip(&o.per_spec) {
            a.merge(b);
        }
        self.rounds += o.rounds;
        self.handles_created += o.handles_created;
        self.handles_destroyed += o.handles_destroyed;
        self.descs_renewed += o.descs_renewed;
        self.algos_used += o.algos_used;
        self.with_workspace += o.with_workspace;
        self.oversubscribed_outputs += o.oversubscribed_outputs;
        self.lane_variants += o.lane_variants;
        self.failures.extend(o.failures.iter().take(20usize.saturating_sub(self.failures.len())).cloned());
    }

    fn sum<'a>(it: impl Iterator<Item = &'a SpecStats>) -> SpecStats {
        let mut s = SpecStats::default();
        for x in it {
            s.merge(x);
        }
        s
    }

    pub fn total(&self) -> SpecStats {
        WorkerStats::sum(self.per_spec.iter())
    }
}

/// Which handle a launch used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HandleKind {
    Global,
    Group,
    Own,
}

/// A launch waiting for its stream.
struct Pending {
    inst: usize,
    stream: usize,
    kind: HandleKind,
    /// The first unexpected status, if any.
    status: Option<Status>,
    /// The poison could not be enqueued (nothing was launched).
    poison_failed: Option<String>,
}

struct Worker<'s> {
    id: usize,
    sh: &'s Shared,
    rng: Rng,
    streams: Vec<usize>,
    workspaces: Vec<Buf<'static>>,
    instances: Vec<Instance>,
    own: usize,
    stats: WorkerStats,
}

impl<'s> Worker<'s> {
    fn setup(id: usize, sh: &'s Shared, seed: u64) -> Result<Worker<'s>, String> {
        let dev = &sh.dev;
        dev.cu.make_current(sh.ctx)?;
        let mut rng = Rng(seed ^ (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let n = sh.streams;
        let mut w = Worker { id, sh, rng: Rng(0), streams: Vec::new(), workspaces: Vec::new(), instances: Vec::new(), own: 0, stats: WorkerStats::new(sh.specs.len()) };
        for _ in 0..n {
            w.streams.push(dev.cu.stream_create()? as usize);
            w.workspaces.push(dev.buf(WORKSPACE_BYTES)?);
        }
        w.own = create_handle()?;
        w.stats.handles_created += 1;
        for i in 0..sh.specs.len() {
            let mut inst = Instance::new(dev, &mut rng, &sh.specs, i)?;
            inst.descs.check_readback(&sh.specs[i])?;
            inst.algo = inst.descs.heuristic(w.own);
            w.instances.push(inst);
        }
        w.rng = rng;
        Ok(w)
    }

    /// Every problem once on the thread's own handle, first stream: checked, and
    /// for problems skinnylt runs, the bits later outputs must equal.
    fn warm_up(&mut self) {
        for i in 0..self.instances.len() {
            let p = self.start(i, 0, HandleKind::Own, 1, false, false);
            self.finish(p);
        }
    }

    fn run(&mut self) {
        let deadline = Instant::now() + Duration::from_secs_f64(self.sh.seconds);
        while Instant::now() < deadline && !self.sh.stop.load(Ordering::Relaxed) {
            // One distinct problem per stream: outputs never shared between streams.
            let mut order: Vec<usize> = (0..self.instances.len()).collect();
            for i in 0..order.len() {
                let j = i + self.rng.below((order.len() - i) as u64) as usize;
                order.swap(i, j);
            }
            let mut pending = Vec::new();
            for (si, &inst) in order.iter().take(self.streams.len()).enumerate() {
                let kind = match self.rng.below(10) {
                    0..=3 => HandleKind::Group,
                    4..=6 => HandleKind::Global,
                    _ => HandleKind::Own,
                };
                let reps = 1 + self.rng.below(3);
                let use_algo = self.rng.below(3) == 0;
                let use_ws = use_algo || self.rng.below(2) == 0;
                pending.push(self.start(inst, si, kind, reps, use_ws, use_algo));
            }
            for p in pending {
                self.finish(p);
            }
            self.stats.rounds += 1;
            if self.stats.rounds.is_multiple_of(self.sh.churn) {
                self.churn();
            }
        }
    }

    fn handle(&self, kind: HandleKind) -> usize {
        match kind {
            HandleKind::Global => self.sh.global,
            HandleKind::Group => self.sh.groups[self.sh.plan.group_of[self.id]],
            HandleKind::Own => self.own,
        }
    }

    /// Whether `kind`'s handle may have more streams than lanes.
    fn oversubscribed(&self, kind: HandleKind) -> bool {
        match kind {
            HandleKind::Global => !self.sh.plan.global_lane_safe(),
            HandleKind::Group => !self.sh.plan.group_lane_safe(self.sh.plan.group_of[self.id]),
            HandleKind::Own => self.streams.len() > LANES,
        }
    }

    fn failure(&mut self, spec: usize, what: String) {
        self.sh.fail();
        if self.stats.failures.len() < 10 {
            self.stats.failures.push(format!("thread {}: {}: {what}", self.id, self.sh.specs[spec].name()));
        }
    }

    /// Poisons the output and launches problem `inst` `reps` times on stream `si`.
    fn start(&mut self, inst: usize, si: usize, kind: HandleKind, reps: u64, use_ws: bool, use_algo: bool) -> Pending {
        let sh = self.sh;
        let (stream, handle) = (self.streams[si], self.handle(kind));
        let ws = use_ws.then(|| self.workspaces[si].1);
        let i = &self.instances[inst];
        let spec = i.spec;
        let (s, route) = (&sh.specs[spec], &sh.routes[spec]);
        let expect = if *route != Route::Ours && !sh.interposed { STATUS_NOT_SUPPORTED } else { STATUS_SUCCESS };
        let mut p = Pending { inst, stream: si, kind, status: None, poison_failed: None };
        let use_algo = use_algo && i.algo.is_some();
        // The real library's algo (its heuristic's, where skinnylt offered none): the
        // call goes to that library, whatever the problem's route (design §3.1).
        let caller_algo = Route::Forwarded("caller-algo".to_owned());
        let route = if use_algo && sh.interposed && i.algo.is_some_and(|a| !a.is_own()) { &caller_algo } else { route };
        let poisoned = sh.dev.poison(i.y.1, s.y_len(), stream);
        if poisoned.is_ok() {
            for _ in 0..reps {
                let st = i.launch(s, handle, stream, ws, use_algo);
                if st != expect && p.status.is_none() {
                    p.status = Some(st);
                }
            }
            self.stats.tally.add(route, reps);
            self.stats.per_spec[spec].calls += reps;
            self.stats.algos_used += use_algo as u64 * reps;
            self.stats.with_workspace += ws.is_some() as u64 * reps;
            sh.calls.fetch_add(reps, Ordering::Relaxed);
        }
        if let Err(e) = poisoned {
            p.poison_failed = Some(e);
        }
        p
    }

    /// Waits for a launch's stream and checks its output.
    fn finish(&mut self, p: Pending) {
        let sh = self.sh;
        let spec = self.instances[p.inst].spec;
        let s = sh.specs[spec];
        if let Some(e) = p.poison_failed {
            self.stats.per_spec[spec].errors += 1;
            self.failure(spec, format!("poison: {e}"));
            return;
        }
        if let Err(e) = sh.dev.cu.sync(self.streams[p.stream] as Raw) {
            self.stats.per_spec[spec].errors += 1;
            self.failure(spec, format!("stream sync: {e}"));
            return;
        }
        if let Some(st) = p.status {
            self.stats.per_spec[spec].errors += 1;
            self.failure(spec, format!("hipblasLtMatmul returned {} ({} handle)", abi::status_name(st), format!("{:?}", p.kind).to_lowercase()));
            return;
        }
        let y = match sh.dev.read(self.instances[p.inst].y.1, s.y_len()) {
            Ok(y) => y,
            Err(e) => {
                self.stats.per_spec[spec].errors += 1;
                self.failure(spec, format!("read back: {e}"));
                return;
            }
        };
        sh.checked.fetch_add(1, Ordering::Relaxed);
        self.stats.per_spec[spec].checked += 1;
        let route = &sh.routes[spec];
        if *route != Route::Ours && !sh.interposed {
            // Refused: nothing may have been launched.
            if y.iter().all(|&v| v == POISON) {
                self.stats.per_spec[spec].refused += 1;
            } else {
                self.stats.per_spec[spec].mismatches += 1;
                self.failure(spec, "refused call (NOT_SUPPORTED) wrote the output".into());
            }
            return;
        }
        match check_output(&s, &y, &self.instances[p.inst].want) {
            Ok(e) => {
                let st = &mut self.stats.per_spec[spec];
                st.max_rel_err = st.max_rel_err.max(e);
            }
            Err(e) => {
                self.stats.per_spec[spec].mismatches += 1;
                self.failure(spec, format!("{e} ({:?} handle, stream {})", p.kind, p.stream));
                return;
            }
        }
        if *route != Route::Ours {
            return;
        }
        let oversubscribed = self.oversubscribed(p.kind);
        let inst = &mut self.instances[p.inst];
        let bits_differ = if oversubscribed {
            let key = (p.kind as u8, p.stream);
            match inst.per_stream.get(&key) {
                Some(first) => *first != y,
                None => {
                    self.stats.oversubscribed_outputs += 1;
                    self.stats.lane_variants += inst.first.as_ref().is_some_and(|f| *f != y) as u64;
                    inst.per_stream.insert(key, y);
                    false
                }
            }
        } else {
            match &inst.first {
                Some(first) => *first != y,
                None => {
                    inst.first = Some(y);
                    false
                }
            }
        };
        if bits_differ {
            self.stats.per_spec[spec].bitwise_diffs += 1;
            self.failure(spec, format!("bits differ from the problem's first output ({:?} handle, stream {})", p.kind, p.stream));
        }
    }

    /// The thread's own handle destroyed and re-created, and one problem's
    /// descriptors (and heuristic algo) renewed. Every stream is idle here.
    fn churn(&mut self) {
        let spec = self.rng.below(self.instances.len() as u64) as usize;
        let res = destroy_handle(self.own).and_then(|_| {
            self.stats.handles_destroyed += 1;
            self.own = create_handle()?;
            self.stats.handles_created += 1;
            let s = self.sh.specs[spec];
            self.instances[spec].renew_descs(&s)?;
            self.instances[spec].algo = self.instances[spec].descs.heuristic(self.own);
            self.stats.descs_renewed += 1;
            Ok(())
        });
        if let Err(e) = res {
            self.stats.per_spec[spec].errors += 1;
            self.failure(spec, format!("handle/descriptor churn: {e}"));
            self.sh.stop.store(true, Ordering::Relaxed);
        }
    }

    fn teardown(mut self) -> WorkerStats {
        for &s in &self.streams {
            let _ = self.sh.dev.cu.sync(s as Raw);
        }
        self.instances.clear();
        if self.own != 0 && destroy_handle(self.own).is_ok() {
            self.stats.handles_destroyed += 1;
        }
        for &s in &self.streams {
            self.sh.dev.cu.stream_destroy(s as Raw);
        }
        self.stats
    }
}

fn worker(id: usize, sh: &Shared, seed: u64, ready: &Barrier, go: &Barrier) -> WorkerStats {
    let setup = Worker::setup(id, sh, seed);
    let mut w = match setup {
        Ok(mut w) => {
            w.warm_up();
            ready.wait();
            w
        }
        Err(e) => {
            sh.fail();
            sh.stop.store(true, Ordering::Relaxed);
            ready.wait();
            go.wait();
            let mut st = WorkerStats::new(sh.specs.len());
            st.failures.push(format!("thread {id}: setup: {e}"));
            return st;
        }
    };
    go.wait();
    w.run();
    w.teardown()
}

// ---------------------------------------------------------------- graphs

/// One graph shape's results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GraphShape {
    pub spec: String,
    pub kernel: String,
    pub split_k: u32,
    pub cluster: bool,
    pub replays: u64,
    pub outputs_compared: u64,
    pub bitwise_diffs: u64,
    pub eager_rel_err: f64,
    pub error: Option<String>,
}

/// Eager run, capture, and `replays` replays of one split-K problem on its own
/// stream, on `handle`.
fn graph_shape(sh: &Shared, handle: usize, spec: usize, replays: u64, seed: u64, out: &mut GraphShape) -> Result<(), String> {
    let (dev, s) = (&sh.dev, &sh.specs[spec]);
    let cu = dev.cu;
    cu.make_current(sh.ctx)?;
    let stream = cu.stream_create()? as usize;
    let r = (|| {
        let mut rng = Rng(seed);
        let inst = Instance::new(dev, &mut rng, &sh.specs, spec)?;
        let ybytes = s.y_len() * 2;
        let slots = dev.buf(ybytes * MAX_BURST as usize)?;
        dev.poison(inst.y.1, s.y_len(), stream)?;
        ok(inst.launch(s, handle, stream, None, false), "eager hipblasLtMatmul")?;
        cu.sync(stream as Raw)?;
        let eager = dev.read(inst.y.1, s.y_len())?;
        out.eager_rel_err = check_output(s, &eager, &inst.want).map_err(|e| format!("eager output: {e}"))?;
        dev.poison(inst.y.1, s.y_len(), stream)?;
        cu.sync(stream as Raw)?;
        let exec = cu.capture(stream as Raw, || ok(inst.launch(s, handle, stream, None, false), "captured hipblasLtMatmul"))?;
        let res = (|| {
            for b in bursts(replays) {
                if b.each {
                    for i in 0..b.replays {
                        dev.poison(inst.y.1, s.y_len(), stream)?;
                        cu.graph_launch(exec, stream as Raw)?;
                        cu.copy_async(slots.1 + i * ybytes as u64, inst.y.1, ybytes, stream as Raw)?;
                    }
                } else {
                    dev.poison(inst.y.1, s.y_len(), stream)?;
                    for _ in 0..b.replays {
                        cu.graph_launch(exec, stream as Raw)?;
                    }
                    cu.copy_async(slots.1, inst.y.1, ybytes, stream as Raw)?;
                }
                cu.sync(stream as Raw)?;
                let kept = if b.each { b.replays as usize } else { 1 };
                let got = dev.read(slots.1, s.y_len() * kept)?;
                for chunk in got.chunks(s.y_len()) {
                    out.outputs_compared += 1;
                    out.bitwise_diffs += (chunk != eager.as_slice()) as u64;
                }
                out.replays += b.replays;
                if out.bitwise_diffs > 0 {
                    sh.fail();
                    return Err(format!("replay output differs from the eager output (by replay {})", out.replays));
                }
            }
            Ok(())
        })();
        cu.graph_destroy(exec);
        res
    })();
    let _ = cu.sync(stream as Raw);
    cu.stream_destroy(stream as Raw);
    r
}

/// The intercepted problems planned with split-K > 1, at most `max`, global-combine
/// and cluster plans alternating where both exist.
fn split_shapes(sh: &Shared, handle: usize, max: usize) -> Vec<(usize, skinnylt::engine::Plan)> {
    let mut global = Vec::new();
    let mut cluster = Vec::new();
    for (i, s) in sh.specs.iter().enumerate() {
        if sh.routes[i] != Route::Ours {
            continue;
        }
        if let Ok(plan) = crate::engines().plan_for(handle, &s.problem(), sh.interposed)
            && plan.split_k > 1
        {
            if plan.cluster { cluster.push((i, plan)) } else { global.push((i, plan)) }
        }
    }
    let mut out = Vec::new();
    let (mut g, mut c) = (global.into_iter(), cluster.into_iter());
    while out.len() < max {
        let (a, b) = (g.next(), c.next());
        if a.is_none() && b.is_none() {
            break;
        }
        out.extend(a.into_iter().chain(b).take(max - out.len()));
    }
    out
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct GraphReport {
    pub shapes: Vec<GraphShape>,
    pub replays: u64,
    pub outputs_compared: u64,
    pub bitwise_diffs: u64,
    pub counters_delta: Counters,
    pub counter_errors: Vec<String>,
    pub errors: Vec<String>,
}

fn graph_phase(sh: &Shared, total: u64, seed: u64, arch: skinnylt::gpu::Arch) -> Result<GraphReport, String> {
    let handle = create_handle()?;
    let shapes = split_shapes(sh, handle, 6);
    let mut rep = GraphReport::default();
    if shapes.len() < 2 {
        rep.errors.push(format!("only {} intercepted split-K shapes to capture", shapes.len()));
    }
    let before = Counters::read();
    let per = split_replays(total, shapes.len());
    let cat = skinnylt::kernels::for_arch(arch);
    let results: Vec<GraphShape> = std::thread::scope(|scope| {
        let hs: Vec<_> = shapes
            .iter()
            .zip(&per)
            .enumerate()
            .map(|(i, (&(spec, plan), &n))| {
                let name = cat.kernels[plan.kernel].name.to_owned();
                scope.spawn(move || {
                    let mut g = GraphShape { spec: sh.specs[spec].name(), kernel: name, split_k: plan.split_k, cluster: plan.cluster, ..Default::default() };
                    if let Err(e) = graph_shape(sh, handle, spec, n, (seed ^ (0xABCD + i as u64)) | 1, &mut g) {
                        g.error = Some(e);
                    }
                    g
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| GraphShape { error: Some("thread panicked".into()), ..Default::default() })).collect()
    });
    rep.counters_delta = Counters::read().since(&before);
    // Each shape's eager call and captured call go through the API; replays do not.
    let mut tally = Tally::default();
    tally.add(&Route::Ours, 2 * results.len() as u64);
    rep.counter_errors = tally.compare(&rep.counters_delta);
    for g in &results {
        rep.replays += g.replays;
        rep.outputs_compared += g.outputs_compared;
        rep.bitwise_diffs += g.bitwise_diffs;
        if let Some(e) = &g.error {
            rep.errors.push(format!("{}: {e}", g.spec));
        }
    }
    rep.shapes = results;
    if let Err(e) = destroy_handle(handle) {
        rep.errors.push(e);
    }
    Ok(rep)
}

// ---------------------------------------------------------------- the run

/// The stand-in's own counters (`standin_stats`: Matmul calls received, failed,
/// heuristic queries, unknown algos, handles created, creates where cuBLASLt
/// returned a handle value already live), when the real library is the stand-in.
fn standin_stats(path: &str) -> Option<[u64; 6]> {
    let c = CString::new(path).ok()?;
    // SAFETY: a NUL-terminated path; RTLD_NOLOAD only finds the copy already open.
    let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if lib.is_null() {
        return None;
    }
    // SAFETY: a live handle and a NUL-terminated name.
    let f = unsafe { libc::dlsym(lib, c"standin_stats".as_ptr()) };
    let mut out = [0u64; 6];
    if !f.is_null() {
        // SAFETY: the stand-in defines `void standin_stats(uint64_t out[6])`.
        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut u64)>(f)(out.as_mut_ptr()) };
    }
    // SAFETY: closes the reference this function took; the library stays loaded.
    unsafe { libc::dlclose(lib) };
    (!f.is_null()).then_some(out)
}

#[derive(Clone, Debug, Serialize)]
pub struct SpecReport {
    pub name: String,
    pub spec: Spec,
    pub route: Route,
    /// The kernel and split skinnylt plans for it, when it runs it.
    pub plan: Option<String>,
    pub stress: SpecStats,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub device: String,
    pub mode: String,
    pub real_lib: Option<String>,
    pub seed: u64,
    pub threads: u32,
    pub streams: u32,
    pub seconds_requested: f64,
    pub setup_s: f64,
    pub stress_s: f64,
    pub calls: u64,
    pub calls_per_s: f64,
    pub intercepted: u64,
    pub forwarded: u64,
    pub checked: u64,
    pub mismatches: u64,
    pub bitwise_diffs: u64,
    pub errors: u64,
    pub counters_delta: Counters,
    pub counters_exact: bool,
    pub counter_errors: Vec<String>,
    pub lane_fallbacks: u64,
    pub standin_matmuls: Option<u64>,
    pub standin_failed: Option<u64>,
    /// Handles the stand-in created, and creates where cuBLASLt returned a value
    /// another live handle already had (the whole run).
    pub standin_handles: Option<u64>,
    pub standin_aliased: Option<u64>,
    pub tuning: String,
    pub pdl_start: bool,
    pub pdl_end: bool,
    pub handles: HandlePlan,
    pub stress: WorkerStats,
    pub specs: Vec<SpecReport>,
    pub graphs: Option<GraphReport>,
    pub failures: Vec<String>,
    pub pass: bool,
}

pub fn run(a: &Args) -> i32 {
    // The mode is fixed by the environment the library reads on its first call.
    let real = a.real_lib.clone().or_else(|| std::env::var("SKINNYLT_REAL_LIB").ok().filter(|s| !s.is_empty()));
    // SAFETY: first thing in the command, before any thread exists and before the
    // library has read its configuration.
    unsafe {
        match &real {
            Some(p) => {
                std::env::set_var("SKINNYLT_REAL_LIB", p);
                std::env::remove_var("SKINNYLT_STANDALONE");
            }
            None => std::env::set_var("SKINNYLT_STANDALONE", "1"),
        }
    }
    if a.tuning == "fallback" {
        crate::use_tables_without_entries(false);
    }
    let Some(cu) = Gpu::get() else {
        return no_gpu("stress");
    };
    if cu.backend() != Backend::Cuda {
        eprintln!("skinnylt stress runs on NVIDIA (its stand-in real library is cuBLASLt-backed)");
        return 2;
    }
    match stress(cu, a, real) {
        Ok(pass) => (!pass) as i32,
        Err(e) => {
            eprintln!("stress aborted: {e}");
            1
        }
    }
}

fn stress(cu: &'static Gpu, a: &Args, real: Option<String>) -> Result<bool, String> {
    let t0 = Instant::now();
    let dev0 = skinnylt::engine::device(0)?;
    cu.make_current(dev0.ctx)?;
    let seed = a.seed.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1);
    let probe = create_handle()?;
    let interposed = sk::skinnylt_has_real_library() == 1;
    if real.is_some() && !interposed {
        return Err(format!("{} was not accepted as the real hipBLASLt (SKINNYLT_LOG=info says why)", real.as_deref().unwrap_or("")));
    }
    let mode = if interposed { "interposed" } else { "standalone" };
    println!(
        "skinnylt stress: {} ({}), {mode}{}; tuning {} ({} entries); PDL {}; seed {seed}",
        dev0.info.name,
        dev0.info.arch_name,
        real.as_deref().map_or(String::new(), |p| format!(" on {p}")),
        dev0.tuning.source,
        dev0.tuning.entries,
        dev0.pdl()
    );
    let fns = AsyncFns::resolve(skinnylt::gpu::open_first(&["libcuda.so.1", "libcuda.so"]).ok_or("libcuda not found")?.0);
    let dev = Dev { cu, fns };
    let specs = catalog();
    let pdl_start = dev0.pdl();

    // ---- each problem alone: its route, checked against float64 and the design ----
    let main_stream = cu.stream_create()? as usize;
    let mut rng = Rng(seed);
    let mut routes = Vec::new();
    let mut spec_reports = Vec::new();
    let mut failures = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let inst = Instance::new(&dev, &mut rng, &specs, i)?;
        dev.poison(inst.y.1, s.y_len(), main_stream)?;
        let before = Counters::read();
        let st = inst.launch(s, probe, main_stream, None, false);
        cu.sync(main_stream as Raw)?;
        let route = Counters::read().route_of_one_call(&before).ok_or_else(|| format!("{}: the counters did not count exactly one call", s.name()))?;
        let y = dev.read(inst.y.1, s.y_len())?;
        let refused = route != Route::Ours && !interposed;
        let checked = if refused {
            if st == STATUS_NOT_SUPPORTED && y.iter().all(|&v| v == POISON) { Ok(()) } else { Err(format!("standalone forward returned {} and must leave the output untouched", abi::status_name(st))) }
        } else {
            ok(st, "hipblasLtMatmul").and_then(|_| check_output(s, &y, &inst.want).map(|_| ()))
        };
        if let Err(e) = checked {
            failures.push(format!("{} (first call): {e}", s.name()));
        }
        let designed = match (&route, s.expect) {
            (Route::Forwarded(r), Some(e)) => r == e,
            (Route::Ours, None) => true,
            (Route::Forwarded(r), None) => interposed && (r == "tuned-forward" || r == "planner-forward" || r == "transfer-forward"),
            (Route::Ours, Some(_)) => false,
        };
        if !designed {
            failures.push(format!("{}: routed {route:?}, the design says {}", s.name(), s.expect.unwrap_or("skinnylt (or a tuned/planner forward when interposed)")));
        }
        let plan = (route == Route::Ours).then(|| crate::engines().plan_for(probe, &s.problem(), interposed).ok()).flatten().map(|p| {
            let name = skinnylt::kernels::for_arch(dev0.arch).kernels[p.kernel].name;
            format!("{name} split={}{}", p.split_k, if p.cluster { " cluster" } else { "" })
        });
        routes.push(route.clone());
        spec_reports.push(SpecReport { name: s.name(), spec: *s, route, plan, stress: SpecStats::default() });
    }
    cu.stream_destroy(main_stream as Raw);
    destroy_handle(probe)?;

    // ---- the threads ----
    let plan = HandlePlan::new(a.threads as usize, a.streams as usize);
    let global = create_handle()?;
    let groups = (0..plan.groups()).map(|_| create_handle()).collect::<Result<Vec<_>, _>>()?;
    let sh = Shared {
        dev,
        ctx: dev0.ctx,
        specs,
        routes,
        plan: plan.clone(),
        global,
        groups: groups.clone(),
        interposed,
        streams: a.streams as usize,
        seconds: a.seconds,
        churn: a.churn,
        max_failures: a.max_failures.max(1),
        // A first call that failed is reported at the end; the run goes on with
        // the routes the counters showed.
        stop: AtomicBool::new(false),
        failures: AtomicU64::new(0),
        calls: AtomicU64::new(0),
        checked: AtomicU64::new(0),
    };
    let standin_before = real.as_deref().and_then(standin_stats);
    let lanes_before = crate::counters().lane_fallbacks;
    let before = Counters::read();
    let threads = a.threads as usize;
    let (ready, go) = (Barrier::new(threads + 1), Barrier::new(threads + 1));
    let stress_time = Mutex::new(0f64);
    let setup_time = Mutex::new(0f64);
    let per_thread: Vec<WorkerStats> = std::thread::scope(|scope| {
        let hs: Vec<_> = (0..threads).map(|id| {
            let (sh, ready, go) = (&sh, &ready, &go);
            scope.spawn(move || worker(id, sh, seed, ready, go))
        }).collect();
        ready.wait();
        *setup_time.lock().unwrap_or_else(|e| e.into_inner()) = t0.elapsed().as_secs_f64();
        println!("setup: {} problems x {threads} threads ({} streams each) ready in {:.0} s; stress for {:.0} s", sh.specs.len(), a.streams, t0.elapsed().as_secs_f64(), a.seconds);
        let start = Instant::now();
        go.wait();
        let mut next = 30.0;
        while hs.iter().any(|h| !h.is_finished()) {
            std::thread::sleep(Duration::from_millis(200));
            let t = start.elapsed().as_secs_f64();
            if t >= next {
                // Read while calls run: the counters are the application's view too.
                let c = Counters::read().since(&before);
                println!(
                    "  {t:>4.0} s: {} calls, {} outputs checked, {} failures; counters: {} intercepted, {} forwarded",
                    sh.calls.load(Ordering::Relaxed),
                    sh.checked.load(Ordering::Relaxed),
                    sh.failures.load(Ordering::Relaxed),
                    c.intercepted,
                    c.forwarded
                );
                next += 30.0;
            }
        }
        *stress_time.lock().unwrap_or_else(|e| e.into_inner()) = start.elapsed().as_secs_f64();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| {
            let mut st = WorkerStats::new(sh.specs.len());
            st.failures.push("a stress thread panicked".into());
            st
        })).collect()
    });
    let delta = Counters::read().since(&before);
    let lane_fallbacks = crate::counters().lane_fallbacks - lanes_before;
    let standin_after = real.as_deref().and_then(standin_stats);
    let mut st = WorkerStats::new(sh.specs.len());
    for w in &per_thread {
        st.merge(w);
    }
    let mut counter_errors = st.tally.compare(&delta);
    let (standin_matmuls, standin_failed) = match (standin_before, standin_after) {
        (Some(b), Some(a)) => (Some(a[0] - b[0]), Some(a[1] - b[1])),
        _ => (None, None),
    };
    let (standin_handles, standin_aliased) = standin_after.map_or((None, None), |a| (Some(a[4]), Some(a[5])));
    if let Some(n) = standin_matmuls
        && n != st.tally.forwarded_total()
    {
        counter_errors.push(format!("the stand-in received {n} Matmul calls, skinnylt forwarded {}", st.tally.forwarded_total()));
    }
    for h in std::iter::once(global).chain(groups) {
        destroy_handle(h)?;
    }
    failures.extend(st.failures.iter().cloned());
    for (r, s) in spec_reports.iter_mut().zip(&st.per_spec) {
        r.stress = s.clone();
    }
    let total = st.total();
    let stress_s = *stress_time.lock().unwrap_or_else(|e| e.into_inner());

    // ---- graphs ----
    let graphs = (a.replays > 0).then(|| graph_phase(&sh, a.replays, seed, dev0.arch)).transpose()?;
    if let Some(g) = &graphs {
        failures.extend(g.errors.iter().cloned());
        failures.extend(g.counter_errors.iter().map(|e| format!("graph phase counters: {e}")));
    }

    let calls = st.tally.calls();
    let graphs_ok = graphs.as_ref().is_none_or(|g| g.errors.is_empty() && g.counter_errors.is_empty() && g.bitwise_diffs == 0 && g.replays == a.replays);
    let pass = failures.is_empty() && counter_errors.is_empty() && total.mismatches == 0 && total.bitwise_diffs == 0 && total.errors == 0 && graphs_ok;
    let report = Report {
        device: dev0.info.name.clone(),
        mode: mode.into(),
        real_lib: real,
        seed,
        threads: a.threads,
        streams: a.streams,
        seconds_requested: a.seconds,
        setup_s: *setup_time.lock().unwrap_or_else(|e| e.into_inner()),
        stress_s,
        calls,
        calls_per_s: calls as f64 / stress_s.max(1e-9),
        intercepted: st.tally.intercepted,
        forwarded: st.tally.forwarded_total(),
        checked: total.checked,
        mismatches: total.mismatches,
        bitwise_diffs: total.bitwise_diffs,
        errors: total.errors,
        counters_exact: counter_errors.is_empty(),
        counters_delta: delta,
        counter_errors,
        lane_fallbacks,
        standin_matmuls,
        standin_failed,
        standin_handles,
        standin_aliased,
        tuning: format!("{} ({} entries)", dev0.tuning.source, dev0.tuning.entries),
        pdl_start,
        pdl_end: dev0.pdl(),
        handles: plan,
        stress: st,
        specs: spec_reports,
        graphs,
        failures,
        pass,
    };
    print_summary(&report);
    if let Some(path) = &a.out {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(pass)
}

fn print_summary(r: &Report) {
    let st = &r.stress;
    println!();
    println!("{:<44} {:<16} {:>9} {:>8} {:>6} {:>5} {:>9}  plan", "problem", "route", "calls", "checked", "bad", "bits", "max err");
    for s in &r.specs {
        let route = match &s.route {
            Route::Ours => "skinnylt".to_owned(),
            Route::Forwarded(x) => format!("fwd {x}"),
        };
        let x = &s.stress;
        println!("{:<44} {:<16} {:>9} {:>8} {:>6} {:>5} {:>9.2e}  {}", s.name, route, x.calls, x.checked, x.mismatches + x.errors, x.bitwise_diffs, x.max_rel_err, s.plan.as_deref().unwrap_or("-"));
    }
    println!();
    println!(
        "stress: {} threads x {} streams, {:.0} s (setup {:.0} s): {} calls ({:.0}/s), {} run by skinnylt, {} forwarded{}",
        r.threads,
        r.streams,
        r.stress_s,
        r.setup_s,
        r.calls,
        r.calls_per_s,
        r.intercepted,
        r.forwarded,
        if r.mode == "standalone" { " (refused: NOT_SUPPORTED, output untouched)" } else { "" }
    );
    println!(
        "  {} outputs checked: {} mismatches, {} bitwise differences, {} errors; {} rounds, {} handles created / {} destroyed, {} descriptor sets renewed, {} calls with a heuristic algo, {} with a workspace",
        r.checked, r.mismatches, r.bitwise_diffs, r.errors, st.rounds, st.handles_created, st.handles_destroyed, st.descs_renewed, st.algos_used, st.with_workspace
    );
    println!(
        "  lanes: {} split-K calls ran unsplit (no lane); on the handle shared by all {} streams, {} of {} (problem, stream) outputs differ in bits from the problem's first (design §5)",
        r.lane_fallbacks, r.handles.global_streams, st.lane_variants, st.oversubscribed_outputs
    );
    let by_reason: Vec<String> = r.counters_delta.by_reason.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "  counters (skinnylt_get_counters delta): intercepted {} / calls {}, forwarded {} / calls {} [{}]: {}",
        r.counters_delta.intercepted,
        r.intercepted,
        r.counters_delta.forwarded,
        r.forwarded,
        by_reason.join(", "),
        if r.counters_exact { "exact" } else { "MISMATCH" }
    );
    if let Some(n) = r.standin_matmuls {
        println!(
            "  stand-in: {n} Matmul calls received ({} failed); {} handles created, {} of them given a cuBLASLt handle value already live",
            r.standin_failed.unwrap_or(0),
            r.standin_handles.unwrap_or(0),
            r.standin_aliased.unwrap_or(0)
        );
    }
    if r.pdl_start != r.pdl_end {
        println!("  PDL was turned off during the run (a launch was refused)");
    }
    if let Some(g) = &r.graphs {
        println!("graphs: {} split-K shapes, {} replays, {} outputs compared bitwise: {} differ; counters {}", g.shapes.len(), g.replays, g.outputs_compared, g.bitwise_diffs, if g.counter_errors.is_empty() { "exact" } else { "MISMATCH" });
        for s in &g.shapes {
            println!("  {:<40} {} split={}{}: {} replays, {} compared, {} differ, eager err {:.2e}{}", s.spec, s.kernel, s.split_k, if s.cluster { " cluster" } else { "" }, s.replays, s.outputs_compared, s.bitwise_diffs, s.eager_rel_err, s.error.as_deref().map_or(String::new(), |e| format!(" ERROR {e}")));
        }
    }
    for f in r.failures.iter().take(20) {
        println!("FAILED: {f}");
    }
    for e in &r.counter_errors {
        println!("FAILED: counters: {e}");
    }
    println!("{}", if r.pass { "PASS" } else { "FAIL" });
}
