//! The engine: what each device and handle prepared at creation, and the hot path
//! that chooses, plans and launches one GEMM without allocating, synchronising or
//! reading device memory.
//!
//! * Per device (shared by its handles, loaded once): the code object, every kernel
//!   function, the tuning tables and the fallback candidates.
//! * Per handle (allocated in `hipblasLtCreate`, outside any graph capture): split-K
//!   arrival counters (zeroed once; kernels leave them zero), a small zero page, and
//!   an own partials buffer for callers whose workspace is too small.
//! * Streams: a handle may be used on several streams at once, so counters and the
//!   own partials buffer are split into `LANES` lanes; a stream claims a lane the
//!   first time it is seen (lock-free, no allocation) and keeps it.
//!
//! A call runs in three steps: `choose` (table or fallback: which kernel and
//! split), `plan` (geometry), `Engine::prepare` (this call's lane, buffers and
//! arguments); then `Device::launch` makes one runtime call.

mod cache;
mod launch;
mod plan;

pub use launch::{Launch, tma_tiles};
pub use plan::{MAX_TILES, Plan, Rule, Target, choose, explain, plan, Planned, planned, planner_margin, planner_wins};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rustc_hash::FxHashMap;

use crate::config::Config;
use crate::gpu::{self, Arch, Context, DevPtr, DeviceInfo, Function, Runtime, Stream};
use crate::kernels;
use crate::route::Problem;
use crate::tuning::fallback::Fallback;
use crate::tuning::{Choice, Tuning};

/// What the caller passed for one call besides the problem: its workspace (which
/// may hold split-K partials when it is large enough) and its stream.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    pub workspace: u64,
    pub workspace_size: usize,
    pub stream: Stream,
}

/// Streams one handle can serve concurrently with split-K kernels.
pub const LANES: usize = 8;
const ZERO_PAGE: usize = 256;

/// Why the engine did not run a problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// No GPU runtime with a device, or the handle was made without one.
    NoGpu,
    /// The handle is not one this process created.
    UnknownHandle,
    /// No kernel for this device or problem.
    NoKernel,
    /// The tuning table says the vendor library is faster.
    TunedForward,
    /// The planner predicts no clear win over the vendor library.
    PlannerForward,
    /// The measured neighbours won only with choices that take more rounds of CTAs
    /// here (`tuning::Transfer::spills`).
    TransferForward,
    /// More output tiles than the kernels' grid arithmetic takes.
    TooLarge,
    /// The runtime refused the launch (or a tensor map).
    Launch(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NoGpu => write!(f, "no GPU"),
            Error::UnknownHandle => write!(f, "unknown handle"),
            Error::NoKernel => write!(f, "no kernel for this device or problem"),
            Error::TunedForward => write!(f, "the tuning table forwards this shape"),
            Error::PlannerForward => write!(f, "the planner predicts no clear win"),
            Error::TransferForward => write!(f, "the measured neighbours' win does not carry to this shape"),
            Error::TooLarge => write!(f, "too many output tiles"),
            Error::Launch(e) => write!(f, "launch failed: {e}"),
        }
    }
}

/// Everything loaded for one device.
pub struct Device {
    pub rt: &'static dyn Runtime,
    pub ctx: Context,
    pub info: DeviceInfo,
    pub arch: Arch,
    pub functions: Vec<Function>,
    /// The table for launches with programmatic dependent launch (every arch's main
    /// table), and the one for launches without it where the arch has one (sm90:
    /// PDL changes which kernel and split win).
    pub tuning: Tuning,
    pub tuning_no_pdl: Option<Tuning>,
    pub fallback: Fallback,
    /// Launches use programmatic dependent launch: sm_90 with `SKINNYLT_PDL` on,
    /// until the driver refuses one (then never again on this device: the one
    /// state the hot path may change, once, per device).
    pdl: AtomicBool,
    /// The PDL launch arguments (`SKINNYLT_PDL_*`).
    pdl_prefetch_row_bytes: i32,
    pdl_flags: i32,
    /// Bytes of one stream lane of a handle's own partials buffer (the same for
    /// every handle of the process).
    lane_bytes: usize,
    /// What was chosen for each shape so far (`choose`).
    plans: cache::PlanCache,
}

