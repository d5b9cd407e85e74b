//! The tools' HIP runtime calls (`libamdhip64`, the copy the library opened).
//! Device pointers are `u64` as on the CUDA side; HIP takes them as `void*`.

use std::ffi::{c_char, c_int, c_uint, c_void};

use skinnylt::gpu::{Context, Runtime};

use super::{Harness, Raw, Result};

type HipError = c_int;

skinnylt::dl_table!(HipFns {
    hipSetDevice: fn(c_int) -> HipError;
    hipMalloc: fn(*mut *mut c_void, usize) -> HipError;
    hipFree: fn(*mut c_void) -> HipError;
    hipDeviceSynchronize: fn() -> HipError;
    hipMemcpy: fn(*mut c_void, *const c_void, usize, c_int) -> HipError;
    hipMemcpyAsync: fn(*mut c_void, *const c_void, usize, c_int, Raw) -> HipError;
    hipMemsetD16: fn(*mut c_void, u16, usize) -> HipError;
    hipStreamCreateWithFlags: fn(*mut Raw, c_uint) -> HipError;
    hipStreamDestroy: fn(Raw) -> HipError;
    hipStreamSynchronize: fn(Raw) -> HipError;
    hipStreamBeginCapture: fn(Raw, c_int) -> HipError;
    hipStreamEndCapture: fn(Raw, *mut Raw) -> HipError;
    hipGraphInstantiate: fn(*mut Raw, Raw, *mut Raw, *mut c_char, usize) -> HipError;
    hipGraphLaunch: fn(Raw, Raw) -> HipError;
    hipGraphExecDestroy: fn(Raw) -> HipError;
    hipGraphDestroy: fn(Raw) -> HipError;
    hipEventCreate: fn(*mut Raw) -> HipError;
    hipEventRecord: fn(Raw, Raw) -> HipError;
    hipEventSynchronize: fn(Raw) -> HipError;
    hipEventElapsedTime: fn(*mut f32, Raw, Raw) -> HipError;
    hipEventDestroy: fn(Raw) -> HipError;
});

// hipMemcpyKind (HostToHost 0, HostToDevice 1, DeviceToHost 2, DeviceToDevice 3).
const MEMCPY_HOST_TO_DEVICE: c_int = 1;
const MEMCPY_DEVICE_TO_HOST: c_int = 2;
const MEMCPY_DEVICE_TO_DEVICE: c_int = 3;
// hipStreamNonBlocking, a hipStreamCreateWithFlags flag.
const STREAM_NON_BLOCKING: c_uint = 1;
// hipStreamCaptureMode (Global 0, ThreadLocal 1, Relaxed 2).
const CAPTURE_MODE_GLOBAL: c_int = 0;
const CAPTURE_MODE_THREAD_LOCAL: c_int = 1;

pub struct Hip {
    fns: HipFns,
    /// The library's runtime, for error messages.
    rt: &'static dyn Runtime,
}

macro_rules! hip {
    ($self:expr, $f:ident($($a:expr),*)) => {
        skinnylt::dl_call!($self.fns, "libamdhip64", $f($($a),*), |r| $self.rt.error_string(r))
    };
}

impl Hip {
    pub fn load(rt: &'static dyn Runtime) -> Option<Hip> {
        let (lib, _) = skinnylt::gpu::open_first(&["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"])?;
        Some(Hip { fns: HipFns::resolve(lib), rt })
    }
}

