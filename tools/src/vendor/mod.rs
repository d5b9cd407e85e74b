//! Vendor baselines for `skinnylt bench` / `tune`, loaded at run time: cuBLASLt on
//! NVIDIA, the real hipBLASLt on AMD (found by `crate::real`, never skinnylt's own
//! exports). Both are driven the same way: the same problem as PyTorch's
//! `F.linear` (compute 32F, scale 32F, opA = T, opB = N, bias epilogue when there
//! is a bias), every one of the top-k heuristic algorithms, so the baseline is at
//! least as strong as what PyTorch gets.
//!
//! The two C APIs match call for call (`cublasLtX` / `hipblasLtX`, the same
//! arguments), so one implementation, [`Lt`], serves both: each library brings
//! its function table ([`LtFns`]), its heuristic-result type and the enum values
//! it numbers differently ([`Values`]).

pub mod cublaslt;
pub mod hipblaslt;

use std::ffi::{c_int, c_void};

use skinnylt::gpu::Backend;
use skinnylt::route::DType;

type Status = c_int;

/// A library's `MatmulHeuristicResult`, whose first field is its algo.
pub trait Heuristic: Copy {
    /// The library's `MatmulAlgo`, as `Matmul` takes it.
    type Algo;
    /// A zeroed result, to size the array the heuristic fills.
    const ZERO: Self;
    /// The algo, widened to the common storage.
    fn algo(&self) -> Algo;
}

/// Storage for any library's algo: 64 bytes, align 8 (cuBLASLt's
/// `cublasLtMatmulAlgo_t`; hipBLASLt's 24-byte algo fills the start).
pub type Algo = [u64; 8];

/// Declares [`LtFns`]: one entry per call [`Lt`] makes, named by what follows the
/// library's prefix (`cublasLt` / `hipblasLt`) in the C name.
macro_rules! lt_calls {
    ($($name:ident: fn($($arg:ty),*);)*) => {
        /// The calls [`Lt`] makes; `None` where the library lacks one.
        #[allow(non_snake_case)]
        pub struct LtFns<H: Heuristic> {
            $(pub $name: Option<unsafe extern "C" fn($($arg),*) -> Status>,)*
        }

        impl<H: Heuristic> LtFns<H> {
            /// Resolves every call as `<prefix><name>` from `lib`.
            pub fn resolve(lib: &libloading::Library, prefix: &str) -> Self {
                LtFns {
                    // SAFETY: each symbol is declared with the C signature of the
                    // library's header; `lib` stays open while the table lives
                    // (`Lt` keeps it, or it is the real hipBLASLt, never closed).
                    $($name: unsafe {
                        lib.get::<unsafe extern "C" fn($($arg),*) -> Status>(format!("{prefix}{}\0", stringify!($name)).as_bytes()).ok().map(|s| *s)
                    },)*
                }
            }
        }
    };
}

lt_calls! {
    Create: fn(*mut *mut c_void);
    Destroy: fn(*mut c_void);
    MatmulDescCreate: fn(*mut *mut c_void, c_int, c_int);
    MatmulDescDestroy: fn(*mut c_void);
    MatmulDescSetAttribute: fn(*mut c_void, c_int, *const c_void, usize);
    MatrixLayoutCreate: fn(*mut *mut c_void, c_int, u64, u64, i64);
    MatrixLayoutDestroy: fn(*mut c_void);
    MatmulPreferenceCreate: fn(*mut *mut c_void);
    MatmulPreferenceDestroy: fn(*mut c_void);
    MatmulPreferenceSetAttribute: fn(*mut c_void, c_int, *const c_void, usize);
    MatmulAlgoGetHeuristic: fn(*mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_void, *mut c_void, c_int, *mut H, *mut c_int);
    Matmul: fn(*mut c_void, *mut c_void, *const c_void, *const c_void, *mut c_void, *const c_void, *mut c_void, *const c_void, *const c_void, *mut c_void, *mut c_void, *mut c_void, *const H::Algo, *mut c_void, usize, *mut c_void);
}

