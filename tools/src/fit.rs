//! `skinnylt fit`: fits the planner's cost model (`skinnylt::tuning::planner`) of
//! one device to measurements, `tune --dump` lines: every candidate's time (the
//! kernels' constants) and the vendor's (its model). Writes the constants into a
//! tuning table's `planner` section, keeping its entries.
//!
//! The fit minimises the log error of every measured candidate, with underestimates
//! weighted twice (a candidate predicted faster than it is gets picked) and a
//! robust loss (a few outliers must not move the rest), by Levenberg-Marquardt with
//! bounds.

use std::collections::{HashMap, HashSet};

use skinnylt::engine::{Planned, planner_wins};
use skinnylt::gpu::Arch;
use skinnylt::kernels;
use skinnylt::route::{DType, Problem};
use skinnylt::tuning::planner::{Device, MIN_EXCESS_US, SPREAD_QUANTILE, bytes, token_tiles};
use skinnylt::tuning::{Choice, TRANSFER_RULE, Transfer, TransferRule, Tuning};
use skinnylt::tuning::schema::{Calibration, CostModel, Entry, Family, KernelConfig, KindCost, ScaleKind, TuningFile, VendorCost, target};

use crate::tune::Measurement;

#[derive(clap::Args)]
pub struct Args {
    /// `tune --dump` files (repeatable). Without any, only what the table's own
    /// entries determine is refitted (the per-row vendor model), the rest of its
    /// planner kept.
    #[arg(long = "from")]
    pub files: Vec<String>,
    /// The arch the measurements are of (gfx942, gfx950, sm90).
    #[arg(long)]
    pub arch: String,
    /// Compute units of the device measured (default: the arch's common part).
    #[arg(long)]
    pub units: Option<u32>,
    /// The tuning table whose `planner` and `anchors` sections are written (its
    /// entries are kept).
    #[arg(long)]
    pub out: String,
    /// Run on an unlisted shape only where the predicted win clears this factor
    /// (with calibration: at the slow end of the kernel's measured spread).
    #[arg(long, default_value_t = 1.1)]
    pub margin: f64,
    /// Fit the model that counts the token rows a tile holds, at a fitted cost per
    /// row (`token_row_weight`), instead of `tile_m` rows at a weight row's cost.
    #[arg(long = "token-rows")]
    pub token_rows: bool,
    /// Also score the planner on shapes left out of the fit, in this many groups
    /// (each group is refitted without its shapes).
    #[arg(long = "cross-validate", default_value_t = 0)]
    pub cross_validate: usize,
    /// Fit nothing: score the planner `--out` already holds on the measurements
    /// (its picks against the best measured, standalone and deployed, as a fit
    /// reports them), to compare a shipped model with a refit on the same data.
    #[arg(long, conflicts_with_all = ["token_rows", "cross_validate"])]
    pub score: bool,
    /// Leave the table's anchors as they are (refit the planner alone) instead of
    /// writing the measurements' winners as anchors. Anchors lend their kernel to
    /// shapes nobody measured, so refresh them only with a held-out check of what
    /// they lend (tuning/README.md, transfer).
    #[arg(long = "keep-anchors", requires = "files", conflicts_with = "score")]
    pub keep_anchors: bool,
    /// Fit nothing: write the measurements' winners as anchors (the table's anchors
    /// for problems the files do not measure kept) and leave the planner as it is:
    /// another dtype or token count added to a table whose planner stays.
    #[arg(long = "anchors-only", requires = "files", conflicts_with_all = ["score", "keep_anchors", "cross_validate", "token_rows"])]
    pub anchors_only: bool,
    /// Fit no constant: calibrate, under the table's constants as they are, the
    /// kernels and token-tile counts its planner has no calibration for (kernels
    /// added since its fit), from these measurements; every other entry, and the
    /// anchors, kept. Without an entry the planner never plans a kernel.
    #[arg(long = "add-calibration", requires = "files", conflicts_with_all = ["score", "keep_anchors", "cross_validate", "token_rows", "anchors_only"])]
    pub add_calibration: bool,
    /// Fit nothing: write measured batch-invariant plans (the table's `invariant`
    /// section) for the 16-bit shapes these files measure, where a summation class
    /// and split lose at least `INVARIANT_GAIN` less than the planner's own pair
    /// against the default (measured times where measured, the model's elsewhere);
    /// the planner, entries and anchors kept.
    #[arg(long = "invariant", requires = "files", conflicts_with_all = ["score", "keep_anchors", "cross_validate", "token_rows", "anchors_only", "add_calibration"])]
    pub invariant: bool,
}

pub fn run(a: &Args) -> i32 {
    match fit(a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("fit failed: {e}");
            1
        }
    }
}

/// One measured candidate.
#[derive(Clone)]
struct Sample {
    device: String,
    p: Problem,
    c: KernelConfig,
    split: u32,
    us: f64,
}

/// The vendor's time on one problem.
type VendorSample = (Problem, f64);

fn read(files: &[String]) -> Result<(Vec<Sample>, Vec<VendorSample>), String> {
    let (mut samples, mut vendor) = (Vec::new(), Vec::new());
    for path in files {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let m: Measurement = serde_json::from_str(line).map_err(|e| format!("{path}:{}: {e}", i + 1))?;
            let p = Problem::packed(m.dtype, m.m, m.n, m.k, m.bias);
            match (m.kernel, m.split, m.us, m.vendor_us) {
                (Some(c), Some(split), Some(us), _) if us.is_finite() && us > 0.0 => samples.push(Sample { device: m.device.clone(), p, c, split, us }),
                (None, _, _, Some(v)) if v.is_finite() && v > 0.0 => vendor.push((p, v)),
                _ => {}
            }
        }
    }
    Ok((samples, vendor))
}

fn fit(a: &Args) -> Result<(), String> {
    let arch = Arch::from_name(&a.arch).ok_or_else(|| format!("unknown arch {}", a.arch))?;
    if a.files.is_empty() {
        return refit_vendor_row(a, arch);
    }
    let (every_sample, every_vendor) = read(&a.files)?;
    let mut file = read_table(&a.out)?;
    if file.arch != arch.name() {
        return Err(format!("{} is a table for {}, the measurements are of {}", a.out, file.arch, arch.name()));
    }
    if a.anchors_only {
        file.anchors = anchors(&problems(&every_sample, &every_vendor), &file, true);
        write_table(&a.out, &file)?;
        println!("{} anchors (measured winners of shapes the entries do not list) written to {}; its planner as it was", file.anchors.len(), a.out);
        return Ok(());
    }
    // The planner is fitted to 16-bit measurements (fp8 kernels are their 16-bit
    // twins on half the bytes and plan with their calibration: docs/design.md,
    // section 3.5); every dtype's winners become anchors.
    let samples: Vec<Sample> = every_sample.iter().filter(|s| !s.p.dtype.is_fp8()).cloned().collect();
    let vendor: Vec<VendorSample> = every_vendor.iter().filter(|(p, _)| !p.dtype.is_fp8()).copied().collect();
    if samples.is_empty() || vendor.is_empty() {
        return Err("no candidate or no vendor measurements in the files".into());
    }
    let facts = target(arch.name()).ok_or("no target facts")?;
    let dev = Device { units: a.units.unwrap_or(arch.default_units()), facts };
    if a.invariant {
        file.invariant = invariant_plans(&file, arch, &dev, &samples, &vendor)?;
        write_table(&a.out, &file)?;
        println!("{} batch-invariant plan entries written to {} (planner, entries and anchors as they were)", file.invariant.len(), a.out);
        return Ok(());
    }
    if a.add_calibration {
        let model = file.planner.as_mut().ok_or_else(|| format!("{} has no planner constants to calibrate under", a.out))?;
        let added = add_calibration(model, &dev, &samples);
        for c in &added {
            println!("calibrated {:?} at {} token tile(s): excess {:.2}, slow end {:.2}, {} measurements", c.kernel, c.token_tiles, c.excess, c.excess_high, c.samples);
        }
        write_table(&a.out, &file)?;
        println!("{} calibration entries added to {} (constants, other entries and anchors as they were)", added.len(), a.out);
        return Ok(());
    }
    if a.score {
        let model = file.planner.ok_or_else(|| format!("{} has no planner constants to score", a.out))?;
        let measured = problems(&samples, &vendor);
        println!("{} on {} candidates of {} problems: {}", a.out, samples.len(), measured.len(), model.source);
        Scores::of(&model, &dev, &measured).print("calibrated");
        Scores::of(&CostModel { calibration: Vec::new(), ..model }, &dev, &measured).print("uncalibrated");
        return Ok(());
    }
    let mut devices: Vec<&str> = samples.iter().map(|s| s.device.as_str()).collect();
    devices.sort();
    devices.dedup();
    let source = format!("fitted to {} candidate and {} vendor times measured with tune --dump on {}", samples.len(), vendor.len(), devices.join(", "));
    let model = CostModel { source, vendor_row: refitted_vendor_row(&file), ..fit_all(arch, a.margin, a.token_rows, &dev, &samples, &vendor) };
    println!("{} candidates on {} problems, {} kernel calibrations", samples.len(), vendor.len(), model.calibration.len());
    let mut errors: Vec<f64> = samples.iter().filter_map(|s| Some((model.predict(&dev, &s.c, s.split, &s.p)? / s.us).ln().abs())).collect();
    errors.sort_by(f64::total_cmp);
    println!("median prediction error {:.1} % (calibrated, in sample)", (errors[errors.len() / 2].exp() - 1.0) * 100.0);
    let measured = problems(&samples, &vendor);
    Scores::of(&model, &dev, &measured).print("in sample, calibrated");
    Scores::of(&CostModel { calibration: Vec::new(), ..model.clone() }, &dev, &measured).print("in sample, uncalibrated");
    fallback_report(&dev, &samples);
    let mut verr: Vec<f64> = vendor.iter().map(|(p, us)| (model.vendor_us(p) / us).ln().abs()).collect();
    verr.sort_by(f64::total_cmp);
    println!("vendor model: median error {:.1} %", (verr[verr.len() / 2].exp() - 1.0) * 100.0);
    if a.cross_validate > 1 {
        let table_rule = TransferRule::of(&file);
        cross_validate(a.cross_validate, arch, a.margin, a.token_rows, &dev, &samples, &vendor, table_rule);
        let fp8_samples: Vec<Sample> = every_sample.iter().filter(|s| s.p.dtype.is_fp8()).cloned().collect();
        let fp8 = problems(&fp8_samples, &every_vendor);
        if !fp8.is_empty() {
            let shapes = shape_list(&fp8.iter().map(|pr| pr.p).collect::<Vec<_>>());
            println!("fp8:");
            transfer_scores(a.cross_validate, arch, &fp8, |p| fold_of(&shapes, a.cross_validate, p), table_rule);
        }
    }
    file.planner = Some(model);
    if a.keep_anchors {
        println!("{} anchors kept as they were", file.anchors.len());
    } else {
        file.anchors = anchors(&problems(&every_sample, &every_vendor), &file, false);
        println!("{} anchors (measured winners of shapes the entries do not list)", file.anchors.len());
    }
    write_table(&a.out, &file)?;
    println!("planner constants written to {}", a.out);
    Ok(())
}

