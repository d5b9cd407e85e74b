//! Normalising a `hipblasLtMatmul` call into one GEMM problem, and the decision
//! "ours" or "forward" — a pure function of the shadowed descriptors, the pointer
//! values and the policy. Every forward carries a reason, counted per process.
//!
//! skinnylt runs a call only when every attribute is understood and supported;
//! anything else goes to the real library untouched, so nothing a user did before
//! stops working.

use crate::abi::{self, desc_attr, layout_attr};
use crate::kernels::params::{EPI_BIAS_F32, EPI_GELU, EPI_RELU, OUT_F16, SCALE_A_VEC, SCALE_B_VEC};
use crate::shadow::{DescState, LayoutState};

/// Why a call was forwarded. The discriminant indexes the per-process counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Reason {
    Disabled,
    Reentrant,
    UnknownDescriptor,
    UnknownHandle,
    NullArgument,
    UnknownAttribute,
    VersionDependent,
    Transpose,
    Order,
    Batch,
    DataType,
    ComputeType,
    ScaleType,
    Epilogue,
    BiasType,
    PointerMode,
    ScaleOrAux,
    Dimensions,
    EmptyProblem,
    TooManyTokens,
    Alignment,
    NoGpu,
    ArchUnsupported,
    TunedForward,
    PlannerForward,
    TransferForward,
    LaunchFailed,
    /// The caller passed an algo the real library produced (`SKINNYLT_ALGO`).
    CallerAlgo,
    /// C and D overlap other than as one matrix (C = D with one layout).
    Overlap,
}

impl Reason {
    pub const ALL: [Reason; 29] = [
        Reason::Disabled,
        Reason::Reentrant,
        Reason::UnknownDescriptor,
        Reason::UnknownHandle,
        Reason::NullArgument,
        Reason::UnknownAttribute,
        Reason::VersionDependent,
        Reason::Transpose,
        Reason::Order,
        Reason::Batch,
        Reason::DataType,
        Reason::ComputeType,
        Reason::ScaleType,
        Reason::Epilogue,
        Reason::BiasType,
        Reason::PointerMode,
        Reason::ScaleOrAux,
        Reason::Dimensions,
        Reason::EmptyProblem,
        Reason::TooManyTokens,
        Reason::Alignment,
        Reason::NoGpu,
        Reason::ArchUnsupported,
        Reason::TunedForward,
        Reason::PlannerForward,
        Reason::TransferForward,
        Reason::LaunchFailed,
        Reason::CallerAlgo,
        Reason::Overlap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Reason::Disabled => "disabled",
            Reason::Reentrant => "reentrant-call",
            Reason::UnknownDescriptor => "unknown-descriptor",
            Reason::UnknownHandle => "unknown-handle",
            Reason::NullArgument => "null-argument",
            Reason::UnknownAttribute => "unknown-attribute",
            Reason::VersionDependent => "version-dependent-attribute",
            Reason::Transpose => "transpose",
            Reason::Order => "order",
            Reason::Batch => "batch",
            Reason::DataType => "data-type",
            Reason::ComputeType => "compute-type",
            Reason::ScaleType => "scale-type",
            Reason::Epilogue => "epilogue",
            Reason::BiasType => "bias-type",
            Reason::PointerMode => "pointer-mode",
            Reason::ScaleOrAux => "scale-or-aux-pointer",
            Reason::Dimensions => "dimensions",
            Reason::EmptyProblem => "empty-problem",
            Reason::TooManyTokens => "too-many-tokens",
            Reason::Alignment => "alignment",
            Reason::NoGpu => "no-gpu",
            Reason::ArchUnsupported => "arch-unsupported",
            Reason::TunedForward => "tuned-forward",
            Reason::PlannerForward => "planner-forward",
            Reason::TransferForward => "transfer-forward",
            Reason::LaunchFailed => "launch-failed",
            Reason::CallerAlgo => "caller-algo",
            Reason::Overlap => "c-d-overlap",
        }
    }
}

pub use crate::tuning::schema::DType;

/// The element type for a `hipDataType`, if skinnylt runs it (as an operand; the
/// output is one of the 16-bit types).
pub fn dtype_from_hip(t: i32) -> Option<DType> {
    match t {
        abi::R_16BF => Some(DType::Bf16),
        abi::R_16F => Some(DType::F16),
        abi::R_8F_E4M3 => Some(DType::E4m3),
        abi::R_8F_E4M3_FNUZ => Some(DType::E4m3Fnuz),
        _ => None,
    }
}

/// The `hipDataType` of an element type.
pub fn hip_from_dtype(d: DType) -> i32 {
    match d {
        DType::Bf16 => abi::R_16BF,
        DType::F16 => abi::R_16F,
        DType::E4m3 => abi::R_8F_E4M3,
        DType::E4m3Fnuz => abi::R_8F_E4M3_FNUZ,
    }
}

/// Which client call pattern the problem came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `F.linear`: opA=T, opB=N, m = out features, n = tokens.
    Linear,
    /// 1-D input (`addmv`): m = 1, opA=N, opB=N, n = out features.
    Gemv,
}

/// The decode GEMM in the user's terms: `Y[M,N] = act(alpha · sW[n] · sX[t] · X[M,K] · W[N,K]ᵀ`
/// ` + beta · C[M,N] + bias[N])` (the scales are 1 unless fp8 operands have them), with W(n,k)
/// at `w + e(n·ldw + k)`, X(t,k) at `x + e(t·ldx + k)` (e = the operand type's bytes), Y(t,n)
/// at `y + 2(t·ldy + n)`, C(t,n) at `c + 2(t·ldc + n)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Problem {
    /// The operands' type (W and X).
    pub dtype: DType,
    /// The output's type (Y, C, a bias not in fp32): `dtype` for 16-bit operands.
    pub out: DType,
    pub form: Form,
    /// Tokens (the small dimension).
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub w: u64,
    pub ldw: u64,
    pub x: u64,
    pub ldx: u64,
    pub y: u64,
    pub ldy: u64,
    /// Bias pointer, 0 when none.
    pub bias: u64,
    pub alpha: f32,
    /// C, read when beta != 0 (0: not read; in pointer mode DEVICE the kernel
    /// decides from the device beta). May equal `y` (same layout).
    pub c: u64,
    pub ldc: u64,
    pub beta: f32,
    /// Device alpha and beta (pointer mode DEVICE), read by the kernel; 0 in host mode.
    pub alpha_ptr: u64,
    pub beta_ptr: u64,
    /// fp8 operand scales (device fp32: one value, or a vector with the
    /// `SCALE_*_VEC` bit in `epilogue`); 0 for none.
    pub a_scale: u64,
    pub b_scale: u64,
    /// The activation, the bias type, the scale kinds and the output type of fp8
    /// operands, as the kernels' `GemmParams::flags` bits.
    pub epilogue: i32,
    /// Every output row's bits must not depend on M or on the row's place in the
    /// batch (`UNIFORM_SUMMATION_ORDER_EXT`, or `SKINNYLT_BATCH_INVARIANT`): the
    /// plan fixes one summation order per (dtype, N, K) for every M.
    pub batch_invariant: bool,
}

impl Problem {
    /// A packed `F.linear` problem whose pointers are placeholders (0, or a
    /// non-zero bias when `bias`): for questions about routing and planning, never
    /// for a launch.
    pub fn packed(dtype: DType, m: u32, n: u32, k: u32, bias: bool) -> Problem {
        let bias = if bias { 0x100 } else { 0 };
        Problem {
            dtype,
            out: if dtype.is_fp8() { DType::Bf16 } else { dtype },
            form: Form::Linear,
            m,
            n,
            k,
            w: 0,
            ldw: k as u64,
            x: 0,
            ldx: k as u64,
            y: 0,
            ldy: n as u64,
            bias,
            alpha: 1.0,
            c: 0,
            ldc: n as u64,
            beta: 0.0,
            alpha_ptr: 0,
            beta_ptr: 0,
            a_scale: 0,
            b_scale: 0,
            epilogue: 0,
            batch_invariant: false,
        }
    }

    pub fn has_bias(&self) -> bool {
        self.bias != 0
    }

