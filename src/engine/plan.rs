//! Planning: which kernel and split-K run a problem, and the launch geometry that
//! follows. Pure functions of the device's facts, its tables and the problem, so
//! the tools (`skinnylt demo`, `tune`) plan exactly as the hot path does.

use super::Error;
use crate::gpu::{Arch, Backend};
use crate::kernels;
use crate::route::Problem;
use crate::tuning::fallback::{Fallback, MAX_SPLIT};
use crate::tuning::planner;
use crate::tuning::schema::{self, CostModel, MAX_CLUSTER_SPLIT};
use crate::tuning::{Choice, Tuning};

/// Output tiles per launch that split-K arrival counters cover.
pub const MAX_TILES: usize = 32768;

/// What planning needs to know about the device.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub arch: Arch,
    pub backend: Backend,
    /// Compute units (AMD) or SMs (NVIDIA).
    pub units: u32,
    /// Bytes of one stream lane of the handle's own split-K partials buffer: the
    /// split is capped so its partials fit, so the split, and so the result bits,
    /// never depend on how much workspace a caller happens to pass.
    pub partial_capacity: usize,
}

/// A planned launch: kernel, split and geometry (the stream's lane and buffers are
/// added per call, `Engine::prepare`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Index in the arch's kernel catalog.
    pub kernel: usize,
    pub split_k: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory (NVIDIA; AMD kernels size their LDS statically).
    pub shared: u32,
    /// Bytes of fp32 partials in global memory (0 without split-K or with clusters).
    pub partial_bytes: usize,
    /// Split-K inside a thread-block cluster of `split_k` CTAs (sm_90).
    pub cluster: bool,
}

/// What runs `p` on target `t` (here and below, `p` counts K and the operand
/// strides in units: `Problem::unit_view`), in this order:
/// 1. the table's band for `p`, where it was measured and holds at `p.m`
///    (`Band::holds_at`): its kernel and split, or "forward" when there is a library
///    to forward to (`can_forward`);
/// 2. where the table has anchors near `p` (`Tuning::transfer`), the nearest one's
///    kernel at the split that gives `p` its count of CTAs: run where the anchors
///    near it won by the transfer margin, or when there is no library to forward
///    to; else on to the planner;
/// 3. the planner, where the table has its constants: the candidate with the least
///    predicted time, run only where, when there is a library to forward to, it
///    beats the vendor's predicted time at the slow end of its calibration by the
///    model's margin (fp8: at least `planner::FP8_MARGIN`, or
///    `planner::UNCALIBRATED_MARGIN` without calibration: [`planner_margin`]), or
///    in its median prediction by `planner::MEDIAN_MARGIN` (16-bit, calibrated, at
///    `planner::MEDIAN_TOKENS`: [`planner_wins`]); with per-row fp8 scales the vendor's time is
///    the model's per-row one, and at least what the table's per-row entries
///    measured at that K (`Tuning::vendor_us`);
/// 4. without planner constants, the fallback rule in standalone mode, else forward.
pub fn choose(table: &Tuning, fallback: &Fallback, t: &Target, p: &Problem, can_forward: bool) -> Result<Choice, Error> {
    explain(table, fallback, t, p, can_forward).0
}

/// Which rule of [`choose`] decided a problem ([`explain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Batch-invariant planning: one summation order for every M.
    Invariant,
    /// 1: the table's measured band (a kernel, or "forward").
    Band,
    /// 2: a choice borrowed from the nearest anchors.
    Transfer,
    /// 3: the planner's cost model (its choice, or "no clear win"); also a
    /// forward for want of planner constants.
    Planner,
    /// 4: the fallback rule (standalone, no planner constants).
    Fallback,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Invariant => "batch-invariant",
            Rule::Band => "table",
            Rule::Transfer => "transfer",
            Rule::Planner => "planner",
            Rule::Fallback => "fallback",
        }
    }
}

