//! `skinnylt demo`: the main job — one decode GEMM through the hipBLASLt C API.

use skinnylt::gpu::Arch;
use skinnylt::route::{DType, Problem};
use skinnylt::engine;
use skinnylt::tuning::Tuning;
use skinnylt::tuning::fallback::Fallback;
use skinnylt::{kernels, process};

use crate::client::{Handle, Linear};
use crate::gpu::Gpu;
use crate::reference::{self, Rng};

#[derive(clap::Args)]
pub struct Args {
    /// Tokens.
    #[arg(long, default_value_t = 4)]
    pub m: u32,
    /// Output features.
    #[arg(long, default_value_t = 2880)]
    pub n: u32,
    /// Reduction length (the default shape, a GPT-OSS projection with bias, is one the
    /// shipped sm_90 table runs rather than forwards).
    #[arg(long, default_value_t = 2880)]
    pub k: u32,
    #[arg(long, value_enum, default_value = "bf16")]
    pub dtype: DTypeArg,
    /// Add a bias (EPILOGUE_BIAS).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub bias: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum DTypeArg {
    Bf16,
    F16,
    /// OCP FP8 E4M3 operands with fp32 scales, bf16 output (sm_90, gfx950).
    E4m3,
    /// FP8 E4M3 FNUZ operands with fp32 scales, bf16 output (gfx942).
    E4m3fnuz,
}

impl From<DTypeArg> for DType {
    fn from(d: DTypeArg) -> DType {
        match d {
            DTypeArg::Bf16 => DType::Bf16,
            DTypeArg::F16 => DType::F16,
            DTypeArg::E4m3 => DType::E4m3,
            DTypeArg::E4m3fnuz => DType::E4m3Fnuz,
        }
    }
}

pub fn run(a: &Args) -> i32 {
    let dtype: DType = a.dtype.into();
    if dtype.is_fp8() {
        eprintln!("demo runs bf16 and f16; fp8 is checked by `skinnylt check --fp8` and timed by `skinnylt bench --dtype {}`", dtype.name());
        return 2;
    }
    println!(
        "decode GEMM: Y[{m},{n}] = X[{m},{k}] · W[{n},{k}]ᵀ{} in {} — as PyTorch's F.linear calls hipblasLtMatmul (opA=T, opB=N)",
        if a.bias { " + bias" } else { "" },
        dtype.name(),
        m = a.m,
        n = a.n,
        k = a.k
    );
    match (Gpu::get(), process::get().real_lib()) {
        (Some(cu), None) => match on_gpu(cu, a, dtype) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("demo failed: {e}");
                1
            }
        },
        (gpu, lib) => {
            if let Some(gpu) = gpu {
                println!("GPU runtime: {} — a real hipBLASLt is loaded, so this call is routed as in your application", gpu.rt.describe());
            } else {
                println!("no GPU found on this machine: showing how the call is routed and what would run");
            }
            if lib.is_none() {
                // Standalone and no GPU: the C API answers without touching memory.
                if let Err(e) = routed_without_gpu(a, dtype) {
                    eprintln!("demo failed: {e}");
                    return 1;
                }
            }
            explain(a, dtype);
            0
        }
    }
}

/// Calls hipblasLtMatmul with placeholder (aligned, never dereferenced) pointers to
/// show the routing decision on a machine without a GPU.
fn routed_without_gpu(a: &Args, dtype: DType) -> Result<(), String> {
    let h = Handle::new()?;
    let bias = a.bias.then_some(0x7300_0000u64);
    let l = Linear::new(dtype, a.m as u64, a.n as u64, a.k as u64, a.k as u64, a.k as u64, a.n as u64, bias)?;
    process::get().stats.reset();
    let s = l.run(&h, 1.0, 0x7000_0000, 0x7100_0000, 0x7200_0000, 0, 0, std::ptr::null_mut());
    println!("hipblasLtMatmul returned {} — {}", skinnylt::abi::status_name(s), crate::counters());
    Ok(())
}

fn explain(a: &Args, dtype: DType) {
    let p = route_problem(a, dtype);
    for arch in Arch::ALL {
        match explain_on(arch, &p) {
            Ok((name, plan)) => println!(
                "  on {:<6} ({} units): {name}, split_k {}, grid {}x{} CTAs of {} threads",
                arch.name(),
                arch.default_units(),
                plan.split_k,
                plan.grid[0],
                plan.grid[1],
                plan.block[0]
            ),
            Err(r) => println!("  on {:<6}: forwarded to the vendor library ({})", arch.name(), r.name()),
        }
    }
}