    /// How its fp8 operands are scaled: per row (and token) where either scale is a
    /// vector, else per tensor (also for 16-bit operands, which carry no scales).
    pub fn scale_kind(&self) -> crate::tuning::schema::ScaleKind {
        use crate::tuning::schema::ScaleKind;
        if self.epilogue & (SCALE_A_VEC | SCALE_B_VEC) != 0 { ScaleKind::Row } else { ScaleKind::Tensor }
    }

    /// The problem as the kernels see it: K and the operand strides in 16-bit
    /// units (`DType::per_unit`; routing made them whole), so that planning and
    /// launching are the same for every operand size, and the bytes are right.
    pub fn unit_view(&self) -> Problem {
        let u = self.dtype.per_unit();
        Problem { k: self.k / u, ldw: self.ldw / u as u64, ldx: self.ldx / u as u64, ..*self }
    }
}

/// What routing may assume about the process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    pub enabled: bool,
    pub max_m: u64,
    /// `hipblasLtGetVersion` of the real library (or of our own ABI in standalone
    /// mode); `None` while unknown.
    pub version: Option<i32>,
    /// `SKINNYLT_BATCH_INVARIANT`: every problem is batch-invariant.
    pub batch_invariant: bool,
}

/// The pointer arguments of `hipblasLtMatmul`, as integers (never dereferenced here).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pointers {
    pub a: u64,
    pub b: u64,
    pub c: u64,
    pub d: u64,
}

/// Everything `hipblasLtMatmul` passed that routing looks at.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    pub desc: Option<&'a DescState>,
    pub a: Option<&'a LayoutState>,
    pub b: Option<&'a LayoutState>,
    pub c: Option<&'a LayoutState>,
    pub d: Option<&'a LayoutState>,
    pub ptrs: Pointers,
    pub scalars: Scalars,
}

/// alpha and beta as the call passed them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalars {
    /// `*alpha` / `*beta` as host floats; `None` when the pointer was null.
    Host(Option<f32>, Option<f32>),
    /// The pointers themselves (pointer mode DEVICE: fp32 device scalars, never
    /// read on the host).
    Device(u64, u64),
}

/// hipBLASLt version ranges where attributes 102/103 mean different things.
fn versioned_102_is_scale_vector(v: i32) -> bool {
    (1000..100000).contains(&v) // ROCm 6.3 (0.10) and 6.4 (0.12)
}
fn versioned_102_is_act_arg(v: i32) -> bool {
    v >= 100100 // ROCm 7.1 (1.1) and later
}

/// Checks every matmul-descriptor attribute that was set. The operand scales are
/// read by [`scales`] for fp8 operands and must be unset otherwise.
fn check_desc_attrs(desc: &DescState, a_type: i32, fp8: bool, version: Option<i32>) -> Result<(), Reason> {
    use desc_attr::*;
    for (attr, v) in desc.attrs.iter() {
        match attr {
            // Read by name below.
            TRANSA | TRANSB | EPILOGUE | BIAS_POINTER | BIAS_DATA_TYPE | POINTER_MODE => {}
            A_SCALE_POINTER | B_SCALE_POINTER | A_SCALE_MODE | B_SCALE_MODE if fp8 => {}
            // Pointers of features we do not implement: fine only when unset (null).
            A_SCALE_POINTER | B_SCALE_POINTER | C_SCALE_POINTER | D_SCALE_POINTER
            | EPILOGUE_AUX_SCALE_POINTER | EPILOGUE_AUX_POINTER | AMAX_D_POINTER
            | FUSED_EPILOGUE => {
                if v != 0 {
                    return Err(Reason::ScaleOrAux);
                }
            }
            // Used only by AUX epilogues / batched bias, neither of which we run.
            EPILOGUE_AUX_LD | EPILOGUE_AUX_BATCH_STRIDE | EPILOGUE_AUX_DATA_TYPE
            | BIAS_BATCH_STRIDE => {}
            // SCALAR_32F is the default and means nothing without a scale pointer.
            A_SCALE_MODE | B_SCALE_MODE => {
                if v != 0 {
                    return Err(Reason::ScaleOrAux);
                }
            }
            SM_COUNT_TARGET => {
                if v != 0 {
                    return Err(Reason::UnknownAttribute);
                }
            }
            COMPUTE_INPUT_TYPE_A_EXT | COMPUTE_INPUT_TYPE_B_EXT => {
                let t = v as u32 as i32;
                if t != a_type && t != abi::DATATYPE_INVALID {
                    return Err(Reason::DataType);
                }
            }
            VERSIONED_102 | VERSIONED_103 => match version {
                // Scale vectors: read by `scales` for fp8 operands.
                Some(ver) if versioned_102_is_scale_vector(ver) => {
                    if v != 0 && !fp8 {
                        return Err(Reason::ScaleOrAux);
                    }
                }
                // Activation arguments: unused by DEFAULT and BIAS epilogues.
                Some(ver) if versioned_102_is_act_arg(ver) => {}
                _ => return Err(Reason::VersionDependent),
            },
            // Stream-K is a scheduling hint of theirs; uniform summation order is
            // read by name (batch invariance).
            STREAMK_TILE_SCHEDULING_EXT | UNIFORM_SUMMATION_ORDER_EXT => {}
            _ => return Err(Reason::UnknownAttribute),
        }
    }
    Ok(())
}

/// The fp8 operand scales the descriptor sets, as (A's pointer, B's pointer, the
/// `SCALE_*_VEC` bits): per operand none, one fp32 value (`*_SCALE_POINTER`, mode
/// `SCALAR_32F`), or one per row of op(A) / column of op(B) (mode `OUTER_VEC_32F`
/// with `*_SCALE_POINTER`, or hipBLASLt 6.3/6.4's `*_SCALE_POINTER_VEC_EXT`, 102/103).
/// Any other mode, or both forms at once, is not understood: forwarded.
fn scales(desc: &DescState, version: Option<i32>) -> Result<(u64, u64, i32), Reason> {
    use desc_attr::*;
    let get = |attr| desc.attrs.get(&attr).copied().unwrap_or(0);
    let vec_ext = version.is_some_and(versioned_102_is_scale_vector);
    let mut out = [(0u64, 0); 2];
    for (i, (ptr, mode, ext, bit)) in [(A_SCALE_POINTER, A_SCALE_MODE, VERSIONED_102, SCALE_A_VEC), (B_SCALE_POINTER, B_SCALE_MODE, VERSIONED_103, SCALE_B_VEC)].into_iter().enumerate() {
        let ext = if vec_ext { get(ext) } else { 0 };
        out[i] = match (get(mode) as u32 as i32, get(ptr), ext) {
            (abi::SCALE_MODE_SCALAR_32F, p, 0) => (p, 0),
            (abi::SCALE_MODE_SCALAR_32F, 0, v) => (v, bit),
            (abi::SCALE_MODE_OUTER_VEC_32F, p, 0) if p != 0 => (p, bit),
            _ => return Err(Reason::ScaleOrAux),
        };
    }
    Ok((out[0].0, out[1].0, out[0].1 | out[1].1))
}

/// Checks a layout's extra attributes: one column-major matrix, no offsets.
fn check_layout_attrs(l: &LayoutState) -> Result<(), Reason> {
    use layout_attr::*;
    for (attr, v) in l.attrs.iter() {
        match attr {
            BATCH_COUNT => {
                if v as u32 as i32 != 1 {
                    return Err(Reason::Batch);
                }
            }
            STRIDED_BATCH_OFFSET => {} // meaningless with one batch
            ORDER => {
                if v as u32 as i32 != abi::ORDER_COL {
                    return Err(Reason::Order);
                }
            }
            BATCH_MODE | OFFSET => {
                if v != 0 {
                    return Err(Reason::Batch);
                }
            }
            _ => return Err(Reason::UnknownAttribute),
        }
    }
    Ok(())
}

/// Column-major `rows × cols` with leading dimension `ld`: valid per BLAS rules,
/// and small enough that every element offset the kernels form, `(cols - 1) * ld +
/// rows` in 64-bit arithmetic, and its byte address fit ([`MAX_ELEMENT_OFFSET`]).
fn valid_ld(l: &LayoutState) -> bool {
    let last = l.cols.saturating_sub(1).checked_mul(l.ld as u64).and_then(|o| o.checked_add(l.rows));
    l.ld >= 1 && (l.ld as u64) >= l.rows && last.is_some_and(|o| o <= MAX_ELEMENT_OFFSET)
}

