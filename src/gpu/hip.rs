//! The HIP runtime (`libamdhip64.so.*`), declared here and loaded at run time.
//!
//! The copy the application already loaded is preferred, so its streams (our
//! `hipStream_t`) belong to the runtime we launch with. Attribute numbers are those
//! of the ROCm >= 6 `hipDeviceAttribute_t` enum; the arch is decided by which of our
//! code objects the device accepts, not by a property struct whose layout changes
//! between ROCm versions.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use super::{rt_call, Arch, Backend, Context, DevPtr, DeviceInfo, Function, LaunchConfig, Module, Result, Runtime};

type HipError = c_int;

// hipDeviceAttribute_t (ROCm >= 6.0).
const ATTR_L2_CACHE_SIZE: c_int = 19;
const ATTR_CC_MAJOR: c_int = 23;
const ATTR_CC_MINOR: c_int = 61;
const ATTR_MULTIPROCESSOR_COUNT: c_int = 63;

/// `hipStreamNonBlocking`: no implicit synchronisation with the null stream.
const STREAM_NON_BLOCKING: c_uint = 1;

crate::dl_table!(pub HipFns {
    hipRuntimeGetVersion: fn(*mut c_int) -> HipError;
    hipGetErrorString: fn(HipError) -> *const c_char;
    hipGetLastError: fn() -> HipError;
    hipGetDeviceCount: fn(*mut c_int) -> HipError;
    hipGetDevice: fn(*mut c_int) -> HipError;
    hipSetDevice: fn(c_int) -> HipError;
    hipDeviceGetName: fn(*mut c_char, c_int, c_int) -> HipError;
    hipDeviceGetAttribute: fn(*mut c_int, c_int, c_int) -> HipError;
    hipModuleLoadData: fn(*mut *mut c_void, *const c_void) -> HipError;
    hipModuleGetFunction: fn(*mut *mut c_void, *mut c_void, *const c_char) -> HipError;
    hipModuleLaunchKernel: fn(*mut c_void, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, *mut c_void, *mut *mut c_void, *mut *mut c_void) -> HipError;
    hipMalloc: fn(*mut *mut c_void, usize) -> HipError;
    hipFree: fn(*mut c_void) -> HipError;
    hipMemsetAsync: fn(*mut c_void, c_int, usize, *mut c_void) -> HipError;
    hipStreamCreateWithFlags: fn(*mut *mut c_void, c_uint) -> HipError;
    hipStreamDestroy: fn(*mut c_void) -> HipError;
    hipStreamSynchronize: fn(*mut c_void) -> HipError;
    hipThreadExchangeStreamCaptureMode: fn(*mut c_int) -> HipError;
});

pub struct Hip {
    fns: HipFns,
    lib: &'static str,
    path: String,
    version: i32,
}

impl Hip {
    pub fn load() -> Option<Hip> {
        let (lib, path) = super::open_first(&["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"])?;
        let h = Hip { fns: HipFns::resolve(lib), lib: "libamdhip64", path, version: 0 };
        let mut v = 0;
        rt_call!(&h, hipRuntimeGetVersion(&mut v)).ok()?;
        (h.device_count() > 0).then_some(Hip { version: v, ..h })
    }

    /// Runs `f` with the context's device current, restoring the caller's after.
    fn with_device<R>(&self, ctx: Context, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let cur = self.current_device()?;
        if cur == ctx.1 {
            return f();
        }
        rt_call!(self, hipSetDevice(ctx.1))?;
        let r = f();
        let _ = rt_call!(self, hipSetDevice(cur));
        r
    }
}

impl Runtime for Hip {
    fn backend(&self) -> Backend {
        Backend::Hip
    }

    fn error_string(&self, r: HipError) -> String {
        let Some(f) = self.fns.hipGetErrorString else { return format!("HIP error {r}") };
        // SAFETY: hipGetErrorString takes any error code and returns a static string or null.
        let p = unsafe { f(r) };
        if p.is_null() {
            return format!("HIP error {r}");
        }
        // SAFETY: non-null, NUL-terminated and static (the runtime's table).
        format!("{} ({r})", unsafe { CStr::from_ptr(p) }.to_string_lossy())
    }

    fn describe(&self) -> String {
        format!("HIP runtime {} ({})", self.version, self.path)
    }

    fn device_count(&self) -> i32 {
        let mut n = 0;
        rt_call!(self, hipGetDeviceCount(&mut n)).map(|_| n).unwrap_or(0)
    }

    fn current_device(&self) -> Result<i32> {
        let mut d = 0;
        rt_call!(self, hipGetDevice(&mut d))?;
        Ok(d)
    }

