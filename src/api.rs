//! hipBLASLt semantics behind the C face: forward to the real library and shadow
//! what it was told, or, in standalone mode, be the library.
//!
//! Interposed: every call goes to the real hipBLASLt with its arguments unchanged
//! and its status comes back unchanged; on success the side table learns the new
//! state. Callers always hold the real library's own pointers.
//! Standalone (no real hipBLASLt): descriptors are skinnylt's own objects, argument
//! checks return the statuses hipBLASLt returns (research doc §5), and unsupported
//! problems get `HIPBLAS_STATUS_NOT_SUPPORTED`.
//!
//! # Safety
//! Each `pub unsafe fn` here is the C function of the same name: its contract is
//! hipBLASLt's (every pointer valid for what that function reads or writes), and
//! its only callers are the generated exports in `src/ffi/hipblaslt.rs`.
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::abi::*;
use crate::real::{self, RealLib};
use crate::route::{self, Call, Pointers, Policy, Problem, Reason};
use crate::shadow::{self, DescState, LayoutState, Owner, PrefState};
use crate::{engine, memo, stats};

/// The hipBLASLt ABI level skinnylt implements in standalone mode (hipBLASLt 1.2,
/// ROCm 7.2): `hipblasLtGetVersion` reports it, and version-dependent attribute
/// values are read with its meaning.
pub const OWN_ABI_VERSION: i32 = 100200;

/// `hipblasLtGetVersion` of the real library, 0 until the first handle exists.
static REAL_VERSION: AtomicI32 = AtomicI32::new(0);

/// The version by which version-dependent values are interpreted.
pub fn abi_version() -> Option<i32> {
    match real::get() {
        None => Some(OWN_ABI_VERSION),
        Some(_) => match REAL_VERSION.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v),
        },
    }
}

/// Calls a real-library function with the re-entrancy flag set.
macro_rules! real_call {
    ($lib:expr, $name:ident($($arg:expr),*)) => {
        match $lib.fns.$name {
            #[allow(unused_unsafe)]
            Some(f) => $crate::real::call(|| unsafe { f($($arg),*) }),
            None => $crate::abi::STATUS_NOT_SUPPORTED,
        }
    };
}
pub(crate) use real_call;

// ---------------------------------------------------------------- attributes

/// Which attribute family a Set/Get call addresses.
#[derive(Clone, Copy)]
enum Family {
    Layout,
    Desc,
    Pref,
}

/// Payload size of an attribute in standalone mode (our own ABI version), `None`
/// for an attribute hipBLASLt would reject with INVALID_VALUE.
fn own_payload_size(family: Family, attr: i32) -> Option<usize> {
    match family {
        Family::Layout => crate::abi::layout_attr::payload_size(attr),
        Family::Desc => match attr {
            // ROCm >= 7.1 meaning: activation arguments (float).
            desc_attr::VERSIONED_102 | desc_attr::VERSIONED_103 => Some(4),
            // develop-only attributes are not part of the 7.2 ABI we implement.
            desc_attr::BIAS_BATCH_STRIDE
            | desc_attr::SM_COUNT_TARGET
            | desc_attr::STREAMK_TILE_SCHEDULING_EXT
            | desc_attr::UNIFORM_SUMMATION_ORDER_EXT
            | desc_attr::FUSED_EPILOGUE => None,
            a => desc_attr::payload_size(a),
        },
        Family::Pref => match attr {
            pref_attr::SEARCH_MODE => Some(4),
            pref_attr::MAX_WORKSPACE_BYTES => Some(8),
            _ => None,
        },
    }
}

/// Standalone SetAttribute: the checks hipBLASLt makes, then the value.
/// Preferences take any non-zero size (hipBLASLt 0.11 only rejects 0; we read at
/// most what the caller passed); descriptors and layouts need the field's size.
unsafe fn own_set(family: Family, attr: i32, buf: *const c_void, size: usize) -> Result<u64, Status> {
    let need = own_payload_size(family, attr).ok_or(STATUS_INVALID_VALUE)?;
    let enough = match family {
        Family::Pref => size > 0,
        _ => size >= need,
    };
    if buf.is_null() || !enough {
        return Err(STATUS_INVALID_VALUE);
    }
    Ok(unsafe { shadow::read_payload(buf.cast(), need.min(size)) })
}

/// Standalone GetAttribute: writes `value` (of the attribute's size).
unsafe fn own_get(
    family: Family,
    attr: i32,
    value: u64,
    buf: *mut c_void,
    size: usize,
    written: *mut usize,
) -> Status {
    let Some(need) = own_payload_size(family, attr) else {
        return STATUS_INVALID_VALUE;
    };
    unsafe {
        if size == 0 {
            if written.is_null() {
                return STATUS_INVALID_VALUE;
            }
            *written = need;
            return STATUS_SUCCESS;
        }
        if buf.is_null() || size < need {
            return STATUS_INVALID_VALUE;
        }
        std::ptr::copy_nonoverlapping(value.to_le_bytes().as_ptr(), buf.cast::<u8>(), need);
        if !written.is_null() {
            *written = need;
        }
    }
    STATUS_SUCCESS
}

