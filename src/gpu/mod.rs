//! GPU runtimes, loaded at run time only: the HIP runtime (`libamdhip64`) on AMD and
//! the CUDA driver (`libcuda.so.1`) on NVIDIA. Nothing is linked at build time, so
//! the library loads on any machine and with any ROCm version.
//!
//! One small interface serves both: query the device, load a code object from
//! memory, look up kernels, allocate the handle's private buffers (at handle
//! creation, never in the hot path) and launch on the caller's stream.

pub mod cuda;
pub mod hip;

use std::ffi::c_void;
use std::sync::OnceLock;

/// Declares a table of C functions resolved from one shared library.
/// Every entry is optional: a missing symbol is `None`, decided at load time.
macro_rules! dl_table {
    ($table:ident { $($name:ident: fn($($arg:ty),*) -> $ret:ty;)* }) => {
        #[allow(non_snake_case)]
        pub struct $table {
            $(pub $name: Option<unsafe extern "C" fn($($arg),*) -> $ret>,)*
            _lib: libloading::Library,
        }
        impl $table {
            /// Resolves every entry from `lib`, which the table then keeps open.
            pub fn resolve(lib: libloading::Library) -> Self {
                unsafe {
                    $table {
                        $($name: lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes()).ok().map(|s| *s),)*
                        _lib: lib,
                    }
                }
            }
        }
    };
}
pub(crate) use dl_table;

/// Opens the first of `names` that loads, preferring a copy already in the process
/// (so an application's streams and contexts are the ones we use).
pub(crate) fn open_first(names: &[&str]) -> Option<(libloading::Library, String)> {
    use libloading::os::unix::{Library, RTLD_LAZY, RTLD_LOCAL};
    const RTLD_NOLOAD: i32 = libc::RTLD_NOLOAD;
    for flags in [RTLD_LAZY | RTLD_NOLOAD, RTLD_LAZY | RTLD_LOCAL] {
        for n in names {
            if let Ok(l) = unsafe { Library::open(Some(*n), flags) } {
                return Some((l.into(), (*n).to_owned()));
            }
        }
    }
    None
}

/// Which runtime drives the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Hip,
    Cuda,
}

impl Backend {
    /// What the vendor calls the device's units, for reports: "CUs" or "SMs".
    pub fn unit_name(self) -> &'static str {
        match self {
            Backend::Hip => "CUs",
            Backend::Cuda => "SMs",
        }
    }
}

/// The GPU generations skinnylt has kernels for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// MI300X / MI325X (CDNA3).
    Gfx942,
    /// MI350X / MI355X (CDNA4).
    Gfx950,
    /// H100 / H200 (Hopper).
    Sm90,
}

impl Arch {
    pub const ALL: [Arch; 3] = [Arch::Gfx942, Arch::Gfx950, Arch::Sm90];

    /// The name used for tuning files and code objects.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Gfx942 => "gfx942",
            Arch::Gfx950 => "gfx950",
            Arch::Sm90 => "sm90",
        }
    }

    pub fn from_name(s: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == s)
    }

    /// Threads per wave / warp.
    pub fn wave_size(self) -> u32 {
        match self {
            Arch::Gfx942 | Arch::Gfx950 => 64,
            Arch::Sm90 => 32,
        }
    }

    /// LDS / shared memory a workgroup may use, in bytes.
    pub fn lds_bytes(self) -> u32 {
        match self {
            Arch::Gfx942 => 64 << 10,
            Arch::Gfx950 => 160 << 10,
            Arch::Sm90 => 227 << 10,
        }
    }

    /// Compute units / SMs of the common part (used when no device is present).
    pub fn default_units(self) -> u32 {
        match self {
            Arch::Gfx942 => 304,
            Arch::Gfx950 => 256,
            Arch::Sm90 => 132,
        }
    }
}

/// What we know about one device.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub backend: Backend,
    pub ordinal: i32,
    pub name: String,
    /// e.g. "gfx942" or "sm_90".
    pub arch_name: String,
    /// `None` when skinnylt has no kernels for it.
    pub arch: Option<Arch>,
    /// Compute units (AMD) or SMs (NVIDIA).
    pub units: u32,
    pub l2_bytes: u64,
}

