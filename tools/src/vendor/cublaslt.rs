//! cuBLASLt through its C API (loaded with dlopen): the vendor side of
//! `skinnylt bench` / `tune` on NVIDIA.
//! Enum values: cublasLt.h, cublas_api.h and library_types.h of CUDA 12/13.

use std::ffi::c_int;

use super::{Algo, Lt, LtFns, Values};

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

impl super::Heuristic for Heuristic {
    type Algo = [u64; 8];
    const ZERO: Self = Heuristic { algo: [0; 8], workspace_size: 0, state: 0, waves: 0.0, reserved: [0; 4] };
    fn algo(&self) -> Algo {
        self.algo
    }
}

const VALUES: Values = Values {
    compute_32f: 68, // CUBLAS_COMPUTE_32F
    r_32f: 0,
    r_16f: 2,
    r_16bf: 14,
    op_n: 0,
    op_t: 1,
    desc_transa: 3,
    desc_transb: 4,
    desc_epilogue: 7,
    desc_bias_pointer: 8,
    desc_bias_data_type: 26,
    desc_a_scale_pointer: 17,
    desc_b_scale_pointer: 18,
    desc_a_scale_mode: 31,
    desc_b_scale_mode: 32,
    fp8_null_c: true,
    pref_max_workspace_bytes: 1,
};

pub type CublasLt = Lt<Heuristic>;

/// Loads `$SKINNYLT_CUBLASLT`, else libcublasLt.so.13/.12 from the loader path.
pub fn load() -> Result<CublasLt, String> {
    let mut names: Vec<String> = Vec::new();
    if let Ok(p) = std::env::var("SKINNYLT_CUBLASLT") {
        names.push(p);
    }
    names.extend(["libcublasLt.so.13".to_owned(), "libcublasLt.so.12".to_owned()]);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (lib, path) = skinnylt::gpu::open_first(&refs).ok_or("cuBLASLt not found (set SKINNYLT_CUBLASLT)")?;
    let fns = LtFns::resolve(&lib, "cublasLt");
    // SAFETY: cublasLtGetVersion takes no arguments and returns a size_t.
    let version = unsafe { lib.get::<unsafe extern "C" fn() -> usize>(b"cublasLtGetVersion\0") }.map_or(0, |f| unsafe { f() });
    let mut lt = Lt::open("cuBLASLt", "cublasLt", VALUES, fns, path, Some(lib))?;
    lt.version = version;
    Ok(lt)
}