/// What a successful real SetAttribute copied: `sizeof(field)` bytes, or for an
/// attribute we do not know, as much as fits in 8 bytes (routing forwards on it).
unsafe fn real_payload(family: Family, attr: i32, buf: *const c_void, size: usize) -> u64 {
    let known = match family {
        Family::Layout => crate::abi::layout_attr::payload_size(attr),
        Family::Desc => desc_attr::payload_size(attr),
        Family::Pref => own_payload_size(Family::Pref, attr),
    };
    if buf.is_null() {
        return 0;
    }
    unsafe { shadow::read_payload(buf.cast(), known.unwrap_or(size).min(size)) }
}

// ---------------------------------------------------------------- version, arch

pub unsafe fn get_version(handle: Handle, version: *mut i32) -> Status {
    if let Some(lib) = real::get() {
        return real_call!(lib, hipblasLtGetVersion(handle, version));
    }
    if handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    if version.is_null() {
        return STATUS_INVALID_VALUE;
    }
    unsafe { *version = OWN_ABI_VERSION };
    STATUS_SUCCESS
}

pub unsafe fn get_git_revision(handle: Handle, rev: *mut c_char) -> Status {
    if let Some(lib) = real::get() {
        return real_call!(lib, hipblasLtGetGitRevision(handle, rev));
    }
    if handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    if rev.is_null() {
        return STATUS_INVALID_VALUE;
    }
    // hipBLASLt writes a short tag with no size argument; keep ours as short.
    let tag = concat!("skinnylt-", env!("CARGO_PKG_VERSION"), "\0");
    unsafe { std::ptr::copy_nonoverlapping(tag.as_ptr(), rev.cast::<u8>(), tag.len()) };
    STATUS_SUCCESS
}

pub unsafe fn get_arch_name(out: *mut *mut c_char) -> Status {
    if let Some(lib) = real::get() {
        return real_call!(lib, hipblasLtGetArchName(out));
    }
    if out.is_null() {
        return STATUS_INVALID_VALUE;
    }
    let arch = crate::gpu::current_arch_name().unwrap_or_else(|| "unknown".to_owned());
    unsafe {
        // The caller frees it with free(), as with hipBLASLt's strdup'd string.
        let p = libc::malloc(arch.len() + 1) as *mut u8;
        if p.is_null() {
            return STATUS_ALLOC_FAILED;
        }
        std::ptr::copy_nonoverlapping(arch.as_ptr(), p, arch.len());
        *p.add(arch.len()) = 0;
        *out = p.cast();
    }
    STATUS_SUCCESS
}

// ---------------------------------------------------------------- handles

pub unsafe fn create(out: *mut Handle) -> Status {
    if let Some(lib) = real::get() {
        let s = real_call!(lib, hipblasLtCreate(out));
        if s == STATUS_SUCCESS && !out.is_null() {
            let h = unsafe { *out };
            learn_real_version(lib, h);
            engine::on_create(h as usize);
        }
        return s;
    }
    if out.is_null() {
        return STATUS_INVALID_VALUE;
    }
    let h = shadow::new_own_object();
    engine::on_create(h);
    unsafe { *out = h as Handle };
    STATUS_SUCCESS
}

fn learn_real_version(lib: &RealLib, h: Handle) {
    if REAL_VERSION.load(Ordering::Relaxed) != 0 {
        return;
    }
    let mut v = 0i32;
    if real_call!(lib, hipblasLtGetVersion(h, &mut v)) == STATUS_SUCCESS && v > 0 {
        REAL_VERSION.store(v, Ordering::Relaxed);
        crate::log_info!("real hipBLASLt version {v}");
    }
}

pub unsafe fn destroy(handle: Handle) -> Status {
    let owned = engine::on_destroy(handle as usize);
    if let Some(lib) = real::get() {
        return real_call!(lib, hipblasLtDestroy(handle));
    }
    if handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    if !owned {
        return STATUS_INVALID_VALUE;
    }
    unsafe { shadow::free_own_object(handle as usize) };
    STATUS_SUCCESS
}

// ---------------------------------------------------------------- descriptors

/// Shared Create logic: forward (then shadow) or make our own object.
unsafe fn create_object(
    out: *mut *mut c_void,
    forward: impl FnOnce(&RealLib) -> Status,
    insert: impl FnOnce(&mut shadow::Tables, usize, Owner),
) -> Status {
    if let Some(lib) = real::get() {
        let s = forward(lib);
        if s == STATUS_SUCCESS && !out.is_null() {
            let p = unsafe { *out } as usize;
            shadow::write(|t| insert(t, p, Owner::Real));
        }
        return s;
    }
    if out.is_null() {
        return STATUS_INVALID_VALUE;
    }
    let p = shadow::new_own_object();
    shadow::write(|t| insert(t, p, Owner::Own));
    unsafe { *out = p as *mut c_void };
    STATUS_SUCCESS
}

/// Shared Destroy logic: forget first (the address may be reused at once), then
/// forward or free.
unsafe fn destroy_object(
    p: *mut c_void,
    remove: impl FnOnce(&mut shadow::Tables, usize) -> Option<Owner>,
    forward: impl FnOnce(&RealLib) -> Status,
) -> Status {
    let owner = shadow::write(|t| remove(t, p as usize));
    if let Some(lib) = real::get() {
        return forward(lib);
    }
    match owner {
        Some(Owner::Own) => {
            unsafe { shadow::free_own_object(p as usize) };
            STATUS_SUCCESS
        }
        _ => STATUS_INVALID_VALUE,
    }
}

