//! The HIP runtime (`libamdhip64.so.*`), declared here and loaded at run time.
//!
//! The copy the application already loaded is preferred, so its streams (our
//! `hipStream_t`) belong to the runtime we launch with. Attribute numbers are those
//! of the ROCm >= 6 `hipDeviceAttribute_t` enum; the arch is decided by which of our
//! code objects the device accepts, not by a property struct whose layout changes
//! between ROCm versions.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use super::{Arch, Backend, Context, DevPtr, DeviceInfo, Function, Module, Result, dl_table};

type HipError = c_int;

// hipDeviceAttribute_t (ROCm >= 6.0).
const ATTR_L2_CACHE_SIZE: c_int = 19;
const ATTR_CC_MAJOR: c_int = 23;
const ATTR_CC_MINOR: c_int = 61;
const ATTR_MULTIPROCESSOR_COUNT: c_int = 63;
// hipMemcpyKind (HostToHost 0, HostToDevice 1, DeviceToHost 2, DeviceToDevice 3).
const MEMCPY_HOST_TO_DEVICE: c_int = 1;
const MEMCPY_DEVICE_TO_HOST: c_int = 2;
const MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
// hipStreamNonBlocking, a hipStreamCreateWithFlags flag.
const STREAM_NON_BLOCKING: c_uint = 1;
// hipStreamCaptureMode (Global 0, ThreadLocal 1, Relaxed 2).
const STREAM_CAPTURE_MODE_THREAD_LOCAL: c_int = 1;

dl_table!(HipFns {
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
    hipMemset: fn(*mut c_void, c_int, usize) -> HipError;
    hipDeviceSynchronize: fn() -> HipError;
    hipMemcpy: fn(*mut c_void, *const c_void, usize, c_int) -> HipError;
    hipMemcpyAsync: fn(*mut c_void, *const c_void, usize, c_int, *mut c_void) -> HipError;
    hipMemsetD16: fn(*mut c_void, u16, usize) -> HipError;
    hipStreamCreateWithFlags: fn(*mut *mut c_void, c_uint) -> HipError;
    hipStreamDestroy: fn(*mut c_void) -> HipError;
    hipStreamSynchronize: fn(*mut c_void) -> HipError;
    hipStreamBeginCapture: fn(*mut c_void, c_int) -> HipError;
    hipStreamEndCapture: fn(*mut c_void, *mut *mut c_void) -> HipError;
    hipGraphInstantiate: fn(*mut *mut c_void, *mut c_void, *mut *mut c_void, *mut c_char, usize) -> HipError;
    hipGraphLaunch: fn(*mut c_void, *mut c_void) -> HipError;
    hipGraphExecDestroy: fn(*mut c_void) -> HipError;
    hipGraphDestroy: fn(*mut c_void) -> HipError;
    hipEventCreate: fn(*mut *mut c_void) -> HipError;
    hipEventRecord: fn(*mut c_void, *mut c_void) -> HipError;
    hipEventSynchronize: fn(*mut c_void) -> HipError;
    hipEventElapsedTime: fn(*mut f32, *mut c_void, *mut c_void) -> HipError;
    hipEventDestroy: fn(*mut c_void) -> HipError;
});

pub struct Hip {
    pub fns: HipFns,
    path: String,
    version: i32,
}

macro_rules! hip {
    ($self:expr, $f:ident($($a:expr),*)) => {
        match $self.fns.$f {
            None => Err(format!("{} missing from libamdhip64", stringify!($f))),
            Some(f) => {
                let r = unsafe { f($($a),*) };
                if r == 0 { Ok(()) } else { Err(format!("{} failed: {}", stringify!($f), $self.error_string(r))) }
            }
        }
    };
}

impl Hip {
    pub fn load() -> Option<Hip> {
        let (lib, path) = super::open_first(&["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"])?;
        let h = Hip { fns: HipFns::resolve(lib), path, version: 0 };
        let mut v = 0;
        hip!(h, hipRuntimeGetVersion(&mut v)).ok()?;
        (h.device_count() > 0).then_some(Hip { version: v, ..h })
    }

    fn error_string(&self, r: HipError) -> String {
        match self.fns.hipGetErrorString {
            Some(f) => {
                let p = unsafe { f(r) };
                if p.is_null() { format!("HIP error {r}") } else { format!("{} ({r})", unsafe { CStr::from_ptr(p) }.to_string_lossy()) }
            }
            None => format!("HIP error {r}"),
        }
    }

    pub fn describe(&self) -> String {
        format!("HIP runtime {} ({})", self.version, self.path)
    }

