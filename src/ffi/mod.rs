//! The C face: thin, mechanical, unsafe. Every exported function is a panic guard
//! around a call into the safe(r) core; nothing here makes decisions.

pub mod hipblaslt;
pub mod skinnylt;

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::abi::{STATUS_INTERNAL_ERROR, Status};

/// Runs `f`, turning a panic into `HIPBLAS_STATUS_INTERNAL_ERROR`: unwinding out of
/// an `extern "C"` function would abort the host application.
#[inline]
pub fn guard(f: impl FnOnce() -> Status) -> Status {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(s) => s,
        Err(_) => {
            crate::log_error!("internal panic caught at the C boundary");
            STATUS_INTERNAL_ERROR
        }
    }
}

/// Like [`guard`] for functions that return a value rather than a status.
#[inline]
pub fn guard_or<T>(default: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(default)
}
