//! Per-process counters: matmul calls run by skinnylt, and forwards by reason.
//! Relaxed atomics: they are statistics, not synchronisation.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::route::Reason;

/// The counters of one process (`Process::stats`).
pub struct Stats {
    intercepted: AtomicU64,
    forwarded: [AtomicU64; Reason::ALL.len()],
    /// Split-K calls that ran without split-K because their stream had no lane.
    lane_fallbacks: AtomicU64,
}

/// A copy of the counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub intercepted: u64,
    pub forwarded: Vec<(Reason, u64)>,
    pub lane_fallbacks: u64,
}

impl Snapshot {
    pub fn forwarded_total(&self) -> u64 {
        self.forwarded.iter().map(|(_, n)| n).sum()
    }

    /// Forward count of one reason.
    pub fn forwarded(&self, r: Reason) -> u64 {
        self.forwarded.iter().find(|(x, _)| *x == r).map_or(0, |(_, n)| *n)
    }
}

impl std::fmt::Display for Snapshot {
    /// One line summarising the counters.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "matmul calls: {} run by skinnylt, {} forwarded", self.intercepted, self.forwarded_total())?;
        if self.lane_fallbacks > 0 {
            write!(f, " ({} ran without split-K: no stream lane)", self.lane_fallbacks)?;
        }
        for (r, n) in &self.forwarded {
            write!(f, ", {}={}", r.name(), n)?;
        }
        Ok(())
    }
}

impl Stats {
    pub const fn new() -> Stats {
        Stats {
            intercepted: AtomicU64::new(0),
            forwarded: [const { AtomicU64::new(0) }; Reason::ALL.len()],
            lane_fallbacks: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn count_intercepted(&self) {
        self.intercepted.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub fn count_forwarded(&self, r: Reason) {
        self.forwarded[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub fn count_lane_fallback(&self) {
        self.lane_fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            intercepted: self.intercepted.load(Ordering::Relaxed),
            forwarded: Reason::ALL
                .iter()
                .map(|r| (*r, self.forwarded[*r as usize].load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            lane_fallbacks: self.lane_fallbacks.load(Ordering::Relaxed),
        }
    }

    pub fn reset(&self) {
        self.intercepted.store(0, Ordering::Relaxed);
        self.lane_fallbacks.store(0, Ordering::Relaxed);
        for c in &self.forwarded {
            c.store(0, Ordering::Relaxed);
        }
    }
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

extern "C" fn at_exit() {
    crate::log::write(crate::log::Level::Info, format_args!("{}", crate::process::get().stats.snapshot()));
}

/// Prints the counters when the process exits (registered when logging is on).
pub fn print_at_exit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a plain `extern "C" fn()` that only formats and writes
        // a log line; atexit has no other precondition.
        unsafe { libc::atexit(at_exit) };
    });
}
