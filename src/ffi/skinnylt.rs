//! skinnylt's own C API for engines that link it (`include/skinnylt.h`, generated
//! by cbindgen from this file and checked in; a test fails when it is stale).

use std::ffi::c_char;

use super::guard_or;
use crate::route::Reason;

/// Per-process counters of `hipblasLtMatmul` calls.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct skinnylt_counters {
    /// Calls skinnylt ran on its own kernels.
    pub intercepted: u64,
    /// Calls forwarded to the real hipBLASLt (or refused in standalone mode).
    pub forwarded: u64,
}

/// The library version as a NUL-terminated string, e.g. "0.1.0". Never NULL.
#[unsafe(no_mangle)]
pub extern "C" fn skinnylt_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Copies the counters into `out`. Returns 0, or -1 when `out` is NULL.
///
/// # Safety
/// `out` must be NULL or point to a writable `skinnylt_counters`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn skinnylt_get_counters(out: *mut skinnylt_counters) -> i32 {
    guard_or(-1, || {
        // SAFETY: the caller's contract: null or a writable `skinnylt_counters`.
        let Some(out) = (unsafe { out.as_mut() }) else { return -1 };
        let s = crate::process::get().stats.snapshot();
        *out = skinnylt_counters { intercepted: s.intercepted, forwarded: s.forwarded_total() };
        0
    })
}

/// Number of calls forwarded for the reason named `reason` (e.g. "too-many-tokens"),
/// or -1 for an unknown name or NULL.
///
/// # Safety
/// `reason` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn skinnylt_forwarded_for(reason: *const c_char) -> i64 {
    guard_or(-1, || {
        if reason.is_null() {
            return -1;
        }
        // SAFETY: the caller's contract: a NUL-terminated string (checked non-null).
        let name = unsafe { std::ffi::CStr::from_ptr(reason) }.to_string_lossy();
        match Reason::ALL.iter().find(|r| r.name() == name) {
            Some(r) => crate::process::get().stats.snapshot().forwarded(*r) as i64,
            None => -1,
        }
    })
}

/// Resets the counters to zero.
#[unsafe(no_mangle)]
pub extern "C" fn skinnylt_reset_counters() {
    guard_or((), || crate::process::get().stats.reset())
}

/// Turns skinnylt's own kernels on (non-zero) or off (0: every call is forwarded).
#[unsafe(no_mangle)]
pub extern "C" fn skinnylt_set_enabled(enabled: i32) {
    guard_or((), || crate::process::get().set_enabled(enabled != 0))
}

/// 1 when skinnylt runs supported GEMMs itself, 0 when it forwards everything.
#[unsafe(no_mangle)]
pub extern "C" fn skinnylt_is_enabled() -> i32 {
    guard_or(0, || crate::process::get().enabled() as i32)
}

/// 1 when a real hipBLASLt was found and calls are forwarded to it, 0 in standalone mode.
#[unsafe(no_mangle)]
pub extern "C" fn skinnylt_has_real_library() -> i32 {
    guard_or(0, || crate::process::get().mode().is_some_and(|m| m.real().is_some()) as i32)
}

/// Loads everything skinnylt needs on `device` (GPU runtime, code objects, kernels,
/// tuning) so that no later call does first-time work, e.g. before CUDA/HIP graph
/// capture. Returns 0 on success, -1 when no usable GPU or kernels exist for it.
#[unsafe(no_mangle)]
pub extern "C" fn skinnylt_preload(device: i32) -> i32 {
    guard_or(-1, || match crate::engine::preload(device) {
        Ok(_) => 0,
        Err(e) => {
            crate::log_warn!("preload of device {device} failed: {e}");
            -1
        }
    })
}
