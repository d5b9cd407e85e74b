//! `skinnylt info`.

use skinnylt::{engine, gpu, kernels, process};

pub fn run() -> i32 {
    let p = process::get();
    println!("skinnylt {} (hipBLASLt C ABI level {})", env!("CARGO_PKG_VERSION"), process::OWN_ABI_VERSION);
    println!("kernels built with: {}", kernels::BUILT_WITH);
    for a in kernels::all() {
        println!("  {:<7} {:>3} kernels, {:>7} bytes of code object", a.arch.name(), a.kernels.len(), a.image.len());
    }
    println!("enabled: {} (SKINNYLT_DISABLE), max tokens: {} (SKINNYLT_MAX_M)", p.enabled(), p.config.max_m);
    let invariant = if p.config.batch_invariant { "every call" } else { "calls whose descriptor sets UNIFORM_SUMMATION_ORDER_EXT" };
    println!("batch-invariant: {invariant} (SKINNYLT_BATCH_INVARIANT)");
    match p.real_lib() {
        Some(r) => {
            let missing: Vec<_> = r.fns.missing().into_iter().map(|(_, n)| n).collect();
            println!("real hipBLASLt: {} (found by {}); functions it lacks: {}", r.path, r.found_by, if missing.is_empty() { "none".into() } else { missing.join(", ") });
        }
        None => println!("real hipBLASLt: none found — standalone mode (calls skinnylt cannot run return NOT_SUPPORTED)"),
    }
    routing();
    match gpu::runtime() {
        None => println!("GPU runtime: none (no libamdhip64 or libcuda with a device)"),
        Some(rt) => {
            println!("GPU runtime: {}", rt.describe());
            for d in 0..rt.device_count() {
                match rt.device_info(d) {
                    Ok(i) => {
                        let kernels = match engine::device(d) {
                            Ok(k) => format!(
                                "{} kernels loaded, tuning: {} ({} entries){}",
                                k.functions.len(),
                                k.tuning.source,
                                k.tuning.entries,
                                k.tuning_no_pdl.as_ref().map_or(String::new(), |t| format!("; without PDL: {} ({} entries)", t.source, t.entries))
                            ),
                            Err(e) => format!("no skinnylt kernels: {e}"),
                        };
                        println!("  device {d}: {} — {} , {} units, L2 {} MiB; {kernels}", i.name, i.arch_name, i.units, i.l2_bytes >> 20);
                    }
                    Err(e) => println!("  device {d}: {e}"),
                }
            }
        }
    }
    // Last: loading the real library and the tables above may find more.
    let problems = skinnylt::log::problems();
    if problems.is_empty() {
        println!("configuration: no problems");
    } else {
        println!("configuration problems (what was used instead):");
        for problem in problems {
            println!("  {problem}");
        }
    }
    0
}

/// What a table's anchors add to its routing (`Tuning::transfer`): nothing without
/// anchors.
fn transfer(t: &skinnylt::tuning::Tuning) -> String {
    let rule = t.transfer_rule();
    if t.anchors().is_empty() {
        return String::new();
    }
    let counts: Vec<String> = skinnylt::tuning::schema::DType::EVERY
        .iter()
        .map(|&d| (d, t.anchors().iter().filter(|a| a.dtype == d).count()))
        .filter(|&(_, n)| n > 0)
        .map(|(d, n)| format!("{} {n}", d.name()))
        .collect();
    format!(
        "{} anchors, measured winners ({}): a shape no entry lists first borrows the nearest one's kernel at its count of CTAs (where that adds no round of CTAs per compute unit, nor a wave of clusters), and with a real hipBLASLt runs it only where the {} nearest beat hipBLASLt by {:.2}x{}{} and M <= {} (forwarding where they agree but none can lend), else the planner decides; ",
        t.anchors().len(),
        counts.join(", "),
        rule.agree,
        rule.margin,
        if rule.small_m > 0 { format!(" ({:.2}x in 16-bit at M <= {})", rule.small_margin, rule.small_m) } else { String::new() },
        if rule.votes > 1 {
            format!(", in 16-bit {} of them won with the kernel it runs (lent by the nearest of those; 1 where all won by {:.2}x)", rule.votes, rule.strong)
        } else {
            String::new()
        },
        rule.max_m
    )
}

/// What a table's per-row fp8 entries add to the planner's vendor prediction
/// (`Tuning::vendor_row_floor_us`): nothing without them.
fn row_floor(t: &skinnylt::tuning::Tuning) -> String {
    let model = if t.planner.as_ref().is_some_and(|m| m.vendor_row.is_some()) { "by a model of its per-row kernels fitted to the table's per-row entries, and " } else { "" };
    match t.vendor_row_floor_range() {
        Some((lo, hi)) => format!("; fp8 with per-row scales: hipBLASLt's time is predicted {model}at least its measured per-row time at that K (K = {lo}..{hi})"),
        None => String::new(),
    }
}

