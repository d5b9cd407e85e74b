//! `skinnylt plan`: how skinnylt routes a set of shapes on an arch, without a GPU.
//!
//! For every problem: what deployment does with a real hipBLASLt (or cuBLASLt) to
//! forward to, and by which rule (the table's band, transfer from anchors, the
//! planner), what runs standalone, and the planner's predictions behind them. It
//! asks the library's own `engine::explain` and `engine::plan` with the tables the
//! library would load (`SKINNYLT_TUNING_FILE` / `SKINNYLT_TUNING_DIR` apply), so a
//! decision shown here is the one a call makes. Use it to see what skinnylt would
//! intercept on a device it has not run on (gfx942, gfx950), and, beside
//! `bench --json`, to replay routing decisions against measured times.

use std::io::Write as _;

use skinnylt::engine::{self, Error, Rule, Target};
use skinnylt::gpu::{Arch, Backend};
use skinnylt::kernels;
use skinnylt::route::{DType, Problem};
use skinnylt::tuning::fallback::Fallback;
use skinnylt::tuning::schema::{self, ScaleKind};
use skinnylt::tuning::{Choice, Tuning, planner};

use crate::bench::{Routing, ShapeArgs};
use crate::grid::Shape;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub shapes: ShapeArgs,
    /// The arch whose kernels and tables decide.
    #[arg(long, value_enum, default_value = "sm90")]
    pub arch: ArchArg,
    /// The device's name as its runtime reports it (e.g. "NVIDIA H200"): a device
    /// with tables of its own reads those (default: the arch's own tables).
    #[arg(long, default_value = "")]
    pub device: String,
    /// sm_90: plan as launched with programmatic dependent launch (false: the
    /// table tuned without it, as with SKINNYLT_PDL=0).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub pdl: bool,
    /// What decides: the tables as deployed, or the planner alone (every table
    /// without its entries and anchors), as `bench --routing` measures them.
    #[arg(long, value_enum, default_value = "deployment")]
    pub routing: Routing,
    /// Also write one JSON object per problem to this file.
    #[arg(long)]
    pub json: Option<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ArchArg {
    Sm90,
    Gfx942,
    Gfx950,
}

impl From<ArchArg> for Arch {
    fn from(a: ArchArg) -> Arch {
        match a {
            ArchArg::Sm90 => Arch::Sm90,
            ArchArg::Gfx942 => Arch::Gfx942,
            ArchArg::Gfx950 => Arch::Gfx950,
        }
    }
}

/// What routing does with one problem.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Decision {
    pub group: String,
    pub dtype: &'static str,
    /// "row" for fp8 with per-row scales, else "tensor".
    pub scales: &'static str,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub bias: bool,
    /// With a vendor library present: "kernel@split" as launched, or "forward".
    pub deployed: String,
    /// The rule that decided it (`engine::Rule::name`).
    pub rule: &'static str,
    /// Why it is forwarded (the engine's reason), where it is.
    pub forward_reason: Option<String>,
    /// Without a vendor library: "kernel@split" as launched, or why none runs.
    pub standalone: String,
    /// The planner's predicted time of the choice it judged (where it decided), else
    /// of what runs, calibrated and at the slow end of its calibration; the vendor's
    /// predicted time; and the margin the planner judges a win by. None without
    /// planner constants or a calibration for that kernel.
    pub predicted_us: Option<f64>,
    pub predicted_high_us: Option<f64>,
    pub vendor_us: Option<f64>,
    pub margin: Option<f64>,
}