    fn device_info(&self, ordinal: i32) -> Result<DeviceInfo> {
        let attr = |a: c_int| {
            let mut v = 0;
            rt_call!(self, hipDeviceGetAttribute(&mut v, a, ordinal)).map(|_| v)
        };
        let name = super::device_name(|p, n| rt_call!(self, hipDeviceGetName(p, n, ordinal)))?;
        // HIP reports gfx9xy as compute capability 9.(x·10+y)/10: gfx942 → 9.4, gfx950 → 9.5.
        let (major, minor) = (attr(ATTR_CC_MAJOR)?, attr(ATTR_CC_MINOR)?);
        let arch = match (major, minor) {
            (9, 4) => Some(Arch::Gfx942),
            (9, 5) => Some(Arch::Gfx950),
            _ => None,
        };
        Ok(DeviceInfo {
            backend: Backend::Hip,
            ordinal,
            name,
            arch_name: arch.map(|a| a.name().to_owned()).unwrap_or_else(|| format!("gfx{major}{minor}?")),
            arch,
            units: attr(ATTR_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(ATTR_L2_CACHE_SIZE)? as u64,
        })
    }

    /// HIP has no context object: the ordinal is made current around calls.
    fn context(&self, ordinal: i32) -> Result<Context> {
        Ok(Context(std::ptr::null_mut(), ordinal))
    }

    fn load_module(&self, ctx: Context, image: &[u8]) -> Result<Module> {
        self.with_device(ctx, || {
            let mut m: *mut c_void = std::ptr::null_mut();
            rt_call!(self, hipModuleLoadData(&mut m, image.as_ptr().cast())).map(|_| Module(m))
        })
    }

    fn function(&self, ctx: Context, m: Module, name: &str) -> Result<Function> {
        let cname = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
        self.with_device(ctx, || {
            let mut f: *mut c_void = std::ptr::null_mut();
            rt_call!(self, hipModuleGetFunction(&mut f, m.0, cname.as_ptr())).map(|_| Function(f))
        })
    }

    fn alloc_zeroed(&self, ctx: Context, bytes: usize) -> Result<DevPtr> {
        self.with_device(ctx, || {
            let mut p: *mut c_void = std::ptr::null_mut();
            rt_call!(self, hipMalloc(&mut p, bytes.max(16)))?;
            // Zeroed on a private non-blocking stream and waited for there (see
            // `Runtime::alloc_zeroed`).
            let mut s: *mut c_void = std::ptr::null_mut();
            let zeroed = rt_call!(self, hipStreamCreateWithFlags(&mut s, STREAM_NON_BLOCKING)).and_then(|_| {
                let r = rt_call!(self, hipMemsetAsync(p, 0, bytes.max(16), s)).and_then(|_| rt_call!(self, hipStreamSynchronize(s)));
                let _ = rt_call!(self, hipStreamDestroy(s));
                r
            });
            if let Err(e) = zeroed {
                let _ = rt_call!(self, hipFree(p));
                return Err(e);
            }
            Ok(DevPtr(p as u64))
        })
    }

    fn free(&self, ctx: Context, p: DevPtr) {
        let _ = self.with_device(ctx, || rt_call!(self, hipFree(p.0 as *mut c_void)));
    }

    fn exchange_capture_mode(&self, mode: i32) -> Result<i32> {
        let mut m = mode;
        rt_call!(self, hipThreadExchangeStreamCaptureMode(&mut m))?;
        Ok(m)
    }

    unsafe fn launch(&self, _ctx: Context, f: Function, cfg: &LaunchConfig, params: &mut [*mut c_void]) -> Result<()> {
        if cfg.cluster.is_some() || cfg.pdl {
            return Err("thread-block clusters and programmatic dependent launch are sm_90 features".into());
        }
        let (grid, block) = (cfg.grid, cfg.block);
        // A module function is bound to the device it was loaded on; the caller's
        // stream decides where it runs, so no device switch in the hot path.
        let r = rt_call!(
            self,
            hipModuleLaunchKernel(f.0, grid[0], grid[1], grid[2], block[0], block[1], block[2], cfg.shared, cfg.stream.0, params.as_mut_ptr(), std::ptr::null_mut())
        );
        if r.is_err() {
            // The call will be forwarded: leave no error of ours in HIP's per-thread
            // "last error", where the application would find it after its next launch.
            if let Some(f) = self.fns.hipGetLastError {
                // SAFETY: takes no arguments; clears the calling thread's last error.
                unsafe { f() };
            }
        }
        r
    }
}