fn read_table(path: &str) -> Result<TuningFile, String> {
    serde_json::from_str(&std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?).map_err(|e| format!("{path}: {e}"))
}

fn write_table(path: &str, file: &TuningFile) -> Result<(), String> {
    let text = serde_json::to_string_pretty(file).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{path}: {e}"))
}

/// `fit` without measurements: the per-row vendor model from the table's own
/// per-row entries, the rest of its planner as it is.
fn refit_vendor_row(a: &Args, arch: Arch) -> Result<(), String> {
    let mut file = read_table(&a.out)?;
    if file.arch != arch.name() {
        return Err(format!("{} is a table for {}, not {}", a.out, file.arch, arch.name()));
    }
    let row = vendor_row(&file);
    let planner = file.planner.as_mut().ok_or_else(|| format!("{} has no planner constants to add a per-row vendor model to", a.out))?;
    planner.vendor_row = row;
    match row {
        Some(_) => println!("per-row vendor model fitted to the per-row entries of {}", a.out),
        None => println!("{}: no measured per-row entries; no per-row vendor model", a.out),
    }
    write_table(&a.out, &file)
}

/// The measured vendor times of a table's per-row fp8 entries (each at its band's
/// first token count, where it was measured), as problems in units (tables list K
/// in elements).
fn row_vendor_samples(file: &TuningFile) -> Vec<VendorSample> {
    file.entries
        .iter()
        .filter(|e| e.source == "measured" && e.scales == ScaleKind::Row && e.dtype.is_fp8())
        .filter_map(|e| Some((Problem::packed(e.dtype, e.m_min, e.n, e.k / e.dtype.per_unit(), e.bias), e.vendor_us.filter(|v| v.is_finite() && *v > 0.0)?)))
        .collect()
}

/// The fewest distinct (N, K) shapes a per-row vendor model is fitted to. The
/// public grid's per-row entries alone (17 shapes, 6 Ks: the H200's tables) fitted
/// a model under which held-out per-row GEMMs ran on the H200 at down to 0.74x (13
/// of 206 below 0.97x, most at M = 100); the grid's and the training models'
/// small-K projections (40 shapes, 19 Ks: the H100's) one below, at 0.89x. The
/// same 40 measured on an H200 fitted one under which 19 of the 106 held-out
/// GEMMs it ran at M = 24-100 (N >= 16032) were below 0.97x, down to 0.75x, so
/// the H200's table has those 40 entries but no model (`refitted_vendor_row`
/// keeps it so): the count is necessary, not sufficient.
const MIN_ROW_SHAPES: usize = 32;

/// The per-row vendor model a full refit writes: refitted where the table has one,
/// none where it has none (a table can hold enough per-row shapes for a model that
/// still loses, as the H200's 40 do; `MIN_ROW_SHAPES`). `fit` without measurement
/// files fits one on request.
fn refitted_vendor_row(file: &TuningFile) -> Option<VendorCost> {
    if file.planner.as_ref().is_some_and(|p| p.vendor_row.is_some()) {
        return vendor_row(file);
    }
    println!("the table has no per-row vendor model and keeps none (`fit --arch ARCH --out TABLE` alone fits one)");
    None
}

/// The per-row vendor model (`CostModel::vendor_row`), fitted as the 16-bit one is,
/// to the table's per-row entries; `None` where they hold fewer than
/// `MIN_ROW_SHAPES` shapes. Its error on them is printed.
fn vendor_row(file: &TuningFile) -> Option<VendorCost> {
    let samples = row_vendor_samples(file);
    let mut shapes: Vec<(u32, u32)> = samples.iter().map(|(p, _)| (p.n, p.k)).collect();
    shapes.sort();
    shapes.dedup();
    if shapes.len() < MIN_ROW_SHAPES {
        println!("{} per-row shapes measured, fewer than {MIN_ROW_SHAPES}: no per-row vendor model", shapes.len());
        return None;
    }
    let v = fit_vendor(&samples);
    let mut ratios: Vec<f64> = samples.iter().map(|(p, us)| v.us(p) / us).collect();
    ratios.sort_by(f64::total_cmp);
    let q = |f: f64| ratios[((ratios.len() - 1) as f64 * f).round() as usize];
    println!("per-row vendor model on {} per-row entries: predicted/measured {:.2} (10 %), {:.2} (median), {:.2} (90 %)", samples.len(), q(0.1), q(0.5), q(0.9));
    Some(v)
}

/// The kernels' constants, their calibration and the vendor model, fitted to
/// `samples` and `vendor`.
fn fit_all(arch: Arch, margin: f64, token_rows: bool, dev: &Device, samples: &[Sample], vendor: &[VendorSample]) -> CostModel {
    let mut kinds: Vec<(Family, bool, bool)> = samples.iter().map(|s| (s.c.family, s.c.cluster, s.c.tma)).collect();
    kinds.sort();
    kinds.dedup();
    let space = Space { kinds, token_rows, template: unit_model(arch, margin) };
    let model = space.solve(dev, samples);
    let model = CostModel { calibration_floor_tbs: calibration_floor_tbs(samples), ..model };
    let calibration = calibrate(&model, dev, samples);
    CostModel { vendor: fit_vendor(vendor), calibration, ..model }
}

/// The fastest stream any measurement reached (TB/s of `planner::bytes`), the floor
/// calibration measures excess above (`CostModel::calibration_floor_tbs`). Scored on
/// shapes left out of the H100 fit, against the fitted `dram_tbs`: pick within
/// 1.084x of the best candidate (1.089x), standalone 1.078x (1.073x), deployed the same.
fn calibration_floor_tbs(samples: &[Sample]) -> Option<f64> {
    samples.iter().map(|s| bytes(&s.p) / (s.us * 1e6)).max_by(f64::total_cmp)
}

/// The fewest measurements a calibration entry is the median of.
const MIN_CALIBRATION_SAMPLES: usize = 3;

/// Per kernel and token-tile count (`planner::token_tiles`): the median and the
/// `SPREAD_QUANTILE` quantile of the measured over the modelled time above the
/// floor (`CostModel::floor_us`).
fn calibrate(model: &CostModel, dev: &Device, samples: &[Sample]) -> Vec<Calibration> {
    let mut by: HashMap<(KernelConfig, u32), Vec<f64>> = HashMap::new();
    for s in samples {
        let Some(t) = model.modelled(dev, &s.c, s.split, &s.p) else { continue };
        let floor = model.calibration_floor_us(&s.p);
        let ratio = (s.us - floor).max(MIN_EXCESS_US) / (t - floor).max(MIN_EXCESS_US);
        by.entry((s.c, token_tiles(&s.c, s.p.m))).or_default().push(ratio.ln());
    }
    let mut out: Vec<Calibration> = by
        .into_iter()
        .filter(|(_, v)| v.len() >= MIN_CALIBRATION_SAMPLES)
        .map(|((kernel, token_tiles), mut v)| {
            v.sort_by(f64::total_cmp);
            let high = v[((v.len() - 1) as f64 * SPREAD_QUANTILE).round() as usize];
            Calibration { kernel, token_tiles, excess: v[v.len() / 2].exp(), excess_high: high.exp(), samples: v.len() as u32 }
        })
        .collect();
    // A stable order, so that a refit changes the file only where a number moved.
    out.sort_by_key(|c| (format!("{:?}", c.kernel), c.token_tiles));
    out
}