fn on_gpu(cu: &Gpu, a: &Args, dtype: DType) -> Result<(), String> {
    let dev = engine::device(0)?;
    cu.make_current(dev.ctx)?;
    println!("device: {} ({}), standalone mode", dev.info.name, dev.info.arch_name);
    let (m, n, k) = (a.m as usize, a.n as usize, a.k as usize);
    let mut rng = Rng(0x5eed ^ (m * 31 + n * 7 + k) as u64);
    let w = reference::random_matrix(&mut rng, dtype, n, k, k);
    let x = reference::random_matrix(&mut rng, dtype, m, k, k);
    let b = reference::random_matrix(&mut rng, dtype, 1, n, n);
    let (dw, dx, dy, db) = (cu.malloc(w.len() * 2)?, cu.malloc(x.len() * 2)?, cu.malloc(m * n * 2)?, cu.malloc(n * 2)?);
    cu.htod(dw, &w)?;
    cu.htod(dx, &x)?;
    cu.htod(db, &b)?;
    cu.memset16(dy, 0xffff, m * n)?; // NaN poison
    let h = Handle::new()?;
    let l = Linear::new(dtype, m as u64, n as u64, k as u64, k as u64, k as u64, n as u64, a.bias.then_some(db))?;
    process::get().stats.reset();
    // As AMD's sample clients and PyTorch do: the heuristic's first algo, then the call.
    let algo = l.heuristic(&h)?;
    println!("hipblasLtMatmulAlgoGetHeuristic: first algo is {}", if algo.is_own() { "skinnylt's (solution index -1)" } else { "the real library's" });
    let s = l.run_algo(&h, Some(&algo), 1.0, dw, dx, dy, 0, 0, std::ptr::null_mut());
    cu.device_sync()?;
    println!("hipblasLtMatmul returned {} — {}", skinnylt::abi::status_name(s), crate::counters());
    if let Ok((name, plan)) = explain_on(dev.arch, &route_problem(a, dtype)) {
        println!("kernel: {name}, split_k {}, grid {}x{}", plan.split_k, plan.grid[0], plan.grid[1]);
    }
    let mut y = vec![0u16; m * n];
    cu.dtoh(&mut y, dy)?;
    let r = reference::reference(dtype, m, n, k, &w, k, &x, k, a.bias.then_some(&b[..]), 1.0);
    let err = reference::rel_error(dtype, m, n, &y, n, &r);
    match err {
        Some(e) if e <= reference::tolerance(dtype) => println!("checked against float64: relative error {e:.2e} (limit {:.0e}) — OK", reference::tolerance(dtype)),
        Some(e) => return Err(format!("relative error {e:.2e} over the limit")),
        None => return Err("output not fully written (NaN left)".into()),
    }
    // Median of 50 launches, for a first impression (benchmarks use graphs and cold weights).
    let (e0, e1) = (cu.event()?, cu.event()?);
    let mut times = Vec::new();
    for _ in 0..50 {
        cu.record(e0, std::ptr::null_mut())?;
        l.run(&h, 1.0, dw, dx, dy, 0, 0, std::ptr::null_mut());
        cu.record(e1, std::ptr::null_mut())?;
        times.push(cu.elapsed_ms(e0, e1)? * 1000.0);
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("median latency (warm, eager): {:.1} µs", times[times.len() / 2]);
    for p in [dw, dx, dy, db] {
        cu.free(p);
    }
    Ok(())
}

fn route_problem(a: &Args, dtype: DType) -> Problem {
    Problem::packed(dtype, a.m, a.n, a.k, a.bias)
}

/// What would run `p` on `arch` with the shipped (embedded) table and no vendor
/// library to forward to, on the arch's common part: the library's own choose and
/// plan, without a device.
fn explain_on(arch: Arch, p: &Problem) -> Result<(String, engine::Plan), skinnylt::route::Reason> {
    let unsupported = skinnylt::route::Reason::ArchUnsupported;
    let table = Tuning::parse(arch, skinnylt::tuning::embedded(arch), "embedded").map_err(|_| unsupported)?;
    let cfg = skinnylt::config::Config::from_env();
    let target = crate::plan::target(arch, arch.default_units(), &cfg);
    let choice = engine::choose(&table, &Fallback::for_arch(arch), &target, p, false).map_err(|_| unsupported)?;
    let plan = engine::plan(&target, choice, p).map_err(|_| skinnylt::route::Reason::Dimensions)?;
    Ok((kernels::for_arch(arch).kernels[plan.kernel].name.to_owned(), plan))
}
