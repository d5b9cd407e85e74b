//! The planner's answers per device, so that a shape is planned once: a fixed
//! table of slots made when the device is loaded (the hot path never allocates),
//! each a sequence lock, so that readers take no lock and a slot being written is
//! a miss, never a torn answer.

use std::sync::atomic::{AtomicU64, Ordering, fence};

use super::Error;
use crate::route::Problem;
use crate::tuning::Choice;

const SLOTS: usize = 4096;

/// What the answer depends on besides the device: the problem's dtype, shape and
/// bias, which operands carry fp8 scale vectors (the tables' bands and the
/// vendor's per-row time differ by scale kind), whether launches use PDL (its own
/// table), whether a forward is possible and whether the problem is batch-invariant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key([u64; 2]);

impl Key {
    pub fn new(p: &Problem, pdl: bool, can_forward: bool) -> Key {
        use crate::kernels::params::{SCALE_A_VEC, SCALE_B_VEC};
        let vectors = ((p.epilogue & SCALE_A_VEC != 0) as u64) << 12 | ((p.epilogue & SCALE_B_VEC != 0) as u64) << 13;
        let flags = (p.dtype as u64) | (p.has_bias() as u64) << 8 | (pdl as u64) << 9 | (can_forward as u64) << 10 | (p.batch_invariant as u64) << 11 | vectors | 1 << 63;
        Key([p.n as u64 | (p.k as u64) << 32, p.m as u64 | flags << 32])
    }

    fn slot(&self) -> usize {
        let h = (self.0[0] ^ self.0[1].rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> (64 - SLOTS.trailing_zeros())) as usize
    }
}

/// An answer packed in one word: a choice, or one of the forwards.
fn pack(r: &Result<Choice, Error>) -> Option<u64> {
    Some(match r {
        Ok(Choice::Run { kernel, split_k }) => (*kernel as u64) | (*split_k as u64) << 32,
        Ok(Choice::Forward) | Err(Error::TunedForward) => u64::MAX,
        Err(Error::PlannerForward) => u64::MAX - 1,
        Err(Error::TransferForward) => u64::MAX - 2,
        Err(_) => return None,
    })
}

fn unpack(v: u64) -> Result<Choice, Error> {
    match v {
        u64::MAX => Err(Error::TunedForward),
        x if x == u64::MAX - 1 => Err(Error::PlannerForward),
        x if x == u64::MAX - 2 => Err(Error::TransferForward),
        x => Ok(Choice::Run { kernel: (x & 0xffff_ffff) as usize, split_k: (x >> 32) as u32 }),
    }
}

struct Slot {
    /// Even: stable; odd: being written.
    seq: AtomicU64,
    key: [AtomicU64; 2],
    value: AtomicU64,
}

pub struct PlanCache {
    slots: Box<[Slot]>,
}

impl Default for PlanCache {
    fn default() -> Self {
        let slots = (0..SLOTS).map(|_| Slot { seq: AtomicU64::new(0), key: [AtomicU64::new(0), AtomicU64::new(0)], value: AtomicU64::new(0) }).collect();
        PlanCache { slots }
    }
}

impl PlanCache {
    /// The cached answer for `key`, if its slot holds it.
    #[inline]
    pub fn get(&self, key: Key) -> Option<Result<Choice, Error>> {
        let s = &self.slots[key.slot()];
        let before = s.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return None;
        }
        let (k0, k1, v) = (s.key[0].load(Ordering::Relaxed), s.key[1].load(Ordering::Relaxed), s.value.load(Ordering::Relaxed));
        fence(Ordering::Acquire);
        (s.seq.load(Ordering::Relaxed) == before && [k0, k1] == key.0).then(|| unpack(v))
    }

    /// Remembers `answer` for `key` (an error other than a forward is not kept). A
    /// slot another thread is writing is left to it.
    pub fn put(&self, key: Key, answer: &Result<Choice, Error>) {
        let Some(v) = pack(answer) else { return };
        let s = &self.slots[key.slot()];
        let seq = s.seq.load(Ordering::Relaxed);
        if seq & 1 == 1 || s.seq.compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return;
        }
        fence(Ordering::Release);
        s.key[0].store(key.0[0], Ordering::Relaxed);
        s.key[1].store(key.0[1], Ordering::Relaxed);
        s.value.store(v, Ordering::Relaxed);
        s.seq.store(seq + 2, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::DType;

    #[test]
    fn answers_come_back_for_their_key_only() {
        let c = PlanCache::default();
        let p = Problem::packed(DType::Bf16, 12, 2880, 4096, true);
        let k = Key::new(&p, true, true);
        assert_eq!(c.get(k), None);
        let run = Ok(Choice::Run { kernel: 17, split_k: 6 });
        c.put(k, &run);
        assert_eq!(c.get(k), Some(run.clone()));
        use crate::kernels::params::{SCALE_A_VEC, SCALE_B_VEC};
        let scaled = |epilogue| Key::new(&Problem { epilogue, ..p }, true, true);
        for other in [Key::new(&p, false, true), Key::new(&p, true, false), Key::new(&Problem { m: 13, ..p }, true, true), Key::new(&Problem { bias: 0, ..p }, true, true), scaled(SCALE_A_VEC), scaled(SCALE_B_VEC), scaled(SCALE_A_VEC | SCALE_B_VEC)] {
            assert_ne!(c.get(other), Some(run.clone()), "{other:?}");
        }
        for forward in [Error::TunedForward, Error::TransferForward, Error::PlannerForward] {
            c.put(k, &Err(forward.clone()));
            assert_eq!(c.get(k), Some(Err(forward)));
        }
        c.put(k, &Err(Error::NoKernel));
        assert_eq!(c.get(k), Some(Err(Error::PlannerForward)), "a non-forward error is not cached");
    }

    /// Readers racing a writer see a whole answer or none.
    #[test]
    fn concurrent_readers_never_see_a_torn_answer() {
        let c = std::sync::Arc::new(PlanCache::default());
        let p = Problem::packed(DType::Bf16, 4, 1024, 7168, false);
        let k = Key::new(&p, true, true);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (c, stop) = (c.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(Ok(Choice::Run { kernel, split_k })) = c.get(k) {
                            assert_eq!(kernel as u32, split_k, "torn");
                        }
                    }
                })
            })
            .collect();
        for i in 1..20000u32 {
            c.put(k, &Ok(Choice::Run { kernel: i as usize, split_k: i }));
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
    }
}
