//! A small safe client of the hipBLASLt C API, as an application would call it.
//! Every call goes through skinnylt's exported C functions (the same code the
//! shared library exports).

use std::ffi::c_void;

use skinnylt::abi::{self, *};
use skinnylt::ffi::hipblaslt as lt;
use skinnylt::route::DType;

pub fn hip_type(d: DType) -> i32 {
    match d {
        DType::Bf16 => R_16BF,
        DType::F16 => R_16F,
    }
}

fn ok(s: Status, what: &str) -> Result<(), String> {
    if s == STATUS_SUCCESS { Ok(()) } else { Err(format!("{what}: {}", abi::status_name(s))) }
}

pub struct Handle(pub abi::Handle);

impl Handle {
    pub fn new() -> Result<Handle, String> {
        let mut h: abi::Handle = std::ptr::null_mut();
        // SAFETY: `h` is a writable local.
        ok(unsafe { lt::hipblasLtCreate(&mut h) }, "hipblasLtCreate")?;
        Ok(Handle(h))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle `new` created, destroyed once.
        unsafe { lt::hipblasLtDestroy(self.0) };
    }
}

/// The descriptors of PyTorch's `F.linear(x[M,K], W[N,K], b)` :
/// opA=T, opB=N, m=N, n=M, k=K, A = W (k×m, ld ≥ K), B = x (k×n), C = D = y (m×n).
pub struct Linear {
    pub desc: MatmulDesc,
    pub a: MatrixLayout,
    pub b: MatrixLayout,
    pub d: MatrixLayout,
}

impl Linear {
    #[allow(clippy::too_many_arguments)]
    pub fn new(dtype: DType, m: u64, n: u64, k: u64, ldw: u64, ldx: u64, ldy: u64, bias: Option<u64>) -> Result<Linear, String> {
        let t = hip_type(dtype);
        let mut l = Linear { desc: std::ptr::null_mut(), a: std::ptr::null_mut(), b: std::ptr::null_mut(), d: std::ptr::null_mut() };
        // SAFETY: out-parameters are fields of `l`, attribute values are locals that
        // live through each call.
        unsafe {
            ok(lt::hipblasLtMatmulDescCreate(&mut l.desc, COMPUTE_32F, R_32F), "MatmulDescCreate")?;
            let set = |attr: i32, v: &[u8]| ok(lt::hipblasLtMatmulDescSetAttribute(l.desc, attr, v.as_ptr().cast(), v.len()), "DescSetAttribute");
            set(desc_attr::TRANSA, &OP_T.to_le_bytes())?;
            set(desc_attr::TRANSB, &OP_N.to_le_bytes())?;
            if let Some(b) = bias {
                set(desc_attr::EPILOGUE, &EPILOGUE_BIAS.to_le_bytes())?;
                set(desc_attr::BIAS_POINTER, &b.to_le_bytes())?;
            }
            ok(lt::hipblasLtMatrixLayoutCreate(&mut l.a, t, k, n, ldw as i64), "LayoutCreate A")?;
            ok(lt::hipblasLtMatrixLayoutCreate(&mut l.b, t, k, m, ldx as i64), "LayoutCreate B")?;
            ok(lt::hipblasLtMatrixLayoutCreate(&mut l.d, t, n, m, ldy as i64), "LayoutCreate D")?;
        }
        Ok(l)
    }

    /// The first result of `hipblasLtMatmulAlgoGetHeuristic`, as AMD's sample
    /// clients and PyTorch ask for it.
    pub fn heuristic(&self, h: &Handle) -> Result<MatmulAlgo, String> {
        let mut pref: MatmulPreference = std::ptr::null_mut();
        let mut result = [HeuristicResult::default(); 1];
        let mut returned = 0;
        // SAFETY: out-parameters are locals; `result` holds the one result asked for;
        // the preference is destroyed before returning.
        unsafe {
            ok(lt::hipblasLtMatmulPreferenceCreate(&mut pref), "PreferenceCreate")?;
            let st = lt::hipblasLtMatmulAlgoGetHeuristic(h.0, self.desc, self.a, self.b, self.d, self.d, pref, 1, result.as_mut_ptr(), &mut returned);
            lt::hipblasLtMatmulPreferenceDestroy(pref);
            ok(st, "MatmulAlgoGetHeuristic")?;
        }
        if returned < 1 {
            return Err("the heuristic returned no algo".into());
        }
        Ok(result[0].algo)
    }

    /// `hipblasLtMatmul` with alpha (host), beta = 0, C = D, no algo.
    // The arguments of hipblasLtMatmul that vary per call.
    // The stream is an opaque runtime handle, passed through and never dereferenced.
    #[allow(clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]
    pub fn run(&self, h: &Handle, alpha: f32, w: u64, x: u64, y: u64, ws: u64, ws_size: usize, stream: *mut c_void) -> Status {
        self.run_algo(h, None, alpha, w, x, y, ws, ws_size, stream)
    }

    /// `run` with the caller's algo.
    #[allow(clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]
    pub fn run_algo(&self, h: &Handle, algo: Option<&MatmulAlgo>, alpha: f32, w: u64, x: u64, y: u64, ws: u64, ws_size: usize, stream: *mut c_void) -> Status {
        let beta = 0f32;
        // SAFETY: this set's descriptors, host scalars that live through the call,
        // device pointers the caller allocated, and the caller's stream.
        unsafe {
            lt::hipblasLtMatmul(
                h.0,
                self.desc,
                (&alpha as *const f32).cast(),
                w as *const c_void,
                self.a,
                x as *const c_void,
                self.b,
                (&beta as *const f32).cast(),
                y as *const c_void,
                self.d,
                y as *mut c_void,
                self.d,
                algo.map_or(std::ptr::null(), |a| a as *const MatmulAlgo),
                ws as *mut c_void,
                ws_size,
                stream,
            )
        }
    }
}

impl Drop for Linear {
    fn drop(&mut self) {
        // SAFETY: the descriptors `new` created, destroyed once.
        unsafe {
            lt::hipblasLtMatrixLayoutDestroy(self.a);
            lt::hipblasLtMatrixLayoutDestroy(self.b);
            lt::hipblasLtMatrixLayoutDestroy(self.d);
            lt::hipblasLtMatmulDescDestroy(self.desc);
        }
    }
}
