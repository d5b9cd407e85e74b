//! The hipBLASLt C ABI: types, sizes and enum values, exactly as `hipblaslt.h`
//! defines them (ROCm/rocm-libraries `projects/hipblaslt/library/include/hipblaslt/hipblaslt.h`
//! for ROCm 6.0 through 7.2 and develop; statuses from ROCm/hipBLAS-common's
//! `hipblas-common.h`; `hipDataType` from HIP's `library_types.h`).
//!
//! Everything here is plain data. Enums cross the ABI as C `int`, so they are kept
//! as integer newtypes/constants: a caller may pass any value, and an unknown one
//! must be representable (and forwarded), never undefined behaviour.

use std::ffi::c_void;

/// `hipblasStatus_t` (hipblas-common.h).
pub type Status = i32;
pub const STATUS_SUCCESS: Status = 0;
pub const STATUS_NOT_INITIALIZED: Status = 1;
pub const STATUS_ALLOC_FAILED: Status = 2;
pub const STATUS_INVALID_VALUE: Status = 3;
pub const STATUS_MAPPING_ERROR: Status = 4;
pub const STATUS_EXECUTION_FAILED: Status = 5;
pub const STATUS_INTERNAL_ERROR: Status = 6;
pub const STATUS_NOT_SUPPORTED: Status = 7;
pub const STATUS_ARCH_MISMATCH: Status = 8;
pub const STATUS_HANDLE_IS_NULLPTR: Status = 9;
pub const STATUS_INVALID_ENUM: Status = 10;
pub const STATUS_UNKNOWN: Status = 11;

/// `hipblasOperation_t`.
pub const OP_N: i32 = 111;
pub const OP_T: i32 = 112;
pub const OP_C: i32 = 113;

/// `hipblasComputeType_t` values we care about (all others are forwarded).
pub const COMPUTE_32F: i32 = 2;

/// `hipDataType` values we care about.
pub const R_32F: i32 = 0;
pub const R_16F: i32 = 2;
pub const R_16BF: i32 = 14;
/// OCP FP8 E4M3 and E5M2 (`HIP_R_8F_E4M3`, `HIP_R_8F_E5M2`; CUDA uses the same numbers).
pub const R_8F_E4M3: i32 = 28;
pub const R_8F_E5M2: i32 = 29;
/// FP8 E4M3 FNUZ (`HIP_R_8F_E4M3_FNUZ`, HIP only: gfx942's format).
pub const R_8F_E4M3_FNUZ: i32 = 1000;
/// `hipblasLtMatmulMatrixScale_t`: one fp32 scale per matrix (the default) and one
/// per row of op(A) / column of op(B).
pub const SCALE_MODE_SCALAR_32F: i32 = 0;
pub const SCALE_MODE_OUTER_VEC_32F: i32 = 3;
/// `HIPBLASLT_DATATYPE_INVALID`: the value BIAS_DATA_TYPE holds until set.
pub const DATATYPE_INVALID: i32 = 255;