/// The enum values the two libraries number differently (cublasLt.h, hipblaslt.h).
pub struct Values {
    pub compute_32f: c_int,
    pub r_32f: c_int,
    pub r_16f: c_int,
    pub r_16bf: c_int,
    pub op_n: c_int,
    pub op_t: c_int,
    pub desc_transa: c_int,
    pub desc_transb: c_int,
    pub desc_epilogue: c_int,
    pub desc_bias_pointer: c_int,
    pub desc_bias_data_type: c_int,
    pub desc_a_scale_pointer: c_int,
    pub desc_b_scale_pointer: c_int,
    /// The scale modes (both libraries: 31, 32; `OUTER_VEC_32F` is 3 in both).
    pub desc_a_scale_mode: c_int,
    pub desc_b_scale_mode: c_int,
    /// fp8 operands need C passed as null (cuBLASLt's fp8 kernels return
    /// NOT_SUPPORTED for C = D; PyTorch's scaled_mm passes null on CUDA).
    pub fp8_null_c: bool,
    pub pref_max_workspace_bytes: c_int,
}

/// One problem's descriptors: `F.linear` in BLAS terms (TN, m = N, n = M), and the
/// algorithms the heuristic returned, best first.
pub struct Problem {
    desc: *mut c_void,
    a: *mut c_void,
    b: *mut c_void,
    d: *mut c_void,
    pref: *mut c_void,
    algos: Vec<Algo>,
    /// C is passed as null (`Values::fp8_null_c` for fp8 operands, beta = 0).
    null_c: bool,
    /// beta: 0, or 1 with a C of its own (`Epilogue::beta`).
    beta: f32,
}

impl Problem {
    /// How many algorithms the heuristic returned.
    pub fn algos(&self) -> usize {
        self.algos.len()
    }
}

/// fp8 operand scales on the device, fp32: A's (W's) and B's (X's) pointers, each one
/// value, or with `outer_vec` one per row of W (output feature) and one per token
/// (`OUTER_VEC_32F`, PyTorch's row-wise `_scaled_mm`).
#[derive(Clone, Copy, Debug)]
pub struct Scales {
    pub a: u64,
    pub b: u64,
    pub outer_vec: bool,
}

/// What a problem adds to X·Wᵀ: an epilogue with its bias, and beta times a C of
/// its own. The epilogue values are hipBLASLt's (`abi::EPILOGUE_*`), which
/// cuBLASLt's `cublasLtEpilogue_t` numbers the same (BIAS 4, RELU_BIAS 6,
/// GELU_BIAS 36).
#[derive(Clone, Copy, Debug, Default)]
pub struct Epilogue {
    /// 0: none (DEFAULT).
    pub value: u32,
    /// The bias's device pointer, 0 for none.
    pub bias: u64,
    /// The bias is fp32 (`BIAS_DATA_TYPE` = R_32F), not of the output type.
    pub bias_f32: bool,
    /// 0, or 1: C (the `c` of `Vendor::matmul`) is added.
    pub beta: f32,
}

/// A vendor library as `bench` and `tune` use it.
pub trait Vendor {
    /// "cuBLASLt" or "hipBLASLt", as reports name it.
    fn name(&self) -> &'static str;
    /// The library file it was loaded from.
    fn path(&self) -> &str;
    /// The library's own version number.
    fn version(&self) -> usize;
    /// Descriptors and the top-`count` heuristic algorithms for Y[M,N] = X·Wᵀ with
    /// epilogue `e` (a bias, an activation, beta C), operands of `dtype` and an
    /// output of `out`; fp8 operands with their `scales`.
    #[allow(clippy::too_many_arguments)]
    fn problem(&self, dtype: DType, out: DType, m: u64, n: u64, k: u64, e: &Epilogue, scales: Option<Scales>, workspace: u64, count: usize) -> Result<Problem, String>;
    /// Enqueues one GEMM with algorithm `i` of `p` on `stream` (`c` is read only
    /// when the problem's beta is not 0).
    #[allow(clippy::too_many_arguments)]
    fn matmul(&self, p: &Problem, i: usize, w: u64, x: u64, c: u64, y: u64, ws: u64, ws_size: usize, stream: *mut c_void) -> Result<(), String>;
    /// Destroys `p`'s descriptors.
    fn free(&self, p: Problem);
}