/// [`choose`], and the rule that decided: what `skinnylt plan` shows.
pub fn explain(table: &Tuning, fallback: &Fallback, t: &Target, p: &Problem, can_forward: bool) -> (Result<Choice, Error>, Rule) {
    if p.batch_invariant {
        return (invariant(table, fallback, t, p), Rule::Invariant);
    }
    if let Some(band) = table.lookup(p).filter(|b| b.measured && b.holds_at(t.arch, p.m)) {
        match band.choice {
            Choice::Forward if can_forward => return (Err(Error::TunedForward), Rule::Band),
            Choice::Forward => {}
            run => return (Ok(run), Rule::Band),
        }
    }
    let all = kernels::for_arch(t.arch).kernels;
    let kept_splits = |kernel: usize| {
        let mut v: Vec<u32> = planner::splits(&all[kernel].config, p).filter_map(|s| kept_split(t, kernel, s, p)).collect();
        v.dedup();
        v
    };
    match table.transfer(t.arch, t.units, p, kept_splits) {
        Some(b) if b.spills && can_forward => return (Err(Error::TransferForward), Rule::Transfer),
        Some(b) if matches!(b.choice, Choice::Run { .. }) && (b.wins || !can_forward) => return (Ok(b.choice), Rule::Transfer),
        _ => {}
    }
    match &table.planner {
        Some(model) => {
            let Some(pick) = planned(model, t, p) else { return (Err(Error::NoKernel), Rule::Planner) };
            if can_forward && !planner_wins(model, p, table.vendor_us(model, p), &pick) {
                return (Err(Error::PlannerForward), Rule::Planner);
            }
            (Ok(pick.choice), Rule::Planner)
        }
        None if can_forward => (Err(Error::PlannerForward), Rule::Planner),
        None => (fallback.choose(t.units, p).ok_or(Error::NoKernel), Rule::Fallback),
    }
}

/// The factor by which the planner's choice, at the slow end of its calibration,
/// must beat the vendor's predicted time to run where the vendor could take the
/// call: the model's margin; fp8, whose kernels plan with the 16-bit calibration,
/// at least `planner::FP8_MARGIN` where the model is calibrated and
/// `planner::UNCALIBRATED_MARGIN` where it is not.
pub fn planner_margin(model: &CostModel, dtype: crate::route::DType) -> f64 {
    match (dtype.is_fp8(), model.calibration.is_empty()) {
        (false, _) => model.margin,
        (true, false) => model.margin.max(planner::FP8_MARGIN),
        (true, true) => model.margin.max(planner::UNCALIBRATED_MARGIN),
    }
}

/// Whether the planner's pick for `p` clears the vendor's predicted time
/// `vendor_us` by enough to run where the vendor could take the call: at the slow
/// end of its calibration by `planner_margin`, or, for a 16-bit pick of a
/// calibrated model at `planner::MEDIAN_TOKENS`, by its median
/// prediction by `planner::MEDIAN_MARGIN` (a kernel whose measured spread is wide
/// has a slow end far above what it usually takes).
pub fn planner_wins(model: &CostModel, p: &Problem, vendor_us: f64, pick: &Planned) -> bool {
    let sure = vendor_us >= planner_margin(model, p.dtype) * pick.us_high;
    let typical = !p.dtype.is_fp8() && !model.calibration.is_empty() && planner::MEDIAN_TOKENS.contains(&p.m) && vendor_us >= planner::MEDIAN_MARGIN * pick.us;
    sure || typical
}

/// Batch-invariant planning: every M of (dtype, N, K) runs kernels of one summation
/// class (`planner::summation_class`) at one split, chosen from (dtype, N, K) alone,
/// and never forwards by speed (a forwarded M would sum in the vendor's order).
/// With planner constants, the table's measured plan for the shape where it has
/// one (`Tuning::invariant`), else `planner::invariant_best` (the table's measured
/// winners where it has them, the model elsewhere); without, the fallback's
/// kernel for 16 tokens at every M. The split is the one the launch plan keeps at
/// the largest M, so no M's plan lowers it.
fn invariant(table: &Tuning, fallback: &Fallback, t: &Target, p: &Problem) -> Result<Choice, Error> {
    let largest = Problem { m: p.m.max(*planner::INVARIANT_MS.last().unwrap()), ..*p };
    let kept = |kernel, s| plan(t, Choice::Run { kernel, split_k: s }, &largest).map_or(0, |pl| pl.split_k);
    if let Some(model) = &table.planner {
        let facts = schema::target(t.arch.name()).ok_or(Error::NoKernel)?;
        let dev = planner::Device { units: t.units, facts };
        let catalog: Vec<_> = kernels::for_arch(t.arch).kernels.iter().enumerate().map(|(i, k)| (i, k.dtype, &k.config)).collect();
        let fits = |k, s| kept(k, s) == s;
        // A measured plan whose every kernel keeps its split: the kernel measured at
        // this M, else its class's fastest predicted one (else the kernel measured at
        // the nearest M: every kernel of the class sums a row alike at any M).
        if let Some(inv) = table.invariant(p).filter(|inv| inv.measured.iter().all(|&(_, k)| fits(k, inv.split_k))) {
            let kernel = match inv.measured.iter().find(|&&(m, _)| m == p.m) {
                Some(&(_, k)) => k,
                None => match planner::InvariantCatalog::new(model, &dev, &catalog, p.dtype, fits).fastest(inv.class, inv.split_k, p) {
                    Some((_, k)) => k,
                    None => inv.measured.iter().min_by_key(|&&(m, _)| m.abs_diff(p.m)).ok_or(Error::NoKernel)?.1,
                },
            };
            return Ok(Choice::Run { kernel, split_k: inv.split_k });
        }
        // The table's measured winner at M, where it measured one.
        let measured = |m| match table.lookup(&Problem { m, ..*p }).filter(|b| b.measured && b.holds_at(t.arch, m))?.choice {
            Choice::Run { kernel, split_k } => Some((kernel, split_k)),
            Choice::Forward => None,
        };
        return planner::invariant_best(model, &dev, &catalog, p, fits, measured).ok_or(Error::NoKernel);
    }
    match fallback.choose(t.units, &Problem { m: 16, ..*p }).ok_or(Error::NoKernel)? {
        Choice::Run { kernel, split_k } => Ok(Choice::Run { kernel, split_k: kept(kernel, split_k).max(1) }),
        Choice::Forward => Err(Error::NoKernel),
    }
}

