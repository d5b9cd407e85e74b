//! `skinnylt tune`: for each shape, time every compiled kernel config of the dtype
//! at a range of split-K factors on the present GPU (graph replay, cold weights),
//! reject any whose output fails the float64 check, keep the fastest, and write
//! `tuning/<arch>.json` with provenance. Shapes where skinnylt does not beat the
//! vendor library by at least 3 % are written as "forward". Resumable: shapes
//! already in the output file are skipped. Bounded time per shape.

use std::time::Instant;

use skinnylt::engine::{Call, Device};
use skinnylt::gpu::{self, Stream};
use skinnylt::kernels::{self, KernelEntry};
use skinnylt::route::{DType, Problem};
use skinnylt::tuning;
use skinnylt::tuning::Choice;
use skinnylt::tuning::fallback::{Fallback, MIN_BLOCKS};
use skinnylt::tuning::schema::{Entry, Provenance, ScaleKind, TuningFile};

use crate::bench::{ColdSets, Rig, ShapeArgs, median, on_gpu, time_graph, units};
use crate::client::Handle;
use crate::gpu::{Buf, Gpu};
use crate::grid::Shape;
use crate::progress::Progress;
use crate::reference::{self, Rng};
use crate::vendor;

#[derive(clap::Args)]
pub struct Args {
    /// Output tuning file (read first: its shapes are skipped); default
    /// tuning/<arch>.json for the device's arch (or --model's).
    #[arg(long)]
    pub out: Option<String>,
    #[command(flatten)]
    pub select: ShapeArgs,
    /// Also write entries for the other dtype with the same choice.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub mirror_dtype: bool,
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Seconds of search per shape (the candidates' timing; the float64 reference
    /// of a large shape is not counted).
    #[arg(long, default_value_t = 20.0)]
    pub seconds_per_shape: f64,
    /// Print every candidate's time.
    #[arg(long)]
    pub verbose: bool,
    /// Rounds of the confirmation pass (rounded up to odd): the winner and the vendor
    /// timed again, alternately, and compared by their medians (0: keep the search's
    /// times). The fastest of many noisy timings is an optimistic estimate of the winner.
    #[arg(long, default_value_t = 3)]
    pub confirm: usize,
    /// Only candidates whose kernel name contains this text (e.g. "tma"), for
    /// experiments written with --out to a scratch file.
    #[arg(long)]
    pub kernel_filter: Option<String>,
    /// Also write every candidate's time, and the vendor's (fastest of its top-8 and
    /// its first), as JSON lines to this file: the data the planner's constants are
    /// fitted to (`skinnylt fit`).
    #[arg(long)]
    pub dump: Option<String>,
    /// No GPU: write the hardware-aware model's choice for every shape of this arch
    /// (gfx942, gfx950, sm90), each entry marked "source": "model".
    #[arg(long)]
    pub model: Option<String>,
}

const SPLITS: [u32; 12] = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32];

pub fn run(a: &Args) -> i32 {
    if let Some(arch) = &a.model {
        return match model(arch, a) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("tune --model failed: {e}");
                1
            }
        };
    }
    on_gpu("tune", |rt| tune(rt, a))
}

/// Where a tuning file goes: `--out`, else the file the library reads on this
/// device (`tuning/<arch>[-<variant>][-nopdl].json`), or tuning/<arch>.json for a
/// model (no device).
fn out_path(a: &Args, arch: gpu::Arch, device: Option<&str>, pdl: bool) -> String {
    a.out.clone().unwrap_or_else(|| match device {
        Some(name) => format!("tuning/{}", tuning::file_name(arch, name, pdl)),
        None => format!("tuning/{}.json", arch.name()),
    })
}

fn tune(cu: &Gpu, a: &Args) -> Result<(), String> {
    let rig = Rig::open(cu)?;
    let dev = &rig.dev;
    let out = out_path(a, dev.arch, Some(&dev.info.name), dev.pdl());
    let dtype: DType = a.select.dtype.into();
    let scales = a.select.scale_kind()?;
    // A dump's vendor times are what `fit` models the vendor by, per tensor.
    if scales == ScaleKind::Row && a.dump.is_some() {
        return Err("--dump measures with per-tensor scales (what `fit` models): drop --scales row".into());
    }
    let mut file = resume(&out, dev)?;
    // Confirmation rounds: an odd number, so that the median is one of them.
    let rounds = if a.confirm > 0 { a.confirm | 1 } else { 0 };
    file.provenance = extended(&file.provenance, measured_provenance(&rig, rounds));
    let shapes: Vec<Shape> = a.select.shapes()?;
    let (h, ws) = rig.handle_and_workspace()?;
    let mut rng = Rng(0x7e57);
    let dump = match &a.dump {
        Some(path) => Some(std::cell::RefCell::new(std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("{path}: {e}"))?)),
        None => None,
    };
    let tuner = Tuner { rig: &rig, a, dtype, scales, rounds, progress: Progress::new(shapes.len()), ws, h, dump };
    let mut skipped = 0;
    for (si, sh) in shapes.iter().enumerate() {
        // Model entries (tune --model, the shipped AMD tables) are replaced, not kept.
        if file.entries.iter().any(|e| same_shape(e, dtype, scales, sh) && e.source.starts_with("measured")) {
            tuner.progress.skip();
            skipped += 1;
            continue;
        }
        tuner.progress.start(sh);
        let setup = Instant::now();
        let (cs, want) = tuner.inputs(sh, &mut rng)?;
        let found = tuner.search(sh, &cs, &want)?;
        tuner.add_entries(&mut file, sh, m_max(&shapes, sh), &found);
        tuner.progress.println(tuner.report_line(sh, (si + 1, shapes.len()), &found, setup));
        // Written after every shape, so that an interrupted run resumes.
        join_bands(&mut file.entries);
        write_file(&out, &file)?;
        tuner.progress.inc();
    }
    tuner.progress.finish();
    if let Some(note) = resumed_note(&out, skipped, shapes.len()) {
        println!("{note}");
    }
    Ok(())
}