impl Device {
    fn load(ordinal: i32, cfg: &Config) -> Result<Device, String> {
        let rt = gpu::runtime().ok_or("no GPU runtime (libamdhip64 or libcuda) with a device")?;
        let info = rt.device_info(ordinal)?;
        let arch = info.arch.ok_or_else(|| format!("skinnylt has no kernels for {}", info.arch_name))?;
        let ctx = rt.context(ordinal)?;
        let cat = kernels::for_arch(arch);
        let module = rt.load_module(ctx, cat.image)?;
        let facts = crate::tuning::schema::target(arch.name()).expect("every arch has target facts");
        let mut functions = Vec::with_capacity(cat.kernels.len());
        for k in cat.kernels {
            let f = rt.function(ctx, module, k.name)?;
            rt.set_max_dynamic_shared(ctx, f, k.config.lds_bytes(&facts))?;
            functions.push(f);
        }
        let d = Device {
            rt,
            ctx,
            arch,
            functions,
            tuning: Tuning::load(cfg, arch, &info.name),
            tuning_no_pdl: Tuning::load_no_pdl(cfg, arch, &info.name),
            fallback: Fallback::for_arch(arch),
            pdl: AtomicBool::new(arch == Arch::Sm90 && cfg.pdl),
            pdl_prefetch_row_bytes: cfg.pdl_prefetch_row_bytes,
            pdl_flags: cfg.pdl_flags,
            lane_bytes: lane_bytes(cfg),
            plans: cache::PlanCache::default(),
            info,
        };
        crate::log_info!(
            "device {ordinal}: {} ({}), {} kernels, tuning {} ({} entries)",
            d.info.name,
            d.info.arch_name,
            d.functions.len(),
            d.tuning.source,
            d.tuning.entries
        );
        if let Some(t) = &d.tuning_no_pdl {
            crate::log_info!("device {ordinal}: without PDL, tuning {} ({} entries)", t.source, t.entries);
        }
        Ok(d)
    }

    /// Whether launches use programmatic dependent launch now.
    pub fn pdl(&self) -> bool {
        self.pdl.load(Ordering::Relaxed)
    }

    /// The tuning table for launches with or without PDL: the table tuned with it
    /// on kept shapes at 0.94-0.97x of cuBLASLt with it off, so launches without
    /// PDL use their own table where there is one.
    pub fn table(&self, pdl: bool) -> &Tuning {
        match &self.tuning_no_pdl {
            Some(t) if !pdl => t,
            _ => &self.tuning,
        }
    }

    /// What planning needs of this device, for a handle whose partials lanes hold
    /// `partial_capacity` bytes.
    pub fn target(&self, partial_capacity: usize) -> Target {
        Target { arch: self.arch, backend: self.rt.backend(), units: self.info.units, partial_capacity }
    }

    /// What runs `p` on this device (see [`choose`]), planned once per shape.
    pub fn choose(&self, p: &Problem, pdl: bool, can_forward: bool) -> Result<Choice, Error> {
        self.choose_units(&p.unit_view(), pdl, can_forward)
    }

    /// `choose` for `p` in units (`Problem::unit_view`), as everything below the
    /// engine's entry points sees it.
    fn choose_units(&self, p: &Problem, pdl: bool, can_forward: bool) -> Result<Choice, Error> {
        let key = cache::Key::new(p, pdl, can_forward);
        if let Some(answer) = self.plans.get(key) {
            return answer;
        }
        let answer = choose(self.table(pdl), &self.fallback, &self.target(self.lane_bytes), p, can_forward);
        self.plans.put(key, &answer);
        answer
    }
}

/// A handle's prepared state.
pub struct Engine {
    pub dev: Arc<Device>,
    counters: DevPtr,
    zeros: DevPtr,
    own: DevPtr,
    own_lane_bytes: usize,
    /// Stream (+1) owning each lane; 0 = free.
    lanes: [AtomicU64; LANES],
}

/// Bytes of one lane of a handle's own partials buffer.
pub fn lane_bytes(cfg: &Config) -> usize {
    cfg.workspace_bytes / LANES / 256 * 256
}

impl Engine {
    fn new(dev: Arc<Device>, cfg: &Config) -> Result<Engine, String> {
        let (rt, ctx) = (dev.rt, dev.ctx);
        let counters = rt.alloc_zeroed(ctx, LANES * MAX_TILES * 4)?;
        let zeros = rt.alloc_zeroed(ctx, ZERO_PAGE)?;
        let own = rt.alloc_zeroed(ctx, cfg.workspace_bytes.max(16))?;
        Ok(Engine { dev, counters, zeros, own, own_lane_bytes: lane_bytes(cfg), lanes: [const { AtomicU64::new(0) }; LANES] })
    }