/// Shared SetAttribute logic.
unsafe fn set_attribute(
    family: Family,
    p: *mut c_void,
    attr: i32,
    buf: *const c_void,
    size: usize,
    forward: impl FnOnce(&RealLib) -> Status,
    apply: impl FnOnce(&mut shadow::Tables, usize, i32, u64) -> bool,
) -> Status {
    if let Some(lib) = real::get() {
        let s = forward(lib);
        if s == STATUS_SUCCESS {
            let v = unsafe { real_payload(family, attr, buf, size) };
            shadow::write(|t| apply(t, p as usize, attr, v));
        }
        return s;
    }
    if p.is_null() {
        return STATUS_INVALID_VALUE;
    }
    match unsafe { own_set(family, attr, buf, size) } {
        Ok(v) => {
            if shadow::write(|t| apply(t, p as usize, attr, v)) {
                STATUS_SUCCESS
            } else {
                STATUS_INVALID_VALUE
            }
        }
        Err(s) => s,
    }
}

pub unsafe fn layout_create(out: *mut MatrixLayout, dtype: i32, rows: u64, cols: u64, ld: i64) -> Status {
    unsafe {
        create_object(
            out,
            |lib| real_call!(lib, hipblasLtMatrixLayoutCreate(out, dtype, rows, cols, ld)),
            |t, p, o| {
                t.layouts.insert(p, (o, LayoutState::new(dtype, rows, cols, ld)));
            },
        )
    }
}

pub unsafe fn layout_destroy(l: MatrixLayout) -> Status {
    unsafe {
        destroy_object(l, |t, p| t.layouts.remove(&p).map(|e| e.0), |lib| real_call!(lib, hipblasLtMatrixLayoutDestroy(l)))
    }
}

pub unsafe fn layout_set_attribute(l: MatrixLayout, attr: i32, buf: *const c_void, size: usize) -> Status {
    unsafe {
        set_attribute(
            Family::Layout,
            l,
            attr,
            buf,
            size,
            |lib| real_call!(lib, hipblasLtMatrixLayoutSetAttribute(l, attr, buf, size)),
            |t, p, attr, v| match t.layouts.get_mut(&p) {
                Some((_, s)) => {
                    s.set(attr, v);
                    true
                }
                None => false,
            },
        )
    }
}

pub unsafe fn layout_get_attribute(l: MatrixLayout, attr: i32, buf: *mut c_void, size: usize, written: *mut usize) -> Status {
    if let Some(lib) = real::get() {
        return real_call!(lib, hipblasLtMatrixLayoutGetAttribute(l, attr, buf, size, written));
    }
    let v = shadow::read().as_ref().and_then(|t| t.layouts.get(&(l as usize)).map(|(_, s)| s.get(attr)));
    match v {
        None => STATUS_INVALID_VALUE,
        Some(None) => STATUS_INVALID_VALUE,
        Some(Some(v)) => unsafe { own_get(Family::Layout, attr, v, buf, size, written) },
    }
}

pub unsafe fn desc_create(out: *mut MatmulDesc, compute: i32, scale: i32) -> Status {
    if real::get().is_none() && !out.is_null() {
        // hipBLASLt accepts these scale types at create time (0.11 + later additions).
        let scale_ok = matches!(scale, R_32F | 1 | 10 | R_16F | 4 | 5);
        if !scale_ok {
            return STATUS_INVALID_VALUE;
        }
    }
    unsafe {
        create_object(
            out,
            |lib| real_call!(lib, hipblasLtMatmulDescCreate(out, compute, scale)),
            |t, p, o| {
                t.descs.insert(p, (o, DescState::new(compute, scale)));
            },
        )
    }
}

pub unsafe fn desc_destroy(d: MatmulDesc) -> Status {
    unsafe { destroy_object(d, |t, p| t.descs.remove(&p).map(|e| e.0), |lib| real_call!(lib, hipblasLtMatmulDescDestroy(d))) }
}

pub unsafe fn desc_set_attribute(d: MatmulDesc, attr: i32, buf: *const c_void, size: usize) -> Status {
    unsafe {
        set_attribute(
            Family::Desc,
            d,
            attr,
            buf,
            size,
            |lib| real_call!(lib, hipblasLtMatmulDescSetAttribute(d, attr, buf, size)),
            |t, p, attr, v| match t.descs.get_mut(&p) {
                Some((_, s)) => {
                    s.attrs.insert(attr, v);
                    true
                }
                None => false,
            },
        )
    }
}

pub unsafe fn desc_get_attribute(d: MatmulDesc, attr: i32, buf: *mut c_void, size: usize, written: *mut usize) -> Status {
    if let Some(lib) = real::get() {
        return real_call!(lib, hipblasLtMatmulDescGetAttribute(d, attr, buf, size, written));
    }
    let v = shadow::read().as_ref().and_then(|t| {
        t.descs.get(&(d as usize)).map(|(_, s)| match attr {
            desc_attr::TRANSA => s.trans_a() as u32 as u64,
            desc_attr::TRANSB => s.trans_b() as u32 as u64,
            desc_attr::EPILOGUE => s.epilogue() as u64,
            desc_attr::BIAS_DATA_TYPE => s.bias_type() as u32 as u64,
            a => s.attrs.get(&a).copied().unwrap_or(0),
        })
    });
    match v {
        None => STATUS_INVALID_VALUE,
        Some(v) => unsafe { own_get(Family::Desc, attr, v, buf, size, written) },
    }
}

