//! Dispatch: what each handle prepared at creation, and the hot path that plans and
//! launches one GEMM without allocating, synchronising or reading device memory.
//!
//! * Per device (shared by its handles, loaded once): the code object, every kernel
//!   function, the tuning table and the fallback candidates.
//! * Per handle (allocated in `hipblasLtCreate`, outside any graph capture): split-K
//!   arrival counters (zeroed once; kernels leave them zero), a small zero page, and
//!   an own partials buffer for callers whose workspace is too small.
//! * Streams: a handle may be used on several streams at once, so counters and the
//!   own partials buffer are split into `LANES` lanes; a stream claims a lane the
//!   first time it is seen (lock-free, no allocation) and keeps it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rustc_hash::FxHashMap;

use crate::gpu::{self, Arch, Backend, Context, DevPtr, DeviceInfo, Function, LaunchConfig, Runtime, Stream, TensorMap, Tile2d};
use crate::kernels::{self, KernelEntry};
use crate::route::{Problem, Reason};
use crate::tuning::fallback::Fallback;
use crate::tuning::{Choice, Tuning};

/// Streams one handle can serve concurrently with split-K kernels.
pub const LANES: usize = 8;
/// Output tiles per launch that split-K counters cover.
pub const MAX_TILES: usize = 32768;
const ZERO_PAGE: usize = 256;

/// Kernel arguments; mirrors `GemmParams` in kernels/splitk_gemm.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GemmParams {
    pub w: u64,
    pub x: u64,
    pub y: u64,
    pub bias: u64,
    pub partials: u64,
    pub counters: u64,
    pub zeros: u64,
    pub ldw: i64,
    pub ldx: i64,
    pub ldy: i64,
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub alpha: f32,
    pub split_k: i32,
    pub prefetch_row_bytes: i32,
    pub pdl_flags: i32,
}
const _: () = assert!(std::mem::size_of::<GemmParams>() == 112);

/// The second kernel argument of TMA-fed kernels; mirrors `TmaMaps` in
/// kernels/wgmma_gemm.h.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TmaMaps {
    pub w: TensorMap,
    pub x: TensorMap,
}
const _: () = assert!(std::mem::size_of::<TmaMaps>() == 256 && std::mem::align_of::<TmaMaps>() == 64);

/// The tensor views a TMA-fed kernel with `c`'s tiles reads for `p`: W as N rows
/// of K, X as M rows of K, in boxes of 64 k (one 128-B swizzle row) by the tile's
/// rows. Rows and k past the matrix are zero-filled by the hardware.
pub fn tma_tiles(c: &crate::tuning::schema::KernelConfig, p: &Problem) -> [Tile2d; 2] {
    let (k, m, n) = (p.k as u64, p.m as u64, p.n as u64);
    // One token row: its stride is never used, and ldx need not be 16-B aligned then.
    let x_row_bytes = if p.m == 1 { k * 2 } else { p.ldx * 2 };
    [
        Tile2d { base: p.w, cols: k, rows: n, row_bytes: p.ldw * 2, box_cols: 64, box_rows: c.tile_n },
        Tile2d { base: p.x, cols: k, rows: m, row_bytes: x_row_bytes, box_cols: 64, box_rows: c.tile_m },
    ]
}

/// Everything loaded for one device.
pub struct DeviceKernels {
    pub rt: &'static dyn Runtime,
    pub ctx: Context,
    pub info: DeviceInfo,
    pub arch: Arch,
    pub functions: Vec<Function>,
    pub tuning: Tuning,
    /// The table for launches without PDL (sm90), if there is one.
    pub tuning_no_pdl: Option<Tuning>,
    pub fallback: Fallback,
}

impl DeviceKernels {
    /// The tuning table for the next launch: PDL changes which kernel and split-K
    /// win (the table tuned with it on kept seven shapes at 0.94-0.97x of cuBLASLt
    /// with it off), so launches without PDL use their own table where there is one.
    pub fn table(&self) -> &Tuning {
        table_for(crate::config::pdl(), &self.tuning, self.tuning_no_pdl.as_ref())
    }
}

