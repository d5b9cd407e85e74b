//! The planner: for any problem, the kernel and split-K factor with the least
//! predicted time, and that time, from a cost model of the kernels whose constants
//! are fitted per device to measurements (`skinnylt fit` over `tune --dump`) or
//! taken from the hardware's documented numbers (AMD, until measured).
//!
//! The model, per candidate (kernel with tiles tm × tn × tk, split S) on M × N × K:
//! * tiles = ⌈N/tn⌉·⌈M/tm⌉, CTAs = tiles·S; a CTA streams (tn + tm)·⌈K/S⌉·2 bytes
//!   (with `token_row_weight` w: (tn + w·M/⌈M/tm⌉)·⌈K/S⌉·2, the token rows the tile
//!   holds);
//! * occupancy: the CTAs one compute unit holds (shared memory, threads); waves =
//!   ⌈CTAs / (units · occupancy)⌉, or for splits combined in a cluster ⌈tiles /
//!   clusters resident at once⌉ (`Device::cluster_slots`, measured), and r =
//!   min(occupancy, ⌈CTAs/units⌉) CTAs share a unit in a wave;
//! * a wave takes `wave_us` plus the longest of: the unit's intake,
//!   r · bytes per CTA / min(unit_intake, r · cta_gbs); the weights from DRAM,
//!   N·K·2 / (dram · waves); the matrix work, r · flops per CTA / unit_tflops;
//! * the launch adds `launch_us`; a split adds `split_us` + `per_split_us`·S +
//!   `partial_us_per_kib`·(one CTA's fp32 partial tile, KiB), and outside a
//!   cluster the partials' round trip at `partials_tbs`.
//!
//! Calibration: the model is a handful of constants per kind of kernel, and single
//! kernels differ from their kind by more than the differences between the
//! candidates it ranks (a pick among hundreds is the one the model underrates).
//! Where a table carries `calibration` (`skinnylt fit`), each kernel's predicted
//! time above the copy floor is scaled by the median of its measured/predicted
//! excess at that count of token tiles, and the planner plans only the kernels and
//! token-tile counts that were measured on the device. Scaling the excess, not the
//! time, keeps every prediction above the floor that no kernel beats. Measured on
//! the H100, leaving whole shapes out of the fit: the pick is within 1.09x of the
//! best candidate measured, against 1.15x uncalibrated (tuning/README.md).
//!
//! The vendor library's time is modelled too (`VendorCost`, fitted so that it errs
//! towards the vendor being faster; narrow outputs stream slower there), so that with a real
//! hipBLASLt present a shape no table lists runs on skinnylt only where the
//! predicted win clears `margin`.

use super::Choice;
use super::schema::{Calibration, CostModel, DType, Family, KernelConfig, KindCost, TargetFacts, MAX_CLUSTER_SPLIT, WGMMA_TOKENS};
use crate::route::Problem;

/// The margin by which a prediction must beat the vendor's where nothing was
/// measured: the AMD tables' (constants from documented hardware numbers), and fp8
/// operands on a model without calibration.
pub const UNCALIBRATED_MARGIN: f64 = 1.3;

/// The margin fp8 picks of a calibrated model must clear (at the slow end of the
/// 16-bit calibration their kernels share; the fit saw no fp8 time). Measured on
/// the training set at token counts no entry lists (H100, planner routing, M = 5
/// and 24, per tensor and per row; tuning/README.md): at 1.2 no pick lost, at 1.1
/// three LM heads did (0.94–0.96x).
pub const FP8_MARGIN: f64 = 1.2;

/// A 16-bit pick of a calibrated model also runs (with a vendor to forward to)
/// where its median prediction beats the vendor's by this factor, whatever the
/// slow end of its kernel's spread says (`engine::planner_wins`), at the token
/// counts of `MEDIAN_TOKENS`. Chosen on the training set's planner routing at M = 1,
/// 12 and 24 (tuning/README.md): at M = 12 it ran 25 more picks, every one a win.
pub const MEDIAN_MARGIN: f64 = 1.2;
/// Where the median rule holds: from 9 tokens, as at M = 1–8 it ran losses on the
/// training set (H100, M = 1, 3, 5 and 7, with the shared activation prefetch:
/// 5 of 41 more picks at 0.93–0.97x; tuning/README.md, "Token rows"); to 16, as at
/// M = 24 it ran the held-out N ≈ 5120, K = 512 projections at 0.90x (a 32-token
/// tile 24 rows full, which the calibration, fitted mostly at M = 1, does not
/// see), though the training picks there won.
pub const MEDIAN_TOKENS: std::ops::RangeInclusive<u32> = 9..=16;

