//! Per-process counters: matmul calls run by skinnylt, and forwards by reason.
//! Relaxed atomics: they are statistics, not synchronisation.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::route::Reason;

static INTERCEPTED: AtomicU64 = AtomicU64::new(0);
static FORWARDED: [AtomicU64; Reason::ALL.len()] = [const { AtomicU64::new(0) }; Reason::ALL.len()];

static LANE_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// A split-K call ran without split-K because its stream had no lane.
#[inline]
pub fn count_lane_fallback() {
    LANE_FALLBACKS.fetch_add(1, Ordering::Relaxed);
}

pub fn lane_fallbacks() -> u64 {
    LANE_FALLBACKS.load(Ordering::Relaxed)
}

#[inline]
pub fn count_intercepted() {
    INTERCEPTED.fetch_add(1, Ordering::Relaxed);
}

#[inline]
pub fn count_forwarded(r: Reason) {
    FORWARDED[r as usize].fetch_add(1, Ordering::Relaxed);
}

/// A copy of the counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub intercepted: u64,
    pub forwarded: Vec<(Reason, u64)>,
}

impl Snapshot {
    pub fn forwarded_total(&self) -> u64 {
        self.forwarded.iter().map(|(_, n)| n).sum()
    }
}

pub fn snapshot() -> Snapshot {
    Snapshot {
        intercepted: INTERCEPTED.load(Ordering::Relaxed),
        forwarded: Reason::ALL
            .iter()
            .map(|r| (*r, FORWARDED[*r as usize].load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect(),
    }
}

pub fn reset() {
    INTERCEPTED.store(0, Ordering::Relaxed);
    for c in &FORWARDED {
        c.store(0, Ordering::Relaxed);
    }
}

/// Forward count of one reason.
pub fn forwarded(r: Reason) -> u64 {
    FORWARDED[r as usize].load(Ordering::Relaxed)
}

pub fn intercepted() -> u64 {
    INTERCEPTED.load(Ordering::Relaxed)
}

/// One line summarising the counters.
pub fn summary() -> String {
    let s = snapshot();
    let mut line = format!("matmul calls: {} run by skinnylt, {} forwarded", s.intercepted, s.forwarded_total());
    let lf = lane_fallbacks();
    if lf > 0 {
        line.push_str(&format!(" ({lf} ran without split-K: no stream lane)"));
    }
    for (r, n) in &s.forwarded {
        line.push_str(&format!(", {}={}", r.name(), n));
    }
    line
}

extern "C" fn at_exit() {
    crate::log::write(crate::log::Level::Info, format_args!("{}", summary()));
}

/// Prints the counters when the process exits (only called when logging is on).
pub fn print_at_exit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| unsafe {
        libc::atexit(at_exit);
    });
}
