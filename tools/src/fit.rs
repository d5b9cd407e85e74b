//! `skinnylt fit`: fits the planner's cost model (`skinnylt::tuning::planner`) of
//! one device to measurements, `tune --dump` lines: every candidate's time (the
//! kernels' constants) and the vendor's (its model). Writes the constants into a
//! tuning table's `planner` section, keeping its entries.
//!
//! The fit minimises the log error of every measured candidate, with underestimates
//! weighted twice (a candidate predicted faster than it is gets picked) and a
//! robust loss (a few outliers must not move the rest), by Levenberg-Marquardt with
//! bounds.

use std::collections::HashMap;

use skinnylt::gpu::Arch;
use skinnylt::route::Problem;
use skinnylt::tuning::planner::Device;
use skinnylt::tuning::schema::{CostModel, Family, KernelConfig, KindCost, TuningFile, VendorCost, target};

use crate::tune::Measurement;

#[derive(clap::Args)]
pub struct Args {
    /// `tune --dump` files (repeatable).
    #[arg(long = "from", required = true)]
    pub files: Vec<String>,
    /// The arch the measurements are of (gfx942, gfx950, sm90).
    #[arg(long)]
    pub arch: String,
    /// Compute units of the device measured (default: the arch's common part).
    #[arg(long)]
    pub units: Option<u32>,
    /// The tuning table whose `planner` section is written (its entries are kept).
    #[arg(long)]
    pub out: String,
    /// Run on an unlisted shape only where the predicted win clears this factor.
    #[arg(long, default_value_t = 1.15)]
    pub margin: f64,
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
    let (samples, vendor) = read(&a.files)?;
    if samples.is_empty() || vendor.is_empty() {
        return Err("no candidate or no vendor measurements in the files".into());
    }
    let facts = target(arch.name()).ok_or("no target facts")?;
    let dev = Device { units: a.units.unwrap_or(arch.default_units()), facts };
    let mut file: TuningFile = serde_json::from_str(&std::fs::read_to_string(&a.out).map_err(|e| format!("{}: {e}", a.out))?).map_err(|e| format!("{}: {e}", a.out))?;
    if file.arch != arch.name() {
        return Err(format!("{} is a table for {}, the measurements are of {}", a.out, file.arch, arch.name()));
    }
    let mut kinds: Vec<(Family, bool, bool)> = samples.iter().map(|s| (s.c.family, s.c.cluster, s.c.tma)).collect();
    kinds.sort();
    kinds.dedup();
    let space = Space { kinds, template: unit_model(arch, a.margin) };
    let kernel_model = space.solve(&dev, &samples);
    let vendor_cost = fit_vendor(&vendor);
    let mut devices: Vec<&str> = samples.iter().map(|s| s.device.as_str()).collect();
    devices.sort();
    devices.dedup();
    let source = format!("fitted to {} candidate and {} vendor times measured with tune --dump on {}", samples.len(), vendor.len(), devices.join(", "));
    let model = CostModel { vendor: vendor_cost, source, ..kernel_model };
    report(&model, &dev, &samples, &vendor);
    file.planner = Some(model);
    let text = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    std::fs::write(&a.out, text + "\n").map_err(|e| format!("{}: {e}", a.out))?;
    println!("planner constants written to {}", a.out);
    Ok(())
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
        vendor: VendorCost { fixed_us: 5.0, per_m_us: 0.0, per_kilo_k_us: 0.0, base_us: 3.0, tbs: 3.0 },
        margin,
    }
}

/// The fitted parameters and their bounds: per kind (launch, CTA rate, split,
/// per split, per partial KiB, matrix throughput), then the unit intake, DRAM,
/// partials bandwidth and the per-wave cost.
struct Space {
    kinds: Vec<(Family, bool, bool)>,
    template: CostModel,
}

const KIND_PARAMS: [(f64, f64, f64); 6] = [(1.0, 0.0, 20.0), (60.0, 5.0, 500.0), (0.5, 0.0, 20.0), (0.05, 0.0, 5.0), (0.05, 0.0, 5.0), (3.0, 0.2, 1e4)];
const GLOBAL_PARAMS: [(f64, f64, f64); 4] = [(100.0, 20.0, 2000.0), (3.0, 0.5, 20.0), (1.0, 0.1, 100.0), (0.3, 0.0, 10.0)];

