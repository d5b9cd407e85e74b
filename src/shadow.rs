//! The side table: what every live descriptor holds, keyed by its pointer.
//!
//! hipBLASLt cannot report rows/cols/ld/type of a layout, nor the compute and scale
//! type of a matmul descriptor, so skinnylt records them as they are created and set
//! . Entries are removed on Destroy, before the
//! real library frees the object, because addresses are reused. A pointer missing
//! from the table (created before we were loaded, or mutated behind our back through
//! the C++ API) makes the call forward.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

use rustc_hash::FxHashMap;

use crate::abi::{self, desc_attr, layout_attr};

/// Attribute values as hipBLASLt copies them: up to 8 bytes, zero-extended, in the
/// order first set. A descriptor holds a handful, and routing walks them all on
/// every `hipblasLtMatmul`: a short vector beats a hash map for both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawAttrs(Vec<(i32, u64)>);

impl RawAttrs {
    pub fn get(&self, attr: &i32) -> Option<&u64> {
        self.0.iter().find(|(a, _)| a == attr).map(|(_, v)| v)
    }
    /// Sets `attr` (replacing an earlier value).
    pub fn insert(&mut self, attr: i32, value: u64) {
        match self.0.iter_mut().find(|(a, _)| *a == attr) {
            Some(slot) => slot.1 = value,
            None => self.0.push((attr, value)),
        }
    }
    pub fn iter(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.0.iter().copied()
    }
}

impl FromIterator<(i32, u64)> for RawAttrs {
    fn from_iter<I: IntoIterator<Item = (i32, u64)>>(iter: I) -> Self {
        let mut a = RawAttrs::default();
        for (k, v) in iter {
            a.insert(k, v);
        }
        a
    }
}

/// A matmul descriptor.
#[derive(Clone, Debug, PartialEq)]
pub struct DescState {
    pub compute_type: i32,
    pub scale_type: i32,
    pub attrs: RawAttrs,
}

impl DescState {
    pub fn new(compute_type: i32, scale_type: i32) -> Self {
        DescState { compute_type, scale_type, attrs: RawAttrs::default() }
    }
    fn get(&self, attr: i32, default: u64) -> u64 {
        self.attrs.get(&attr).copied().unwrap_or(default)
    }
    pub fn trans_a(&self) -> i32 {
        self.get(desc_attr::TRANSA, abi::OP_N as u64) as i32
    }
    pub fn trans_b(&self) -> i32 {
        self.get(desc_attr::TRANSB, abi::OP_N as u64) as i32
    }
    pub fn epilogue(&self) -> u32 {
        self.get(desc_attr::EPILOGUE, abi::EPILOGUE_DEFAULT as u64) as u32
    }
    pub fn bias_pointer(&self) -> u64 {
        self.get(desc_attr::BIAS_POINTER, 0)
    }
    pub fn bias_type(&self) -> i32 {
        self.get(desc_attr::BIAS_DATA_TYPE, abi::DATATYPE_INVALID as u64) as i32
    }
    pub fn pointer_mode(&self) -> i32 {
        self.get(desc_attr::POINTER_MODE, abi::POINTER_MODE_HOST as u64) as i32
    }
}

/// A matrix layout.
#[derive(Clone, Debug, PartialEq)]
pub struct LayoutState {
    pub dtype: i32,
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
    /// Attributes other than TYPE/ROWS/COLS/LD.
    pub attrs: RawAttrs,
}

impl LayoutState {
    pub fn new(dtype: i32, rows: u64, cols: u64, ld: i64) -> Self {
        LayoutState { dtype, rows, cols, ld, attrs: RawAttrs::default() }
    }
    pub fn batch_count(&self) -> i32 {
        self.attrs.get(&layout_attr::BATCH_COUNT).copied().unwrap_or(1) as i32
    }
    /// Applies a successful SetAttribute.
    pub fn set(&mut self, attr: i32, value: u64) {
        match attr {
            layout_attr::TYPE => self.dtype = value as u32 as i32,
            layout_attr::ROWS => self.rows = value,
            layout_attr::COLS => self.cols = value,
            layout_attr::LD => self.ld = value as i64,
            _ => {
                self.attrs.insert(attr, value);
            }
        }
    }
    /// Reads an attribute back (standalone GetAttribute).
    pub fn get(&self, attr: i32) -> Option<u64> {
        Some(match attr {
            layout_attr::TYPE => self.dtype as u32 as u64,
            layout_attr::ROWS => self.rows,
            layout_attr::COLS => self.cols,
            layout_attr::LD => self.ld as u64,
            layout_attr::BATCH_COUNT => self.batch_count() as u32 as u64,
            a => match self.attrs.get(&a) {
                Some(v) => *v,
                None if layout_attr::payload_size(a).is_some() => 0,
                None => return None,
            },
        })
    }
}

/// A matmul preference.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrefState {
    pub attrs: RawAttrs,
}

/// Who allocated the object behind a pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The real hipBLASLt: we only shadow it.
    Real,
    /// skinnylt (standalone mode): Destroy frees it.
    Own,
}

#[derive(Default)]
pub struct Tables {
    pub descs: FxHashMap<usize, (Owner, DescState)>,
    pub layouts: FxHashMap<usize, (Owner, LayoutState)>,
    pub prefs: FxHashMap<usize, (Owner, PrefState)>,
}