pub fn run(a: &Args) -> i32 {
    if a.routing == Routing::Planner {
        crate::use_tables_without_entries(true);
    }
    let (shapes, scales) = match a.shapes.shapes().and_then(|v| Ok((v, a.shapes.scale_kind()?))) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("plan: {e}");
            return 2;
        }
    };
    let arch: Arch = a.arch.into();
    let dtype: DType = a.shapes.dtype.into();
    if !kernels::for_arch(arch).kernels.iter().any(|k| k.dtype == dtype) {
        eprintln!("plan: {} has no {} kernels (skinnylt forwards every such call there)", arch.name(), dtype.name());
        return 2;
    }
    let cfg = skinnylt::config::Config::from_env();
    let table = match (a.pdl, Tuning::load_no_pdl(&cfg, arch, &a.device)) {
        (false, Some(t)) => t,
        _ => Tuning::load(&cfg, arch, &a.device),
    };
    let target = target(arch, arch.default_units(), &cfg);
    let decisions: Vec<Decision> = shapes.iter().map(|s| decide(&table, &target, s, dtype, scales, cfg.batch_invariant)).collect();
    let mut json = match a.json.as_deref().map(std::fs::File::create).transpose() {
        Ok(f) => f.map(std::io::BufWriter::new),
        Err(e) => {
            eprintln!("plan: {}: {e}", a.json.as_deref().unwrap_or_default());
            return 1;
        }
    };
    let pdl = match (arch, a.pdl) {
        (Arch::Sm90, true) => ", launched with PDL",
        (Arch::Sm90, false) => ", launched without PDL",
        _ => "",
    };
    println!(
        "{} on {} ({} {}), {} routing{pdl}{}, {}",
        dtype.name(),
        arch.name(),
        target.units,
        target.backend.unit_name(),
        if a.routing == Routing::Planner { "planner-only" } else { "deployment" },
        if cfg.batch_invariant { ", batch-invariant (SKINNYLT_BATCH_INVARIANT)" } else { "" },
        table.source
    );
    println!("{:<10} {:>4} {:>6} {:>6} {:<4} {:>8} {:>8} {:>6}  {:<10} deployed / standalone", "group", "M", "N", "K", "bias", "pred µs", "vendor", "x", "rule");
    for d in &decisions {
        let x = match (d.predicted_high_us, d.vendor_us) {
            (Some(p), Some(v)) => format!("{:.2}", v / p),
            _ => "-".into(),
        };
        let us = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        let shown = if d.deployed == d.standalone { d.deployed.clone() } else { format!("{} / {}", d.deployed, d.standalone) };
        println!(
            "{:<10} {:>4} {:>6} {:>6} {:<4} {:>8} {:>8} {:>6}  {:<10} {shown}",
            d.group,
            d.m,
            d.n,
            d.k,
            if d.bias { "yes" } else { "no" },
            us(d.predicted_high_us),
            us(d.vendor_us),
            x,
            d.rule
        );
        if let Some(f) = json.as_mut() {
            let line = serde_json::to_string(d).expect("a decision serialises");
            if let Err(e) = writeln!(f, "{line}") {
                eprintln!("plan: {e}");
                return 1;
            }
        }
    }
    if let Some(Err(e)) = json.as_mut().map(std::io::Write::flush) {
        eprintln!("plan: {e}");
        return 1;
    }
    println!("{}", summary(&decisions));
    println!("(pred µs: the planner's time, at the slow end of its calibration, for the choice it judged, else for what runs; vendor: its model of the vendor's time; x: vendor / pred, which the planner judges against its margin; 16-bit at M = {}..{} it also runs where the vendor / its median prediction (predicted_us in the JSON) clears {})", planner::MEDIAN_TOKENS.start(), planner::MEDIAN_TOKENS.end(), planner::MEDIAN_MARGIN);
    0
}

/// The launch target the library would plan for on `arch` without a device: the
/// arch's runtime (sm_90: CUDA; AMD: HIP), `units` compute units, and the split-K
/// partials lane `cfg` sizes.
pub fn target(arch: Arch, units: u32, cfg: &skinnylt::config::Config) -> Target {
    let backend = if arch == Arch::Sm90 { Backend::Cuda } else { Backend::Hip };
    Target { arch, backend, units, partial_capacity: engine::lane_bytes(cfg) }
}