impl Space {
    fn start(&self) -> Vec<f64> {
        let mut p: Vec<f64> = self.kinds.iter().flat_map(|_| KIND_PARAMS.iter().map(|b| b.0)).collect();
        p.extend(GLOBAL_PARAMS.iter().map(|b| b.0));
        p
    }

    fn bounds(&self, i: usize) -> (f64, f64) {
        let n = self.kinds.len() * KIND_PARAMS.len();
        let b = if i < n { KIND_PARAMS[i % KIND_PARAMS.len()] } else { GLOBAL_PARAMS[i - n] };
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
        CostModel { kinds, unit_intake_gbs: g[0], dram_tbs: g[1], partials_tbs: g[2], wave_us: g[3], ..self.template.clone() }
    }

    fn solve(&self, dev: &Device, samples: &[Sample]) -> CostModel {
        let residuals = |p: &[f64]| -> Vec<f64> {
            let m = self.model(p);
            samples
                .iter()
                .map(|s| {
                    let e = (m.predict(dev, &s.c, s.split, &s.p).unwrap_or(f64::MAX) / s.us).ln();
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
    let bounds = [(0.0, 50.0), (0.0, 50.0), (0.0, 5.0), (0.0, 50.0), (0.5, 20.0)];
    let to = |p: &[f64]| VendorCost { fixed_us: p[0], per_m_us: p[1], per_kilo_k_us: p[2], base_us: p[3], tbs: p[4] };
    let residuals = |p: &[f64]| -> Vec<f64> {
        let m = CostModel { vendor: to(p), ..unit_model(Arch::Sm90, 1.0) };
        vendor
            .iter()
            .map(|(prob, us)| {
                let e = (m.vendor_us(prob) / us).ln();
                if e > 0.0 { 2.0 * e } else { e }
            })
            .collect()
    };
    to(&levenberg_marquardt(vec![4.5, 0.5, 0.2, 3.0, 3.0], |i| bounds[i], residuals, 0.05))
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

/// How well the model predicts, and how good its picks are, on the measurements.
fn report(model: &CostModel, dev: &Device, samples: &[Sample], vendor: &[(Problem, f64)]) {
    let mut errors: Vec<f64> = samples.iter().map(|s| (model.predict(dev, &s.c, s.split, &s.p).unwrap_or(f64::MAX) / s.us).ln().abs()).collect();
    errors.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v[v.len() / 2];
    println!("{} candidates on {} problems: median prediction error {:.1} %", samples.len(), vendor.len(), (median(&errors).exp() - 1.0) * 100.0);
    // Per problem: the pick's measured time against the best measured.
    let mut by: HashMap<(u32, u32, u32, bool), Vec<&Sample>> = HashMap::new();
    for s in samples {
        by.entry((s.p.m, s.p.n, s.p.k, s.p.has_bias())).or_default().push(s);
    }
    let mut regret: Vec<f64> = by
        .values()
        .map(|v| {
            let pred = |s: &&Sample| model.predict(dev, &s.c, s.split, &s.p).unwrap_or(f64::MAX);
            let pick = v.iter().min_by(|a, b| pred(a).total_cmp(&pred(b))).expect("non-empty");
            pick.us / v.iter().map(|s| s.us).fold(f64::INFINITY, f64::min)
        })
        .collect();
    regret.sort_by(f64::total_cmp);
    let geo = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    println!("planner's pick against the best measured: geomean {:.3}, median {:.3}, worst {:.3}", geo(&regret), median(&regret), regret[regret.len() - 1]);
    // The fallback rule's pick, where it was among the measured candidates.
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
    fb.sort_by(f64::total_cmp);
    if !fb.is_empty() {
        println!("fallback rule's pick (on {} problems where it was measured): geomean {:.3}, median {:.3}, worst {:.3}", fb.len(), geo(&fb), median(&fb), fb[fb.len() - 1]);
    }
    let mut verr: Vec<f64> = vendor.iter().map(|(p, us)| (model.vendor_us(p) / us).ln().abs()).collect();
    verr.sort_by(f64::total_cmp);
    println!("vendor model: median error {:.1} %", (median(&verr).exp() - 1.0) * 100.0);
}
