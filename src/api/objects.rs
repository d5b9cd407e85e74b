//! The three descriptor kinds callers create, set and read — matrix layouts, matmul
//! descriptors and preferences — with one implementation of Create, Destroy,
//! SetAttribute and GetAttribute for all of them, over [`Kind`].

use std::ffi::c_void;

use rustc_hash::FxHashMap;

use super::{Cx, raw, real_call};
use crate::abi::*;
use crate::real::RealFns;
use crate::shadow::{self, DescState, LayoutState, Owner, PrefState, Tables};

/// The widest attribute value skinnylt reads or writes (every one is at most a
/// 64-bit number or pointer): all of a caller's buffer it ever touches.
pub const ATTRIBUTE_BYTES: usize = 8;

/// A caller's `(const void* buf, size_t size)` pair: the bytes when `buf` is not
/// null (the first `min(size, ATTRIBUTE_BYTES)`), and the size as passed.
#[derive(Clone, Copy, Debug)]
pub struct Bytes<'a> {
    pub data: Option<&'a [u8]>,
    pub size: usize,
}

/// A caller's `(void* buf, size_t size)` output pair.
#[derive(Debug)]
pub struct BytesMut<'a> {
    pub data: Option<&'a mut [u8]>,
    pub size: usize,
}

impl Bytes<'_> {
    fn ptr(&self) -> *const c_void {
        self.data.map_or(std::ptr::null(), |d| d.as_ptr().cast())
    }
}

type DestroyFn = unsafe extern "C" fn(*mut c_void) -> Status;
type SetFn = unsafe extern "C" fn(*mut c_void, i32, *const c_void, usize) -> Status;
type GetFn = unsafe extern "C" fn(*mut c_void, i32, *mut c_void, usize, *mut usize) -> Status;

/// One descriptor kind: where its shadow state lives, how attributes apply to it,
/// and its real-library functions.
pub trait Kind {
    type State;
    fn table(t: &Tables) -> &FxHashMap<usize, (Owner, Self::State)>;
    fn table_mut(t: &mut Tables) -> &mut FxHashMap<usize, (Owner, Self::State)>;
    /// The payload size hipBLASLt copies for `attr` when the real library took it:
    /// `sizeof(field)`; `None` for an attribute we do not know (then as much of the
    /// caller's bytes as fits in 8 is kept, and routing forwards on it).
    fn real_payload_size(attr: i32) -> Option<usize>;
    /// The payload size of `attr` in standalone mode (our own ABI version), `None`
    /// for an attribute hipBLASLt would reject with INVALID_VALUE.
    fn own_payload_size(attr: i32) -> Option<usize>;
    /// Standalone SetAttribute takes any non-zero size (preferences: hipBLASLt
    /// only rejects 0) rather than at least the field's size.
    const ANY_NONZERO_SIZE: bool = false;
    fn apply(s: &mut Self::State, attr: i32, value: u64);
    /// The value standalone GetAttribute reports.
    fn read(s: &Self::State, attr: i32) -> Option<u64>;
    fn real_destroy(f: &RealFns) -> Option<DestroyFn>;
    fn real_set(f: &RealFns) -> Option<SetFn>;
    fn real_get(f: &RealFns) -> Option<GetFn>;
}

/// Declares a kind: its marker type, where its state lives in the side table, its
/// three real-library functions, and the attribute rules written out per kind.
macro_rules! kind {
    ($kind:ident: $state:ty, $table:ident, $destroy:ident, $set:ident, $get:ident; $($rules:tt)*) => {
        pub enum $kind {}
        impl Kind for $kind {
            type State = $state;
            fn table(t: &Tables) -> &FxHashMap<usize, (Owner, $state)> {
                &t.$table
            }
            fn table_mut(t: &mut Tables) -> &mut FxHashMap<usize, (Owner, $state)> {
                &mut t.$table
            }
            fn real_destroy(f: &RealFns) -> Option<DestroyFn> {
                f.$destroy
            }
            fn real_set(f: &RealFns) -> Option<SetFn> {
                f.$set
            }
            fn real_get(f: &RealFns) -> Option<GetFn> {
                f.$get
            }
            $($rules)*
        }
    };
}

kind! { Layout: LayoutState, layouts, hipblasLtMatrixLayoutDestroy, hipblasLtMatrixLayoutSetAttribute, hipblasLtMatrixLayoutGetAttribute;
    fn real_payload_size(attr: i32) -> Option<usize> {
        layout_attr::payload_size(attr)
    }
    fn own_payload_size(attr: i32) -> Option<usize> {
        layout_attr::payload_size(attr)
    }
    fn apply(s: &mut LayoutState, attr: i32, value: u64) {
        s.set(attr, value)
    }
    fn read(s: &LayoutState, attr: i32) -> Option<u64> {
        s.get(attr)
    }
}