/// How routing decides `s` on `t` with `table`, deployed and standalone; as a
/// batch-invariant call (`SKINNYLT_BATCH_INVARIANT`) where `invariant`.
pub fn decide(table: &Tuning, t: &Target, s: &Shape, dtype: DType, scales: ScaleKind, invariant: bool) -> Decision {
    let mut p = Problem { batch_invariant: invariant, ..Problem::packed(dtype, s.m, s.n, s.k, s.bias) };
    if dtype.is_fp8() {
        // Placeholder scale pointers, vectors on both sides per row (as `bench` calls).
        (p.a_scale, p.b_scale) = (0x200, 0x300);
        if scales == ScaleKind::Row {
            p.epilogue |= kernels::params::SCALE_A_VEC | kernels::params::SCALE_B_VEC;
        }
    }
    let p = p.unit_view();
    let fallback = Fallback::for_arch(t.arch);
    let (deployed, rule) = engine::explain(table, &fallback, t, &p, true);
    let standalone = engine::choose(table, &fallback, t, &p, false);
    let launched = |c: &Result<Choice, Error>| c.clone().and_then(|c| engine::plan(t, c, &p));
    let (deployed_plan, standalone_plan) = (launched(&deployed), launched(&standalone));
    let name = |pl: &Result<engine::Plan, Error>| match pl {
        Ok(pl) => format!("{}@{}", kernels::for_arch(t.arch).kernels[pl.kernel].name, pl.split_k),
        Err(Error::TunedForward | Error::PlannerForward | Error::TransferForward) => "forward".into(),
        Err(e) => format!("none ({e})"),
    };
    // The predictions behind the decision: of the choice the planner judged where it
    // decided (run or forward), else of what deployment runs, else of what would
    // run standalone.
    let model = table.planner.as_ref();
    let judged = match (rule, model) {
        (Rule::Planner, Some(m)) => engine::planned(m, t, &p).map(|pick| pick.choice),
        _ => deployed.clone().or_else(|_| standalone.clone()).ok(),
    };
    let predict = |high: bool| {
        let (model, Choice::Run { kernel, split_k }) = (model?, judged?) else { return None };
        let dev = planner::Device { units: t.units, facts: schema::target(t.arch.name())? };
        let c = &kernels::for_arch(t.arch).kernels[kernel].config;
        if high { model.predict_high(&dev, c, split_k, &p) } else { model.predict(&dev, c, split_k, &p) }
    };
    Decision {
        group: s.group.to_owned(),
        dtype: dtype.name(),
        scales: if scales == ScaleKind::Row && dtype.is_fp8() { "row" } else { "tensor" },
        m: s.m,
        n: s.n,
        k: s.k,
        bias: s.bias,
        deployed: name(&deployed_plan),
        rule: rule.name(),
        forward_reason: match &deployed {
            Err(e @ (Error::TunedForward | Error::PlannerForward | Error::TransferForward)) => Some(e.to_string()),
            _ => None,
        },
        standalone: name(&standalone_plan),
        predicted_us: predict(false),
        predicted_high_us: predict(true),
        vendor_us: model.map(|m| table.vendor_us(m, &p)),
        margin: model.map(|m| engine::planner_margin(m, dtype)),
    }
}