    pub fn device_count(&self) -> i32 {
        let mut n = 0;
        hip!(self, hipGetDeviceCount(&mut n)).map(|_| n).unwrap_or(0)
    }

    pub fn current_device(&self) -> Result<i32> {
        let mut d = 0;
        hip!(self, hipGetDevice(&mut d))?;
        Ok(d)
    }

    fn attr(&self, a: c_int, dev: i32) -> Result<i32> {
        let mut v = 0;
        hip!(self, hipDeviceGetAttribute(&mut v, a, dev))?;
        Ok(v)
    }

    pub fn device_info(&self, ordinal: i32) -> Result<DeviceInfo> {
        let mut name = [0 as c_char; 256];
        hip!(self, hipDeviceGetName(name.as_mut_ptr(), 256, ordinal))?;
        // HIP reports gfx9xy as compute capability 9.(x·10+y)/10: gfx942 → 9.4, gfx950 → 9.5.
        let (major, minor) = (self.attr(ATTR_CC_MAJOR, ordinal)?, self.attr(ATTR_CC_MINOR, ordinal)?);
        let arch = match (major, minor) {
            (9, 4) => Some(Arch::Gfx942),
            (9, 5) => Some(Arch::Gfx950),
            _ => None,
        };
        Ok(DeviceInfo {
            backend: Backend::Hip,
            ordinal,
            name: unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned(),
            arch_name: arch.map(|a| a.name().to_owned()).unwrap_or_else(|| format!("gfx{major}{minor}?")),
            arch,
            units: self.attr(ATTR_MULTIPROCESSOR_COUNT, ordinal)? as u32,
            l2_bytes: self.attr(ATTR_L2_CACHE_SIZE, ordinal)? as u64,
        })
    }

    pub fn context(&self, ordinal: i32) -> Result<Context> {
        Ok(Context(std::ptr::null_mut(), ordinal))
    }

    /// Runs `f` with the context's device current, restoring the caller's after.
    fn with_device<R>(&self, ctx: Context, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let cur = self.current_device()?;
        if cur == ctx.1 {
            return f();
        }
        hip!(self, hipSetDevice(ctx.1))?;
        let r = f();
        let _ = hip!(self, hipSetDevice(cur));
        r
    }

    pub fn load_module(&self, ctx: Context, image: &[u8]) -> Result<Module> {
        self.with_device(ctx, || {
            let mut m: *mut c_void = std::ptr::null_mut();
            hip!(self, hipModuleLoadData(&mut m, image.as_ptr().cast())).map(|_| Module(m))
        })
    }

    pub fn function(&self, ctx: Context, m: Module, name: &str) -> Result<Function> {
        let cname = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
        self.with_device(ctx, || {
            let mut f: *mut c_void = std::ptr::null_mut();
            hip!(self, hipModuleGetFunction(&mut f, m.0, cname.as_ptr())).map(|_| Function(f))
        })
    }

    pub fn set_max_dynamic_shared(&self, _ctx: Context, _f: Function, _bytes: u32) -> Result<()> {
        Ok(()) // LDS up to the arch limit needs no opt-in on AMD.
    }

    pub fn alloc_zeroed(&self, ctx: Context, bytes: usize) -> Result<DevPtr> {
        self.with_device(ctx, || {
            let mut p: *mut c_void = std::ptr::null_mut();
            hip!(self, hipMalloc(&mut p, bytes.max(16)))?;
            hip!(self, hipMemset(p, 0, bytes.max(16)))?;
            hip!(self, hipDeviceSynchronize())?;
            Ok(DevPtr(p as u64))
        })
    }

    pub fn free(&self, ctx: Context, p: DevPtr) {
        let _ = self.with_device(ctx, || hip!(self, hipFree(p.0 as *mut c_void)));
    }

    /// # Safety
    /// `params` must match the kernel's parameters.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch(
        &self,
        _ctx: Context,
        f: Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        stream: *mut c_void,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        // A module function is bound to the device it was loaded on; the caller's
        // stream decides where it runs, so no device switch in the hot path.
        let r = hip!(
            self,
            hipModuleLaunchKernel(
                f.0,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut()
            )
        );
        if r.is_err() {
            // The call will be forwarded: leave no error of ours in HIP's per-thread
            // "last error", where the application would find it after its next launch.
            if let Some(f) = self.fns.hipGetLastError {
                unsafe { f() };
            }
        }
        r
    }
}

