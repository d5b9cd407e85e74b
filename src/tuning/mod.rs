//! Tuning: which kernel config (and split-K factor) runs a given shape.
//!
//! `tuning/<arch>.json` maps (dtype, N, K, bias, token range) to a config or to
//! "forward", and holds the planner's constants for the device; shapes it does not
//! list (or token counts its bands do not hold at) are planned (`planner`). The file is
//! read once per device, from `SKINNYLT_TUNING_FILE`, `SKINNYLT_TUNING_DIR`, the
//! installed data directory, or the copy embedded at build time, in that order.
//! Devices of one arch can differ enough to need their own table (an H200 streams
//! 1.4x faster than an H100: the H100's table ran 20 of its shapes at 0.83-0.99x of
//! cuBLASLt). A shipped device variant, `tuning/<arch>-<variant>.json`, names the
//! devices it is for, and a device whose name matches one reads that file (from the
//! same places) instead.

pub mod fallback;
pub mod planner;
pub mod schema;

use rustc_hash::FxHashMap;
use std::sync::OnceLock;

use crate::config::Config;
use crate::gpu::Arch;
use crate::kernels;
use crate::route::Problem;
use schema::{DType, ScaleKind, TuningFile};

/// What to run for one problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Kernel index in the arch's catalog, and the split-K factor.
    Run { kernel: usize, split_k: u32 },
    /// The vendor library was measured faster: forward.
    Forward,
}

/// A tuning file resolved against the compiled catalog, ready for lookups that
/// neither allocate nor parse (the hot path).
#[derive(Clone, Debug, Default)]
pub struct Tuning {
    pub source: String,
    /// Bands by (dtype, N, K, bias, the scale kind they were measured with).
    by_shape: FxHashMap<(DType, u32, u32, bool, ScaleKind), Vec<Band>>,
    /// Measured winners a shape no band holds for borrows its choice from
    /// (`transfer`); empty unless the file has anchors.
    anchors: Vec<Anchor>,
    /// When a borrowed choice runs with a vendor library present (`TRANSFER_RULE`
    /// with the file's `small_transfer`: `TransferRule::of`).
    rule: TransferRule,
    /// The planner's constants for the device, when the table has them.
    pub planner: Option<schema::CostModel>,
    /// The vendor's measured per-row (outer-vector) fp8 times as a floor over K:
    /// the lower convex hull of the fastest time at each K of the measured per-row
    /// entries, as (K in elements, µs), K ascending (`vendor_row_floor_us`).
    row_floor: Vec<(u32, f64)>,
    /// Measured batch-invariant plans by (dtype, N, K in elements, bias).
    invariant: FxHashMap<(DType, u32, u32, bool), InvariantPlan>,
    pub entries: usize,
    pub skipped: usize,
}

/// A measured batch-invariant plan of one (dtype, N, K, bias) (the file's
/// `invariant` entries): every M runs a kernel of `class` at `split_k`; at a token
/// count it was measured at, the kernel measured fastest there.
#[derive(Clone, Debug, PartialEq)]
pub struct InvariantPlan {
    pub class: planner::SummationClass,
    pub split_k: u32,
    /// (M, kernel), M ascending.
    pub measured: Vec<(u32, usize)>,
}

/// One token range of one shape: what to run, measured at `m_min` (the tuner
/// writes a measured M and the range up to the next one), or predicted by a model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Band {
    pub m_min: u32,
    pub m_max: u32,
    pub choice: Choice,
    /// Measured on the device, not predicted by a model.
    pub measured: bool,
}

impl Band {
    /// Whether the band's choice holds at `m` tokens: where it was measured, or
    /// where its kernel runs as many token tiles as there (a tile count that
    /// doubles doubles the weights read, and was never measured). A measured
    /// "forward" holds over its whole range: forwarding never loses to the vendor.
    pub fn holds_at(&self, arch: Arch, m: u32) -> bool {
        match self.choice {
            Choice::Forward => true,
            Choice::Run { kernel, .. } => {
                let tm = kernels::for_arch(arch).kernels[kernel].config.tile_m;
                m == self.m_min || m.div_ceil(tm) == self.m_min.div_ceil(tm)
            }
        }
    }
}

/// A measured winner: the problem it was measured on (K in elements, as tables
/// list it), its kernel and split (`Forward`: a table entry that keeps none), and
/// the vendor's time over its own there (0 where the table has no times).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    pub dtype: DType,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub choice: Choice,
    pub speedup: f64,
}

/// Transfer from anchors (`Tuning::transfer`): the nearest `TRANSFER_AGREE`
/// anchors within `TRANSFER_REACH` must all have beaten the vendor by
/// `TRANSFER_MARGIN` for a borrowed choice to run where a vendor library could
/// take the call. Chosen by leaving whole shapes out of the H100's measurements
/// (tuning/README.md): of 775 16-bit problems, one neighbour's word at 1.15 ran
/// 14 below 0.97x of cuBLASLt, two neighbours at 1.1 ran 5, three at 1.05 ran 16;
/// three at 1.15 ran 3 (and 2 of 168 in fp8), none where the vendor takes >= 10 µs.
pub const TRANSFER_MARGIN: f64 = 1.15;
pub const TRANSFER_AGREE: usize = 3;
/// The most tokens a borrowed choice runs at with a vendor library present: the
/// last token count the anchors measure densely (the H100's training shapes at
/// M = 48; 7 to 9 shapes at 64, 100 and 128). At 48 few anchors clear the margin
/// (the best kernel measured beat cuBLASLt by 1.05x in geometric mean there), but
/// where three neighbours do, the borrowed choice won: scored on shapes left out
/// it ran 11 of 195 problems at M = 48 with none below 1.00x, and one held-out
/// GEMM (N = 768, K = 5120) at 1.06x. Before the rounds check such borrowed
/// choices lost up to 21 % on held-out shapes at M = 48, so the limit was 32.
/// Standalone, the borrowed choice runs at any M.
pub const TRANSFER_MAX_M: u32 = 48;
/// The farthest an anchor may be, in natural logarithms of N, K and token tiles
/// (1.0: a factor of e in one of them).
pub const TRANSFER_REACH: f64 = 1.0;
/// How many of the `TRANSFER_AGREE` nearest anchors must have won with the kernel
/// a borrowed choice runs, unless they all won by `TRANSFER_STRONG`. Agreeing
/// anchors that won narrowly with three different kernels say the shapes around
/// are fast, not which kernel makes this one fast. Scored on shapes left out
/// (6-fold, each table's small-token margin): asking two of them to agree on the
/// kernel, and lending it from the nearer of the two, ran no problem below 0.97x,
/// where lending from the nearest ran 2 on the H100 and 2 on the H200; and at
/// 1.25x one vote is enough again: 1.120x deployed against 1.127x for the nearest
/// and 1.112x for two votes everywhere (H100; H200: 1.127x, 1.131x, 1.118x). On
/// the H200's held-out shapes the nearest's kernel had lost 10-15 % (N = 2048,
/// K = 5376 at M = 12; N = 5120, K = 640 at M = 24). 16-bit only
/// (`TransferRule::votes_at`).
pub const TRANSFER_VOTES: usize = 2;
pub const TRANSFER_STRONG: f64 = 1.25;

/// When a borrowed choice runs with a vendor library present: the `agree` nearest
/// anchors all beat the vendor by the margin (`small_margin` for a 16-bit problem
/// of no more than `small_m` tokens, else `margin`), `votes` of them won with the
/// kernel it runs (lent by the nearest of those; one vote where all won by
/// `strong`), and M is at most `max_m`. A table's rule is `TRANSFER_RULE` with its
/// `SmallTransfer`, if it has one (`TransferRule::of`); `fit --cross-validate`
/// scores others beside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransferRule {
    pub agree: usize,
    pub margin: f64,
    pub max_m: u32,
    pub small_m: u32,
    pub small_margin: f64,
    /// How many of the `agree` nearest anchors must have measured the lent kernel
    /// as their winner (1: the one it comes from).
    pub votes: usize,
    /// Where the `agree` nearest anchors all won by at least this much, one vote
    /// (the nearest's kernel) is enough.
    pub strong: f64,
}

pub const TRANSFER_RULE: TransferRule = TransferRule { agree: TRANSFER_AGREE, margin: TRANSFER_MARGIN, max_m: TRANSFER_MAX_M, small_m: 0, small_margin: TRANSFER_MARGIN, votes: TRANSFER_VOTES, strong: TRANSFER_STRONG };

impl Default for TransferRule {
    fn default() -> Self {
        TRANSFER_RULE
    }
}

impl TransferRule {
    /// The margin the anchors must clear for a problem of `m` tokens in `dtype`.
    pub fn margin_at(&self, dtype: DType, m: u32) -> f64 {
        if m <= self.small_m && !dtype.is_fp8() { self.small_margin } else { self.margin }
    }

    /// The votes a borrowed choice's kernel needs in `dtype`: fp8 takes the nearest's
    /// (its anchors are sparser: the grid and the training shapes at three token
    /// counts, so neighbours agree on the kernel less often, and one vote ran no
    /// held-out fp8 GEMM below 1.00x).
    pub fn votes_at(&self, dtype: DType) -> usize {
        if dtype.is_fp8() { 1 } else { self.votes }
    }

    /// `TRANSFER_RULE` with a table's small-token margin, if it has one.
    pub fn of(file: &schema::TuningFile) -> TransferRule {
        match file.small_transfer {
            Some(s) => TransferRule { small_m: s.max_m, small_margin: s.margin, ..TRANSFER_RULE },
            None => TRANSFER_RULE,
        }
    }
}

/// A choice borrowed from the nearest anchor (`Tuning::transfer`), and whether the
/// anchors near it won by the transfer margin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transfer {
    /// `Choice::Forward` where `spills` and no anchor lends.
    pub choice: Choice,
    pub wins: bool,
    /// The nearest anchors agree on a win, but not one of them lends: each one's
    /// choice would take more rounds of CTAs here than where it won. So the
    /// measured wins do not carry, and with a vendor library the call forwards.
    pub spills: bool,
}

pub fn embedded(arch: Arch) -> &'static str {
    match arch {
        Arch::Gfx942 => include_str!("../../tuning/gfx942.json"),
        Arch::Gfx950 => include_str!("../../tuning/gfx950.json"),
        Arch::Sm90 => include_str!("../../tuning/sm90.json"),
    }
}