pub unsafe fn pref_create(out: *mut MatmulPreference) -> Status {
    unsafe {
        create_object(
            out,
            |lib| real_call!(lib, hipblasLtMatmulPreferenceCreate(out)),
            |t, p, o| {
                t.prefs.insert(p, (o, PrefState::default()));
            },
        )
    }
}

pub unsafe fn pref_destroy(p: MatmulPreference) -> Status {
    unsafe { destroy_object(p, |t, k| t.prefs.remove(&k).map(|e| e.0), |lib| real_call!(lib, hipblasLtMatmulPreferenceDestroy(p))) }
}

pub unsafe fn pref_set_attribute(p: MatmulPreference, attr: i32, buf: *const c_void, size: usize) -> Status {
    unsafe {
        set_attribute(
            Family::Pref,
            p,
            attr,
            buf,
            size,
            |lib| real_call!(lib, hipblasLtMatmulPreferenceSetAttribute(p, attr, buf, size)),
            |t, k, attr, v| match t.prefs.get_mut(&k) {
                Some((_, s)) => {
                    s.attrs.insert(attr, v);
                    true
                }
                None => false,
            },
        )
    }
}

pub unsafe fn pref_get_attribute(p: MatmulPreference, attr: i32, buf: *mut c_void, size: usize, written: *mut usize) -> Status {
    if let Some(lib) = real::get() {
        return real_call!(lib, hipblasLtMatmulPreferenceGetAttribute(p, attr, buf, size, written));
    }
    let v = shadow::read().as_ref().and_then(|t| t.prefs.get(&(p as usize)).map(|(_, s)| s.attrs.get(&attr).copied().unwrap_or(0)));
    match v {
        None => STATUS_INVALID_VALUE,
        Some(v) => unsafe { own_get(Family::Pref, attr, v, buf, size, written) },
    }
}

// ---------------------------------------------------------------- heuristic, matmul

fn policy() -> Policy {
    let cfg = crate::config::get();
    Policy { enabled: crate::config::enabled(), max_m: cfg.max_m, version: abi_version() }
}

/// Standalone heuristic: one algo for problems skinnylt runs, none otherwise.
#[allow(clippy::too_many_arguments)]
pub unsafe fn algo_get_heuristic(
    handle: Handle,
    desc: MatmulDesc,
    a: MatrixLayout,
    b: MatrixLayout,
    c: MatrixLayout,
    d: MatrixLayout,
    pref: MatmulPreference,
    requested: i32,
    results: *mut HeuristicResult,
    returned: *mut i32,
) -> Status {
    if let Some(lib) = real::get() {
        // Heuristic results and algo bytes go back untouched: clients persist and
        // compare solution indices, and intercepted calls ignore the algo.
        return real_call!(lib, hipblasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, d, pref, requested, results, returned));
    }
    if handle.is_null() {
        return STATUS_NOT_INITIALIZED;
    }
    if requested < 1 || results.is_null() || returned.is_null() || desc.is_null() || pref.is_null() {
        return STATUS_INVALID_VALUE;
    }
    let plan = {
        let guard = shadow::read();
        let Some(t) = guard.as_ref() else { return STATUS_INVALID_VALUE };
        let Some((_, pref_state)) = t.prefs.get(&(pref as usize)) else { return STATUS_INVALID_VALUE };
        let Some(mut desc_state) = t.descs.get(&(desc as usize)).map(|e| e.1.clone()) else {
            return STATUS_INVALID_VALUE;
        };
        // As hipBLASLt does, search with a stand-in bias pointer if none is set yet.
        if desc_state.epilogue() == EPILOGUE_BIAS && desc_state.bias_pointer() == 0 {
            desc_state.attrs.insert(desc_attr::BIAS_POINTER, 0x100);
        }
        let lay = |p: MatrixLayout| t.layouts.get(&(p as usize)).map(|e| &e.1);
        // Pointers are not known yet: assume aligned ones.
        let call = Call {
            desc: Some(&desc_state),
            a: lay(a),
            b: lay(b),
            c: lay(c),
            d: lay(d),
            ptrs: Pointers { a: 0x1000, b: 0x2000, c: 0x3000, d: 0x3000 },
            alpha: Some(1.0),
            beta: Some(0.0),
        };
        route::route(&call, &policy()).and_then(|p| engine::plan_for_heuristic(handle as usize, &p, pref_state.max_workspace_bytes()))
    };
    unsafe {
        match plan {
            Ok((config_index, workspace)) => {
                let mut algo = MatmulAlgo::default();
                // Bytes 0..4: a negative "solution index" (not a Tensile one).
                algo.data[0..4].copy_from_slice(&(-1i32).to_le_bytes());
                algo.data[4..8].copy_from_slice(&OWN_ALGO_MAGIC);
                algo.data[8..12].copy_from_slice(&(config_index as u32).to_le_bytes());
                algo.max_workspace_bytes = workspace;
                *results = HeuristicResult {
                    algo,
                    workspace_size: workspace,
                    state: STATUS_SUCCESS,
                    waves_count: 1.0,
                    reserved: [0; 4],
                };
                *returned = 1;
                STATUS_SUCCESS
            }
            Err(r) => {
                crate::log_debug!("heuristic: no skinnylt algo ({})", r.name());
                *returned = 0;
                STATUS_NOT_SUPPORTED
            }
        }
    }
}