/// What a run that skipped shapes its output file already had measured says, so
/// that a second run into the same file is not mistaken for one that measured.
fn resumed_note(out: &str, skipped: usize, shapes: usize) -> Option<String> {
    (skipped > 0).then(|| format!("{out}: {skipped} of {shapes} shapes were measured there before and were skipped (resumed); give another --out to measure them again"))
}

/// The planner constants of the table shipped for `arch` (on `device`, its
/// variant's), so that a table written anew keeps them.
fn shipped_planner(arch: gpu::Arch, device: Option<&str>) -> Option<skinnylt::tuning::schema::CostModel> {
    let text = device.and_then(|d| tuning::variant_for(arch, d)).map_or(tuning::embedded(arch), |v| v.table);
    serde_json::from_str::<TuningFile>(text).ok()?.planner
}

/// The output file to resume (its shapes are skipped), else a new one for this
/// device.
fn resume(out: &str, dev: &Device) -> Result<TuningFile, String> {
    let arch = dev.arch;
    let file: TuningFile = std::fs::read_to_string(out)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| TuningFile {
            schema: 1,
            arch: arch.name().into(),
            // On a device with its own variant, a file the library can take as one.
            devices: tuning::variant_for(arch, &dev.info.name).map(|v| v.devices()).unwrap_or_default(),
            provenance: Provenance::default(),
            planner: shipped_planner(arch, Some(&dev.info.name)),
            entries: vec![],
            anchors: vec![],
            // Chosen by `fit --cross-validate` on the device's own measurements.
            small_transfer: None,
            invariant: vec![],
        });
    // Resuming another arch's file would skip its shapes and mix the two.
    if file.arch != arch.name() {
        return Err(format!("{out} is a tuning file for {}, this device is {}: pass --out", file.arch, arch.name()));
    }
    Ok(file)
}

/// Where measured entries come from: the device, the vendor library and the method.
fn measured_provenance(rig: &Rig, rounds: usize) -> Provenance {
    let (info, lt) = (&rig.dev.info, &rig.lt);
    provenance(
        format!("{} ({}), copy {:.2} TB/s, {} {}", info.name, units(info), rig.bw / 1e12, lt.name(), lt.version()),
        format!(
            "measured: graph replay, cold weights (rotated sets > 3x L2), median; vendor = fastest of {}'s top-8 in the same run; {}speedup < 1.03 => forward",
            lt.name(),
            if rounds > 0 { format!("the winner and the vendor re-timed alternately, {rounds} rounds, medians; ") } else { String::new() }
        ),
    )
}

/// The provenance of a file that `next` adds entries to: the entries already there
/// keep theirs, so the commands (and devices and methods, where they differ) are chained.
fn extended(old: &Provenance, next: Provenance) -> Provenance {
    if old.command.is_empty() {
        return next;
    }
    let chain = |a: &str, b: String| if a.is_empty() || a == b { b } else { format!("{a}; then {b}") };
    Provenance {
        device: chain(&old.device, next.device),
        command: format!("{} ({}); then {}", old.command, old.date, next.command),
        notes: chain(&old.notes, next.notes),
        date: next.date,
    }
}

/// A file's provenance: `device` and `notes`, with today's date and this command line.
fn provenance(device: String, notes: String) -> Provenance {
    Provenance { device, date: today(), command: command_line(std::env::args(), std::env::vars()), notes }
}

/// The command as someone re-measuring would type it: `skinnylt` whatever the binary
/// was called (an install path or a renamed copy says nothing), after the
/// environment settings that change what is measured (PDL and its knobs, batch
/// invariance). Paths (vendor library, tables) are left out.
fn command_line(args: impl Iterator<Item = String>, env: impl Iterator<Item = (String, String)>) -> String {
    let mut settings: Vec<String> = env
        .filter(|(k, _)| k.starts_with("SKINNYLT_PDL") || k == "SKINNYLT_BATCH_INVARIANT")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    settings.sort();
    settings.into_iter().chain(std::iter::once("skinnylt".to_string())).chain(args.skip(1)).collect::<Vec<_>>().join(" ")
}