/// The side table and its generation (one per process: `Process::shadow`).
pub struct Shadow {
    tables: RwLock<Tables>,
    /// Bumped under the write lock by every change to the tables (Create,
    /// SetAttribute, Destroy), so what was derived from them can be checked current
    /// with one load instead of lookups (`memo`). Starts at 1: 0 marks a memo slot
    /// that holds nothing. Alone on its cache lines: every matmul reads it, and a
    /// neighbour written per call (a counter, the lock) would make those reads miss
    /// across threads.
    generation: Padded,
}

#[repr(align(128))]
struct Padded(AtomicU64);

impl Shadow {
    pub fn new() -> Shadow {
        Shadow { tables: RwLock::new(Tables::default()), generation: Padded(AtomicU64::new(1)) }
    }

    /// The tables' generation. Read while holding [`Shadow::read`]'s guard it names
    /// exactly the state that guard shows; read without it, a value equal to an
    /// earlier one means no change has started since.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.0.load(Ordering::Acquire)
    }

    /// Shared read access (one lock for all kinds, so a Matmul call takes it once).
    pub fn read(&self) -> RwLockReadGuard<'_, Tables> {
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Exclusive access.
    pub fn write<R>(&self, f: impl FnOnce(&mut Tables) -> R) -> R {
        let mut g = self.tables.write().unwrap_or_else(|e| e.into_inner());
        // First, so that a change stopping half-way (a panic in `f`) still invalidates.
        self.generation.0.fetch_add(1, Ordering::Release);
        f(&mut g)
    }
}

impl Default for Shadow {
    fn default() -> Self {
        Shadow::new()
    }
}

/// Allocates the identity of a standalone object: its address is the key, the bytes
/// are never read (its state lives in the side table).
pub fn new_own_object() -> usize {
    Box::into_raw(Box::new([0u64; 8])) as usize
}

/// Frees what [`new_own_object`] returned.
///
/// # Safety
/// `p` must come from [`new_own_object`] and not have been freed.
pub unsafe fn free_own_object(p: usize) {
    // SAFETY: the caller's contract: `p` is a live box from `new_own_object`.
    drop(unsafe { Box::from_raw(p as *mut [u64; 8]) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn desc_defaults_match_hipblaslt() {
        let d = DescState::new(abi::COMPUTE_32F, abi::R_32F);
        assert_eq!(d.trans_a(), abi::OP_N);
        assert_eq!(d.trans_b(), abi::OP_N);
        assert_eq!(d.epilogue(), abi::EPILOGUE_DEFAULT);
        assert_eq!(d.bias_type(), abi::DATATYPE_INVALID);
        assert_eq!(d.pointer_mode(), abi::POINTER_MODE_HOST);
        assert_eq!(d.bias_pointer(), 0);
    }

    #[test]
    fn every_write_bumps_the_generation() {
        let shadow = Shadow::new();
        for _ in 0..3 {
            let g = shadow.generation();
            shadow.write(|_| ());
            assert!(shadow.generation() > g);
        }
    }

    proptest! {
        /// Whatever sequence of SetAttribute calls, reading back gives the last value
        /// set, and unset attributes keep hipBLASLt's defaults.
        #[test]
        fn layout_set_get_roundtrip(ops in proptest::collection::vec((0i32..9, any::<u32>()), 0..40)) {
            let mut l = LayoutState::new(abi::R_16BF, 7, 9, 11);
            let mut model: std::collections::HashMap<i32, u64> = Default::default();
            for (attr, v) in &ops {
                let v = match layout_attr::payload_size(*attr) { Some(4) => *v as u64, _ => (*v as u64) << 3 };
                l.set(*attr, v);
                model.insert(*attr, v);
            }
            for attr in 0..9 {
                let want = model.get(&attr).copied().unwrap_or(match attr {
                    layout_attr::TYPE => abi::R_16BF as u64,
                    layout_attr::ROWS => 7,
                    layout_attr::COLS => 9,
                    layout_attr::LD => 11,
                    layout_attr::BATCH_COUNT => 1,
                    _ => 0,
                });
                prop_assert_eq!(l.get(attr), Some(want));
            }
            prop_assert_eq!(l.get(42), None);
        }

        /// The table never keeps an entry past its Destroy, even when an address is
        /// immediately reused by a new object of another kind.
        #[test]
        fn destroy_clears_and_reuse_starts_fresh(keys in proptest::collection::vec(1usize..64, 1..50)) {
            let mut t = Tables::default();
            for (i, k) in keys.iter().enumerate() {
                if i % 2 == 0 {
                    t.descs.remove(k);
                    let mut d = DescState::new(abi::COMPUTE_32F, abi::R_32F);
                    d.attrs.insert(desc_attr::TRANSA, abi::OP_T as u64);
                    t.descs.insert(*k, (Owner::Real, d));
                } else if let Some((_, d)) = t.descs.remove(k) {
                    prop_assert_eq!(d.trans_a(), abi::OP_T);
                    let fresh = DescState::new(abi::COMPUTE_32F, abi::R_32F);
                    t.descs.insert(*k, (Owner::Real, fresh.clone()));
                    prop_assert_eq!(t.descs.get(k).map(|x| x.1.trans_a()), Some(abi::OP_N));
                    t.descs.remove(k);
                }
            }
        }
    }
}