impl Harness for Hip {
    fn make_current(&self, ctx: Context) -> Result<()> {
        hip!(self, hipSetDevice(ctx.1))
    }
    fn malloc(&self, bytes: usize) -> Result<u64> {
        let mut p: *mut c_void = std::ptr::null_mut();
        hip!(self, hipMalloc(&mut p, bytes.max(16)))?;
        Ok(p as u64)
    }
    fn free(&self, p: u64) {
        let _ = hip!(self, hipFree(p as *mut c_void));
    }
    fn htod_bytes(&self, dst: u64, src: &[u8]) -> Result<()> {
        hip!(self, hipMemcpy(dst as *mut c_void, src.as_ptr().cast(), src.len(), MEMCPY_HOST_TO_DEVICE))
    }
    fn dtoh_bytes(&self, dst: &mut [u8], src: u64) -> Result<()> {
        hip!(self, hipMemcpy(dst.as_mut_ptr().cast(), src as *const c_void, dst.len(), MEMCPY_DEVICE_TO_HOST))
    }
    /// The fill runs on the null stream, which non-blocking streams do not wait
    /// for: finished before returning.
    fn memset16(&self, dst: u64, value: u16, count: usize) -> Result<()> {
        hip!(self, hipMemsetD16(dst as *mut c_void, value, count))?;
        hip!(self, hipDeviceSynchronize())
    }
    fn copy_async(&self, dst: u64, src: u64, bytes: usize, stream: Raw) -> Result<()> {
        hip!(self, hipMemcpyAsync(dst as *mut c_void, src as *const c_void, bytes, MEMCPY_DEVICE_TO_DEVICE, stream))
    }
    fn stream_create(&self) -> Result<Raw> {
        let mut s: Raw = std::ptr::null_mut();
        hip!(self, hipStreamCreateWithFlags(&mut s, STREAM_NON_BLOCKING))?;
        Ok(s)
    }
    fn stream_destroy(&self, s: Raw) {
        let _ = hip!(self, hipStreamDestroy(s));
    }
    fn sync(&self, s: Raw) -> Result<()> {
        hip!(self, hipStreamSynchronize(s))
    }
    fn device_sync(&self) -> Result<()> {
        hip!(self, hipDeviceSynchronize())
    }
    fn stream_create_blocking(&self) -> Result<Raw> {
        let mut s: Raw = std::ptr::null_mut();
        hip!(self, hipStreamCreateWithFlags(&mut s, 0))?;
        Ok(s)
    }
    fn begin_capture_global(&self, s: Raw) -> Result<()> {
        hip!(self, hipStreamBeginCapture(s, CAPTURE_MODE_GLOBAL))
    }
    fn begin_capture(&self, s: Raw) -> Result<()> {
        hip!(self, hipStreamBeginCapture(s, CAPTURE_MODE_THREAD_LOCAL))
    }
    fn end_capture(&self, s: Raw) -> Result<Raw> {
        let mut g: Raw = std::ptr::null_mut();
        hip!(self, hipStreamEndCapture(s, &mut g))?;
        let mut exec: Raw = std::ptr::null_mut();
        let inst = hip!(self, hipGraphInstantiate(&mut exec, g, std::ptr::null_mut(), std::ptr::null_mut(), 0));
        let _ = hip!(self, hipGraphDestroy(g));
        inst.map(|_| exec)
    }
    fn graph_launch(&self, exec: Raw, s: Raw) -> Result<()> {
        hip!(self, hipGraphLaunch(exec, s))
    }
    fn graph_destroy(&self, exec: Raw) {
        let _ = hip!(self, hipGraphExecDestroy(exec));
    }
    fn event(&self) -> Result<Raw> {
        let mut e: Raw = std::ptr::null_mut();
        hip!(self, hipEventCreate(&mut e))?;
        Ok(e)
    }
    fn record(&self, e: Raw, s: Raw) -> Result<()> {
        hip!(self, hipEventRecord(e, s))
    }
    fn elapsed_ms(&self, a: Raw, b: Raw) -> Result<f32> {
        hip!(self, hipEventSynchronize(b))?;
        let mut ms = 0f32;
        hip!(self, hipEventElapsedTime(&mut ms, a, b))?;
        Ok(ms)
    }
    fn event_destroy(&self, e: Raw) {
        let _ = hip!(self, hipEventDestroy(e));
    }
}
