//! cuBLASLt through its C API (loaded with dlopen), for the vendor side of
//! `skinnylt bench` / `tune`: the same problem, every one of the top-8 heuristic
//! algorithms, so the baseline is at least as strong as what PyTorch gets.
//! Enum values: cublasLt.h (research/hipblaslt_api.md §2, cuBLASLt columns).

use std::ffi::{c_int, c_void};

use crate::gpu::dl_table;
use crate::route::DType;

type Status = c_int;
const COMPUTE_32F: c_int = 68;
const R_32F: c_int = 0;
const OP_N: c_int = 0;
const OP_T: c_int = 1;
const DESC_TRANSA: c_int = 3;
const DESC_TRANSB: c_int = 4;
const DESC_EPILOGUE: c_int = 7;
const DESC_BIAS_POINTER: c_int = 8;
const EPILOGUE_BIAS: u32 = 4;
const PREF_MAX_WORKSPACE_BYTES: c_int = 1;

/// `cublasLtMatmulHeuristicResult_t`: 64-byte algo + workspace + state + waves + reserved.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Heuristic {
    pub algo: [u64; 8],
    pub workspace_size: usize,
    pub state: c_int,
    pub waves: f32,
    pub reserved: [c_int; 4],
}
const _: () = assert!(std::mem::size_of::<Heuristic>() == 96);

dl_table!(CublasLtFns {
    cublasLtCreate: fn(*mut *mut c_void) -> Status;
    cublasLtDestroy: fn(*mut c_void) -> Status;
    cublasLtGetVersion: fn() -> usize;
    cublasLtMatmulDescCreate: fn(*mut *mut c_void, c_int, c_int) -> Status;
    cublasLtMatmulDescDestroy: fn(*mut c_void) -> Status;
    cublasLtMatmulDescSetAttribute: fn(*mut c_void, c_int, *const c_void, usize) -> Status;
    cublasLtMatrixLayoutCreate: fn(*mut *mut c_void, c_int, u64, u64, i64) -> Status;
    cublasLtMatrixLayoutDestroy: fn(*mut c_void) -> Status;
    cublasLtMatmulPreferenceCreate: fn(*mut *mut c_void) -> Status;
    cublasLtMatmulPreferenceDestroy: fn(*mut c_void) -> Status;
    cublasLtMatmulPreferenceSetAttribute: fn(*mut c_void, c_int, *const c_void, usize) -> Status;
    cublasLtMatmulAlgoGetHeuristic: fn(*mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_void, c_int, *mut Heuristic, *mut c_int) -> Status;
    cublasLtMatmul: fn(*mut c_void, *mut c_void, *const c_void, *const c_void, *mut c_void, *const c_void, *mut c_void, *const c_void, *const c_void, *mut c_void, *mut c_void, *mut c_void, *const c_void, *mut c_void, usize, *mut c_void) -> Status;
});

pub struct CublasLt {
    fns: CublasLtFns,
    handle: *mut c_void,
    pub path: String,
}

macro_rules! lt {
    ($s:expr, $f:ident($($a:expr),*)) => {
        match $s.fns.$f {
            None => Err(format!("{} missing", stringify!($f))),
            Some(f) => match unsafe { f($($a),*) } { 0 => Ok(()), r => Err(format!("{} failed: status {r}", stringify!($f))) },
        }
    };
}

/// One problem's descriptors: `F.linear` in cuBLASLt's terms (TN, m = N, n = M).
pub struct LtProblem {
    desc: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    d: *mut c_void,
    pref: *mut c_void,
    pub algos: Vec<Heuristic>,
}

impl CublasLt {
    /// Loads `$SKINNYLT_CUBLASLT`, else libcublasLt.so.13/.12 from the loader path.
    pub fn load() -> Result<CublasLt, String> {
        let mut names: Vec<String> = Vec::new();
        if let Ok(p) = std::env::var("SKINNYLT_CUBLASLT") {
            names.push(p);
        }
        names.extend(["libcublasLt.so.13".to_owned(), "libcublasLt.so.12".to_owned()]);
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let (lib, path) = crate::gpu::open_first(&refs).ok_or("cuBLASLt not found (set SKINNYLT_CUBLASLT)")?;
        let mut c = CublasLt { fns: CublasLtFns::resolve(lib), handle: std::ptr::null_mut(), path };
        let mut h = std::ptr::null_mut();
        lt!(c, cublasLtCreate(&mut h))?;
        c.handle = h;
        Ok(c)
    }