/// Largest element offset a matrix may span: 2^46 elements (128 TiB of bf16),
/// beyond any GPU's memory, far from where `i64` offsets or byte addresses wrap.
pub const MAX_ELEMENT_OFFSET: u64 = 1 << 46;

/// The routing decision: one pass over everything the call passed.
pub fn route(call: &Call<'_>, policy: &Policy) -> Result<Problem, Reason> {
    let t = prepare(call.desc, call.a, call.b, call.c, call.d, policy);
    finish(&t, call.ptrs, call.scalars)
}

/// The problem as far as descriptor state and policy fix it; pointers and scalars
/// are filled in per call by [`finish`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub dtype: DType,
    pub out: DType,
    pub a_scale: u64,
    pub b_scale: u64,
    pub form: Form,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub ldw: u64,
    pub ldx: u64,
    pub ldy: u64,
    pub ldc: u64,
    pub bias: u64,
    /// The activation and the bias type (`EPI_*` bits).
    pub epilogue: i32,
    /// alpha and beta are device pointers (pointer mode DEVICE).
    pub device_scalars: bool,
    pub batch_invariant: bool,
    /// W is the A operand (`Linear`), else B and X is A (`Gemv`).
    pub w_is_a: bool,
    /// The part of the alignment rules that does not depend on the pointers.
    pub misaligned: bool,
    pub too_many_tokens: bool,
}

/// What routing concludes from the descriptors and the policy alone, so it can be
/// kept per descriptor set and reused while nothing changes. A state rejection
/// remembers where it sits among the per-call checks: a call whose pointers or
/// scalars fail an earlier check must report that reason, as `route` always did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Template {
    /// Fails before any call value is looked at.
    Reject(Reason),
    /// Fails once C and D are known non-null.
    RejectAfterOutputs(Reason),
    /// Fails once C, D, alpha and beta pass.
    RejectAfterScalars(Reason),
    Accept(Shape),
}

/// The state half of [`route`]: every check that reads only descriptors and policy,
/// in `route`'s order.
pub fn prepare(
    desc: Option<&DescState>,
    a: Option<&LayoutState>,
    b: Option<&LayoutState>,
    c: Option<&LayoutState>,
    d: Option<&LayoutState>,
    policy: &Policy,
) -> Template {
    if !policy.enabled {
        return Template::Reject(Reason::Disabled);
    }
    let (Some(desc), Some(a), Some(b), Some(c), Some(d)) = (desc, a, b, c, d) else {
        return Template::Reject(Reason::UnknownDescriptor);
    };
    let epi = match types_and_epilogue(desc, a, b, c, d, policy) {
        Ok(v) => v,
        Err(r) => return Template::RejectAfterOutputs(r),
    };
    match shape(desc, a, b, c, d, epi, policy) {
        Ok(s) => Template::Accept(s),
        Err(r) => Template::RejectAfterScalars(r),
    }
}

/// Checks between the C/D null check and the alpha/beta checks.
fn types_and_epilogue(
    desc: &DescState,
    a: &LayoutState,
    b: &LayoutState,
    c: &LayoutState,
    d: &LayoutState,
    policy: &Policy,
) -> Result<Epilogue, Reason> {
    // Types: A = B = C = D, bf16 or f16; or A = B fp8 (the arch decides which fp8
    // runs) with C = D bf16 or f16. fp32 compute and scale.
    let dtype = dtype_from_hip(a.dtype).ok_or(Reason::DataType)?;
    let out = match dtype_from_hip(d.dtype) {
        Some(o) if !dtype.is_fp8() && o == dtype => o,
        Some(o) if dtype.is_fp8() && !o.is_fp8() => o,
        _ => return Err(Reason::DataType),
    };
    if b.dtype != a.dtype || c.dtype != d.dtype {
        return Err(Reason::DataType);
    }
    if desc.compute_type != abi::COMPUTE_32F {
        return Err(Reason::ComputeType);
    }
    if desc.scale_type != abi::R_32F {
        return Err(Reason::ScaleType);
    }
    check_desc_attrs(desc, a.dtype, dtype.is_fp8(), policy.version)?;
    let (a_scale, b_scale, scale_bits) = if dtype.is_fp8() { scales(desc, policy.version)? } else { (0, 0, 0) };
    for l in [a, b, c, d] {
        check_layout_attrs(l)?;
        if !valid_ld(l) {
            return Err(Reason::Dimensions);
        }
    }
    let device_scalars = match desc.pointer_mode() {
        abi::POINTER_MODE_HOST => false,
        abi::POINTER_MODE_DEVICE => match policy.version {
            Some(v) if v >= abi::POINTER_MODE_DEVICE_SINCE => true,
            Some(_) => return Err(Reason::PointerMode), // 0.6: a per-row alpha vector
            None => return Err(Reason::VersionDependent),
        },
        _ => return Err(Reason::PointerMode),
    };
    let (with_bias, act) = match desc.epilogue() {
        abi::EPILOGUE_DEFAULT => (false, 0),
        abi::EPILOGUE_BIAS => (true, 0),
        abi::EPILOGUE_RELU => (false, EPI_RELU),
        abi::EPILOGUE_RELU_BIAS => (true, EPI_RELU),
        abi::EPILOGUE_GELU => (false, EPI_GELU),
        abi::EPILOGUE_GELU_BIAS => (true, EPI_GELU),
        _ => return Err(Reason::Epilogue),
    };
    // hipBLASLt >= 7.1 takes activation arguments in 102/103; we run the plain
    // activations only.
    if act != 0 && policy.version.is_some_and(versioned_102_is_act_arg) {
        let set = |attr| desc.attrs.get(&attr).is_some_and(|&v| v as u32 != 0);
        if set(desc_attr::VERSIONED_102) || set(desc_attr::VERSIONED_103) {
            return Err(Reason::Epilogue);
        }
    }
    let mut epilogue = act | scale_bits | if dtype.is_fp8() && out == DType::F16 { OUT_F16 } else { 0 };
    let bias = if with_bias {
        match desc.bias_type() {
            t if t == abi::DATATYPE_INVALID || t == d.dtype => {}
            abi::R_32F => epilogue |= EPI_BIAS_F32,
            _ => return Err(Reason::BiasType),
        }
        if desc.bias_pointer() == 0 {
            return Err(Reason::NullArgument);
        }
        desc.bias_pointer()
    } else {
        0
    };
    Ok(Epilogue { dtype, out, bias, a_scale, b_scale, epilogue, device_scalars })
}

/// What [`types_and_epilogue`] accepted.
#[derive(Clone, Copy)]
struct Epilogue {
    dtype: DType,
    out: DType,
    bias: u64,
    a_scale: u64,
    b_scale: u64,
    epilogue: i32,
    device_scalars: bool,
}