/// The embedded table for launches without programmatic dependent launch, where
/// the arch has one (sm90: PDL changes which kernel and split win).
pub fn embedded_no_pdl(arch: Arch) -> Option<&'static str> {
    match arch {
        Arch::Sm90 => Some(include_str!("../../tuning/sm90-nopdl.json")),
        Arch::Gfx942 | Arch::Gfx950 => None,
    }
}

/// A device variant of an arch's tables (see the module comment): the files
/// `tuning/<arch>-<name>.json` and, optionally, `tuning/<arch>-<name>-nopdl.json`.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    pub name: &'static str,
    pub table: &'static str,
    pub no_pdl: Option<&'static str>,
}

pub fn embedded_variants(arch: Arch) -> &'static [Variant] {
    match arch {
        Arch::Sm90 => &[Variant {
            name: "h200",
            table: include_str!("../../tuning/sm90-h200.json"),
            no_pdl: Some(include_str!("../../tuning/sm90-h200-nopdl.json")),
        }],
        Arch::Gfx942 | Arch::Gfx950 => &[],
    }
}

impl Variant {
    /// The device-name patterns its table names (its header only).
    pub fn devices(&self) -> Vec<String> {
        #[derive(serde::Deserialize)]
        struct Header {
            #[serde(default)]
            devices: Vec<String>,
        }
        serde_json::from_str::<Header>(self.table).map(|h| h.devices).unwrap_or_default()
    }
}

/// The variant whose table names a device matching `device` (its name, as the
/// runtime reports it), if any.
pub fn variant_for(arch: Arch, device: &str) -> Option<&'static Variant> {
    // Each variant's patterns, read from its table's header once per process (a
    // table is thousands of lines; the loaders ask once per table kind).
    static PATTERNS: [OnceLock<Vec<Vec<String>>>; Arch::ALL.len()] = [const { OnceLock::new() }; Arch::ALL.len()];
    let slot = Arch::ALL.iter().position(|&a| a == arch)?;
    let patterns = PATTERNS[slot].get_or_init(|| {
        embedded_variants(arch).iter().map(|v| v.devices().iter().map(|d| d.to_ascii_lowercase()).collect()).collect()
    });
    let device = device.to_ascii_lowercase();
    embedded_variants(arch)
        .iter()
        .zip(patterns)
        .find(|(_, ds)| ds.iter().any(|d| !d.is_empty() && device.contains(d.as_str())))
        .map(|(v, _)| v)
}

/// The file name of `arch`'s table on `device`: `<arch>[-<variant>][-nopdl].json`
/// (`-nopdl` only where launches can use PDL at all: sm90).
pub fn file_name(arch: Arch, device: &str, pdl: bool) -> String {
    name_of(arch, variant_for(arch, device), pdl)
}

/// The file name of `arch`'s table for a device of `variant` (none: the arch's
/// own), with or without PDL.
pub fn name_of(arch: Arch, variant: Option<&Variant>, pdl: bool) -> String {
    let variant = variant.map(|v| format!("-{}", v.name)).unwrap_or_default();
    let no_pdl = !pdl && embedded_no_pdl(arch).is_some();
    format!("{}{variant}{}.json", arch.name(), if no_pdl { "-nopdl" } else { "" })
}

pub fn embedded_fallback() -> &'static str {
    include_str!("../../tuning/fallback.json")
}

/// The installed data directory: next to this library's real location
/// (`<prefix>/lib[/<triple>]/libskinnylt.so` → `<prefix>/share/skinnylt/tuning`),
/// else the packages' `/usr/share/skinnylt/tuning`.
pub fn installed_dir() -> Option<std::path::PathBuf> {
    // dladdr reports the path the object was opened by (/lib/... through a merged
    // /usr, or argv[0] for the CLI): resolve it to the real file first.
    let own = crate::dl::own_object().and_then(|o| o.1).map(std::path::PathBuf::from);
    let own = own.and_then(|p| std::fs::canonicalize(&p).ok().or_else(|| std::fs::canonicalize("/proc/self/exe").ok()));
    own.iter()
        .flat_map(|lib| lib.ancestors().skip(1).take(3).map(|p| p.join("share/skinnylt/tuning")))
        .chain(std::iter::once(std::path::PathBuf::from("/usr/share/skinnylt/tuning")))
        .find(|p| p.is_dir())
}

/// A place a table may be read from, and the variable that named it, if any.
struct Candidate {
    path: std::path::PathBuf,
    named_by: Option<&'static str>,
}

/// Largest tuning file read: about 100 times the shipped tables; a larger file is
/// not a table (`/dev/zero`, a mistake) and is refused before it is read.
pub const MAX_TABLE_BYTES: u64 = 64 << 20;

/// Reads a tuning file: `Ok(None)` when there is none. Only a regular file of at
/// most [`MAX_TABLE_BYTES`] is read, opened without blocking, so a FIFO or a
/// device cannot stall the first `hipblasLtCreate`.
pub fn read_table(path: &std::path::Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_owned());
    }
    if meta.len() > MAX_TABLE_BYTES {
        return Err(format!("{} bytes, more than the {MAX_TABLE_BYTES} a table may have", meta.len()));
    }
    let mut text = String::new();
    // `take`: the file may grow while it is read.
    file.take(MAX_TABLE_BYTES + 1).read_to_string(&mut text).map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_TABLE_BYTES {
        return Err(format!("more than the {MAX_TABLE_BYTES} bytes a table may have"));
    }
    Ok(Some(text))
}

/// Why `SKINNYLT_TUNING_FILE` cannot be used, checked when the process starts (a
/// table is otherwise read only when a device loads, which a machine without a
/// GPU never does). The same words as a load's report, so it is said once.
pub fn check_named_file(path: &str) -> Result<(), String> {
    let text = read_table(std::path::Path::new(path))?.ok_or_else(|| "no such file".to_owned())?;
    serde_json::from_str::<TuningFile>(&text).map(drop).map_err(|e| e.to_string())
}

/// The report for a table file that is not used.
fn report_unused(what: &str, e: &str) {
    crate::log::config_error(format_args!("{what} is not used ({e}); the next table in the search order is"));
}

/// Reports `SKINNYLT_TUNING_FILE` if it cannot be used (`check_named_file`).
pub fn check_configured(cfg: &Config) {
    if let Some(f) = &cfg.tuning_file
        && let Err(e) = check_named_file(f)
    {
        report_unused(&format!("SKINNYLT_TUNING_FILE={f:?}"), &e);
    }
}

/// Where tables are looked for before the embedded copies, in order:
/// `SKINNYLT_TUNING_DIR`, then the installed data directory (after a
/// `SKINNYLT_TUNING_FILE`, which names one table for every device).
pub fn search_dirs(cfg: &Config) -> impl Iterator<Item = std::path::PathBuf> + use<> {
    let dir = cfg.tuning_dir.as_ref().map(std::path::PathBuf::from);
    dir.into_iter().chain(installed_dir())
}

impl Tuning {
    /// Loads the tuning for `arch` on the device named `device` from the first
    /// source that exists (the device's variant file where it has one).
    pub fn load(cfg: &Config, arch: Arch, device: &str) -> Tuning {
        let variant = variant_for(arch, device);
        let name = name_of(arch, variant, true);
        if variant.is_some() && cfg.tuning_file.is_none() {
            // The first directory with either file holds the arch's table but not the
            // variant's: a table the user put there is skipped on this device.
            let general = format!("{}.json", arch.name());
            let first = search_dirs(cfg).find(|d| d.join(&general).exists() || d.join(&name).exists());
            if let Some(d) = first.filter(|d| !d.join(&name).exists()) {
                crate::log_warn!("{device} reads {name}, not {} (rename it to use it on this device)", d.join(&general).display());
            }
        }
        let embedded = variant.map_or(embedded(arch), |v| v.table);
        let file = cfg.tuning_file.as_ref().map(|f| Candidate { path: f.into(), named_by: Some("SKINNYLT_TUNING_FILE") });
        let dirs = search_dirs(cfg).map(|d| Candidate { path: d.join(&name), named_by: None });
        Tuning::first_of(arch, file.into_iter().chain(dirs), embedded, &name).unwrap_or_default()
    }

    /// The table for launches without PDL: `<arch>[-<variant>]-nopdl.json` from the
    /// tuning directory, the installed one, else the embedded copy; none where the
    /// arch (or the device's variant) has none, or where `SKINNYLT_TUNING_FILE` names
    /// one table for every launch.
    pub fn load_no_pdl(cfg: &Config, arch: Arch, device: &str) -> Option<Tuning> {
        if cfg.tuning_file.is_some() {
            return None;
        }
        let variant = variant_for(arch, device);
        let name = name_of(arch, variant, false);
        let embedded = match variant {
            Some(v) => v.no_pdl?,
            None => embedded_no_pdl(arch)?,
        };
        Tuning::first_of(arch, search_dirs(cfg).map(|d| Candidate { path: d.join(&name), named_by: None }), embedded, &name)
    }

    /// The first of `candidates` that reads and parses, else the embedded copy of
    /// `name`. A candidate that exists but cannot be used is reported and skipped;
    /// one the user named (`SKINNYLT_TUNING_FILE`) is reported even when missing.
    fn first_of(arch: Arch, candidates: impl Iterator<Item = Candidate>, embedded: &str, name: &str) -> Option<Tuning> {
        for c in candidates {
            let shown = c.path.display();
            let what = c.named_by.map_or_else(|| format!("tuning file {shown}"), |var| format!("{var}={shown:?}"));
            let parsed = match read_table(&c.path) {
                Ok(Some(text)) => Tuning::parse(arch, &text, &shown.to_string()),
                Ok(None) if c.named_by.is_none() => continue,
                Ok(None) => Err("no such file".to_owned()),
                Err(e) => Err(e),
            };
            match parsed {
                Ok(t) => return Some(t),
                Err(e) => report_unused(&what, &e),
            }
        }
        Tuning::parse(arch, embedded, &format!("embedded {name}")).ok()
    }

