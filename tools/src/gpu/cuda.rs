//! The tools' CUDA driver calls (`libcuda.so.1`, the copy the library opened).

use std::ffi::{c_int, c_uint, c_void};

use skinnylt::gpu::{Context, Runtime};

use super::{Harness, Raw, Result};

type CuResult = c_int;

skinnylt::dl_table!(CudaFns {
    cuCtxSetCurrent: fn(*mut c_void) -> CuResult;
    cuCtxSynchronize: fn() -> CuResult;
    cuMemAlloc_v2: fn(*mut u64, usize) -> CuResult;
    cuMemFree_v2: fn(u64) -> CuResult;
    cuMemsetD16_v2: fn(u64, u16, usize) -> CuResult;
    cuMemcpyHtoD_v2: fn(u64, *const c_void, usize) -> CuResult;
    cuMemcpyDtoH_v2: fn(*mut c_void, u64, usize) -> CuResult;
    cuMemcpyDtoDAsync_v2: fn(u64, u64, usize, Raw) -> CuResult;
    cuStreamCreate: fn(*mut Raw, c_uint) -> CuResult;
    cuStreamDestroy_v2: fn(Raw) -> CuResult;
    cuStreamSynchronize: fn(Raw) -> CuResult;
    cuStreamBeginCapture_v2: fn(Raw, c_int) -> CuResult;
    cuStreamEndCapture: fn(Raw, *mut Raw) -> CuResult;
    cuGraphInstantiateWithFlags: fn(*mut Raw, Raw, u64) -> CuResult;
    cuGraphLaunch: fn(Raw, Raw) -> CuResult;
    cuGraphExecDestroy: fn(Raw) -> CuResult;
    cuGraphDestroy: fn(Raw) -> CuResult;
    cuEventCreate: fn(*mut Raw, c_uint) -> CuResult;
    cuEventRecord: fn(Raw, Raw) -> CuResult;
    cuEventSynchronize: fn(Raw) -> CuResult;
    cuEventElapsedTime: fn(*mut f32, Raw, Raw) -> CuResult;
    cuEventDestroy_v2: fn(Raw) -> CuResult;
});

// cuStreamCreate flags and CUstreamCaptureMode (cuda.h).
const STREAM_NON_BLOCKING: c_uint = 1;
const CAPTURE_MODE_GLOBAL: c_int = 0;
const CAPTURE_MODE_THREAD_LOCAL: c_int = 1;

pub struct Cuda {
    fns: CudaFns,
    /// The library's runtime, for error messages.
    rt: &'static dyn Runtime,
}

macro_rules! cu {
    ($self:expr, $f:ident($($a:expr),*)) => {
        skinnylt::dl_call!($self.fns, "libcuda", $f($($a),*), |r| $self.rt.error_string(r))
    };
}

impl Cuda {
    pub fn load(rt: &'static dyn Runtime) -> Option<Cuda> {
        let (lib, _) = skinnylt::gpu::open_first(&["libcuda.so.1", "libcuda.so"])?;
        Some(Cuda { fns: CudaFns::resolve(lib), rt })
    }
}

impl Harness for Cuda {
    fn make_current(&self, ctx: Context) -> Result<()> {
        cu!(self, cuCtxSetCurrent(ctx.0))
    }
    fn malloc(&self, bytes: usize) -> Result<u64> {
        let mut p = 0u64;
        cu!(self, cuMemAlloc_v2(&mut p, bytes.max(16)))?;
        Ok(p)
    }
    fn free(&self, p: u64) {
        let _ = cu!(self, cuMemFree_v2(p));
    }
    fn htod_bytes(&self, dst: u64, src: &[u8]) -> Result<()> {
        cu!(self, cuMemcpyHtoD_v2(dst, src.as_ptr().cast(), src.len()))
    }
    fn dtoh_bytes(&self, dst: &mut [u8], src: u64) -> Result<()> {
        cu!(self, cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src, dst.len()))
    }
    /// The fill runs on the legacy stream, which non-blocking streams do not wait
    /// for: finished before returning.
    fn memset16(&self, dst: u64, value: u16, count: usize) -> Result<()> {
        cu!(self, cuMemsetD16_v2(dst, value, count))?;
        cu!(self, cuCtxSynchronize())
    }
    fn copy_async(&self, dst: u64, src: u64, bytes: usize, stream: Raw) -> Result<()> {
        cu!(self, cuMemcpyDtoDAsync_v2(dst, src, bytes, stream))
    }
    fn stream_create(&self) -> Result<Raw> {
        let mut s: Raw = std::ptr::null_mut();
        cu!(self, cuStreamCreate(&mut s, STREAM_NON_BLOCKING))?;
        Ok(s)
    }
    fn stream_destroy(&self, s: Raw) {
        let _ = cu!(self, cuStreamDestroy_v2(s));
    }
    fn sync(&self, s: Raw) -> Result<()> {
        cu!(self, cuStreamSynchronize(s))
    }
    fn device_sync(&self) -> Result<()> {
        cu!(self, cuCtxSynchronize())
    }
    fn stream_create_blocking(&self) -> Result<Raw> {
        let mut s: Raw = std::ptr::null_mut();
        cu!(self, cuStreamCreate(&mut s, 0))?;
        Ok(s)
    }
    fn begin_capture_global(&self, s: Raw) -> Result<()> {
        cu!(self, cuStreamBeginCapture_v2(s, CAPTURE_MODE_GLOBAL))
    }
    fn begin_capture(&self, s: Raw) -> Result<()> {
        cu!(self, cuStreamBeginCapture_v2(s, CAPTURE_MODE_THREAD_LOCAL))
    }
    fn end_capture(&self, s: Raw) -> Result<Raw> {
        let mut g: Raw = std::ptr::null_mut();
        cu!(self, cuStreamEndCapture(s, &mut g))?;
        let mut exec: Raw = std::ptr::null_mut();
        let inst = cu!(self, cuGraphInstantiateWithFlags(&mut exec, g, 0));
        let _ = cu!(self, cuGraphDestroy(g));
        inst.map(|_| exec)
    }
    fn graph_launch(&self, exec: Raw, s: Raw) -> Result<()> {
        cu!(self, cuGraphLaunch(exec, s))
    }
    fn graph_destroy(&self, exec: Raw) {
        let _ = cu!(self, cuGraphExecDestroy(exec));
    }
    fn event(&self) -> Result<Raw> {
        let mut e: Raw = std::ptr::null_mut();
        cu!(self, cuEventCreate(&mut e, 0))?;
        Ok(e)
    }
    fn record(&self, e: Raw, s: Raw) -> Result<()> {
        cu!(self, cuEventRecord(e, s))
    }
    fn elapsed_ms(&self, a: Raw, b: Raw) -> Result<f32> {
        cu!(self, cuEventSynchronize(b))?;
        let mut ms = 0f32;
        cu!(self, cuEventElapsedTime(&mut ms, a, b))?;
        Ok(ms)
    }
    fn event_destroy(&self, e: Raw) {
        let _ = cu!(self, cuEventDestroy_v2(e));
    }
}
