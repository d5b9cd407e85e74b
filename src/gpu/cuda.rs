//! The CUDA driver API (`libcuda.so.1`), declared here and loaded at run time.
//!
//! skinnylt uses each device's primary context — the one the CUDA runtime (and so
//! PyTorch) makes current — so `hipStream_t` values from the application (which
//! are `CUstream`s on NVIDIA) are valid for our launches.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

use super::{rt_call, Arch, Backend, Context, DevPtr, DeviceInfo, Function, LaunchConfig, Module, Result, Runtime, TensorMap, Tile2d};

pub type CuResult = c_int;
pub type CuDevice = c_int;
pub type CuContext = *mut c_void;
pub type CuStream = *mut c_void;

// CUdevice_attribute values (cuda.h).
const ATTR_MULTIPROCESSOR_COUNT: c_int = 16;
const ATTR_L2_CACHE_SIZE: c_int = 38;
const ATTR_CC_MAJOR: c_int = 75;
const ATTR_CC_MINOR: c_int = 76;
// CUfunction_attribute.
const FUNC_ATTR_MAX_DYNAMIC_SHARED: c_int = 8;
/// `CU_STREAM_NON_BLOCKING`: no implicit synchronisation with the legacy stream.
const STREAM_NON_BLOCKING: c_uint = 1;
const FUNC_ATTR_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: c_int = 14;
// CUjit_option: error log buffer and its size.
const JIT_ERROR_LOG_BUFFER: c_int = 5;
const JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;

crate::dl_table!(pub CudaFns {
    cuInit: fn(c_uint) -> CuResult;
    cuDriverGetVersion: fn(*mut c_int) -> CuResult;
    cuGetErrorString: fn(CuResult, *mut *const c_char) -> CuResult;
    cuDeviceGetCount: fn(*mut c_int) -> CuResult;
    cuDeviceGet: fn(*mut CuDevice, c_int) -> CuResult;
    cuDeviceGetName: fn(*mut c_char, c_int, CuDevice) -> CuResult;
    cuDeviceGetAttribute: fn(*mut c_int, c_int, CuDevice) -> CuResult;
    cuDevicePrimaryCtxRetain: fn(*mut CuContext, CuDevice) -> CuResult;
    cuCtxGetCurrent: fn(*mut CuContext) -> CuResult;
    cuCtxGetDevice: fn(*mut CuDevice) -> CuResult;
    cuCtxPushCurrent_v2: fn(CuContext) -> CuResult;
    cuCtxPopCurrent_v2: fn(*mut CuContext) -> CuResult;
    cuCtxSynchronize: fn() -> CuResult;
    cuModuleLoadDataEx: fn(*mut *mut c_void, *const c_void, c_uint, *mut c_int, *mut *mut c_void) -> CuResult;
    cuModuleGetFunction: fn(*mut *mut c_void, *mut c_void, *const c_char) -> CuResult;
    cuFuncSetAttribute: fn(*mut c_void, c_int, c_int) -> CuResult;
    cuLaunchKernel: fn(*mut c_void, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CuStream, *mut *mut c_void, *mut *mut c_void) -> CuResult;
    cuLaunchKernelEx: fn(*const CuLaunchConfig, *mut c_void, *mut *mut c_void, *mut *mut c_void) -> CuResult;
    cuMemAlloc_v2: fn(*mut u64, usize) -> CuResult;
    cuMemFree_v2: fn(u64) -> CuResult;
    cuMemsetD8Async: fn(u64, u8, usize, CuStream) -> CuResult;
    cuStreamCreate: fn(*mut CuStream, c_uint) -> CuResult;
    cuStreamDestroy_v2: fn(CuStream) -> CuResult;
    cuStreamSynchronize: fn(CuStream) -> CuResult;
    cuThreadExchangeStreamCaptureMode: fn(*mut c_int) -> CuResult;
    cuTensorMapEncodeTiled: fn(*mut TensorMap, c_uint, c_uint, *mut c_void, *const u64, *const u64, *const u32, *const u32, c_uint, c_uint, c_uint, c_uint) -> CuResult;
});

// Tensor-map enums (cuda.h, CUtensorMap*): 16-bit elements (the copy moves bytes,
// so one type serves bf16 and f16), no interleave, the 128-B swizzle wgmma reads,
// 256-B L2 promotion, zero fill out of bounds.
const TENSOR_MAP_UINT16: c_uint = 1;
const TENSOR_MAP_INTERLEAVE_NONE: c_uint = 0;
const TENSOR_MAP_SWIZZLE_128B: c_uint = 3;
const TENSOR_MAP_L2_PROMOTION_256B: c_uint = 3;
const TENSOR_MAP_OOB_FILL_ZERO: c_uint = 0;

