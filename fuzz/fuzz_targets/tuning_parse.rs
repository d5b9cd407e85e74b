//! The tuning-table parser (`Tuning::parse`) for every arch, then what the hot
//! path asks of a parsed table: lookups, measured-band rules, and the choice of
//! kernel and split (table, planner with the table's own constants, fallback) and
//! its launch plan, for problems as routing hands them over.
//!
//! The first byte picks the input's form: the rest as text (UTF-8, lossily), or a
//! table built from the rest with `arbitrary` and written as JSON, so that most
//! structured inputs get past the JSON and schema checks to the lookups.
//! Parse errors are fine; a panic, or a choice or plan that breaks its documented
//! bounds, is a finding.
#![no_main]

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use skinnylt::engine::{self, Target};
use skinnylt::gpu::{Arch, Backend};
use skinnylt::kernels;
use skinnylt::route::{Form, Problem};
use skinnylt::tuning::fallback::{Fallback, MAX_SPLIT};
use skinnylt::tuning::schema::{DType, MAX_CLUSTER_SPLIT};
use skinnylt::tuning::{Choice, Tuning};

/// The largest M, N and K routing hands to the engine (`route::shape`).
const MAX_MN: u32 = u32::MAX / 2;
const MAX_K: u32 = 1 << 28;

fn fallbacks() -> &'static [Fallback; 3] {
    static F: OnceLock<[Fallback; 3]> = OnceLock::new();
    F.get_or_init(|| Arch::ALL.map(Fallback::for_arch))
}

// ---------------------------------------------------------------- structured tables