/// Declares an attribute enum's values with the payload size hipBLASLt copies for
/// each (`sizeof(field)`), so value and size are written once: `payload_size` is
/// `None` for an attribute we do not know, and for one whose size depends on the
/// library version (`?`).
macro_rules! attributes {
    ($($(#[$doc:meta])* $name:ident = $value:literal, $size:tt;)*) => {
        $($(#[$doc])* pub const $name: i32 = $value;)*

        pub fn payload_size(attr: i32) -> Option<usize> {
            match attr {
                $($name => attributes!(@size $size),)*
                _ => None,
            }
        }
    };
    (@size ?) => { None };
    (@size $n:literal) => { Some($n) };
}

/// `hipblasLtMatmulDescAttributes_t`: the values are stable across versions except
/// 102 and 103, whose meaning changed (see `VERSIONED_102`).
pub mod desc_attr {
    attributes! {
        TRANSA = 0, 4;
        TRANSB = 1, 4;
        EPILOGUE = 2, 4;
        BIAS_POINTER = 3, 8;
        BIAS_DATA_TYPE = 4, 4;
        A_SCALE_POINTER = 5, 8;
        B_SCALE_POINTER = 6, 8;
        C_SCALE_POINTER = 7, 8;
        D_SCALE_POINTER = 8, 8;
        EPILOGUE_AUX_SCALE_POINTER = 9, 8;
        EPILOGUE_AUX_POINTER = 10, 8;
        EPILOGUE_AUX_LD = 11, 8;
        EPILOGUE_AUX_BATCH_STRIDE = 12, 8;
        POINTER_MODE = 13, 4;
        AMAX_D_POINTER = 14, 8;
        EPILOGUE_AUX_DATA_TYPE = 22, 4;
        BIAS_BATCH_STRIDE = 23, 4;
        A_SCALE_MODE = 31, 4;
        B_SCALE_MODE = 32, 4;
        SM_COUNT_TARGET = 33, 4;
        COMPUTE_INPUT_TYPE_A_EXT = 100, 4;
        COMPUTE_INPUT_TYPE_B_EXT = 101, 4;
        /// 6.3/6.4: A_SCALE_POINTER_VEC_EXT (a pointer); >= 7.1: EPILOGUE_ACT_ARG0_EXT (a float).
        VERSIONED_102 = 102, ?;
        /// 6.3/6.4: B_SCALE_POINTER_VEC_EXT (a pointer); >= 7.1: EPILOGUE_ACT_ARG1_EXT (a float).
        VERSIONED_103 = 103, ?;
        STREAMK_TILE_SCHEDULING_EXT = 104, 4;
        UNIFORM_SUMMATION_ORDER_EXT = 105, 4;
        FUSED_EPILOGUE = 106, 8;
    }
}

/// `hipblasLtEpilogue_t` values we run ourselves (the same in every version).
pub const EPILOGUE_DEFAULT: u32 = 1;
pub const EPILOGUE_RELU: u32 = 2;
pub const EPILOGUE_BIAS: u32 = 4;
pub const EPILOGUE_RELU_BIAS: u32 = 6;
pub const EPILOGUE_GELU: u32 = 32;
pub const EPILOGUE_GELU_BIAS: u32 = 36;

/// `hipblasLtPointerMode_t`: HOST is 0 in every version; 1 is DEVICE (alpha and
/// beta are device scalars) from hipBLASLt 0.7 (ROCm 6.1) on, but
/// ALPHA_DEVICE_VECTOR_BETA_HOST in 0.6 (ROCm 6.0).
pub const POINTER_MODE_HOST: i32 = 0;
pub const POINTER_MODE_DEVICE: i32 = 1;
/// The first `hipblasLtGetVersion` (0.7.0) where 1 means DEVICE.
pub const POINTER_MODE_DEVICE_SINCE: i32 = 700;

/// `hipblasLtMatrixLayoutAttribute_t`.
pub mod layout_attr {
    attributes! {
        // Batches.
        BATCH_COUNT = 0, 4; STRIDED_BATCH_OFFSET = 1, 8;
        // The matrix.
        TYPE = 2, 4; ORDER = 3, 4; ROWS = 4, 8; COLS = 5, 8; LD = 6, 8;
        // Batches again (newer versions).
        BATCH_MODE = 7, 4; OFFSET = 8, 8;
    }
}

/// `hipblasLtOrder_t`.
pub const ORDER_COL: i32 = 0;

/// `hipblasLtMatmulPreferenceAttributes_t`.
pub mod pref_attr {
    pub const SEARCH_MODE: i32 = 0;
    pub const MAX_WORKSPACE_BYTES: i32 = 1;
}

/// Opaque handle and descriptor pointer types (the pointee is never read by us
/// unless we created it).
pub type Handle = *mut c_void;
pub type MatmulDesc = *mut c_void;
pub type MatrixLayout = *mut c_void;
pub type MatmulPreference = *mut c_void;
pub type MatrixTransformDesc = *mut c_void;
pub type FusedEpilogueDesc = *mut c_void;
pub type RmsNormDesc = *mut c_void;
/// `hipStream_t` (a `CUstream` when the runtime is CUDA).
pub type Stream = *mut c_void;

/// `hipblasLtMatmulAlgo_t`: 24 bytes, align 8.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatmulAlgo {
    pub data: [u8; 16],
    pub max_workspace_bytes: usize,
}

/// `hipblasLtMatmulHeuristicResult_t`: 56 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HeuristicResult {
    pub algo: MatmulAlgo,
    pub workspace_size: usize,
    pub state: Status,
    pub waves_count: f32,
    pub reserved: [i32; 4],
}

const _: () = assert!(std::mem::size_of::<MatmulAlgo>() == 24);
const _: () = assert!(std::mem::align_of::<MatmulAlgo>() == 8);
const _: () = assert!(std::mem::size_of::<HeuristicResult>() == 56);
const _: () = assert!(std::mem::offset_of!(HeuristicResult, workspace_size) == 24);
const _: () = assert!(std::mem::offset_of!(HeuristicResult, state) == 32);
const _: () = assert!(std::mem::offset_of!(HeuristicResult, waves_count) == 36);

/// Tags the algo bytes of skinnylt's own heuristic results, so a later
/// `hipblasLtMatmul` can recognise them; bytes 0..4 stay an `int` solution index as
/// clients expect (`getIndexFromAlgo` reads them): -1, which hipBLASLt never
/// produces (its indices are Tensile solution indices, never negative).
pub const OWN_ALGO_MAGIC: [u8; 4] = *b"SKLT";
/// The solution index of skinnylt's own algo.
pub const OWN_ALGO_INDEX: i32 = -1;

impl MatmulAlgo {
    /// skinnylt's own algo: index -1, the magic, then the kernel it plans (for
    /// logs only: a matmul plans again, as the pointers may differ).
    pub fn own(kernel: u32) -> MatmulAlgo {
        let mut algo = MatmulAlgo::default();
        algo.data[0..4].copy_from_slice(&OWN_ALGO_INDEX.to_le_bytes());
        algo.data[4..8].copy_from_slice(&OWN_ALGO_MAGIC);
        algo.data[8..12].copy_from_slice(&kernel.to_le_bytes());
        algo
    }

    /// Whether these are skinnylt's own algo bytes.
    pub fn is_own(&self) -> bool {
        self.data[0..4] == OWN_ALGO_INDEX.to_le_bytes() && self.data[4..8] == OWN_ALGO_MAGIC
    }
}

/// A readable name for a status (logs, CLI).
pub fn status_name(s: Status) -> &'static str {
    match s {
        STATUS_SUCCESS => "SUCCESS",
        STATUS_NOT_INITIALIZED => "NOT_INITIALIZED",
        STATUS_ALLOC_FAILED => "ALLOC_FAILED",
        STATUS_INVALID_VALUE => "INVALID_VALUE",
        STATUS_MAPPING_ERROR => "MAPPING_ERROR",
        STATUS_EXECUTION_FAILED => "EXECUTION_FAILED",
        STATUS_INTERNAL_ERROR => "INTERNAL_ERROR",
        STATUS_NOT_SUPPORTED => "NOT_SUPPORTED",
        STATUS_ARCH_MISMATCH => "ARCH_MISMATCH",
        STATUS_HANDLE_IS_NULLPTR => "HANDLE_IS_NULLPTR",
        STATUS_INVALID_ENUM => "INVALID_ENUM",
        _ => "UNKNOWN",
    }
}