/// What a table's measured batch-invariant plans add: nothing without them.
fn invariant(t: &skinnylt::tuning::Tuning) -> String {
    let shapes = t.invariant_shapes();
    if shapes.is_empty() {
        return String::new();
    }
    format!("; batch-invariant calls of {} measured (N, K) run the summation class and split measured to lose least against the default; other shapes, the planner's pair", shapes.len())
}

/// How each arch's shipped table routes: measured entries or a model's, and the
/// planner that decides for every shape or token count the table does not hold at.
fn routing() {
    println!("routing (shipped tables):");
    for arch in gpu::Arch::ALL {
        let Ok(t) = skinnylt::tuning::Tuning::parse(arch, skinnylt::tuning::embedded(arch), "embedded") else { continue };
        let entries = if t.measured() { "measured entries run as measured" } else { "entries predicted by a model (not measured): ignored, the planner decides" };
        let planner = match &t.planner {
            Some(m) if !m.calibration.is_empty() => format!(
                "planner constants fitted to measurements, {} measured kernel calibrations (only those kernels are planned); with a real hipBLASLt, a shape no measured entry covers runs on skinnylt only where its predicted time, at the slow end of its kernel's measured spread, beats hipBLASLt's by {:.2}x (fp8, planned with the 16-bit calibration: {:.2}x), or, 16-bit at M = {}..{}, its median predicted time beats it by {:.2}x; else it is forwarded",
                m.calibration.len(),
                m.margin,
                skinnylt::engine::planner_margin(m, skinnylt::route::DType::E4m3),
                skinnylt::tuning::planner::MEDIAN_TOKENS.start(),
                skinnylt::tuning::planner::MEDIAN_TOKENS.end(),
                skinnylt::tuning::planner::MEDIAN_MARGIN
            ),
            Some(m) => format!(
                "planner constants {}; with a real hipBLASLt, a shape no measured entry covers runs on skinnylt only where its predicted time beats hipBLASLt's by {:.2}x, else it is forwarded",
                if m.source.starts_with("hardware") { "from the hardware's documented numbers, not measured" } else { "fitted to measurements" },
                m.margin
            ),
            None => "no planner constants: with a real hipBLASLt unlisted shapes are forwarded".to_owned(),
        };
        println!("  {:<7} {} entries, {entries}; {}{planner}{}{}", arch.name(), t.entries, transfer(&t), row_floor(&t), invariant(&t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skinnylt::gpu::Arch;
    use skinnylt::tuning::{Tuning, embedded};

    /// The H100's table names its measured batch-invariant plans; the AMD tables,
    /// which have none, say nothing of them.
    #[test]
    fn routing_names_measured_invariant_plans_where_a_table_has_them() {
        let sm90 = Tuning::parse(Arch::Sm90, embedded(Arch::Sm90), "embedded").unwrap();
        assert!(!sm90.invariant_shapes().is_empty());
        assert!(invariant(&sm90).contains("measured (N, K)"), "{}", invariant(&sm90));
        assert_eq!(invariant(&Tuning::parse(Arch::Gfx942, embedded(Arch::Gfx942), "embedded").unwrap()), "");
    }

    /// The H100's table says how it transfers, with its anchors counted per dtype;
    /// the model-only AMD tables, which have none, say nothing of it.
    #[test]
    fn routing_names_transfer_only_where_a_table_has_anchors() {
        let sm90 = Tuning::parse(Arch::Sm90, embedded(Arch::Sm90), "embedded").unwrap();
        let said = transfer(&sm90);
        assert!(said.starts_with(&format!("{} anchors", sm90.anchors().len())), "{said}");
        assert!(said.contains("bf16 ") && said.contains("e4m3 "), "{said}");
        assert!(said.contains("in 16-bit 2 of them won with the kernel it runs"), "{said}");
        let gfx942 = Tuning::parse(Arch::Gfx942, embedded(Arch::Gfx942), "embedded").unwrap();
        assert_eq!(transfer(&gfx942), "");
        // The per-row vendor floor: the H100's per-row entries span K = 96..16384 (the
        // grid's from 2880, the training models' small-K projections below).
        assert!(row_floor(&sm90).ends_with("(K = 96..16384)"), "{}", row_floor(&sm90));
        // ... and its planner models the vendor's per-row kernels.
        assert!(row_floor(&sm90).contains("a model of its per-row kernels"), "{}", row_floor(&sm90));
        assert_eq!(row_floor(&gfx942), "");
    }
}
