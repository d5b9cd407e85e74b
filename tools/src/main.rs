//! `skinnylt`: the command-line tool.
//!
//! * `info`  — library, GPU runtime and devices, real hipBLASLt or standalone, tuning;
//! * `demo`  — the main job: one decode GEMM through the hipBLASLt C API, on the GPU
//!   when there is one (checked against float64), else the routing decision and the
//!   kernel it would run;
//! * `check` — the GPU correctness suite (public grid, odd shapes, determinism,
//!   graph replay, concurrent streams);
//! * `audit` — the static audit of the embedded device code;
//! * `kernels` — the embedded kernel catalog, or the toolchain that built it;
//! * `bench` — skinnylt against the vendor library, same run, cold weights, graphs;
//! * `plan`  — how a set of shapes is routed on an arch, and why, without a GPU;
//! * `tune`  — per-shape search over kernel configs and split-K; writes the tuning file;
//! * `stress` — many threads and streams through the C API for minutes, intercepted
//!   and forwarded problems checked against float64, exact counters, graph replays.


use skinnylt_tools::{audit, bench, check, demo, fit, info, kernels, plan, stress, tune};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "skinnylt", version, about = "Faster decode GEMMs behind the hipBLASLt C API")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show the library, GPU runtime, devices, real hipBLASLt and tuning.
    Info,
    /// Run one decode GEMM through the hipBLASLt C API and report how it was routed.
    Demo(demo::Args),
    /// GPU correctness suite through the C API (needs a GPU).
    Check(check::Args),
    /// Static audit of the embedded gfx942/gfx950 code objects and sm_90 PTX.
    Audit,
    /// List the embedded kernels (every template parameter, LDS bytes, threads), or
    /// with --toolchain the compiler that built them.
    Kernels(kernels::Args),
    /// Time skinnylt and the vendor library side by side (needs a GPU).
    Bench(bench::Args),
    /// How skinnylt routes a set of shapes on an arch, and why (no GPU needed).
    Plan(plan::Args),
    /// Measure every kernel config per shape and write tuning/<arch>.json (needs a GPU).
    Tune(tune::Args),
    /// Fit the planner's cost model to `tune --dump` measurements; writes it into a
    /// tuning table.
    Fit(fit::Args),
    /// Redraw the heatmap and latency curves of a saved `bench --json` file.
    Plot(bench::PlotArgs),
    /// Many threads and streams through the C API for minutes, interposed on a real
    /// hipBLASLt (--real-lib) or standalone; then graph replays (needs an NVIDIA GPU).
    Stress(stress::Args),
}

fn main() {
    // A closed pipe (`skinnylt info | head -1`) ends the command quietly, as with
    // other Unix tools, instead of a panic from println!. The CLI only: the library
    // never touches a host application's signal dispositions.
    // SAFETY: restores the default disposition before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Info => info::run(),
        Cmd::Demo(a) => demo::run(&a),
        Cmd::Check(a) => check::run(&a),
        Cmd::Audit => audit(),
        Cmd::Kernels(a) => kernels::run(&a),
        Cmd::Bench(a) => bench::run(&a),
        Cmd::Plan(a) => plan::run(&a),
        Cmd::Tune(a) => tune::run(&a),
        Cmd::Plot(a) => bench::plot(&a),
        Cmd::Fit(a) => fit::run(&a),
        Cmd::Stress(a) => stress::run(&a),
    };
    std::process::exit(code);
}

fn audit() -> i32 {
    match audit::audit_all(false) {
        Err(e) => {
            eprintln!("audit failed: {e}");
            1
        }
        Ok((rows, skipped)) => {
            for a in skipped {
                println!("{a}: skipped (llvm-readelf / llvm-objdump not found)");
            }
            println!("{:<7} {:<58} {:>5} {:>5} {:>5} {:>7} {:>7} {:>6} {:>5}  problems", "arch", "kernel", "vgpr", "agpr", "sgpr", "scratch", "lds", "matrix", "waves");
            let mut bad = 0;
            for r in &rows {
                println!(
                    "{:<7} {:<58} {:>5} {:>5} {:>5} {:>7} {:>7} {:>6} {:>5}  {}",
                    r.arch,
                    r.name,
                    r.vgprs,
                    r.agprs,
                    r.sgprs,
                    r.scratch,
                    r.lds,
                    r.matrix_ops,
                    if r.arch == "sm90" { "-".into() } else { r.waves_per_simd.to_string() },
                    if r.problems.is_empty() { "none".into() } else { r.problems.join("; ") }
                );
                bad += !r.problems.is_empty() as usize;
            }
            println!("{} passed, {} failed", rows.len() - bad, bad);
            (bad > 0) as i32
        }
    }
}
