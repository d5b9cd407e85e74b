//! A per-thread memo of routing templates, so a `hipblasLtMatmul` repeated with
//! unchanged descriptors skips the side-table lock, its lookups and the state half
//! of routing.
//!
//! A slot is keyed by the five descriptor pointers and is valid only for the
//! shadow generation and policy it was computed under: any Create, SetAttribute or
//! Destroy anywhere bumps the generation, so a changed attribute, or a descriptor
//! destroyed and re-created at the same address, never finds a stale template.
//! Per thread, so a lookup takes no lock and shares no cache line; fixed size and
//! const-initialised, so it never allocates and has no destructor.

use std::cell::UnsafeCell;

use crate::route::{Policy, Reason, Template};

/// The descriptor pointers of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub desc: usize,
    pub a: usize,
    pub b: usize,
    pub c: usize,
    pub d: usize,
}

/// What the call path needs from the descriptors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Memo {
    pub template: Template,
    /// alpha and beta are host floats (fp32 scale, host pointer mode).
    pub host_f32: bool,
}

#[derive(Clone, Copy)]
struct Slot {
    key: Key,
    generation: u64,
    policy: Policy,
    memo: Memo,
}

/// Direct-mapped: a power of two, small enough that every thread's copy stays a
/// few KiB of TLS, large enough for a model's distinct GEMMs.
const SLOTS: usize = 32;

const EMPTY: Slot = Slot {
    key: Key { desc: 0, a: 0, b: 0, c: 0, d: 0 },
    // The generation starts at 1, so an empty slot never matches.
    generation: 0,
    policy: Policy { enabled: false, max_m: 0, version: None, batch_invariant: false },
    memo: Memo { template: Template::Reject(Reason::Disabled), host_f32: false },
};

thread_local! {
    static TABLE: UnsafeCell<[Slot; SLOTS]> = const { UnsafeCell::new([EMPTY; SLOTS]) };
}

#[cfg(test)]
thread_local! {
    /// Hits on this thread, so tests can tell the memo was used.
    static HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[inline]
fn index(k: &Key) -> usize {
    // Descriptors are heap objects: low bits are alignment, so mix and take the
    // top bits of a multiplicative hash. C is nearly always D and adds nothing.
    let h = k.desc ^ k.a.rotate_left(16) ^ k.b.rotate_left(32) ^ k.d.rotate_left(48);
    ((h as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

/// The memo for `key`, if it was made at `generation` under `policy`.
#[inline]
pub fn get(key: &Key, generation: u64, policy: &Policy) -> Option<Memo> {
    let found = TABLE
        .try_with(|t| {
            // SAFETY: thread-local, and nothing in this closure re-enters the memo,
            // so this is the only reference.
            let s = unsafe { &(*t.get())[index(key)] };
            (s.generation == generation && s.key == *key && s.policy == *policy).then_some(s.memo)
        })
        .ok()
        .flatten();
    #[cfg(test)]
    if found.is_some() {
        HITS.with(|h| h.set(h.get() + 1));
    }
    found
}

/// Remembers `memo`, computed from the tables at `generation` under `policy`.
#[inline]
pub fn put(key: Key, generation: u64, policy: Policy, memo: Memo) {
    let _ = TABLE.try_with(|t| {
        // SAFETY: as in `get`.
        let s = unsafe { &mut (*t.get())[index(&key)] };
        *s = Slot { key, generation, policy, memo };
    });
}

/// Hits on the calling thread so far.
#[cfg(test)]
pub fn hits() -> u64 {
    HITS.with(|h| h.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Policy = Policy { enabled: true, max_m: 128, version: Some(100200), batch_invariant: false };

    fn key(base: usize) -> Key {
        Key { desc: base, a: base + 0x100, b: base + 0x200, c: base + 0x300, d: base + 0x300 }
    }

    #[test]
    fn a_slot_answers_only_its_key_generation_and_policy() {
        let k = key(0x5550_0000);
        let m = Memo { template: Template::RejectAfterOutputs(Reason::DataType), host_f32: true };
        assert_eq!(get(&k, 7, &POLICY), None);
        put(k, 7, POLICY, m);
        assert_eq!(get(&k, 7, &POLICY), Some(m));
        assert_eq!(get(&k, 8, &POLICY), None);
        assert_eq!(get(&k, 7, &Policy { enabled: false, ..POLICY }), None);
        assert_eq!(get(&k, 7, &Policy { max_m: 4, ..POLICY }), None);
        assert_eq!(get(&k, 7, &Policy { version: None, ..POLICY }), None);
        for other in [Key { c: 1, ..k }, Key { d: 1, ..k }, Key { a: 1, ..k }, Key { b: 1, ..k }, Key { desc: 1, ..k }] {
            assert_eq!(get(&other, 7, &POLICY), None);
        }
    }

    #[test]
    fn empty_slots_never_match() {
        // Even a key and policy equal to an empty slot's: no real generation is 0.
        let g = crate::process::get().shadow.generation();
        assert!(g >= 1);
        assert_eq!(get(&EMPTY.key, g, &EMPTY.policy), None);
    }

    #[test]
    fn slots_spread_heap_like_keys() {
        // 16-byte aligned descriptors a few hundred bytes apart, as malloc hands
        // them out, must not all land in a few slots.
        let mut used = [false; SLOTS];
        for i in 0..SLOTS {
            used[index(&key(0x5555_0000 + i * 0x2a0))] = true;
        }
        assert!(used.iter().filter(|u| **u).count() >= SLOTS / 2);
    }
}