fn table_for<'a>(pdl: bool, with_pdl: &'a Tuning, without: Option<&'a Tuning>) -> &'a Tuning {
    match without {
        Some(t) if !pdl => t,
        _ => with_pdl,
    }
}

static DEVICES: Mutex<Option<FxHashMap<i32, Arc<DeviceKernels>>>> = Mutex::new(None);

/// Loads (once) everything `ordinal` needs.
pub fn device_kernels(ordinal: i32) -> Result<Arc<DeviceKernels>, String> {
    let mut guard = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(Default::default);
    if let Some(d) = map.get(&ordinal) {
        return Ok(d.clone());
    }
    let rt = gpu::runtime().ok_or("no GPU runtime (libamdhip64 or libcuda) with a device")?;
    let info = rt.device_info(ordinal)?;
    let arch = info.arch.ok_or_else(|| format!("skinnylt has no kernels for {}", info.arch_name))?;
    let ctx = rt.context(ordinal)?;
    let cat = kernels::for_arch(arch);
    let module = rt.load_module(ctx, cat.image)?;
    let mut functions = Vec::with_capacity(cat.kernels.len());
    for k in cat.kernels {
        let f = rt.function(ctx, module, k.name)?;
        if rt.backend() == Backend::Cuda {
            rt.set_max_dynamic_shared(ctx, f, k.config.lds_bytes(&crate::tuning::schema::target(arch.name()).expect("known arch")))?;
        }
        functions.push(f);
    }
    let (tuning, tuning_no_pdl) = (Tuning::load(arch, &info.name), Tuning::load_no_pdl(arch, &info.name));
    let d = Arc::new(DeviceKernels {
        rt,
        ctx,
        info,
        arch,
        functions,
        tuning,
        tuning_no_pdl,
        fallback: Fallback::for_arch(arch),
    });
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
    map.insert(ordinal, d.clone());
    Ok(d)
}

/// Warms everything for `device` (`skinnylt_preload`).
pub fn preload(device: i32) -> Result<(), String> {
    device_kernels(device).map(|_| ())
}

/// A handle's prepared state.
pub struct Engine {
    pub dev: Arc<DeviceKernels>,
    counters: DevPtr,
    zeros: DevPtr,
    own: DevPtr,
    own_lane_bytes: usize,
    /// Stream (+1) owning each lane; 0 = free.
    lanes: [AtomicU64; LANES],
}

impl Engine {
    fn new(ordinal: i32) -> Result<Engine, String> {
        let dev = device_kernels(ordinal)?;
        let (rt, ctx) = (dev.rt, dev.ctx);
        let own_bytes = crate::config::get().workspace_bytes;
        let counters = rt.alloc_zeroed(ctx, LANES * MAX_TILES * 4)?;
        let zeros = rt.alloc_zeroed(ctx, ZERO_PAGE)?;
        let own = rt.alloc_zeroed(ctx, own_bytes.max(16))?;
        Ok(Engine {
            dev,
            counters,
            zeros,
            own,
            own_lane_bytes: default_lane_bytes(),
            lanes: [const { AtomicU64::new(0) }; LANES],
        })
    }

    /// The lane of `stream`, claiming a free one on first use. The special handles
    /// 0x1 (legacy) and 0x2 (per-thread default stream: a different stream in every
    /// thread under one value) never get one.
    fn lane(&self, stream: *mut c_void) -> Option<usize> {
        if matches!(stream as usize, 1 | 2) {
            return None;
        }
        let key = stream as u64 + 1;
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
}

impl Drop for Engine {
    fn drop(&mut self) {
        for p in [self.counters, self.zeros, self.own] {
            self.dev.rt.free(self.dev.ctx, p);
        }
    }
}

/// `None`: the handle has no GPU engine (no device, or no kernels for it).
type Engines = FxHashMap<usize, Option<Arc<Engine>>>;
static ENGINES: RwLock<Option<Engines>> = RwLock::new(None);

/// Prepares a new handle (called by `hipblasLtCreate`); never fails the create.
pub fn on_create(handle: usize) {
    let engine = match gpu::runtime() {
        None => None,
        Some(rt) => match rt.current_device().and_then(Engine::new) {
            Ok(e) => Some(Arc::new(e)),
            Err(e) => {
                crate::log_warn!("handle {handle:#x}: no skinnylt kernels ({e}); every call forwards");
                None
            }
        },
    };
    ENGINES.write().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Default::default).insert(handle, engine);
}