    pub fn parse(arch: Arch, text: &str, source: &str) -> Result<Tuning, String> {
        let file: TuningFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.arch != arch.name() {
            return Err(format!("file is for {}, device is {}", file.arch, arch.name()));
        }
        if let Some(bad) = file.small_transfer.map(|s| s.margin).filter(|m| !(m.is_finite() && *m >= 1.0)) {
            return Err(format!("small_transfer margin {bad}: a factor of at least 1 (a win over the vendor)"));
        }
        let rule = TransferRule::of(&file);
        let mut t = Tuning { source: source.to_owned(), planner: file.planner, rule, ..Default::default() };
        let mut unknown = None;
        // The dtypes the file has anchors for plan by transfer, their entries'
        // measured winners counted among the anchors (a table's entries alone, the
        // public grid's 27 shapes, are too sparse to borrow from: in fp8 on the H100
        // they ran held-out shapes down to 0.92x).
        let mut anchor_dtypes: Vec<DType> = file.anchors.iter().map(|a| a.dtype).collect();
        anchor_dtypes.sort();
        anchor_dtypes.dedup();
        let transfers = |d: DType| anchor_dtypes.contains(&d);
        let mut row_minima = Vec::new();
        for (e, is_anchor) in file.entries.iter().map(|e| (e, false)).chain(file.anchors.iter().map(|e| (e, true))) {
            let choice = match &e.kernel {
                None => Choice::Forward,
                Some(c) => match kernels::index_of(arch, e.dtype, c) {
                    Some(kernel) if e.split_k >= 1 => Choice::Run { kernel, split_k: e.split_k },
                    _ => {
                        // A config this binary does not contain (a hand-edited file).
                        unknown.get_or_insert(c);
                        t.skipped += 1;
                        continue;
                    }
                },
            };
            let measured = e.source.starts_with("measured");
            if let (true, false, Some(v)) = (measured, e.scales.is_tensor(), e.vendor_us) {
                row_minima.push((e.k, v));
            }
            // Anchors are per-tensor verdicts: a per-row entry's speedup is over the
            // vendor's slower outer-vector kernels, and would lend a per-tensor call wins
            // it does not have (per-row calls borrow per-tensor verdicts, which hold).
            if measured && transfers(e.dtype) && e.scales.is_tensor() {
                let speedup = match (e.us, e.vendor_us) {
                    (Some(us), Some(v)) if us > 0.0 => v / us,
                    _ => 0.0,
                };
                t.anchors.push(Anchor { dtype: e.dtype, m: e.m_min, n: e.n, k: e.k, choice, speedup });
            }
            if is_anchor {
                continue;
            }
            t.by_shape.entry((e.dtype, e.n, e.k, e.bias, e.scales)).or_default().push(Band { m_min: e.m_min, m_max: e.m_max, choice, measured });
            t.entries += 1;
        }
        t.row_floor = lower_hull(row_minima);
        for e in &file.invariant {
            let key = (e.dtype, e.n, e.k, e.bias);
            let (Some(c), true) = (&e.kernel, e.split_k >= 1) else {
                return Err(format!("invariant entry N = {}, K = {}, M = {}: a kernel and a split of at least 1", e.n, e.k, e.m_min));
            };
            let Some(kernel) = kernels::index_of(arch, e.dtype, c) else {
                unknown.get_or_insert(c);
                t.skipped += 1;
                continue;
            };
            let plan = t.invariant.entry(key).or_insert_with(|| InvariantPlan { class: planner::summation_class(c), split_k: e.split_k, measured: Vec::new() });
            if (plan.class, plan.split_k) != (planner::summation_class(c), e.split_k) {
                return Err(format!("invariant entries of N = {}, K = {} name two summation classes or splits: one shape sums in one order", e.n, e.k));
            }
            plan.measured.push((e.m_min, kernel));
        }
        for plan in t.invariant.values_mut() {
            plan.measured.sort();
        }
        if let Some(first) = unknown {
            // One report per table, however many entries it has.
            crate::log::config_error(format_args!("{source}: {} entries name kernels not in this build (the first: {first:?}); the planner decides for them", t.skipped));
        }
        Ok(t)
    }

    /// The vendor library's predicted time (µs) on `p` (in units) by `model`; for fp8
    /// with scale vectors on both sides, by the model's per-row vendor model where it
    /// has one, and at least `vendor_row_floor_us`.
    pub fn vendor_us(&self, model: &schema::CostModel, p: &Problem) -> f64 {
        let both = crate::kernels::params::SCALE_A_VEC | crate::kernels::params::SCALE_B_VEC;
        if !(p.dtype.is_fp8() && p.epilogue & both == both) {
            return model.vendor_us(p);
        }
        let modelled = model.vendor_row.as_ref().map_or_else(|| model.vendor_us(p), |v| v.us(p));
        modelled.max(self.vendor_row_floor_us(p).unwrap_or(0.0))
    }

    /// The least time the vendor's per-row fp8 kernels were measured to take at
    /// `p`'s K (`p` in units), from the table's per-row entries: the lower convex
    /// hull over K of the fastest measured time at each K, between the smallest and
    /// the largest K measured (`None` outside, or with fewer than two Ks). cuBLASLt's
    /// outer-vector kernels take a time that grows with K whatever N and M are (on
    /// the H100 about 9.7 µs at K = 2880 and 39 µs at K = 16384, for N = 64 as for
    /// N = 2304), 1.07–2.8x its per-tensor time on the public grid, so the
    /// 16-bit vendor model alone would forward per-row calls skinnylt wins.
    pub fn vendor_row_floor_us(&self, p: &Problem) -> Option<f64> {
        let k = p.k * p.dtype.per_unit();
        let w = self.row_floor.windows(2).find(|w| w[0].0 <= k && k <= w[1].0)?;
        let ((k0, t0), (k1, t1)) = (w[0], w[1]);
        Some(t0 + (t1 - t0) * (k - k0) as f64 / (k1 - k0) as f64)
    }

    /// The measured batch-invariant plan of `p`'s (dtype, N, K, bias) (`p` in
    /// units), if the table has one.
    pub fn invariant(&self, p: &Problem) -> Option<&InvariantPlan> {
        self.invariant.get(&(p.dtype, p.n, p.k * p.dtype.per_unit(), p.has_bias()))
    }

    /// The (N, K in elements, bias) of every measured batch-invariant plan, sorted,
    /// each once (a shape planned in both 16-bit dtypes too).
    pub fn invariant_shapes(&self) -> Vec<(u32, u32, bool)> {
        let mut shapes: Vec<_> = self.invariant.keys().map(|&(_, n, k, bias)| (n, k, bias)).collect();
        shapes.sort();
        shapes.dedup();
        shapes
    }

    /// The K range (elements) `vendor_row_floor_us` holds over, if any.
    pub fn vendor_row_floor_range(&self) -> Option<(u32, u32)> {
        match self.row_floor[..] {
            [first, .., last] => Some((first.0, last.0)),
            _ => None,
        }
    }

    /// A table with one measured entry: `choice` for exactly `p`'s shape and M (`p`
    /// in elements, as tables list K).
    pub fn single(p: &Problem, choice: Choice) -> Tuning {
        let mut t = Tuning { source: "forced".into(), entries: 1, ..Default::default() };
        t.by_shape.insert((p.dtype, p.n, p.k, p.has_bias(), p.scale_kind()), vec![Band { m_min: p.m, m_max: p.m, choice, measured: true }]);
        t
    }

