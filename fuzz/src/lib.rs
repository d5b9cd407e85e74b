//! Shared code of skinnylt's fuzz targets (see README.md): the process setup every
//! target does before its first library call, the interpreter of C API programs
//! (`c_api`, `c_api_stub`) and the C test stub's inspection API.

pub mod program;
pub mod stub;

/// Makes the process environment exactly `vars` as far as skinnylt is concerned:
/// every `SKINNYLT_*` variable the fuzzer was started with is removed (a
/// `SKINNYLT_LOG` or `SKINNYLT_RECORD` would slow every call down or fill a disk),
/// then `vars` are set. GPUs are hidden too: the C API programs pass arbitrary
/// integers as device pointers, which must never reach a kernel launch. Call it
/// once, from a target's init, before the first library call.
pub fn init_env(vars: &[(&str, &str)]) {
    let stale: Vec<std::ffi::OsString> = std::env::vars_os().map(|(k, _)| k).filter(|k| k.to_string_lossy().starts_with("SKINNYLT_")).collect();
    let hide = [("CUDA_VISIBLE_DEVICES", ""), ("HIP_VISIBLE_DEVICES", "-1"), ("ROCR_VISIBLE_DEVICES", "-1")];
    for k in stale {
        // SAFETY: called from the fuzz target's init, before the library (or any
        // other thread of this process) reads the environment.
        unsafe { std::env::remove_var(k) };
    }
    for (k, v) in hide.iter().chain(vars) {
        // SAFETY: as above.
        unsafe { std::env::set_var(k, v) };
    }
}

/// Refuses to run where skinnylt would find a GPU despite [`init_env`]: a program
/// of arbitrary calls could then launch kernels on arbitrary addresses.
pub fn assert_no_gpu() {
    assert!(
        skinnylt::gpu::runtime().is_none(),
        "a GPU is visible to skinnylt: the C API fuzz targets pass arbitrary device pointers and must run on a machine (or in an environment) without one"
    );
}