/// Writes a tuning file: pretty JSON and a final newline.
fn write_file(out: &str, file: &TuningFile) -> Result<(), String> {
    std::fs::write(out, serde_json::to_string_pretty(file).map_err(|e| e.to_string())? + "\n").map_err(|e| e.to_string())
}

/// Whether `e` is the entry of shape `sh` (at its M) for `dtype`.
fn same_shape(e: &Entry, dtype: DType, scales: ScaleKind, sh: &Shape) -> bool {
    e.dtype == dtype && e.scales == scales && e.n == sh.n && e.k == sh.k && e.bias == sh.bias && e.m_min == sh.m
}

/// The token range of `sh`'s entry ends below the next measured M of its shape
/// (N, K, bias), or at its own M for the largest.
fn m_max(shapes: &[Shape], sh: &Shape) -> u32 {
    let next_m = shapes.iter().filter(|o| (o.n, o.k, o.bias) == (sh.n, sh.k, sh.bias) && o.m > sh.m).map(|o| o.m).min();
    next_m.map_or(sh.m, |nm| nm - 1)
}

/// Sorts `entries` and makes each shape's bands (dtype, N, K, bias, scales) meet
/// without overlap: every band but the last ends below the next one's first M. A
/// file tuned before at other token counts (M = 1, 8, 16 ...) and resumed at new ones
/// (M = 12, 24 ...) otherwise keeps its old bands over the new ones, and the lookup
/// finds the old band first.
fn join_bands(entries: &mut [Entry]) {
    entries.sort_by_key(|e| (e.dtype, e.n, e.k, e.bias, e.scales, e.m_min));
    for i in 1..entries.len() {
        let (a, b) = (&entries[i - 1], &entries[i]);
        if (a.dtype, a.n, a.k, a.bias, a.scales) == (b.dtype, b.n, b.k, b.bias, b.scales) {
            entries[i - 1].m_max = b.m_min - 1;
        }
    }
}

/// The entry of `sh` for `dtype`, covering M from `sh.m` to `m_max`, with no kernel,
/// split 1 and no times: callers set what they chose and measured.
fn shape_entry(dtype: DType, scales: ScaleKind, sh: &Shape, m_max: u32, source: String) -> Entry {
    Entry { dtype, n: sh.n, k: sh.k, bias: sh.bias, m_min: sh.m, m_max, kernel: None, split_k: 1, source, us: None, vendor_us: None, scales }
}

/// A time as the file keeps it: µs, two decimals.
pub(crate) fn hundredths(us: f64) -> f64 {
    (us * 100.0).round() / 100.0
}

/// What `tune` times every shape with: the opened device, the command's
/// arguments, the progress bar, the workspace of timed calls and skinnylt's handle.
struct Tuner<'a> {
    rig: &'a Rig<'a>,
    a: &'a Args,
    dtype: DType,
    /// The scales the entries are measured with (`--scales`).
    scales: ScaleKind,
    /// Rounds of the confirmation pass (odd; 0: none).
    rounds: usize,
    progress: Progress,
    ws: Buf<'a>,
    h: Handle,
    /// `--dump`: where every measurement goes.
    dump: Option<std::cell::RefCell<std::fs::File>>,
}

/// One line of `tune --dump`: a candidate's time (`kernel`, `split`) or the
/// vendor's (`vendor_us`, `vendor_top1_us`) on one shape.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Measurement {
    pub device: String,
    pub dtype: DType,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub bias: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<skinnylt::tuning::schema::KernelConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor_top1_us: Option<f64>,
}

/// What the search and the confirmation pass found for one shape.
struct Found {
    kernel: usize,
    split_k: u32,
    /// The winner's time in the search, and the times that decide (the
    /// confirmation pass's medians, or the search's).
    searched: f64,
    ours: f64,
    vendor: f64,
    /// Candidates timed, and candidates that ran but failed the float64 check.
    tried: usize,
    rejected: usize,
}

impl Found {
    /// skinnylt must beat the vendor by 3 %, or the shape is forwarded.
    fn forward(&self) -> bool {
        self.ours * 1.03 > self.vendor
    }
}

impl<'a> Tuner<'a> {
    /// Appends a measurement of `sh` to the --dump file, if there is one.
    fn dump(&self, sh: &Shape, fill: impl FnOnce(&mut Measurement)) {
        let Some(file) = &self.dump else { return };
        let dev = &self.rig.dev.info;
        let mut m = Measurement { device: dev.name.clone(), dtype: self.dtype, m: sh.m, n: sh.n, k: sh.k, bias: sh.bias, kernel: None, split: None, us: None, vendor_us: None, vendor_top1_us: None };
        fill(&mut m);
        if let Ok(line) = serde_json::to_string(&m) {
            use std::io::Write;
            let _ = writeln!(file.borrow_mut(), "{line}");
        }
    }