    /// The measured winners transfer borrows from (the file's anchors and, in a
    /// table that has anchors, its entries' measured winners).
    /// When this table's borrowed choices run with a vendor library present.
    pub fn transfer_rule(&self) -> TransferRule {
        self.rule
    }

    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }

    /// Whether every entry was measured on the device (none predicted by a model).
    pub fn measured(&self) -> bool {
        self.by_shape.values().flatten().all(|b| b.measured)
    }

    /// Every measured entry that runs a kernel, as (dtype, N, K, bias, the M it was
    /// measured at), in no particular order: what a correctness suite of the table
    /// covers (an fp8 shape measured with both scale kinds is listed twice).
    pub fn measured_runs(&self) -> impl Iterator<Item = (DType, u32, u32, bool, u32)> + '_ {
        self.by_shape.iter().flat_map(|(&(dtype, n, k, bias, _), bands)| {
            bands.iter().filter(|b| b.measured && matches!(b.choice, Choice::Run { .. })).map(move |b| (dtype, n, k, bias, b.m_min))
        })
    }

    /// A choice for `p` (the engine's unit view) borrowed from the table's anchors:
    /// the nearest anchor of `p`'s dtype (distance in ln N, ln K and the ln of the
    /// count of the arch's smallest token tiles, within `TRANSFER_REACH`: at M = 1
    /// and 5 a decode kernel streams the same bytes) whose kernel runs as many token
    /// tiles at `p.m` as where it
    /// was measured, at the split that gives `p` that anchor's count of CTAs
    /// (`splits(kernel)`: the splits the launch plan keeps; the smaller on a tie).
    /// It `wins` where the `TRANSFER_AGREE` nearest anchors all beat the vendor by
    /// `TRANSFER_MARGIN` (and it comes from one of them) at no more than
    /// `TRANSFER_MAX_M` tokens. `None` without anchors near enough. Off the hot path:
    /// plans are memoised per problem.
    ///
    /// An anchor lends only a choice that puts no more CTAs on the busiest of the
    /// `units` compute units than it ran with where measured: a win in one round
    /// does not survive a second (H100, M = 24: a 16-token tile at split 1 beat
    /// cuBLASLt 1.38x on N = 4096, K = 512 in 128 CTAs, and lent to N = 5120 and
    /// 5376 ran them in 160–168 at 0.86–0.91x; at M = 1 the 32-row split-K tile
    /// went from 1.35x on N = 4096 to 1.01x on N = 5120, K = 1024), nor one that
    /// takes more waves: at the split that matches its count of CTAs a cluster of
    /// splits may not fit the GPCs (`planner::Device::cluster_slots`; H100, M = 48:
    /// an m64n128 wgmma kernel lent to N = 2304, K = 16384 at split 6 ran 18
    /// clusters where 17 fit, at 0.78x).
    pub fn transfer(&self, arch: Arch, units: u32, p: &Problem, splits: impl Fn(usize) -> Vec<u32>) -> Option<Transfer> {
        self.transfer_by(self.rule, arch, units, p, splits)
    }

    /// `transfer` judged by another rule (`fit --cross-validate` compares rules).
    pub fn transfer_by(&self, rule: TransferRule, arch: Arch, units: u32, p: &Problem, splits: impl Fn(usize) -> Vec<u32>) -> Option<Transfer> {
        let k = p.k * p.dtype.per_unit();
        let toks = schema::target(arch.name()).map_or(8, |f| f.atom_toks);
        let ln = |a: u32, b: u32| (a as f64 / b as f64).ln();
        let mut near: Vec<(f64, &Anchor)> = self
            .anchors
            .iter()
            .filter(|a| a.dtype == p.dtype)
            .map(|a| ((ln(p.m.div_ceil(toks), a.m.div_ceil(toks)).powi(2) + ln(p.n, a.n).powi(2) + ln(k, a.k).powi(2)).sqrt(), a))
            .filter(|(d, _)| *d <= TRANSFER_REACH)
            .collect();
        near.sort_by(|x, y| x.0.total_cmp(&y.0));
        let all = kernels::for_arch(arch).kernels;
        let dev = schema::target(arch.name()).map(|facts| planner::Device { units, facts });
        // What anchor `a` lends `p`, if anything: its kernel (where it runs as many
        // token tiles), at the split that gives `p` its count of CTAs; `Err` where
        // that puts more CTAs on the busiest of the units than where it won, or
        // takes more waves (a cluster of splits waits for a GPC with room).
        let lend = |a: &Anchor| -> Option<Result<Choice, ()>> {
            let Choice::Run { kernel, split_k } = a.choice else { return None };
            let c = all[kernel].config;
            if p.m.div_ceil(c.tile_m) != a.m.div_ceil(c.tile_m) {
                return None;
            }
            let ctas = |n: u32, s: u32| n.div_ceil(c.tile_n) as f64 * s as f64;
            let want = ctas(a.n, split_k);
            let split = splits(kernel).into_iter().min_by(|&x, &y| (ctas(p.n, x) / want).ln().abs().total_cmp(&(ctas(p.n, y) / want).ln().abs()).then(x.cmp(&y)))?;
            let tiles = |n: u32, m: u32| u64::from(n.div_ceil(c.tile_n)) * u64::from(m.div_ceil(c.tile_m));
            let rounds = |n: u32, m: u32, s: u32| (tiles(n, m) * u64::from(s)).div_ceil(u64::from(units.max(1)));
            let waves = |n: u32, m: u32, s: u32| dev.map_or(0, |d| d.waves(&c, tiles(n, m), s, d.ctas_per_unit(&c)));
            if rounds(p.n, p.m, split) > rounds(a.n, a.m, split_k) || waves(p.n, p.m, split) > waves(a.n, a.m, split_k) {
                return Some(Err(()));
            }
            Some(Ok(Choice::Run { kernel, split_k: split }))
        };
        let lent: Vec<Option<Result<Choice, ()>>> = near.iter().map(|(_, a)| lend(a)).collect();
        let agreed = p.m <= rule.max_m && near.len() >= rule.agree && near[..rule.agree].iter().all(|(_, a)| a.speedup >= rule.margin_at(p.dtype, p.m));
        // How many of the agreeing anchors won with `choice`'s kernel.
        let agreeing = rule.agree.min(near.len());
        let votes = |choice: Choice| {
            let Choice::Run { kernel, .. } = choice else { return 0 };
            near[..agreeing].iter().filter(|(_, a)| matches!(a.choice, Choice::Run { kernel: k, .. } if k == kernel)).count()
        };
        // The choice: the nearest lent one, or where the anchors agree, the nearest
        // lent one whose kernel enough of them won with. It wins only if it comes
        // from one of the agreeing anchors and has those votes.
        let needed = if near[..agreeing].iter().all(|(_, a)| a.speedup >= rule.strong) { 1 } else { rule.votes_at(p.dtype) };
        let voted = (0..agreeing).find(|&at| matches!(lent[at], Some(Ok(c)) if votes(c) >= needed));
        let first = if agreed && voted.is_some() { voted } else { lent.iter().position(|l| matches!(l, Some(Ok(_)))) };
        let wins = agreed && voted.is_some();
        let spills = agreed && !wins && lent[..rule.agree].iter().any(|l| matches!(l, Some(Err(()))));
        match first {
            Some(at) => {
                let Some(Ok(choice)) = lent[at] else { unreachable!("`first` is a lent choice") };
                Some(Transfer { choice, wins, spills })
            }
            None if spills => Some(Transfer { choice: Choice::Forward, wins: false, spills }),
            None => None,
        }
    }

    /// The table's band for this problem's shape and token count, if it lists one.
    /// `p` is the engine's (`Problem::unit_view`); tables list K in elements. fp8
    /// with per-row scales takes the per-row band, else the per-tensor one: a
    /// per-tensor run verdict holds per row too (the vendor slows more than
    /// skinnylt, see `ScaleKind`), a per-tensor forward is only conservative.
    pub fn lookup(&self, p: &Problem) -> Option<Band> {
        let find = |kind| {
            let bands = self.by_shape.get(&(p.dtype, p.n, p.k * p.dtype.per_unit(), p.has_bias(), kind))?;
            bands.iter().find(|b| b.m_min <= p.m && p.m <= b.m_max).copied()
        };
        let kind = p.scale_kind();
        find(kind).or_else(|| if kind == ScaleKind::Row { find(ScaleKind::Tensor) } else { None })
    }
}