/// A vendor problem that frees its descriptors on every way out of its scope, an
/// error included.
pub struct OwnedProblem<'a> {
    lt: &'a dyn Vendor,
    p: Option<Problem>,
}

impl<'a> OwnedProblem<'a> {
    pub fn new(lt: &'a dyn Vendor, p: Problem) -> OwnedProblem<'a> {
        OwnedProblem { lt, p: Some(p) }
    }
}

impl std::ops::Deref for OwnedProblem<'_> {
    type Target = Problem;
    fn deref(&self) -> &Problem {
        self.p.as_ref().expect("present until dropped")
    }
}

impl Drop for OwnedProblem<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.p.take() {
            self.lt.free(p);
        }
    }
}

/// The vendor library of a GPU runtime: cuBLASLt with CUDA, the real hipBLASLt with HIP.
pub fn for_backend(backend: Backend) -> Result<Box<dyn Vendor>, String> {
    Ok(match backend {
        Backend::Cuda => Box::new(cublaslt::load()?),
        Backend::Hip => Box::new(hipblaslt::load()?),
    })
}

/// A loaded library with one handle, for one of the two APIs.
pub struct Lt<H: Heuristic> {
    name: &'static str,
    /// The C names' prefix, for error messages.
    prefix: &'static str,
    values: Values,
    fns: LtFns<H>,
    handle: *mut c_void,
    path: String,
    version: usize,
    /// Keeps a library we opened ourselves loaded (the real hipBLASLt never closes).
    _lib: Option<libloading::Library>,
}

/// Calls one of `$s`'s functions, turning a missing symbol or a non-zero status
/// into an error. The call runs with `real::call`'s re-entrancy flag set: hipBLASLt
/// may call its own exported names, which in a process that exports skinnylt's
/// must pass straight through; for cuBLASLt the flag is inert.
macro_rules! lt {
    ($s:expr, $f:ident($($a:expr),*)) => {
        match $s.fns.$f {
            None => Err(format!("{}{} missing", $s.prefix, stringify!($f))),
            // SAFETY: every use passes arguments of the C signature declared in
            // `lt_calls!`: this library's own descriptors and handle, pointers to
            // locals that outlive the call, device pointers it never dereferences
            // on the host.
            Some(f) => match skinnylt::real::call(|| unsafe { f($($a),*) }) {
                0 => Ok(()),
                r => Err(format!("{}{} failed: status {r}", $s.prefix, stringify!($f))),
            },
        }
    };
}

impl<H: Heuristic> Lt<H> {
    /// Creates the library's handle; `version` is set by the caller (the two
    /// libraries report it differently).
    fn open(name: &'static str, prefix: &'static str, values: Values, fns: LtFns<H>, path: String, lib: Option<libloading::Library>) -> Result<Self, String> {
        let mut lt = Lt { name, prefix, values, fns, handle: std::ptr::null_mut(), path, version: 0, _lib: lib };
        let mut h = std::ptr::null_mut();
        lt!(lt, Create(&mut h))?;
        lt.handle = h;
        Ok(lt)
    }
}