/// The quantile of a kernel's measured excess factors that `Calibration::excess_high`
/// is: a predicted win runs (with a vendor to forward to) only where it holds at
/// this end of the kernel's spread (tuning/README.md has what this bought on the
/// H100, scored on shapes left out of the fit).
pub const SPREAD_QUANTILE: f64 = 0.9;
/// Token-tile counts from this one on share one calibration entry.
pub const CALIBRATED_TILES: u32 = 4;
/// The least time above the floor calibration scales (µs): a prediction at the
/// floor still keeps its kernel's measured overhead.
pub const MIN_EXCESS_US: f64 = 0.05;

/// The calibration entry a kernel running `m` tokens falls in: its count of token
/// tiles, the counts from `CALIBRATED_TILES` on as one.
pub fn token_tiles(c: &KernelConfig, m: u32) -> u32 {
    m.div_ceil(c.tile_m).clamp(1, CALIBRATED_TILES)
}

/// The bytes a 16-bit GEMM of `p` moves at least: W and X read, Y written once.
pub fn bytes(p: &Problem) -> f64 {
    let (m, n, k) = (p.m as f64, p.n as f64, p.k as f64);
    2.0 * (n * k + m * k + m * n)
}

/// Split-K factors the planner considers (as the tuner does).
pub const SPLITS: [u32; 12] = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32];
/// The fewest K blocks a split must leave each CTA (as the fallback and tuner).
pub const MIN_BLOCKS: u32 = 2;

/// What the model needs of the device besides the constants.
#[derive(Clone, Copy, Debug)]
pub struct Device {
    pub units: u32,
    pub facts: TargetFacts,
}

/// The thread-block clusters of S CTAs (S = 1..=16, the column) that a 132-SM
/// sm_90 part holds at once with r CTAs per SM (r = 1..=4, the row), as
/// `cudaOccupancyMaxActiveClusters` gives them on an H100 SXM. A cluster sits in
/// one GPC, and a GPC holds 16 to 18 SMs, so 132 / S clusters do not fit: at
/// S = 6 and one CTA per SM 17 do (102 CTAs), not 22, and a tile count just above
/// a row's number takes a second wave (an m64n128 wgmma kernel on 23 tiles: 17.0 µs
/// at S = 4, 27.8 µs at S = 5).
pub const SM90_CLUSTER_SLOTS: [[u32; 16]; 4] = [
    [132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7],
    [264, 132, 79, 62, 47, 39, 32, 30, 23, 21, 16, 16, 14, 14, 14, 14],
    [396, 198, 124, 92, 69, 62, 47, 45, 37, 30, 28, 28, 23, 21, 21, 21],
    [528, 264, 163, 124, 94, 79, 69, 62, 51, 44, 37, 37, 30, 30, 28, 28],
];

impl Device {
    /// The clusters of `s` CTAs resident at once with `per_unit` CTAs per unit: the
    /// measured 132-SM sm_90 numbers (beyond 4 CTAs per SM, the fourth row's share
    /// per CTA); elsewhere every unit's share, which no GPC boundary cuts.
    pub fn cluster_slots(&self, per_unit: u32, s: u32) -> u64 {
        let (per_unit, s) = (u64::from(per_unit.max(1)), s.max(1));
        let even = u64::from(self.units) * per_unit / u64::from(s);
        let slots = match (self.facts.name, self.units, s) {
            ("sm90", 132, 1..=16) => {
                let row = per_unit.min(4);
                (u64::from(SM90_CLUSTER_SLOTS[row as usize - 1][s as usize - 1]) * per_unit / row).min(even)
            }
            _ => even,
        };
        slots.max(1)
    }

    /// Waves of a launch of `tiles` tiles at split `s` with `per_unit` CTAs per
    /// unit: the splits of a tile form one cluster where `c` combines in one, and
    /// clusters wait for a GPC with room for all of theirs.
    pub fn waves(&self, c: &KernelConfig, tiles: u64, s: u32, per_unit: u32) -> u64 {
        if c.cluster && s > 1 {
            tiles.div_ceil(self.cluster_slots(per_unit, s))
        } else {
            (tiles * u64::from(s)).div_ceil(u64::from(self.units.max(1)) * u64::from(per_unit.max(1)))
        }
    }

    /// The CTAs of `c` one unit holds by shared memory (sm_90; 1 where the facts
    /// give no per-SM size).
    pub fn ctas_per_unit(&self, c: &KernelConfig) -> u32 {
        match self.facts.sm_lds {
            0 => 1,
            sm => (sm / (c.lds_bytes(&self.facts) + self.facts.lds_reserved)).max(1),
        }
    }
}

impl CostModel {
    fn kind(&self, c: &KernelConfig) -> Option<&KindCost> {
        self.kinds.iter().find(|k| k.family == c.family && k.cluster == c.cluster && k.tma == c.tma)
    }

    /// Predicted time (µs) of kernel `c` at split `s` on `p`, calibrated where the
    /// table has calibration; `None` for a kind without constants, or a kernel or
    /// token-tile count the calibration did not measure.
    pub fn predict(&self, dev: &Device, c: &KernelConfig, s: u32, p: &Problem) -> Option<f64> {
        self.calibrated(dev, c, s, p, |e| e.excess)
    }