/// Forgets a handle; true when it was known.
pub fn on_destroy(handle: usize) -> bool {
    let removed = ENGINES.write().unwrap_or_else(|e| e.into_inner()).as_mut().and_then(|m| m.remove(&handle));
    removed.is_some()
}

/// A planned launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub kernel: usize,
    pub split_k: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    /// Bytes of fp32 partials in global memory (0 without split-K or with clusters).
    pub partial_bytes: usize,
    /// Split-K inside a thread-block cluster of `split_k` CTAs (sm_90).
    pub cluster: bool,
}

/// Plans `p` for an arch's catalog: tuning entry, else fallback. Pure.
///
/// The split-K factor is capped so the fp32 partials fit `partial_capacity` (a
/// lane of the handle's own buffer): the split, and so the result bits, never
/// depend on how much workspace a caller happens to pass.
pub fn plan(
    arch: Arch,
    units: u32,
    tuning: &Tuning,
    fallback: &Fallback,
    backend_cuda: bool,
    partial_capacity: usize,
    p: &Problem,
) -> Result<Plan, Reason> {
    let choice = match tuning.lookup(p) {
        // Nothing to forward to (standalone): the fallback runs it instead.
        Some(Choice::Forward) if !can_forward() => None,
        c => c,
    }
    .or_else(|| fallback.choose(units, p))
    .ok_or(Reason::ArchUnsupported)?;
    let Choice::Run { kernel, mut split_k } = choice else {
        return Err(Reason::TunedForward);
    };
    split_k = split_k.clamp(1, crate::tuning::fallback::MAX_SPLIT);
    let e: &KernelEntry = &kernels::for_arch(arch).kernels[kernel];
    let c = e.config;
    let tiles = p.n.div_ceil(c.tile_n) as usize * p.m.div_ceil(c.tile_m) as usize;
    let per_split = tiles * (c.tile_m * c.tile_n) as usize * 4;
    if c.cluster {
        split_k = split_k.min(crate::tuning::schema::MAX_CLUSTER_SPLIT);
    } else if split_k > 1 {
        let fits = (partial_capacity / per_split.max(1)) as u32;
        split_k = if fits >= 2 { split_k.min(fits) } else { 1 };
    }
    if tiles > u32::MAX as usize / 2 {
        return Err(Reason::Dimensions);
    }
    if split_k > 1 && !c.cluster && tiles > MAX_TILES {
        split_k = 1; // more tiles than counters: no split-K (still correct)
    }
    let t = crate::tuning::schema::target(arch.name()).expect("known arch");
    Ok(Plan {
        kernel,
        split_k,
        grid: [tiles as u32, split_k, 1],
        block: [c.threads(&t), 1, 1],
        shared: if backend_cuda { c.lds_bytes(&t) } else { 0 },
        partial_bytes: if split_k > 1 && !c.cluster { per_split * split_k as usize } else { 0 },
        cluster: c.cluster && split_k > 1,
    })
}

fn plan_on(e: &Engine, p: &Problem) -> Result<Plan, Reason> {
    let dev = &e.dev;
    plan(dev.arch, dev.info.units, dev.table(), &dev.fallback, dev.rt.backend() == Backend::Cuda, e.own_lane_bytes, p)
}

/// Bytes of one lane of the own partials buffer with the configured size.
pub fn default_lane_bytes() -> usize {
    crate::config::get().workspace_bytes / LANES / 256 * 256
}