    /// The lane of `stream`, claiming a free one on first use. The special handles
    /// 0x1 (legacy) and 0x2 (per-thread default stream: a different stream in every
    /// thread under one value) never get one.
    fn lane(&self, stream: Stream) -> Option<usize> {
        if matches!(stream.0 as usize, 1 | 2) {
            return None;
        }
        let key = stream.0 as u64 + 1;
        for (i, l) in self.lanes.iter().enumerate() {
            let v = l.load(Ordering::Acquire);
            if v == key {
                return Some(i);
            }
            if v == 0 && l.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire).map_or_else(|cur| cur == key, |_| true) {
                return Some(i);
            }
        }
        None
    }

    fn own_partials(&self, lane: usize) -> u64 {
        self.own.0 + (lane * self.own_lane_bytes) as u64
    }

    fn counters(&self, lane: usize) -> u64 {
        self.counters.0 + (lane * MAX_TILES * 4) as u64
    }

    fn zeros(&self) -> u64 {
        self.zeros.0
    }

    /// What planning needs of this handle's device.
    pub fn target(&self) -> Target {
        self.dev.target(self.own_lane_bytes)
    }

    /// Runs `choice` for `p` on `stream`, with PDL while the device uses it. A
    /// driver (or capture mode) that refuses a PDL launch turns PDL off for the
    /// device, once, and the call is planned and launched again without it.
    fn run(&self, p: &Problem, choice: impl Fn(bool) -> Result<Choice, Error>, call: &Call) -> Result<(), Error> {
        let dev = &self.dev;
        let pdl = dev.pdl();
        let go = |pdl: bool| {
            let plan = plan(&self.target(), choice(pdl)?, p)?;
            let mut l = self.prepare(dev, &plan, p, pdl, call)?;
            dev.launch(&mut l)?;
            crate::log_trace!("ran m={} n={} k={} {} split_k={} on stream {:?}", p.m, p.n, p.k, kernels::for_arch(dev.arch).kernels[plan.kernel].name, l.params.split_k, call.stream);
            Ok(())
        };
        match go(pdl) {
            Err(Error::Launch(e)) if pdl => {
                crate::log_warn!("launch with programmatic dependent launch failed ({e}); device {} launches without it from now on", dev.info.ordinal);
                dev.pdl.store(false, Ordering::Relaxed);
                go(false)
            }
            r => r,
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        for p in [self.counters, self.zeros, self.own] {
            self.dev.rt.free(self.dev.ctx, p);
        }
    }
}

/// A handle value's engine (`None`: no GPU, or no kernels for it) and how many
/// live handles have that value.
type HandleEntry = (Option<Arc<Engine>>, u32);

/// The process's devices and handles (`Process::engines`).
#[derive(Default)]
pub struct Engines {
    devices: Mutex<FxHashMap<i32, Arc<Device>>>,
    /// Per handle value: its engine (`None`: no GPU, or no kernels for it) and how
    /// many live handles have that value. A real library may give one value to
    /// several live handles (cuBLASLt does); they share one engine until the last
    /// of them is destroyed.
    handles: RwLock<FxHashMap<usize, HandleEntry>>,
}

impl Engines {
    /// Loads (once) everything `ordinal` needs.
    pub fn device(&self, ordinal: i32, cfg: &Config) -> Result<Arc<Device>, String> {
        let mut map = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = map.get(&ordinal) {
            return Ok(d.clone());
        }
        let d = Arc::new(Device::load(ordinal, cfg)?);
        map.insert(ordinal, d.clone());
        Ok(d)
    }