kind! { Desc: DescState, descs, hipblasLtMatmulDescDestroy, hipblasLtMatmulDescSetAttribute, hipblasLtMatmulDescGetAttribute;
    fn real_payload_size(attr: i32) -> Option<usize> {
        desc_attr::payload_size(attr)
    }
    fn own_payload_size(attr: i32) -> Option<usize> {
        match attr {
            // ROCm >= 7.1 meaning: activation arguments (float).
            desc_attr::VERSIONED_102 | desc_attr::VERSIONED_103 => Some(4),
            // develop-only attributes are not part of the 7.2 ABI we implement, except
            // the one that asks for what skinnylt offers: batch invariance.
            desc_attr::BIAS_BATCH_STRIDE
            | desc_attr::SM_COUNT_TARGET
            | desc_attr::STREAMK_TILE_SCHEDULING_EXT
            | desc_attr::FUSED_EPILOGUE => None,
            a => desc_attr::payload_size(a),
        }
    }
    fn apply(s: &mut DescState, attr: i32, value: u64) {
        s.attrs.insert(attr, value)
    }
    fn read(s: &DescState, attr: i32) -> Option<u64> {
        Some(match attr {
            desc_attr::TRANSA => s.trans_a() as u32 as u64,
            desc_attr::TRANSB => s.trans_b() as u32 as u64,
            desc_attr::EPILOGUE => s.epilogue() as u64,
            desc_attr::BIAS_DATA_TYPE => s.bias_type() as u32 as u64,
            a => s.attrs.get(&a).copied().unwrap_or(0),
        })
    }
}

kind! { Pref: PrefState, prefs, hipblasLtMatmulPreferenceDestroy, hipblasLtMatmulPreferenceSetAttribute, hipblasLtMatmulPreferenceGetAttribute;
    const ANY_NONZERO_SIZE: bool = true;
    fn real_payload_size(attr: i32) -> Option<usize> {
        Pref::own_payload_size(attr)
    }
    fn own_payload_size(attr: i32) -> Option<usize> {
        match attr {
            pref_attr::SEARCH_MODE => Some(4),
            pref_attr::MAX_WORKSPACE_BYTES => Some(8),
            _ => None,
        }
    }
    fn apply(s: &mut PrefState, attr: i32, value: u64) {
        s.attrs.insert(attr, value)
    }
    fn read(s: &PrefState, attr: i32) -> Option<u64> {
        Some(s.attrs.get(&attr).copied().unwrap_or(0))
    }
}

/// Calls an optional real-library function pointer (see [`real_call!`]).
fn call_real<F>(f: Option<F>, call: impl FnOnce(F) -> Status) -> Status {
    match f {
        Some(f) => crate::real::call(|| call(f)),
        None => STATUS_NOT_SUPPORTED,
    }
}

/// Reads the payload of an attribute the way hipBLASLt does: `min(need, size, 8)`
/// little-endian bytes, zero-extended.
fn payload(data: &[u8], need: usize) -> u64 {
    let mut bytes = [0u8; 8];
    let n = need.min(data.len()).min(8);
    bytes[..n].copy_from_slice(&data[..n]);
    u64::from_le_bytes(bytes)
}

// ---------------------------------------------------------------- create, destroy

/// Shared Create logic: forward (then shadow) or make our own object.
fn create<K: Kind>(cx: Cx, out: Option<&mut *mut c_void>, forward: impl FnOnce(*mut *mut c_void) -> Status, state: impl FnOnce() -> K::State) -> Status {
    let shadow = &cx.p.shadow;
    if cx.real().is_some() {
        let out = raw(out);
        let s = forward(out);
        // SAFETY: on success the real library wrote the new object to `out`
        // (checked non-null first).
        if s == STATUS_SUCCESS && let Some(&mut obj) = unsafe { out.as_mut() } {
            shadow.write(|t| K::table_mut(t).insert(obj as usize, (Owner::Real, state())));
        }
        return s;
    }
    let Some(out) = out else { return STATUS_INVALID_VALUE };
    let obj = shadow::new_own_object();
    shadow.write(|t| K::table_mut(t).insert(obj, (Owner::Own, state())));
    *out = obj as *mut c_void;
    STATUS_SUCCESS
}

pub fn create_layout(cx: Cx, out: Option<&mut MatrixLayout>, dtype: i32, rows: u64, cols: u64, ld: i64) -> Status {
    let forward = |out| match cx.real() {
        Some(lib) => real_call!(lib, hipblasLtMatrixLayoutCreate(out, dtype, rows, cols, ld)),
        None => STATUS_NOT_SUPPORTED,
    };
    create::<Layout>(cx, out, forward, || LayoutState::new(dtype, rows, cols, ld))
}