/// `CUlaunchAttribute`: id, padding to 8, a 64-byte value union.
#[repr(C)]
pub struct LaunchAttribute {
    id: c_uint,
    pad: [u8; 4],
    value: [u32; 16],
}
/// `CUlaunchConfig` (cuda.h).
#[repr(C)]
pub struct CuLaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: CuStream,
    attrs: *mut LaunchAttribute,
    num_attrs: c_uint,
}
const _: () = assert!(std::mem::size_of::<LaunchAttribute>() == 72 && std::mem::size_of::<CuLaunchConfig>() == 56);
const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: c_uint = 4;
const LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: c_uint = 6;

pub struct Cuda {
    fns: CudaFns,
    lib: &'static str,
    path: String,
    version: i32,
}

impl Cuda {
    /// Loads `libcuda.so.1` and initialises the driver; `None` without a usable GPU.
    pub fn load() -> Option<Cuda> {
        let (lib, path) = super::open_first(&["libcuda.so.1", "libcuda.so"])?;
        let c = Cuda { fns: CudaFns::resolve(lib), lib: "libcuda", path, version: 0 };
        rt_call!(&c, cuInit(0)).ok()?;
        let mut v = 0;
        rt_call!(&c, cuDriverGetVersion(&mut v)).ok()?;
        (c.device_count() > 0).then_some(Cuda { version: v, ..c })
    }

    /// Runs `f` with `ctx` current, restoring the caller's context after (cheap
    /// when it is already current, which is the usual case).
    fn with_ctx<R>(&self, ctx: Context, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let mut cur: CuContext = std::ptr::null_mut();
        rt_call!(self, cuCtxGetCurrent(&mut cur))?;
        if cur == ctx.0 {
            return f();
        }
        rt_call!(self, cuCtxPushCurrent_v2(ctx.0))?;
        let r = f();
        let mut popped: CuContext = std::ptr::null_mut();
        let _ = rt_call!(self, cuCtxPopCurrent_v2(&mut popped));
        r
    }
}

impl Runtime for Cuda {
    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn error_string(&self, r: CuResult) -> String {
        let mut p: *const c_char = std::ptr::null();
        match self.fns.cuGetErrorString {
            // SAFETY: cuGetErrorString writes a pointer to a static string.
            Some(f) if unsafe { f(r, &mut p) } == 0 && !p.is_null() => {
                // SAFETY: non-null, NUL-terminated and static (the driver's table).
                format!("{} ({r})", unsafe { CStr::from_ptr(p) }.to_string_lossy())
            }
            _ => format!("CUDA error {r}"),
        }
    }

    fn describe(&self) -> String {
        format!("CUDA driver {}.{} ({})", self.version / 1000, (self.version % 1000) / 10, self.path)
    }

    fn device_count(&self) -> i32 {
        let mut n = 0;
        rt_call!(self, cuDeviceGetCount(&mut n)).map(|_| n).unwrap_or(0)
    }

    fn current_device(&self) -> Result<i32> {
        let mut ctx: CuContext = std::ptr::null_mut();
        rt_call!(self, cuCtxGetCurrent(&mut ctx))?;
        if ctx.is_null() {
            return Ok(0);
        }
        let mut d = 0;
        rt_call!(self, cuCtxGetDevice(&mut d))?;
        Ok(d)
    }