#[derive(Arbitrary, Debug)]
enum Name {
    Arch(u8),
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Num {
    Small(u8),
    Mult8(u16),
    Any(u32),
    Edge(u8),
    Negative(i16),
    Float(f32),
    Big(u64),
}

impl Num {
    fn json(&self) -> Value {
        const EDGE: [u64; 8] = [0, 1, 8, 128, MAX_MN as u64, MAX_K as u64, u32::MAX as u64, u32::MAX as u64 + 1];
        match *self {
            Num::Small(v) => json!(v),
            Num::Mult8(v) => json!(8 * v as u64),
            Num::Any(v) => json!(v),
            Num::Edge(i) => json!(EDGE[i as usize % EDGE.len()]),
            Num::Negative(v) => json!(-(v.unsigned_abs() as i64) - 1),
            Num::Float(f) => json!(f),
            Num::Big(v) => json!(v),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Kernel {
    /// The `i`-th kernel compiled for the table's arch (its config, as a table names it).
    Compiled(u16),
    Raw { family: u8, tile_m: Num, tile_n: Num, tile_k: Num, stages: Num, warps: [u8; 3], b_to_lds: bool, cluster: Option<bool>, tma: Option<bool> },
}

#[derive(Arbitrary, Debug)]
struct Entry {
    dtype: u8,
    n: Num,
    k: Num,
    bias: bool,
    m_min: Num,
    m_max: Num,
    kernel: Option<Kernel>,
    split_k: Option<Num>,
    source: u8,
    us: Option<f32>,
    vendor_us: Option<f32>,
}

#[derive(Arbitrary, Debug)]
struct KindCost {
    family: u8,
    cluster: Option<bool>,
    tma: Option<bool>,
    launch_us: f32,
    cta_gbs: f32,
    split_us: f32,
    per_split_us: f32,
    partial_us_per_kib: f32,
    unit_tflops: f32,
}

#[derive(Arbitrary, Debug)]
struct CostModel {
    /// Every kind the arch compiles, or the fuzzer's own list.
    all_kinds: bool,
    kinds: Vec<KindCost>,
    unit_intake_gbs: f32,
    dram_tbs: f32,
    partials_tbs: f32,
    wave_us: f32,
    unit_shared_bytes: Num,
    unit_threads: Num,
    vendor: [f32; 5],
    margin: f32,
}

#[derive(Arbitrary, Debug)]
struct Table {
    schema: Num,
    arch: Name,
    devices: Option<Vec<String>>,
    provenance: Option<(String, String)>,
    planner: Option<CostModel>,
    entries: Vec<Entry>,
    /// A field the schema does not have (`deny_unknown_fields`).
    unknown: Option<String>,
}

const FAMILIES: [&str; 4] = ["splitk", "vdmfma", "wgmma", "dense"];

fn family(i: u8) -> &'static str {
    FAMILIES[i as usize % FAMILIES.len()]
}

impl Table {
    fn arch(&self) -> Arch {
        match self.arch {
            Name::Arch(i) => Arch::ALL[i as usize % 3],
            Name::Other(_) => Arch::Sm90,
        }
    }

    fn json(&self) -> Value {
        let arch = self.arch();
        let catalog = kernels::for_arch(arch).kernels;
        let mut t = serde_json::Map::new();
        t.insert("schema".into(), self.schema.json());
        t.insert(
            "arch".into(),
            match &self.arch {
                Name::Arch(_) => json!(arch.name()),
                Name::Other(s) => json!(s),
            },
        );
        if let Some(d) = &self.devices {
            t.insert("devices".into(), json!(d));
        }
        if let Some((device, notes)) = &self.provenance {
            t.insert("provenance".into(), json!({"device": device, "notes": notes}));
        }
        if let Some(m) = &self.planner {
            let kind = |k: &KindCost| {
                let mut o = json!({"family": family(k.family), "launch_us": k.launch_us, "cta_gbs": k.cta_gbs, "split_us": k.split_us,
                    "per_split_us": k.per_split_us, "partial_us_per_kib": k.partial_us_per_kib, "unit_tflops": k.unit_tflops});
                if let Some(c) = k.cluster {
                    o["cluster"] = json!(c);
                }
                if let Some(c) = k.tma {
                    o["tma"] = json!(c);
                }
                o
            };
            let mut kinds: Vec<Value> = m.kinds.iter().map(kind).collect();
            if m.all_kinds {
                // One kind per compiled (family, cluster, tma), with the fuzzer's
                // constants, so that the planner predicts every kernel.
                let mut seen = Vec::new();
                for (i, k) in catalog.iter().enumerate() {
                    let key = (k.config.family, k.config.cluster, k.config.tma);
                    if !seen.contains(&key) {
                        seen.push(key);
                        let c = m.kinds.get(i % m.kinds.len().max(1));
                        kinds.push(json!({"family": k.config.family.name(), "cluster": key.1, "tma": key.2,
                            "launch_us": c.map_or(1.0, |c| c.launch_us), "cta_gbs": c.map_or(60.0, |c| c.cta_gbs),
                            "split_us": c.map_or(0.3, |c| c.split_us), "per_split_us": c.map_or(0.05, |c| c.per_split_us),
                            "partial_us_per_kib": c.map_or(0.1, |c| c.partial_us_per_kib), "unit_tflops": c.map_or(5.0, |c| c.unit_tflops)}));
                    }
                }
            }
            let v = m.vendor;
            t.insert(
                "planner".into(),
                json!({"source": "fuzz", "kinds": kinds, "unit_intake_gbs": m.unit_intake_gbs, "dram_tbs": m.dram_tbs,
                    "partials_tbs": m.partials_tbs, "wave_us": m.wave_us, "unit_shared_bytes": m.unit_shared_bytes.json(),
                    "unit_threads": m.unit_threads.json(),
                    "vendor": {"fixed_us": v[0], "per_m_us": v[1], "per_kilo_k_us": v[2], "base_us": v[3], "tbs": v[4]},
                    "margin": m.margin}),
            );
        }
        let entries: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                let dtype = ["bf16", "f16", "f32", "BF16"][e.dtype as usize % 4];
                let source = ["measured", "model", "measured on H100", ""][e.source as usize % 4];
                let mut o = json!({"dtype": dtype, "n": e.n.json(), "k": e.k.json(), "bias": e.bias, "m_min": e.m_min.json(),
                    "m_max": e.m_max.json(), "source": source});
                match &e.kernel {
                    Some(Kernel::Compiled(i)) if !catalog.is_empty() => {
                        let k = &catalog[*i as usize % catalog.len()];
                        o["kernel"] = serde_json::to_value(k.config).unwrap();
                        // The kernel's own dtype, most of the time, so the entry resolves.
                        if e.dtype % 4 < 3 {
                            o["dtype"] = json!(k.dtype.name());
                        }
                    }
                    Some(Kernel::Raw { family: f, tile_m, tile_n, tile_k, stages, warps, b_to_lds, cluster, tma }) => {
                        let mut k = json!({"family": family(*f), "tile_m": tile_m.json(), "tile_n": tile_n.json(), "tile_k": tile_k.json(),
                            "stages": stages.json(), "warps": warps, "b_to_lds": b_to_lds});
                        if let Some(c) = cluster {
                            k["cluster"] = json!(c);
                        }
                        if let Some(c) = tma {
                            k["tma"] = json!(c);
                        }
                        o["kernel"] = k;
                    }
                    _ => {}
                }
                if let Some(s) = &e.split_k {
                    o["split_k"] = s.json();
                }
                if let Some(us) = e.us {
                    o["us"] = json!(us);
                }
                if let Some(us) = e.vendor_us {
                    o["vendor_us"] = json!(us);
                }
                o
            })
            .collect();
        t.insert("entries".into(), Value::Array(entries));
        if let Some(s) = &self.unknown {
            t.insert(s.clone(), json!(1));
        }
        Value::Object(t)
    }
}

// ---------------------------------------------------------------- the checks

/// A problem within what routing guarantees the engine: 1 <= M, N <= 2^31 - 1,
/// K a multiple of 8 up to 2^28, 16-byte aligned pointers.
fn problem(dtype: DType, m: u32, n: u32, k: u32, bias: bool) -> Problem {
    let m = m.clamp(1, MAX_MN);
    let n = n.clamp(1, MAX_MN);
    let k = (k.clamp(8, MAX_K) / 8) * 8;
    let mut p = Problem::packed(dtype, m, n, k, bias);
    (p.w, p.x, p.y) = (0x7000_0000, 0x7100_0000, 0x7200_0000);
    if bias {
        p.bias = 0x7300_0000;
    }
    p
}

fn draw_problem(u: &mut Unstructured) -> Result<Problem> {
    let dtype = if u.arbitrary()? { DType::F16 } else { DType::Bf16 };
    let m = match u.arbitrary::<u8>()? {
        0..=199 => u.int_in_range(1..=16)?,
        200..=239 => u.int_in_range(1..=512)?,
        _ => u.arbitrary()?,
    };
    let n = if u.ratio(7, 8)? { u.int_in_range(1..=65536)? } else { u.arbitrary()? };
    let k = if u.ratio(7, 8)? { 8 * u.int_in_range(1..=8192)? } else { u.arbitrary()? };
    let mut p = problem(dtype, m, n, k, u.arbitrary()?);
    if u.ratio(1, 8)? {
        p.form = Form::Gemv;
        p.m = 1;
    }
    // Batch-invariant planning (`UNIFORM_SUMMATION_ORDER_EXT`) takes its own path.
    p.batch_invariant = u.ratio(1, 4)?;
    Ok(p)
}

/// Everything the hot path asks of `t` for `p`, with its documented bounds.
fn exercise(arch: Arch, t: &Tuning, p: &Problem, target: &Target) {
    let catalog = kernels::for_arch(arch).kernels;
    let runnable = |c: Choice, what: &str| {
        if let Choice::Run { kernel, split_k } = c {
            let k = catalog.get(kernel).unwrap_or_else(|| panic!("{what}: kernel {kernel} of {}", catalog.len()));
            assert_eq!(k.dtype, p.dtype, "{what}: a {:?} kernel for a {:?} problem", k.dtype, p.dtype);
            assert!(split_k >= 1, "{what}: split {split_k}");
        }
    };
    if let Some(b) = t.lookup(p) {
        assert!(b.m_min <= p.m && p.m <= b.m_max, "lookup: band {}..={} for M = {}", b.m_min, b.m_max, p.m);
        runnable(b.choice, "table band");
        let _ = b.holds_at(arch, p.m);
    }
    if let Some(model) = &t.planner {
        let _ = model.vendor_us(p);
    }
    // With and without a library to forward to: the planner runs in either (a
    // problem costs a prediction per compiled kernel and split, so once each).
    for can_forward in [false, true] {
        let Ok(choice) = engine::choose(t, &fallbacks()[arch_index(arch)], target, p, can_forward) else { continue };
        runnable(choice, "choose");
        let Ok(plan) = engine::plan(target, choice, p) else { continue };
        assert!((1..=MAX_SPLIT).contains(&plan.split_k), "plan: split {}", plan.split_k);
        assert_eq!(plan.grid[1], plan.split_k, "plan: grid {:?} for split {}", plan.grid, plan.split_k);
        if plan.cluster {
            assert!(plan.split_k <= MAX_CLUSTER_SPLIT, "plan: a cluster of {}", plan.split_k);
        } else {
            assert!(plan.partial_bytes <= target.partial_capacity, "plan: {} partial bytes, capacity {}", plan.partial_bytes, target.partial_capacity);
        }
    }
}

fn arch_index(arch: Arch) -> usize {
    Arch::ALL.iter().position(|&a| a == arch).unwrap()
}

fn target(arch: Arch, u: &mut Unstructured) -> Result<Target> {
    let backend = if arch == Arch::Sm90 { Backend::Cuda } else { Backend::Hip };
    let units = if u.ratio(3, 4)? { arch.default_units() } else { u.int_in_range(1..=1024)? };
    let partial_capacity = match u.arbitrary::<u8>()? {
        0..=199 => 4 << 20,
        200..=219 => 0,
        _ => u.int_in_range(0..=1usize << 30)?,
    };
    Ok(Target { arch, backend, units, partial_capacity })
}

fn run(data: &[u8]) -> Result<()> {
    let Some((&mode, rest)) = data.split_first() else { return Ok(()) };
    let mut u = Unstructured::new(rest);
    let (text, table) = if mode % 2 == 0 {
        (String::from_utf8_lossy(rest).into_owned(), None)
    } else {
        let table: Table = u.arbitrary()?;
        (serde_json::to_string(&table.json()).unwrap(), Some(table))
    };
    for arch in Arch::ALL {
        let Ok(t) = Tuning::parse(arch, &text, "fuzz") else { continue };
        let _ = (t.measured(), t.measured_runs().count());
        assert!(t.entries + t.skipped <= text.len(), "{} entries from {} bytes", t.entries, text.len());
        let target = target(arch, &mut u)?;
        // The table's own shapes, at and around their bands' edges.
        if let Some(table) = &table {
            for e in table.entries.iter().take(4) {
                let num = |n: &Num| n.json().as_u64().unwrap_or(1).min(u32::MAX as u64) as u32;
                let dtype = if e.dtype % 2 == 0 { DType::Bf16 } else { DType::F16 };
                for m in [num(&e.m_min), num(&e.m_max)] {
                    exercise(arch, &t, &problem(dtype, m, num(&e.n), num(&e.k), e.bias), &target);
                }
            }
        }
        for _ in 0..4 {
            let p = draw_problem(&mut u)?;
            exercise(arch, &t, &p, &target);
        }
    }
    Ok(())
}

fuzz_target!(
    init: {
        // Nothing from the fuzzer's environment (a SKINNYLT_LOG would log every
        // skipped entry).
        skinnylt_fuzz::init_env(&[]);
    },
    |data: &[u8]| {
        let _ = run(data);
    }
);
