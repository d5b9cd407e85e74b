//! The single list of every C function skinnylt exports under hipBLASLt's names.
//!
//! `hipblaslt_functions!(callback)` calls `callback!` with one entry per function:
//! `kind name(arg: Type, ...) [=> implementation];`. The 24 functions every
//! hipBLASLt version has (6.0 … 7.2, develop) are of kind `api` (skinnylt implements
//! them in `crate::api`, named after `=>`) or `fwd` (matrix transforms: forwarded,
//! or NOT_SUPPORTED in standalone mode); `newer` = develop-only functions
//! (SmCountTarget, UniformSummationOrder, CheckNumericsDrain, FusedEpilogue*),
//! `extop` = `hipblaslt-ext-op.h`; both forwarded when the real library has them.
//! Every function returns `hipblasStatus_t`.

#[macro_export]
#[doc(hidden)]
macro_rules! hipblaslt_functions {
    ($cb:ident) => {
        $cb! {
            api hipblasLtGetVersion(handle: Handle, version: *mut i32) => get_version;
            api hipblasLtGetGitRevision(handle: Handle, rev: *mut c_char) => get_git_revision;
            api hipblasLtGetArchName(arch_name: *mut *mut c_char) => get_arch_name;
            api hipblasLtCreate(handle: *mut Handle) => create;
            api hipblasLtDestroy(handle: Handle) => destroy;
            api hipblasLtMatrixLayoutCreate(layout: *mut MatrixLayout, dtype: i32, rows: u64, cols: u64, ld: i64) => layout_create;
            api hipblasLtMatrixLayoutDestroy(layout: MatrixLayout) => layout_destroy;
            api hipblasLtMatrixLayoutSetAttribute(layout: MatrixLayout, attr: i32, buf: *const c_void, size: usize) => layout_set_attribute;
            api hipblasLtMatrixLayoutGetAttribute(layout: MatrixLayout, attr: i32, buf: *mut c_void, size: usize, written: *mut usize) => layout_get_attribute;
            api hipblasLtMatmulDescCreate(desc: *mut MatmulDesc, compute_type: i32, scale_type: i32) => desc_create;
            api hipblasLtMatmulDescDestroy(desc: MatmulDesc) => desc_destroy;
            api hipblasLtMatmulDescSetAttribute(desc: MatmulDesc, attr: i32, buf: *const c_void, size: usize) => desc_set_attribute;
            api hipblasLtMatmulDescGetAttribute(desc: MatmulDesc, attr: i32, buf: *mut c_void, size: usize, written: *mut usize) => desc_get_attribute;
            api hipblasLtMatmulPreferenceCreate(pref: *mut MatmulPreference) => pref_create;
            api hipblasLtMatmulPreferenceDestroy(pref: MatmulPreference) => pref_destroy;
            api hipblasLtMatmulPreferenceSetAttribute(pref: MatmulPreference, attr: i32, buf: *const c_void, size: usize) => pref_set_attribute;
            api hipblasLtMatmulPreferenceGetAttribute(pref: MatmulPreference, attr: i32, buf: *mut c_void, size: usize, written: *mut usize) => pref_get_attribute;
            api hipblasLtMatmulAlgoGetHeuristic(handle: Handle, desc: MatmulDesc, a_desc: MatrixLayout, b_desc: MatrixLayout, c_desc: MatrixLayout, d_desc: MatrixLayout, pref: MatmulPreference, requested: i32, results: *mut HeuristicResult, returned: *mut i32) => algo_get_heuristic;
            api hipblasLtMatmul(handle: Handle, desc: MatmulDesc, alpha: *const c_void, a: *const c_void, a_desc: MatrixLayout, b: *const c_void, b_desc: MatrixLayout, beta: *const c_void, c: *const c_void, c_desc: MatrixLayout, d: *mut c_void, d_desc: MatrixLayout, algo: *const MatmulAlgo, workspace: *mut c_void, workspace_size: usize, stream: Stream) => matmul;
            fwd hipblasLtMatrixTransformDescCreate(desc: *mut MatrixTransformDesc, scale_type: i32);
            fwd hipblasLtMatrixTransformDescDestroy(desc: MatrixTransformDesc);
            fwd hipblasLtMatrixTransformDescSetAttribute(desc: MatrixTransformDesc, attr: i32, buf: *const c_void, size: usize);
            fwd hipblasLtMatrixTransformDescGetAttribute(desc: MatrixTransformDesc, attr: i32, buf: *mut c_void, size: usize, written: *mut usize);
            fwd hipblasLtMatrixTransform(handle: Handle, desc: MatrixTransformDesc, alpha: *const c_void, a: *const c_void, a_desc: MatrixLayout, beta: *const c_void, b: *const c_void, b_desc: MatrixLayout, c: *mut c_void, c_desc: MatrixLayout, stream: Stream);
            newer hipblasLtSetSmCountTarget(handle: Handle, count: i32);
            newer hipblasLtGetSmCountTarget(handle: Handle, count: *mut i32);
            newer hipblasLtSetUniformSummationOrder(handle: Handle, enable: i32);
            newer hipblasLtGetUniformSummationOrder(handle: Handle, enable: *mut i32);
            newer hipblasLtCheckNumericsDrain(handle: Handle, first_nan_call_id: *mut u32);
            newer hipblasLtFusedEpilogueCreate(desc: *mut FusedEpilogueDesc);
            newer hipblasLtFusedEpilogueAdd(desc: FusedEpilogueDesc, epilogue: i32);
            newer hipblasLtFusedEpilogueSetAttribute(desc: FusedEpilogueDesc, attr: i32, value: *const c_void, size: usize);
            newer hipblasLtFusedEpilogueDestroy(desc: FusedEpilogueDesc);
            newer hipblasLtFusedEpilogueRMSNormDescriptorCreate(desc: *mut RmsNormDesc);
            newer hipblasLtFusedEpilogueRMSNormDescriptorSetBuffer(desc: RmsNormDesc, buffer: *mut c_void, size: usize);
            newer hipblasLtFusedEpilogueRMSNormDescriptorDestroy(desc: RmsNormDesc);
            extop hipblasltExtSoftmax(dtype: i32, m: u32, n: u32, dim: u32, output: *mut c_void, input: *mut c_void, stream: Stream);
            extop hipblasltExtLayerNorm(dtype: i32, output: *mut c_void, mean: *mut c_void, invvar: *mut c_void, input: *mut c_void, m: u32, n: u32, eps: f32, gamma: *mut c_void, beta: *mut c_void, stream: Stream);
            extop hipblasltExtAMax(dtype: i32, out_dtype: i32, output: *mut c_void, input: *mut c_void, m: u32, n: u32, stream: Stream);
            extop hipblasltExtAMaxWithScale(dtype: i32, out_dtype: i32, scale_dtype: i32, output: *mut c_void, output_d: *mut c_void, input: *mut c_void, input_scale: *mut c_void, m: u32, n: u32, stream: Stream);
        }
    };
}