/// The planner's choice and the times its win over the vendor is judged by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Planned {
    pub choice: Choice,
    /// Its predicted time (µs): `CostModel::predict`, the median of its calibration.
    pub us: f64,
    /// Its time at the slow end of its calibration (`CostModel::predict_high`).
    pub us_high: f64,
}

/// The planner's choice for `p` on `t` (every kernel of the arch's catalog at every
/// split, each split as the launch plan would cap it) and its predicted times.
pub fn planned(model: &CostModel, t: &Target, p: &Problem) -> Option<Planned> {
    let facts = schema::target(t.arch.name())?;
    let dev = planner::Device { units: t.units, facts };
    let all = kernels::for_arch(t.arch).kernels;
    let catalog = all.iter().enumerate().map(|(i, k)| (i, k.dtype, &k.config));
    let cap = |kernel, s| kept_split(t, kernel, s, p).unwrap_or(s);
    let (choice, us) = planner::best(model, &dev, catalog, p, cap)?;
    let Choice::Run { kernel, split_k } = choice else { return None };
    Some(Planned { choice, us, us_high: model.predict_high(&dev, &all[kernel].config, split_k, p)? })
}

/// The split the launch plan keeps when `kernel` is asked to run `p` at split `s`
/// (capped by partials capacity, clusters, counters); `None` where it cannot run.
fn kept_split(t: &Target, kernel: usize, s: u32, p: &Problem) -> Option<u32> {
    plan(t, Choice::Run { kernel, split_k: s }, p).ok().map(|pl| pl.split_k)
}

