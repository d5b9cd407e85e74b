//! skinnylt: faster decode GEMMs for AMD Instinct GPUs, behind the hipBLASLt C API.
//!
//! The tree, from the outside in:
//! * `ffi` — the C face: every hipBLASLt function and skinnylt's own API, each a
//!   panic guard that turns raw pointers into references and calls the core.
//! * `api` — hipBLASLt semantics: forward to the real library and shadow what it
//!   was told (`shadow`), or be the library in standalone mode.
//! * `process` — the one process-wide state: configuration, mode, side table,
//!   handles and devices, counters.
//! * `real`, `dl` — finding the real hipBLASLt (never ourselves) and its functions.
//! * `route` — the pure decision "ours or forward", with a reason for every forward;
//!   `memo` keeps its state half per thread while no descriptor changes.
//! * `tuning` — which kernel config runs a shape: shipped tables and the fallback.
//! * `engine` — devices and handles prepared at creation; the hot path's
//!   choose → plan → prepare → launch, without allocation.
//! * `gpu` — one runtime trait, implemented by HIP and the CUDA driver, loaded at
//!   run time.
//! * `kernels` — the embedded code objects built from `kernels/` (device code).
//! * `config`, `log`, `stats`, `record` — environment, logging, counters, the
//!   record of distinct calls (`SKINNYLT_RECORD`).
//!
//! The Rust API here serves the `skinnylt` tools (tools/); applications use the C
//! API (`include/skinnylt.h` and hipBLASLt's header).

pub mod abi;
pub mod benchlog;
pub(crate) mod api;
pub mod config;
pub(crate) mod dl;
pub mod engine;
pub mod ffi;
pub mod gpu;
pub mod kernels;
pub mod log;
pub mod memo;
pub mod process;
pub mod real;
pub mod record;
pub mod route;
pub mod shadow;
pub mod stats;
pub mod tuning;