/// Routing for a matmul call: the state half from this thread's memo while no
/// descriptor has changed since it was made, else from the side table (under its
/// lock, released before the launch or forward); the call half every time.
///
/// # Safety
/// `alpha` and `beta` must be readable as f32 when the descriptor says they are
/// host floats (the hipBLASLt contract).
#[inline]
unsafe fn decide(key: memo::Key, ptrs: Pointers, alpha: *const c_void, beta: *const c_void) -> Result<Problem, Reason> {
    let policy = policy();
    let m = match memo::get(&key, shadow::generation(), &policy) {
        Some(m) => m,
        None => {
            let guard = shadow::read();
            let Some(t) = guard.as_ref() else { return Err(Reason::UnknownDescriptor) };
            // Under the lock, the generation names exactly the state read here.
            let generation = shadow::generation();
            let m = memo_from(t, &key, &policy);
            drop(guard);
            memo::put(key, generation, policy, m);
            m
        }
    };
    let read = |p: *const c_void| (m.host_f32 && !p.is_null()).then(|| unsafe { std::ptr::read_unaligned(p as *const f32) });
    route::finish(&m.template, ptrs, read(alpha), read(beta))
}

/// The state half of routing, from the side table.
fn memo_from(t: &shadow::Tables, key: &memo::Key, policy: &Policy) -> memo::Memo {
    let desc = t.descs.get(&key.desc).map(|e| &e.1);
    let lay = |p: usize| t.layouts.get(&p).map(|e| &e.1);
    let c = lay(key.c);
    // C and D are usually one layout: one lookup.
    let d = if key.d == key.c { c } else { lay(key.d) };
    memo::Memo {
        template: route::prepare(desc, lay(key.a), lay(key.b), c, d, policy),
        // alpha and beta are host floats only with an fp32 scale type in host pointer
        // mode; otherwise routing forwards, and they are not read at all.
        host_f32: desc.is_some_and(|s| s.pointer_mode() == POINTER_MODE_HOST && s.scale_type == R_32F),
    }
}

/// The interception point.
#[allow(clippy::too_many_arguments)]
pub unsafe fn matmul(
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
    let lib = real::get();
    let forward = |reason: Reason| -> Status {
        stats::count_forwarded(reason);
        crate::log_trace!("matmul forwarded: {}", reason.name());
        match lib {
            Some(lib) => real_call!(
                lib,
                hipblasLtMatmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d, d_desc, algo, workspace, workspace_size, stream)
            ),
            None => match reason {
                _ if handle.is_null() => STATUS_NOT_INITIALIZED,
                Reason::NullArgument | Reason::UnknownDescriptor | Reason::Dimensions => STATUS_INVALID_VALUE,
                Reason::LaunchFailed => STATUS_EXECUTION_FAILED,
                _ => STATUS_NOT_SUPPORTED,
            },
        }
    };
    if real::reentered() {
        return forward(Reason::Reentrant);
    }
    if handle.is_null() || desc.is_null() || alpha.is_null() || beta.is_null() {
        return forward(Reason::NullArgument);
    }
    if workspace.is_null() && workspace_size > 0 {
        return forward(Reason::NullArgument);
    }
    let key = memo::Key {
        desc: desc as usize,
        a: a_desc as usize,
        b: b_desc as usize,
        c: c_desc as usize,
        d: d_desc as usize,
    };
    let ptrs = Pointers { a: a as u64, b: b as u64, c: c as u64, d: d as u64 };
    let routed = unsafe { decide(key, ptrs, alpha, beta) };
    let outcome = routed.and_then(|problem| engine::run(handle as usize, &problem, workspace as u64, workspace_size, stream));
    match outcome {
        Ok(()) => {
            stats::count_intercepted();
            crate::log_trace!("matmul run by skinnylt");
            STATUS_SUCCESS
        }
        Err(r) => forward(r),
    }
}

// ---------------------------------------------------------------- forward-only