    /// The time kernel `c` at split `s` takes on `p` at the slow end of its
    /// measurements (`Calibration::excess_high`, all but the slowest tenth): what a
    /// predicted win must hold against before skinnylt runs a shape no table lists.
    /// The model's time without calibration.
    pub fn predict_high(&self, dev: &Device, c: &KernelConfig, s: u32, p: &Problem) -> Option<f64> {
        self.calibrated(dev, c, s, p, |e| e.excess_high)
    }

    fn calibrated(&self, dev: &Device, c: &KernelConfig, s: u32, p: &Problem, factor: impl Fn(&Calibration) -> f64) -> Option<f64> {
        let t = self.modelled(dev, c, s, p)?;
        if self.calibration.is_empty() {
            return Some(t);
        }
        let tiles = token_tiles(c, p.m);
        let excess = factor(self.calibration.iter().find(|e| e.token_tiles == tiles && e.kernel == *c)?);
        let floor = self.calibration_floor_us(p);
        Some(floor + (t - floor).max(MIN_EXCESS_US) * excess)
    }

    /// The time (µs) the bytes of `p` take at the model's DRAM bandwidth.
    pub fn floor_us(&self, p: &Problem) -> f64 {
        bytes(p) / (self.dram_tbs * 1e6)
    }

    /// The floor calibration scales the excess above (`calibration_floor_tbs`).
    pub fn calibration_floor_us(&self, p: &Problem) -> f64 {
        bytes(p) / (self.calibration_floor_tbs.unwrap_or(self.dram_tbs) * 1e6)
    }

    /// The model's time (µs) of kernel `c` at split `s` on `p`, before calibration
    /// (what `skinnylt fit` fits the constants to); `None` for a kind the model has
    /// no constants for.
    pub fn modelled(&self, dev: &Device, c: &KernelConfig, s: u32, p: &Problem) -> Option<f64> {
        let kind = self.kind(c)?;
        let (n, k) = (p.n as f64, p.k as f64);
        let tile_count = u64::from(p.n.div_ceil(c.tile_n)) * u64::from(p.m.div_ceil(c.tile_m));
        let tiles = tile_count as f64;
        let ctas = tiles * s as f64;
        let units = dev.units.max(1) as f64;
        let lds = c.lds_bytes(&dev.facts) as f64 + 1024.0;
        let occupancy = (self.unit_shared_bytes as f64 / lds).floor().min((self.unit_threads / c.threads(&dev.facts).max(1)) as f64).clamp(1.0, 32.0);
        let waves = dev.waves(c, tile_count, s, occupancy as u32) as f64;
        let resident = occupancy.min((ctas / units).ceil());
        let blocks = ((p.k.div_ceil(c.tile_k)) as f64 / s as f64).ceil();
        let token_rows = match self.token_row_weight {
            Some(w) => w * p.m as f64 / p.m.div_ceil(c.tile_m).max(1) as f64,
            None => c.tile_m as f64,
        };
        let cta_bytes = (c.tile_n as f64 + token_rows) * blocks * c.tile_k as f64 * 2.0;
        let intake = (self.unit_intake_gbs * 1e3).min(resident * kind.cta_gbs * 1e3); // bytes/µs
        let cta_mflop = (c.tile_m * c.tile_n) as f64 * blocks * c.tile_k as f64 * 2.0 / 1e6;
        let wave = (resident * cta_bytes / intake).max(2.0 * n * k / (self.dram_tbs * 1e6 * waves)).max(resident * cta_mflop / kind.unit_tflops);
        let mut t = kind.launch_us + waves * (self.wave_us + wave);
        if s > 1 {
            let partial_kib = (c.tile_m * c.tile_n) as f64 * 4.0 / 1024.0;
            t += kind.split_us + kind.per_split_us * s as f64 + kind.partial_us_per_kib * partial_kib;
            if !c.cluster {
                t += tiles * s as f64 * partial_kib * 1024.0 / (self.partials_tbs * 1e6);
            }
        }
        Some(t)
    }

    /// The vendor library's predicted time (µs) on `p`.
    pub fn vendor_us(&self, p: &Problem) -> f64 {
        self.vendor.us(p)
    }
}

impl super::schema::VendorCost {
    /// The time (µs) this model gives the vendor on `p` (in units).
    pub fn us(&self, p: &Problem) -> f64 {
        let (m, n, k) = (p.m as f64, p.n as f64, p.k as f64);
        let bytes = 2.0 * (n * k + m * k + m * n);
        let narrow = if self.full_n > 0.0 { (n / self.full_n).min(1.0).powf(self.narrow_exponent) } else { 1.0 };
        (self.fixed_us + self.per_m_us * m / 128.0 + self.per_kilo_k_us * k / 1024.0).max(self.base_us + bytes / (self.tbs * narrow * 1e6))
    }
}

