//! hipBLASLt semantics behind the C face: forward to the real library and shadow
//! what it was told, or, in standalone mode, be the library.
//!
//! Interposed: every call goes to the real hipBLASLt with its arguments unchanged
//! and its status comes back unchanged; on success the side table learns the new
//! state. Callers always hold the real library's own pointers.
//! Standalone (no real hipBLASLt): descriptors are skinnylt's own objects, argument
//! checks return the statuses hipBLASLt returns, and problems skinnylt cannot run
//! get `HIPBLAS_STATUS_NOT_SUPPORTED`.
//!
//! Everything here is safe code over the arguments the C face converted: caller
//! buffers are references, device pointers are numbers, and the real library is
//! called with the caller's own pointers ([`real_call!`]).

mod matmul;
mod objects;

pub use matmul::{HeuristicArgs, MatmulArgs, Scalar, algo_get_heuristic, matmul};
pub use objects::{ATTRIBUTE_BYTES, Bytes, BytesMut, Desc, Layout, Pref, create_desc, create_layout, create_pref, destroy_object, get_attribute, set_attribute};

use std::ffi::c_char;

use crate::abi::*;
use crate::process::{Mode, Process};
use crate::real::RealLib;

/// What every call needs: the process state and its mode, looked up once at the
/// C face.
#[derive(Clone, Copy)]
pub struct Cx {
    pub p: &'static Process,
    pub mode: &'static Mode,
}

impl Cx {
    /// The process's context; `None` while the mode is being decided on this
    /// thread (a call from the real library's initialisers).
    #[inline]
    pub fn get() -> Option<Cx> {
        let p = crate::process::get();
        Some(Cx { p, mode: p.mode()? })
    }

    /// The real library, when interposed.
    pub fn real(&self) -> Option<&'static RealLib> {
        self.mode.real().map(|r| &r.lib)
    }
}

/// Calls a real-library function with the re-entrancy flag set, or returns
/// `NOT_SUPPORTED` when this version of the library lacks it.
macro_rules! real_call {
    ($lib:expr, $name:ident($($arg:expr),*)) => {
        match $lib.fns.$name {
            // SAFETY: the arguments are the caller's own, passed through unchanged
            // (or converted back from the references the C face made of them), so
            // the real function's contract is the caller's.
            Some(f) => $crate::real::call(|| unsafe { f($($arg),*) }),
            None => $crate::abi::STATUS_NOT_SUPPORTED,
        }
    };
}
pub(crate) use real_call;

/// The raw pointer behind an optional out-parameter (null for `None`).
pub(crate) fn raw<T>(r: Option<&mut T>) -> *mut T {
    r.map_or(std::ptr::null_mut(), |r| r as *mut T)
}

// ---------------------------------------------------------------- version, arch

pub fn get_version(cx: Cx, handle: Handle, version: Option<&mut i32>) -> Status {
    if let Some(lib) = cx.real() {
        return real_call!(lib, hipblasLtGetVersion(handle, raw(version)));
    }
    if handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    // A destroyed or made-up handle is refused, as Matmul refuses it.
    let Some(version) = version.filter(|_| cx.p.engines.knows(handle as usize)) else { return STATUS_INVALID_VALUE };
    *version = crate::process::OWN_ABI_VERSION;
    STATUS_SUCCESS
}

/// skinnylt's revision tag, NUL-terminated (hipBLASLt writes a short tag with no
/// size argument; ours is as short).
pub const GIT_REVISION: &str = concat!("skinnylt-", env!("CARGO_PKG_VERSION"), "\0");

/// `rev` is where the tag goes; the C face writes it (`GIT_REVISION`) when this
/// returns `Ok`.
pub fn get_git_revision(cx: Cx, handle: Handle, rev: *mut c_char) -> Result<(), Status> {
    if let Some(lib) = cx.real() {
        return Err(real_call!(lib, hipblasLtGetGitRevision(handle, rev)));
    }
    if handle.is_null() {
        return Err(STATUS_NOT_INITIALIZED);
    }
    if rev.is_null() || !cx.p.engines.knows(handle as usize) {
        return Err(STATUS_INVALID_VALUE);
    }
    Ok(())
}

pub fn get_arch_name(cx: Cx, out: Option<&mut *mut c_char>) -> Status {
    if let Some(lib) = cx.real() {
        return real_call!(lib, hipblasLtGetArchName(raw(out)));
    }
    let Some(out) = out else { return STATUS_INVALID_VALUE };
    let arch = crate::gpu::current_arch_name().unwrap_or_else(|| "unknown".to_owned());
    // The caller frees it with free(), as with hipBLASLt's strdup'd string.
    let Ok(name) = std::ffi::CString::new(arch) else { return STATUS_INTERNAL_ERROR };
    // SAFETY: strdup copies a NUL-terminated string into a malloc'd buffer.
    let p = unsafe { libc::strdup(name.as_ptr()) };
    if p.is_null() {
        return STATUS_ALLOC_FAILED;
    }
    *out = p;
    STATUS_SUCCESS
}

// ---------------------------------------------------------------- handles

pub fn create(cx: Cx, out: Option<&mut Handle>) -> Status {
    let engines = &cx.p.engines;
    if let Some(real) = cx.mode.real() {
        let lib = &real.lib;
        let out = raw(out);
        let s = real_call!(lib, hipblasLtCreate(out));
        // SAFETY: the real library reported success, so it wrote a handle to `out`
        // (checked non-null first).
        if s == STATUS_SUCCESS && let Some(&mut h) = unsafe { out.as_mut() } {
            if real.version().is_none() {
                let mut v = 0i32;
                if real_call!(lib, hipblasLtGetVersion(h, &mut v)) == STATUS_SUCCESS {
                    real.learn_version(v);
                }
            }
            engines.on_create(h as usize, &cx.p.config);
        }
        return s;
    }
    let Some(out) = out else { return STATUS_INVALID_VALUE };
    let h = crate::shadow::new_own_object();
    engines.on_create(h, &cx.p.config);
    *out = h as Handle;
    STATUS_SUCCESS
}

pub fn destroy(cx: Cx, handle: Handle) -> Status {
    let owned = cx.p.engines.on_destroy(handle as usize);
    if let Some(lib) = cx.real() {
        return real_call!(lib, hipblasLtDestroy(handle));
    }
    if handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    if !owned {
        return STATUS_INVALID_VALUE;
    }
    // SAFETY: the handle was in the engine table, so `create` made it with
    // `new_own_object` (standalone), and `on_destroy` just removed it: freed once.
    unsafe { crate::shadow::free_own_object(handle as usize) };
    STATUS_SUCCESS
}

/// Transform descriptors and the newer/ext-op functions in standalone mode.
pub fn not_supported() -> Status {
    STATUS_NOT_SUPPORTED
}

#[cfg(test)]
mod tests;