/// Adds to `model` the calibration of every (kernel, token-tile count) that
/// `samples` measure and it lacks, under its constants and floor as they are;
/// returns the entries added. Existing entries are never touched, so decisions
/// the planner made before only change where a newly calibrated kernel now
/// competes.
fn add_calibration(model: &mut CostModel, dev: &Device, samples: &[Sample]) -> Vec<Calibration> {
    let have: HashSet<(KernelConfig, u32)> = model.calibration.iter().map(|c| (c.kernel, c.token_tiles)).collect();
    let added: Vec<Calibration> = calibrate(model, dev, samples).into_iter().filter(|c| !have.contains(&(c.kernel, c.token_tiles))).collect();
    model.calibration.extend(added.iter().copied());
    model.calibration.sort_by_key(|c| (format!("{:?}", c.kernel), c.token_tiles));
    added
}

/// The least geometric-mean gain (over the token counts weighed) for which a
/// measured batch-invariant plan replaces the planner's own pair.
const INVARIANT_GAIN: f64 = 1.01;

/// Measured batch-invariant plans (`TuningFile::invariant`) for the 16-bit shapes
/// `samples` measure: per (dtype, N, K, bias), the (summation class, split) whose
/// loss against the default, summed over `planner::INVARIANT_MS` and the token
/// counts measured, is least, where it beats the planner's own pair (what
/// `engine::choose` runs without these plans) by `INVARIANT_GAIN` in geometric
/// mean. At a measured M a pair's time is its fastest measured kernel's and the
/// default is the faster of the vendor and the fastest candidate; elsewhere both
/// are the model's (`InvariantCatalog::loss`). One entry per M where the pair was
/// measured, bf16 mirrored to f16.
fn invariant_plans(file: &TuningFile, arch: Arch, dev: &Device, samples: &[Sample], vendor: &[VendorSample]) -> Result<Vec<Entry>, String> {
    use skinnylt::engine;
    use skinnylt::tuning::planner::{INVARIANT_MS, InvariantCatalog, SummationClass, best, invariant_splits, summation_class};
    let model = file.planner.as_ref().ok_or("the table has no planner constants to plan with")?;
    let without = TuningFile { invariant: Vec::new(), ..file.clone() };
    let table = Tuning::parse(arch, &serde_json::to_string(&without).map_err(|e| e.to_string())?, "fit").map_err(|e| format!("the table: {e}"))?;
    let target = crate::plan::target(arch, dev.units, &skinnylt::config::Config::from_lookup(|_| None));
    let fallback = skinnylt::tuning::fallback::Fallback::for_arch(arch);
    let all = kernels::for_arch(arch).kernels;
    let catalog: Vec<_> = all.iter().enumerate().map(|(i, k)| (i, k.dtype, &k.config)).collect();
    let mut groups: HashMap<(DType, u32, u32, bool), Vec<Measured>> = HashMap::new();
    for pr in problems(samples, vendor).into_iter().filter(|pr| !pr.p.dtype.is_fp8()) {
        groups.entry((pr.p.dtype, pr.p.n, pr.p.k, pr.p.has_bias())).or_default().push(pr);
    }
    let mut keys: Vec<_> = groups.keys().copied().collect();
    keys.sort();
    let (mut out, mut logs) = (Vec::new(), (Vec::new(), Vec::new()));
    for key in keys {
        let group = &groups[&key];
        let p = Problem { batch_invariant: true, ..group[0].p };
        let largest = Problem { m: *INVARIANT_MS.last().unwrap(), ..p };
        let fits = |k: usize, s: u32| engine::plan(&target, Choice::Run { kernel: k, split_k: s }, &largest).is_ok_and(|pl| pl.split_k == s);
        let kernels = InvariantCatalog::new(model, dev, &catalog, p.dtype, fits);
        let measured = |m: u32| group.iter().find(|pr| pr.p.m == m);
        // The token counts weighed and the default's time at each.
        let mut ms: Vec<u32> = INVARIANT_MS.iter().copied().chain(group.iter().map(|pr| pr.p.m)).collect();
        ms.sort();
        ms.dedup();
        let mut reference = Vec::with_capacity(ms.len());
        for &m in &ms {
            let r = match measured(m) {
                Some(pr) => pr.candidates.iter().map(|c| c.us).fold(pr.vendor_us, f64::min),
                None => best(model, dev, catalog.iter().copied(), &Problem { m, ..p }, |_, s| s).ok_or("no kernel the model plans")?.1,
            };
            reference.push((m, r));
        }
        // The pair's fastest measured kernel at M: (config, µs).
        let fastest_measured = |class: SummationClass, s: u32, m: u32| {
            measured(m)?
                .candidates
                .iter()
                .filter(|c| c.split == s && summation_class(&c.c) == class && kernels::index_of(arch, p.dtype, &c.c).is_some_and(|k| fits(k, s)))
                .min_by(|x, y| x.us.total_cmp(&y.us))
        };
        let loss = |class, s| kernels.loss(&p, class, s, &reference, |m| fastest_measured(class, s, m).map(|c| c.us));
        let Ok(Choice::Run { kernel, split_k }) = engine::choose(&table, &fallback, &target, &Problem { m: 1, ..p }, false) else { continue };
        let own = (summation_class(&all[kernel].config), split_k);
        let Some(own_loss) = loss(own.0, own.1) else { continue };
        let mut pick = (own_loss, own);
        for class in kernels.classes() {
            for s in invariant_splits(&p) {
                if let Some(l) = loss(class, s).filter(|&l| l < pick.0) {
                    pick = (l, (class, s));
                }
            }
        }
        let n = ms.len() as f64;
        logs.0.push(own_loss / n);
        if pick.1 == own || own_loss - pick.0 < n * INVARIANT_GAIN.ln() {
            logs.1.push(own_loss / n);
            continue;
        }
        logs.1.push(pick.0 / n);
        let (class, s) = pick.1;
        println!("N = {:5}, K = {:5}{}: class {class:?} at split {s} loses {:.3}x against the default, the planner's {:?} at split {} {:.3}x", key.1, key.2, if key.3 { " + bias" } else { "" }, (pick.0 / n).exp(), own.0, own.1, (own_loss / n).exp());
        for pr in group {
            let Some(c) = fastest_measured(class, s, pr.p.m) else { continue };
            // bf16 plans mirrored to f16 (twin kernels, the same sums), unless f16 was measured itself.
            let mirror = p.dtype == DType::Bf16 && !groups.contains_key(&(DType::F16, key.1, key.2, key.3)) && kernels::index_of(arch, DType::F16, &c.c).is_some();
            for dtype in std::iter::once(p.dtype).chain(mirror.then_some(DType::F16)) {
                out.push(Entry {
                    dtype,
                    n: key.1,
                    k: key.2,
                    bias: key.3,
                    m_min: pr.p.m,
                    m_max: pr.p.m,
                    kernel: Some(c.c),
                    split_k: s,
                    source: "measured".into(),
                    us: Some(c.us),
                    vendor_us: Some(pr.vendor_us),
                    scales: ScaleKind::Tensor,
                });
            }
        }
    }
    let geo = |v: &[f64]| (v.iter().sum::<f64>() / v.len().max(1) as f64).exp();
    println!("batch-invariant loss against the default over {} shapes (measured where measured, modelled elsewhere): the planner's pairs {:.3}x, with the measured plans {:.3}x", logs.0.len(), geo(&logs.0), geo(&logs.1));
    Ok(out)
}

/// One measured problem: its candidates and the vendor's time.
struct Measured<'a> {
    candidates: Vec<&'a Sample>,
    vendor_us: f64,
    p: Problem,
}

fn problems<'a>(samples: &'a [Sample], vendor: &[VendorSample]) -> Vec<Measured<'a>> {
    let key = |p: &Problem| (p.dtype, p.m, p.n, p.k, p.has_bias());
    let mut by: HashMap<(DType, u32, u32, u32, bool), Vec<&Sample>> = HashMap::new();
    for s in samples {
        by.entry(key(&s.p)).or_default().push(s);
    }
    vendor.iter().filter_map(|(p, v)| Some(Measured { candidates: by.remove(&key(p))?, vendor_us: *v, p: *p })).collect()
}