/// Checks after alpha/beta: the form, the dimensions, and the state part of the
/// kernels' size and alignment rules.
#[allow(clippy::too_many_arguments)]
fn shape(
    desc: &DescState,
    a: &LayoutState,
    b: &LayoutState,
    c: &LayoutState,
    d: &LayoutState,
    epi: Epilogue,
    policy: &Policy,
) -> Result<Shape, Reason> {
    let Epilogue { dtype, out, bias, a_scale, b_scale, epilogue, device_scalars } = epi;
    let batch_invariant = policy.batch_invariant || desc.attrs.get(&desc_attr::UNIFORM_SUMMATION_ORDER_EXT).is_some_and(|&v| v as u32 != 0);
    // C (unused with beta = 0) must still describe the same m×n matrix as D.
    if c.rows != d.rows || c.cols != d.cols {
        return Err(Reason::Dimensions);
    }
    let (ta, tb) = (desc.trans_a(), desc.trans_b());
    let (s, blas_m, blas_n, k) = if ta == abi::OP_T && tb == abi::OP_N {
        // op(A) = Aᵀ with A stored k×m; B stored k×n; D is m×n.
        let (k, m, n) = (a.rows, a.cols, b.cols);
        if b.rows != k || d.rows != m || d.cols != n {
            return Err(Reason::Dimensions);
        }
        let s = Shape {
            dtype,
            out,
            a_scale,
            b_scale,
            form: Form::Linear,
            m: n as u32,
            n: m as u32,
            k: k as u32,
            ldw: a.ld as u64,
            ldx: b.ld as u64,
            ldy: d.ld as u64,
            ldc: c.ld as u64,
            bias,
            epilogue,
            device_scalars,
            batch_invariant,
            w_is_a: true,
            misaligned: false,
            too_many_tokens: false,
        };
        (s, m, n, k)
    } else if ta == abi::OP_N && tb == abi::OP_N && a.rows == 1 {
        // The gemv form: x is A (1×k), the weight is B (k×n, K contiguous), y is D (1×n).
        // hipBLASLt's bias has length rows(D) = 1 here (broadcast along n): not the
        // per-output-feature bias the kernels add.
        if bias != 0 {
            return Err(Reason::Epilogue);
        }
        // fp8 comes as F.linear (scaled_mm); its scale vectors are laid out for that form.
        if dtype.is_fp8() {
            return Err(Reason::Transpose);
        }
        let (k, n) = (a.cols, b.cols);
        if b.rows != k || d.rows != 1 || d.cols != n {
            return Err(Reason::Dimensions);
        }
        // x, y and c must be contiguous vectors.
        if a.ld != 1 || d.ld != 1 || c.ld != 1 {
            return Err(Reason::Alignment);
        }
        let s = Shape {
            dtype,
            out,
            a_scale,
            b_scale,
            form: Form::Gemv,
            m: 1,
            n: n as u32,
            k: k as u32,
            ldw: b.ld as u64,
            ldx: k,
            ldy: n,
            ldc: n,
            bias,
            epilogue,
            device_scalars,
            batch_invariant,
            w_is_a: false,
            misaligned: false,
            too_many_tokens: false,
        };
        (s, 1, n, k)
    } else {
        return Err(Reason::Transpose);
    };
    if blas_m == 0 || blas_n == 0 || k == 0 {
        return Err(Reason::EmptyProblem);
    }
    // The kernels index K blocks and split bounds in 32-bit arithmetic.
    if blas_m > u32::MAX as u64 / 2 || blas_n > u32::MAX as u64 / 2 || k > MAX_K {
        return Err(Reason::Dimensions);
    }
    // 16-byte loads along K; the pointer half of these rules is in `finish`.
    let bias_align = if s.epilogue & EPI_BIAS_F32 != 0 { 4 } else { 2 };
    let run = 16 / dtype.bytes();
    let misaligned = !s.k.is_multiple_of(run)
        || !s.ldw.is_multiple_of(run as u64)
        || (s.m > 1 && !s.ldx.is_multiple_of(run as u64))
        || !s.bias.is_multiple_of(bias_align)
        || !a_scale.is_multiple_of(4)
        || !b_scale.is_multiple_of(4);
    Ok(Shape { misaligned, too_many_tokens: s.m as u64 > policy.max_m, ..s })
}

/// The call half of [`route`]: the pointer and scalar checks, interleaved with the
/// template's verdict in `route`'s order.
#[inline]
pub fn finish(t: &Template, p: Pointers, scalars: Scalars) -> Result<Problem, Reason> {
    if let Template::Reject(r) = *t {
        return Err(r);
    }
    if p.c == 0 || p.d == 0 {
        return Err(Reason::NullArgument);
    }
    if let Template::RejectAfterOutputs(r) = *t {
        return Err(r);
    }
    let (alpha, beta, alpha_ptr, beta_ptr) = match scalars {
        Scalars::Host(Some(alpha), Some(beta)) => (alpha, beta, 0, 0),
        Scalars::Device(a, b) if a != 0 && b != 0 => (1.0, 0.0, a, b),
        _ => return Err(Reason::NullArgument),
    };
    let s = match *t {
        Template::Accept(s) => s,
        Template::RejectAfterScalars(r) | Template::Reject(r) | Template::RejectAfterOutputs(r) => return Err(r),
    };
    // The descriptor's pointer mode decides how alpha and beta are passed.
    if s.device_scalars != matches!(scalars, Scalars::Device(..)) {
        return Err(Reason::PointerMode);
    }
    let (w, x) = if s.w_is_a { (p.a, p.b) } else { (p.b, p.a) };
    if w == 0 || x == 0 {
        return Err(Reason::NullArgument);
    }
    if s.misaligned || !w.is_multiple_of(16) || !x.is_multiple_of(16) || !p.d.is_multiple_of(2) {
        return Err(Reason::Alignment);
    }
    // C is read unless beta is known to be 0 (host mode); device scalars are fp32.
    let c = if beta_ptr != 0 || beta != 0.0 { p.c } else { 0 };
    if !c.is_multiple_of(2) || !alpha_ptr.is_multiple_of(4) || !beta_ptr.is_multiple_of(4) {
        return Err(Reason::Alignment);
    }
    if c != 0 && overlap(c, s.ldc, p.d, s.ldy, s.m as u64, s.n as u64) {
        return Err(Reason::Overlap);
    }
    if s.too_many_tokens {
        return Err(Reason::TooManyTokens);
    }
    Ok(Problem {
        dtype: s.dtype,
        out: s.out,
        a_scale: s.a_scale,
        b_scale: s.b_scale,
        form: s.form,
        m: s.m,
        n: s.n,
        k: s.k,
        w,
        ldw: s.ldw,
        x,
        ldx: s.ldx,
        y: p.d,
        ldy: s.ldy,
        bias: s.bias,
        alpha,
        c,
        ldc: s.ldc,
        beta,
        alpha_ptr,
        beta_ptr,
        epilogue: s.epilogue,
        batch_invariant: s.batch_invariant,
    })
}

/// Whether C (at `c`, rows of `ldc`) and Y (at `y`, rows of `ldy`), both `m` token
/// rows of `n` elements, share memory other than as one matrix (`c == y`, one
/// leading dimension: each output reads its own C value, then writes it). Byte
/// ranges of the spans; a partial overlap could let a thread read a C value another
/// thread has already overwritten.
fn overlap(c: u64, ldc: u64, y: u64, ldy: u64, m: u64, n: u64) -> bool {
    if c == y && ldc == ldy {
        return false;
    }
    // The spans were bounded by `valid_ld` (< 2^47 bytes); a pointer so high that
    // its span would wrap the address space counts as overlapping (forwarded).
    let end = |p: u64, ld: u64| p.checked_add(2 * ((m - 1) * ld + n));
    match (end(y, ldy), end(c, ldc)) {
        (Some(y_end), Some(c_end)) => c < y_end && y < c_end,
        _ => true,
    }
}

