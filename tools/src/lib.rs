//! The `skinnylt` command-line tool, as a library so that its integration tests
//! reach the vendor baselines and the audit. Nothing here is part of
//! `libskinnylt.so`.

pub mod audit;
pub mod bench;
pub mod check;
pub mod client;
pub mod demo;
pub mod epilogue;
pub mod fit;
pub mod gpu;
pub mod grid;
pub mod info;
pub mod kernels;
pub mod models;
pub mod plan;
pub mod progress;
pub mod reference;
pub mod stress;
pub mod tune;
pub mod vendor;

/// The library's counters now.
pub fn counters() -> skinnylt::stats::Snapshot {
    skinnylt::process::get().stats.snapshot()
}

/// The engines of this process (devices and handles), for runs of a given choice.
pub fn engines() -> &'static skinnylt::engine::Engines {
    &skinnylt::process::get().engines
}

/// Makes the library find every shipped tuning table without its entries: with
/// `keep_planner`, the planner alone decides what runs (`bench --routing planner`);
/// without, the fallback rule does (`check --tuning fallback`). Must run before the
/// library reads its configuration.
pub fn use_tables_without_entries(keep_planner: bool) {
    let dir = std::env::temp_dir().join(format!(
        "skinnylt-tables-without-entries-{}",
        std::process::id()
    ));
    let _ = std::fs::create_dir_all(&dir);
    write_tables_without_entries(&dir, keep_planner);
    // SAFETY: called first thing in a command, before any thread exists and before
    // the library has read the environment.
    unsafe { std::env::set_var("SKINNYLT_TUNING_DIR", &dir) };
}

/// Writes into `dir` every table a device may read, as shipped but without entries
/// or anchors (and without planner constants unless `keep_planner`).
fn write_tables_without_entries(dir: &std::path::Path, keep_planner: bool) {
    use skinnylt::tuning::{self, schema::TuningFile};
    for arch in skinnylt::gpu::Arch::ALL {
        // Every table a device of the arch may read: its own, without PDL, and the
        // device variants' (by the library's own file naming).
        let own = (None, tuning::embedded(arch), tuning::embedded_no_pdl(arch));
        let variants = tuning::embedded_variants(arch)
            .iter()
            .map(|v| (Some(v), v.table, v.no_pdl));
        for (variant, table, no_pdl) in std::iter::once(own).chain(variants) {
            for (pdl, text) in [(true, table), (false, no_pdl.unwrap_or(table))] {
                let mut file: TuningFile =
                    serde_json::from_str(text).expect("the embedded tables parse");
                file.entries.clear();
                file.anchors.clear();
                if !keep_planner {
                    file.planner = None;
                }
                let text = serde_json::to_string(&file).expect("a table serialises");
                let _ = std::fs::write(dir.join(tuning::name_of(arch, variant, pdl)), text);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skinnylt::{gpu::Arch, tuning};

    /// Every table name a device may read is written, parses, has no entries or anchors, and
    /// keeps its planner constants exactly when asked to.
    #[test]
    fn tables_without_entries_keep_the_planner_when_asked() {
        for keep in [true, false] {
            let dir = std::env::temp_dir().join(format!(
                "skinnylt-test-tables-{}-{keep}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            write_tables_without_entries(&dir, keep);
            for arch in Arch::ALL {
                let variants = tuning::embedded_variants(arch)
                    .iter()
                    .map(Some)
                    .chain([None]);
                for variant in variants {
                    for pdl in [true, false] {
                        let name = tuning::name_of(arch, variant, pdl);
                        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
                        let t = tuning::Tuning::parse(arch, &text, &name).unwrap();
                        assert_eq!((t.entries, t.planner.is_some()), (0, keep), "{name}");
                        let file: tuning::schema::TuningFile = serde_json::from_str(&text).unwrap();
                        assert!(file.anchors.is_empty(), "{name}");
                    }
                }
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