/// The measured problems' winners as anchors (`TuningFile::anchors`), for the
/// shapes the table's entries do not list: each at its M, its fastest candidate
/// even where the vendor won, with both times; bf16 ones mirrored to f16 as the
/// tuner mirrors entries. The table's earlier anchors stay where these files do
/// not measure their problem (another dtype, another token count), so that a fit
/// to new measurements does not forget the old ones; those of shapes the entries
/// now list too where `keep_listed` (--anchors-only: what is not measured again
/// stays exactly as it was), else they go.
fn anchors(measured: &[Measured], file: &TuningFile, keep_listed: bool) -> Vec<Entry> {
    let listed: HashSet<(DType, u32, u32, bool)> = file.entries.iter().map(|e| (e.dtype, e.n, e.k, e.bias)).collect();
    let anchor_key = |e: &Entry| (e.dtype, e.n, e.k, e.bias, e.m_min);
    let mut out = Vec::new();
    for pr in measured {
        let p = &pr.p;
        if listed.contains(&(p.dtype, p.n, p.k, p.has_bias())) {
            continue;
        }
        let Some(best) = pr.candidates.iter().min_by(|a, b| a.us.total_cmp(&b.us)) else { continue };
        let e = Entry {
            dtype: p.dtype,
            n: p.n,
            k: p.k,
            bias: p.has_bias(),
            m_min: p.m,
            m_max: p.m,
            kernel: Some(best.c),
            split_k: best.split,
            source: "measured".into(),
            us: Some(crate::tune::hundredths(best.us)),
            vendor_us: Some(crate::tune::hundredths(pr.vendor_us)),
            scales: ScaleKind::Tensor,
        };
        if p.dtype == DType::Bf16 {
            out.push(Entry { dtype: DType::F16, source: "measured (bf16)".into(), ..e.clone() });
        }
        out.push(e);
    }
    let fresh: HashSet<_> = out.iter().map(anchor_key).collect();
    out.extend(file.anchors.iter().filter(|e| !fresh.contains(&anchor_key(e)) && (keep_listed || !listed.contains(&(e.dtype, e.n, e.k, e.bias)))).cloned());
    out.sort_by_key(anchor_key);
    out
}

/// How a model's picks fare on measured problems: the pick among the measured
/// candidates against the best of them, against the vendor when it must run
/// everything (standalone), and as deployed (run where the predicted win clears
/// the margin at the slow end of the pick's calibration, else the vendor's time).
struct Scores {
    regret: Vec<f64>,
    alone: Vec<f64>,
    deployed: Vec<f64>,
    /// The problems deployed below 0.97x, with that speedup and the vendor's time.
    losses: Vec<(Problem, f64, f64)>,
    margin: f64,
}

/// One line per problem a routing ran below 0.97x of the vendor: where to look first.
fn print_losses(losses: &[(Problem, f64, f64)]) {
    for (p, speedup, vendor_us) in losses {
        println!("    below 0.97: M = {}, N = {}, K = {}{}, {:?}: {speedup:.2}x (vendor {vendor_us:.2} us)", p.m, p.n, p.k, if p.has_bias() { ", bias" } else { "" }, p.dtype);
    }
}

impl Scores {
    fn of<'a: 'b, 'b>(model: &CostModel, dev: &Device, problems: impl IntoIterator<Item = &'b Measured<'a>>) -> Scores {
        let mut s = Scores { regret: Vec::new(), alone: Vec::new(), deployed: Vec::new(), losses: Vec::new(), margin: model.margin };
        s.add(model, dev, problems);
        s
    }

    fn add<'a: 'b, 'b>(&mut self, model: &CostModel, dev: &Device, problems: impl IntoIterator<Item = &'b Measured<'a>>) {
        for pr in problems {
            // (predicted, measured, predicted at the slow end) per candidate.
            let predicted = pr.candidates.iter().filter_map(|c| Some((model.predict(dev, &c.c, c.split, &c.p)?, c.us, model.predict_high(dev, &c.c, c.split, &c.p)?)));
            let Some((predicted_us, us, us_high)) = predicted.min_by(|a, b| a.0.total_cmp(&b.0)) else { continue };
            let best = pr.candidates.iter().map(|c| c.us).fold(f64::INFINITY, f64::min);
            self.regret.push(us / best);
            self.alone.push(pr.vendor_us / us);
            // Judged as routing judges it (the choice itself does not enter the verdict).
            let pick = Planned { choice: Choice::Run { kernel: 0, split_k: 1 }, us: predicted_us, us_high };
            let deployed = if planner_wins(model, &pr.p, model.vendor_us(&pr.p), &pick) { pr.vendor_us / us } else { 1.0 };
            if deployed < 0.97 {
                self.losses.push((pr.p, deployed, pr.vendor_us));
            }
            self.deployed.push(deployed);
        }
    }

    fn print(&self, what: &str) {
        let geo = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp();
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "{what}: pick against the best measured {:.3} (worst {:.2}); standalone over the vendor {:.3} (min {:.2}); deployed (margin {:.2}, and the median rule): {:.3} (min {:.2}, {} of {} below 0.97)",
            geo(&self.regret),
            max(&self.regret),
            geo(&self.alone),
            min(&self.alone),
            self.margin,
            geo(&self.deployed),
            min(&self.deployed),
            self.deployed.iter().filter(|&&d| d < 0.97).count(),
            self.deployed.len()
        );
        print_losses(&self.losses);
    }
}

/// Leave-shapes-out cross-validation: the (N, K, bias) shapes in `folds` groups;
/// each group's problems are scored by a model fitted (constants, calibration,
/// vendor) without any of that group's measurements: how the planner does on
/// shapes it has never seen.
/// The distinct (N, K, bias) shapes of `problems`, sorted: what folds are made of.
fn shape_list(problems: &[Problem]) -> Vec<(u32, u32, bool)> {
    let mut shapes: Vec<_> = problems.iter().map(|p| (p.n, p.k, p.has_bias())).collect();
    shapes.sort();
    shapes.dedup();
    shapes
}

/// The fold of `p`'s shape among `shapes`.
fn fold_of(shapes: &[(u32, u32, bool)], folds: usize, p: &Problem) -> usize {
    shapes.iter().position(|s| *s == (p.n, p.k, p.has_bias())).unwrap_or(0) % folds
}

#[allow(clippy::too_many_arguments)]
fn cross_validate(folds: usize, arch: Arch, margin: f64, token_rows: bool, dev: &Device, samples: &[Sample], vendor: &[VendorSample], table_rule: TransferRule) {
    let shapes = shape_list(&vendor.iter().map(|(p, _)| *p).collect::<Vec<_>>());
    let fold_of = |p: &Problem| fold_of(&shapes, folds, p);
    let fitted: Vec<CostModel> = std::thread::scope(|scope| {
        let jobs: Vec<_> = (0..folds)
            .map(|f| {
                scope.spawn(move || {
                    let train: Vec<Sample> = samples.iter().filter(|s| fold_of(&s.p) != f).cloned().collect();
                    let train_vendor: Vec<VendorSample> = vendor.iter().filter(|(p, _)| fold_of(p) != f).copied().collect();
                    fit_all(arch, margin, token_rows, dev, &train, &train_vendor)
                })
            })
            .collect();
        jobs.into_iter().map(|j| j.join().expect("a fold's fit")).collect()
    });
    let all = problems(samples, vendor);
    let (mut calibrated, mut plain) = (Scores::of(&fitted[0], dev, []), Scores::of(&fitted[0], dev, []));
    for (f, model) in fitted.iter().enumerate() {
        let test = || all.iter().filter(|pr| fold_of(&pr.p) == f);
        calibrated.add(model, dev, test());
        plain.add(&CostModel { calibration: Vec::new(), ..model.clone() }, dev, test());
    }
    calibrated.print(&format!("{folds}-fold, shapes left out, calibrated"));
    plain.print(&format!("{folds}-fold, shapes left out, uncalibrated"));
    transfer_scores(folds, arch, &all, fold_of, table_rule);
}

/// One problem transfer scored: the vendor's time, the speedup of the choice the
/// default rule borrows (what runs standalone), and for each rule whether it runs
/// its own choice there and that choice's speedup.
struct Scored {
    vendor_us: f64,
    alone: f64,
    runs: Vec<(bool, f64)>,
    m: u32,
}