    /// Kernel `ki` of the device's arch.
    fn kernel(&self, ki: usize) -> &'static KernelEntry {
        &kernels::for_arch(self.rig.dev.arch).kernels[ki]
    }

    /// One shape's cold sets, and the float64 output of their inputs (every set
    /// holds the same weights and activations).
    fn inputs(&self, sh: &Shape, rng: &mut Rng) -> Result<(ColdSets<'a>, Vec<f64>), String> {
        let cs = ColdSets::new(self.rig.cu, self.rig.s, self.rig.dev.info.l2_bytes, rng, self.dtype, self.a.select.scales, sh)?;
        let want = cs.reference(self.dtype, sh);
        Ok((cs, want))
    }

    /// The vendor's time on the cold sets (at least 5 replays).
    fn vendor_time(&self, p: &vendor::Problem, cs: &ColdSets) -> f64 {
        self.rig.vendor_time(self.a.reps.max(5), p, cs, &self.ws)
    }

    /// Searches `sh` (cold sets `cs`, float64 output `want`) and times the winner
    /// against the vendor.
    fn search(&self, sh: &Shape, cs: &ColdSets, want: &[f64]) -> Result<Found, String> {
        // Vendor: the fastest of its top-8. Without the confirmation pass, timed before
        // and after our candidates (the best of both), so neither side is timed alone on
        // a GPU whose clocks dropped while the host computed the reference; with it, the
        // pass's rounds alone decide.
        let p = self.rig.vendor_problem(self.dtype, sh, cs)?;
        let vendor_before = (self.rounds == 0).then(|| self.vendor_time(&p, cs));
        // The time limit counts candidates only: on the largest shapes the host reference
        // alone takes seconds.
        let t0 = Instant::now();
        let mut search = Search { tuner: self, sh, cs, want, call: Call { workspace: 0, workspace_size: 0, stream: Stream(self.rig.s) }, t0, best: None, tried: 0, rejected: 0 };
        let mut candidates = search.candidates();
        // Two rounds, so that the bounded time goes first where the winner is likely:
        // (1) every kernel once, at the first split that gives every SM a CTA, the
        // kernels that read W the fewest times (token tile covering M) first; (2) every
        // split of each kernel, in the order of round 1's times, while the time limit allows.
        candidates.sort_by_key(|(ki, _)| sh.m.div_ceil(self.kernel(*ki).config.tile_m));
        let screened = search.screen(&candidates)?;
        search.finals(&screened)?;
        let Some((searched, choice)) = search.best else { return Err(format!("no candidate ran for {sh:?}")) };
        let (ours, vendor) = match vendor_before {
            Some(before) => (searched, before.min(self.vendor_time(&p, cs))),
            None => search.confirm(choice, || self.vendor_time(&p, cs))?,
        };
        if self.dump.is_some() {
            let (best, top1) = self.rig.vendor_times(self.a.reps.max(5), &p, cs, &self.ws);
            self.dump(sh, |m| (m.vendor_us, m.vendor_top1_us) = (Some(best), Some(top1)));
        }
        drop(p);
        let Choice::Run { kernel, split_k } = choice else { unreachable!() };
        Ok(Found { kernel, split_k, searched, ours, vendor, tried: search.tried, rejected: search.rejected })
    }

    /// Writes `sh`'s entry (and with --mirror-dtype the other dtype's, same choice),
    /// replacing an earlier one.
    fn add_entries(&self, file: &mut TuningFile, sh: &Shape, m_max: u32, found: &Found) {
        let (dtype, forward) = (self.dtype, found.forward());
        let ke = self.kernel(found.kernel);
        // fp8 has no 16-bit twin to mirror to.
        for d in if self.a.mirror_dtype && !dtype.is_fp8() { vec![dtype, other(dtype)] } else { vec![dtype] } {
            file.entries.retain(|e| !same_shape(e, d, self.scales, sh));
            let source = if d == dtype { "measured".into() } else { format!("measured ({})", dtype.name()) };
            file.entries.push(Entry {
                kernel: (!forward).then_some(ke.config),
                split_k: if forward { 1 } else { found.split_k },
                us: Some(hundredths(found.ours)),
                vendor_us: Some(hundredths(found.vendor)),
                ..shape_entry(d, self.scales, sh, m_max, source)
            });
        }
    }

    /// The line printed for shape number `at.0` of `at.1`.
    fn report_line(&self, sh: &Shape, at: (usize, usize), f: &Found, setup: Instant) -> String {
        format!(
            "[{}/{}] {} M={} N={} K={} bias={}: best {} split {} {:.2} µs{}, vendor {:.2} µs, {:.2}x{} ({} timed, {} rejected, {:.0} s)",
            at.0,
            at.1,
            sh.group,
            sh.m,
            sh.n,
            sh.k,
            sh.bias,
            self.kernel(f.kernel).name,
            f.split_k,
            f.ours,
            if self.rounds > 0 { format!(" (search {:.2})", f.searched) } else { String::new() },
            f.vendor,
            f.vendor / f.ours,
            if f.forward() { " -> forward" } else { "" },
            f.tried,
            f.rejected,
            setup.elapsed().as_secs_f64()
        )
    }
}