/// Largest K the kernels take (32-bit block and split arithmetic, with margin).
pub const MAX_K: u64 = 1 << 28;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shadow::RawAttrs;
    use proptest::prelude::*;

    const POLICY: Policy = Policy { enabled: true, max_m: 128, version: Some(100202), batch_invariant: false };
    const W: u64 = 0x7000_0000;
    const X: u64 = 0x7100_0000;
    const Y: u64 = 0x7200_0000;
    const BIAS: u64 = 0x7300_0000;

    /// PyTorch's `F.linear(x[M,K], W[N,K], b)` as hipBLASLt sees it.
    struct Linear {
        desc: DescState,
        a: LayoutState,
        b: LayoutState,
        /// C's own layout, when it has one (else D's).
        c: Option<LayoutState>,
        d: LayoutState,
        scalars: Scalars,
        ptrs: Pointers,
    }

    fn linear(m: u64, n: u64, k: u64, dtype: i32, bias: bool) -> Linear {
        let mut desc = DescState::new(abi::COMPUTE_32F, abi::R_32F);
        desc.attrs.insert(desc_attr::TRANSA, abi::OP_T as u64);
        desc.attrs.insert(desc_attr::TRANSB, abi::OP_N as u64);
        if bias {
            desc.attrs.insert(desc_attr::EPILOGUE, abi::EPILOGUE_BIAS as u64);
            desc.attrs.insert(desc_attr::BIAS_POINTER, BIAS);
        }
        Linear {
            desc,
            a: LayoutState::new(dtype, k, n, k as i64),
            b: LayoutState::new(dtype, k, m, k as i64),
            c: None,
            d: LayoutState::new(dtype, n, m, n as i64),
            scalars: Scalars::Host(Some(1.0), Some(0.0)),
            ptrs: Pointers { a: W, b: X, c: Y, d: Y },
        }
    }

    impl Linear {
        fn route(&self) -> Result<Problem, Reason> {
            self.route_with(&POLICY)
        }
        fn route_with(&self, p: &Policy) -> Result<Problem, Reason> {
            let call = Call {
                desc: Some(&self.desc),
                a: Some(&self.a),
                b: Some(&self.b),
                c: Some(self.c.as_ref().unwrap_or(&self.d)),
                d: Some(&self.d),
                ptrs: self.ptrs,
                scalars: self.scalars,
            };
            route(&call, p)
        }
    }

    /// `torch._scaled_mm` as hipBLASLt sees it: fp8 A and B, a bf16/f16 D, its
    /// scales per tensor or per row (mode OUTER_VEC_32F, or 6.3/6.4's VEC_EXT).
    fn scaled_mm(m: u64, n: u64, k: u64, fp8: i32, out: i32) -> Linear {
        let mut l = linear(m, n, k, fp8, false);
        l.d = LayoutState::new(out, n, m, n as i64);
        l
    }
    const SCALE_A: u64 = 0x7400_0000;
    const SCALE_B: u64 = 0x7400_1000;

    #[test]
    fn fp8_with_its_scales_is_ours() {
        let mut l = scaled_mm(4, 2880, 4096, abi::R_8F_E4M3, abi::R_16BF);
        let p = l.route().unwrap();
        assert_eq!((p.dtype, p.out, p.a_scale, p.b_scale, p.epilogue), (DType::E4m3, DType::Bf16, 0, 0, 0));
        assert_eq!(p.unit_view().k, 2048);
        l.desc.attrs.insert(desc_attr::A_SCALE_POINTER, SCALE_A);
        l.desc.attrs.insert(desc_attr::B_SCALE_POINTER, SCALE_B);
        let p = l.route().unwrap();
        assert_eq!((p.a_scale, p.b_scale, p.epilogue), (SCALE_A, SCALE_B, 0));
        // Per row of W and per token (OUTER_VEC_32F), with an f16 output.
        l.desc.attrs.insert(desc_attr::A_SCALE_MODE, abi::SCALE_MODE_OUTER_VEC_32F as u64);
        l.desc.attrs.insert(desc_attr::B_SCALE_MODE, abi::SCALE_MODE_OUTER_VEC_32F as u64);
        l.d = LayoutState::new(abi::R_16F, 2880, 4, 2880);
        let p = l.route().unwrap();
        assert_eq!((p.out, p.epilogue), (DType::F16, SCALE_A_VEC | SCALE_B_VEC | OUT_F16));
        // gfx942's flavour is an operand type of its own.
        assert_eq!(scaled_mm(4, 2880, 4096, abi::R_8F_E4M3_FNUZ, abi::R_16BF).route().unwrap().dtype, DType::E4m3Fnuz);
        // hipBLASLt 6.3/6.4: the row-wise vectors in 102/103.
        let mut old = scaled_mm(4, 2880, 4096, abi::R_8F_E4M3, abi::R_16BF);
        old.desc.attrs.insert(desc_attr::VERSIONED_102, SCALE_A);
        old.desc.attrs.insert(desc_attr::B_SCALE_POINTER, SCALE_B);
        let v63 = Policy { version: Some(1000), ..POLICY };
        let p = old.route_with(&v63).unwrap();
        assert_eq!((p.a_scale, p.b_scale, p.epilogue), (SCALE_A, SCALE_B, SCALE_A_VEC));
    }

    #[test]
    fn fp8_forwards_what_it_does_not_understand() {
        let fwd = |f: &dyn Fn(&mut Linear)| {
            let mut l = scaled_mm(4, 2880, 4096, abi::R_8F_E4M3, abi::R_16BF);
            f(&mut l);
            l.route().unwrap_err()
        };
        // Other types: E5M2, mixed fp8, an fp8 or fp32 output.
        assert_eq!(fwd(&|l| *l = scaled_mm(4, 2880, 4096, abi::R_8F_E5M2, abi::R_16BF)), Reason::DataType);
        assert_eq!(fwd(&|l| l.b = LayoutState::new(abi::R_8F_E4M3_FNUZ, 4096, 4, 4096)), Reason::DataType);
        assert_eq!(fwd(&|l| l.d = LayoutState::new(abi::R_8F_E4M3, 2880, 4, 2880)), Reason::DataType);
        assert_eq!(fwd(&|l| l.d = LayoutState::new(abi::R_32F, 2880, 4, 2880)), Reason::DataType);
        // Block scales, a vector mode without its pointer, D/C scales, AMAX.
        assert_eq!(fwd(&|l| { l.desc.attrs.insert(desc_attr::A_SCALE_POINTER, SCALE_A); l.desc.attrs.insert(desc_attr::A_SCALE_MODE, 5); }), Reason::ScaleOrAux);
        assert_eq!(fwd(&|l| { l.desc.attrs.insert(desc_attr::B_SCALE_MODE, abi::SCALE_MODE_OUTER_VEC_32F as u64); }), Reason::ScaleOrAux);
        assert_eq!(fwd(&|l| { l.desc.attrs.insert(desc_attr::D_SCALE_POINTER, SCALE_A); }), Reason::ScaleOrAux);
        assert_eq!(fwd(&|l| { l.desc.attrs.insert(desc_attr::AMAX_D_POINTER, SCALE_A); }), Reason::ScaleOrAux);
        // A scale pointer and a 6.3 vector for one operand at once: ambiguous.
        let mut both = scaled_mm(4, 2880, 4096, abi::R_8F_E4M3, abi::R_16BF);
        both.desc.attrs.insert(desc_attr::A_SCALE_POINTER, SCALE_A);
        both.desc.attrs.insert(desc_attr::VERSIONED_102, SCALE_A);
        assert_eq!(both.route_with(&Policy { version: Some(1000), ..POLICY }).unwrap_err(), Reason::ScaleOrAux);
        // 16-byte rows: K and the strides in multiples of 16 fp8.
        assert_eq!(fwd(&|l| *l = scaled_mm(4, 2880, 4104, abi::R_8F_E4M3, abi::R_16BF)), Reason::Alignment);
        assert_eq!(fwd(&|l| l.desc.attrs.insert(desc_attr::A_SCALE_POINTER, SCALE_A + 2)), Reason::Alignment);
        // Scales on 16-bit operands stay forwarded.
        let mut bf16 = linear(4, 2880, 4096, abi::R_16BF, false);
        bf16.desc.attrs.insert(desc_attr::A_SCALE_POINTER, SCALE_A);
        assert_eq!(bf16.route().unwrap_err(), Reason::ScaleOrAux);
    }

    #[test]
    fn pytorch_linear_is_ours() {
        let p = linear(4, 2880, 4096, abi::R_16BF, true).route().unwrap();
        assert_eq!((p.m, p.n, p.k), (4, 2880, 4096));
        assert_eq!((p.w, p.ldw, p.x, p.ldx, p.y, p.ldy), (W, 4096, X, 4096, Y, 2880));
        assert_eq!(p.bias, BIAS);
        assert_eq!(p.dtype, DType::Bf16);
        assert_eq!(p.form, Form::Linear);
        let p = linear(1, 64, 7168, abi::R_16F, false).route().unwrap();
        assert_eq!((p.dtype, p.bias), (DType::F16, 0));
    }

    #[test]
    fn gemv_form_is_ours() {
        let mut desc = DescState::new(abi::COMPUTE_32F, abi::R_32F);
        desc.attrs.insert(desc_attr::TRANSA, abi::OP_N as u64);
        desc.attrs.insert(desc_attr::TRANSB, abi::OP_N as u64);
        let a = LayoutState::new(abi::R_16BF, 1, 4096, 1);
        let b = LayoutState::new(abi::R_16BF, 4096, 11008, 4096);
        let d = LayoutState::new(abi::R_16BF, 1, 11008, 1);
        let call = Call {
            desc: Some(&desc),
            a: Some(&a),
            b: Some(&b),
            c: Some(&d),
            d: Some(&d),
            ptrs: Pointers { a: X, b: W, c: Y, d: Y },
            scalars: Scalars::Host(Some(2.0), Some(0.0)),
        };
        let p = route(&call, &POLICY).unwrap();
        assert_eq!((p.form, p.m, p.n, p.k), (Form::Gemv, 1, 11008, 4096));
        assert_eq!((p.w, p.ldw, p.x, p.y), (W, 4096, X, Y));
        assert_eq!(p.alpha, 2.0);
        // A strided x is not the contiguous vector the kernels read.
        let a2 = LayoutState::new(abi::R_16BF, 1, 4096, 2);
        let call2 = Call { a: Some(&a2), ..call };
        assert_eq!(route(&call2, &POLICY), Err(Reason::Alignment));
        // With a bias the vector has length rows(D) = 1, not n: forwarded.
        let mut desc_b = desc.clone();
        desc_b.attrs.insert(desc_attr::EPILOGUE, abi::EPILOGUE_BIAS as u64);
        desc_b.attrs.insert(desc_attr::BIAS_POINTER, BIAS);
        let call3 = Call { desc: Some(&desc_b), ..call };
        assert_eq!(route(&call3, &POLICY), Err(Reason::Epilogue));
    }

    /// Leading dimensions so large that a kernel's `(i64)col * ld` offsets or byte
    /// addresses would wrap are forwarded, not launched; the largest that fits runs.
    #[test]
    fn leading_dimensions_beyond_addressable_memory_are_forwarded() {
        for ld in [1i64 << 62, i64::MAX, 1 << 45] {
            for which in 0..3 {
                let mut l = linear(8, 1024, 4096, abi::R_16BF, false);
                match which {
                    0 => l.a.ld = ld,
                    1 => l.b.ld = ld,
                    _ => l.d.ld = ld,
                }
                assert_eq!(l.route(), Err(Reason::Dimensions), "ld {ld} on operand {which}");
            }
        }
        // A weight of 1024 rows at the largest ld: (1024 - 1) * ld + 4096 ≤ 2^46.
        let mut l = linear(8, 1024, 4096, abi::R_16BF, false);
        l.a.ld = ((MAX_ELEMENT_OFFSET - 4096) / 1023) as i64 & !7;
        assert!(l.route().is_ok());
        l.a.ld = ((MAX_ELEMENT_OFFSET - 4096) / 1023 + 8) as i64 & !7;
        assert_eq!(l.route(), Err(Reason::Dimensions));
    }

    #[test]
    fn every_forward_reason_of_the_checklist() {
        let base = || linear(8, 1024, 7168, abi::R_16BF, false);
        type Mutation = Box<dyn Fn(&mut Linear)>;
        let cases: Vec<(Mutation, Reason)> = vec![
            (Box::new(|l| l.desc.compute_type = 4), Reason::ComputeType),
            (Box::new(|l| l.desc.scale_type = abi::R_16F), Reason::ScaleType),
            (Box::new(|l| l.a.dtype = abi::R_32F), Reason::DataType),
            (Box::new(|l| l.b.dtype = abi::R_16F), Reason::DataType),
            (Box::new(|l| l.d.dtype = abi::R_16F), Reason::DataType),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::TRANSB, abi::OP_T as u64); }), Reason::Transpose),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::TRANSA, abi::OP_C as u64); }), Reason::Transpose),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::TRANSA, abi::OP_N as u64); }), Reason::Transpose),
            (Box::new(|l| { l.a.attrs.insert(layout_attr::ORDER, 1); }), Reason::Order),
            (Box::new(|l| { l.a.attrs.insert(layout_attr::ORDER, 100); }), Reason::Order),
            (Box::new(|l| { l.b.attrs.insert(layout_attr::BATCH_COUNT, 2); }), Reason::Batch),
            (Box::new(|l| { l.b.attrs.insert(layout_attr::BATCH_MODE, 1); }), Reason::Batch),
            (Box::new(|l| { l.d.attrs.insert(layout_attr::OFFSET, 8); }), Reason::Batch),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 160); }), Reason::Epilogue), // GELU_AUX
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 192); }), Reason::Epilogue), // DGELU
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 256); }), Reason::Epilogue), // BGRADA
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 36); }), Reason::NullArgument),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 4); }), Reason::NullArgument),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 4); l.desc.attrs.insert(desc_attr::BIAS_POINTER, BIAS); l.desc.attrs.insert(desc_attr::BIAS_DATA_TYPE, abi::R_16F as u64); }), Reason::BiasType),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 6); l.desc.attrs.insert(desc_attr::BIAS_POINTER, BIAS + 2); l.desc.attrs.insert(desc_attr::BIAS_DATA_TYPE, abi::R_32F as u64); }), Reason::Alignment),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE, 2); l.desc.attrs.insert(desc_attr::VERSIONED_102, 1.5f32.to_bits() as u64); }), Reason::Epilogue),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::POINTER_MODE, 1); }), Reason::PointerMode),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::POINTER_MODE, 4); }), Reason::PointerMode),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::POINTER_MODE, 1); l.scalars = Scalars::Device(0x100, 0); }), Reason::NullArgument),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::POINTER_MODE, 1); l.scalars = Scalars::Device(0x100, 0x102); }), Reason::Alignment),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::A_SCALE_POINTER, 0x10); }), Reason::ScaleOrAux),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::D_SCALE_POINTER, 0x10); }), Reason::ScaleOrAux),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::AMAX_D_POINTER, 0x10); }), Reason::ScaleOrAux),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::EPILOGUE_AUX_POINTER, 0x10); }), Reason::ScaleOrAux),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::FUSED_EPILOGUE, 0x10); }), Reason::ScaleOrAux),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::A_SCALE_MODE, 3); }), Reason::ScaleOrAux),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::COMPUTE_INPUT_TYPE_A_EXT, 28); }), Reason::DataType),
            (Box::new(|l| { l.desc.attrs.insert(desc_attr::SM_COUNT_TARGET, 64); }), Reason::UnknownAttribute),
            (Box::new(|l| { l.desc.attrs.insert(77, 1); }), Reason::UnknownAttribute),
            (Box::new(|l| { l.a.attrs.insert(99, 1); }), Reason::UnknownAttribute),
            (Box::new(|l| l.scalars = Scalars::Host(Some(1.0), None)), Reason::NullArgument),
            (Box::new(|l| l.scalars = Scalars::Host(None, Some(0.0))), Reason::NullArgument),
            (Box::new(|l| l.scalars = Scalars::Device(0x100, 0x104)), Reason::PointerMode),
            (Box::new(|l| { l.scalars = Scalars::Host(Some(1.0), Some(1.0)); l.ptrs.c = Y + 3; }), Reason::Alignment),
            (Box::new(|l| { l.scalars = Scalars::Host(Some(1.0), Some(1.0)); l.ptrs.c = Y + 2; }), Reason::Overlap),
            (Box::new(|l| { l.scalars = Scalars::Host(Some(1.0), Some(1.0)); l.c = Some(LayoutState::new(abi::R_16BF, 1024, 8, 1032)); }), Reason::Overlap),
            (Box::new(|l| l.ptrs.d = 0), Reason::NullArgument),
            (Box::new(|l| l.ptrs.c = 0), Reason::NullArgument),
            (Box::new(|l| l.ptrs.a = 0), Reason::NullArgument),
            (Box::new(|l| l.b.rows = 7000), Reason::Dimensions),
            (Box::new(|l| l.d.cols = 9), Reason::Dimensions),
            (Box::new(|l| l.a.ld = 100), Reason::Dimensions),
            (Box::new(|l| { l.b.cols = 0; l.d.cols = 0; }), Reason::EmptyProblem),
            (Box::new(|l| { l.a.rows = 7170; l.a.ld = 7170; l.b.rows = 7170; l.b.ld = 7170; }), Reason::Alignment),
            (Box::new(|l| l.ptrs.a = W + 8), Reason::Alignment),
            (Box::new(|l| l.ptrs.b = X + 2), Reason::Alignment),
            (Box::new(|l| { l.a.ld = 7172; }), Reason::Alignment),
            (Box::new(|l| { l.b.cols = 129; l.d.cols = 129; }), Reason::TooManyTokens),
            (Box::new(|l| { let k = (MAX_K + 8) as i64; l.a.rows = k as u64; l.a.ld = k; l.b.rows = k as u64; l.b.ld = k; }), Reason::Dimensions),
        ];
        assert!(base().route().is_ok());
        for (i, (mutate, want)) in cases.iter().enumerate() {
            let mut l = base();
            mutate(&mut l);
            assert_eq!(l.route(), Err(*want), "case {i}");
        }
        let off = Policy { enabled: false, ..POLICY };
        assert_eq!(base().route_with(&off), Err(Reason::Disabled));
        let small = Policy { max_m: 4, ..POLICY };
        assert_eq!(base().route_with(&small), Err(Reason::TooManyTokens));
    }

    /// When a call fails several checks, the reason reported is the first in
    /// routing's order: state that makes the call meaningless, then C/D, types and
    /// descriptor attributes, then the scalars, then the shape, then the operand
    /// pointers and alignment, and the token limit last. (The memo keeps this order
    /// across its state and call halves: `Template`.)
    #[test]
    fn the_first_failing_check_names_the_reason() {
        type Mutation = fn(&mut Linear);
        let null_d: Mutation = |l| l.ptrs.d = 0;
        let f32_a: Mutation = |l| l.a.dtype = abi::R_32F;
        let beta_one: Mutation = |l| {
            if let Scalars::Host(a, _) = l.scalars {
                l.scalars = Scalars::Host(a, Some(1.0));
            }
        };
        let alpha_null: Mutation = |l| {
            if let Scalars::Host(_, b) = l.scalars {
                l.scalars = Scalars::Host(None, b);
            }
        };
        let overlap: Mutation = |l| {
            l.ptrs.c = Y + 2;
            if let Scalars::Host(a, _) = l.scalars {
                l.scalars = Scalars::Host(a, Some(1.0));
            }
        };
        let trans: Mutation = |l| {
            l.desc.attrs.insert(desc_attr::TRANSA, abi::OP_N as u64);
        };
        let empty: Mutation = |l| {
            l.b.cols = 0;
            l.d.cols = 0;
        };
        let null_w: Mutation = |l| l.ptrs.a = 0;
        let misaligned_w: Mutation = |l| l.ptrs.a = W + 8;
        let misaligned_x: Mutation = |l| l.ptrs.b = X + 2;
        let many_tokens: Mutation = |l| {
            l.b.cols = 200;
            l.d.cols = 200;
        };
        let pointer_mode: Mutation = |l| {
            l.desc.attrs.insert(desc_attr::POINTER_MODE, 1);
        };
        let batch: Mutation = |l| {
            l.b.attrs.insert(layout_attr::BATCH_COUNT, 2);
        };
        let cases: &[(&[Mutation], Reason)] = &[
            (&[f32_a, null_d], Reason::NullArgument),
            (&[f32_a, alpha_null, beta_one], Reason::DataType),
            (&[batch, pointer_mode], Reason::Batch),
            (&[pointer_mode, beta_one], Reason::PointerMode),
            (&[alpha_null, beta_one, trans], Reason::NullArgument),
            (&[overlap, trans], Reason::Transpose),
            (&[overlap, misaligned_w, many_tokens], Reason::Alignment),
            (&[overlap, many_tokens], Reason::Overlap),
            (&[trans, empty, null_w], Reason::Transpose),
            (&[empty, null_w], Reason::EmptyProblem),
            (&[null_w, misaligned_x, many_tokens], Reason::NullArgument),
            (&[misaligned_w, many_tokens], Reason::Alignment),
            (&[many_tokens], Reason::TooManyTokens),
        ];
        for (i, (mutations, want)) in cases.iter().enumerate() {
            let mut l = linear(8, 1024, 7168, abi::R_16BF, false);
            for m in mutations.iter() {
                m(&mut l);
            }
            assert_eq!(l.route(), Err(*want), "case {i}");
            // The memo's split: the state half, then the call half, agrees.
            let t = prepare(Some(&l.desc), Some(&l.a), Some(&l.b), Some(&l.d), Some(&l.d), &POLICY);
            assert_eq!(finish(&t, l.ptrs, l.scalars), Err(*want), "case {i} (template)");
        }
        let off = Policy { enabled: false, ..POLICY };
        let mut l = linear(8, 1024, 7168, abi::R_16BF, false);
        null_d(&mut l);
        assert_eq!(l.route_with(&off), Err(Reason::Disabled));
    }

    /// `addmm` (beta · C, C = D or apart), `gemm_and_bias` (RELU_BIAS, GELU_BIAS),
    /// the plain activations, an fp32 bias and device alpha/beta run on skinnylt,
    /// with exactly what the kernels need in the problem.
    #[test]
    fn epilogues_and_scalars_pytorch_uses_are_ours() {
        // beta = 1 into D itself: C is read from D.
        let mut l = linear(8, 1024, 7168, abi::R_16BF, false);
        l.scalars = Scalars::Host(Some(1.0), Some(1.0));
        let p = l.route().unwrap();
        assert_eq!((p.c, p.ldc, p.beta, p.epilogue), (Y, 1024, 1.0, 0));
        // beta = 0: C is not read, whatever it points at.
        l.scalars = Scalars::Host(Some(1.0), Some(0.0));
        l.ptrs.c = Y + 2;
        assert_eq!(l.route().unwrap().c, 0);
        // A C apart from D, with its own leading dimension.
        l.scalars = Scalars::Host(Some(0.5), Some(-2.0));
        l.ptrs.c = 0x7400_0000;
        l.c = Some(LayoutState::new(abi::R_16BF, 1024, 8, 1040));
        let p = l.route().unwrap();
        assert_eq!((p.c, p.ldc, p.alpha, p.beta), (0x7400_0000, 1040, 0.5, -2.0));
        // Every activation, with and without a bias, the bias in D's type or fp32.
        for (epilogue, bits) in [(2, EPI_RELU), (6, EPI_RELU), (32, EPI_GELU), (36, EPI_GELU), (4, 0)] {
            for (bias_type, f32_bit) in [(None, 0), (Some(abi::R_16BF), 0), (Some(abi::R_32F), EPI_BIAS_F32)] {
                let mut l = linear(8, 1024, 7168, abi::R_16BF, false);
                l.desc.attrs.insert(desc_attr::EPILOGUE, epilogue);
                let with_bias = epilogue & 4 != 0;
                if with_bias {
                    l.desc.attrs.insert(desc_attr::BIAS_POINTER, BIAS);
                }
                if let Some(t) = bias_type {
                    l.desc.attrs.insert(desc_attr::BIAS_DATA_TYPE, t as u64);
                }
                let p = l.route().unwrap();
                let want_bits = bits | if with_bias { f32_bit } else { 0 };
                assert_eq!((p.epilogue, p.bias), (want_bits, if with_bias { BIAS } else { 0 }), "epilogue {epilogue} {bias_type:?}");
            }
        }
        // Device alpha and beta: passed on, never read; C passed, the kernel decides.
        let mut l = linear(8, 1024, 7168, abi::R_16BF, true);
        l.desc.attrs.insert(desc_attr::POINTER_MODE, abi::POINTER_MODE_DEVICE as u64);
        l.scalars = Scalars::Device(0x7500_0000, 0x7500_0004);
        let p = l.route().unwrap();
        assert_eq!((p.alpha_ptr, p.beta_ptr, p.c), (0x7500_0000, 0x7500_0004, Y));
        // hipBLASLt 0.6 (ROCm 6.0) means a per-row alpha vector by 1; unknown: forward.
        assert_eq!(l.route_with(&Policy { version: Some(600), ..POLICY }), Err(Reason::PointerMode));
        assert_eq!(l.route_with(&Policy { version: None, ..POLICY }), Err(Reason::VersionDependent));
        // 6.3/6.4: 102 is a scale vector pointer, not an activation argument.
        let mut l = linear(8, 1024, 7168, abi::R_16BF, false);
        l.desc.attrs.insert(desc_attr::EPILOGUE, abi::EPILOGUE_GELU as u64);
        l.desc.attrs.insert(desc_attr::VERSIONED_102, 0);
        assert!(l.route_with(&Policy { version: Some(1200), ..POLICY }).is_ok());
        assert!(l.route().is_ok(), "an unset (zero) activation argument");
    }

    /// C and D spans: one matrix, apart, overlapping, or so high they would wrap.
    #[test]
    fn c_and_d_overlap_only_as_one_matrix() {
        assert!(!overlap(0x1000, 64, 0x1000, 64, 8, 64));
        assert!(overlap(0x1000, 72, 0x1000, 64, 8, 64));
        assert!(overlap(0x1002, 64, 0x1000, 64, 8, 64));
        assert!(!overlap(0x1000 + 2 * 8 * 64, 64, 0x1000, 64, 8, 64));
        assert!(overlap(u64::MAX - 1, 64, 0x1000, 64, 8, 64));
        assert!(overlap(0x1000, 64, u64::MAX - 1, 64, 8, 64));
    }

    /// `UNIFORM_SUMMATION_ORDER_EXT` (non-zero) or `SKINNYLT_BATCH_INVARIANT` make
    /// the problem batch-invariant; nothing else does.
    #[test]
    fn uniform_summation_order_asks_for_batch_invariance() {
        let mut l = linear(8, 1024, 7168, abi::R_16BF, false);
        assert!(!l.route().unwrap().batch_invariant);
        l.desc.attrs.insert(desc_attr::UNIFORM_SUMMATION_ORDER_EXT, 0);
        assert!(!l.route().unwrap().batch_invariant);
        l.desc.attrs.insert(desc_attr::UNIFORM_SUMMATION_ORDER_EXT, 1);
        assert!(l.route().unwrap().batch_invariant);
        let l = linear(8, 1024, 7168, abi::R_16BF, false);
        assert!(l.route_with(&Policy { batch_invariant: true, ..POLICY }).unwrap().batch_invariant);
    }

    #[test]
    fn harmless_attributes_stay_ours() {
        let mut l = linear(8, 1024, 7168, abi::R_16BF, true);
        for (attr, v) in [
            (desc_attr::A_SCALE_POINTER, 0),
            (desc_attr::EPILOGUE_AUX_LD, 64),
            (desc_attr::BIAS_DATA_TYPE, abi::R_16BF as u64),
            (desc_attr::COMPUTE_INPUT_TYPE_A_EXT, abi::R_16BF as u64),
            (desc_attr::STREAMK_TILE_SCHEDULING_EXT, 2),
            (desc_attr::UNIFORM_SUMMATION_ORDER_EXT, 1),
            (desc_attr::POINTER_MODE, 0),
        ] {
            l.desc.attrs.insert(attr, v);
        }
        l.a.attrs.insert(layout_attr::BATCH_COUNT, 1);
        l.a.attrs.insert(layout_attr::STRIDED_BATCH_OFFSET, 12345);
        l.a.attrs.insert(layout_attr::ORDER, abi::ORDER_COL as u64);
        assert!(l.route().is_ok());
    }

    #[test]
    fn attributes_102_103_follow_the_runtime_version() {
        let mut l = linear(8, 1024, 7168, abi::R_16BF, false);
        l.desc.attrs.insert(desc_attr::VERSIONED_102, 0x1234);
        // ROCm 6.3/6.4: a row-scale vector pointer → not ours.
        for v in [1000, 1201] {
            assert_eq!(l.route_with(&Policy { version: Some(v), ..POLICY }), Err(Reason::ScaleOrAux));
        }
        // ROCm >= 7.1: an activation argument, unused by DEFAULT/BIAS → ours.
        for v in [100100, 100202, 140000] {
            assert!(l.route_with(&Policy { version: Some(v), ..POLICY }).is_ok());
        }
        // Unknown or a version where 102 does not exist → forward.
        for v in [None, Some(800), Some(100000)] {
            assert_eq!(l.route_with(&Policy { version: v, ..POLICY }), Err(Reason::VersionDependent));
        }
        // A null scale vector on 6.3 is harmless.
        l.desc.attrs.insert(desc_attr::VERSIONED_102, 0);
        assert!(l.route_with(&Policy { version: Some(1000), ..POLICY }).is_ok());
    }

    #[test]
    fn unknown_descriptors_forward() {
        let l = linear(8, 1024, 7168, abi::R_16BF, false);
        let mut call = Call {
            desc: Some(&l.desc),
            a: Some(&l.a),
            b: Some(&l.b),
            c: Some(&l.d),
            d: Some(&l.d),
            ptrs: l.ptrs,
            scalars: l.scalars,
        };
        assert!(route(&call, &POLICY).is_ok());
        call.c = None;
        assert_eq!(route(&call, &POLICY), Err(Reason::UnknownDescriptor));
        call.c = Some(&l.d);
        call.desc = None;
        assert_eq!(route(&call, &POLICY), Err(Reason::UnknownDescriptor));
    }



    fn arb_attrs() -> impl Strategy<Value = RawAttrs> {
        proptest::collection::vec((0i32..110, prop_oneof![Just(0u64), Just(1), Just(4), Just(14), any::<u64>()]), 0..6)
            .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        /// Any problem routing accepts satisfies the kernels' contract, whatever the
        /// attributes and shapes thrown at it.
        #[test]
        fn accepted_problems_satisfy_the_kernel_contract(
            m in 0u64..300, n in 0u64..20000, k in 0u64..20000,
            dtype in prop_oneof![Just(abi::R_16BF), Just(abi::R_16F), Just(abi::R_32F)],
            bias in any::<bool>(),
            extra in arb_attrs(),
            lda_pad in 0i64..40, ldb_pad in 0i64..40, ldd_pad in 0i64..40,
            wa in 0u64..4, xa in 0u64..4,
        ) {
            let mut l = linear(m, n, k, dtype, bias);
            for (a, v) in extra.iter() { if l.desc.attrs.get(&a).is_none() { l.desc.attrs.insert(a, v); } }
            l.a.ld += lda_pad; l.b.ld += ldb_pad; l.d.ld += ldd_pad;
            l.ptrs.a += wa * 8; l.ptrs.b += xa * 8;
            if let Ok(p) = l.route() {
                prop_assert!(p.m >= 1 && p.m as u64 <= POLICY.max_m && p.n >= 1 && p.k >= 1);
                prop_assert_eq!(p.k % 8, 0);
                prop_assert_eq!(p.w % 16, 0);
                prop_assert_eq!(p.x % 16, 0);
                prop_assert_eq!(p.ldw % 8, 0);
                prop_assert!(p.ldw >= p.k as u64 && p.ldx >= p.k as u64 && p.ldy >= p.n as u64);
                prop_assert!(p.m == 1 || p.ldx % 8 == 0);
                prop_assert!(dtype_from_hip(dtype).is_some());
                let e = l.desc.epilogue();
                prop_assert!(e == abi::EPILOGUE_DEFAULT || e == abi::EPILOGUE_BIAS);
                prop_assert_eq!(p.has_bias(), e == abi::EPILOGUE_BIAS);
            }
        }

        /// Extents anywhere in their types' ranges, huge and negative leading
        /// dimensions included: routing never panics, and whatever it accepts spans
        /// at most `MAX_ELEMENT_OFFSET` elements per operand, so no kernel offset or
        /// address wraps.
        #[test]
        fn extreme_extents_never_reach_the_kernels(
            dims in proptest::array::uniform3(prop_oneof![1u64..300, any::<u64>(), Just(u64::MAX), Just(1u64 << 32)]),
            lds in proptest::array::uniform3(prop_oneof![Just(0i64), any::<i64>(), Just(i64::MAX), Just(i64::MIN), Just(1i64 << 62), 1i64..1 << 20]),
        ) {
            let [m, n, k] = dims;
            let mut l = linear(m, n, k, abi::R_16BF, false);
            l.a.ld = lds[0]; l.b.ld = lds[1]; l.d.ld = lds[2];
            if let Ok(p) = l.route() {
                let span = |cols: u32, ld: u64, rows: u32| (cols as u64 - 1) as u128 * ld as u128 + rows as u128;
                prop_assert!(span(p.n, p.ldw, p.k) <= MAX_ELEMENT_OFFSET as u128);
                prop_assert!(span(p.m, p.ldx, p.k) <= MAX_ELEMENT_OFFSET as u128);
                prop_assert!(span(p.m, p.ldy, p.n) <= MAX_ELEMENT_OFFSET as u128);
            }
        }

        /// Routing never looks at anything but its inputs: same call, same answer.
        #[test]
        fn routing_is_deterministic(m in 1u64..200, n in 1u64..9000, k in 1u64..9000, bias in any::<bool>()) {
            let l = linear(m, n, k * 8, abi::R_16BF, bias);
            prop_assert_eq!(l.route(), l.route());
        }
    }
}