/// Host-side helpers for benchmarks and tuning (not used by the library's GEMM
/// path), the same set as `Cuda`'s: memory, copies, streams, graphs, events.
/// Device pointers are `u64` as on the CUDA side; HIP takes them as `void*`.
// Streams, graphs and events are opaque runtime handles passed through to HIP;
// nothing is dereferenced on the host.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
impl Hip {
    pub fn make_current(&self, ctx: Context) -> Result<()> {
        hip!(self, hipSetDevice(ctx.1))
    }
    pub fn malloc(&self, bytes: usize) -> Result<u64> {
        let mut p: *mut c_void = std::ptr::null_mut();
        hip!(self, hipMalloc(&mut p, bytes.max(16)))?;
        Ok(p as u64)
    }
    pub fn free_raw(&self, p: u64) {
        let _ = hip!(self, hipFree(p as *mut c_void));
    }
    pub fn htod<T: Copy>(&self, dst: u64, src: &[T]) -> Result<()> {
        hip!(self, hipMemcpy(dst as *mut c_void, src.as_ptr().cast(), std::mem::size_of_val(src), MEMCPY_HOST_TO_DEVICE))
    }
    pub fn dtoh<T: Copy>(&self, dst: &mut [T], src: u64) -> Result<()> {
        hip!(self, hipMemcpy(dst.as_mut_ptr().cast(), src as *const c_void, std::mem::size_of_val(dst), MEMCPY_DEVICE_TO_HOST))
    }
    pub fn memset16(&self, dst: u64, value: u16, count: usize) -> Result<()> {
        hip!(self, hipMemsetD16(dst as *mut c_void, value, count))?;
        // The fill runs on the null stream, which our non-blocking streams do not
        // wait for: finish it before the caller's next launch reads the buffer.
        hip!(self, hipDeviceSynchronize())
    }
    pub fn copy_async(&self, dst: u64, src: u64, bytes: usize, stream: *mut c_void) -> Result<()> {
        hip!(self, hipMemcpyAsync(dst as *mut c_void, src as *const c_void, bytes, MEMCPY_DEVICE_TO_DEVICE, stream))
    }
    pub fn stream_create(&self) -> Result<*mut c_void> {
        let mut s: *mut c_void = std::ptr::null_mut();
        hip!(self, hipStreamCreateWithFlags(&mut s, STREAM_NON_BLOCKING))?;
        Ok(s)
    }
    pub fn stream_destroy(&self, s: *mut c_void) {
        let _ = hip!(self, hipStreamDestroy(s));
    }
    pub fn sync(&self, s: *mut c_void) -> Result<()> {
        hip!(self, hipStreamSynchronize(s))
    }
    pub fn device_sync(&self) -> Result<()> {
        hip!(self, hipDeviceSynchronize())
    }
    /// Captures what `f` enqueues on `s` into an instantiated graph.
    pub fn capture(&self, s: *mut c_void, f: impl FnOnce() -> Result<()>) -> Result<*mut c_void> {
        hip!(self, hipStreamBeginCapture(s, STREAM_CAPTURE_MODE_THREAD_LOCAL))?;
        let r = f();
        let mut g: *mut c_void = std::ptr::null_mut();
        let end = hip!(self, hipStreamEndCapture(s, &mut g));
        r?;
        end?;
        let mut exec: *mut c_void = std::ptr::null_mut();
        let inst = hip!(self, hipGraphInstantiate(&mut exec, g, std::ptr::null_mut(), std::ptr::null_mut(), 0));
        let _ = hip!(self, hipGraphDestroy(g));
        inst?;
        Ok(exec)
    }
    pub fn graph_launch(&self, exec: *mut c_void, s: *mut c_void) -> Result<()> {
        hip!(self, hipGraphLaunch(exec, s))
    }
    pub fn graph_destroy(&self, exec: *mut c_void) {
        let _ = hip!(self, hipGraphExecDestroy(exec));
    }
    pub fn event(&self) -> Result<*mut c_void> {
        let mut e: *mut c_void = std::ptr::null_mut();
        hip!(self, hipEventCreate(&mut e))?;
        Ok(e)
    }
    pub fn record(&self, e: *mut c_void, s: *mut c_void) -> Result<()> {
        hip!(self, hipEventRecord(e, s))
    }
    /// Milliseconds between two recorded events (waits for the second).
    pub fn elapsed_ms(&self, a: *mut c_void, b: *mut c_void) -> Result<f32> {
        hip!(self, hipEventSynchronize(b))?;
        let mut ms = 0f32;
        hip!(self, hipEventElapsedTime(&mut ms, a, b))?;
        Ok(ms)
    }
    pub fn event_destroy(&self, e: *mut c_void) {
        let _ = hip!(self, hipEventDestroy(e));
    }
}
