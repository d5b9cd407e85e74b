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

/// Makes the library find every tuning table it would read without its entries:
/// with `keep_planner`, the planner alone decides what runs (`bench --routing
/// planner`); without, the fallback rule does (`check --tuning fallback`). The
/// tables are the ones the library would read (`tuning::search_dirs`): a
/// `SKINNYLT_TUNING_FILE`, else each name from `SKINNYLT_TUNING_DIR` or the
/// installed data directory where it holds that file, else the shipped copy (so a
/// refitted planner is judged by itself). Must run before the library reads its
/// configuration.
pub fn use_tables_without_entries(keep_planner: bool) {
    let cfg = skinnylt::config::Config::from_env();
    let dir = std::env::temp_dir().join(format!(
        "skinnylt-tables-without-entries-{}",
        std::process::id()
    ));
    let _ = std::fs::create_dir_all(&dir);
    let searched: Vec<std::path::PathBuf> = skinnylt::tuning::search_dirs(&cfg).collect();
    write_tables_without_entries(&dir, keep_planner, &searched);
    // A tuning file that does not read or parse stays named: the library reports it.
    let stripped_file = cfg.tuning_file.as_ref().and_then(|f| {
        let text = std::fs::read_to_string(f).ok()?;
        let out = dir.join("tuning-file.json");
        std::fs::write(&out, without_entries(&text, keep_planner).ok()?).ok()?;
        Some(out)
    });
    // SAFETY: called first thing in a command, before any thread exists and before
    // the library has read the environment.
    unsafe {
        std::env::set_var("SKINNYLT_TUNING_DIR", &dir);
        if let Some(f) = stripped_file {
            std::env::set_var("SKINNYLT_TUNING_FILE", f);
        }
    }
}

/// A table's text without entries or anchors (and without planner constants unless
/// `keep_planner`); the parse error where it does not parse.
fn without_entries(text: &str, keep_planner: bool) -> Result<String, String> {
    let mut file: skinnylt::tuning::schema::TuningFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    file.entries.clear();
    file.anchors.clear();
    file.invariant.clear();
    if !keep_planner {
        file.planner = None;
    }
    Ok(serde_json::to_string(&file).expect("a table serialises"))
}

/// Writes into `dir` every table a device may read, without entries, anchors or
/// measured batch-invariant plans (and without planner constants unless `keep_planner`): each from the first of
/// `searched` that holds a table of that name, else as shipped. A table there that
/// does not read or parse is reported, and the shipped one used (as the library
/// would).
fn write_tables_without_entries(dir: &std::path::Path, keep_planner: bool, searched: &[std::path::PathBuf]) {
    use skinnylt::tuning;
    for arch in skinnylt::gpu::Arch::ALL {
        // Every table a device of the arch may read: its own, without PDL, and the
        // device variants' (by the library's own file naming).
        let own = (None, tuning::embedded(arch), tuning::embedded_no_pdl(arch));
        let variants = tuning::embedded_variants(arch)
            .iter()
            .map(|v| (Some(v), v.table, v.no_pdl));
        for (variant, table, no_pdl) in std::iter::once(own).chain(variants) {
            for (pdl, shipped) in [(true, table), (false, no_pdl.unwrap_or(table))] {
                let name = tuning::name_of(arch, variant, pdl);
                let found = searched.iter().map(|d| d.join(&name)).find(|p| p.exists());
                let user = found.and_then(|path| {
                    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string());
                    text.and_then(|t| without_entries(&t, keep_planner))
                        .map_err(|e| eprintln!("tuning file {}: {e}; the shipped {name} is used", path.display()))
                        .ok()
                });
                let text = user.unwrap_or_else(|| {
                    without_entries(shipped, keep_planner).expect("the embedded tables parse")
                });
                let _ = std::fs::write(dir.join(&name), text);
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
            write_tables_without_entries(&dir, keep, &[]);
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

    /// A table in the user's tuning directory is the one stripped (a refitted
    /// planner is judged by itself); names it does not hold come from the shipped
    /// copies.
    #[test]
    fn tables_without_entries_come_from_the_users_directory_where_it_has_them() {
        let root = std::env::temp_dir().join(format!("skinnylt-test-user-tables-{}", std::process::id()));
        let (user, out) = (root.join("user"), root.join("out"));
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let mut file: tuning::schema::TuningFile = serde_json::from_str(tuning::embedded(Arch::Sm90)).unwrap();
        assert!(!file.entries.is_empty());
        file.planner.as_mut().unwrap().source = "refitted by the user".into();
        std::fs::write(user.join("sm90.json"), serde_json::to_string(&file).unwrap()).unwrap();
        write_tables_without_entries(&out, true, std::slice::from_ref(&user));
        let read = |name: &str| -> tuning::schema::TuningFile {
            serde_json::from_str(&std::fs::read_to_string(out.join(name)).unwrap()).unwrap()
        };
        let own = read("sm90.json");
        assert_eq!(own.planner.unwrap().source, "refitted by the user");
        assert!(own.entries.is_empty() && own.anchors.is_empty());
        let shipped: tuning::schema::TuningFile = serde_json::from_str(tuning::embedded_no_pdl(Arch::Sm90).unwrap()).unwrap();
        assert_eq!(read("sm90-nopdl.json").planner.unwrap().source, shipped.planner.unwrap().source);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
