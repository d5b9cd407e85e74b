//! The C face: thin, mechanical. Every exported function is a panic guard around
//! one call into the core, and turns the caller's raw pointers into references
//! (or numbers, for device memory) on the way in; nothing here makes decisions.

pub mod hipblaslt;
pub mod skinnylt;

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::abi::{STATUS_INTERNAL_ERROR, Status};
use crate::api::{ATTRIBUTE_BYTES, Bytes, BytesMut};

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

/// An out-parameter: `None` for null.
///
/// # Safety
/// `p` is null or valid for reads and writes of a `T` for the call.
#[inline]
unsafe fn out<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_mut() }
}

/// An input struct: `None` for null.
///
/// # Safety
/// `p` is null or valid for reads of a `T` for the call.
#[inline]
unsafe fn input<'a, T>(p: *const T) -> Option<&'a T> {
    // SAFETY: the caller's contract.
    unsafe { p.as_ref() }
}

/// A `(const void* buf, size_t size)` pair. The slice covers only the bytes an
/// attribute value can have ([`ATTRIBUTE_BYTES`]): hipBLASLt reads the field's
/// size, so callers may pass a size larger than their buffer (even `SIZE_MAX`),
/// and a slice of that size would not describe memory at all.
///
/// # Safety
/// `buf` is null or valid for reads of `min(size, ATTRIBUTE_BYTES)` bytes.
#[inline]
unsafe fn bytes<'a>(buf: *const c_void, size: usize) -> Bytes<'a> {
    // SAFETY: the caller's contract.
    Bytes { data: (!buf.is_null()).then(|| unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), size.min(ATTRIBUTE_BYTES)) }), size }
}

/// A `(void* buf, size_t size)` output pair, covering at most [`ATTRIBUTE_BYTES`]
/// (see [`bytes`]).
///
/// # Safety
/// `buf` is null or valid for reads and writes of `min(size, ATTRIBUTE_BYTES)` bytes.
#[inline]
unsafe fn bytes_mut<'a>(buf: *mut c_void, size: usize) -> BytesMut<'a> {
    // SAFETY: the caller's contract.
    BytesMut { data: (!buf.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), size.min(ATTRIBUTE_BYTES)) }), size }
}