/// The lower convex hull of the fastest time at each K of `points` (K, µs), K
/// ascending: a floor that holds under every point and interpolates between them.
fn lower_hull(mut points: Vec<(u32, f64)>) -> Vec<(u32, f64)> {
    points.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    points.dedup_by_key(|p| p.0);
    let mut hull: Vec<(u32, f64)> = Vec::with_capacity(points.len());
    for p in points {
        // Drop the last point while it lies on or above the segment from the one
        // before it to `p`.
        while let [.., a, b] = hull[..] {
            let cross = (b.0 as f64 - a.0 as f64) * (p.1 - a.1) - (b.1 - a.1) * (p.0 as f64 - a.0 as f64);
            if cross > 0.0 {
                break;
            }
            hull.pop();
        }
        hull.push(p);
    }
    hull
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::schema::{FallbackFile, TuningFile, compiled_set, target};

    /// Every embedded table of an arch: the main one, the one without PDL, and the
    /// device variants' (both kinds).
    fn texts(a: Arch) -> Vec<&'static str> {
        let mut v = vec![embedded(a)];
        v.extend(embedded_no_pdl(a));
        for var in embedded_variants(a) {
            v.push(var.table);
            v.extend(var.no_pdl);
        }
        v
    }

    /// Each arch's shipped tables, as build.rs compiles them: the main one with the
    /// entries of every other appended.
    fn files() -> Vec<(Arch, TuningFile)> {
        Arch::ALL
            .iter()
            .map(|a| {
                let texts = texts(*a);
                let mut f: TuningFile = serde_json::from_str(texts[0]).unwrap();
                for text in &texts[1..] {
                    f.append(serde_json::from_str(text).unwrap()).unwrap();
                }
                (*a, f)
            })
            .collect()
    }

    /// Measured batch-invariant plans parse into one class and split per shape
    /// (looked up in units, listed in elements); two classes or splits for one
    /// shape are a table error, not a silent pick.
    #[test]
    fn invariant_plans_hold_one_class_and_split_per_shape() {
        // Two configs every sm_90 build compiles: one slice, and four K slices.
        let cfg = |warps: &str| match warps {
            "[1,4,1]" => r#"{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true}"#,
            _ => r#"{"family":"splitk","tile_m":8,"tile_n":16,"tile_k":128,"stages":8,"warps":[1,1,4],"b_to_lds":true,"cluster":true}"#,
        };
        let entry = |dtype: &str, k: u32, m: u32, warps: &str, split: u32| format!(r#"{{"dtype":"{dtype}","n":4096,"k":{k},"bias":true,"m_min":{m},"m_max":{m},"source":"measured","kernel":{},"split_k":{split}}}"#, cfg(warps));
        let file = |e: &[String]| format!(r#"{{"schema":1,"arch":"sm90","entries":[],"invariant":[{}]}}"#, e.join(","));
        let t = Tuning::parse(Arch::Sm90, &file(&[entry("bf16", 2048, 64, "[1,4,1]", 2), entry("bf16", 2048, 1, "[1,4,1]", 2)]), "test").unwrap();
        let plan = t.invariant(&Problem::packed(DType::Bf16, 7, 4096, 2048, true)).unwrap();
        assert_eq!((plan.class, plan.split_k), ((schema::Family::Splitk, 0, 1), 2));
        assert_eq!(plan.measured.iter().map(|&(m, _)| m).collect::<Vec<_>>(), [1, 64]);
        assert!(t.invariant(&Problem::packed(DType::Bf16, 7, 4096, 2048, false)).is_none());
        assert!(t.invariant(&Problem::packed(DType::F16, 7, 4096, 2048, true)).is_none());
        assert_eq!(t.invariant_shapes(), [(4096, 2048, true)]);
        // Another split, or another class (K slices), for the same shape.
        assert!(Tuning::parse(Arch::Sm90, &file(&[entry("bf16", 2048, 1, "[1,4,1]", 2), entry("bf16", 2048, 8, "[1,4,1]", 3)]), "test").is_err());
        assert!(Tuning::parse(Arch::Sm90, &file(&[entry("bf16", 2048, 1, "[1,4,1]", 2), entry("bf16", 2048, 8, "[1,1,4]", 2)]), "test").is_err());
    }

    /// Every `tuning/<arch>-*.json` build.rs compiles in is one the library can load
    /// (its no-PDL table or a variant's), and every embedded variant is on disk.
    #[test]
    fn the_arch_files_on_disk_are_the_embedded_ones() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tuning");
        for &a in Arch::ALL.iter() {
            let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|f| f.starts_with(&format!("{}-", a.name())) && f.ends_with(".json"))
                .collect();
            on_disk.sort();
            let mut known: Vec<String> = embedded_no_pdl(a).map(|_| format!("{}-nopdl.json", a.name())).into_iter().collect();
            for v in embedded_variants(a) {
                known.push(format!("{}-{}.json", a.name(), v.name));
                known.extend(v.no_pdl.map(|_| format!("{}-{}-nopdl.json", a.name(), v.name)));
            }
            known.sort();
            assert_eq!(on_disk, known, "{}", a.name());
            for (text, name) in embedded_variants(a).iter().map(|v| (v.table, format!("{}-{}.json", a.name(), v.name))) {
                assert_eq!(std::fs::read_to_string(dir.join(&name)).unwrap(), text, "{name}");
            }
        }
    }

    /// A suite of the table sees every measured entry that runs a kernel, once, and
    /// neither forwards nor model entries.
    #[test]
    fn measured_runs_are_the_measured_kernel_entries() {
        for (arch, mut file) in files() {
            // The variants' batch-invariant plans are their devices' own: merged, one
            // shape could name two.
            file.invariant.clear();
            let t = Tuning::parse(arch, &serde_json::to_string(&file).unwrap(), "test").unwrap();
            let mut want: Vec<_> = file.entries.iter().filter(|e| e.kernel.is_some() && e.source.starts_with("measured")).map(|e| (e.dtype, e.n, e.k, e.bias, e.m_min)).collect();
            let mut got: Vec<_> = t.measured_runs().collect();
            want.sort();
            got.sort();
            assert_eq!(got, want, "{}", arch.name());
            assert_eq!(got.is_empty(), arch != Arch::Sm90, "{}: only sm90 has measured entries", arch.name());
        }
    }

    /// A device whose name contains a variant's pattern reads the variant's tables
    /// (both kinds), any other the arch's; the main tables name no devices, every
    /// variant's do, and all of them parse whole and measured.
    #[test]
    fn devices_pick_their_variant() {
        assert_eq!(variant_for(Arch::Sm90, "NVIDIA H200").map(|v| v.name), Some("h200"));
        assert_eq!(variant_for(Arch::Sm90, "NVIDIA H200 NVL").map(|v| v.name), Some("h200"));
        assert!(variant_for(Arch::Sm90, "NVIDIA H100 80GB HBM3").is_none());
        assert!(variant_for(Arch::Gfx942, "AMD Instinct MI300X").is_none());
        assert_eq!(file_name(Arch::Sm90, "NVIDIA H200", true), "sm90-h200.json");
        assert_eq!(file_name(Arch::Sm90, "NVIDIA H200", false), "sm90-h200-nopdl.json");
        assert_eq!(file_name(Arch::Sm90, "NVIDIA H100 PCIe", false), "sm90-nopdl.json");
        assert_eq!(file_name(Arch::Gfx950, "AMD Instinct MI355X", true), "gfx950.json");
        for &a in Arch::ALL.iter() {
            let main: TuningFile = serde_json::from_str(embedded(a)).unwrap();
            assert!(main.devices.is_empty(), "{}", a.name());
            for var in embedded_variants(a) {
                for text in std::iter::once(var.table).chain(var.no_pdl) {
                    let f: TuningFile = serde_json::from_str(text).unwrap();
                    assert_eq!((f.arch.as_str(), f.devices.is_empty()), (a.name(), false), "{}", var.name);
                    let t = Tuning::parse(a, text, var.name).unwrap();
                    assert_eq!((t.skipped, t.measured()), (0, true), "{}", var.name);
                }
            }
        }
        assert_eq!(file_name(Arch::Gfx942, "AMD Instinct MI300X", false), "gfx942.json");
        let cfg = Config::from_env();
        let h200 = Tuning::load(&cfg, Arch::Sm90, "NVIDIA H200");
        let h100 = Tuning::load(&cfg, Arch::Sm90, "NVIDIA H100 80GB HBM3");
        if cfg.tuning_file.is_none() && cfg.tuning_dir.is_none() && installed_dir().is_none() {
            assert_eq!(h200.source, "embedded sm90-h200.json");
            assert_eq!(h100.source, "embedded sm90.json");
            let no_pdl = Tuning::load_no_pdl(&cfg, Arch::Sm90, "NVIDIA H200").unwrap();
            assert_eq!(no_pdl.source, "embedded sm90-h200-nopdl.json");
        }
    }

    /// Nothing a shipped tuning file (or the fallback set) names may be missing from
    /// the binary, and every such config obeys its target's rules.
    #[test]
    fn every_tuned_and_fallback_config_is_compiled_in() {
        let fb: FallbackFile = serde_json::from_str(embedded_fallback()).unwrap();
        for (arch, file) in files() {
            assert_eq!(file.arch, arch.name());
            let want = compiled_set(arch.name(), &file, &fb);
            assert!(!want.is_empty());
            let have = kernels::for_arch(arch);
            assert!(!have.image.is_empty(), "{} has no code object", arch.name());
            for (d, c) in &want {
                c.check(&target(arch.name()).unwrap()).unwrap();
                let i = kernels::index_of(arch, *d, c).unwrap_or_else(|| panic!("{} {:?} missing", arch.name(), c));
                assert_eq!(have.kernels[i].name, c.name(*d));
            }
            assert_eq!(have.kernels.len(), want.len());
            let t = Tuning::parse(arch, embedded(arch), "embedded").unwrap();
            assert_eq!(t.skipped, 0);
            if let Some(text) = embedded_no_pdl(arch) {
                let t = Tuning::parse(arch, text, "embedded").unwrap();
                assert_eq!((t.skipped, t.measured()), (0, true));
                // It re-measures the main table's shapes, in every dtype and scale kind.
                let kinds = |text: &str| {
                    let mut n = std::collections::BTreeMap::new();
                    for e in serde_json::from_str::<TuningFile>(text).unwrap().entries {
                        *n.entry((e.dtype.name(), e.scales == ScaleKind::Row)).or_insert(0usize) += 1;
                    }
                    n
                };
                assert_eq!(t.entries, kinds(text).values().sum::<usize>());
                assert_eq!(kinds(text), kinds(embedded(arch)));
            }
        }
    }

    /// The VDMFMA family: its own kernel names, serde name "vdmfma", and its target
    /// rules (8-token tiles, whole sparse atoms along N and K).
    #[test]
    fn vdmfma_configs_are_named_and_checked() {
        use crate::tuning::schema::{Family, KernelConfig};
        let c: KernelConfig = serde_json::from_str(
            r#"{"family":"vdmfma","tile_m":8,"tile_n":64,"tile_k":128,"stages":2,"warps":[1,2,1],"b_to_lds":true}"#,
        )
        .unwrap();
        assert_eq!(c.family, Family::Vdmfma);
        assert_eq!(c.name(DType::Bf16), "skinnylt_vdmfma_bf16_m8n64k128_s2_w1x2x1_lds");
        let dense = KernelConfig { family: Family::Splitk, ..c };
        assert_ne!(c.name(DType::Bf16), dense.name(DType::Bf16));
        assert!(serde_json::to_string(&c).unwrap().contains("\"family\":\"vdmfma\""));
        for t in ["gfx942", "gfx950", "sm90"] {
            c.check(&target(t).unwrap()).unwrap();
            // 16 tokens: not this family's tile.
            assert!(KernelConfig { tile_m: 16, ..c }.check(&target(t).unwrap()).is_err(), "{t}");
        }
        // gfx950's atom takes 128 k per step; gfx942's and sm_90's 64.
        let k64 = KernelConfig { tile_k: 64, ..c };
        assert!(k64.check(&target("gfx950").unwrap()).is_err());
        k64.check(&target("gfx942").unwrap()).unwrap();
        k64.check(&target("sm90").unwrap()).unwrap();
        // AMD atoms are 32 weight rows per wave (two 16-column instruction groups); sm_90's 16.
        let n16 = KernelConfig { tile_n: 16, warps: [1, 1, 1], ..c };
        assert!(n16.check(&target("gfx942").unwrap()).is_err());
        n16.check(&target("sm90").unwrap()).unwrap();
    }

    /// The cluster combine's own receive slots (SplitCombine::recv_slots): as many
    /// tile partials as fit without costing a CTA per SM, at most 15; none
    /// without clusters.
    #[test]
    fn cluster_configs_reserve_receive_slots_without_losing_occupancy() {
        use crate::tuning::schema::KernelConfig;
        let sm90 = target("sm90").unwrap();
        let c: KernelConfig = serde_json::from_str(
            r#"{"family":"splitk","tile_m":8,"tile_n":16,"tile_k":128,"stages":8,"warps":[1,1,4],"b_to_lds":true,"cluster":true}"#,
        )
        .unwrap();
        // Ring 8 x 24 rows x 256 B + flag = 49168 B: 4 CTAs per 228 KiB SM, 8176 B
        // spare each: 15 slots of 512 B.
        assert_eq!(c.lds_bytes(&sm90), 49168 + 15 * 512);
        assert_eq!(KernelConfig { cluster: false, ..c }.lds_bytes(&sm90), 49168);
        // 6 stages of 256 k: 73744 B, 3 CTAs per SM, 3056 B spare: 5 slots.
        let deep = KernelConfig { tile_k: 256, stages: 6, warps: [1, 1, 8], ..c };
        assert_eq!(deep.lds_bytes(&sm90), 73744 + 5 * 512);
        let per_sm = |lds: u32| (228 << 10) / (lds + 1024);
        assert_eq!((per_sm(49168), per_sm(c.lds_bytes(&sm90))), (4, 4));
        assert_eq!((per_sm(73744), per_sm(deep.lds_bytes(&sm90))), (3, 3));
    }

    /// The warpgroup-MMA family: sm_90 only, the rules of wgmma_gemm.h, its own LDS
    /// formula (no K-slice buffer, 1 KiB for aligning the swizzle atoms), and never
    /// chosen by the fallback rule.
    #[test]
    fn wgmma_configs_are_named_checked_and_not_a_fallback() {
        use crate::tuning::schema::{Family, KernelConfig};
        let c: KernelConfig = serde_json::from_str(
            r#"{"family":"wgmma","tile_m":64,"tile_n":128,"tile_k":64,"stages":6,"warps":[1,8,1],"b_to_lds":true,"cluster":true}"#,
        )
        .unwrap();
        assert_eq!(c.family, Family::Wgmma);
        assert_eq!(c.name(DType::Bf16), "skinnylt_wgmma_bf16_m64n128k64_s6_w1x8x1_lds_cl");
        let sm90 = target("sm90").unwrap();
        c.check(&sm90).unwrap();
        assert_eq!(c.threads(&sm90), 256);
        // 6 stages x (128 + 64) rows x 128 B, + flag + alignment slack, + a 64 x 128
        // fp32 tile of receive slots for the one-hop cluster combine (one CTA per SM
        // either way).
        assert_eq!(c.lds_bytes(&sm90), 6 * 192 * 128 + 16 + 1024 + 64 * 128 * 4);
        assert_eq!(KernelConfig { cluster: false, ..c }.lds_bytes(&sm90), 6 * 192 * 128 + 16 + 1024);
        // A shallow ring of a wide tile: the staged fp32 tile (token rows padded
        // by 4 floats) is the larger use of LDS; no room left for receive slots.
        let shallow = KernelConfig { tile_m: 128, tile_n: 256, stages: 2, ..c };
        shallow.check(&sm90).unwrap();
        assert_eq!(shallow.lds_bytes(&sm90), 128 * 260 * 4 + 16 + 1024);
        for t in ["gfx942", "gfx950"] {
            assert!(c.check(&target(t).unwrap()).is_err(), "{t}");
        }
        let bad = [
            KernelConfig { tile_m: 40, ..c },                   // no such wgmma n in the prelude
            KernelConfig { tile_n: 96, ..c },                   // not 64 rows per warpgroup block
            KernelConfig { tile_n: 512, ..c },                  // > 2 blocks per warpgroup
            KernelConfig { tile_k: 512, ..c },                  // > 4 swizzle atoms
            KernelConfig { warps: [1, 8, 2], ..c },             // no K slices
            KernelConfig { b_to_lds: false, ..c },              // A from shared memory only
            KernelConfig { stages: 16, ..c },                   // over 227 KiB
        ];
        for b in bad {
            assert!(b.check(&sm90).is_err(), "{b:?}");
        }
        // The TMA feed: one producer warp more, two mbarriers per stage, its own
        // name; the other families have no such feed.
        let tma = KernelConfig { tma: true, ..c };
        tma.check(&sm90).unwrap();
        assert_eq!(tma.name(DType::Bf16), "skinnylt_wgmma_bf16_m64n128k64_s6_w1x8x1_lds_cl_tma");
        assert_eq!(tma.threads(&sm90), 288);
        assert_eq!(tma.lds_bytes(&sm90), c.lds_bytes(&sm90) + 6 * 16);
        assert_eq!(tma.family.instance_macro(tma.tma), "SK_WGMMA_TMA_INSTANCE");
        let dense = KernelConfig { family: Family::Splitk, warps: [1, 4, 1], tile_n: 64, ..tma };
        assert!(dense.check(&sm90).is_err());
        assert!(KernelConfig { tma: false, ..dense }.check(&sm90).is_ok());
        // The fallback never picks the family, even for M = 128 where its tiles fit.
        let fb = crate::tuning::fallback::Fallback::for_arch(Arch::Sm90);
        for m in [16, 32, 64, 128] {
            let p = crate::route::Problem::packed(DType::Bf16, m, 2880, 4096, false);
            let Some(Choice::Run { kernel, .. }) = fb.choose(132, &p) else { panic!("M={m}") };
            assert_ne!(kernels::for_arch(Arch::Sm90).kernels[kernel].config.family, Family::Wgmma, "M={m}");
        }
    }

    #[test]
    fn lookup_honours_ranges_and_forward() {
        let text = r#"{"schema":1,"arch":"sm90","entries":[
          {"dtype":"bf16","n":1024,"k":7168,"bias":false,"m_min":1,"m_max":8,"source":"measured",
           "kernel":{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true},"split_k":4},
          {"dtype":"bf16","n":1024,"k":7168,"bias":false,"m_min":9,"m_max":128,"source":"measured"}]}"#;
        let t = Tuning::parse(Arch::Sm90, text, "test").unwrap();
        let mut p = Problem::packed(DType::Bf16, 4, 1024, 7168, false);
        let b = t.lookup(&p).unwrap();
        assert!(matches!(b.choice, Choice::Run { split_k: 4, .. }) && b.measured);
        p.m = 9;
        assert_eq!(t.lookup(&p).map(|b| b.choice), Some(Choice::Forward));
        // A shape the table does not list: the planner's.
        p.bias = 0x100;
        assert_eq!(t.lookup(&p), None);
        let model = text.replace("\"measured\"", "\"model\"");
        p.bias = 0;
        assert!(!Tuning::parse(Arch::Sm90, &model, "test").unwrap().lookup(&p).unwrap().measured);
        assert!(Tuning::parse(Arch::Gfx942, text, "x").is_err());
    }

    /// The per-row vendor floor: the lower hull of each K's fastest measured per-row
    /// time, between the Ks measured; only calls with scale vectors on both sides
    /// see it, and only measured per-row entries make it.
    #[test]
    fn the_vendor_row_floor_is_the_lower_hull_of_the_measured_per_row_times() {
        assert_eq!(lower_hull(vec![(7168, 30.0), (2880, 10.0), (16384, 40.0), (6656, 42.0), (7168, 18.0), (4096, 16.0)]), vec![(2880, 10.0), (7168, 18.0), (16384, 40.0)]);
        assert_eq!(lower_hull(vec![(2880, 10.0)]), vec![(2880, 10.0)]);
        let entry = |k: u32, n: u32, v: f64, extra: &str| format!(r#"{{"dtype":"e4m3","n":{n},"k":{k},"bias":false,"m_min":1,"m_max":8,"source":"measured","vendor_us":{v}{extra}}}"#);
        let row = r#","scales":"row""#;
        let entries = [entry(2880, 640, 10.0, row), entry(7168, 64, 18.0, row), entry(7168, 2112, 30.0, row), entry(16384, 2304, 40.0, row), entry(6656, 16384, 42.0, row), entry(4096, 2880, 16.0, row), entry(5120, 64, 3.0, "")];
        let text = format!(r#"{{"schema":1,"arch":"sm90","entries":[{}]}}"#, entries.join(","));
        let t = Tuning::parse(Arch::Sm90, &text, "test").unwrap();
        let vectors = crate::kernels::params::SCALE_A_VEC | crate::kernels::params::SCALE_B_VEC;
        let p = |k: u32, epilogue: i32| Problem { epilogue, ..Problem::packed(DType::E4m3, 4, 1024, k, false).unit_view() };
        let floor = |k| t.vendor_row_floor_us(&p(k, vectors));
        assert_eq!(floor(2880), Some(10.0));
        assert_eq!(floor(5024), Some(14.0));
        assert_eq!(floor(11776), Some(29.0));
        assert_eq!(floor(16384), Some(40.0));
        assert_eq!((floor(2048), floor(20480)), (None, None));
        assert_eq!(t.vendor_row_floor_range(), Some((2880, 16384)));
        assert_eq!(Tuning::default().vendor_row_floor_range(), None);
        // The floor raises the model's prediction for calls with both vectors only.
        let model = crate::tuning::planner::test_model(&[]);
        let (both, one, none) = (p(5024, vectors), p(5024, crate::kernels::params::SCALE_B_VEC), p(5024, 0));
        assert!(model.vendor_us(&both) < 14.0);
        assert_eq!(t.vendor_us(&model, &both), 14.0);
        assert_eq!(t.vendor_us(&model, &one), model.vendor_us(&one));
        assert_eq!(t.vendor_us(&model, &none), model.vendor_us(&none));
        // A per-row vendor model replaces the 16-bit one for those calls, under the floor.
        let slow = crate::tuning::schema::VendorCost { base_us: 20.0, ..model.vendor };
        let with_row = crate::tuning::schema::CostModel { vendor_row: Some(slow), ..model.clone() };
        assert_eq!(t.vendor_us(&with_row, &both), slow.us(&both));
        assert!(slow.us(&both) > 14.0);
        let fast = crate::tuning::schema::VendorCost { fixed_us: 1.0, base_us: 1.0, ..model.vendor };
        assert_eq!(t.vendor_us(&crate::tuning::schema::CostModel { vendor_row: Some(fast), ..model.clone() }, &both), 14.0);
        assert_eq!(t.vendor_us(&with_row, &one), model.vendor_us(&one));
        assert_eq!(t.vendor_us(&with_row, &none), model.vendor_us(&none));
        // A table without per-row entries has no floor.
        assert_eq!(Tuning::default().vendor_row_floor_us(&both), None);
    }

    /// fp8 entries hold for the scale kind they were measured with: per-row calls
    /// take the per-row band where the table has one, else the per-tensor band;
    /// per-tensor calls never take a per-row band.
    #[test]
    fn fp8_bands_follow_the_scale_kind_they_were_measured_with() {
        let kernel = r#""kernel":{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true},"split_k":2"#;
        let text = format!(
            r#"{{"schema":1,"arch":"sm90","entries":[
          {{"dtype":"e4m3","n":2880,"k":2880,"bias":false,"m_min":1,"m_max":8,"source":"measured"}},
          {{"dtype":"e4m3","n":2880,"k":2880,"bias":false,"m_min":1,"m_max":8,"source":"measured","scales":"row",{kernel}}},
          {{"dtype":"e4m3","n":1024,"k":2880,"bias":false,"m_min":1,"m_max":8,"source":"measured",{kernel}}}]}}"#
        );
        let t = Tuning::parse(Arch::Sm90, &text, "test").unwrap();
        assert_eq!(t.entries, 3);
        let per_tensor = Problem::packed(DType::E4m3, 4, 2880, 2880, false).unit_view();
        let per_row = Problem { epilogue: crate::kernels::params::SCALE_A_VEC | crate::kernels::params::SCALE_B_VEC, ..per_tensor };
        assert_eq!(per_row.scale_kind(), ScaleKind::Row);
        assert_eq!(t.lookup(&per_tensor).map(|b| b.choice), Some(Choice::Forward));
        assert!(matches!(t.lookup(&per_row).map(|b| b.choice), Some(Choice::Run { split_k: 2, .. })));
        // Only a token scale vector is per row too; a shape measured per tensor only
        // answers per-row calls with its per-tensor band.
        let token_only = Problem { epilogue: crate::kernels::params::SCALE_B_VEC, n: 1024, ..per_tensor };
        assert!(matches!(t.lookup(&token_only).map(|b| b.choice), Some(Choice::Run { split_k: 2, .. })));
        // Per-row entries lend no anchor: with a per-tensor anchor in the file, the
        // table's anchors are that one and the measured per-tensor entry that runs.
        let with_anchor = text.replace(r#""entries":["#, &format!(r#""anchors":[{{"dtype":"e4m3","n":4096,"k":2880,"bias":false,"m_min":1,"m_max":1,"source":"measured",{kernel}}}],"entries":["#));
        let t = Tuning::parse(Arch::Sm90, &with_anchor, "test").unwrap();
        assert_eq!(t.anchors().len(), 3, "the file's anchor and the two per-tensor entries");
        assert!(t.anchors().iter().all(|a| a.n != 2880 || a.choice == Choice::Forward));
        // The field is written only for per-row entries.
        let file: TuningFile = serde_json::from_str(&text).unwrap();
        let back = serde_json::to_string(&file).unwrap();
        assert_eq!(back.matches(r#""scales":"row""#).count(), 1);
        assert!(!back.contains("tensor"));
    }

    /// A borrowed choice takes no more waves than its anchor did: 27 tiles of a
    /// one-CTA-per-SM wgmma kernel at split 4 are 27 clusters of 4 where 30 fit;
    /// N = 2304 gets the anchor's 108 CTAs at split 6, 18 clusters where 17 fit, so
    /// nothing lends (and with a vendor the call forwards); 16 tiles fit.
    #[test]
    fn transfer_keeps_clusters_within_the_gpcs() {
        let kernel = r#"{"family":"wgmma","tile_m":64,"tile_n":128,"tile_k":64,"stages":8,"warps":[1,8,1],"b_to_lds":true,"cluster":true,"tma":true}"#;
        let anchor = |n: u32| {
            format!(r#"{{"dtype":"bf16","n":{n},"k":16384,"bias":false,"m_min":48,"m_max":48,"source":"measured","kernel":{kernel},"split_k":4,"us":20.0,"vendor_us":30.0}}"#)
        };
        let file = format!(r#"{{"schema":1,"arch":"sm90","entries":[],"anchors":[{}]}}"#, [anchor(3328), anchor(3456), anchor(3584)].join(","));
        let t = Tuning::parse(Arch::Sm90, &file, "test").unwrap();
        let splits = |_| vec![1, 2, 3, 4, 5, 6, 8];
        let p = |n| Problem::packed(DType::Bf16, 48, n, 16384, false);
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(18 * 128), splits), Some(Transfer { choice: Choice::Forward, wins: false, spills: true }));
        let lent = t.transfer(Arch::Sm90, 132, &p(16 * 128), splits).unwrap();
        assert!(lent.wins && matches!(lent.choice, Choice::Run { split_k: 6, .. }), "{lent:?}");
    }

    /// A rule that asks for votes lends the kernel that enough of the agreeing
    /// anchors won with, from the nearest of them, and no win where none has them
    /// (anchors here win by 1.2x: past the margin, short of `strong`).
    #[test]
    fn transfer_with_votes_lends_the_kernel_the_agreeing_anchors_won_with() {
        let a = r#"{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true}"#;
        let b = r#"{"family":"splitk","tile_m":8,"tile_n":32,"tile_k":128,"stages":8,"warps":[1,2,2],"b_to_lds":true}"#;
        let c = r#"{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":256,"stages":6,"warps":[1,4,2],"b_to_lds":true}"#;
        let anchor = |kernel: &str, n: u32| {
            format!(r#"{{"dtype":"bf16","n":{n},"k":7168,"bias":false,"m_min":1,"m_max":1,"source":"measured","kernel":{kernel},"split_k":4,"us":5.0,"vendor_us":6.0}}"#)
        };
        let table = |anchors: &[String]| Tuning::parse(Arch::Sm90, &format!(r#"{{"schema":1,"arch":"sm90","entries":[],"anchors":[{}]}}"#, anchors.join(",")), "test").unwrap();
        let index = |json: &str| {
            let config: schema::KernelConfig = serde_json::from_str(json).unwrap();
            kernels::for_arch(Arch::Sm90).kernels.iter().position(|k| k.dtype == DType::Bf16 && k.config == config).unwrap()
        };
        let splits = |_| vec![1, 2, 3, 4, 6, 8];
        let p = Problem::packed(DType::Bf16, 1, 1024, 7168, false);
        assert_eq!(TRANSFER_RULE.votes, 2);
        // The nearest won with b, the next two with a: a, from the nearer of the two.
        let t = table(&[anchor(b, 1024), anchor(a, 1200), anchor(a, 1400)]);
        let lent = t.transfer(Arch::Sm90, 132, &p, splits).unwrap();
        assert!(lent.wins && matches!(lent.choice, Choice::Run { kernel, .. } if kernel == index(a)), "{lent:?}");
        // With one vote the nearest lends, b.
        let lent = t.transfer_by(TransferRule { votes: 1, ..TRANSFER_RULE }, Arch::Sm90, 132, &p, splits).unwrap();
        assert!(lent.wins && matches!(lent.choice, Choice::Run { kernel, .. } if kernel == index(b)), "{lent:?}");
        // Three kernels, one vote each: the nearest is lent (standalone), no win.
        let three = [anchor(b, 1024), anchor(a, 1200), anchor(c, 1400)];
        let lent = table(&three).transfer(Arch::Sm90, 132, &p, splits).unwrap();
        assert!(!lent.wins && matches!(lent.choice, Choice::Run { kernel, .. } if kernel == index(b)), "{lent:?}");
        // Unless they all won by `strong` (1.3x here).
        let won_big: Vec<String> = three.iter().map(|a| a.replace(r#""vendor_us":6.0"#, r#""vendor_us":6.5"#)).collect();
        assert!(table(&won_big).transfer(Arch::Sm90, 132, &p, splits).unwrap().wins);
        // fp8 takes the nearest's kernel.
        let fp8: Vec<String> = three.iter().map(|a| a.replace(r#""dtype":"bf16""#, r#""dtype":"e4m3""#)).collect();
        let lent = table(&fp8).transfer(Arch::Sm90, 132, &Problem::packed(DType::E4m3, 1, 1024, 7168, false), splits).unwrap();
        assert!(lent.wins, "{lent:?}");
    }

    /// Transfer: the nearest anchor's kernel, at the split that gives the problem the
    /// anchor's count of CTAs; a win only where the nearest anchors all won by
    /// the margin; never across a token-tile count, beyond reach, or from a table
    /// without anchors (whose entries then only band).
    #[test]
    fn transfer_borrows_the_nearest_winner_at_its_count_of_ctas() {
        let kernel = r#"{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true}"#;
        let anchor = |n: u32, m: u32, split: u32, us: f64, vendor: f64| {
            format!(r#"{{"dtype":"bf16","n":{n},"k":7168,"bias":false,"m_min":{m},"m_max":{m},"source":"measured","kernel":{kernel},"split_k":{split},"us":{us},"vendor_us":{vendor}}}"#)
        };
        let file = |anchors: &[String]| format!(r#"{{"schema":1,"arch":"sm90","entries":[],"anchors":[{}]}}"#, anchors.join(","));
        let splits = |_| vec![1, 2, 3, 4, 6, 8];
        let p = |m, n| Problem::packed(DType::Bf16, m, n, 7168, false);
        // N = 1024 at split 4 is 64 CTAs: N = 2048 gets them at split 2.
        let won = [anchor(1024, 1, 4, 5.0, 6.0), anchor(1536, 1, 3, 6.0, 7.0), anchor(768, 1, 5, 5.0, 6.5)];
        let t = Tuning::parse(Arch::Sm90, &file(&won), "test").unwrap();
        let kernel = kernels::for_arch(Arch::Sm90).kernels.iter().position(|k| k.dtype == DType::Bf16 && k.config.tile_m == 8 && k.config.tile_n == 64 && k.config.tile_k == 128 && k.config.stages == 4 && !k.config.cluster).unwrap();
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(1, 2048), splits), Some(Transfer { choice: Choice::Run { kernel, split_k: 2 }, wins: true, spills: false }));
        // Within the kernel's token tile (M = 5: one 8-token tile, as at M = 1).
        assert!(t.transfer(Arch::Sm90, 132, &p(5, 1024), splits).is_some_and(|b| b.wins));
        // Beyond TRANSFER_MAX_M a borrowed choice is no win.
        let late = [anchor(1024, 64, 4, 5.0, 6.0), anchor(1536, 64, 3, 6.0, 7.0), anchor(768, 64, 5, 5.0, 6.5)];
        let t_late = Tuning::parse(Arch::Sm90, &file(&late), "test").unwrap();
        assert_eq!(t_late.transfer(Arch::Sm90, 132, &p(64, 1024), splits).map(|b| b.wins), Some(false));
        // Not where the token tiles double, nor beyond reach.
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(12, 1024), splits), None);
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(1, 8192), splits), None);
        // One of the nearest short of the margin: borrowed, but no win.
        let one_short = [anchor(1024, 1, 4, 5.0, 6.0), anchor(1536, 1, 3, 6.0, 6.1), anchor(768, 1, 5, 5.0, 6.5)];
        let t = Tuning::parse(Arch::Sm90, &file(&one_short), "test").unwrap();
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(1, 2048), splits).map(|b| b.wins), Some(false));
        // Another rule judges the same anchors by its own count and margin: the
        // same borrowed choice, a different verdict.
        let looser = TransferRule { margin: 1.01, small_margin: 1.01, ..TRANSFER_RULE };
        assert_eq!(t.transfer_by(looser, Arch::Sm90, 132, &p(1, 2048), splits), Some(Transfer { choice: Choice::Run { kernel, split_k: 2 }, wins: true, spills: false }));
        let stricter = TransferRule { margin: 1.25, small_margin: 1.25, ..TRANSFER_RULE };
        let t_won = Tuning::parse(Arch::Sm90, &file(&won), "test").unwrap();
        assert_eq!(t_won.transfer_by(stricter, Arch::Sm90, 132, &p(1, 2048), splits).map(|b| b.wins), Some(false));
        // Narrow wins (1.05-1.06x) carry at a few tokens only in a table whose
        // device says so (`small_transfer`), not beyond its `max_m`, and not in fp8.
        let narrow = [anchor(1024, 1, 4, 5.0, 5.3), anchor(1536, 1, 3, 6.0, 6.3), anchor(768, 1, 5, 5.0, 5.3)];
        let with_small = |anchors: &[String]| format!(r#"{{"schema":1,"arch":"sm90","entries":[],"anchors":[{}],"small_transfer":{{"max_m":8,"margin":1.03}}}}"#, anchors.join(","));
        let t = Tuning::parse(Arch::Sm90, &with_small(&narrow), "test").unwrap();
        assert_eq!(t.transfer_rule(), TransferRule { small_m: 8, small_margin: 1.03, ..TRANSFER_RULE });
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(1, 2048), splits).map(|b| b.wins), Some(true));
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(8, 2048), splits).map(|b| b.wins), Some(true));
        assert_eq!(t.transfer_by(TRANSFER_RULE, Arch::Sm90, 132, &p(1, 2048), splits).map(|b| b.wins), Some(false));
        let plain = Tuning::parse(Arch::Sm90, &file(&narrow), "test").unwrap();
        assert_eq!(plain.transfer_rule(), TRANSFER_RULE);
        assert_eq!(plain.transfer(Arch::Sm90, 132, &p(1, 2048), splits).map(|b| b.wins), Some(false));
        let narrow_at_16 = narrow.iter().map(|a| a.replace(r#""m_min":1,"m_max":1"#, r#""m_min":16,"m_max":16"#)).collect::<Vec<_>>();
        let t = Tuning::parse(Arch::Sm90, &with_small(&narrow_at_16), "test").unwrap();
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(16, 2048), splits).map(|b| b.wins), Some(false));
        let rule = t.transfer_rule();
        assert_eq!(rule.margin_at(DType::Bf16, 1), 1.03);
        assert_eq!(rule.margin_at(DType::E4m3, 1), TRANSFER_MARGIN);
        assert_eq!(rule.margin_at(DType::Bf16, 9), TRANSFER_MARGIN);
        // A margin that is no win over the vendor is a configuration error.
        for bad in ["0.5", "-1"] {
            assert!(Tuning::parse(Arch::Sm90, &with_small(&narrow).replace(r#""margin":1.03"#, &format!(r#""margin":{bad}"#)), "test").is_err(), "{bad}");
        }
        // Fewer anchors than TRANSFER_AGREE are no agreement.
        let t = Tuning::parse(Arch::Sm90, &file(&won[..TRANSFER_AGREE - 1]), "test").unwrap();
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(1, 2048), splits).map(|b| b.wins), Some(false));
        // Entries are anchors only in a table that has anchors.
        let entries = format!(r#"{{"schema":1,"arch":"sm90","entries":[{}]}}"#, won.join(","));
        let t = Tuning::parse(Arch::Sm90, &entries, "test").unwrap();
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(1, 2048), splits), None);
        // A borrowed choice keeps its anchor's rounds of CTAs per unit: where N =
        // 2048 may take only split 1 or 3, the nearest count to every anchor's is
        // 96 CTAs, one round on 132 units but two on 72, where each anchor ran one.
        let t = Tuning::parse(Arch::Sm90, &file(&won), "test").unwrap();
        let one_or_three = |_| vec![1, 3];
        assert_eq!(t.transfer(Arch::Sm90, 132, &p(1, 2048), one_or_three).map(|b| b.choice), Some(Choice::Run { kernel, split_k: 3 }));
        // There the anchors' agreed win does not carry: with a vendor library the call forwards.
        assert_eq!(t.transfer(Arch::Sm90, 72, &p(1, 2048), one_or_three), Some(Transfer { choice: Choice::Forward, wins: false, spills: true }));
        // Anchors are not bands.
        assert_eq!(t.lookup(&p(1, 1024)), None);
        // Only a dtype with anchors transfers (f16 here has entries alone).
        let f16 = won.iter().map(|a| a.replace("bf16", "f16")).collect::<Vec<_>>().join(",");
        let mixed = format!(r#"{{"schema":1,"arch":"sm90","entries":[{f16}],"anchors":[{}]}}"#, won[0]);
        let t = Tuning::parse(Arch::Sm90, &mixed, "test").unwrap();
        let f16_problem = Problem::packed(DType::F16, 1, 2048, 7168, false);
        assert_eq!(t.transfer(Arch::Sm90, 132, &f16_problem, splits), None);
        assert!(t.transfer(Arch::Sm90, 132, &p(1, 2048), splits).is_some());
    }

    /// A measured choice holds at the M it was measured at and wherever its kernel
    /// runs as many token tiles; not where the tiles double. A measured forward
    /// holds over its whole range.
    #[test]
    fn a_band_holds_only_where_its_token_tiles_do() {
        let cat = kernels::for_arch(Arch::Sm90).kernels;
        let with_tile = |tm: u32| cat.iter().position(|k| k.config.tile_m == tm && k.dtype == DType::Bf16).unwrap();
        let band = |kernel, m_min, m_max| Band { m_min, m_max, choice: Choice::Run { kernel, split_k: 2 }, measured: true };
        let b8 = band(with_tile(8), 8, 15);
        assert!(b8.holds_at(Arch::Sm90, 8));
        assert!(!b8.holds_at(Arch::Sm90, 9) && !b8.holds_at(Arch::Sm90, 15));
        let b16 = band(with_tile(16), 16, 31);
        assert!(b16.holds_at(Arch::Sm90, 16) && !b16.holds_at(Arch::Sm90, 17));
        let b32 = band(with_tile(32), 17, 31);
        assert!((17..=31).all(|m| b32.holds_at(Arch::Sm90, m)));
        let b1 = band(with_tile(8), 1, 1);
        assert!(b1.holds_at(Arch::Sm90, 1));
        let fwd = Band { choice: Choice::Forward, ..b8 };
        assert!((8..=15).all(|m| fwd.holds_at(Arch::Sm90, m)));
    }

    /// The shipped H100 and H200 tables carry fitted planner constants with a kind
    /// for every kernel kind they compile; the AMD tables carry the hardware's.
    #[test]
    fn the_shipped_tables_carry_planner_constants() {
        for text in texts(Arch::Sm90).into_iter().chain(texts(Arch::Gfx942)).chain(texts(Arch::Gfx950)) {
            let f: TuningFile = serde_json::from_str(text).unwrap();
            let Some(m) = f.planner else { panic!("{} table without planner constants", f.arch) };
            assert!(m.margin >= 1.0 && m.dram_tbs > 0.0 && m.unit_intake_gbs > 0.0, "{}", f.arch);
            let arch = Arch::from_name(&f.arch).unwrap();
            for k in kernels::for_arch(arch).kernels {
                assert!(m.kinds.iter().any(|c| (c.family, c.cluster, c.tma) == (k.config.family, k.config.cluster, k.config.tma)), "{}: no constants for {}", f.arch, k.name);
            }
        }
    }

    /// A table of `n` forward entries, each its own shape.
    fn big_table(arch: Arch, n: u32) -> String {
        let entries: Vec<String> = (0..n).map(|i| format!(r#"{{"dtype":"bf16","n":{},"k":4096,"bias":false,"m_min":1,"m_max":8,"source":"measured"}}"#, 8 + 8 * i)).collect();
        format!(r#"{{"schema":1,"arch":"{}","entries":[{}]}}"#, arch.name(), entries.join(","))
    }

    /// Parsing is linear in the table and a lookup does not depend on its size:
    /// ten times the entries cost about ten times the parse (a quadratic parse
    /// costs a hundred), and a shape the table does not list is found absent at once.
    #[test]
    fn large_tables_parse_in_linear_time_and_look_up_in_constant_time() {
        let arch = Arch::Sm90;
        let time = |n: u32| {
            let text = big_table(arch, n);
            (0..3)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    let t = Tuning::parse(arch, &text, "big").unwrap();
                    assert_eq!(t.entries, n as usize);
                    t0.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        let (small, large) = (time(10_000), time(100_000));
        assert!(large < 40.0 * small, "10k entries {small:.4} s, 100k {large:.4} s: not linear");
        let t = Tuning::parse(arch, &big_table(arch, 100_000), "big").unwrap();
        let p = Problem::packed(DType::Bf16, 4, 7, 4096, false);
        assert!(t.lookup(&p).is_none());
        assert!(t.lookup(&Problem { n: 8 * 50_000, ..p }).is_some());
    }

    /// Entries naming kernels this build lacks are skipped, counted, and reported
    /// once per table (not once per entry).
    #[test]
    fn unknown_kernels_are_skipped_and_reported_once() {
        let arch = Arch::Sm90;
        let mut file: TuningFile = serde_json::from_str(embedded(arch)).unwrap();
        let mut bad = file.entries.iter().find(|e| e.kernel.is_some()).unwrap().clone();
        bad.kernel.as_mut().unwrap().tile_n = 12345;
        let kept = file.entries.len();
        file.entries.extend([bad.clone(), bad]);
        let t = Tuning::parse(arch, &serde_json::to_string(&file).unwrap(), "hand-edited").unwrap();
        assert_eq!((t.entries, t.skipped), (kept, 2));
        let reports = crate::log::problems().into_iter().filter(|p| p.starts_with("hand-edited")).count();
        assert_eq!(reports, 1);
    }

    /// A named tuning file that cannot be used — a FIFO nobody writes, a device, a
    /// directory, a missing, empty or truncated file — never blocks or fails the
    /// load: it is reported with the variable's name and the shipped table is used.
    #[test]
    fn unusable_tuning_files_are_reported_and_the_shipped_table_used() {
        let dir = std::env::temp_dir().join(format!("skinnylt-bad-tables-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo of a NUL-terminated path in a directory this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let empty = dir.join("empty.json");
        std::fs::write(&empty, "").unwrap();
        let truncated = dir.join("truncated.json");
        std::fs::write(&truncated, &embedded(Arch::Sm90)[..200]).unwrap();
        let shipped = Tuning::parse(Arch::Sm90, embedded(Arch::Sm90), "shipped").unwrap().entries;
        for (path, why) in [
            (fifo, "not a regular file"),
            ("/dev/zero".into(), "not a regular file"),
            (dir.clone(), "not a regular file"),
            (dir.join("missing.json"), "no such file"),
            (empty, "EOF"),
            (truncated, "EOF"),
        ] {
            let cfg = Config { tuning_file: Some(path.to_str().unwrap().to_owned()), ..Config::from_lookup(|_| None) };
            let t = Tuning::load(&cfg, Arch::Sm90, "NVIDIA H100 80GB HBM3");
            assert_eq!(t.entries, shipped, "{}", path.display());
            let problems = crate::log::problems();
            assert!(problems.iter().any(|p| p.contains("SKINNYLT_TUNING_FILE") && p.contains(path.to_str().unwrap()) && p.contains(why)), "{}: {problems:?}", path.display());
        }
        assert_eq!(read_table(&dir.join("missing.json")), Ok(None));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