/// Transfer (`Tuning::transfer`) scored the same way: each fold's problems borrow
/// from the winners of the other folds' shapes as anchors, at the split nearest in
/// CTAs among those measured for the borrowed kernel there; standalone (always the
/// borrowed choice) and deployed (the borrowed choice where the rule says it wins,
/// else the vendor's time), for the shipped rule and looser and stricter ones.
fn transfer_scores(folds: usize, arch: Arch, all: &[Measured], fold_of: impl Fn(&Problem) -> usize, table_rule: TransferRule) {
    // The rules scored: one margin at every M up to 32 tokens (the first six), the
    // default rule, small-token margins (16-bit, at most `small_m` tokens) and
    // token limits around it, lower margins above the small-token one, and rules
    // that lend the nearest anchor's kernel without asking others to have won with
    // it, or ask for those votes however much the anchors won by; the table's own
    // rule is marked.
    let up_to_32 = TransferRule { max_m: 32, ..TRANSFER_RULE };
    let small = |small_m, small_margin| TransferRule { small_m, small_margin, ..TRANSFER_RULE };
    let mut rules = vec![
        TransferRule { agree: 1, ..up_to_32 },
        TransferRule { agree: 2, margin: 1.1, ..up_to_32 },
        TransferRule { margin: 1.05, ..up_to_32 },
        TransferRule { margin: 1.1, ..up_to_32 },
        up_to_32,
        TransferRule { agree: 5, margin: 1.08, ..up_to_32 },
        TRANSFER_RULE,
        TransferRule { max_m: 64, ..TRANSFER_RULE },
        small(8, 1.0),
        small(8, 1.03),
        small(8, 1.08),
        small(5, 1.03),
        small(16, 1.03),
        small(16, 1.08),
        TransferRule { agree: 2, ..small(8, 1.03) },
        TransferRule { margin: 1.1, ..small(16, 1.03) },
        TransferRule { margin: 1.08, ..small(16, 1.03) },
        TransferRule { votes: 1, ..TRANSFER_RULE },
        TransferRule { votes: 1, ..small(16, 1.03) },
        TransferRule { votes: 1, ..small(16, 1.08) },
        TransferRule { strong: f64::INFINITY, ..small(16, 1.03) },
        TransferRule { strong: f64::INFINITY, ..small(16, 1.08) },
        TransferRule { strong: 1.35, ..small(16, 1.03) },
        TransferRule { strong: 1.35, ..small(16, 1.08) },
    ];
    if !rules.contains(&table_rule) {
        rules.push(table_rule);
    }
    // Problems cuBLASLt takes this long on stream enough bytes that a borrowed
    // kernel's win is a few percent at most.
    const LONG_US: f64 = 10.0;
    let empty = TuningFile { schema: 1, arch: arch.name().into(), devices: vec![], provenance: Default::default(), planner: None, entries: vec![], anchors: vec![], small_transfer: None, invariant: vec![] };
    let mut scored: Vec<Scored> = Vec::new();
    // Each rule's problems below 0.97x.
    let mut losses: Vec<Vec<(Problem, f64, f64)>> = vec![Vec::new(); rules.len()];
    for f in 0..folds {
        let train: Vec<Measured> = all.iter().filter(|pr| fold_of(&pr.p) != f).map(|pr| Measured { candidates: pr.candidates.clone(), ..*pr }).collect();
        let file = TuningFile { anchors: anchors(&train, &empty, false), ..empty.clone() };
        let Ok(table) = Tuning::parse(arch, &serde_json::to_string(&file).expect("a table serialises"), "cross-validation") else { continue };
        let catalog = kernels::for_arch(arch).kernels;
        for pr in all.iter().filter(|pr| fold_of(&pr.p) == f) {
            // The splits measured for each kernel on this problem.
            let measured = |kernel: usize| {
                let mut v: Vec<u32> = pr.candidates.iter().filter(|c| c.c == catalog[kernel].config).map(|c| c.split).collect();
                v.sort();
                v.dedup();
                v
            };
            // A borrowed choice's measured speedup, if it runs a kernel measured here.
            let speedup = |t: Option<Transfer>| {
                let Choice::Run { kernel, split_k } = t?.choice else { return None };
                let us = pr.candidates.iter().filter(|c| c.c == catalog[kernel].config && c.split == split_k).map(|c| c.us).reduce(f64::min)?;
                Some(pr.vendor_us / us)
            };
            let Some(alone) = speedup(table.transfer(arch, arch.default_units(), &pr.p, measured)) else { continue };
            let runs: Vec<(bool, f64)> = rules
                .iter()
                .map(|&rule| {
                    let t = table.transfer_by(rule, arch, arch.default_units(), &pr.p, measured);
                    match (t.is_some_and(|t| t.wins), speedup(t)) {
                        (true, Some(x)) => (true, x),
                        _ => (false, 1.0),
                    }
                })
                .collect();
            for (i, &(run, x)) in runs.iter().enumerate() {
                if run && x < 0.97 {
                    losses[i].push((pr.p, x, pr.vendor_us));
                }
            }
            scored.push(Scored { vendor_us: pr.vendor_us, alone, runs, m: pr.p.m });
        }
    }
    let geo = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp();
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let below = |v: &[f64]| v.iter().filter(|&&d| d < 0.97).count();
    let alone: Vec<f64> = scored.iter().map(|s| s.alone).collect();
    println!("{folds}-fold, shapes left out, transfer on {} of {} problems: standalone {:.3} (min {:.2}); deployed:", scored.len(), all.len(), geo(&alone), min(&alone));
    for (i, rule) in rules.iter().enumerate() {
        let deployed = |long: bool| -> Vec<f64> { scored.iter().filter(|s| !long || s.vendor_us >= LONG_US).map(|s| s.runs[i].1).collect() };
        let (d, l) = (deployed(false), deployed(true));
        println!(
            "  {} at {:.2}x ({:.2}x at M <= {}), M <= {}{}{}: {:.3} (min {:.2}, {} below 0.97, {} run); where the vendor takes >= {LONG_US} us: {:.3} ({} below)",
            rule.agree,
            rule.margin,
            rule.small_margin,
            rule.small_m,
            rule.max_m,
            match rule.votes {
                v if v == TRANSFER_RULE.votes => String::new(),
                1 => ", the nearest's kernel".to_string(),
                v => format!(", {v} won with its kernel"),
            } + &match rule.strong {
                s if s == TRANSFER_RULE.strong || rule.votes == 1 => String::new(),
                s if s.is_finite() => format!(" (1 where all won by {s:.2}x)"),
                _ => format!(" ({} always)", rule.votes),
            },
            if *rule == table_rule { " (this table's)" } else { "" },
            geo(&d),
            min(&d),
            below(&d),
            scored.iter().filter(|s| s.runs[i].0).count(),
            geo(&l),
            below(&l)
        );
        let mut ms: Vec<u32> = scored.iter().map(|s| s.m).collect();
        ms.sort();
        ms.dedup();
        let per_m: Vec<String> = ms
            .iter()
            .map(|&m| {
                let d: Vec<f64> = scored.iter().filter(|s| s.m == m).map(|s| s.runs[i].1).collect();
                format!("M={m}: {:.3} ({} run, min {:.2})", geo(&d), scored.iter().filter(|s| s.m == m && s.runs[i].0).count(), min(&d))
            })
            .collect();
        println!("    {}", per_m.join("; "));
        print_losses(&losses[i]);
    }
}

/// The hardware numbers the fit does not change: what one compute unit holds.
fn unit_model(arch: Arch, margin: f64) -> CostModel {
    let facts = target(arch.name()).expect("every arch has target facts");
    let shared = if facts.sm_lds > 0 { facts.sm_lds } else { facts.lds_limit };
    CostModel {
        source: "fitted".into(),
        kinds: Vec::new(),
        unit_intake_gbs: 100.0,
        dram_tbs: 3.0,
        partials_tbs: 1.0,
        wave_us: 0.5,
        unit_shared_bytes: shared,
        unit_threads: 2048,
        vendor: VendorCost { fixed_us: 5.0, per_m_us: 0.0, per_kilo_k_us: 0.0, base_us: 3.0, tbs: 3.0, full_n: 0.0, narrow_exponent: 0.0 },
        vendor_row: None,
        token_row_weight: None,
        calibration_floor_tbs: None,
        margin,
        calibration: Vec::new(),
    }
}

/// The fitted parameters and their bounds: per kind (launch, CTA rate, split,
/// per split, per partial KiB, matrix throughput), then the unit intake, DRAM,
/// partials bandwidth and the per-wave cost, and with `token_rows` a token row's
/// cost in weight rows.
struct Space {
    kinds: Vec<(Family, bool, bool)>,
    token_rows: bool,
    template: CostModel,
}

const KIND_PARAMS: [(f64, f64, f64); 6] = [(1.0, 0.0, 20.0), (60.0, 5.0, 500.0), (0.5, 0.0, 20.0), (0.05, 0.0, 5.0), (0.05, 0.0, 5.0), (3.0, 0.2, 1e4)];
const GLOBAL_PARAMS: [(f64, f64, f64); 5] = [(100.0, 20.0, 2000.0), (3.0, 0.5, 20.0), (1.0, 0.1, 100.0), (0.3, 0.0, 10.0), (1.0, 0.0, 20.0)];

impl Space {
    /// The global parameters fitted: the last (a token row's cost) only with `token_rows`.
    fn globals(&self) -> &'static [(f64, f64, f64)] {
        if self.token_rows { &GLOBAL_PARAMS } else { &GLOBAL_PARAMS[..4] }
    }

    fn start(&self) -> Vec<f64> {
        let mut p: Vec<f64> = self.kinds.iter().flat_map(|_| KIND_PARAMS.iter().map(|b| b.0)).collect();
        p.extend(self.globals().iter().map(|b| b.0));
        p
    }

    fn bounds(&self, i: usize) -> (f64, f64) {
        let n = self.kinds.len() * KIND_PARAMS.len();
        let b = if i < n { KIND_PARAMS[i % KIND_PARAMS.len()] } else { self.globals()[i - n] };
        (b.1, b.2)
    }

    fn model(&self, p: &[f64]) -> CostModel {
        let kinds = self
            .kinds
            .iter()
            .enumerate()
            .map(|(i, &(family, cluster, tma))| {
                let q = &p[i * KIND_PARAMS.len()..(i + 1) * KIND_PARAMS.len()];
                KindCost { family, cluster, tma, launch_us: q[0], cta_gbs: q[1], split_us: q[2], per_split_us: q[3], partial_us_per_kib: q[4], unit_tflops: q[5] }
            })
            .collect();
        let g = &p[self.kinds.len() * KIND_PARAMS.len()..];
        let token_row_weight = g.get(4).copied();
        CostModel { kinds, unit_intake_gbs: g[0], dram_tbs: g[1], partials_tbs: g[2], wave_us: g[3], token_row_weight, ..self.template.clone() }
    }

    fn solve(&self, dev: &Device, samples: &[Sample]) -> CostModel {
        let residuals = |p: &[f64]| -> Vec<f64> {
            let m = self.model(p);
            samples
                .iter()
                .map(|s| {
                    let e = (m.modelled(dev, &s.c, s.split, &s.p).unwrap_or(f64::MAX) / s.us).ln();
                    if e < 0.0 { 2.0 * e } else { e }
                })
                .collect()
        };
        let p = levenberg_marquardt(self.start(), |i| self.bounds(i), residuals, 0.05);
        self.model(&p)
    }
}

