//! The one process-wide state: the configuration, the mode (interposed on a real
//! hipBLASLt, or standalone), the side table of descriptors, the handles and
//! devices, and the counters. Made once, on first use; afterwards the hot path only
//! reads it. What may change later, and who changes it:
//! * `enabled`: `skinnylt_set_enabled` (the application's own switch);
//! * the real library's version, learned when the first handle is created;
//! * the shadow tables, handles and devices: Create/Set/Destroy calls;
//! * a device's PDL state, once, if the driver refuses a PDL launch
//!   (`engine::Device`);
//! * the counters.
//!
//! Logging (`crate::log`) and the per-thread routing memo (`crate::memo`) are the
//! only state outside it: logging must work while this is made, and the memo is
//! per thread by design.

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::benchlog::BenchLog;
use crate::config::Config;
use crate::engine::Engines;
use crate::real::RealLib;
use crate::record::Recorder;
use crate::route::Policy;
use crate::shadow::Shadow;
use crate::stats::Stats;

/// The hipBLASLt ABI level skinnylt implements in standalone mode (hipBLASLt 1.2,
/// ROCm 7.2): `hipblasLtGetVersion` reports it, and version-dependent attribute
/// values are read with its meaning.
pub const OWN_ABI_VERSION: i32 = 100200;

pub struct Process {
    pub config: Config,
    /// `skinnylt_set_enabled`, initialised from `SKINNYLT_DISABLE`.
    enabled: AtomicBool,
    /// Decided on first need: finding the real library opens it.
    mode: OnceLock<Mode>,
    /// Held by the thread deciding the mode.
    deciding: std::sync::Mutex<()>,
    pub shadow: Shadow,
    pub engines: Engines,
    pub stats: Stats,
    /// `SKINNYLT_RECORD`: the calls seen so far and where they go.
    pub recorder: Option<Recorder>,
    /// hipBLASLt's bench log, for the calls skinnylt runs (`HIPBLASLT_LOG_MASK`).
    pub bench_log: Option<BenchLog>,
}

/// Whether calls go to a real hipBLASLt.
pub enum Mode {
    /// A real hipBLASLt was found: everything skinnylt does not run goes to it.
    Interposed(Box<Real>),
    /// No real library: skinnylt is the library, and refuses what it cannot run.
    Standalone,
}

/// The real library and what was learned from it.
pub struct Real {
    pub lib: RealLib,
    /// `hipblasLtGetVersion`, 0 until the first handle exists.
    version: AtomicI32,
}

impl Real {
    pub fn new(lib: RealLib) -> Real {
        Real { lib, version: AtomicI32::new(0) }
    }

    /// The version, once a handle has been created.
    pub fn version(&self) -> Option<i32> {
        match self.version.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v),
        }
    }

    /// Records the version (the first handle's `hipblasLtGetVersion`).
    pub fn learn_version(&self, v: i32) {
        if v > 0 && self.version.swap(v, Ordering::Relaxed) == 0 {
            crate::log_info!("real hipBLASLt version {v}");
        }
    }
}

impl Mode {
    #[inline]
    pub fn real(&self) -> Option<&Real> {
        match self {
            Mode::Interposed(r) => Some(r),
            Mode::Standalone => None,
        }
    }

    /// The version by which version-dependent values are interpreted.
    pub fn abi_version(&self) -> Option<i32> {
        match self {
            Mode::Interposed(r) => r.version(),
            Mode::Standalone => Some(OWN_ABI_VERSION),
        }
    }
}

static PROCESS: OnceLock<Process> = OnceLock::new();

/// How long a call waits for another thread to finish loading the real library:
/// far beyond any real load, short enough that a load which waits for a thread
/// that calls hipBLASLt ends instead of deadlocking.
const DECIDE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The process state, made on first use.
#[inline]
pub fn get() -> &'static Process {
    PROCESS.get_or_init(Process::from_env)
}

thread_local! {
    /// Set while this thread decides the mode (loading the real library), so a
    /// call the library's initialisers make back into our exports is answered
    /// instead of waiting for itself.
    static DECIDING: Cell<bool> = const { Cell::new(false) };
}

impl Process {
    fn from_env() -> Process {
        let config = Config::from_env();
        crate::log::configure(&config);
        for problem in &config.problems {
            crate::log::config_error(format_args!("{problem}"));
        }
        crate::tuning::check_configured(&config);
        let recorder = config.record.as_deref().and_then(|path| {
            Recorder::open(path).map_err(|e| crate::log::config_error(format_args!("SKINNYLT_RECORD: cannot open {e}; nothing is recorded"))).ok()
        });
        Process {
            recorder,
            bench_log: config.bench_log.clone().map(BenchLog::new),
            enabled: AtomicBool::new(!config.disabled),
            config,
            mode: OnceLock::new(),
            deciding: std::sync::Mutex::new(()),
            shadow: Shadow::new(),
            engines: Engines::default(),
            stats: Stats::new(),
        }
    }

    /// The mode, decided on the first call that needs it. `None` only for a call
    /// made from inside that decision (a real library's initialiser calling a
    /// hipBLASLt function while it is being loaded), which cannot be served yet, or
    /// one that waited `DECIDE_WAIT` for another thread's decision.
    #[inline]
    pub fn mode(&'static self) -> Option<&'static Mode> {
        match self.mode.get() {
            Some(m) => Some(m),
            None => self.decide_mode(),
        }
    }

    #[cold]
    fn decide_mode(&'static self) -> Option<&'static Mode> {
        if DECIDING.with(Cell::get) {
            return None;
        }
        // Not `OnceLock::get_or_init`: a thread that the real library's initialiser
        // starts and joins while the mode is decided would wait for it forever. Other
        // threads wait at most `DECIDE_WAIT`, then get no context for that call.
        let since = std::time::Instant::now();
        loop {
            if let Some(m) = self.mode.get() {
                return Some(m);
            }
            match self.deciding.try_lock() {
                Ok(_decider) => {
                    if self.mode.get().is_none() {
                        DECIDING.with(|d| d.set(true));
                        let found = if self.config.standalone { None } else { crate::real::find(self.config.real_lib.as_deref()) };
                        DECIDING.with(|d| d.set(false));
                        let _ = self.mode.set(found.map_or(Mode::Standalone, |lib| Mode::Interposed(Box::new(Real::new(lib)))));
                    }
                    return self.mode.get();
                }
                Err(_) if since.elapsed() > DECIDE_WAIT => {
                    crate::log_error!("waited {} s for another thread loading the real hipBLASLt; this call fails with NOT_INITIALIZED", DECIDE_WAIT.as_secs());
                    return None;
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
    }

    /// The real library, when the mode is interposed.
    pub fn real_lib(&'static self) -> Option<&'static RealLib> {
        self.mode()?.real().map(|r| &r.lib)
    }

    /// Whether skinnylt may run GEMMs itself right now.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// What routing may assume about the process, in `mode`.
    #[inline]
    pub fn policy(&self, mode: &Mode) -> Policy {
        Policy { enabled: self.enabled(), max_m: self.config.max_m, version: mode.abi_version(), batch_invariant: self.config.batch_invariant }
    }
}
