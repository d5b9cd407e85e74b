//! A small safe client of the hipBLASLt C API, as an application would call it.
//! Every call goes through skinnylt's exported C functions (the same code the
//! shared library exports).

use std::ffi::c_void;

use skinnylt::abi::{self, *};
use skinnylt::ffi::hipblaslt as lt;
use skinnylt::route::DType;

pub fn hip_type(d: DType) -> i32 {
    skinnylt::route::hip_from_dtype(d)
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
/// opA=T, opB=N, m=N, n=M, k=K, A = W (k×m, ld ≥ K), B = x (k×n), D = y (m×n), and
/// C = D unless the epilogue reads a C of its own layout.
pub struct Linear {
    pub desc: MatmulDesc,
    pub a: MatrixLayout,
    pub b: MatrixLayout,
    pub c: MatrixLayout,
    pub d: MatrixLayout,
}

/// What a `Linear` sets beyond the plain product.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// `hipblasLtEpilogue_t` (0: leave unset, DEFAULT).
    pub epilogue: u32,
    pub bias: Option<u64>,
    /// `BIAS_DATA_TYPE`, when set.
    pub bias_type: Option<i32>,
    /// Pointer mode DEVICE: alpha and beta are device fp32 scalars.
    pub device_scalars: bool,
    /// C's leading dimension when C has a layout of its own.
    pub ldc: Option<u64>,
    /// `UNIFORM_SUMMATION_ORDER_EXT` = 1: batch invariance.
    pub uniform_order: bool,
    /// The type of C and D when it is not the operands' (fp8 operands).
    pub out: Option<DType>,
    /// `A_SCALE_POINTER` / `B_SCALE_POINTER`, with `*_SCALE_MODE = OUTER_VEC_32F`
    /// when the flag is set (a vector).
    pub a_scale: Option<(u64, bool)>,
    pub b_scale: Option<(u64, bool)>,
}

impl Linear {
    #[allow(clippy::too_many_arguments)]
    pub fn new(dtype: DType, m: u64, n: u64, k: u64, ldw: u64, ldx: u64, ldy: u64, bias: Option<u64>) -> Result<Linear, String> {
        let o = Options { epilogue: if bias.is_some() { EPILOGUE_BIAS } else { 0 }, bias, ..Options::default() };
        Linear::with_options(dtype, m, n, k, ldw, ldx, ldy, &o)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn with_options(dtype: DType, m: u64, n: u64, k: u64, ldw: u64, ldx: u64, ldy: u64, e: &Options) -> Result<Linear, String> {
        let t = hip_type(dtype);
        let null = std::ptr::null_mut();
        let mut l = Linear { desc: null, a: null, b: null, c: null, d: null };
        // SAFETY: out-parameters are fields of `l`, attribute values are locals that
        // live through each call.
        unsafe {
            ok(lt::hipblasLtMatmulDescCreate(&mut l.desc, COMPUTE_32F, R_32F), "MatmulDescCreate")?;
            let set = |attr: i32, v: &[u8]| ok(lt::hipblasLtMatmulDescSetAttribute(l.desc, attr, v.as_ptr().cast(), v.len()), "DescSetAttribute");
            set(desc_attr::TRANSA, &OP_T.to_le_bytes())?;
            set(desc_attr::TRANSB, &OP_N.to_le_bytes())?;
            if e.epilogue != 0 {
                set(desc_attr::EPILOGUE, &e.epilogue.to_le_bytes())?;
            }
            if let Some(b) = e.bias {
                set(desc_attr::BIAS_POINTER, &b.to_le_bytes())?;
            }
            if let Some(bt) = e.bias_type {
                set(desc_attr::BIAS_DATA_TYPE, &bt.to_le_bytes())?;
            }
            if e.device_scalars {
                set(desc_attr::POINTER_MODE, &POINTER_MODE_DEVICE.to_le_bytes())?;
            }
            if e.uniform_order {
                set(desc_attr::UNIFORM_SUMMATION_ORDER_EXT, &1i32.to_le_bytes())?;
            }
            for (scale, ptr_attr, mode_attr) in [(e.a_scale, desc_attr::A_SCALE_POINTER, desc_attr::A_SCALE_MODE), (e.b_scale, desc_attr::B_SCALE_POINTER, desc_attr::B_SCALE_MODE)] {
                if let Some((p, vector)) = scale {
                    set(ptr_attr, &p.to_le_bytes())?;
                    if vector {
                        set(mode_attr, &SCALE_MODE_OUTER_VEC_32F.to_le_bytes())?;
                    }
                }
            }
            let to = e.out.map_or(t, hip_type);
            ok(lt::hipblasLtMatrixLayoutCreate(&mut l.a, t, k, n, ldw as i64), "LayoutCreate A")?;
            ok(lt::hipblasLtMatrixLayoutCreate(&mut l.b, t, k, m, ldx as i64), "LayoutCreate B")?;
            ok(lt::hipblasLtMatrixLayoutCreate(&mut l.d, to, n, m, ldy as i64), "LayoutCreate D")?;
            l.c = l.d;
            if let Some(ldc) = e.ldc {
                ok(lt::hipblasLtMatrixLayoutCreate(&mut l.c, to, n, m, ldc as i64), "LayoutCreate C")?;
            }
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
            let st = lt::hipblasLtMatmulAlgoGetHeuristic(h.0, self.desc, self.a, self.b, self.c, self.d, pref, 1, result.as_mut_ptr(), &mut returned);
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
        let scalars = ((&alpha as *const f32).cast(), (&beta as *const f32).cast());
        self.run_full(h, algo, scalars, (w, x, y, y), (ws, ws_size), stream)
    }

    /// Every argument: alpha and beta as passed (host floats, or device pointers in
    /// pointer mode DEVICE), the operands (W, X, C, D), the workspace.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn run_full(
        &self,
        h: &Handle,
        algo: Option<&MatmulAlgo>,
        (alpha, beta): (*const c_void, *const c_void),
        (w, x, c, y): (u64, u64, u64, u64),
        (ws, ws_size): (u64, usize),
        stream: *mut c_void,
    ) -> Status {
        // SAFETY: this set's descriptors, scalars the caller keeps alive through the
        // call (host floats or device pointers, as its pointer mode says), device
        // pointers the caller allocated, and the caller's stream.
        unsafe {
            lt::hipblasLtMatmul(
                h.0,
                self.desc,
                alpha,
                w as *const c_void,
                self.a,
                x as *const c_void,
                self.b,
                beta,
                c as *const c_void,
                self.c,
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
            if self.c != self.d {
                lt::hipblasLtMatrixLayoutDestroy(self.c);
            }
            lt::hipblasLtMatrixLayoutDestroy(self.d);
            lt::hipblasLtMatmulDescDestroy(self.desc);
        }
    }
}