    pub fn version(&self) -> usize {
        self.fns.cublasLtGetVersion.map_or(0, |f| unsafe { f() })
    }

    /// Descriptors and the top-`count` heuristic algorithms for Y[M,N] = X·Wᵀ (+bias).
    #[allow(clippy::too_many_arguments)]
    pub fn problem(&self, dtype: DType, m: u64, n: u64, k: u64, bias: u64, workspace: u64, count: usize) -> Result<LtProblem, String> {
        let t = if dtype == DType::Bf16 { 14 } else { 2 };
        let mut p = LtProblem { desc: std::ptr::null_mut(), a: std::ptr::null_mut(), b: std::ptr::null_mut(), d: std::ptr::null_mut(), pref: std::ptr::null_mut(), algos: Vec::new() };
        lt!(self, cublasLtMatmulDescCreate(&mut p.desc, COMPUTE_32F, R_32F))?;
        let set = |attr: c_int, v: &[u8]| lt!(self, cublasLtMatmulDescSetAttribute(p.desc, attr, v.as_ptr().cast(), v.len()));
        set(DESC_TRANSA, &OP_T.to_le_bytes())?;
        set(DESC_TRANSB, &OP_N.to_le_bytes())?;
        if bias != 0 {
            set(DESC_EPILOGUE, &EPILOGUE_BIAS.to_le_bytes())?;
            set(DESC_BIAS_POINTER, &bias.to_le_bytes())?;
        }
        lt!(self, cublasLtMatrixLayoutCreate(&mut p.a, t, k, n, k as i64))?;
        lt!(self, cublasLtMatrixLayoutCreate(&mut p.b, t, k, m, k as i64))?;
        lt!(self, cublasLtMatrixLayoutCreate(&mut p.d, t, n, m, n as i64))?;
        lt!(self, cublasLtMatmulPreferenceCreate(&mut p.pref))?;
        lt!(self, cublasLtMatmulPreferenceSetAttribute(p.pref, PREF_MAX_WORKSPACE_BYTES, (&workspace as *const u64).cast(), 8))?;
        let mut res = vec![Heuristic { algo: [0; 8], workspace_size: 0, state: 0, waves: 0.0, reserved: [0; 4] }; count];
        let mut got = 0;
        lt!(self, cublasLtMatmulAlgoGetHeuristic(self.handle, p.desc, p.a, p.b, p.d, p.d, p.pref, count as c_int, res.as_mut_ptr(), &mut got))?;
        res.truncate(got.max(0) as usize);
        p.algos = res;
        Ok(p)
    }

    /// Enqueues one GEMM with algorithm `i` of `p` on `stream` (an opaque driver
    /// handle, passed through; device pointers are never dereferenced here).
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    #[allow(clippy::too_many_arguments)]
    pub fn matmul(&self, p: &LtProblem, i: usize, w: u64, x: u64, y: u64, ws: u64, ws_size: usize, stream: *mut c_void) -> Result<(), String> {
        let (alpha, beta) = (1f32, 0f32);
        lt!(
            self,
            cublasLtMatmul(
                self.handle,
                p.desc,
                (&alpha as *const f32).cast(),
                w as *const c_void,
                p.a,
                x as *const c_void,
                p.b,
                (&beta as *const f32).cast(),
                y as *const c_void,
                p.d,
                y as *mut c_void,
                p.d,
                p.algos[i].algo.as_ptr().cast(),
                ws as *mut c_void,
                ws_size,
                stream
            )
        )
    }

    pub fn free(&self, p: LtProblem) {
        let _ = lt!(self, cublasLtMatmulPreferenceDestroy(p.pref));
        for l in [p.a, p.b, p.d] {
            let _ = lt!(self, cublasLtMatrixLayoutDestroy(l));
        }
        let _ = lt!(self, cublasLtMatmulDescDestroy(p.desc));
    }
}

impl Drop for CublasLt {
    fn drop(&mut self) {
        let _ = lt!(self, cublasLtDestroy(self.handle));
    }
}