/// The vendor model, fitted to the vendor's measured times, with overestimates
/// weighted twice: a vendor predicted slower than it is makes skinnylt run and lose.
fn fit_vendor(vendor: &[VendorSample]) -> VendorCost {
    // per_kilo_k up to 20 µs: the per-row fp8 kernels' floor grows ~5 µs per 1024 units of K.
    let bounds = [(0.0, 50.0), (0.0, 50.0), (0.0, 20.0), (0.0, 50.0), (0.5, 20.0), (64.0, 1e5), (0.0, 3.0)];
    let to = |p: &[f64]| VendorCost { fixed_us: p[0], per_m_us: p[1], per_kilo_k_us: p[2], base_us: p[3], tbs: p[4], full_n: p[5], narrow_exponent: p[6] };
    let residuals = |p: &[f64]| -> Vec<f64> {
        let m = to(p);
        vendor
            .iter()
            .map(|(prob, us)| {
                let e = (m.us(prob) / us).ln();
                if e > 0.0 { 2.0 * e } else { e }
            })
            .collect()
    };
    to(&levenberg_marquardt(vec![4.5, 0.5, 0.2, 3.0, 3.0, 2000.0, 0.5], |i| bounds[i], residuals, 0.05))
}

/// Minimises Σ ρ(rᵢ(p)) with the robust loss ρ (soft L1 of scale `scale`) by
/// iteratively reweighted Levenberg-Marquardt with a numeric Jacobian, keeping each
/// parameter within its bounds.
fn levenberg_marquardt(mut p: Vec<f64>, bounds: impl Fn(usize) -> (f64, f64), f: impl Fn(&[f64]) -> Vec<f64>, scale: f64) -> Vec<f64> {
    let n = p.len();
    let cost = |r: &[f64]| r.iter().map(|x| 2.0 * scale * scale * ((1.0 + (x / scale).powi(2)).sqrt() - 1.0)).sum::<f64>();
    let mut r = f(&p);
    let mut c = cost(&r);
    let mut lambda = 1e-3;
    for _ in 0..200 {
        // Robust weights, and the Jacobian by forward differences.
        let w: Vec<f64> = r.iter().map(|x| 1.0 / (1.0 + (x / scale).powi(2)).sqrt()).collect();
        let mut jac = vec![vec![0.0; r.len()]; n];
        for j in 0..n {
            let h = (p[j].abs() * 1e-4).max(1e-6);
            let mut q = p.clone();
            q[j] += h;
            let rq = f(&q);
            for (i, v) in rq.iter().enumerate() {
                jac[j][i] = (v - r[i]) / h;
            }
        }
        // Normal equations Jᵀ W J + λ diag, Jᵀ W r.
        let mut a = vec![vec![0.0; n]; n];
        let mut g = vec![0.0; n];
        for j in 0..n {
            for k in j..n {
                let s: f64 = (0..r.len()).map(|i| w[i] * jac[j][i] * jac[k][i]).sum();
                a[j][k] = s;
                a[k][j] = s;
            }
            g[j] = (0..r.len()).map(|i| w[i] * jac[j][i] * r[i]).sum();
        }
        let mut improved = false;
        for _ in 0..10 {
            let mut m = a.clone();
            for (j, row) in m.iter_mut().enumerate() {
                row[j] += lambda * a[j][j].max(1e-12);
            }
            let Some(step) = solve(m, g.iter().map(|x| -x).collect()) else { break };
            let q: Vec<f64> = p.iter().zip(&step).enumerate().map(|(j, (x, d))| {
                let (lo, hi) = bounds(j);
                (x + d).clamp(lo, hi)
            }).collect();
            let rq = f(&q);
            let cq = cost(&rq);
            if cq < c {
                (p, r, c) = (q, rq, cq);
                lambda = (lambda / 3.0).max(1e-9);
                improved = true;
                break;
            }
            lambda *= 4.0;
        }
        if !improved || lambda > 1e9 {
            break;
        }
    }
    p
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[piv][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        let pivot_row = a[col].clone();
        for row in col + 1..n {
            let f = a[row][col] / pivot_row[col];
            for (x, p) in a[row][col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    Some(x)
}

/// The fallback rule's pick against the best measured, where it was measured.
fn fallback_report(dev: &Device, samples: &[Sample]) {
    let mut by: HashMap<(u32, u32, u32, bool), Vec<&Sample>> = HashMap::new();
    for s in samples {
        by.entry((s.p.m, s.p.n, s.p.k, s.p.has_bias())).or_default().push(s);
    }
    let arch = Arch::ALL.into_iter().find(|a| a.name() == dev.facts.name).expect("a known arch");
    let fallback = skinnylt::tuning::fallback::Fallback::for_arch(arch);
    let catalog = skinnylt::kernels::for_arch(arch).kernels;
    let mut fb: Vec<f64> = by
        .values()
        .filter_map(|v| {
            let Some(skinnylt::tuning::Choice::Run { kernel, split_k }) = fallback.choose(dev.units, &v[0].p) else { return None };
            let c = catalog[kernel].config;
            let t = v.iter().find(|s| s.c == c && s.split == split_k)?.us;
            Some(t / v.iter().map(|s| s.us).fold(f64::INFINITY, f64::min))
        })
        .collect();
    if !fb.is_empty() {
        let geo = (fb.iter().map(|x| x.ln()).sum::<f64>() / fb.len() as f64).exp();
        fb.sort_by(f64::total_cmp);
        println!("fallback rule's pick against the best measured (on {} problems where it was measured): {:.3} (worst {:.2})", fb.len(), geo, fb[fb.len() - 1]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skinnylt::tuning::schema::DType;

    /// The per-row vendor model is fitted to the table's measured per-row entries
    /// (K in elements, each at its band's first M), none of the others; with too
    /// few shapes among them there is none.
    #[test]
    fn the_per_row_vendor_model_is_fitted_to_the_per_row_entries() {
        let truth = VendorCost { fixed_us: 4.0, per_m_us: 0.2, per_kilo_k_us: 4.0, base_us: 3.0, tbs: 2.5, full_n: 0.0, narrow_exponent: 0.0 };
        let entry = |m: u32, n: u32, k: u32, row: bool| {
            let v = truth.us(&Problem::packed(DType::E4m3, m, n, k / 2, false));
            let v = if row { v } else { v / 3.0 };
            let scales = if row { r#","scales":"row""# } else { "" };
            format!(r#"{{"dtype":"e4m3","n":{n},"k":{k},"bias":false,"m_min":{m},"m_max":{m},"source":"measured","vendor_us":{v}{scales}}}"#)
        };
        // MIN_ROW_SHAPES per-row shapes, each with a per-tensor twin 3x faster.
        let mut entries = Vec::new();
        for i in 0..MIN_ROW_SHAPES as u32 {
            let (n, k) = (64 << (i % 9), 512 * (1 + i % 5) + 256 * (i / 9));
            entries.push(entry(1 + 4 * (i % 8), n, k, true));
            entries.push(entry(1, n, k, false));
        }
        let table = |e: &[String]| -> TuningFile { serde_json::from_str(&format!(r#"{{"schema":1,"arch":"sm90","entries":[{}]}}"#, e.join(","))).unwrap() };
        let file = table(&entries);
        assert_eq!(row_vendor_samples(&file).len(), MIN_ROW_SHAPES);
        let fitted = vendor_row(&file).unwrap();
        for (p, us) in row_vendor_samples(&file) {
            assert!((fitted.us(&p) / us - 1.0).abs() < 0.05, "{p:?}: {} vs {us}", fitted.us(&p));
        }
        // One shape short: no model.
        assert_eq!(vendor_row(&table(&entries[..2 * MIN_ROW_SHAPES - 2])), None);
        // A full refit refits the model of a table that has one, and adds none to a
        // table without (whatever its entries would fit).
        let mut with_planner = file.clone();
        with_planner.planner = Some(unit_model(Arch::Sm90, 1.1));
        assert_eq!(with_planner.planner.as_ref().unwrap().vendor_row, None);
        assert_eq!(refitted_vendor_row(&with_planner), None);
        with_planner.planner.as_mut().unwrap().vendor_row = Some(truth);
        assert_eq!(refitted_vendor_row(&with_planner), Some(fitted));
        assert_eq!(refitted_vendor_row(&file), None);
    }

    /// A fit's anchors are the new measurements' winners; the table's earlier
    /// anchors stay for problems the new files do not measure (fp8, another M),
    /// and none is kept or made for a shape an entry lists.
    #[test]
    fn a_fit_keeps_the_anchors_it_does_not_measure_again() {
        let c = KernelConfig { family: Family::Splitk, tile_m: 8, tile_n: 16, tile_k: 128, stages: 4, warps: [1, 1, 4], b_to_lds: true, cluster: false, tma: false };
        let wide = KernelConfig { tile_n: 64, warps: [1, 4, 1], ..c };
        let anchor = |dtype: &str, n: u32, m: u32, us: f64| {
            format!(r#"{{"dtype":"{dtype}","n":{n},"k":4096,"bias":false,"m_min":{m},"m_max":{m},"kernel":{},"split_k":2,"source":"measured","us":{us},"vendor_us":9.0}}"#, serde_json::to_string(&c).unwrap())
        };
        let old = [anchor("bf16", 2048, 1, 5.0), anchor("bf16", 2048, 12, 6.0), anchor("e4m3", 2048, 1, 3.0), anchor("bf16", 4096, 12, 7.0)];
        let listed = r#"{"dtype":"bf16","n":4096,"k":4096,"bias":false,"m_min":1,"m_max":16,"source":"measured"}"#;
        let file: TuningFile = serde_json::from_str(&format!(r#"{{"schema":1,"arch":"sm90","entries":[{listed}],"anchors":[{}]}}"#, old.join(","))).unwrap();
        // New measurements: bf16 2048 x 4096 at M = 1 (two candidates), and the listed shape.
        let (p, q) = (Problem::packed(DType::Bf16, 1, 2048, 4096, false), Problem::packed(DType::Bf16, 1, 4096, 4096, false));
        let samples = [Sample { device: "test".into(), p, c, split: 4, us: 4.5 }, Sample { device: "test".into(), p, c: wide, split: 1, us: 4.0 }, Sample { device: "test".into(), p: q, c, split: 1, us: 8.0 }];
        let vendor = [(p, 8.0), (q, 9.0)];
        let got = anchors(&problems(&samples, &vendor), &file, false);
        // --anchors-only keeps the old anchor of the listed shape too.
        assert_eq!(anchors(&problems(&samples, &vendor), &file, true).len(), 5);
        let find = |d: DType, n: u32, m: u32| got.iter().filter(|e| (e.dtype, e.n, e.m_min) == (d, n, m)).collect::<Vec<_>>();
        // Re-measured: replaced by the new winner (and its f16 mirror).
        assert_eq!(find(DType::Bf16, 2048, 1).iter().map(|e| (e.kernel, e.split_k, e.us)).collect::<Vec<_>>(), [(Some(wide), 1, Some(4.0))]);
        assert_eq!(find(DType::F16, 2048, 1).len(), 1);
        // Not measured again: kept as they were.
        assert_eq!(find(DType::Bf16, 2048, 12).iter().map(|e| e.us).collect::<Vec<_>>(), [Some(6.0)]);
        assert_eq!(find(DType::E4m3, 2048, 1).iter().map(|e| e.us).collect::<Vec<_>>(), [Some(3.0)]);
        // A listed shape has no anchor, old or new.
        assert!(got.iter().all(|e| e.n != 4096), "{got:?}");
        assert_eq!(got.len(), 4);
    }

    /// --anchors-only writes a dump's winners as anchors (fp8 alone here, which the
    /// planner's fit could not use) and leaves the table's planner as it was.
    #[test]
    fn anchors_only_adds_anchors_and_keeps_the_planner() {
        let dir = std::env::temp_dir().join(format!("skinnylt-anchors-only-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (table, dump) = (dir.join("t.json"), dir.join("d.jsonl"));
        let shipped: TuningFile = serde_json::from_str(skinnylt::tuning::embedded(Arch::Sm90)).unwrap();
        let planner = serde_json::to_string(&shipped.planner).unwrap();
        std::fs::write(&table, format!(r#"{{"schema":1,"arch":"sm90","planner":{planner},"entries":[]}}"#)).unwrap();
        let c = serde_json::to_string(&KernelConfig { family: Family::Splitk, tile_m: 8, tile_n: 16, tile_k: 128, stages: 8, warps: [1, 1, 4], b_to_lds: true, cluster: true, tma: false }).unwrap();
        let head = r#""device":"test","dtype":"e4m3","m":24,"n":4096,"k":2048,"bias":false"#;
        std::fs::write(&dump, format!("{{{head},\"kernel\":{c},\"split\":4,\"us\":5.0}}\n{{{head},\"vendor_us\":7.5}}\n")).unwrap();
        let args = Args {
            files: vec![dump.display().to_string()],
            arch: "sm90".into(),
            units: None,
            out: table.display().to_string(),
            margin: 1.1,
            token_rows: false,
            cross_validate: 0,
            score: false,
            keep_anchors: false,
            anchors_only: true,
            add_calibration: false,
            invariant: false,
        };
        assert_eq!(run(&args), 0);
        let after = read_table(&args.out).unwrap();
        assert_eq!(serde_json::to_string(&after.planner).unwrap(), planner);
        assert!(after.planner.is_some());
        assert_eq!(after.anchors.iter().map(|e| (e.dtype, e.m_min, e.n, e.split_k, e.us, e.vendor_us)).collect::<Vec<_>>(), [(DType::E4m3, 24, 4096, 4, Some(5.0), Some(7.5))]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// With --token-rows the fit finds what a token row costs: times made by a
    /// model whose token rows cost 3 weight rows are fitted to within a few
    /// percent, and the weight recovered; the legacy model, blind to M inside a
    /// token tile, cannot fit them as well.
    #[test]
    fn the_fit_finds_what_a_token_row_costs() {
        let dev = Device { units: 132, facts: target("sm90").unwrap() };
        let kind = KindCost { family: Family::Splitk, cluster: false, tma: false, launch_us: 1.0, cta_gbs: 60.0, split_us: 0.3, per_split_us: 0.05, partial_us_per_kib: 0.1, unit_tflops: 5.0 };
        let truth = CostModel { kinds: vec![kind], unit_intake_gbs: 70.0, dram_tbs: 12.0, wave_us: 0.5, token_row_weight: Some(3.0), ..unit_model(Arch::Sm90, 1.1) };
        let c = KernelConfig { family: Family::Splitk, tile_m: 8, tile_n: 16, tile_k: 128, stages: 4, warps: [1, 1, 4], b_to_lds: true, cluster: false, tma: false };
        let mut samples = Vec::new();
        for (tile_n, warps) in [(16, [1, 1, 4]), (32, [1, 2, 2]), (64, [1, 4, 1])] {
            for n in [2048, 4096, 7168] {
                for k in [256, 512, 1024, 4096] {
                    for m in [1, 3, 5, 8, 12] {
                        for split in [1, 2] {
                            let (c, p) = (KernelConfig { tile_n, warps, ..c }, Problem::packed(DType::Bf16, m, n, k, false));
                            let us = truth.modelled(&dev, &c, split, &p).unwrap();
                            samples.push(Sample { device: "test".into(), p, c, split, us });
                        }
                    }
                }
            }
        }
        let kinds = vec![(Family::Splitk, false, false)];
        let error = |m: &CostModel| samples.iter().map(|s| (m.modelled(&dev, &s.c, s.split, &s.p).unwrap() / s.us).ln().abs()).fold(0.0, f64::max);
        let rows = Space { kinds: kinds.clone(), token_rows: true, template: unit_model(Arch::Sm90, 1.1) }.solve(&dev, &samples);
        let legacy = Space { kinds, token_rows: false, template: unit_model(Arch::Sm90, 1.1) }.solve(&dev, &samples);
        assert!(error(&rows) < 0.05, "worst error {}", error(&rows));
        assert!((rows.token_row_weight.unwrap() - 3.0).abs() < 0.5, "{:?}", rows.token_row_weight);
        assert_eq!(legacy.token_row_weight, None);
        assert!(error(&legacy) > 2.0 * error(&rows), "legacy {} vs {}", error(&legacy), error(&rows));
    }

    /// Each calibration entry is the median of measured over modelled time above
    /// the floor for one kernel and token-tile count, and only where at least
    /// `MIN_CALIBRATION_SAMPLES` measurements back it.
    #[test]
    fn calibration_is_the_median_excess_per_kernel_and_token_tiles() {
        let dev = Device { units: 132, facts: target("sm90").unwrap() };
        let kind = KindCost { family: Family::Splitk, cluster: false, tma: false, launch_us: 1.0, cta_gbs: 60.0, split_us: 0.3, per_split_us: 0.05, partial_us_per_kib: 0.1, unit_tflops: 5.0 };
        let model = CostModel { kinds: vec![kind], ..unit_model(Arch::Sm90, 1.15) };
        let c = KernelConfig { family: Family::Splitk, tile_m: 8, tile_n: 64, tile_k: 128, stages: 4, warps: [1, 4, 1], b_to_lds: true, cluster: false, tma: false };
        let other = KernelConfig { tile_n: 32, warps: [1, 2, 2], ..c };
        let sample = |c: KernelConfig, m, n, excess: f64| {
            let p = Problem::packed(DType::Bf16, m, n, 4096, false);
            let (t, floor) = (model.modelled(&dev, &c, 1, &p).unwrap(), model.floor_us(&p));
            Sample { device: "test".into(), p, c, split: 1, us: floor + (t - floor) * excess }
        };
        // One token tile: factors 1.5, 2, 3 (median 2); two tiles (M = 12): 0.5 x3;
        // the other kernel measured twice only.
        let samples = vec![
            sample(c, 1, 1024, 1.5),
            sample(c, 8, 2048, 3.0),
            sample(c, 4, 4096, 2.0),
            sample(c, 12, 1024, 0.5),
            sample(c, 12, 2048, 0.5),
            sample(c, 16, 4096, 0.5),
            sample(other, 1, 1024, 1.0),
            sample(other, 1, 2048, 1.0),
        ];
        let cal = calibrate(&model, &dev, &samples);
        assert_eq!(cal.len(), 2, "{cal:?}");
        let at = |tiles| cal.iter().find(|e| e.kernel == c && e.token_tiles == tiles).unwrap();
        assert!((at(1).excess - 2.0).abs() < 1e-9 && at(1).samples == 3);
        assert!((at(2).excess - 0.5).abs() < 1e-9);
        // The calibrated model reproduces a sample at its factor.
        let calibrated = CostModel { calibration: cal, ..model.clone() };
        let s = &samples[2];
        assert!((calibrated.predict(&dev, &s.c, 1, &s.p).unwrap() / s.us - 1.0).abs() < 1e-9);
        assert!(calibrated.predict(&dev, &other, 1, &samples[6].p).is_none());
    }

    /// --add-calibration calibrates only what the planner lacks: a kernel it has
    /// an entry for keeps its entry whatever the new measurements say, a kernel
    /// without one gets the median of its measured excess.
    #[test]
    fn add_calibration_calibrates_only_what_the_planner_lacks() {
        let dev = Device { units: 132, facts: target("sm90").unwrap() };
        let shipped: TuningFile = serde_json::from_str(skinnylt::tuning::embedded(Arch::Sm90)).unwrap();
        let mut model = shipped.planner.unwrap();
        // A kernel added after the fit: its entries not there yet.
        let new = KernelConfig { family: Family::Wgmma, tile_m: 128, tile_n: 64, tile_k: 64, stages: 8, warps: [1, 4, 1], b_to_lds: true, cluster: true, tma: true };
        model.calibration.retain(|c| c.kernel != new);
        let before = model.calibration.clone();
        let known = before.iter().find(|c| c.token_tiles == 1).unwrap().kernel;
        let sample = |c: KernelConfig, n: u32, excess: f64| {
            let p = Problem::packed(DType::Bf16, c.tile_m, n, 4096, false);
            let (t, floor) = (model.modelled(&dev, &c, 2, &p).unwrap(), model.calibration_floor_us(&p));
            Sample { device: "test".into(), p, c, split: 2, us: floor + (t - floor) * excess }
        };
        let samples: Vec<Sample> = [1024, 2048, 4096].into_iter().flat_map(|n| [sample(known, n, 7.0), sample(new, n, 1.0 + n as f64 / 4096.0)]).collect();
        let added = add_calibration(&mut model, &dev, &samples);
        assert_eq!(added.len(), 1, "{added:?}");
        assert_eq!((added[0].kernel, added[0].token_tiles, added[0].samples), (new, 1, 3));
        assert!((added[0].excess - 1.5).abs() < 1e-9, "{}", added[0].excess);
        assert_eq!(model.calibration.len(), before.len() + 1);
        assert!(before.iter().all(|c| model.calibration.contains(c)), "an existing entry changed");
    }

    /// --invariant writes a measured plan where a pair measured faster than the
    /// planner's own beats it by more than `INVARIANT_GAIN`: one entry per M it
    /// was measured at, mirrored to f16; where the gain is smaller, none.
    #[test]
    fn invariant_plans_replace_the_planners_pair_only_where_measured_faster() {
        use skinnylt::tuning::planner::{INVARIANT_MS, summation_class};
        let dev = Device { units: 132, facts: target("sm90").unwrap() };
        let mut file: TuningFile = serde_json::from_str(skinnylt::tuning::embedded(Arch::Sm90)).unwrap();
        (file.entries, file.anchors, file.invariant) = (vec![], vec![], vec![]);
        let table = Tuning::parse(Arch::Sm90, &serde_json::to_string(&file).unwrap(), "test").unwrap();
        let target = crate::plan::target(Arch::Sm90, 132, &skinnylt::config::Config::from_lookup(|_| None));
        let fallback = skinnylt::tuning::fallback::Fallback::for_arch(Arch::Sm90);
        let all = kernels::for_arch(Arch::Sm90).kernels;
        let splitk = KernelConfig { family: Family::Splitk, tile_m: 8, tile_n: 64, tile_k: 128, stages: 4, warps: [1, 4, 1], b_to_lds: true, cluster: false, tma: false };
        let wgmma = KernelConfig { family: Family::Wgmma, tile_m: 16, tile_n: 64, tile_k: 64, stages: 8, warps: [1, 4, 1], b_to_lds: true, cluster: true, tma: true };
        let (mut samples, mut vendor, mut faster) = (Vec::new(), Vec::new(), None);
        // (N, K, the alternative's time against the planner's pair's 2 µs).
        for (n, k, alternative_us) in [(2880, 2880, 1.0), (4096, 4096, 1.99)] {
            let p = |m| Problem::packed(DType::Bf16, m, n, k, false);
            let Ok(Choice::Run { kernel, split_k }) = skinnylt::engine::choose(&table, &fallback, &target, &Problem { batch_invariant: true, ..p(1) }, false) else { panic!() };
            let own = all[kernel].config;
            let other = if summation_class(&own) == summation_class(&wgmma) { splitk } else { wgmma };
            faster.get_or_insert(other);
            for m in INVARIANT_MS {
                samples.push(Sample { device: "test".into(), p: p(m), c: own, split: split_k, us: 2.0 });
                samples.push(Sample { device: "test".into(), p: p(m), c: other, split: 1, us: alternative_us });
                vendor.push((p(m), 3.0));
            }
        }
        let plans = invariant_plans(&file, Arch::Sm90, &dev, &samples, &vendor).unwrap();
        assert_eq!(plans.len(), 2 * INVARIANT_MS.len(), "{plans:?}");
        for (e, m) in plans.iter().zip(INVARIANT_MS.iter().flat_map(|&m| [m, m])) {
            assert_eq!((e.n, e.k, e.m_min, e.m_max, e.split_k, e.us, e.vendor_us), (2880, 2880, m, m, 1, Some(1.0), Some(3.0)));
            assert_eq!(e.kernel, faster);
        }
        assert_eq!(plans.iter().filter(|e| e.dtype == DType::F16).count(), INVARIANT_MS.len());
        // The plans are a table the library takes.
        let with = TuningFile { invariant: plans, ..file };
        let t = Tuning::parse(Arch::Sm90, &serde_json::to_string(&with).unwrap(), "test").unwrap();
        assert_eq!(t.invariant(&Problem::packed(DType::F16, 3, 2880, 2880, false)).map(|p| p.split_k), Some(1));
    }

    /// Calibration measures a kernel's excess above the fastest stream measured,
    /// not above the fitted DRAM bandwidth, which every kernel's fit pulls down:
    /// a kernel that streams large weights faster than `dram_tbs` is predicted at
    /// its measured time, below the fitted floor.
    #[test]
    fn calibration_measures_excess_above_the_fastest_stream() {
        let dev = Device { units: 132, facts: target("sm90").unwrap() };
        let kind = KindCost { family: Family::Splitk, cluster: false, tma: false, launch_us: 1.0, cta_gbs: 60.0, split_us: 0.3, per_split_us: 0.05, partial_us_per_kib: 0.1, unit_tflops: 5.0 };
        let model = CostModel { kinds: vec![kind], dram_tbs: 2.5, ..unit_model(Arch::Sm90, 1.1) };
        let c = KernelConfig { family: Family::Splitk, tile_m: 8, tile_n: 64, tile_k: 128, stages: 4, warps: [1, 4, 1], b_to_lds: true, cluster: false, tma: false };
        let samples: Vec<Sample> = [(16384, 2.9), (32768, 3.1), (65536, 3.0)]
            .into_iter()
            .map(|(n, tbs)| {
                let p = Problem::packed(DType::Bf16, 1, n, 8192, false);
                Sample { device: "test".into(), p, c, split: 1, us: bytes(&p) / (tbs * 1e6) }
            })
            .collect();
        let fastest = calibration_floor_tbs(&samples).unwrap();
        assert!((fastest - 3.1).abs() < 1e-9, "{fastest}");
        let fitted = CostModel { calibration_floor_tbs: Some(fastest), ..model.clone() };
        let calibrated = CostModel { calibration: calibrate(&fitted, &dev, &samples), ..fitted.clone() };
        let predicted: Vec<f64> = samples.iter().map(|s| calibrated.predict(&dev, &s.c, 1, &s.p).unwrap()).collect();
        assert!(samples.iter().zip(&predicted).all(|(s, t)| *t < fitted.floor_us(&s.p)), "{predicted:?}");
        assert!(samples.iter().zip(&predicted).any(|(s, t)| (t / s.us - 1.0).abs() < 1e-9), "{predicted:?}");
        // Without it (tables fitted before), the fitted floor bounds every prediction.
        let legacy = CostModel { calibration_floor_tbs: None, calibration: calibrate(&model, &dev, &samples), ..model.clone() };
        assert!(samples.iter().all(|s| legacy.predict(&dev, &s.c, 1, &s.p).unwrap() >= model.floor_us(&s.p)));
    }
}