/// Standalone heuristic: the kernel index and the caller workspace it needs.
pub fn plan_for_heuristic(handle: usize, p: &Problem, _max_workspace: u64) -> Result<(usize, usize), Reason> {
    let guard = ENGINES.read().unwrap_or_else(|e| e.into_inner());
    let Some(Some(e)) = guard.as_ref().and_then(|m| m.get(&handle)) else { return Err(Reason::NoGpu) };
    let plan = plan_on(e, p)?;
    // The handle's own buffer always holds the partials: no caller workspace needed.
    Ok((plan.kernel, 0))
}

/// The hot path: plan and launch `p` on `stream`, or say why not.
pub fn run(handle: usize, p: &Problem, workspace: u64, workspace_size: usize, stream: *mut c_void) -> Result<(), Reason> {
    with_engine(handle, |e| {
        let plan = plan_on(e, p)?;
        launch(e, &plan, p, workspace, workspace_size, stream)
    })
}

/// Runs `p` with a given kernel and split-K factor (for `skinnylt tune`, which
/// measures candidates the tuning table does not name yet). Same launch path.
pub fn run_choice(handle: usize, p: &Problem, choice: Choice, workspace: u64, workspace_size: usize, stream: *mut c_void) -> Result<(), Reason> {
    with_engine(handle, |e| {
        let plan = plan_forced(e, p, choice)?;
        launch(e, &plan, p, workspace, workspace_size, stream)
    })
}

/// What `run_choice` would launch: the split-K factor may come out smaller than
/// asked (partials capacity, cluster limit), so `tune` times each launch once.
pub fn plan_choice(handle: usize, p: &Problem, choice: Choice) -> Result<Plan, Reason> {
    with_engine(handle, |e| plan_forced(e, p, choice))
}

fn plan_forced(e: &Engine, p: &Problem, choice: Choice) -> Result<Plan, Reason> {
    let dev = &e.dev;
    plan(dev.arch, dev.info.units, &Tuning::single(p, choice), &dev.fallback, dev.rt.backend() == Backend::Cuda, e.own_lane_bytes, p)
}

fn with_engine<R>(handle: usize, f: impl FnOnce(&Engine) -> Result<R, Reason>) -> Result<R, Reason> {
    let guard = ENGINES.read().unwrap_or_else(|e| e.into_inner());
    match guard.as_ref().and_then(|m| m.get(&handle)) {
        None => Err(Reason::UnknownDescriptor),
        Some(None) => Err(Reason::NoGpu),
        Some(Some(e)) => f(e),
    }
}