    /// Prepares a new handle (called by `hipblasLtCreate`) on the current device;
    /// never fails the create: a handle without an engine forwards every call.
    pub fn on_create(&self, handle: usize, cfg: &Config) {
        if let Some((_, live)) = self.handles.write().unwrap_or_else(|e| e.into_inner()).get_mut(&handle) {
            *live += 1;
            return;
        }
        let engine = gpu::runtime().map(|rt| gpu::capture_relaxed(rt, || rt.current_device().and_then(|d| Engine::new(self.device(d, cfg)?, cfg))));
        let engine = match engine {
            None => None,
            Some(Ok(e)) => Some(Arc::new(e)),
            Some(Err(e)) => {
                crate::log_warn!("handle {handle:#x}: no skinnylt kernels ({e}); every call forwards");
                None
            }
        };
        // Another create of the same value may have won meanwhile: it counts, and
        // this engine goes (out of any capture, as on destroy).
        let mut map = self.handles.write().unwrap_or_else(|e| e.into_inner());
        match map.entry(handle) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert((engine, 1));
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                o.get_mut().1 += 1;
                drop(map);
                if let Some(rt) = gpu::runtime() {
                    gpu::capture_relaxed(rt, || drop(engine));
                }
            }
        }
    }

    /// Forgets a handle; true when it was known. Its buffers are freed in relaxed
    /// capture mode (`gpu::capture_relaxed`) once no call uses them.
    pub fn on_destroy(&self, handle: usize) -> bool {
        let engine = {
            let mut map = self.handles.write().unwrap_or_else(|e| e.into_inner());
            match map.get_mut(&handle) {
                None => None,
                Some((_, live)) if *live > 1 => {
                    *live -= 1;
                    return true;
                }
                Some(_) => map.remove(&handle),
            }
        };
        let known = engine.is_some();
        if let Some(rt) = gpu::runtime() {
            gpu::capture_relaxed(rt, || drop(engine));
        }
        known
    }

    /// Whether `handle` was created and not yet destroyed.
    pub fn knows(&self, handle: usize) -> bool {
        self.handles.read().unwrap_or_else(|e| e.into_inner()).contains_key(&handle)
    }

    fn with<R>(&self, handle: usize, f: impl FnOnce(&Engine) -> Result<R, Error>) -> Result<R, Error> {
        let map = self.handles.read().unwrap_or_else(|e| e.into_inner());
        match map.get(&handle) {
            None => Err(Error::UnknownHandle),
            Some((None, _)) => Err(Error::NoGpu),
            Some((Some(e), _)) => f(e),
        }
    }

    /// The hot path: chooses, plans and launches `p` on `stream`. A tuned
    /// "forward" is an error only when there is a library to forward to.
    pub fn run(&self, handle: usize, p: &Problem, can_forward: bool, call: &Call) -> Result<(), Error> {
        let p = &p.unit_view();
        self.with(handle, |e| e.run(p, |pdl| e.dev.choose_units(p, pdl, can_forward), call))
    }

    /// Runs a given kernel and split-K factor through the same path (the tuner
    /// measures candidates no table names yet; the GPU suite checks every kernel).
    pub fn run_choice(&self, handle: usize, p: &Problem, choice: Choice, call: &Call) -> Result<(), Error> {
        let p = &p.unit_view();
        self.with(handle, |e| e.run(p, |_| Ok(choice), call))
    }

    /// What `run_choice` would launch: the split may come out smaller than asked
    /// (partials capacity, cluster limit).
    pub fn plan_choice(&self, handle: usize, p: &Problem, choice: Choice) -> Result<Plan, Error> {
        self.with(handle, |e| plan(&e.target(), choice, &p.unit_view()))
    }

    /// The kernel the handle's device would run for `p` (standalone heuristic).
    pub fn plan_for(&self, handle: usize, p: &Problem, can_forward: bool) -> Result<Plan, Error> {
        let p = &p.unit_view();
        self.with(handle, |e| plan(&e.target(), e.dev.choose_units(p, e.dev.pdl(), can_forward)?, p))
    }

    /// The device of a handle.
    pub fn device_of(&self, handle: usize) -> Result<Arc<Device>, Error> {
        self.with(handle, |e| Ok(e.dev.clone()))
    }
}

/// Loads everything `device` needs (`skinnylt_preload`), so that no later call
/// does first-time work, e.g. before graph capture.
pub fn preload(device: i32) -> Result<Arc<Device>, String> {
    let p = crate::process::get();
    match gpu::runtime() {
        Some(rt) => gpu::capture_relaxed(rt, || p.engines.device(device, &p.config)),
        None => p.engines.device(device, &p.config),
    }
}

/// The device, loaded once (the tools' entry point).
pub fn device(ordinal: i32) -> Result<Arc<Device>, String> {
    preload(ordinal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real library may give one value to several live handles (cuBLASLt
    /// does): the value stays known until the last of them is destroyed.
    #[test]
    fn a_handle_value_given_twice_lives_until_both_are_destroyed() {
        let e = Engines::default();
        let cfg = Config::from_lookup(|_| None);
        e.on_create(0x5100, &cfg);
        e.on_create(0x5100, &cfg);
        assert!(e.on_destroy(0x5100) && e.knows(0x5100));
        assert!(e.on_destroy(0x5100) && !e.knows(0x5100));
        assert!(!e.on_destroy(0x5100));
    }

    /// Launches without PDL use their own table where the arch has one.
    #[test]
    fn the_no_pdl_tables_exist_where_expected() {
        let cfg = Config::from_lookup(|_| None);
        for device in ["NVIDIA H100 80GB HBM3", "NVIDIA H200"] {
            assert!(Tuning::load_no_pdl(&cfg, Arch::Sm90, device).is_some_and(|t| t.entries > 0));
        }
        assert!(Tuning::load_no_pdl(&cfg, Arch::Gfx942, "AMD Instinct MI300X").is_none());
    }
}