/// Transform descriptors and the newer/ext-op functions: forwarded when the real
/// library has them, `NOT_SUPPORTED` otherwise.
pub fn not_supported() -> Status {
    STATUS_NOT_SUPPORTED
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64};

    const W: u64 = 0x7000_0000;
    const X: u64 = 0x7100_0000;
    const Y: u64 = 0x7200_0000;
    const PTRS: Pointers = Pointers { a: W, b: X, c: Y, d: Y };
    const ONE: f32 = 1.0;
    const ZERO: f32 = 0.0;

    /// The routing path as it was before the memo: lookups under the lock, then
    /// one pass of `route`.
    fn decide_uncached(key: memo::Key, ptrs: Pointers, alpha: &f32, beta: &f32) -> Result<Problem, Reason> {
        let guard = shadow::read();
        let Some(t) = guard.as_ref() else { return Err(Reason::UnknownDescriptor) };
        let desc_state = t.descs.get(&key.desc).map(|e| &e.1);
        let lay = |p: usize| t.layouts.get(&p).map(|e| &e.1);
        let host_f32 = desc_state.is_some_and(|s| s.pointer_mode() == POINTER_MODE_HOST && s.scale_type == R_32F);
        let read = |v: &f32| host_f32.then_some(*v);
        let call = Call { desc: desc_state, a: lay(key.a), b: lay(key.b), c: lay(key.c), d: lay(key.d), ptrs, alpha: read(alpha), beta: read(beta) };
        route::route(&call, &policy())
    }

    fn decide_memo(key: memo::Key, ptrs: Pointers, alpha: &f32, beta: &f32) -> Result<Problem, Reason> {
        unsafe { decide(key, ptrs, (alpha as *const f32).cast(), (beta as *const f32).cast()) }
    }

    /// Both paths, checked equal; and whether the memo answered.
    fn decide_checked(key: memo::Key, ptrs: Pointers) -> (Result<Problem, Reason>, bool) {
        let hits = memo::hits();
        let got = decide_memo(key, ptrs, &ONE, &ZERO);
        let hit = memo::hits() > hits;
        assert_eq!(got, decide_uncached(key, ptrs, &ONE, &ZERO), "memo (hit: {hit}) disagrees with the side table");
        (got, hit)
    }

    /// Routes once (checked), so the memo holds the current state.
    fn warm(k: memo::Key) {
        let _ = decide_checked(k, PTRS);
    }

    fn set_desc(d: usize, attr: i32, v: u64) {
        let s = unsafe { desc_set_attribute(d as MatmulDesc, attr, (&v as *const u64).cast(), 8) };
        assert_eq!(s, STATUS_SUCCESS, "desc attr {attr}");
    }

    fn set_layout(l: usize, attr: i32, v: u64) {
        let s = unsafe { layout_set_attribute(l as MatrixLayout, attr, (&v as *const u64).cast(), 8) };
        assert_eq!(s, STATUS_SUCCESS, "layout attr {attr}");
    }

    fn new_layout(dtype: i32, rows: u64, cols: u64, ld: i64) -> usize {
        let mut l: MatrixLayout = std::ptr::null_mut();
        assert_eq!(unsafe { layout_create(&mut l, dtype, rows, cols, ld) }, STATUS_SUCCESS);
        l as usize
    }

    fn new_desc() -> usize {
        let mut d: MatmulDesc = std::ptr::null_mut();
        assert_eq!(unsafe { desc_create(&mut d, COMPUTE_32F, R_32F) }, STATUS_SUCCESS);
        set_desc(d as usize, desc_attr::TRANSA, OP_T as u64);
        set_desc(d as usize, desc_attr::TRANSB, OP_N as u64);
        d as usize
    }

    /// PyTorch's `F.linear` descriptors through the C API: W[n,k], X[m,k], Y[m,n].
    fn linear_set(m: u64, n: u64, k: u64, dtype: i32) -> memo::Key {
        let desc = new_desc();
        let (a, b, d) = (new_layout(dtype, k, n, k as i64), new_layout(dtype, k, m, k as i64), new_layout(dtype, n, m, n as i64));
        memo::Key { desc, a, b, c: d, d }
    }

    fn destroy_set(k: memo::Key) {
        unsafe {
            desc_destroy(k.desc as MatmulDesc);
            for l in [k.a, k.b, k.d] {
                layout_destroy(l as MatrixLayout);
            }
        }
    }

    #[test]
    fn repeated_calls_hit_and_agree() {
        let bf16 = linear_set(4, 2880, 4096, R_16BF);
        let fp32 = linear_set(4, 2880, 4096, R_32F);
        for _ in 0..2 {
            warm(bf16);
            warm(fp32);
        }
        let (p, hit) = decide_checked(bf16, PTRS);
        let p = p.expect("a Linear problem is ours");
        assert_eq!((p.m, p.n, p.k, p.w, p.x, p.y), (4, 2880, 4096, W, X, Y));
        // Another test's write anywhere bumps the generation: a miss is allowed, a
        // wrong answer is not (checked each time). Some call must hit once the
        // other tests pause.
        let start = std::time::Instant::now();
        let mut hit = hit;
        while !hit && start.elapsed().as_secs() < 20 {
            hit = decide_checked(fp32, PTRS).1;
        }
        assert!(hit, "the memo never answered");
        assert_eq!(decide_checked(fp32, PTRS).0, Err(Reason::DataType));
        // Per-call values still come from the call, not the memo.
        let moved = Pointers { a: W + 0x100, b: X + 0x40, c: Y + 2, d: Y + 2 };
        let p = decide_checked(bf16, moved).0.unwrap();
        assert_eq!((p.w, p.x, p.y), (W + 0x100, X + 0x40, Y + 2));
        assert_eq!(decide_checked(bf16, Pointers { a: W + 8, ..PTRS }).0, Err(Reason::Alignment));
        assert_eq!(decide_checked(bf16, Pointers { d: 0, ..PTRS }).0, Err(Reason::NullArgument));
        assert_eq!(decide_memo(bf16, PTRS, &2.5, &ZERO).unwrap().alpha, 2.5);
        assert_eq!(decide_memo(bf16, PTRS, &ONE, &ONE), Err(Reason::Beta));
        // The fp32 set fails on its type before the pointers are looked at, as before.
        assert_eq!(decide_checked(fp32, Pointers { d: 0, ..PTRS }).0, Err(Reason::NullArgument));
        destroy_set(bf16);
        destroy_set(fp32);
    }

    #[test]
    fn every_kind_of_change_after_a_call_changes_the_decision() {
        let k = linear_set(8, 1024, 7168, R_16BF);
        let mut last = decide_checked(k, PTRS).0;
        assert!(last.is_ok());
        type Step<'a> = (Box<dyn Fn() + 'a>, Result<(), Reason>);
        let steps: Vec<Step<'_>> = vec![
            (Box::new(|| set_desc(k.desc, desc_attr::EPILOGUE, EPILOGUE_BIAS as u64)), Err(Reason::NullArgument)),
            (Box::new(|| set_desc(k.desc, desc_attr::BIAS_POINTER, 0x7300_0000)), Ok(())),
            (Box::new(|| set_desc(k.desc, desc_attr::EPILOGUE, 2)), Err(Reason::Epilogue)),
            (Box::new(|| set_desc(k.desc, desc_attr::EPILOGUE, EPILOGUE_DEFAULT as u64)), Ok(())),
            (Box::new(|| set_desc(k.desc, desc_attr::TRANSA, OP_N as u64)), Err(Reason::Transpose)),
            (Box::new(|| set_desc(k.desc, desc_attr::TRANSA, OP_T as u64)), Ok(())),
            (Box::new(|| set_desc(k.desc, desc_attr::POINTER_MODE, 1)), Err(Reason::PointerMode)),
            (Box::new(|| set_desc(k.desc, desc_attr::POINTER_MODE, 0)), Ok(())),
            (Box::new(|| set_layout(k.a, layout_attr::LD, 7172)), Err(Reason::Alignment)),
            (Box::new(|| set_layout(k.a, layout_attr::LD, 7168)), Ok(())),
            (Box::new(|| set_layout(k.a, layout_attr::LD, 100)), Err(Reason::Dimensions)),
            (Box::new(|| set_layout(k.a, layout_attr::LD, 7168)), Ok(())),
            (Box::new(|| set_layout(k.b, layout_attr::TYPE, R_16F as u64)), Err(Reason::DataType)),
            (Box::new(|| set_layout(k.b, layout_attr::TYPE, R_16BF as u64)), Ok(())),
            (Box::new(|| set_layout(k.d, layout_attr::BATCH_COUNT, 2)), Err(Reason::Batch)),
            (Box::new(|| set_layout(k.d, layout_attr::BATCH_COUNT, 1)), Ok(())),
            (Box::new(|| set_layout(k.b, layout_attr::COLS, 200)), Err(Reason::Dimensions)),
            (Box::new(|| set_layout(k.d, layout_attr::COLS, 200)), Err(Reason::TooManyTokens)),
            (Box::new(|| set_layout(k.d, layout_attr::COLS, 8)), Err(Reason::Dimensions)),
            (Box::new(|| set_layout(k.b, layout_attr::COLS, 8)), Ok(())),
        ];
        for (i, (change, want)) in steps.iter().enumerate() {
            // Warm the memo with the current state, then change it.
            warm(k);
            change();
            let now = decide_checked(k, PTRS).0;
            assert_eq!(now.map(|_| ()), *want, "step {i}");
            assert_ne!(now, last, "step {i} left the decision unchanged");
            last = now;
        }
        destroy_set(k);
    }

    #[test]
    fn an_address_reused_after_destroy_starts_fresh() {
        // The real library reuses addresses at once: simulate it exactly by
        // shadowing a new object at the destroyed one's address.
        let k = linear_set(4, 2048, 4096, R_16BF);
        assert!(decide_checked(k, PTRS).0.is_ok());
        warm(k);
        let (owner, _) = shadow::write(|t| t.descs.remove(&k.desc)).expect("shadowed");
        assert_eq!(decide_checked(k, PTRS).0, Err(Reason::UnknownDescriptor));
        // Re-created at the same address with defaults (opA = N): not the Linear form.
        shadow::write(|t| t.descs.insert(k.desc, (owner, DescState::new(COMPUTE_32F, R_32F))));
        assert_eq!(decide_checked(k, PTRS).0, Err(Reason::Transpose));
        // The same for a layout, re-created with another type.
        set_desc(k.desc, desc_attr::TRANSA, OP_T as u64);
        assert!(decide_checked(k, PTRS).0.is_ok());
        shadow::write(|t| {
            let (owner, _) = t.layouts.remove(&k.a).expect("shadowed");
            t.layouts.insert(k.a, (owner, LayoutState::new(R_32F, 4096, 2048, 4096)));
        });
        assert_eq!(decide_checked(k, PTRS).0, Err(Reason::DataType));
        destroy_set(k);

        // Through the C API: destroy and create until the allocator hands the
        // same address back (it usually does at once), then route the new one.
        let k = linear_set(4, 2048, 4096, R_16BF);
        assert!(decide_checked(k, PTRS).0.is_ok());
        unsafe { desc_destroy(k.desc as MatmulDesc) };
        let mut d: MatmulDesc = std::ptr::null_mut();
        assert_eq!(unsafe { desc_create(&mut d, COMPUTE_32F, R_32F) }, STATUS_SUCCESS);
        let k2 = memo::Key { desc: d as usize, ..k };
        assert_eq!(decide_checked(k2, PTRS).0, Err(Reason::Transpose));
        destroy_set(k2);
    }

    #[test]
    fn concurrent_changes_are_seen_in_order() {
        // One writer moves the bias pointer forward; readers on the same
        // descriptors must never see a value older than one already published.
        // Other threads churn their own descriptors (bumping the generation) and
        // flip their own epilogue.
        let k = linear_set(4, 1024, 4096, R_16BF);
        set_desc(k.desc, desc_attr::EPILOGUE, EPILOGUE_BIAS as u64);
        set_desc(k.desc, desc_attr::BIAS_POINTER, 0x10_0000);
        let published = Arc::new(AtomicU64::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for _ in 0..3 {
            let (published, stop) = (published.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut calls = 0u64;
                while !stop.load(Ordering::Acquire) || calls < 1000 {
                    let floor = published.load(Ordering::Acquire);
                    let p = decide_memo(k, PTRS, &ONE, &ZERO).expect("ours");
                    assert!(p.bias / 0x10_0000 >= floor, "saw bias {:#x} after {floor} was published", p.bias);
                    calls += 1;
                }
            }));
        }
        for _ in 0..2 {
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                let own = linear_set(2, 512, 1024, R_16BF);
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) || i < 200 {
                    let bias = i % 2 == 1;
                    set_desc(own.desc, desc_attr::EPILOGUE, if bias { 2 } else { EPILOGUE_DEFAULT as u64 });
                    let want = if bias { Err(Reason::Epilogue) } else { Ok(()) };
                    assert_eq!(decide_memo(own, PTRS, &ONE, &ZERO).map(|_| ()), want);
                    assert_eq!(decide_memo(own, PTRS, &ONE, &ZERO).map(|_| ()), want);
                    let junk = linear_set(1, 8, 8, R_16F);
                    destroy_set(junk);
                    i += 1;
                }
                destroy_set(own);
            }));
        }
        for i in 2..4000u64 {
            set_desc(k.desc, desc_attr::BIAS_POINTER, i * 0x10_0000);
            published.store(i, Ordering::Release);
            if i % 64 == 0 {
                std::thread::yield_now();
            }
        }
        stop.store(true, Ordering::Release);
        for t in threads {
            t.join().expect("no thread failed");
        }
        assert_eq!(decide_checked(k, PTRS).0.unwrap().bias, 3999 * 0x10_0000);
        destroy_set(k);
    }

    /// One mutation of a descriptor set through the C API.
    #[derive(Clone, Debug)]
    enum Op {
        Desc(i32, u64),
        Layout(usize, i32, u64),
        Recreate(usize),
        Call(Pointers),
    }

    fn arb_op() -> impl Strategy<Value = Op> {
        let value = prop_oneof![
            Just(0u64), Just(1), Just(2), Just(14), Just(15), Just(111), Just(112), Just(8), Just(4096), Just(4100), Just(0x7300_0000),
        ];
        let ptr = prop_oneof![4 => Just(W), 1 => Just(0), 1 => Just(W + 8)];
        prop_oneof![
            3 => (prop_oneof![0i32..6, Just(desc_attr::POINTER_MODE), Just(desc_attr::A_SCALE_MODE)], value.clone()).prop_map(|(a, v)| Op::Desc(a, v)),
            3 => (0usize..3, 0i32..9, value).prop_map(|(l, a, v)| Op::Layout(l, a, v)),
            1 => (0usize..4).prop_map(Op::Recreate),
            3 => (ptr.clone(), ptr).prop_map(|(w, x)| Op::Call(Pointers { a: w, b: if x == W { X } else { x }, c: Y, d: Y })),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// After any sequence of Set/Destroy/Create through the C API, the memo
        /// decides as the side table does, call after call.
        #[test]
        fn memo_tracks_any_sequence_of_changes(ops in proptest::collection::vec(arb_op(), 1..40)) {
            let mut k = linear_set(4, 1024, 4096, R_16BF);
            let mut ptrs = PTRS;
            for op in ops {
                match op {
                    Op::Desc(a, v) => {
                        let _ = unsafe { desc_set_attribute(k.desc as MatmulDesc, a, (&v as *const u64).cast(), 8) };
                    }
                    Op::Layout(l, a, v) => {
                        let l = [k.a, k.b, k.d][l];
                        let _ = unsafe { layout_set_attribute(l as MatrixLayout, a, (&v as *const u64).cast(), 8) };
                    }
                    Op::Recreate(0) => {
                        unsafe { desc_destroy(k.desc as MatmulDesc) };
                        k.desc = new_desc();
                    }
                    Op::Recreate(i) => {
                        let slot = match i {
                            1 => &mut k.a,
                            2 => &mut k.b,
                            _ => &mut k.d,
                        };
                        unsafe { layout_destroy(*slot as MatrixLayout) };
                        *slot = new_layout(R_16BF, 4096, 1024, 4096);
                        k.c = k.d;
                    }
                    Op::Call(p) => ptrs = p,
                }
                // Twice: the second can come from the memo.
                let first = decide_checked(k, ptrs).0;
                prop_assert_eq!(decide_checked(k, ptrs).0, first);
            }
            destroy_set(k);
        }
    }
}
