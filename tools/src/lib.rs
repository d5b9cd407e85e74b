//! The `skinnylt` command-line tool, as a library so that its integration tests
//! reach the vendor baselines and the audit. Nothing here is part of
//! `libskinnylt.so`.

pub mod audit;
pub mod bench;
pub mod check;
pub mod client;
pub mod demo;
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