/// The geometry of running `choice` for `p` on `t`.
pub fn plan(t: &Target, choice: Choice, p: &Problem) -> Result<Plan, Error> {
    let Choice::Run { kernel, split_k } = choice else { return Err(Error::TunedForward) };
    let c = kernels::for_arch(t.arch).kernels.get(kernel).ok_or(Error::NoKernel)?.config;
    let facts = schema::target(t.arch.name()).expect("every arch has target facts");
    let tiles = p.n.div_ceil(c.tile_n) as usize * p.m.div_ceil(c.tile_m) as usize;
    if tiles > u32::MAX as usize / 2 {
        return Err(Error::TooLarge);
    }
    let per_split = tiles * (c.tile_m * c.tile_n) as usize * 4;
    let mut split_k = split_k.clamp(1, MAX_SPLIT);
    if c.cluster {
        split_k = split_k.min(MAX_CLUSTER_SPLIT);
    } else if split_k > 1 {
        let fits = (t.partial_capacity / per_split.max(1)) as u32;
        split_k = if fits >= 2 { split_k.min(fits) } else { 1 };
        if tiles > MAX_TILES {
            split_k = 1; // more tiles than counters: no split-K (still correct)
        }
    }
    Ok(Plan {
        kernel,
        split_k,
        grid: [tiles as u32, split_k, 1],
        block: [c.threads(&facts), 1, 1],
        shared: if t.backend == Backend::Cuda { c.lds_bytes(&facts) } else { 0 },
        partial_bytes: if split_k > 1 && !c.cluster { per_split * split_k as usize } else { 0 },
        cluster: c.cluster && split_k > 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::DType;
    use crate::tuning::schema::Family;

    fn h100() -> Target {
        Target { arch: Arch::Sm90, backend: Backend::Cuda, units: 132, partial_capacity: 4 << 20 }
    }

    fn model() -> CostModel {
        crate::tuning::planner::test_model(&[(Family::Splitk, false, false), (Family::Splitk, true, false), (Family::Vdmfma, false, false), (Family::Wgmma, false, false), (Family::Wgmma, true, false), (Family::Wgmma, true, true)])
    }

    /// A table's measured batch-invariant plan decides the class and split of its
    /// shape: the kernel measured at an M runs there, a kernel of the same class at
    /// the same split everywhere else, and a shape without a plan is planned.
    #[test]
    fn measured_invariant_plans_run_their_class_and_split() {
        let (t, fb) = (h100(), Fallback::for_arch(Arch::Sm90));
        let cat = kernels::for_arch(Arch::Sm90).kernels;
        // Two kernels of one summation class (one K group).
        let wgmma: Vec<&schema::KernelConfig> = cat.iter().filter(|k| k.dtype == DType::Bf16 && k.config.family == Family::Wgmma && k.config.cluster && k.config.warps[2] == 1).map(|k| &k.config).collect();
        let (a, b) = (wgmma[0], wgmma[1]);
        assert_ne!(a, b);
        let entry = |m: u32, c: &schema::KernelConfig| format!(r#"{{"dtype":"bf16","n":2880,"k":2880,"bias":false,"m_min":{m},"m_max":{m},"source":"measured","kernel":{},"split_k":3,"us":5.0,"vendor_us":6.0}}"#, serde_json::to_string(c).unwrap());
        let text = format!(r#"{{"schema":1,"arch":"sm90","planner":{},"entries":[],"invariant":[{},{}]}}"#, serde_json::to_string(&model()).unwrap(), entry(1, a), entry(64, b));
        let table = Tuning::parse(Arch::Sm90, &text, "test").unwrap();
        let index = |c: &schema::KernelConfig| kernels::index_of(Arch::Sm90, DType::Bf16, c).unwrap();
        let at = |m, n| choose(&table, &fb, &t, &Problem { batch_invariant: true, ..Problem::packed(DType::Bf16, m, n, 2880, false) }, true).unwrap();
        assert_eq!(at(1, 2880), Choice::Run { kernel: index(a), split_k: 3 });
        assert_eq!(at(64, 2880), Choice::Run { kernel: index(b), split_k: 3 });
        for m in [2, 5, 17, 100, 128] {
            let Choice::Run { kernel, split_k } = at(m, 2880) else { panic!("M={m}") };
            assert_eq!((planner::summation_class(&cat[kernel].config), split_k), ((Family::Wgmma, 0, 1), 3), "M={m}");
        }
        // Another N has no plan: the planner's pair, as without the section.
        let mut plain = Tuning::default();
        plain.planner = Some(model());
        let p = Problem { batch_invariant: true, ..Problem::packed(DType::Bf16, 1, 2304, 2880, false) };
        assert_eq!(at(1, 2304), choose(&plain, &fb, &t, &p, true).unwrap());
        // Not batch-invariant: the plans play no part.
        assert_eq!(choose(&table, &fb, &t, &Problem::packed(DType::Bf16, 1, 2880, 2880, false), true), choose(&plain, &fb, &t, &Problem::packed(DType::Bf16, 1, 2880, 2880, false), true));
    }

    /// Transfer decides before the planner: the nearest anchors' agreed win runs
    /// their kernel; where each one's kernel would need more rounds of CTAs per SM
    /// than where it won, the call forwards (`transfer-forward`) rather than ask
    /// the planner, and standalone, with nothing lent, the planner decides.
    #[test]
    fn transfer_runs_agreed_wins_and_forwards_what_would_spill() {
        let fb = Fallback::for_arch(Arch::Sm90);
        let kernel = r#"{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true}"#;
        // 48 CTAs each (N = 768-1536 in 64-row tiles at splits 4, 3, 2), each beating
        // the vendor by 1.17-1.3x.
        let anchors: Vec<String> = [(1024, 3, 5.0, 6.0), (1536, 2, 6.0, 7.0), (768, 4, 5.0, 6.5)]
            .iter()
            .map(|(n, split, us, vendor)| format!(r#"{{"dtype":"bf16","n":{n},"k":7168,"bias":false,"m_min":1,"m_max":1,"source":"measured","kernel":{kernel},"split_k":{split},"us":{us},"vendor_us":{vendor}}}"#))
            .collect();
        let table = Tuning::parse(Arch::Sm90, &format!(r#"{{"schema":1,"arch":"sm90","planner":{},"entries":[],"anchors":[{}]}}"#, serde_json::to_string(&model()).unwrap(), anchors.join(",")), "test").unwrap();
        let p = Problem::packed(DType::Bf16, 1, 2048, 7168, false);
        let (ran, rule) = explain(&table, &fb, &h100(), &p, true);
        assert_eq!(rule, Rule::Transfer);
        // N = 2048 at split 2: 64 CTAs, one round on 132 units.
        assert!(matches!(ran, Ok(Choice::Run { split_k: 2, .. })), "{ran:?}");
        // On 48 units those 64 CTAs are a second round, where each anchor ran one.
        let small = Target { units: 48, ..h100() };
        assert_eq!(explain(&table, &fb, &small, &p, true), (Err(Error::TransferForward), Rule::Transfer));
        assert_ne!(explain(&table, &fb, &small, &p, false).1, Rule::Transfer);
    }

    /// fp8 is planned in 16-bit units (two elements each) and finds its table
    /// entry, listed in elements; an fp8 flavour the arch has no kernels for has
    /// nothing to run (so it is forwarded, never reinterpreted).
    #[test]
    fn fp8_plans_in_units_and_only_its_own_flavour() {
        let (t, fb) = (h100(), Fallback::for_arch(Arch::Sm90));
        let cat = kernels::for_arch(Arch::Sm90).kernels;
        let p = Problem::packed(DType::E4m3, 4, 2880, 4096, false);
        let kernel = cat.iter().position(|k| k.dtype == DType::E4m3 && k.config.tile_m == 8 && k.config.family == Family::Splitk).unwrap();
        let run = Choice::Run { kernel, split_k: 2 };
        let table = Tuning::single(&p, run);
        assert_eq!(choose(&table, &fb, &t, &p.unit_view(), true), Ok(run));
        // 2048 units of K: the same K blocks as a 16-bit K of 2048.
        let (u, b) = (plan(&t, run, &p.unit_view()).unwrap(), Problem::packed(DType::Bf16, 4, 2880, 2048, false));
        let twin = cat.iter().position(|k| k.dtype == DType::Bf16 && k.config == cat[kernel].config).unwrap();
        assert_eq!(u, Plan { kernel, ..plan(&t, Choice::Run { kernel: twin, split_k: 2 }, &b).unwrap() });
        // Without a table the fallback plans fp8 with fp8 kernels only.
        let Ok(Choice::Run { kernel: k, .. }) = choose(&Tuning::default(), &fb, &t, &p.unit_view(), false) else { panic!() };
        assert_eq!(cat[k].dtype, DType::E4m3);
        // With a vendor to forward to, the planner runs fp8 only at the uncalibrated margin.
        let mut planned_table = Tuning::default();
        planned_table.planner = Some(model());
        let small = Problem::packed(DType::E4m3, 4, 256, 7168, false).unit_view();
        let Planned { choice: pick, us_high: us, .. } = planned(&model(), &t, &small).unwrap();
        let want = if model().vendor_us(&small) >= crate::tuning::planner::UNCALIBRATED_MARGIN.max(model().margin) * us { Ok(pick) } else { Err(Error::PlannerForward) };
        assert_eq!(choose(&planned_table, &fb, &t, &small, true), want);
        let mut lenient = model();
        lenient.margin = 0.01;
        let vendor = lenient.vendor_us(&small);
        planned_table.planner = Some(lenient);
        let at_uncalibrated = vendor >= crate::tuning::planner::UNCALIBRATED_MARGIN * us;
        assert_eq!(choose(&planned_table, &fb, &t, &small, true).is_ok(), at_uncalibrated);
        // Per-row scales on both sides: the vendor takes at least what the table's
        // per-row entries measured at that K, so a shape the planner would forward per
        // tensor runs where that floor clears the margin.
        let slow = |k: u32| format!(r#"{{"dtype":"e4m3","n":640,"k":{k},"bias":false,"m_min":1,"m_max":1,"source":"measured","scales":"row","vendor_us":1000.0}}"#);
        let mut row_table = Tuning::parse(Arch::Sm90, &format!(r#"{{"schema":1,"arch":"sm90","entries":[{},{}]}}"#, slow(2880), slow(16384)), "test").unwrap();
        row_table.planner = Some(model());
        let vectors = crate::kernels::params::SCALE_A_VEC | crate::kernels::params::SCALE_B_VEC;
        let per_row = Problem { epilogue: vectors, ..small };
        let row_pick = planned(&model(), &t, &per_row).unwrap().choice;
        assert_eq!(choose(&row_table, &fb, &t, &per_row, true), Ok(row_pick));
        assert_eq!(choose(&row_table, &fb, &t, &small, true), want);
        let fnuz = Problem::packed(DType::E4m3Fnuz, 4, 2880, 4096, false).unit_view();
        assert!(cat.iter().all(|k| k.dtype != DType::E4m3Fnuz));
        assert_eq!(choose(&Tuning::default(), &fb, &t, &fnuz, false), Err(Error::NoKernel));
        // AMD: gfx942 runs FNUZ and gfx950 OCP, each only its own (the other is
        // never reinterpreted: no kernel, so it is forwarded).
        for (arch, own, other) in [(Arch::Gfx942, DType::E4m3Fnuz, DType::E4m3), (Arch::Gfx950, DType::E4m3, DType::E4m3Fnuz)] {
            let amd = Target { arch, backend: Backend::Hip, units: arch.default_units(), partial_capacity: 4 << 20 };
            let fb = Fallback::for_arch(arch);
            let p = |d| Problem::packed(d, 4, 2880, 4096, false).unit_view();
            let Ok(Choice::Run { kernel, .. }) = choose(&Tuning::default(), &fb, &amd, &p(own), false) else { panic!("{arch:?} runs {own:?}") };
            assert_eq!(kernels::for_arch(arch).kernels[kernel].dtype, own);
            assert_eq!(choose(&Tuning::default(), &fb, &amd, &p(other), false), Err(Error::NoKernel));
        }
    }

    /// Transfer comes before the planner: a borrowed choice that wins runs; one that does not leaves the decision to the planner
    /// (here: none, so forward) with a library present, and runs standalone.
    #[test]
    fn choose_borrows_from_anchors_before_the_planner() {
        let (t, fb) = (h100(), Fallback::for_arch(Arch::Sm90));
        let kernel = r#"{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true}"#;
        let anchor = |n: u32, split: u32, us: f64, vendor: f64| {
            format!(r#"{{"dtype":"bf16","n":{n},"k":7168,"bias":false,"m_min":1,"m_max":1,"source":"measured","kernel":{kernel},"split_k":{split},"us":{us},"vendor_us":{vendor}}}"#)
        };
        let table = |v2: f64| {
            let text = format!(r#"{{"schema":1,"arch":"sm90","entries":[],"anchors":[{},{},{}]}}"#, anchor(1024, 4, 5.0, 6.0), anchor(1536, 3, 6.0, v2), anchor(768, 5, 5.0, 6.5));
            Tuning::parse(Arch::Sm90, &text, "test").unwrap()
        };
        let p = Problem::packed(DType::Bf16, 1, 2048, 7168, false);
        let k = kernels::for_arch(Arch::Sm90).kernels.iter().position(|e| e.dtype == DType::Bf16 && e.config.tile_m == 8 && e.config.tile_n == 64 && e.config.tile_k == 128 && e.config.stages == 4 && !e.config.cluster).unwrap();
        let borrowed = Ok(Choice::Run { kernel: k, split_k: 2 });
        assert_eq!(choose(&table(7.0), &fb, &t, &p, true), borrowed);
        // One anchor's win (1.02x) is within the noise even at one token.
        assert_eq!(choose(&table(6.1), &fb, &t, &p, true), Err(Error::PlannerForward));
        assert_eq!(choose(&table(6.1), &fb, &t, &p, false), borrowed);
    }

    /// The order of `choose`: a measured band that holds, else the planner (which
    /// forwards where its predicted win is short of the margin and a library is
    /// there to forward to), else the fallback in standalone mode only.
    #[test]
    fn choose_takes_a_holding_band_then_the_planner() {
        let (t, fb) = (h100(), Fallback::for_arch(Arch::Sm90));
        let p = Problem::packed(DType::Bf16, 4, 2880, 4096, false);
        // A measured forward forwards where it can, else the planner or fallback runs it.
        let table = Tuning::single(&p, Choice::Forward);
        assert_eq!(choose(&table, &fb, &t, &p, true), Err(Error::TunedForward));
        assert_eq!(choose(&table, &fb, &t, &p, false).ok(), fb.choose(132, &p));
        // A measured run holds at its M, not at an M that doubles its token tiles.
        let run = Choice::Run { kernel: kernels::for_arch(Arch::Sm90).kernels.iter().position(|k| k.dtype == DType::Bf16 && k.config.tile_m == 8).unwrap(), split_k: 2 };
        let table = Tuning::single(&p, run);
        assert_eq!(choose(&table, &fb, &t, &p, true), Ok(run));
        // With planner constants, shapes the table does not hold at are planned.
        let mut planned_table = Tuning::single(&p, run);
        planned_table.planner = Some(model());
        let small = Problem::packed(DType::Bf16, 4, 256, 7168, false);
        let Planned { choice: pick, us_high: us, .. } = planned(&model(), &t, &small).unwrap();
        assert_eq!(choose(&planned_table, &fb, &t, &small, false), Ok(pick));
        // Forwarded where a vendor is there and the predicted win is short of the margin.
        let vendor = model().vendor_us(&small);
        let want = if vendor >= 1.15 * us { Ok(pick) } else { Err(Error::PlannerForward) };
        assert_eq!(choose(&planned_table, &fb, &t, &small, true), want);
        let mut strict = model();
        strict.margin = 100.0;
        planned_table.planner = Some(strict);
        assert_eq!(choose(&planned_table, &fb, &t, &small, true), Err(Error::PlannerForward));
        // No planner constants and a vendor to forward to: forward.
        assert_eq!(choose(&Tuning::default(), &fb, &t, &small, true), Err(Error::PlannerForward));
    }

    /// A pick runs where its slow end clears the margin; a 16-bit pick of a
    /// calibrated model also where its median prediction clears `MEDIAN_MARGIN`
    /// at `MEDIAN_TOKENS`, not an fp8 one (not fitted) nor one of an
    /// uncalibrated model (AMD), whose median and slow end are one number. fp8's
    /// margin is `FP8_MARGIN` with calibration, `UNCALIBRATED_MARGIN` without.
    #[test]
    fn the_planner_runs_a_sure_or_a_typical_win() {
        let uncalibrated = model();
        let kernel = kernels::for_arch(Arch::Sm90).kernels[0].config;
        let calibrated = CostModel { calibration: vec![schema::Calibration { kernel, token_tiles: 1, excess: 1.0, excess_high: 2.0, samples: 9 }], ..model() };
        let pick = |us: f64, us_high: f64| Planned { choice: Choice::Run { kernel: 0, split_k: 1 }, us, us_high };
        let at = |dtype, m| Problem::packed(dtype, m, 4096, 1024, false);
        let (lo, hi) = (*planner::MEDIAN_TOKENS.start(), *planner::MEDIAN_TOKENS.end());
        let (bf16, fp8, few, many) = (at(DType::Bf16, lo), at(DType::E4m3, lo), at(DType::Bf16, lo - 1), at(DType::Bf16, hi + 1));
        // Sure: the slow end beats the vendor by the margin (1.15 here; fp8 1.2, and
        // 1.3 without calibration), at any M.
        for p in [&bf16, &few, &many] {
            assert!(planner_wins(&calibrated, p, 11.6, &pick(5.0, 10.0)));
            assert!(!planner_wins(&calibrated, p, 11.4, &pick(9.6, 10.0)));
        }
        assert_eq!((planner_margin(&calibrated, DType::E4m3), planner_margin(&uncalibrated, DType::E4m3)), (planner::FP8_MARGIN, planner::UNCALIBRATED_MARGIN));
        assert!(planner_wins(&calibrated, &fp8, 12.1, &pick(9.6, 10.0)));
        assert!(!planner_wins(&calibrated, &fp8, 11.9, &pick(5.0, 10.0)));
        assert!(planner_wins(&uncalibrated, &fp8, 13.1, &pick(9.6, 10.0)));
        assert!(!planner_wins(&uncalibrated, &fp8, 12.9, &pick(5.0, 10.0)));
        // Typical: the median beats it by MEDIAN_MARGIN, where the slow end does not.
        let vendor = planner::MEDIAN_MARGIN * 8.0 + 0.01;
        assert!(vendor < calibrated.margin * 10.0);
        assert!(planner_wins(&calibrated, &bf16, vendor, &pick(8.0, 10.0)));
        assert!(planner_wins(&calibrated, &at(DType::Bf16, hi), vendor, &pick(8.0, 10.0)));
        assert!(!planner_wins(&calibrated, &bf16, vendor - 0.02, &pick(8.0, 10.0)));
        assert!(!planner_wins(&calibrated, &few, vendor, &pick(8.0, 10.0)));
        assert!(!planner_wins(&calibrated, &many, vendor, &pick(8.0, 10.0)));
        assert!(!planner_wins(&calibrated, &fp8, vendor, &pick(8.0, 10.0)));
        assert!(!planner_wins(&uncalibrated, &bf16, vendor, &pick(8.0, 10.0)));
    }

    /// sm_90 compiles the sparse family in fp8 (measured entries and `tune` may name
    /// it) but plans it only in 16 bits: its fp8 form is slower than its 16-bit
    /// twin's calibration says (`TargetFacts::vd_fp8_planned`).
    #[test]
    fn the_sm90_sparse_fp8_form_is_compiled_but_not_planned() {
        let t = h100();
        let all = kernels::for_arch(Arch::Sm90).kernels;
        assert!(all.iter().any(|k| k.dtype == DType::E4m3 && k.config.family == Family::Vdmfma));
        // A model that rates only the sparse family: in 16 bits it is planned.
        let only_sparse = crate::tuning::planner::test_model(&[(Family::Vdmfma, false, false)]);
        for m in [1, 4, 8] {
            let bf16 = planned(&only_sparse, &t, &Problem::packed(DType::Bf16, m, 4096, 4096, false)).expect("a sparse 16-bit pick");
            let Choice::Run { kernel, .. } = bf16.choice else { panic!() };
            assert_eq!(all[kernel].config.family, Family::Vdmfma);
            assert!(planned(&only_sparse, &t, &Problem::packed(DType::E4m3, m, 4096, 4096, false).unit_view()).is_none(), "M={m}");
        }
    }

    /// The split never exceeds what the partials capacity holds, nor the cluster
    /// limit, nor the counters; a split of one needs no partials.
    #[test]
    fn the_split_respects_every_cap() {
        let cat = kernels::for_arch(Arch::Sm90).kernels;
        let p = Problem::packed(DType::Bf16, 8, 7168, 8192, false);
        for (i, k) in cat.iter().enumerate().filter(|(_, k)| k.dtype == DType::Bf16) {
            for asked in [1, 2, 7, 16, 64, 1000] {
                for capacity in [0usize, 1 << 16, 4 << 20] {
                    let t = Target { partial_capacity: capacity, ..h100() };
                    let plan = plan(&t, Choice::Run { kernel: i, split_k: asked }, &p).unwrap();
                    assert!(plan.split_k >= 1 && plan.split_k <= asked.clamp(1, MAX_SPLIT), "{}", k.name);
                    assert_eq!(plan.grid[1], plan.split_k);
                    if k.config.cluster {
                        assert!(plan.split_k <= MAX_CLUSTER_SPLIT);
                        assert_eq!(plan.partial_bytes, 0);
                    } else {
                        assert!(plan.partial_bytes <= capacity, "{} split {} capacity {capacity}", k.name, plan.split_k);
                    }
                    assert_eq!(plan.cluster, k.config.cluster && plan.split_k > 1);
                }
            }
        }
    }

    /// Batch-invariant planning fixes the summation class and the split from
    /// (dtype, N, K) alone: every M from 1 to 128 gets a kernel of one class and a
    /// launch plan that keeps that split, with or without planner constants, and
    /// never a forward.
    #[test]
    fn batch_invariant_plans_fix_the_summation_order_for_every_m() {
        let (t, fb) = (h100(), Fallback::for_arch(Arch::Sm90));
        let cat = kernels::for_arch(Arch::Sm90).kernels;
        let mut planned_table = Tuning::default();
        planned_table.planner = Some(model());
        // A measured winner at M = 1 for one of the shapes: planning leans on it
        // and still keeps one class and split for every M.
        let winner = Choice::Run { kernel: cat.iter().position(|k| k.dtype == DType::Bf16 && k.config.warps[2] == 1 && k.config.family == Family::Splitk).unwrap(), split_k: 2 };
        let mut measured_table = Tuning::single(&Problem::packed(DType::Bf16, 1, 2880, 2880, false), winner);
        measured_table.planner = Some(model());
        for table in [&planned_table, &measured_table, &Tuning::default()] {
            for (n, k) in [(64, 7168), (2880, 2880), (16384, 6656), (1000, 1032)] {
                let mut seen = None;
                for m in 1..=128 {
                    let p = Problem { batch_invariant: true, ..Problem::packed(DType::Bf16, m, n, k, false) };
                    let choice = choose(table, &fb, &t, &p, true).unwrap();
                    let Choice::Run { kernel, split_k } = choice else { panic!("M={m}: {choice:?}") };
                    let pl = plan(&t, choice, &p).unwrap();
                    assert_eq!(pl.split_k, split_k, "N={n} K={k} M={m}: the plan lowered the split");
                    let key = (planner::summation_class(&cat[kernel].config), split_k);
                    assert_eq!(*seen.get_or_insert(key), key, "N={n} K={k} M={m}");
                    let Choice::Run { kernel: wk, split_k: ws } = winner else { unreachable!() };
                    if std::ptr::eq(table, &measured_table) && (n, k, m) == (2880, 2880, 1) && key == (planner::summation_class(&cat[wk].config), ws) {
                        assert_eq!(choice, winner, "the measured winner runs where its class and split were picked");
                    }
                }
            }
        }
    }
}