/// A candidate: its index in the arch's catalog, and its config.
pub type Candidate<'a> = (usize, &'a KernelConfig);

/// The split-K factors `c` may run `p` with: whole K blocks for every split, within
/// the cluster limit.
pub fn splits(c: &KernelConfig, p: &Problem) -> impl Iterator<Item = u32> + use<> {
    let blocks = p.k.div_ceil(c.tile_k);
    let cap = if c.cluster { MAX_CLUSTER_SPLIT } else { u32::MAX };
    SPLITS.into_iter().filter(move |&s| s <= cap && (s == 1 || blocks / s >= MIN_BLOCKS))
}

/// Whether a kernel's token tile suits `m` tokens (the tuner's rule and the
/// planner's): at most M's next power of two, or the family's smallest tile (8
/// tokens for mma.sync, 16 for wgmma). A 16-token wgmma tile at M <= 8 computes
/// padding rows that cost no bytes (TMA zero-fills them; cp.async reads no row past
/// M), and in fp8 it beats the mma.sync tiles at M = 1-8 on wide outputs (N = 16384,
/// K = 6656: 6 % on the H100).
pub fn suits(c: &KernelConfig, m: u32) -> bool {
    let smallest = if c.family == Family::Wgmma { WGMMA_TOKENS[0] } else { 8 };
    c.tile_m <= m.next_power_of_two().max(smallest)
}

/// The candidate with the least predicted time for `p`, and that time: every kernel
/// of `p`'s dtype in `catalog` at every split it allows. `cap` caps a split as the
/// launch plan would (partials capacity, counters); `None` when no kernel has
/// constants.
pub fn best<'a>(model: &CostModel, dev: &Device, catalog: impl Iterator<Item = (usize, DType, &'a KernelConfig)>, p: &Problem, cap: impl Fn(usize, u32) -> u32) -> Option<(Choice, f64)> {
    let mut best: Option<(Choice, f64)> = None;
    for (kernel, dtype, c) in catalog {
        if dtype != p.dtype || !suits(c, p.m) || !dev.facts.planned(dtype, c) {
            continue;
        }
        for s in splits(c, p) {
            let s = cap(kernel, s);
            let Some(t) = model.predict(dev, c, s, p) else { break };
            if best.is_none_or(|(_, bt)| t < bt) {
                best = Some((Choice::Run { kernel, split_k: s }, t));
            }
        }
    }
    best
}

/// A cost model with round constants, for tests: `kinds` as (family, cluster, tma).
/// The token counts batch-invariant planning weighs: the decode range.
pub const INVARIANT_MS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// What fixes the order in which a kernel sums one output's products, once K is
/// split at the same k for every kernel (`INVARIANT_K_UNIT`) and the split-K
/// partials are added in split order (`SPLIT_IN_ORDER`): the instruction family
/// and, where the waves of a CTA share a K block (K slices > 1), the K block and
/// the slices. With one slice, each output is one running sum over 16-k steps in
/// order, so the K block does not matter. Tile sizes, warps along M and N, stages,
/// operand staging and the combine's kind never do: the kernels of one class
/// compute a row to the same bits at one split (measured over every sm_90 kernel
/// by `skinnylt check --summation-classes`).
pub fn summation_class(c: &KernelConfig) -> SummationClass {
    let slices = c.warps[2];
    (c.family, if slices == 1 { 0 } else { c.tile_k }, slices)
}

/// A summation class: family, and K block and slices where a CTA's waves slice its
/// K block (`summation_class`).
pub type SummationClass = (super::schema::Family, u32, u32);

/// The splits batch-invariant planning considers: K in units of
/// `INVARIANT_K_UNIT` k, at least `MIN_BLOCKS` units per split.
pub fn invariant_splits(p: &Problem) -> impl Iterator<Item = u32> + use<> {
    let units = p.k.div_ceil(crate::kernels::params::INVARIANT_K_UNIT);
    SPLITS.into_iter().filter(move |&s| s == 1 || units / s >= MIN_BLOCKS)
}

/// The kernels batch-invariant planning weighs for one (dtype, N, K): those of the
/// dtype the model plans, and the split each must keep at every M.
pub struct InvariantCatalog<'a, F> {
    model: &'a CostModel,
    dev: &'a Device,
    members: Vec<(usize, &'a KernelConfig)>,
    /// `fits(kernel, s)`: the launch plan keeps split `s` at the largest M
    /// (partials capacity, counters).
    fits: F,
}

