//! skinnylt: faster decode GEMMs for AMD Instinct GPUs, behind the hipBLASLt C API.
//!
//! The tree, from the outside in:
//! * `ffi` — the C face: every hipBLASLt function and skinnylt's own API, each a
//!   panic guard around one call into the core. Thin, unsafe, mechanical.
//! * `api` — hipBLASLt semantics: forward to the real library and shadow what it
//!   was told (`shadow`), or be the library in standalone mode.
//! * `real` — finding the real hipBLASLt (never ourselves) and its function table.
//! * `route` — the pure decision "ours or forward", with a reason for every forward.
//! * `memo` — per-thread routing templates, reused while no descriptor changes.
//! * `tuning` — which kernel config runs a shape: shipped tables and the fallback.
//! * `engine` — what each handle prepared at creation; the allocation-free hot path.
//! * `gpu` — the HIP and CUDA runtimes, loaded at run time.
//! * `kernels` — the embedded code objects built from `kernels/` (device code).
//! * `config`, `log`, `stats` — environment, logging, per-process counters.

pub mod abi;
pub mod api;
pub mod config;
pub mod engine;
pub mod ffi;
pub mod gpu;
pub mod kernels;
pub mod log;
pub mod memo;
pub mod real;
pub mod route;
pub mod shadow;
pub mod stats;
pub mod tuning;