    fn device_info(&self, ordinal: i32) -> Result<DeviceInfo> {
        let mut dev = 0;
        rt_call!(self, cuDeviceGet(&mut dev, ordinal))?;
        let attr = |a: c_int| {
            let mut v = 0;
            rt_call!(self, cuDeviceGetAttribute(&mut v, a, dev)).map(|_| v)
        };
        let name = super::device_name(|p, n| rt_call!(self, cuDeviceGetName(p, n, dev)))?;
        let (major, minor) = (attr(ATTR_CC_MAJOR)?, attr(ATTR_CC_MINOR)?);
        Ok(DeviceInfo {
            backend: Backend::Cuda,
            ordinal,
            name,
            arch_name: format!("sm_{major}{minor}"),
            // The PTX targets sm_90; the a/f feature variants of later chips differ.
            arch: (major == 9 && minor == 0).then_some(Arch::Sm90),
            units: attr(ATTR_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(ATTR_L2_CACHE_SIZE)? as u64,
        })
    }

    /// The device's primary context (retained for the life of the process).
    fn context(&self, ordinal: i32) -> Result<Context> {
        let mut dev = 0;
        rt_call!(self, cuDeviceGet(&mut dev, ordinal))?;
        let mut ctx: CuContext = std::ptr::null_mut();
        rt_call!(self, cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        Ok(Context(ctx, ordinal))
    }

    fn load_module(&self, ctx: Context, image: &[u8]) -> Result<Module> {
        if image.last() != Some(&0) {
            return Err("PTX image must be NUL-terminated".into());
        }
        self.with_ctx(ctx, || {
            let mut log = vec![0u8; 16384];
            let mut opts = [JIT_ERROR_LOG_BUFFER, JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
            let mut vals = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
            let mut m: *mut c_void = std::ptr::null_mut();
            rt_call!(self, cuModuleLoadDataEx(&mut m, image.as_ptr().cast(), 2, opts.as_mut_ptr(), vals.as_mut_ptr()))
                .map(|_| Module(m))
                .map_err(|e| {
                    let text = String::from_utf8_lossy(&log);
                    format!("{e}: {}", text.trim_end_matches('\0'))
                })
        })
    }

    fn function(&self, ctx: Context, m: Module, name: &str) -> Result<Function> {
        let cname = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
        self.with_ctx(ctx, || {
            let mut f: *mut c_void = std::ptr::null_mut();
            rt_call!(self, cuModuleGetFunction(&mut f, m.0, cname.as_ptr())).map(|_| Function(f))
        })
    }

    fn set_max_dynamic_shared(&self, ctx: Context, f: Function, bytes: u32) -> Result<()> {
        self.with_ctx(ctx, || {
            rt_call!(self, cuFuncSetAttribute(f.0, FUNC_ATTR_MAX_DYNAMIC_SHARED, bytes as c_int))?;
            // Clusters of up to 16 CTAs (tuned entries only; the fallback stays portable).
            rt_call!(self, cuFuncSetAttribute(f.0, FUNC_ATTR_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))
        })
    }

    fn alloc_zeroed(&self, ctx: Context, bytes: usize) -> Result<DevPtr> {
        self.with_ctx(ctx, || {
            let mut p = 0u64;
            rt_call!(self, cuMemAlloc_v2(&mut p, bytes.max(16)))?;
            // Zeroed on a private non-blocking stream and waited for there: no
            // device or legacy-stream synchronisation that a capture could see.
            let mut s: CuStream = std::ptr::null_mut();
            let zeroed = rt_call!(self, cuStreamCreate(&mut s, STREAM_NON_BLOCKING)).and_then(|_| {
                let r = rt_call!(self, cuMemsetD8Async(p, 0, bytes.max(16), s)).and_then(|_| rt_call!(self, cuStreamSynchronize(s)));
                let _ = rt_call!(self, cuStreamDestroy_v2(s));
                r
            });
            if let Err(e) = zeroed {
                let _ = rt_call!(self, cuMemFree_v2(p));
                return Err(e);
            }
            Ok(DevPtr(p))
        })
    }

    fn free(&self, ctx: Context, p: DevPtr) {
        let _ = self.with_ctx(ctx, || rt_call!(self, cuMemFree_v2(p.0)));
    }

    fn exchange_capture_mode(&self, mode: i32) -> Result<i32> {
        let mut m = mode;
        rt_call!(self, cuThreadExchangeStreamCaptureMode(&mut m))?;
        Ok(m)
    }

    /// Encodes a tensor map for `t` (pure host work in the driver: no allocation,
    /// no device access; the hot path calls it per launch).
    fn tensor_map_2d(&self, t: &Tile2d) -> Result<TensorMap> {
        let mut map = TensorMap([0; 16]);
        let dims = [t.cols, t.rows];
        let strides = [t.row_bytes];
        let boxes = [t.box_cols, t.box_rows];
        let steps = [1u32, 1];
        rt_call!(
            self,
            cuTensorMapEncodeTiled(
                &mut map,
                TENSOR_MAP_UINT16,
                2,
                t.base as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                steps.as_ptr(),
                TENSOR_MAP_INTERLEAVE_NONE,
                TENSOR_MAP_SWIZZLE_128B,
                TENSOR_MAP_L2_PROMOTION_256B,
                TENSOR_MAP_OOB_FILL_ZERO
            )
        )?;
        Ok(map)
    }

    /// With a cluster, as a grid of thread-block clusters; with PDL, allowed to
    /// start before the previous kernel on the stream has finished (programmatic
    /// stream serialization: the kernel's `griddepcontrol.wait` then provides the
    /// ordering). Either takes `cuLaunchKernelEx`.
    unsafe fn launch(&self, ctx: Context, f: Function, cfg: &LaunchConfig, params: &mut [*mut c_void]) -> Result<()> {
        let empty = || LaunchAttribute { id: 0, pad: [0; 4], value: [0; 16] };
        let mut attrs = [empty(), empty()];
        let mut n = 0;
        if let Some(dims) = cfg.cluster {
            attrs[n].id = LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            attrs[n].value[..3].copy_from_slice(&dims);
            n += 1;
        }
        if cfg.pdl {
            attrs[n].id = LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attrs[n].value[0] = 1;
            n += 1;
        }
        let (grid, block, stream) = (cfg.grid, cfg.block, cfg.stream.0);
        self.with_ctx(ctx, || {
            if n == 0 {
                rt_call!(
                    self,
                    cuLaunchKernel(f.0, grid[0], grid[1], grid[2], block[0], block[1], block[2], cfg.shared, stream, params.as_mut_ptr(), std::ptr::null_mut())
                )
            } else {
                let lc = CuLaunchConfig { grid, block, shared: cfg.shared, stream, attrs: attrs.as_mut_ptr(), num_attrs: n as c_uint };
                rt_call!(self, cuLaunchKernelEx(&lc, f.0, params.as_mut_ptr(), std::ptr::null_mut()))
            }
        })
    }
}