fn launch(e: &Engine, plan: &Plan, p: &Problem, workspace: u64, workspace_size: usize, stream: *mut c_void) -> Result<(), Reason> {
    let dev = &e.dev;
    // A stream without a lane (all taken, or a special handle) runs without split-K:
    // still correct, just less parallel. Cluster plans need no lane.
    let mut plan = *plan;
    let lane = if plan.split_k > 1 && !plan.cluster { e.lane(stream) } else { None };
    if plan.split_k > 1 && !plan.cluster && lane.is_none() {
        crate::stats::count_lane_fallback();
        plan.split_k = 1;
        plan.grid[1] = 1;
        plan.partial_bytes = 0;
    }
    let (partials, counters) = if let Some(lane) = lane.filter(|_| plan.split_k > 1) {
        // The caller's workspace when it is large enough (it is stream-ordered by
        // the caller's contract), else the lane's own buffer, which plan() sized for.
        let partials = if workspace != 0 && workspace.is_multiple_of(16) && workspace_size >= plan.partial_bytes {
            workspace
        } else {
            e.own.0 + (lane * e.own_lane_bytes) as u64
        };
        (partials, e.counters.0 + (lane * MAX_TILES * 4) as u64)
    } else {
        (0, 0)
    };
    let mut params = GemmParams {
        w: p.w,
        x: p.x,
        y: p.y,
        bias: p.bias,
        partials,
        counters,
        zeros: e.zeros.0,
        ldw: p.ldw as i64,
        ldx: p.ldx as i64,
        ldy: p.ldy as i64,
        m: p.m as i32,
        n: p.n as i32,
        k: p.k as i32,
        alpha: p.alpha,
        split_k: plan.split_k as i32,
        prefetch_row_bytes: 0,
        pdl_flags: 0,
    };
    // Every kernel waits (griddepcontrol.wait) before its first dependent access.
    let pdl = dev.arch == Arch::Sm90 && crate::config::pdl();
    if pdl {
        let cfg = crate::config::get();
        params.prefetch_row_bytes = cfg.pdl_prefetch_row_bytes;
        params.pdl_flags = cfg.pdl_flags;
    }
    let config = kernels::for_arch(dev.arch).kernels[plan.kernel].config;
    let mut maps = if config.tma {
        let [w, x] = tma_tiles(&config, p);
        let encode = |t: &Tile2d| {
            dev.rt.tensor_map_2d(t).map_err(|err| {
                crate::log_error!("tensor map for {t:?}: {err}");
                Reason::LaunchFailed
            })
        };
        Some(TmaMaps { w: encode(&w)?, x: encode(&x)? })
    } else {
        None
    };
    let f = dev.functions[plan.kernel];
    let cluster = plan.cluster.then_some([1, plan.split_k, 1]);
    let mut go = |params: &mut GemmParams, pdl: bool| {
        let mut args = [params as *mut GemmParams as *mut c_void, std::ptr::null_mut()];
        let count = match maps.as_mut() {
            Some(m) => {
                args[1] = m as *mut TmaMaps as *mut c_void;
                2
            }
            None => 1,
        };
        let cfg = LaunchConfig { grid: plan.grid, block: plan.block, shared: plan.shared, stream: Stream(stream), cluster, pdl };
        unsafe { dev.rt.launch(dev.ctx, f, &cfg, &mut args[..count]) }
    };
    let mut r = go(&mut params, pdl);
    if pdl && let Err(err) = &r {
        // A driver or capture mode that refuses the PDL attribute: plain stream order,
        // from now on (one failed launch, not one per call).
        crate::log_warn!("launch with programmatic dependent launch failed ({err}); retrying without, and not using PDL again");
        crate::config::set_pdl(false);
        params.prefetch_row_bytes = 0;
        params.pdl_flags = 0;
        r = go(&mut params, false);
    }
    match r {
        Ok(()) => {
            crate::log_trace!(
                "ran m={} n={} k={} {} split_k={} on stream {:?}",
                p.m,
                p.n,
                p.k,
                kernels::for_arch(dev.arch).kernels[plan.kernel].name,
                plan.split_k,
                stream
            );
            Ok(())
        }
        Err(err) => {
            crate::log_error!("launch failed: {err}");
            Err(Reason::LaunchFailed)
        }
    }
}

/// Measurement tools (bench, the GPU suite) report a tuned "forward" as the
/// vendor's time even in standalone mode; the library itself runs such shapes with
/// the fallback when there is no real hipBLASLt to forward to.
static FORWARD_WITHOUT_REAL: AtomicBool = AtomicBool::new(false);

pub fn set_forward_without_real(on: bool) {
    FORWARD_WITHOUT_REAL.store(on, Ordering::Relaxed);
}

fn can_forward() -> bool {
    FORWARD_WITHOUT_REAL.load(Ordering::Relaxed) || crate::real::get().is_some()
}

