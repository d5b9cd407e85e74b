//! The real hipBLASLt through its C API: the vendor side of `skinnylt bench` /
//! `tune` on AMD. The library is the one `crate::real` found (RTLD_NEXT, an
//! already-loaded copy, `$SKINNYLT_REAL_LIB`, then libhipblaslt.so.1/.0), checked
//! there never to be skinnylt, and its functions come from that table, so the
//! baseline never runs through skinnylt's own exports.
//! Enum values: `skinnylt::abi` (hipblaslt.h).

use skinnylt::abi::{self, HeuristicResult, MatmulAlgo};
use skinnylt::real;

use super::{Algo, Lt, LtFns, Values};

impl super::Heuristic for HeuristicResult {
    type Algo = MatmulAlgo;
    const ZERO: Self = HeuristicResult {
        algo: MatmulAlgo { data: [0; 16], max_workspace_bytes: 0 },
        workspace_size: 0,
        state: 0,
        waves_count: 0.0,
        reserved: [0; 4],
    };
    fn algo(&self) -> Algo {
        widen(&self.algo)
    }
}

/// The 24 algo bytes at the start of the common storage, in `MatmulAlgo`'s layout
/// (16 data bytes, then `max_workspace_bytes`), so `Lt` can pass it back as one.
fn widen(a: &MatmulAlgo) -> Algo {
    let mut out = [0u64; 8];
    out[0] = u64::from_ne_bytes(std::array::from_fn(|j| a.data[j]));
    out[1] = u64::from_ne_bytes(std::array::from_fn(|j| a.data[8 + j]));
    out[2] = a.max_workspace_bytes as u64;
    out
}

const VALUES: Values = Values {
    compute_32f: abi::COMPUTE_32F,
    r_32f: abi::R_32F,
    r_16f: abi::R_16F,
    r_16bf: abi::R_16BF,
    op_n: abi::OP_N,
    op_t: abi::OP_T,
    desc_transa: abi::desc_attr::TRANSA,
    desc_transb: abi::desc_attr::TRANSB,
    desc_epilogue: abi::desc_attr::EPILOGUE,
    desc_bias_pointer: abi::desc_attr::BIAS_POINTER,
    desc_bias_data_type: abi::desc_attr::BIAS_DATA_TYPE,
    desc_a_scale_pointer: abi::desc_attr::A_SCALE_POINTER,
    desc_b_scale_pointer: abi::desc_attr::B_SCALE_POINTER,
    desc_a_scale_mode: abi::desc_attr::A_SCALE_MODE,
    desc_b_scale_mode: abi::desc_attr::B_SCALE_MODE,
    // PyTorch passes C = D on ROCm ("hipblaslt can't handle nullptr").
    fp8_null_c: false,
    pref_max_workspace_bytes: abi::pref_attr::MAX_WORKSPACE_BYTES,
};

pub type HipblasLt = Lt<HeuristicResult>;

/// The real hipBLASLt with a handle of its own; an error in standalone mode or
/// when no real library is installed.
pub fn load() -> Result<HipblasLt, String> {
    let lib = skinnylt::process::get().real_lib().ok_or(
        "no real hipBLASLt found: install ROCm's libhipblaslt (libhipblaslt.so.1 or .so.0 on the loader path), or set SKINNYLT_REAL_LIB; SKINNYLT_STANDALONE must be unset",
    )?;
    let r = &lib.fns;
    let fns = LtFns {
        Create: r.hipblasLtCreate,
        Destroy: r.hipblasLtDestroy,
        MatmulDescCreate: r.hipblasLtMatmulDescCreate,
        MatmulDescDestroy: r.hipblasLtMatmulDescDestroy,
        MatmulDescSetAttribute: r.hipblasLtMatmulDescSetAttribute,
        MatrixLayoutCreate: r.hipblasLtMatrixLayoutCreate,
        MatrixLayoutDestroy: r.hipblasLtMatrixLayoutDestroy,
        MatmulPreferenceCreate: r.hipblasLtMatmulPreferenceCreate,
        MatmulPreferenceDestroy: r.hipblasLtMatmulPreferenceDestroy,
        MatmulPreferenceSetAttribute: r.hipblasLtMatmulPreferenceSetAttribute,
        MatmulAlgoGetHeuristic: r.hipblasLtMatmulAlgoGetHeuristic,
        Matmul: r.hipblasLtMatmul,
    };
    let mut lt = Lt::open("hipBLASLt", "hipblasLt", VALUES, fns, lib.path.clone(), None)?;
    // MAJOR * 100000 + MINOR * 100 + PATCH; 0 when the call fails.
    let mut v = 0i32;
    // SAFETY: the library's own handle and a writable local.
    let ok = r.hipblasLtGetVersion.is_some_and(|f| real::call(|| unsafe { f(lt.handle, &mut v) }) == abi::STATUS_SUCCESS);
    lt.version = if ok { v.max(0) as usize } else { 0 };
    Ok(lt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widened_algo_has_matmul_algo_layout() {
        let a = MatmulAlgo { data: std::array::from_fn(|i| 0xA0 + i as u8), max_workspace_bytes: 0x1234_5678 };
        let w = widen(&a);
        // Read back through the pointer `Lt::matmul` hands to hipblasLtMatmul.
        // SAFETY: 64 bytes, aligned to 8, hold a 24-byte MatmulAlgo (align 8).
        let back = unsafe { *(w.as_ptr() as *const MatmulAlgo) };
        assert_eq!(back, a);
        assert_eq!(&w[3..], &[0; 5]);
    }
}