/// A loaded code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module(pub *mut c_void);
/// A kernel of a loaded code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function(pub *mut c_void);
/// Device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevPtr(pub u64);
/// A tensor map for the tensor memory accelerator (`CUtensorMap`, sm_90): 128 opaque
/// bytes the driver encodes, passed by value as a kernel parameter.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct TensorMap(pub [u64; 16]);

/// A tiled 2-D view of a row-major matrix of 16-bit elements, copied by boxes of
/// `box_cols` x `box_rows` into the 128-B swizzled shared-memory layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile2d {
    pub base: u64,
    pub cols: u64,
    pub rows: u64,
    /// Bytes from one row to the next (a multiple of 16).
    pub row_bytes: u64,
    pub box_cols: u32,
    pub box_rows: u32,
}

/// The device's context (CUDA) or ordinal (HIP), to make current around calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context(pub *mut c_void, pub i32);

// These are plain handles owned by the runtime; the runtimes are thread-safe.
unsafe impl Send for Module {}
unsafe impl Sync for Module {}
unsafe impl Send for Function {}
unsafe impl Sync for Function {}
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

pub type Result<T> = std::result::Result<T, String>;

/// The process's GPU runtime.
pub enum Runtime {
    Hip(hip::Hip),
    Cuda(cuda::Cuda),
}

static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();

/// The GPU runtime, found once: HIP when it loads and sees a device (AMD), else the
/// CUDA driver; `None` on a machine without either.
pub fn runtime() -> Option<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            if let Some(h) = hip::Hip::load() {
                return Some(Runtime::Hip(h));
            }
            cuda::Cuda::load().map(Runtime::Cuda)
        })
        .as_ref()
}

/// Arch name of the current device, when a GPU is present.
pub fn current_arch_name() -> Option<String> {
    let rt = runtime()?;
    let dev = rt.current_device().ok()?;
    rt.device_info(dev).ok().map(|d| d.arch_name)
}

macro_rules! dispatch {
    ($self:ident, $r:ident => $e:expr) => {
        match $self {
            Runtime::Hip($r) => $e,
            Runtime::Cuda($r) => $e,
        }
    };
}

impl Runtime {
    pub fn backend(&self) -> Backend {
        match self {
            Runtime::Hip(_) => Backend::Hip,
            Runtime::Cuda(_) => Backend::Cuda,
        }
    }
    /// Runtime library file and version, for `skinnylt info`.
    pub fn describe(&self) -> String {
        dispatch!(self, r => r.describe())
    }
    pub fn device_count(&self) -> i32 {
        dispatch!(self, r => r.device_count())
    }
    /// The calling thread's current device.
    pub fn current_device(&self) -> Result<i32> {
        dispatch!(self, r => r.current_device())
    }
    pub fn device_info(&self, ordinal: i32) -> Result<DeviceInfo> {
        dispatch!(self, r => r.device_info(ordinal))
    }
    pub fn context(&self, ordinal: i32) -> Result<Context> {
        dispatch!(self, r => r.context(ordinal))
    }
    /// Loads a code object (HSACO for HIP, NUL-terminated PTX for CUDA).
    pub fn load_module(&self, ctx: Context, image: &[u8]) -> Result<Module> {
        dispatch!(self, r => r.load_module(ctx, image))
    }
    pub fn function(&self, ctx: Context, m: Module, name: &str) -> Result<Function> {
        dispatch!(self, r => r.function(ctx, m, name))
    }
    /// Raises a kernel's dynamic shared-memory limit (no-op on HIP).
    pub fn set_max_dynamic_shared(&self, ctx: Context, f: Function, bytes: u32) -> Result<()> {
        dispatch!(self, r => r.set_max_dynamic_shared(ctx, f, bytes))
    }
    /// Allocates zeroed device memory (synchronous: creation time only).
    pub fn alloc_zeroed(&self, ctx: Context, bytes: usize) -> Result<DevPtr> {
        dispatch!(self, r => r.alloc_zeroed(ctx, bytes))
    }
    pub fn free(&self, ctx: Context, p: DevPtr) {
        dispatch!(self, r => r.free(ctx, p))
    }
    /// Encodes a tensor map (NVIDIA sm_90; HIP has none).
    pub fn tensor_map_2d(&self, t: &Tile2d) -> Result<TensorMap> {
        match self {
            Runtime::Cuda(c) => c.tensor_map_2d(t),
            Runtime::Hip(_) => Err("tensor maps are an sm_90 feature".into()),
        }
    }
    /// Launches `f` on `stream` with the kernel-parameter pointers `params`, as a
    /// grid of thread-block clusters of `cluster` CTAs when given (NVIDIA sm_90 only),
    /// with programmatic dependent launch when `pdl` (NVIDIA; HIP has none, ignored).
    ///
    /// # Safety
    /// `params` must match the kernel's signature and point to live values.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch(
        &self,
        ctx: Context,
        f: Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: *mut c_void,
        params: &mut [*mut c_void],
        cluster: Option<[u32; 3]>,
        pdl: bool,
    ) -> Result<()> {
        match (self, cluster) {
            (Runtime::Cuda(c), _) => unsafe { c.launch(ctx, f, grid, block, shared, stream, params, cluster, pdl) },
            (Runtime::Hip(h), None) => unsafe { h.launch(ctx, f, grid, block, shared, stream, params) },
            (Runtime::Hip(_), Some(_)) => Err("thread-block clusters are an sm_90 feature".into()),
        }
    }
}

