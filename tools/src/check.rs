//! `skinnylt check`: the GPU correctness suite, through the public C API
//! (`hipblasLtMatmul`, standalone mode) on an NVIDIA GPU.
//!
//! * every shape of the public grid, bf16 and fp16, plus random odd shapes (odd M,
//!   N not a multiple of the tile, K not a multiple of TILE_K, padded leading
//!   dimensions, bias or not), against a float64 reference on fresh random inputs,
//!   with the output poisoned (NaN) before each run;
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

use skinnylt::route::{DType, Form, Problem};
use skinnylt::tuning::Choice;
use skinnylt::engine::Call;
use skinnylt::gpu::Stream;
use skinnylt::kernels;

use crate::grid;
use crate::client::{Handle, Linear};
use crate::gpu::{Buf, Gpu};
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
    /// With --kernel-sweep: only kernels whose name contains this text (e.g. "vdmfma").
    #[arg(long)]
    pub kernel_filter: Option<String>,
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
        // An empty table for every arch, set before the library reads its config.
        let dir = std::env::temp_dir().join(format!("skinnylt-check-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        for arch in skinnylt::gpu::Arch::ALL {
            let _ = std::fs::write(dir.join(format!("{}.json", arch.name())), format!("{{\"schema\":1,\"arch\":\"{}\",\"entries\":[]}}", arch.name()));
        }
        // SAFETY: single-threaded at this point; nothing has read the environment yet.
        unsafe { std::env::set_var("SKINNYLT_TUNING_DIR", &dir) };
    }
    let Some(cu) = Gpu::get() else {
        eprintln!("skinnylt check needs a GPU: none found (looked for the HIP runtime, libamdhip64, and the CUDA driver, libcuda, with a device)");
        return 2;
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

    if a.kernel_sweep {
        let t0 = Instant::now();
        s.kernel_sweep(dev.arch, a.kernel_filter.as_deref())?;
        println!("kernel sweep: {:.0} s", t0.elapsed().as_secs_f64());
        return s.finish(a);
    }

    // ---- correctness over the public grid and odd shapes ----
    let mut cases = Vec::new();
    let shapes = grid::public();
    for (i, sh) in shapes.iter().take(a.limit.unwrap_or(usize::MAX)).enumerate() {
        for dtype in DType::ALL {
            let (m, n, k) = (sh.m as usize, sh.n as usize, sh.k as usize);
            cases.push(Case { group: sh.group, dtype, m, n, k, bias: sh.bias, ldw: k, ldy: n, workspace: i % 3 == 0 });
        }
    }
    for i in 0..a.random {
        let r = &mut s.rng;
        let m = 1 + r.below(if i % 2 == 0 { 8 } else { 128 }) as usize;
        let n = 1 + r.below(6000) as usize;
        let k = 8 * (1 + r.below(1200) as usize);
        let dtype = DType::ALL[i % 2];
        let ldw = k + 8 * r.below(3) as usize;
        let ldy = n + r.below(5) as usize;
        cases.push(Case { group: "odd", dtype, m, n, k, bias: r.below(2) == 1, ldw, ldy, workspace: i % 2 == 1 });
    }
    let t0 = Instant::now();
    for c in &cases {
        s.correctness(c)?;
    }
    println!("correctness: {} cases in {:.0} s", cases.len(), t0.elapsed().as_secs_f64());

    // ---- determinism, graphs, streams on split-K shapes ----
    let split_shapes = [
        Case { group: "det", dtype: DType::Bf16, m: 8, n: 2880, k: 2880, bias: true, ldw: 2880, ldy: 2880, workspace: false },
        Case { group: "det", dtype: DType::Bf16, m: 1, n: 512, k: 7168, bias: false, ldw: 7168, ldy: 512, workspace: false },
        Case { group: "det", dtype: DType::F16, m: 32, n: 5120, k: 2880, bias: true, ldw: 2880, ldy: 5120, workspace: true },
    ];
    s.determinism(&split_shapes)?;
    s.graph_replay(&split_shapes)?;
    s.two_streams(&split_shapes[0], &split_shapes[2])?;
    s.per_thread_stream(&split_shapes[1])?;
    s.dependent_chain()?;
    s.finish(a)
}