// Streams are opaque runtime handles and device pointers are never dereferenced
// here: both pass straight to the library.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
impl<H: Heuristic> Vendor for Lt<H> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn path(&self) -> &str {
        &self.path
    }

    fn version(&self) -> usize {
        self.version
    }

    fn problem(&self, dtype: DType, out: DType, m: u64, n: u64, k: u64, e: &Epilogue, scales: Option<Scales>, workspace: u64, count: usize) -> Result<Problem, String> {
        let v = &self.values;
        // The data types share their numbers (hipDataType, cudaDataType).
        let (t, to) = (skinnylt::route::hip_from_dtype(dtype), skinnylt::route::hip_from_dtype(out));
        let null = std::ptr::null_mut();
        let mut p = Problem { desc: null, a: null, b: null, d: null, pref: null, algos: Vec::new(), null_c: dtype.is_fp8() && v.fp8_null_c && e.beta == 0.0, beta: e.beta };
        // On an error the descriptors made so far are freed with `p`.
        let r = (|| {
            lt!(self, MatmulDescCreate(&mut p.desc, v.compute_32f, v.r_32f))?;
            let set = |attr: c_int, bytes: &[u8]| lt!(self, MatmulDescSetAttribute(p.desc, attr, bytes.as_ptr().cast(), bytes.len()));
            set(v.desc_transa, &v.op_t.to_le_bytes())?;
            set(v.desc_transb, &v.op_n.to_le_bytes())?;
            if e.value != 0 {
                set(v.desc_epilogue, &e.value.to_le_bytes())?;
            }
            if e.bias != 0 {
                set(v.desc_bias_pointer, &e.bias.to_le_bytes())?;
            }
            if e.bias_f32 {
                set(v.desc_bias_data_type, &v.r_32f.to_le_bytes())?;
            }
            if let Some(s) = scales {
                set(v.desc_a_scale_pointer, &s.a.to_le_bytes())?;
                set(v.desc_b_scale_pointer, &s.b.to_le_bytes())?;
                if s.outer_vec {
                    set(v.desc_a_scale_mode, &skinnylt::abi::SCALE_MODE_OUTER_VEC_32F.to_le_bytes())?;
                    set(v.desc_b_scale_mode, &skinnylt::abi::SCALE_MODE_OUTER_VEC_32F.to_le_bytes())?;
                }
            }
            lt!(self, MatrixLayoutCreate(&mut p.a, t, k, n, k as i64))?;
            lt!(self, MatrixLayoutCreate(&mut p.b, t, k, m, k as i64))?;
            lt!(self, MatrixLayoutCreate(&mut p.d, to, n, m, n as i64))?;
            lt!(self, MatmulPreferenceCreate(&mut p.pref))?;
            lt!(self, MatmulPreferenceSetAttribute(p.pref, v.pref_max_workspace_bytes, (&workspace as *const u64).cast(), 8))?;
            let mut res = vec![H::ZERO; count];
            let mut got = 0;
            lt!(self, MatmulAlgoGetHeuristic(self.handle, p.desc, p.a, p.b, p.d, p.d, p.pref, count as c_int, res.as_mut_ptr(), &mut got))?;
            p.algos = res[..got.clamp(0, count as c_int) as usize].iter().map(H::algo).collect();
            Ok(())
        })();
        match r {
            Ok(()) => Ok(p),
            Err(e) => {
                self.free(p);
                Err(e)
            }
        }
    }

    fn matmul(&self, p: &Problem, i: usize, w: u64, x: u64, c: u64, y: u64, ws: u64, ws_size: usize, stream: *mut c_void) -> Result<(), String> {
        let (alpha, beta) = (1f32, p.beta);
        let c = if p.null_c { std::ptr::null() } else if beta != 0.0 { c as *const c_void } else { y as *const c_void };
        let algo: *const H::Algo = p.algos[i].as_ptr().cast();
        lt!(
            self,
            Matmul(
                self.handle,
                p.desc,
                (&alpha as *const f32).cast(),
                w as *const c_void,
                p.a,
                x as *const c_void,
                p.b,
                (&beta as *const f32).cast(),
                c,
                p.d,
                y as *mut c_void,
                p.d,
                algo,
                ws as *mut c_void,
                ws_size,
                stream
            )
        )
    }

    fn free(&self, p: Problem) {
        if !p.pref.is_null() {
            let _ = lt!(self, MatmulPreferenceDestroy(p.pref));
        }
        for l in [p.a, p.b, p.d].into_iter().filter(|l| !l.is_null()) {
            let _ = lt!(self, MatrixLayoutDestroy(l));
        }
        if !p.desc.is_null() {
            let _ = lt!(self, MatmulDescDestroy(p.desc));
        }
    }
}

impl<H: Heuristic> Drop for Lt<H> {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            let _ = lt!(self, Destroy(self.handle));
        }
    }
}