/// Describes what would run for `p` on `arch` without a GPU (the main job's dry run).
pub fn explain(arch: Arch, p: &Problem) -> Result<(String, Plan), Reason> {
    let tuning = Tuning::parse(arch, crate::tuning::embedded(arch), "embedded").map_err(|_| Reason::ArchUnsupported)?;
    let plan = plan(arch, arch.default_units(), &tuning, &Fallback::for_arch(arch), arch == Arch::Sm90, default_lane_bytes(), p)?;
    Ok((kernels::for_arch(arch).kernels[plan.kernel].name.to_owned(), plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Launches without PDL use their own table where the arch has one.
    #[test]
    fn the_table_follows_pdl() {
        let named = |source: &str| {
            let mut t = Tuning::default();
            t.source = source.into();
            t
        };
        let (with, without) = (named("with"), named("without"));
        assert_eq!(table_for(true, &with, Some(&without)).source, "with");
        assert_eq!(table_for(false, &with, Some(&without)).source, "without");
        assert_eq!(table_for(false, &with, None).source, "with");
        for device in ["NVIDIA H100 80GB HBM3", "NVIDIA H200"] {
            assert!(Tuning::load_no_pdl(Arch::Sm90, device).is_some_and(|t| t.entries > 0));
        }
        assert!(Tuning::load_no_pdl(Arch::Gfx942, "AMD Instinct MI300X").is_none());
    }

    /// The kernels assume (`cluster_split_bound`) that a cluster never holds more
    /// CTAs than their MAX_CLUSTER: plan() must cap the split at exactly that.
    #[test]
    fn the_cluster_cap_is_the_kernels_bound() {
        let header = include_str!("../kernels/prelude/target_nvptx.h");
        let line = format!("constexpr int MAX_CLUSTER = {};", crate::tuning::schema::MAX_CLUSTER_SPLIT);
        assert!(header.lines().any(|l| l.trim() == line), "kernels/prelude/target_nvptx.h must say `{line}`");
    }

    #[test]
    fn params_layout_matches_the_device_struct() {
        assert_eq!(std::mem::offset_of!(GemmParams, ldw), 56);
        assert_eq!(std::mem::offset_of!(GemmParams, m), 80);
        assert_eq!(std::mem::offset_of!(GemmParams, alpha), 92);
        assert_eq!(std::mem::offset_of!(GemmParams, split_k), 96);
        assert_eq!(std::mem::offset_of!(GemmParams, prefetch_row_bytes), 100);
        assert_eq!(std::mem::offset_of!(GemmParams, pdl_flags), 104);
    }

    /// The tensor views of a TMA-fed kernel: W by its rows of K with the tile's
    /// weight rows per box, X by its token rows; a single token row gets a packed
    /// stride (its ldx is never used, so it need not be 16-B aligned).
    #[test]
    fn tma_tiles_describe_both_operands() {
        use crate::tuning::schema::{Family, KernelConfig};
        let c = KernelConfig { family: Family::Wgmma, tile_m: 32, tile_n: 64, tile_k: 128, stages: 6, warps: [1, 4, 1], b_to_lds: true, cluster: true, tma: true };
        let mut p = Problem::packed(crate::route::DType::Bf16, 48, 2880, 4096);
        p.ldw = 4104;
        p.ldx = 4112;
        let [w, x] = tma_tiles(&c, &p);
        assert_eq!(w, Tile2d { base: p.w, cols: 4096, rows: 2880, row_bytes: 8208, box_cols: 64, box_rows: 64 });
        assert_eq!(x, Tile2d { base: p.x, cols: 4096, rows: 48, row_bytes: 8224, box_cols: 64, box_rows: 32 });
        p.m = 1;
        p.ldx = 4097;
        assert_eq!(tma_tiles(&c, &p)[1].row_bytes, 8192);
    }

    /// A tuned "forward" with no real hipBLASLt to forward to (standalone, as in
    /// these tests) runs the fallback instead; the measurement tools' switch keeps
    /// it a forward. The only test that touches the switch.
    #[test]
    fn a_forward_without_a_real_library_runs_the_fallback() {
        assert!(crate::real::get().is_none(), "tests run standalone");
        let p = Problem::packed(crate::route::DType::Bf16, 4, 2880, 4096);
        let t = Tuning::single(&p, Choice::Forward);
        let fb = Fallback::for_arch(Arch::Sm90);
        let plan_now = || plan(Arch::Sm90, 132, &t, &fb, true, default_lane_bytes(), &p);
        assert!(plan_now().is_ok());
        set_forward_without_real(true);
        let forwarded = plan_now();
        set_forward_without_real(false);
        assert_eq!(forwarded.err(), Some(Reason::TunedForward));
    }
}