/// Inputs of one case on the device.
struct Inputs<'a> {
    w: Vec<u16>,
    x: Vec<u16>,
    b: Vec<u16>,
    dw: Buf<'a>,
    dx: Buf<'a>,
    _db: Buf<'a>,
    dy: Buf<'a>,
    l: Linear,
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
        const SPLITS: [u32; 4] = [1, 2, 3, 5];
        let cu = self.cu;
        let cat = kernels::for_arch(arch);
        let mut swept = 0;
        for (ki, ke) in cat.kernels.iter().enumerate() {
            if filter.is_some_and(|f| !ke.name.contains(f)) {
                continue;
            }
            swept += 1;
            let c = ke.config;
            let (tm, tn, tk) = (c.tile_m as usize, c.tile_n as usize, c.tile_k as usize);
            let mut ms: Vec<usize> = (1..=8).collect();
            if tm > 8 {
                ms.extend([tm - 1, tm, tm + 1]);
            }
            let (mut ok, mut worst) = (0usize, 0f64);
            let failed_before = self.failed.len();
            for (mi, &m) in ms.iter().enumerate() {
                let r = &mut self.rng;
                // N: a partial last tile (sometimes a single partial tile), odd; K: a
                // multiple of 8 with a partial last K block, >= 5 blocks (split 5).
                let n = if mi % 3 == 0 { 1 + 2 * r.below((tn / 2) as u64) as usize } else { tn + 1 + 2 * r.below(tn as u64) as usize };
                let k = 5 * tk + 8 * (1 + r.below((tk / 8 - 1) as u64) as usize);
                let bias = mi % 2 == 0;
                let (ldw, ldy) = (k + 8 * (mi % 3), n + mi % 4);
                let alpha = if mi % 4 == 1 { 0.5f32 } else { 1.0 };
                let w = reference::random_matrix(r, ke.dtype, n, k, ldw);
                let x = reference::random_matrix(r, ke.dtype, m, k, k);
                let b = reference::random_matrix(r, ke.dtype, 1, n, n);
                let want = reference::reference(ke.dtype, m, n, k, &w, ldw, &x, k, bias.then_some(&b[..]), alpha as f64);
                let (dw, dx, db, dy) = (Buf(cu, cu.malloc(w.len() * 2)?), Buf(cu, cu.malloc(x.len() * 2)?), Buf(cu, cu.malloc(b.len() * 2)?), Buf(cu, cu.malloc(m * ldy * 2)?));
                cu.htod(dw.1, &w)?;
                cu.htod(dx.1, &x)?;
                cu.htod(db.1, &b)?;
                let p = Problem {
                    dtype: ke.dtype,
                    form: Form::Linear,
                    m: m as u32,
                    n: n as u32,
                    k: k as u32,
                    w: dw.1,
                    ldw: ldw as u64,
                    x: dx.1,
                    ldx: k as u64,
                    y: dy.1,
                    ldy: ldy as u64,
                    bias: if bias { db.1 } else { 0 },
                    alpha,
                };
                for (si, &split) in SPLITS.iter().enumerate() {
                    let name = format!("sweep {} M={m} N={n} K={k} split={split} bias={bias} ldw={ldw} ldy={ldy} alpha={alpha}", ke.name);
                    let (ws, ws_size) = if (mi + si) % 2 == 1 { (self.ws.1, self.ws_bytes) } else { (0, 0) };
                    cu.memset16(dy.1, 0xffff, m * ldy)?; // NaN poison
                    let res = crate::engines()
                        .run_choice(self.h.0 as usize, &p, Choice::Run { kernel: ki, split_k: split }, &Call { workspace: ws, workspace_size: ws_size, stream: Stream(std::ptr::null_mut()) })
                        .map_err(|e| format!("run_choice: {e}"))
                        .and_then(|_| cu.device_sync())
                        .and_then(|_| {
                            let mut y = vec![0u16; m * ldy];
                            cu.dtoh(&mut y, dy.1)?;
                            Ok(y)
                        })
                        .and_then(|y| {
                            if (0..m).any(|t| (n..ldy).any(|j| y[t * ldy + j] != 0xffff)) {
                                return Err("wrote outside the m×n output".into());
                            }
                            match reference::rel_error(ke.dtype, m, n, &y, ldy, &want) {
                                None => Err("output not fully written (NaN poison left) or non-finite".into()),
                                Some(e) if e > reference::tolerance(ke.dtype) => Err(format!("relative error {e:.3e} > {:.0e}", reference::tolerance(ke.dtype))),
                                Some(e) => {
                                    worst = worst.max(e);
                                    ok += 1;
                                    Ok(format!("rel_err={e:.3e}"))
                                }
                            }
                        });
                    self.record(name, res);
                }
            }
            let bad = self.failed.len() - failed_before;
            println!("{:<60} {:>3} ok {:>3} failed  max rel err {worst:.2e}", ke.name, ok, bad);
        }
        if swept == 0 {
            return Err(format!("no {} kernel matches the filter", arch.name()));
        }
        println!("kernel sweep: {swept} kernels of {}", arch.name());
        Ok(())
    }

    fn inputs(&mut self, c: &Case) -> Result<Inputs<'a>, String> {
        let cu = self.cu;
        let w = reference::random_matrix(&mut self.rng, c.dtype, c.n, c.k, c.ldw);
        let x = reference::random_matrix(&mut self.rng, c.dtype, c.m, c.k, c.k);
        let b = reference::random_matrix(&mut self.rng, c.dtype, 1, c.n, c.n);
        let (dw, dx, db, dy) = (Buf(cu, cu.malloc(w.len() * 2)?), Buf(cu, cu.malloc(x.len() * 2)?), Buf(cu, cu.malloc(b.len() * 2)?), Buf(cu, cu.malloc(c.m * c.ldy * 2)?));
        cu.htod(dw.1, &w)?;
        cu.htod(dx.1, &x)?;
        cu.htod(db.1, &b)?;
        let l = Linear::new(c.dtype, c.m as u64, c.n as u64, c.k as u64, c.ldw as u64, c.k as u64, c.ldy as u64, c.bias.then_some(db.1))?;
        Ok(Inputs { w, x, b, dw, dx, _db: db, dy, l })
    }

    fn launch(&self, c: &Case, i: &Inputs, stream: *mut c_void) -> Result<(), String> {
        let (ws, ws_size) = if c.workspace { (self.ws.1, self.ws_bytes) } else { (0, 0) };
        let before = crate::counters().intercepted;
        let st = i.l.run(&self.h, 1.0, i.dw.1, i.dx.1, i.dy.1, ws, ws_size, stream);
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
        self.cu.dtoh(&mut y, i.dy.1)?;
        Ok(y)
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
        self.cu.memset16(i.dy.1, 0xffff, c.m * c.ldy)?; // NaN poison
        let res = self.launch(c, &i, std::ptr::null_mut()).and_then(|_| self.cu.device_sync()).and_then(|_| self.read(c, &i)).and_then(|y| {
            let r = reference::reference(c.dtype, c.m, c.n, c.k, &i.w, c.ldw, &i.x, c.k, c.bias.then_some(&i.b[..]), 1.0);
            // Padding columns of Y (n..ldy) must stay untouched (poisoned).
            if (0..c.m).any(|t| (c.n..c.ldy).any(|j| y[t * c.ldy + j] != 0xffff)) {
                return Err("wrote outside the m×n output".into());
            }
            match reference::rel_error(c.dtype, c.m, c.n, &y, c.ldy, &r) {
                None => Err("output not fully written (NaN poison left) or non-finite".into()),
                Some(e) if e > reference::tolerance(c.dtype) => Err(format!("relative error {e:.3e} > {:.0e}", reference::tolerance(c.dtype))),
                Some(e) => Ok(format!("rel_err={e:.3e}")),
            }
        });
        self.record(name, res);
        Ok(())
    }

    fn determinism(&mut self, shapes: &[Case]) -> Result<(), String> {
        for c in shapes {
            let i = self.inputs(c)?;
            let mut first: Option<Vec<u16>> = None;
            let mut res = Ok(String::new());
            for run in 0..100 {
                self.cu.memset16(i.dy.1, 0xffff, c.m * c.ldy)?;
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

    fn graph_replay(&mut self, shapes: &[Case]) -> Result<(), String> {
        let cu = self.cu;
        let stream = cu.stream_create()?;
        let inputs: Vec<Inputs> = shapes.iter().map(|c| self.inputs(c)).collect::<Result<_, _>>()?;
        // Eager results first.
        let mut eager = Vec::new();
        for (c, i) in shapes.iter().zip(&inputs) {
            if let Err(e) = self.launch(c, i, stream) {
                cu.stream_destroy(stream);
                self.record("graph capture + 1000 replays (split-K)".into(), Err(e.clone()));
                return Err(e);
            }
            cu.sync(stream)?;
            eager.push(self.read(c, i)?);
            cu.memset16(i.dy.1, 0xffff, c.m * c.ldy)?;
        }
        let exec = cu.capture(stream, || {
            for (c, i) in shapes.iter().zip(&inputs) {
                self.launch(c, i, stream)?;
            }
            Ok(())
        })?;
        let mut res = Ok("1000 replays bitwise equal to eager runs".to_owned());
        'outer: for rep in 1..=1000 {
            cu.graph_launch(exec, stream)?;
            if rep == 1 || rep % 250 == 0 {
                cu.sync(stream)?;
                for ((c, i), e) in shapes.iter().zip(&inputs).zip(&eager) {
                    if self.read(c, i)? != *e {
                        res = Err(format!("replay {rep}: M={} N={} K={} differs from eager", c.m, c.n, c.k));
                        break 'outer;
                    }
                    cu.memset16(i.dy.1, 0xffff, c.m * c.ldy)?;
                }
            }
        }
        cu.sync(stream)?;
        cu.graph_destroy(exec);
        cu.stream_destroy(stream);
        self.record("graph capture + 1000 replays (split-K)".into(), res);
        Ok(())
    }

    /// The per-thread default stream (handle 0x2) is a different stream in every
    /// thread under one value, so it gets no split-K lane: the call must still run,
    /// correctly, without split-K.
    fn per_thread_stream(&mut self, c: &Case) -> Result<(), String> {
        let i = self.inputs(c)?;
        self.cu.memset16(i.dy.1, 0xffff, c.m * c.ldy)?;
        let fallbacks = crate::counters().lane_fallbacks;
        let res = self.launch(c, &i, 2usize as *mut c_void).and_then(|_| self.cu.device_sync()).and_then(|_| self.read(c, &i)).and_then(|y| {
            let r = reference::reference(c.dtype, c.m, c.n, c.k, &i.w, c.ldw, &i.x, c.k, c.bias.then_some(&i.b[..]), 1.0);
            match reference::rel_error(c.dtype, c.m, c.n, &y, c.ldy, &r) {
                Some(e) if e <= reference::tolerance(c.dtype) => Ok(format!("rel_err={e:.3e}, lane fallbacks {}", crate::counters().lane_fallbacks - fallbacks)),
                Some(e) => Err(format!("relative error {e:.3e}")),
                None => Err("output not fully written".into()),
            }
        });
        self.record(format!("per-thread default stream (no lane) M={} N={} K={}", c.m, c.n, c.k), res);
        Ok(())
    }

    /// Back-to-back dependent GEMMs on one stream, where programmatic dependent
    /// launch lets a kernel start (and prefetch) before its predecessor ends: each
    /// step reads the previous step's output as X (read after write) and overwrites
    /// the buffer the previous step read (write after read); the last step reads a
    /// previous output as its *weights*, which the kernels prefetch before waiting.
    /// Eager without syncs and 200 graph replays must equal, bit for bit, the same
    /// chain run one synchronised call at a time; the first step is checked against
    /// float64.
    fn dependent_chain(&mut self) -> Result<(), String> {
        const NAME: &str = "dependent chain (RAW/WAR on X, RAW on W; PDL overlap)";
        let cu = self.cu;
        let dtype = DType::Bf16;
        let (m, h, steps) = (8usize, 2048usize, 6usize);
        let mw = 4usize; // last step: X is mw x h, W is the m x h output
        let alpha = 1.0 / 64.0; // keeps values in range along the chain
        let w: Vec<Vec<u16>> = (0..steps).map(|_| reference::random_matrix(&mut self.rng, dtype, h, h, h)).collect();
        let x0 = reference::random_matrix(&mut self.rng, dtype, m, h, h);
        let xl = reference::random_matrix(&mut self.rng, dtype, mw, h, h);
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
        // The chain: bufs[0] = X0; step i reads bufs[i % 2], writes bufs[(i + 1) % 2];
        // then Y = X_last . (final buffer)^T with the final buffer as W (m x h).
        let run = |sync: bool| -> Result<(), String> {
            cu.copy_async(bufs[0].1, pristine.1, m * h * 2, stream)?;
            for (i, dw) in dws.iter().enumerate() {
                let st = step.run(&self.h, alpha, dw.1, bufs[i % 2].1, bufs[(i + 1) % 2].1, 0, 0, stream);
                if st != skinnylt::abi::STATUS_SUCCESS {
                    return Err(format!("step {i}: {}", skinnylt::abi::status_name(st)));
                }
                if sync {
                    cu.sync(stream)?;
                }
            }
            let st = last.run(&self.h, 1.0, bufs[steps % 2].1, dxl.1, dyl.1, 0, 0, stream);
            if st != skinnylt::abi::STATUS_SUCCESS {
                return Err(format!("last step: {}", skinnylt::abi::status_name(st)));
            }
            Ok(())
        };
        let read = || -> Result<(Vec<u16>, Vec<u16>), String> {
            let (mut a, mut b) = (vec![0u16; m * h], vec![0u16; mw * m]);
            cu.sync(stream)?;
            cu.dtoh(&mut a, bufs[steps % 2].1)?;
            cu.dtoh(&mut b, dyl.1)?;
            Ok((a, b))
        };
        let poison = || -> Result<(), String> {
            cu.memset16(bufs[0].1, 0xffff, m * h)?;
            cu.memset16(bufs[1].1, 0xffff, m * h)?;
            cu.memset16(dyl.1, 0xffff, mw * m)
        };
        let intercepted = crate::counters().intercepted;
        let res = (|| -> Result<String, String> {
            // First step alone, against float64.
            poison()?;
            cu.copy_async(bufs[0].1, pristine.1, m * h * 2, stream)?;
            let st = step.run(&self.h, alpha, dws[0].1, bufs[0].1, bufs[1].1, 0, 0, stream);
            if st != skinnylt::abi::STATUS_SUCCESS {
                return Err(format!("step 0: {}", skinnylt::abi::status_name(st)));
            }
            cu.sync(stream)?;
            let mut y1 = vec![0u16; m * h];
            cu.dtoh(&mut y1, bufs[1].1)?;
            let r = reference::reference(dtype, m, h, h, &w[0], h, &x0, h, None, alpha as f64);
            match reference::rel_error(dtype, m, h, &y1, h, &r) {
                Some(e) if e <= reference::tolerance(dtype) => {}
                e => return Err(format!("step 0 against float64: {e:?}")),
            }
            poison()?;
            run(true)?;
            let want = read()?;
            if want.1.contains(&0xffff) {
                return Err("synchronised chain left poison in the output".into());
            }
            poison()?;
            run(false)?;
            if read()? != want {
                return Err("eager chain without syncs differs from the synchronised chain".into());
            }
            let exec = cu.capture(stream, || run(false))?;
            for rep in 1..=200 {
                if rep % 50 == 0 {
                    poison()?;
                }
                cu.graph_launch(exec, stream)?;
                if rep % 50 == 0 && read()? != want {
                    cu.graph_destroy(exec);
                    return Err(format!("graph replay {rep} differs from the synchronised chain"));
                }
            }
            cu.graph_destroy(exec);
            Ok(format!("{} steps; eager and 200 replays bitwise equal to synchronised runs; PDL {}", steps + 1, self.pdl))
        })();
        cu.sync(stream)?;
        cu.stream_destroy(stream);
        let ran = crate::counters().intercepted - intercepted;
        let res = match res {
            Ok(_) if ran == 0 => Err("no step was run by skinnylt".into()),
            r => r.map(|d| format!("{d}; {ran} calls run by skinnylt")),
        };
        self.record(NAME.into(), res);
        Ok(())
    }

    fn two_streams(&mut self, a: &Case, b: &Case) -> Result<(), String> {
        let cu = self.cu;
        let (s1, s2) = (cu.stream_create()?, cu.stream_create()?);
        let (ia, ib) = (self.inputs(a)?, self.inputs(b)?);
        let mut want = Vec::new();
        for (c, i) in [(a, &ia), (b, &ib)] {
            if let Err(e) = self.launch(c, i, s1) {
                cu.stream_destroy(s1);
                cu.stream_destroy(s2);
                self.record("two streams on one handle (split-K)".into(), Err(e.clone()));
                return Err(e);
            }
            cu.sync(s1)?;
            want.push(self.read(c, i)?);
        }
        let mut res = Ok("bitwise equal to single-stream runs".to_owned());
        for round in 0..50 {
            cu.memset16(ia.dy.1, 0xffff, a.m * a.ldy)?;
            cu.memset16(ib.dy.1, 0xffff, b.m * b.ldy)?;
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
        self.record("two streams on one handle (split-K)".into(), res);
        Ok(())
    }
}