pub fn create_desc(cx: Cx, out: Option<&mut MatmulDesc>, compute: i32, scale: i32) -> Status {
    // hipBLASLt accepts these scale types at create time (0.11 + later additions).
    if cx.real().is_none() && out.is_some() && !matches!(scale, R_32F | 1 | 10 | R_16F | 4 | 5) {
        return STATUS_INVALID_VALUE;
    }
    let forward = |out| match cx.real() {
        Some(lib) => real_call!(lib, hipblasLtMatmulDescCreate(out, compute, scale)),
        None => STATUS_NOT_SUPPORTED,
    };
    create::<Desc>(cx, out, forward, || DescState::new(compute, scale))
}

pub fn create_pref(cx: Cx, out: Option<&mut MatmulPreference>) -> Status {
    let forward = |out| match cx.real() {
        Some(lib) => real_call!(lib, hipblasLtMatmulPreferenceCreate(out)),
        None => STATUS_NOT_SUPPORTED,
    };
    create::<Pref>(cx, out, forward, PrefState::default)
}

/// Destroy: forget first (the address may be reused at once), then forward or free.
pub fn destroy_object<K: Kind>(cx: Cx, obj: *mut c_void) -> Status {
    let owner = cx.p.shadow.write(|t| K::table_mut(t).remove(&(obj as usize)).map(|e| e.0));
    if let Some(lib) = cx.real() {
        // SAFETY: the caller's object, passed through unchanged.
        return call_real(K::real_destroy(&lib.fns), |f| unsafe { f(obj) });
    }
    match owner {
        Some(Owner::Own) => {
            // SAFETY: the table said we made it (`new_own_object`), and the entry was
            // just removed, so it is freed once.
            unsafe { shadow::free_own_object(obj as usize) };
            STATUS_SUCCESS
        }
        _ => STATUS_INVALID_VALUE,
    }
}

// ---------------------------------------------------------------- attributes

/// SetAttribute: forward, then shadow what the real library copied; standalone,
/// the checks hipBLASLt makes, then the value.
pub fn set_attribute<K: Kind>(cx: Cx, obj: *mut c_void, attr: i32, buf: Bytes<'_>) -> Status {
    let shadow = &cx.p.shadow;
    let apply = |v: u64| shadow.write(|t| K::table_mut(t).get_mut(&(obj as usize)).map(|(_, s)| K::apply(s, attr, v)).is_some());
    if let Some(lib) = cx.real() {
        // SAFETY: the caller's arguments, passed through unchanged.
        let s = call_real(K::real_set(&lib.fns), |f| unsafe { f(obj, attr, buf.ptr(), buf.size) });
        if s == STATUS_SUCCESS {
            apply(buf.data.map_or(0, |data| payload(data, K::real_payload_size(attr).unwrap_or(buf.size))));
        }
        return s;
    }
    if obj.is_null() {
        return STATUS_INVALID_VALUE;
    }
    let Some(need) = K::own_payload_size(attr) else { return STATUS_INVALID_VALUE };
    let enough = if K::ANY_NONZERO_SIZE { buf.size > 0 } else { buf.size >= need };
    match buf.data {
        Some(data) if enough => {
            if apply(payload(data, need)) {
                STATUS_SUCCESS
            } else {
                STATUS_INVALID_VALUE
            }
        }
        _ => STATUS_INVALID_VALUE,
    }
}

/// GetAttribute: forwarded; standalone, from the side table.
pub fn get_attribute<K: Kind>(cx: Cx, obj: *mut c_void, attr: i32, buf: BytesMut<'_>, written: Option<&mut usize>) -> Status {
    if let Some(lib) = cx.real() {
        let (ptr, size) = (buf.data.map_or(std::ptr::null_mut(), |d| d.as_mut_ptr().cast()), buf.size);
        let written = raw(written);
        // SAFETY: the caller's arguments, passed through unchanged.
        return call_real(K::real_get(&lib.fns), |f| unsafe { f(obj, attr, ptr, size, written) });
    }
    let value = {
        let t = cx.p.shadow.read();
        K::table(&t).get(&(obj as usize)).map(|(_, s)| K::read(s, attr))
    };
    let (Some(Some(value)), Some(need)) = (value, K::own_payload_size(attr)) else { return STATUS_INVALID_VALUE };
    if buf.size == 0 {
        let Some(written) = written else { return STATUS_INVALID_VALUE };
        *written = need;
        return STATUS_SUCCESS;
    }
    match buf.data {
        Some(data) if data.len() >= need => {
            data[..need].copy_from_slice(&value.to_le_bytes()[..need]);
            if let Some(w) = written {
                *w = need;
            }
            STATUS_SUCCESS
        }
        _ => STATUS_INVALID_VALUE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_reads_only_the_field() {
        let buf = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(payload(&buf, 4), 0x04030201);
        assert_eq!(payload(&buf, 9), 0x0807060504030201);
        assert_eq!(payload(&buf[..2], 8), 0x0201);
    }
}