/// A candidate: a kernel (its index) and the distinct splits its launch plan allows.
type Candidate = (usize, Vec<u32>);

/// A kernel screened in round 1: its time there, its index and its splits.
type Screened<'c> = (f64, usize, &'c [u32]);

/// The search of one shape: its cold sets and float64 output, when its time limit
/// started, the best (time, choice) so far and the candidates' tallies.
struct Search<'a> {
    tuner: &'a Tuner<'a>,
    sh: &'a Shape,
    cs: &'a ColdSets<'a>,
    want: &'a [f64],
    call: Call,
    t0: Instant,
    best: Option<(f64, Choice)>,
    tried: usize,
    rejected: usize,
}

impl Search<'_> {
    /// The problem of call `c` of a graph (call 0 for the check and for plans).
    fn problem(&self, c: usize) -> Problem {
        let (sh, (w, x, y)) = (self.sh, self.cs.set(c));
        let bias = if sh.bias { self.cs.db.1 } else { 0 };
        // fp8: the scales the calls carry (bf16 output, as ColdSets makes it).
        let (a_scale, b_scale, vec) = self.cs.scales.map_or((0, 0, false), |s| (s.a, s.b, s.outer_vec));
        let epilogue = if vec { skinnylt::kernels::params::SCALE_A_VEC | skinnylt::kernels::params::SCALE_B_VEC } else { 0 };
        Problem { w, x, y, bias, a_scale, b_scale, epilogue, ..Problem::packed(self.tuner.dtype, sh.m, sh.n, sh.k, false) }
    }

    fn out_of_time(&self) -> bool {
        self.t0.elapsed().as_secs_f64() > self.tuner.a.seconds_per_shape
    }

    /// Candidates: every compiled kernel of the dtype whose token tile is not much
    /// larger than M, each with the distinct splits its launch plan allows (a plan
    /// may cap a split: record the split that really runs).
    fn candidates(&self) -> Vec<Candidate> {
        let (sh, dtype) = (self.sh, self.tuner.dtype);
        let mut candidates = Vec::new();
        for (ki, ke) in kernels::for_arch(self.tuner.rig.dev.arch).kernels.iter().enumerate() {
            if ke.dtype != dtype || !skinnylt::tuning::planner::suits(&ke.config, sh.m) {
                continue;
            }
            if self.tuner.a.kernel_filter.as_deref().is_some_and(|f| !ke.name.contains(f)) {
                continue;
            }
            // K blocks count 16-bit units (two fp8 elements each).
            let nkb = (sh.k / dtype.per_unit()).div_ceil(ke.config.tile_k);
            let cap = if ke.config.cluster { skinnylt::tuning::schema::MAX_CLUSTER_SPLIT } else { u32::MAX };
            let mut splits = Vec::new();
            for &asked in SPLITS.iter().filter(|&&sp| (sp == 1 || nkb / sp >= MIN_BLOCKS) && sp <= cap) {
                let Ok(plan) = crate::engines().plan_choice(self.tuner.h.0 as usize, &self.problem(0), Choice::Run { kernel: ki, split_k: asked }) else { continue };
                if !splits.contains(&plan.split_k) {
                    splits.push(plan.split_k);
                }
            }
            if !splits.is_empty() {
                candidates.push((ki, splits));
            }
        }
        candidates
    }

    /// Round 1: each kernel at its screening split, in the candidates' order, while
    /// the time limit allows; (time, kernel, splits), fastest first.
    fn screen<'c>(&mut self, candidates: &'c [Candidate]) -> Result<Vec<Screened<'c>>, String> {
        let (sh, units) = (self.sh, self.tuner.rig.dev.info.units.max(1));
        let mut screened: Vec<Screened> = Vec::new();
        for (ki, splits) in candidates {
            if self.out_of_time() {
                break;
            }
            let c = self.tuner.kernel(*ki).config;
            let tiles = sh.n.div_ceil(c.tile_n) * sh.m.div_ceil(c.tile_m);
            let choice = Choice::Run { kernel: *ki, split_k: screening_split(splits, tiles, units) };
            if let Some(t) = self.measure(choice, self.tuner.a.reps.min(3))? {
                screened.push((t, *ki, splits));
                if self.best.is_none_or(|(bt, _)| t < bt) {
                    self.best = Some((t, choice));
                }
            }
        }
        screened.sort_by(|x, y| x.0.total_cmp(&y.0));
        Ok(screened)
    }

    /// Round 2: every split of each screened kernel, fastest kernel first, while the
    /// time limit allows.
    fn finals(&mut self, screened: &[Screened]) -> Result<(), String> {
        for &(_, ki, splits) in screened {
            for &split in splits {
                if self.out_of_time() {
                    return Ok(());
                }
                let choice = Choice::Run { kernel: ki, split_k: split };
                // The screening time of this choice was taken with fewer reps: time it again.
                if let Some(t) = self.measure(choice, self.tuner.a.reps)?
                    && self.best.is_none_or(|(bt, bc)| t < bt || bc == choice)
                {
                    self.best = Some((t, choice));
                }
            }
        }
        Ok(())
    }

    /// Checks one candidate on poisoned output, then times it (None: it could not
    /// run or failed the check).
    fn measure(&mut self, choice: Choice, reps: usize) -> Result<Option<f64>, String> {
        if !self.passes(choice)? {
            return Ok(None);
        }
        self.tried += 1;
        let t = self.time(choice, reps)?;
        let Choice::Run { kernel, split_k } = choice else { unreachable!() };
        if self.tuner.a.verbose {
            self.tuner.progress.println(format!("    {} split {split_k}: {t:.2} µs", self.tuner.kernel(kernel).name));
        }
        let config = self.tuner.kernel(kernel).config;
        self.tuner.dump(self.sh, |m| (m.kernel, m.split, m.us) = (Some(config), Some(split_k), Some(t)));
        Ok(Some(t))
    }

    /// Whether `choice` runs and its output, written over NaN poison, matches the
    /// float64 reference; one that runs and does not counts as rejected.
    fn passes(&mut self, choice: Choice) -> Result<bool, String> {
        let cu = self.tuner.rig.cu;
        let (m, n, y0) = (self.sh.m as usize, self.sh.n as usize, self.cs.ys[0].1);
        cu.memset16(y0, 0xffff, m * n)?;
        if crate::engines().run_choice(self.tuner.h.0 as usize, &self.problem(0), choice, &self.call).is_err() {
            return Ok(false);
        }
        cu.sync(self.tuner.rig.s)?;
        let mut y = vec![0u16; m * n];
        cu.dtoh(&mut y, y0)?;
        let out = self.cs.out;
        match reference::rel_error(out, m, n, &y, n, self.want) {
            Some(e) if e <= reference::tolerance(out) => Ok(true),
            _ => {
                self.rejected += 1;
                Ok(false)
            }
        }
    }

    /// Time per GEMM of `choice` (µs), graph replay over the cold sets.
    fn time(&self, choice: Choice, reps: usize) -> Result<f64, String> {
        let count = self.cs.count;
        time_graph(self.tuner.rig.cu, self.tuner.rig.s, reps, count, || {
            for c in 0..count {
                crate::engines().run_choice(self.tuner.h.0 as usize, &self.problem(c), choice, &self.call).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }

    /// The confirmation pass: the search's best is the minimum of many noisy
    /// timings, biased low. On an H200 three shapes kept at 1.03-1.09x that way
    /// measured 0.89-0.98x in the bench (docs/performance.md). The winner and the
    /// vendor are timed again, alternately, and compared by their medians. (The
    /// vendor's time stays the fastest of its top-8 each round: biased low, towards
    /// forwarding.)
    fn confirm(&self, choice: Choice, vendor_time: impl Fn() -> f64) -> Result<(f64, f64), String> {
        let rounds = self.tuner.rounds;
        let (mut o, mut v) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        for _ in 0..rounds {
            o.push(self.time(choice, self.tuner.a.reps)?);
            v.push(vendor_time());
        }
        Ok((median(o), median(v)))
    }
}

/// The split a kernel is screened at: the first of its (ascending) `splits` whose grid
/// gives each of the `units` SMs a CTA, else its largest.
fn screening_split(splits: &[u32], tiles: u32, units: u32) -> u32 {
    splits.iter().copied().find(|&sp| tiles * sp >= units).or(splits.last().copied()).unwrap_or(1)
}

/// Today's date (UTC), for provenance.
fn today() -> String {
    std::process::Command::new("date").arg("-u").arg("+%Y-%m-%d").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default()
}

fn other(d: DType) -> DType {
    if d == DType::Bf16 { DType::F16 } else { DType::Bf16 }
}

/// Peak HBM bandwidth (bytes/s) and the share of it decode GEMMs reach in practice
/// (published best decode kernels: ~4.6 of 5.3 TB/s on MI300X, ~6.4 of 8 on MI355X,
/// AMD's FlyDSL split-K results in ROCm/aiter; copy bandwidth measured on H100 ~3.0
/// TB/s), plus a fixed per-launch cost.
fn roofline(arch: gpu::Arch) -> (f64, f64, f64) {
    match arch {
        gpu::Arch::Gfx942 => (5.3e12, 0.85, 4.0),
        gpu::Arch::Gfx950 => (8.0e12, 0.80, 3.5),
        gpu::Arch::Sm90 => (3.35e12, 0.88, 3.5),
    }
}

/// `tune --model`: the fallback's hardware-aware choice (src/tuning/fallback.rs: tile_m
/// covering M, grid of ~2 CTAs per CU/SM through split-K, >= 2 K blocks per split, over
/// the configs of fallback.json, which follow the decode configs AITER publishes for
/// its FlyDSL split-K kernel) for every selected shape, with a roofline latency prediction.
fn model(arch_name: &str, a: &Args) -> Result<(), String> {
    let arch = gpu::Arch::from_name(arch_name).ok_or_else(|| format!("unknown arch {arch_name}"))?;
    let fallback = Fallback::for_arch(arch);
    let shapes = a.select.shapes()?;
    let (bw, eff, fixed_us) = roofline(arch);
    let entries = model_entries(arch, &fallback, &shapes)?;
    let file = TuningFile {
        schema: 1,
        arch: arch.name().into(),
        devices: vec![],
        planner: shipped_planner(arch, None),
        provenance: provenance(
            format!("model of {} ({} CUs, {:.1} TB/s peak HBM); not measured on the chip", arch.name(), arch.default_units(), bw / 1e12),
            format!(
                "hardware-aware model: tile_m covering M, ~2 CTAs per CU via split-K with >= 2 K blocks per split, over fallback.json (AITER FlyDSL priors); us = {fixed_us} µs + bytes / ({eff} x peak bandwidth), a prediction. Replace with `skinnylt tune` on the real GPU."
            ),
        ),
        entries,
        anchors: vec![],
        small_transfer: None,
        invariant: vec![],
    };
    let out = out_path(a, arch, None, true);
    write_file(&out, &file)?;
    println!("{}: {} model entries written to {out}", arch.name(), file.entries.len());
    Ok(())
}

/// The model's entries: the fallback's choice for every shape and dtype (both
/// 16-bit types and the arch's fp8, whose kernels take K in 16-bit units), with
/// the roofline's latency.
fn model_entries(arch: gpu::Arch, fallback: &Fallback, shapes: &[Shape]) -> Result<Vec<Entry>, String> {
    let (bw, eff, fixed_us) = roofline(arch);
    let fp8 = tuning::schema::target(arch.name()).and_then(|t| t.fp8);
    let mut entries = Vec::new();
    for sh in shapes {
        let m_max = m_max(shapes, sh);
        for dtype in DType::ALL.into_iter().chain(fp8) {
            let p = sh.problem(dtype).unit_view();
            let Some(Choice::Run { kernel, split_k }) = fallback.choose(arch.default_units(), &p) else {
                return Err(format!("no model choice for {sh:?} in {}", dtype.name()));
            };
            let (n, m, k) = (sh.n as f64, sh.m as f64, sh.k as f64);
            let bytes = dtype.bytes() as f64 * (n * k + m * k) + 2.0 * m * n;
            entries.push(Entry {
                kernel: Some(kernels::for_arch(arch).kernels[kernel].config),
                split_k,
                us: Some(hundredths(fixed_us + bytes / (bw * eff) * 1e6)),
                ..shape_entry(dtype, ScaleKind::Tensor, sh, m_max, "model".into())
            });
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn screening_fills_the_gpu_once_with_the_smallest_split() {
        let splits = [1, 2, 3, 4, 6, 8, 16];
        assert_eq!(screening_split(&splits, 180, 132), 1); // N = 2880 in 16-row tiles
        assert_eq!(screening_split(&splits, 40, 132), 4); // N = 640: 160 CTAs
        assert_eq!(screening_split(&splits, 4, 132), 16); // N = 64: never full, the largest
        assert_eq!(screening_split(&[], 4, 132), 1);
    }

    /// A run into a file that already measured its shapes says so, not nothing.
    #[test]
    fn a_resumed_run_says_what_it_skipped() {
        assert_eq!(resumed_note("t.json", 0, 5), None);
        let note = resumed_note("t.json", 5, 5).unwrap();
        assert!(note.starts_with("t.json: 5 of 5 shapes were measured there before and were skipped"), "{note}");
    }

    /// New token counts tuned into a file split its bands; bands of other shapes,
    /// dtypes and scale kinds stay as they were, and the last band keeps its end.
    #[test]
    fn resumed_token_counts_split_the_bands_they_land_in() {
        let band = |d: DType, scales, n: u32, m: u32, m_max: u32| {
            let sh = Shape { group: "x", m, n, k: 4096, bias: false };
            shape_entry(d, scales, &sh, m_max, "measured".into())
        };
        let t = ScaleKind::Tensor;
        let mut entries = vec![
            band(DType::Bf16, t, 4096, 32, 63),
            band(DType::Bf16, t, 4096, 1, 7),
            band(DType::Bf16, t, 4096, 8, 15),
            band(DType::Bf16, t, 4096, 16, 31),
            band(DType::Bf16, t, 4096, 64, 64),
            // Tuned later at 12 and 48 (m_max from that run's token counts alone).
            band(DType::Bf16, t, 4096, 12, 47),
            band(DType::Bf16, t, 4096, 48, 48),
            band(DType::E4m3, ScaleKind::Row, 4096, 1, 11),
            band(DType::E4m3, t, 4096, 12, 12),
            band(DType::Bf16, t, 2048, 1, 7),
        ];
        join_bands(&mut entries);
        let ranges: Vec<(DType, ScaleKind, u32, u32, u32)> = entries.iter().map(|e| (e.dtype, e.scales, e.n, e.m_min, e.m_max)).collect();
        assert_eq!(
            ranges,
            [
                (DType::Bf16, t, 2048, 1, 7),
                (DType::Bf16, t, 4096, 1, 7),
                (DType::Bf16, t, 4096, 8, 11),
                (DType::Bf16, t, 4096, 12, 15),
                (DType::Bf16, t, 4096, 16, 31),
                (DType::Bf16, t, 4096, 32, 47),
                (DType::Bf16, t, 4096, 48, 63),
                (DType::Bf16, t, 4096, 64, 64),
                (DType::E4m3, t, 4096, 12, 12),
                (DType::E4m3, ScaleKind::Row, 4096, 1, 11),
            ]
        );
    }

    #[test]
    fn out_defaults_to_the_file_the_device_reads() {
        let a = Cli::parse_from(["tune"]).args;
        assert_eq!(out_path(&a, gpu::Arch::Gfx942, None, true), "tuning/gfx942.json");
        assert_eq!(out_path(&a, gpu::Arch::Gfx942, Some("AMD Instinct MI300X"), false), "tuning/gfx942.json");
        assert_eq!(out_path(&a, gpu::Arch::Sm90, Some("NVIDIA H100 80GB HBM3"), true), "tuning/sm90.json");
        assert_eq!(out_path(&a, gpu::Arch::Sm90, Some("NVIDIA H100 80GB HBM3"), false), "tuning/sm90-nopdl.json");
        assert_eq!(out_path(&a, gpu::Arch::Sm90, Some("NVIDIA H200"), true), "tuning/sm90-h200.json");
        let a = Cli::parse_from(["tune", "--out", "my.json"]).args;
        assert_eq!(out_path(&a, gpu::Arch::Gfx950, None, true), "my.json");
        assert_eq!(out_path(&a, gpu::Arch::Sm90, Some("NVIDIA H200"), false), "my.json");
    }

    /// `--scales row` measures fp8 per row, writes entries marked so, and is refused
    /// for 16-bit operands; entries of the two kinds are different shapes to resume.
    #[test]
    fn row_scales_are_an_fp8_measurement_of_their_own() {
        let kind = |argv: &[&str]| Cli::parse_from(argv).args.select.scale_kind();
        assert_eq!(kind(&["tune", "--dtype", "e4m3"]), Ok(ScaleKind::Tensor));
        assert_eq!(kind(&["tune", "--dtype", "e4m3", "--scales", "row"]), Ok(ScaleKind::Row));
        assert!(kind(&["tune", "--scales", "row"]).is_err());
        let sh = Shape { group: "G2", m: 1, n: 2880, k: 2880, bias: true };
        let row = shape_entry(DType::E4m3, ScaleKind::Row, &sh, 1, "measured".into());
        assert!(same_shape(&row, DType::E4m3, ScaleKind::Row, &sh));
        assert!(!same_shape(&row, DType::E4m3, ScaleKind::Tensor, &sh));
    }

    #[test]
    fn the_command_line_names_skinnylt_and_the_settings_that_change_the_measurement() {
        let args = ["/tmp/x/skinnylt-copy", "tune", "--dtype", "e4m3"].map(String::from).into_iter();
        let env = [("SKINNYLT_PDL", "0"), ("SKINNYLT_CUBLASLT", "/opt/lib/libcublasLt.so"), ("PATH", "/bin"), ("SKINNYLT_BATCH_INVARIANT", "1")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into_iter();
        assert_eq!(command_line(args, env), "SKINNYLT_BATCH_INVARIANT=1 SKINNYLT_PDL=0 skinnylt tune --dtype e4m3");
        assert_eq!(command_line(["skinnylt", "tune"].map(String::from).into_iter(), std::iter::empty()), "skinnylt tune");
    }

    #[test]
    fn adding_entries_chains_the_provenance() {
        let p = |device: &str, date: &str, command: &str, notes: &str| Provenance { device: device.into(), date: date.into(), command: command.into(), notes: notes.into() };
        let first = p("H100", "2026-11-22", "tune --groups G1", "medians");
        let next = p("H100", "2026-11-24", "tune --from calls.jsonl", "medians");
        assert_eq!(extended(&Provenance::default(), next.clone()), next);
        assert_eq!(extended(&first, next.clone()), p("H100", "2026-11-24", "tune --groups G1 (2026-11-22); then tune --from calls.jsonl", "medians"));
        let other = p("H200", "2026-11-24", "tune", "confirmed");
        let both = extended(&first, other);
        assert_eq!((both.device.as_str(), both.notes.as_str()), ("H100; then H200", "medians; then confirmed"));
    }
}