/// "N problems: R run (by rule), F forwarded (by rule)".
pub fn summary(decisions: &[Decision]) -> String {
    let count = |run: bool| {
        let mut by: Vec<(&str, usize)> = Vec::new();
        for d in decisions.iter().filter(|d| (d.deployed != "forward") == run) {
            match by.iter_mut().find(|(r, _)| *r == d.rule) {
                Some((_, n)) => *n += 1,
                None => by.push((d.rule, 1)),
            }
        }
        let total: usize = by.iter().map(|(_, n)| n).sum();
        let parts: Vec<String> = by.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let what = if run { "run" } else { "forwarded" };
        if parts.is_empty() { format!("{total} {what}") } else { format!("{total} {what} ({})", parts.join(", ")) }
    };
    format!("{} problems with a vendor library present: {}, {}", decisions.len(), count(true), count(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use skinnylt::tuning::embedded;

    fn h100() -> Target {
        target(Arch::Sm90, 132, &skinnylt::config::Config::from_lookup(|_| None))
    }

    fn shape(m: u32, n: u32, k: u32, bias: bool) -> Shape {
        Shape { group: "test", m, n, k, bias }
    }

    /// The tool shows the library's own decision: the kernel and split a call
    /// launches, deployed and standalone, and the rule the engine names.
    #[test]
    fn decisions_are_the_engines() {
        let table = Tuning::parse(Arch::Sm90, embedded(Arch::Sm90), "embedded").unwrap();
        let t = h100();
        let fb = Fallback::for_arch(Arch::Sm90);
        let cat = kernels::for_arch(Arch::Sm90).kernels;
        let shapes = [shape(1, 64, 7168, false), shape(12, 896, 5120, true), shape(5, 5120, 512, false), shape(100, 5376, 2688, false), shape(3, 4096, 4096, false)];
        for s in &shapes {
            let d = decide(&table, &t, s, DType::Bf16, ScaleKind::Tensor, false);
            let p = Problem::packed(DType::Bf16, s.m, s.n, s.k, s.bias).unit_view();
            let (want, rule) = engine::explain(&table, &fb, &t, &p, true);
            assert_eq!(rule.name(), d.rule, "{s:?}");
            match want.and_then(|c| engine::plan(&t, c, &p)) {
                Ok(pl) => assert_eq!(d.deployed, format!("{}@{}", cat[pl.kernel].name, pl.split_k)),
                Err(Error::TunedForward | Error::PlannerForward | Error::TransferForward) => assert!(d.deployed == "forward" && d.forward_reason.is_some()),
                Err(e) => panic!("{s:?}: {e}"),
            }
            let pl = engine::plan(&t, engine::choose(&table, &fb, &t, &p, false).unwrap(), &p).unwrap();
            assert_eq!(d.standalone, format!("{}@{}", cat[pl.kernel].name, pl.split_k));
            assert!(d.vendor_us.is_some_and(|v| v > 0.0) && d.margin.is_some_and(|m| m >= 1.0));
        }
        // A grid shape the H100 table measured runs by its band.
        assert_eq!(decide(&table, &t, &shape(1, 64, 7168, false), DType::Bf16, ScaleKind::Tensor, false).rule, "table");
        // Batch-invariant, the same shape is planned for one summation order and
        // never forwards, as the library routes it.
        let invariant = decide(&table, &t, &shape(128, 2880, 4096, false), DType::Bf16, ScaleKind::Tensor, true);
        let p = Problem { batch_invariant: true, ..Problem::packed(DType::Bf16, 128, 2880, 4096, false) };
        let pl = engine::plan(&t, engine::choose(&table, &fb, &t, &p, true).unwrap(), &p).unwrap();
        assert_eq!((invariant.rule, invariant.deployed), ("batch-invariant", format!("{}@{}", cat[pl.kernel].name, pl.split_k)));
    }

    /// A planner decision's numbers are the ones it was judged by: it runs exactly
    /// where the vendor's predicted time exceeds the margin times the slow end, or
    /// (16-bit, at `MEDIAN_TOKENS`) the median margin times the median prediction.
    #[test]
    fn planner_decisions_follow_their_predictions() {
        let table = Tuning::parse(Arch::Sm90, embedded(Arch::Sm90), "embedded").unwrap();
        let t = h100();
        let mut seen = (0, 0);
        for (m, n, k) in [(5, 5120, 512), (12, 1536, 5120), (48, 5120, 2240), (100, 1024, 5376), (24, 6912, 5120), (1, 5120, 640)] {
            let d = decide(&table, &t, &shape(m, n, k, false), DType::Bf16, ScaleKind::Tensor, false);
            if d.rule != "planner" {
                continue;
            }
            let (us, high, vendor, margin) = (d.predicted_us.unwrap(), d.predicted_high_us.unwrap(), d.vendor_us.unwrap(), d.margin.unwrap());
            let typical = skinnylt::tuning::planner::MEDIAN_TOKENS.contains(&m) && vendor >= skinnylt::tuning::planner::MEDIAN_MARGIN * us;
            assert_eq!(d.deployed != "forward", vendor >= margin * high || typical, "{d:?}");
            if d.deployed == "forward" { seen.1 += 1 } else { seen.0 += 1 }
        }
        assert!(seen.1 > 0, "some of these are planner forwards on the H100 table");
    }

    /// On an arch whose tables are models (gfx942), the planner decides every shape,
    /// at its uncalibrated margin; an fp8 flavour the arch has no kernels for never
    /// plans (gfx942 takes FNUZ, not OCP E4M3).
    #[test]
    fn model_only_tables_route_by_the_planner() {
        let table = Tuning::parse(Arch::Gfx942, embedded(Arch::Gfx942), "embedded").unwrap();
        let t = Target { arch: Arch::Gfx942, backend: Backend::Hip, units: 304, partial_capacity: 4 << 20 };
        for s in [shape(1, 64, 7168, false), shape(8, 2880, 2880, true), shape(32, 5120, 5120, false)] {
            let d = decide(&table, &t, &s, DType::Bf16, ScaleKind::Tensor, false);
            assert_eq!(d.rule, "planner", "{d:?}");
            assert!(d.margin.unwrap() >= 1.3, "{d:?}");
            assert!(d.standalone.starts_with("skinnylt_"), "{d:?}");
        }
        let d = decide(&table, &t, &shape(1, 64, 7168, false), DType::E4m3, ScaleKind::Tensor, false);
        assert!(d.deployed != "forward" || d.forward_reason.is_some());
        assert!(d.standalone.starts_with("none"), "{d:?}");
    }

    #[test]
    fn the_summary_counts_by_rule() {
        let table = Tuning::parse(Arch::Sm90, embedded(Arch::Sm90), "embedded").unwrap();
        let t = h100();
        let ds: Vec<Decision> = [shape(1, 64, 7168, false), shape(128, 1024, 7168, false), shape(48, 5120, 3456, false)]
            .iter()
            .map(|s| decide(&table, &t, s, DType::Bf16, ScaleKind::Tensor, false))
            .collect();
        let s = summary(&ds);
        assert!(s.starts_with("3 problems with a vendor library present: 1 run (table 1), 2 forwarded ("), "{s}");
    }
}
