//! GPU runtimes, loaded at run time only: the HIP runtime (`libamdhip64`) on AMD and
//! the CUDA driver (`libcuda.so.1`) on NVIDIA. Nothing is linked at build time, so
//! the library loads on any machine and with any ROCm version.
//!
//! One trait, [`Runtime`], serves both: query the device, load a code object from
//! memory, look up kernels, allocate the handle's private buffers (at handle
//! creation, never in the hot path) and launch on the caller's stream.

pub mod cuda;
pub mod hip;

use std::ffi::c_void;
use std::sync::OnceLock;

/// Declares a table of C functions resolved from one shared library.
/// Every entry is optional: a missing symbol is `None`, decided at load time.
/// (Exported for the tools, which load the runtimes' other functions the same way.)
#[macro_export]
macro_rules! dl_table {
    ($vis:vis $table:ident { $($name:ident: fn($($arg:ty),*) -> $ret:ty;)* }) => {
        #[allow(non_snake_case)]
        $vis struct $table {
            $(pub $name: Option<unsafe extern "C" fn($($arg),*) -> $ret>,)*
            _lib: $crate::gpu::libloading::Library,
        }
        impl $table {
            /// Resolves every entry from `lib`, which the table then keeps open.
            pub fn resolve(lib: $crate::gpu::libloading::Library) -> Self {
                $table {
                    // SAFETY: each symbol is declared with the C signature of the
                    // library's header, and the table keeps the library open for
                    // as long as the pointers live.
                    $($name: unsafe { lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes()) }.ok().map(|s| *s),)*
                    _lib: lib,
                }
            }
        }
    };
}
#[doc(hidden)]
pub use libloading;

/// Calls `$f` from the table `$fns` of the runtime library `$lib`: an error when
/// the library lacks it or it returns non-zero (`$message` turns the code into
/// text). Every use passes the arguments of the function's declared C signature.
#[macro_export]
macro_rules! dl_call {
    ($fns:expr, $lib:expr, $f:ident($($a:expr),*), $message:expr) => {
        match $fns.$f {
            None => Err(format!("{} missing from {}", stringify!($f), $lib)),
            Some(f) => {
                // The arguments are plain values (handles, numbers, pointers to
                // locals) evaluated for the call, nothing the caller meant to hide.
                #[allow(clippy::macro_metavars_in_unsafe)]
                // SAFETY: the arguments follow the function's C signature (the
                // table's declaration) at every use of this macro.
                let r = unsafe { f($($a),*) };
                if r == 0 { Ok(()) } else { Err(format!("{} failed: {}", stringify!($f), $message(r))) }
            }
        }
    };
}

/// Opens the first of `names` that loads, preferring a copy already in the process
/// (so an application's streams and contexts are the ones we use).
pub fn open_first(names: &[&str]) -> Option<(libloading::Library, String)> {
    use libloading::os::unix::{Library, RTLD_LAZY, RTLD_LOCAL};
    const RTLD_NOLOAD: i32 = libc::RTLD_NOLOAD;
    for flags in [RTLD_LAZY | RTLD_NOLOAD, RTLD_LAZY | RTLD_LOCAL] {
        for n in names {
            // SAFETY: loading a GPU runtime runs its initialisers, which is what
            // every application using it does; nothing else is assumed.
            if let Ok(l) = unsafe { Library::open(Some(*n), flags) } {
                return Some((l.into(), (*n).to_owned()));
            }
        }
    }
    None
}

/// Calls a function of a runtime's own table (`$self.fns`), named in errors after
/// its library (`$self.lib`) and described by its messages (`$self.error_string`).
macro_rules! rt_call {
    ($self:expr, $f:ident($($a:expr),*)) => {
        $crate::dl_call!($self.fns, $self.lib, $f($($a),*), |r| $crate::gpu::Runtime::error_string($self, r))
    };
}
use rt_call;

/// A device name as a runtime writes it: into a caller's buffer of 256 bytes,
/// NUL-terminated.
fn device_name(write: impl FnOnce(*mut std::ffi::c_char, i32) -> Result<()>) -> Result<String> {
    let mut name = [0u8; 256];
    write(name.as_mut_ptr().cast(), name.len() as i32 - 1)?;
    // The last byte is never written: the name is NUL-terminated within the buffer.
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len() - 1);
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
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
/// A tensor map for the tensor memory accelerator (sm_90), as kernels take it.
pub use crate::kernels::params::TensorMap;

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

// SAFETY: a plain handle owned by the runtime, never dereferenced on the host;
// the runtimes accept it from any thread.
unsafe impl Send for Module {}
// SAFETY: a plain handle owned by the runtime, never dereferenced on the host;
// the runtimes accept it from any thread.
unsafe impl Sync for Module {}
// SAFETY: a plain handle owned by the runtime, never dereferenced on the host;
// the runtimes accept it from any thread.
unsafe impl Send for Function {}
// SAFETY: a plain handle owned by the runtime, never dereferenced on the host;
// the runtimes accept it from any thread.
unsafe impl Sync for Function {}
// SAFETY: a plain handle owned by the runtime, never dereferenced on the host;
// the runtimes accept it from any thread.
unsafe impl Send for Context {}
// SAFETY: a plain handle owned by the runtime, never dereferenced on the host;
// the runtimes accept it from any thread.
unsafe impl Sync for Context {}