/// Host-side helpers for `skinnylt bench` / `tune` (not the GEMM path), written
/// once for both runtimes: each forwards to the runtime's helper of the same name.
/// Device pointers are `u64`; streams, graphs and events are the runtime's opaque
/// handles.
impl Runtime {
    pub fn make_current(&self, ctx: Context) -> Result<()> {
        dispatch!(self, r => r.make_current(ctx))
    }
    pub fn malloc(&self, bytes: usize) -> Result<u64> {
        dispatch!(self, r => r.malloc(bytes))
    }
    pub fn free_raw(&self, p: u64) {
        dispatch!(self, r => r.free_raw(p))
    }
    pub fn htod<T: Copy>(&self, dst: u64, src: &[T]) -> Result<()> {
        dispatch!(self, r => r.htod(dst, src))
    }
    pub fn dtoh<T: Copy>(&self, dst: &mut [T], src: u64) -> Result<()> {
        dispatch!(self, r => r.dtoh(dst, src))
    }
    /// Fills `count` 16-bit elements at `dst` with `value`.
    pub fn memset16(&self, dst: u64, value: u16, count: usize) -> Result<()> {
        dispatch!(self, r => r.memset16(dst, value, count))
    }
    /// Device-to-device copy, enqueued on `stream`.
    pub fn copy_async(&self, dst: u64, src: u64, bytes: usize, stream: *mut c_void) -> Result<()> {
        dispatch!(self, r => r.copy_async(dst, src, bytes, stream))
    }
    /// A stream that does not synchronise with the null stream.
    pub fn stream_create(&self) -> Result<*mut c_void> {
        dispatch!(self, r => r.stream_create())
    }
    pub fn stream_destroy(&self, s: *mut c_void) {
        dispatch!(self, r => r.stream_destroy(s))
    }
    pub fn sync(&self, s: *mut c_void) -> Result<()> {
        dispatch!(self, r => r.sync(s))
    }
    pub fn device_sync(&self) -> Result<()> {
        dispatch!(self, r => r.device_sync())
    }
    /// Captures what `f` enqueues on `s` into an instantiated graph.
    pub fn capture(&self, s: *mut c_void, f: impl FnOnce() -> Result<()>) -> Result<*mut c_void> {
        dispatch!(self, r => r.capture(s, f))
    }
    pub fn graph_launch(&self, exec: *mut c_void, s: *mut c_void) -> Result<()> {
        dispatch!(self, r => r.graph_launch(exec, s))
    }
    pub fn graph_destroy(&self, exec: *mut c_void) {
        dispatch!(self, r => r.graph_destroy(exec))
    }
    pub fn event(&self) -> Result<*mut c_void> {
        dispatch!(self, r => r.event())
    }
    pub fn record(&self, e: *mut c_void, s: *mut c_void) -> Result<()> {
        dispatch!(self, r => r.record(e, s))
    }
    /// Milliseconds between two recorded events (waits for the second).
    pub fn elapsed_ms(&self, a: *mut c_void, b: *mut c_void) -> Result<f32> {
        dispatch!(self, r => r.elapsed_ms(a, b))
    }
    pub fn event_destroy(&self, e: *mut c_void) {
        dispatch!(self, r => r.event_destroy(e))
    }
}
