//! Every C function of hipBLASLt, exported under its own name with its exact
//! signature.
//!
//! The functions skinnylt implements (kind `api` in `real/functions.rs`) are
//! written out here: each turns its raw pointers into references (or numbers, for
//! device memory), looks the process context up once, and calls `crate::api`.
//! The others are generated from the list: forwarded when the real library has
//! them, `HIPBLAS_STATUS_NOT_SUPPORTED` otherwise. The list also checks that every
//! function written out here has exactly the signature it names.
//!
//! # Safety
//! Each export's contract is hipBLASLt's: every pointer is null or valid for what
//! that function reads or writes (a `(buf, size)` pair for `size` bytes, an output
//! array for `requested` results).

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_char, c_void};

use super::{bytes, bytes_mut, guard, input, out};
use crate::abi::*;
use crate::api::{self, Cx, Desc, Layout, MatmulArgs, Pref, Scalar, real_call};
use crate::gpu;

/// Runs `f` with the process context; a call made while this thread decides the
/// mode (from the real library's initialisers) cannot be served yet.
#[inline(always)]
fn with_cx(f: impl FnOnce(Cx) -> Status) -> Status {
    guard(|| match Cx::get() {
        Some(cx) => f(cx),
        None => STATUS_NOT_INITIALIZED,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtGetVersion(handle: Handle, version: *mut i32) -> Status {
    // SAFETY: the export's contract (module doc).
    with_cx(|cx| api::get_version(cx, handle, unsafe { out(version) }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtGetGitRevision(handle: Handle, rev: *mut c_char) -> Status {
    with_cx(|cx| match api::get_git_revision(cx, handle, rev) {
        Ok(()) => {
            // SAFETY: hipBLASLt's contract: `rev` (checked non-null) holds its short
            // revision tag, which ours does not exceed.
            unsafe { std::ptr::copy_nonoverlapping(api::GIT_REVISION.as_ptr(), rev.cast::<u8>(), api::GIT_REVISION.len()) };
            STATUS_SUCCESS
        }
        Err(s) => s,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtGetArchName(arch_name: *mut *mut c_char) -> Status {
    // SAFETY: the export's contract (module doc).
    with_cx(|cx| api::get_arch_name(cx, unsafe { out(arch_name) }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtCreate(handle: *mut Handle) -> Status {
    // SAFETY: the export's contract (module doc).
    with_cx(|cx| api::create(cx, unsafe { out(handle) }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtDestroy(handle: Handle) -> Status {
    with_cx(|cx| api::destroy(cx, handle))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatrixLayoutCreate(layout: *mut MatrixLayout, dtype: i32, rows: u64, cols: u64, ld: i64) -> Status {
    // SAFETY: the export's contract (module doc).
    with_cx(|cx| api::create_layout(cx, unsafe { out(layout) }, dtype, rows, cols, ld))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulDescCreate(desc: *mut MatmulDesc, compute_type: i32, scale_type: i32) -> Status {
    // SAFETY: the export's contract (module doc).
    with_cx(|cx| api::create_desc(cx, unsafe { out(desc) }, compute_type, scale_type))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulPreferenceCreate(pref: *mut MatmulPreference) -> Status {
    // SAFETY: the export's contract (module doc).
    with_cx(|cx| api::create_pref(cx, unsafe { out(pref) }))
}

/// Destroy, SetAttribute and GetAttribute of one descriptor kind.
macro_rules! object_exports {
    ($kind:ty: $object:ty, $destroy:ident, $set:ident, $get:ident) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $destroy(object: $object) -> Status {
            with_cx(|cx| api::destroy_object::<$kind>(cx, object))
        }

        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $set(object: $object, attr: i32, buf: *const c_void, size: usize) -> Status {
            // SAFETY: the export's contract (module doc).
            with_cx(|cx| api::set_attribute::<$kind>(cx, object, attr, unsafe { bytes(buf, size) }))
        }

        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get(object: $object, attr: i32, buf: *mut c_void, size: usize, written: *mut usize) -> Status {
            // SAFETY: the export's contract (module doc).
            with_cx(|cx| api::get_attribute::<$kind>(cx, object, attr, unsafe { bytes_mut(buf, size) }, unsafe { out(written) }))
        }
    };
}
object_exports!(Layout: MatrixLayout, hipblasLtMatrixLayoutDestroy, hipblasLtMatrixLayoutSetAttribute, hipblasLtMatrixLayoutGetAttribute);
object_exports!(Desc: MatmulDesc, hipblasLtMatmulDescDestroy, hipblasLtMatmulDescSetAttribute, hipblasLtMatmulDescGetAttribute);
object_exports!(Pref: MatmulPreference, hipblasLtMatmulPreferenceDestroy, hipblasLtMatmulPreferenceSetAttribute, hipblasLtMatmulPreferenceGetAttribute);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmulAlgoGetHeuristic(
    handle: Handle,
    desc: MatmulDesc,
    a_desc: MatrixLayout,
    b_desc: MatrixLayout,
    c_desc: MatrixLayout,
    d_desc: MatrixLayout,
    pref: MatmulPreference,
    requested: i32,
    results: *mut HeuristicResult,
    returned: *mut i32,
) -> Status {
    let q = api::HeuristicArgs { handle, desc, a: a_desc, b: b_desc, c: c_desc, d: d_desc, pref };
    with_cx(|cx| {
        // SAFETY: the export's contract: `results` holds `requested` results.
        let results = (!results.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(results, requested.max(0) as usize) });
        // SAFETY: the export's contract (module doc).
        api::algo_get_heuristic(cx, &q, requested, results, unsafe { out(returned) })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hipblasLtMatmul(
    handle: Handle,
    desc: MatmulDesc,
    alpha: *const c_void,
    a: *const c_void,
    a_desc: MatrixLayout,
    b: *const c_void,
    b_desc: MatrixLayout,
    beta: *const c_void,
    c: *const c_void,
    c_desc: MatrixLayout,
    d: *mut c_void,
    d_desc: MatrixLayout,
    algo: *const MatmulAlgo,
    workspace: *mut c_void,
    workspace_size: usize,
    stream: Stream,
) -> Status {
    // Built once, outside the guard's closures, which then capture one reference.
    let m = MatmulArgs {
        handle,
        desc,
        alpha: Scalar(alpha),
        a: a as u64,
        a_desc,
        b: b as u64,
        b_desc,
        beta: Scalar(beta),
        c: c as u64,
        c_desc,
        d: d as u64,
        d_desc,
        // SAFETY: the export's contract (module doc).
        algo: unsafe { input(algo) },
        workspace: workspace as u64,
        workspace_size,
        stream: gpu::Stream(stream),
    };
    with_cx(|cx| api::matmul(cx, &m))
}

macro_rules! define_exports {
    ($($kind:ident $name:ident($($arg:ident: $ty:ty),*) $(=> $imp:ident)?;)*) => {
        $(define_exports!(@one $kind $name($($arg: $ty),*));)*
    };
    // Written out above: check it has the listed signature.
    (@one api $name:ident($($arg:ident: $ty:ty),*)) => {
        const _: unsafe extern "C" fn($($ty),*) -> Status = $name;
    };
    (@one $kind:ident $name:ident($($arg:ident: $ty:ty),*)) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> Status {
            with_cx(|cx| match cx.real() {
                Some(lib) => real_call!(lib, $name($($arg),*)),
                None => api::not_supported(),
            })
        }
    };
}
crate::hipblaslt_functions!(define_exports);