pub type Result<T> = std::result::Result<T, String>;

/// A kernel launch: everything the runtime needs besides the function and its
/// parameters, decided by the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory / LDS bytes.
    pub shared: u32,
    /// The caller's stream.
    pub stream: Stream,
    /// Thread-block cluster dimensions (NVIDIA sm_90 only).
    pub cluster: Option<[u32; 3]>,
    /// Programmatic dependent launch (NVIDIA sm_90 only): the kernel may start
    /// while the previous one on the stream finishes.
    pub pdl: bool,
}

/// A stream handle of the runtime (`hipStream_t` / `CUstream`), passed through,
/// never dereferenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream(pub *mut c_void);
// SAFETY: an opaque runtime handle; the runtimes accept it from any thread.
unsafe impl Send for Stream {}
// SAFETY: as above; nothing is shared through it on the host.
unsafe impl Sync for Stream {}

/// The GPU runtime a process drives its devices with: HIP on AMD, the CUDA driver
/// on NVIDIA. Everything the library needs, and nothing more: device queries,
/// code objects, the handle's buffers (creation time only), tensor maps and the
/// launch (the hot path).
pub trait Runtime: Send + Sync {
    fn backend(&self) -> Backend;
    /// Runtime library file and version, for `skinnylt info` and logs.
    fn describe(&self) -> String;
    /// The runtime's message for an error code.
    fn error_string(&self, code: i32) -> String;
    fn device_count(&self) -> i32;
    /// The calling thread's current device.
    fn current_device(&self) -> Result<i32>;
    fn device_info(&self, ordinal: i32) -> Result<DeviceInfo>;
    /// The device's context (CUDA: its primary context) to launch in.
    fn context(&self, ordinal: i32) -> Result<Context>;
    /// Loads a code object (HSACO for HIP, NUL-terminated PTX for CUDA).
    fn load_module(&self, ctx: Context, image: &[u8]) -> Result<Module>;
    fn function(&self, ctx: Context, m: Module, name: &str) -> Result<Function>;
    /// Raises a kernel's dynamic shared-memory limit to `bytes` (CUDA; LDS up to
    /// the arch limit needs no opt-in on AMD).
    fn set_max_dynamic_shared(&self, _ctx: Context, _f: Function, _bytes: u32) -> Result<()> {
        Ok(())
    }
    /// Allocates zeroed device memory (creation time only). It waits only for its
    /// own private stream, never for the device or the legacy stream, so it cannot
    /// join or break a graph capture running on another stream.
    fn alloc_zeroed(&self, ctx: Context, bytes: usize) -> Result<DevPtr>;
    fn free(&self, ctx: Context, p: DevPtr);
    /// Sets the calling thread's stream-capture mode (`CAPTURE_MODE_*`), returning
    /// the previous one (`cuThreadExchangeStreamCaptureMode`).
    fn exchange_capture_mode(&self, mode: i32) -> Result<i32>;
    /// Encodes a tensor map (NVIDIA sm_90; pure host work, no allocation).
    fn tensor_map_2d(&self, _t: &Tile2d) -> Result<TensorMap> {
        Err("tensor maps are an sm_90 feature".into())
    }
    /// Launches `f` as `cfg` says.
    ///
    /// # Safety
    /// `params` must match the kernel's parameters and point to live values.
    unsafe fn launch(&self, ctx: Context, f: Function, cfg: &LaunchConfig, params: &mut [*mut c_void]) -> Result<()>;
}

/// `CU_STREAM_CAPTURE_MODE_RELAXED` / `hipStreamCaptureModeRelaxed`: the thread
/// may make calls that are unsafe during another thread's global-mode capture.
pub const CAPTURE_MODE_RELAXED: i32 = 2;

/// Runs `f` (handle creation or destruction: allocations, module loads) in relaxed
/// capture mode on this thread. In the default global mode, a `cuMemAlloc` made
/// while any other thread captures a stream in global mode is refused and ends
/// that capture with an error (how hipBLASLt's own create breaks captures); relaxed,
/// and waiting only on a private stream, the work stays out of every capture.
pub fn capture_relaxed<R>(rt: &dyn Runtime, f: impl FnOnce() -> R) -> R {
    let previous = rt.exchange_capture_mode(CAPTURE_MODE_RELAXED);
    let r = f();
    if let Ok(m) = previous {
        let _ = rt.exchange_capture_mode(m);
    }
    r
}

static RUNTIME: OnceLock<Option<Box<dyn Runtime>>> = OnceLock::new();

/// The GPU runtime, found once: HIP when it loads and sees a device (AMD), else the
/// CUDA driver; `None` on a machine without either.
pub fn runtime() -> Option<&'static dyn Runtime> {
    RUNTIME
        .get_or_init(|| {
            if let Some(h) = hip::Hip::load() {
                return Some(Box::new(h) as Box<dyn Runtime>);
            }
            cuda::Cuda::load().map(|c| Box::new(c) as Box<dyn Runtime>)
        })
        .as_deref()
}

/// Arch name of the current device, when a GPU is present.
pub fn current_arch_name() -> Option<String> {
    let rt = runtime()?;
    let dev = rt.current_device().ok()?;
    rt.device_info(dev).ok().map(|d| d.arch_name)
}
