//! The `skinnylt` command-line tool, as a library so that its integration tests
//! reach the vendor baselines and the audit. Nothing here is part of
//! `libskinnylt.so`.

pub mod audit;
pub mod bench;
pub mod check;
pub mod client;
pub mod demo;
pub mod fit;
pub mod gpu;
pub mod grid;
pub mod info;
pub mod kernels;
pub mod models;
pub mod progress;
pub mod reference;
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

/// Makes the library find an empty tuning table for every arch, so that the
/// planner alone decides what runs (`check --tuning fallback`, `bench --routing
/// planner`). Must run before the library reads its configuration.
pub fn use_empty_tuning_tables() {
    let dir = std::env::temp_dir().join(format!("skinnylt-empty-tables-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for arch in skinnylt::gpu::Arch::ALL {
        // Every table a device of the arch may read: its own, without PDL, and the
        // device variants' (by the library's own file naming).
        let variants = skinnylt::tuning::embedded_variants(arch).iter().map(Some).chain([None]);
        for variant in variants {
            for pdl in [true, false] {
                let name = skinnylt::tuning::name_of(arch, variant, pdl);
                let _ = std::fs::write(dir.join(name), format!("{{\"schema\":1,\"arch\":\"{}\",\"entries\":[]}}", arch.name()));
            }
        }
    }
    // SAFETY: called first thing in a command, before any thread exists and before
    // the library has read the environment.
    unsafe { std::env::set_var("SKINNYLT_TUNING_DIR", &dir) };
}