impl<'a, F: Fn(usize, u32) -> bool> InvariantCatalog<'a, F> {
    pub fn new(model: &'a CostModel, dev: &'a Device, catalog: &[(usize, DType, &'a KernelConfig)], dtype: DType, fits: F) -> Self {
        let members = catalog.iter().filter(|(_, d, c)| *d == dtype && dev.facts.planned(*d, c)).map(|&(i, _, c)| (i, c)).collect();
        InvariantCatalog { model, dev, members, fits }
    }

    /// Every class some member belongs to, sorted.
    pub fn classes(&self) -> Vec<SummationClass> {
        let mut classes: Vec<SummationClass> = self.members.iter().map(|(_, c)| summation_class(c)).collect();
        classes.sort();
        classes.dedup();
        classes
    }

    /// The class's fastest predicted kernel at split `s` for `q`, and its time.
    pub fn fastest(&self, class: SummationClass, s: u32, q: &Problem) -> Option<(f64, usize)> {
        self.members
            .iter()
            .filter(|(i, c)| summation_class(c) == class && (self.fits)(*i, s))
            .filter_map(|&(i, c)| Some((self.model.predict(self.dev, c, s, q)?, i)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// Whether `kernel` is a member of `class` that keeps split `s`.
    pub fn holds(&self, class: SummationClass, s: u32, kernel: usize) -> bool {
        self.members.iter().any(|&(i, c)| i == kernel && summation_class(c) == class) && (self.fits)(kernel, s)
    }

    /// Σ ln(time / reference) over `ms` for the pair (class, split `s`) of `p`'s
    /// (dtype, N, K): at each M, `time(m)` where it gives one (a measured time, or 0
    /// where the pair holds a measured winner and so loses nothing), else the class's
    /// fastest predicted time; `None` where some M has neither.
    pub fn loss(&self, p: &Problem, class: SummationClass, s: u32, ms: &[(u32, f64)], time: impl Fn(u32) -> Option<f64>) -> Option<f64> {
        let mut loss = 0.0;
        for &(m, reference) in ms {
            let t = match time(m) {
                Some(t) => t,
                None => self.fastest(class, s, &Problem { m, ..*p })?.0,
            };
            if t > 0.0 {
                loss += (t / reference).ln();
            }
        }
        Some(loss)
    }
}

/// Batch-invariant planning for `p`: one summation class and one split for every
/// M of (dtype, N, K), and at `p.m` a kernel of that class at that split.
///
/// The pair is the one that loses least, in geometric mean over `INVARIANT_MS`,
/// against the model's best at each M, where a pair that holds the table's
/// measured winner at that M (`measured(m)`: kernel and split) loses nothing; ties
/// go to the pair holding more winners. (Anchoring on the winners' predicted times
/// instead, or taking the pair that holds the most winners, measured slower on the
/// H100's public grid: docs/design.md, section 3.4.) At `p.m` the measured winner runs if the
/// pair holds it, else the class's fastest predicted kernel. `fits(kernel, s)`:
/// the launch plan keeps split `s` at the largest M (partials capacity, counters).
/// A table's measured batch-invariant plan for the shape (`Tuning::invariant`)
/// takes precedence over this (`engine::plan`).
pub fn invariant_best(
    model: &CostModel,
    dev: &Device,
    catalog: &[(usize, DType, &KernelConfig)],
    p: &Problem,
    fits: impl Fn(usize, u32) -> bool,
    measured: impl Fn(u32) -> Option<(usize, u32)>,
) -> Option<Choice> {
    let at = |m: u32| Problem { m, ..*p };
    let kernels = InvariantCatalog::new(model, dev, catalog, p.dtype, fits);
    // Per M: the model's best time, and the measured winner (kernel, split).
    let mut reference: Vec<(u32, f64)> = Vec::with_capacity(INVARIANT_MS.len());
    for &m in &INVARIANT_MS {
        reference.push((m, best(model, dev, catalog.iter().copied(), &at(m), |_, s| s)?.1));
    }
    let held = |class, s, m: u32| measured(m).filter(|&(k, ws)| ws == s && kernels.holds(class, s, k));
    // (loss, measured winners not held): the least loss, then the most winners.
    let mut pick: Option<((f64, usize), SummationClass, u32)> = None;
    for class in kernels.classes() {
        for s in invariant_splits(p) {
            let Some(loss) = kernels.loss(p, class, s, &reference, |m| held(class, s, m).map(|_| 0.0)) else { continue };
            let missed = INVARIANT_MS.iter().filter(|&&m| measured(m).is_some() && held(class, s, m).is_none()).count();
            if pick.is_none_or(|(l, _, _)| (loss, missed) < l) {
                pick = Some(((loss, missed), class, s));
            }
        }
    }
    let (_, class, s) = pick?;
    let kernel = match held(class, s, p.m) {
        Some((k, _)) => k,
        None => kernels.fastest(class, s, p)?.1,
    };
    Some(Choice::Run { kernel, split_k: s })
}

#[cfg(test)]
pub(crate) fn test_model(kinds: &[(super::schema::Family, bool, bool)]) -> CostModel {
    let kind = |&(family, cluster, tma): &(super::schema::Family, bool, bool)| KindCost { family, cluster, tma, launch_us: 1.0, cta_gbs: 60.0, split_us: 0.3, per_split_us: 0.05, partial_us_per_kib: 0.1, unit_tflops: 5.0 };
    CostModel {
        source: "test".into(),
        kinds: kinds.iter().map(kind).collect(),
        unit_intake_gbs: 70.0,
        dram_tbs: 3.0,
        partials_tbs: 1.0,
        wave_us: 0.6,
        unit_shared_bytes: 228 << 10,
        unit_threads: 2048,
        vendor: super::schema::VendorCost { fixed_us: 6.0, per_m_us: 0.7, per_kilo_k_us: 0.0, base_us: 3.7, tbs: 3.0, full_n: 0.0, narrow_exponent: 0.0 },
        vendor_row: None,
        token_row_weight: None,
        calibration_floor_tbs: None,
        margin: 1.15,
        calibration: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::schema::{Family, target};

    fn model() -> CostModel {
        test_model(&[(Family::Splitk, false, false), (Family::Splitk, true, false)])
    }

    fn dev() -> Device {
        Device { units: 132, facts: target("sm90").unwrap() }
    }

    fn cfg(tm: u32, tn: u32, cluster: bool) -> KernelConfig {
        KernelConfig { family: Family::Splitk, tile_m: tm, tile_n: tn, tile_k: 128, stages: 8, warps: [1, 1, 4], b_to_lds: true, cluster, tma: false }
    }

    /// Clusters of splits wait for a GPC with room: a 132-SM sm_90 part holds the
    /// measured number at once, fewer than its SMs' share, so one tile more than
    /// fits is a second wave; other devices (and splits outside a cluster) take
    /// every unit's share.
    #[test]
    fn clusters_of_splits_fill_the_gpcs_they_fit() {
        let d = dev();
        assert_eq!((d.cluster_slots(1, 1), d.cluster_slots(1, 2), d.cluster_slots(1, 6), d.cluster_slots(2, 6)), (132, 66, 17, 39));
        // Past four CTAs per SM, the fourth row's share per CTA, never above the even share.
        assert_eq!(d.cluster_slots(8, 16), 56);
        assert!((1..=32).all(|r| (1..=16).all(|s| d.cluster_slots(r, s) <= u64::from(132 * r / s) && d.cluster_slots(r, s) >= 1)));
        let other = Device { units: 114, ..d };
        assert_eq!(other.cluster_slots(1, 6), 19);
        let (clustered, plain) = (KernelConfig { family: Family::Wgmma, tile_m: 64, tile_n: 128, tile_k: 64, stages: 8, warps: [1, 8, 1], b_to_lds: true, cluster: true, tma: true }, cfg(8, 64, false));
        assert_eq!((d.waves(&clustered, 17, 6, 1), d.waves(&clustered, 18, 6, 1)), (1, 2));
        assert_eq!(d.waves(&plain, 18, 6, 1), 1);
        assert_eq!(d.waves(&clustered, 18, 1, 1), 1);
        // The model charges the second wave.
        let m = test_model(&[(Family::Wgmma, true, true)]);
        let (p17, p18) = (Problem::packed(DType::Bf16, 48, 17 * 128, 16384, false), Problem::packed(DType::Bf16, 48, 18 * 128, 16384, false));
        let (t17, t18) = (m.modelled(&d, &clustered, 6, &p17).unwrap(), m.modelled(&d, &clustered, 6, &p18).unwrap());
        assert!(t18 > 1.3 * t17, "17 tiles {t17:.1} us, 18 tiles {t18:.1} us");
        assert_eq!(d.ctas_per_unit(&clustered), 1);
        // No count overflows, however large the problem.
        assert_eq!(d.waves(&clustered, u64::from(u32::MAX) * 4, 16, 1), u64::from(u32::MAX) * 4 / 7 + 1);
        assert!(m.modelled(&d, &clustered, 16, &Problem::packed(DType::Bf16, u32::MAX, u32::MAX, 16384, false)).is_some_and(f64::is_finite));
    }

    /// Streaming-bound shapes take at least their weights over DRAM; more weight
    /// takes longer; a split that fills the GPU beats one CTA row on a big K.
    #[test]
    fn the_model_respects_bytes_and_parallelism() {
        let (m, d) = (model(), dev());
        let p = Problem::packed(DType::Bf16, 1, 8192, 8192, false);
        let c = cfg(8, 16, true);
        let t1 = m.predict(&d, &c, 1, &p).unwrap();
        assert!(t1 >= 2.0 * 8192.0 * 8192.0 / 3.0e6, "{t1}");
        let small = Problem::packed(DType::Bf16, 1, 256, 8192, false);
        let (s1, s8) = (m.predict(&d, &c, 1, &small).unwrap(), m.predict(&d, &c, 8, &small).unwrap());
        assert!(s8 < s1, "16 CTAs at S=1 ({s1}) vs 128 at S=8 ({s8})");
        assert!(m.predict(&d, &c, 1, &Problem::packed(DType::Bf16, 1, 16384, 8192, false)).unwrap() > t1);
        // A kind without constants is not predicted.
        assert!(m.predict(&d, &KernelConfig { family: Family::Wgmma, ..c }, 1, &p).is_none());
    }

    /// Without `token_row_weight` a kernel's time does not change with M inside one
    /// token tile (it counts `tile_m` rows); with it, it grows with the rows the
    /// tile holds, each at that weight, and a tile of M rows costs as the old
    /// model's at w = tile_m / M.
    #[test]
    fn token_rows_count_what_a_tile_holds() {
        let d = dev();
        // Small K, wide N, a 16-row weight tile, DRAM to spare: the unit's intake decides.
        let c = cfg(8, 16, true);
        let at = |m| Problem::packed(DType::Bf16, m, 7168, 512, false);
        let legacy = CostModel { dram_tbs: 20.0, ..model() };
        assert_eq!(legacy.modelled(&d, &c, 1, &at(1)), legacy.modelled(&d, &c, 1, &at(8)));
        let rows = CostModel { token_row_weight: Some(3.0), ..legacy.clone() };
        let t: Vec<f64> = [1, 5, 8].iter().map(|&m| rows.modelled(&d, &c, 1, &at(m)).unwrap()).collect();
        assert!(t[0] < t[1] && t[1] < t[2], "{t:?}");
        // Two token tiles of 6 rows cost as one of 6 rows each.
        let two = rows.modelled(&d, &c, 1, &at(12)).unwrap();
        let six = rows.modelled(&d, &c, 1, &at(6)).unwrap();
        assert!(two > six, "twice the CTAs");
        let full = CostModel { token_row_weight: Some(1.0), ..legacy.clone() };
        assert!((full.modelled(&d, &c, 1, &at(8)).unwrap() - legacy.modelled(&d, &c, 1, &at(8)).unwrap()).abs() < 1e-9);
    }

    /// A token tile suits M up to M's next power of two, and each family's smallest
    /// tile suits every M below it: 8 tokens for mma.sync, 16 for wgmma.
    #[test]
    fn each_family_s_smallest_tile_suits_every_smaller_m() {
        let wgmma = |tm| KernelConfig { family: Family::Wgmma, tma: true, ..cfg(tm, 64, true) };
        assert!(suits(&cfg(8, 64, false), 1) && suits(&cfg(16, 64, false), 9) && suits(&cfg(32, 64, false), 17));
        assert!(!suits(&cfg(16, 64, false), 8) && !suits(&cfg(32, 64, false), 16));
        assert!(suits(&wgmma(16), 1) && suits(&wgmma(16), 8) && suits(&wgmma(24), 17) && suits(&wgmma(32), 24));
        assert!(!suits(&wgmma(24), 16) && !suits(&wgmma(32), 8) && !suits(&wgmma(64), 16));
    }

    /// The search picks the least predicted time over kernels and splits, of the
    /// problem's dtype and a token tile that suits M.
    #[test]
    fn best_is_the_least_predicted() {
        let (m, d) = (model(), dev());
        let cfgs = [cfg(8, 16, true), cfg(8, 64, false), cfg(64, 16, true)];
        let catalog = || cfgs.iter().enumerate().map(|(i, c)| (i, DType::Bf16, c));
        let p = Problem::packed(DType::Bf16, 4, 1024, 7168, false);
        let (choice, t) = best(&m, &d, catalog(), &p, |_, s| s).unwrap();
        let Choice::Run { kernel, split_k } = choice else { panic!() };
        assert_ne!(kernel, 2, "a 64-token tile for 4 tokens");
        for (i, _, c) in catalog().filter(|(_, _, c)| suits(c, 4)) {
            for s in splits(c, &p) {
                assert!(m.predict(&d, c, s, &p).unwrap() >= t, "kernel {i} split {s} beats the pick ({kernel}, {split_k})");
            }
        }
        assert!(best(&m, &d, catalog(), &Problem::packed(DType::F16, 4, 1024, 7168, false), |_, s| s).is_none());
    }

    /// Batch-invariant planning: one class and split for every M, a pair that
    /// holds the measured winner at every M loses nothing and is picked, and the
    /// winner runs; a kernel of another class never runs.
    #[test]
    fn invariant_planning_keeps_one_class_and_trusts_measured_winners() {
        let (m, d) = (model(), dev());
        let slices = |tm, tn, wk| KernelConfig { warps: [1, 1, wk], ..cfg(tm, tn, false) };
        let cfgs = [slices(8, 16, 4), slices(32, 16, 4), slices(8, 32, 1), slices(64, 32, 1)];
        let catalog: Vec<_> = cfgs.iter().enumerate().map(|(i, c)| (i, DType::Bf16, c)).collect();
        let p = |mm| Problem::packed(DType::Bf16, mm, 2048, 8192, false);
        let pick = |mm, measured: &dyn Fn(u32) -> Option<(usize, u32)>| invariant_best(&m, &d, &catalog, &p(mm), |_, _| true, measured).unwrap();
        let class_split = |c: Choice| match c {
            Choice::Run { kernel, split_k } => (summation_class(&cfgs[kernel]), split_k),
            Choice::Forward => panic!(),
        };
        let first = class_split(pick(1, &|_| None));
        for mm in [2, 5, 17, 64, 100, 128] {
            assert_eq!(class_split(pick(mm, &|_| None)), first, "M={mm}");
        }
        // Kernel 2 (one slice) at split 4 measured fastest everywhere: its pair wins.
        let winner = |mm: u32| Some((if mm <= 8 { 2 } else { 3 }, 4));
        for mm in [1, 4, 8, 32, 128] {
            assert_eq!(pick(mm, &winner), Choice::Run { kernel: winner(mm).unwrap().0, split_k: 4 }, "M={mm}");
        }
    }

    /// Calibration scales a kernel's predicted time above the floor by its
    /// measured factor at the problem's token-tile count (counts from
    /// `CALIBRATED_TILES` on sharing one entry), never predicts below the floor,
    /// and leaves every kernel and token-tile count it did not measure unplanned.
    #[test]
    fn calibration_scales_the_excess_and_plans_only_what_was_measured() {
        let d = dev();
        let plain = model();
        let (a, b) = (cfg(8, 16, true), cfg(8, 64, false));
        let entry = |kernel, token_tiles, excess| Calibration { kernel, token_tiles, excess, excess_high: excess * 1.5, samples: 3 };
        let calibrated = CostModel { calibration: vec![entry(b, 1, 2.0), entry(b, CALIBRATED_TILES, 0.5), entry(a, 2, 1e-6)], ..plain.clone() };
        let p = Problem::packed(DType::Bf16, 4, 2048, 7168, false);
        let (t, floor) = (plain.predict(&d, &b, 2, &p).unwrap(), calibrated.floor_us(&p));
        assert!(t > floor);
        assert_eq!(calibrated.predict(&d, &b, 2, &p).unwrap(), floor + (t - floor) * 2.0);
        // Kernel a was not measured at one token tile: not predicted, so not planned,
        // even where the uncalibrated model prefers it.
        assert!(calibrated.predict(&d, &a, 1, &p).is_none());
        let catalog = [(0, DType::Bf16, &a), (1, DType::Bf16, &b)];
        let choice = |m: &CostModel, p: &Problem| best(m, &d, catalog.iter().copied(), p, |_, s| s).map(|(c, _)| c);
        assert!(matches!(choice(&plain, &p), Some(Choice::Run { kernel: 0, .. })), "the test needs the model to prefer kernel a");
        assert!(matches!(choice(&calibrated, &p), Some(Choice::Run { kernel: 1, .. })));
        // 12 tokens in 8-token tiles are two tiles: only a has that entry, and a
        // factor near zero still leaves the floor.
        let twelve = Problem { m: 12, ..p };
        assert!(calibrated.predict(&d, &b, 1, &twelve).is_none());
        assert!(calibrated.predict(&d, &a, 1, &twelve).unwrap() >= calibrated.floor_us(&twelve));
        assert!(matches!(choice(&calibrated, &twelve), Some(Choice::Run { kernel: 0, .. })));
        // 4 tiles and more share the last entry.
        for m in [25, 32, 100, 128] {
            let q = Problem { m, ..p };
            let t = plain.predict(&d, &b, 1, &q).unwrap();
            let floor = calibrated.floor_us(&q);
            assert_eq!(calibrated.predict(&d, &b, 1, &q).unwrap(), floor + (t - floor).max(MIN_EXCESS_US) * 0.5, "M={m}");
        }
        // Nothing measured for 3 tiles: no candidate at all.
        assert!(choice(&calibrated, &Problem { m: 20, ..p }).is_none());
    }

    #[test]
    fn the_vendor_model_has_a_floor_and_streams() {
        let m = model();
        assert_eq!(m.vendor_us(&Problem::packed(DType::Bf16, 1, 64, 64, false)), 6.0 + 0.7 / 128.0);
        let big = Problem::packed(DType::Bf16, 1, 16384, 16384, false);
        let streamed = 3.7 + 2.0 * (16384.0 * 16384.0 + 16384.0 + 16384.0) / 3.0e6;
        assert!((m.vendor_us(&big) - streamed).abs() < 1e-6);
        // Narrow outputs stream slower, wide ones not at all.
        let narrowing = CostModel { vendor: super::super::schema::VendorCost { full_n: 4096.0, narrow_exponent: 0.5, ..m.vendor }, ..m.clone() };
        assert!((narrowing.vendor_us(&big) - streamed).abs() < 1e-6);
        let narrow = Problem::packed(DType::Bf16, 1, 1024, 65536, false);
        let bytes = 2.0 * (1024.0 * 65536.0 + 65536.0 + 1024.0);
        assert!((narrowing.vendor_us(&narrow) - (3.7 + bytes / (3.0e6 * 0.5))).abs() < 1e-6);
    }
}
