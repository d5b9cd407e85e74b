//! The hipBLASLt vendor baseline (`skinnylt_tools::vendor::hipblaslt`, what `bench` and
//! `tune` time on AMD) against the stub real hipBLASLt of ctest/stub, found the way
//! skinnylt finds the real library (`SKINNYLT_REAL_LIB`): the exact calls, in
//! order, with the exact arguments and attribute values, and nothing through
//! skinnylt's own hipBLASLt functions. No GPU: the stub never touches memory.
//!
//! One test in this file: the configuration is read once per process, so the
//! environment must be set before anything in skinnylt runs.

use std::ffi::{CStr, c_char, c_int};
use std::path::PathBuf;
use std::process::Command;

use skinnylt::abi::{self, MatmulAlgo};
use skinnylt::route::DType;
use skinnylt_tools::vendor::{self, LtFns, Vendor};

/// `struct stub_call` (ctest/stub/stub.h).
#[repr(C)]
struct StubCall {
    name: *const c_char,
    nargs: c_int,
    args: [u64; 16],
    out: u64,
    status: c_int,
    payload: u64,
}

/// The stub's inspection API (stub.h), from our own dlopen of the same file: the
/// loader hands back the copy skinnylt opened, so both see one call log.
struct Stub {
    _lib: libloading::Library,
    count: unsafe extern "C" fn() -> c_int,
    at: unsafe extern "C" fn(c_int) -> *const StubCall,
    reset: unsafe extern "C" fn(),
    set_status: unsafe extern "C" fn(*const c_char, c_int) -> c_int,
}

/// One recorded call, copied out of the stub.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    args: Vec<u64>,
    out: u64,
    payload: u64,
}

impl Stub {
    fn open(path: &str) -> Stub {
        // SAFETY: the stub built by this test; each symbol has the stub.h signature
        // declared in `Stub`, and the library stays open in `_lib`.
        unsafe {
            let lib = libloading::Library::new(path).expect("dlopen stub");
            let count = *lib.get(b"stub_call_count\0").unwrap();
            let at = *lib.get(b"stub_call_at\0").unwrap();
            let reset = *lib.get(b"stub_reset\0").unwrap();
            let set_status = *lib.get(b"stub_set_status\0").unwrap();
            Stub { _lib: lib, count, at, reset, set_status }
        }
    }

    /// Every call since the last reset, then a fresh log.
    fn take(&self) -> Vec<Call> {
        // SAFETY: stub.h: the count of recorded calls, then each record (valid until
        // the reset below), whose name is a NUL-terminated static string.
        let calls = (0..unsafe { (self.count)() })
            // SAFETY: as above.
            .map(|i| unsafe {
                let c = &*(self.at)(i);
                Call {
                    name: CStr::from_ptr(c.name).to_string_lossy().into_owned(),
                    args: c.args[..c.nargs as usize].to_vec(),
                    out: c.out,
                    payload: c.payload,
                }
            })
            .collect();
        // SAFETY: stub.h: takes no arguments.
        unsafe { (self.reset)() };
        calls
    }

    fn set_status(&self, name: &CStr, status: c_int) {
        // SAFETY: a NUL-terminated name that lives through the call.
        assert_eq!(unsafe { (self.set_status)(name.as_ptr(), status) }, 0);
    }
}

/// Builds the stub as `libhipblaslt.so.1` in the test's scratch directory, with the
/// C compiler cargo links with.
fn build_stub() -> String {
    // The repository root: this package lives in tools/.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vendor-stub");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("libhipblaslt.so.1");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(["-std=c11", "-shared", "-fPIC", "-fvisibility=hidden", "-Wl,-soname,libhipblaslt.so.1", "-I"])
        .arg(root.join("ctest"))
        .arg(root.join("ctest/stub/stub.c"))
        .arg("-o")
        .arg(&out)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(st.success(), "building the stub hipBLASLt failed");
    out.to_string_lossy().into_owned()
}

/// The names of `calls`, in order.
fn names(calls: &[Call]) -> Vec<&str> {
    calls.iter().map(|c| c.name.as_str()).collect()
}

/// The `[attr, size, payload]` of a SetAttribute call on `obj`.
fn set_attr(c: &Call, obj: u64) -> [u64; 3] {
    assert_eq!(c.args[0], obj, "{} on the wrong object", c.name);
    [c.args[1], c.args[3], c.payload]
}

#[test]
fn hipblaslt_vendor_calls_the_real_library() {
    let stub_path = build_stub();
    // SAFETY: the only test of this process, before anything else runs.
    unsafe {
        std::env::set_var("SKINNYLT_REAL_LIB", &stub_path);
        std::env::set_var("SKINNYLT_STANDALONE", "");
        std::env::set_var("SKINNYLT_DISABLE", "");
    }
    let before = skinnylt_tools::counters();

    // Loading: the handle, and the version read through it.
    let lt = vendor::hipblaslt::load().expect("load the stub as the real hipBLASLt");
    let stub = Stub::open(&stub_path);
    let calls = stub.take();
    assert_eq!(names(&calls), ["hipblasLtCreate", "hipblasLtGetVersion"]);
    let handle = calls[0].out;
    assert_eq!(calls[1].args[0], handle);
    assert_eq!((lt.name(), lt.version()), ("hipBLASLt", 100202)); // STUB_VERSION
    assert_eq!(std::fs::canonicalize(lt.path()).unwrap(), std::fs::canonicalize(&stub_path).unwrap());

    // problem(): F.linear for M = 4, N = 1024, K = 4096, bf16, with a bias.
    let (m, n, k, bias, ws_bytes) = (4u64, 1024u64, 4096u64, 0xB1A5_0000u64, 32u64 << 20);
    let with_bias = vendor::Epilogue { value: abi::EPILOGUE_BIAS, bias, ..vendor::Epilogue::default() };
    let p = lt.problem(DType::Bf16, DType::Bf16, m, n, k, &with_bias, None, ws_bytes, 8).expect("problem");
    let calls = stub.take();
    assert_eq!(
        names(&calls),
        [
            "hipblasLtMatmulDescCreate",
            "hipblasLtMatmulDescSetAttribute",
            "hipblasLtMatmulDescSetAttribute",
            "hipblasLtMatmulDescSetAttribute",
            "hipblasLtMatmulDescSetAttribute",
            "hipblasLtMatrixLayoutCreate",
            "hipblasLtMatrixLayoutCreate",
            "hipblasLtMatrixLayoutCreate",
            "hipblasLtMatmulPreferenceCreate",
            "hipblasLtMatmulPreferenceSetAttribute",
            "hipblasLtMatmulAlgoGetHeuristic",
        ]
    );
    let desc = calls[0].out;
    assert_eq!(calls[0].args[1..], [abi::COMPUTE_32F as u64, abi::R_32F as u64]);
    let attrs: Vec<[u64; 3]> = calls[1..5].iter().map(|c| set_attr(c, desc)).collect();
    let attr = |a: i32| a as u64;
    assert_eq!(
        attrs,
        [
            [attr(abi::desc_attr::TRANSA), 4, abi::OP_T as u64],
            [attr(abi::desc_attr::TRANSB), 4, abi::OP_N as u64],
            [attr(abi::desc_attr::EPILOGUE), 4, abi::EPILOGUE_BIAS as u64],
            [attr(abi::desc_attr::BIAS_POINTER), 8, bias],
        ]
    );
    // A = W (k x n, ld k), B = x (k x m, ld k), C = D = y (n x m, ld n).
    let bf16 = abi::R_16BF as u64;
    let layouts: Vec<&[u64]> = calls[5..8].iter().map(|c| &c.args[1..]).collect();
    assert_eq!(layouts, [&[bf16, k, n, k][..], &[bf16, k, m, k], &[bf16, n, m, n]]);
    let (a, b, d, pref) = (calls[5].out, calls[6].out, calls[7].out, calls[8].out);
    assert_eq!(set_attr(&calls[9], pref), [attr(abi::pref_attr::MAX_WORKSPACE_BYTES), 8, ws_bytes]);
    assert_eq!(calls[10].args[..8], [handle, desc, a, b, d, d, pref, 8]);
    assert_eq!(p.algos(), 3, "the stub returns STUB_MAX_HEURISTICS results");

    // matmul(): algo 1 of the heuristic, every pointer passed through.
    let (w, x, y, ws, stream) = (0x1000_0000u64, 0x2000_0000u64, 0x3000_0000u64, 0x4000_0000u64, 0x5000_0000usize);
    lt.matmul(&p, 1, w, x, 0xC000_0000, y, ws, ws_bytes as usize, stream as *mut _).expect("matmul");
    let calls = stub.take();
    assert_eq!(names(&calls), ["hipblasLtMatmul"]);
    let g = &calls[0].args;
    assert_eq!([g[0], g[1], g[3], g[4], g[5], g[6]], [handle, desc, w, a, x, b]);
    assert_eq!([g[8], g[9], g[10], g[11]], [y, d, y, d], "beta = 0: C = D = y, whatever C is passed");
    assert_eq!([g[13], g[14], g[15]], [ws, ws_bytes, stream as u64]);
    assert!(g[2] != 0 && g[7] != 0, "alpha and beta are host pointers");
    // The algo is heuristic result 1 as the stub wrote it (stub.h: stub_heuristic).
    // SAFETY: the algo pointer the vendor passed: an element of `p`'s algo list,
    // alive until `lt.free(p)` below.
    let algo = unsafe { *(g[12] as *const MatmulAlgo) };
    assert_eq!(algo, MatmulAlgo { data: std::array::from_fn(|j| 0xB0 + j as u8), max_workspace_bytes: 0x200000 });

    lt.free(p);
    let calls = stub.take();
    assert_eq!(
        names(&calls),
        ["hipblasLtMatmulPreferenceDestroy", "hipblasLtMatrixLayoutDestroy", "hipblasLtMatrixLayoutDestroy", "hipblasLtMatrixLayoutDestroy", "hipblasLtMatmulDescDestroy"]
    );
    assert_eq!(calls.iter().map(|c| c.args[0]).collect::<Vec<_>>(), [pref, a, b, d, desc]);

    // Without a bias: no epilogue and no bias pointer.
    let p = lt.problem(DType::F16, DType::F16, m, n, k, &vendor::Epilogue::default(), None, ws_bytes, 8).expect("problem without bias");
    let calls = stub.take();
    let attrs: Vec<u64> = calls.iter().filter(|c| c.name == "hipblasLtMatmulDescSetAttribute").map(|c| c.args[1]).collect();
    assert_eq!(attrs, [attr(abi::desc_attr::TRANSA), attr(abi::desc_attr::TRANSB)]);
    assert!(calls.iter().filter(|c| c.name == "hipblasLtMatrixLayoutCreate").all(|c| c.args[1] == abi::R_16F as u64));
    lt.free(p);
    stub.take();

    // GELU after an fp32 bias, plus beta = 1 with a C apart from D (bench --epilogue):
    // the epilogue, the bias pointer and its type; matmul passes C and beta 1.
    let fused = vendor::Epilogue { value: abi::EPILOGUE_GELU_BIAS, bias, bias_f32: true, beta: 1.0 };
    let p = lt.problem(DType::Bf16, DType::Bf16, m, n, k, &fused, None, ws_bytes, 8).expect("fused problem");
    let calls = stub.take();
    let desc = calls[0].out;
    let attrs: Vec<[u64; 3]> = calls.iter().filter(|c| c.name == "hipblasLtMatmulDescSetAttribute").skip(2).map(|c| set_attr(c, desc)).collect();
    assert_eq!(
        attrs,
        [[attr(abi::desc_attr::EPILOGUE), 4, abi::EPILOGUE_GELU_BIAS as u64], [attr(abi::desc_attr::BIAS_POINTER), 8, bias], [attr(abi::desc_attr::BIAS_DATA_TYPE), 4, abi::R_32F as u64]]
    );
    let d = calls.iter().filter(|c| c.name == "hipblasLtMatrixLayoutCreate").nth(2).expect("D's layout").out;
    let c = 0xC000_0000u64;
    lt.matmul(&p, 0, w, x, c, y, ws, ws_bytes as usize, stream as *mut _).expect("fused matmul");
    let calls = stub.take();
    let g = &calls[0].args;
    assert_eq!([g[8], g[9], g[10], g[11]], [c, d, y, d], "C apart from D, with D's layout");
    lt.free(p);
    stub.take();

    // fp8 with per-row scales: both scale pointers, then both modes OUTER_VEC_32F;
    // per tensor: the pointers alone (mode SCALAR_32F is the library's default).
    let (sa, sb) = (0x5CA1_0000u64, 0x5CA1_1000u64);
    for outer_vec in [true, false] {
        let scales = vendor::Scales { a: sa, b: sb, outer_vec };
        let p = lt.problem(DType::E4m3Fnuz, DType::Bf16, m, n, k, &vendor::Epilogue::default(), Some(scales), ws_bytes, 8).expect("fp8 problem");
        let calls = stub.take();
        let desc = calls[0].out;
        let attrs: Vec<[u64; 3]> = calls.iter().filter(|c| c.name == "hipblasLtMatmulDescSetAttribute").skip(2).map(|c| set_attr(c, desc)).collect();
        let mut want = vec![[attr(abi::desc_attr::A_SCALE_POINTER), 8, sa], [attr(abi::desc_attr::B_SCALE_POINTER), 8, sb]];
        if outer_vec {
            let vec_mode = abi::SCALE_MODE_OUTER_VEC_32F as u64;
            want.extend([[attr(abi::desc_attr::A_SCALE_MODE), 4, vec_mode], [attr(abi::desc_attr::B_SCALE_MODE), 4, vec_mode]]);
        }
        assert_eq!(attrs, want, "outer_vec = {outer_vec}");
        lt.free(p);
        stub.take();
    }

    // A failing heuristic: the error names it and the status, and nothing leaks.
    stub.set_status(c"hipblasLtMatmulAlgoGetHeuristic", abi::STATUS_NOT_SUPPORTED);
    let err = lt.problem(DType::Bf16, DType::Bf16, m, n, k, &with_bias, None, ws_bytes, 8).err().expect("the heuristic fails");
    assert_eq!(err, "hipblasLtMatmulAlgoGetHeuristic failed: status 7");
    let calls = stub.take();
    let created = calls.iter().filter(|c| c.name.ends_with("Create")).count();
    let destroyed = calls.iter().filter(|c| c.name.ends_with("Destroy")).count();
    assert_eq!((created, destroyed), (5, 5));

    // Dropping the vendor destroys its handle.
    drop(lt);
    let calls = stub.take();
    assert_eq!(names(&calls), ["hipblasLtDestroy"]);
    assert_eq!(calls[0].args[0], handle);

    // Resolving by prefix (how the cuBLASLt side gets its table) finds the same
    // functions the discovery's table holds.
    // SAFETY: the stub this test built; loading it runs no initialisers of note.
    let lib = unsafe { libloading::Library::new(&stub_path) }.unwrap();
    let by_name = LtFns::<abi::HeuristicResult>::resolve(&lib, "hipblasLt");
    let real = &skinnylt::process::get().real_lib().expect("real library").fns;
    macro_rules! same {
        ($($field:ident = $real:ident),*) => {$(
            assert!(by_name.$field.is_some(), stringify!($field));
            assert_eq!(by_name.$field.map(|f| f as usize), real.$real.map(|f| f as usize), stringify!($field));
        )*};
    }
    same!(
        Create = hipblasLtCreate,
        Destroy = hipblasLtDestroy,
        MatmulDescCreate = hipblasLtMatmulDescCreate,
        MatmulDescDestroy = hipblasLtMatmulDescDestroy,
        MatmulDescSetAttribute = hipblasLtMatmulDescSetAttribute,
        MatrixLayoutCreate = hipblasLtMatrixLayoutCreate,
        MatrixLayoutDestroy = hipblasLtMatrixLayoutDestroy,
        MatmulPreferenceCreate = hipblasLtMatmulPreferenceCreate,
        MatmulPreferenceDestroy = hipblasLtMatmulPreferenceDestroy,
        MatmulPreferenceSetAttribute = hipblasLtMatmulPreferenceSetAttribute,
        MatmulAlgoGetHeuristic = hipblasLtMatmulAlgoGetHeuristic,
        Matmul = hipblasLtMatmul
    );

    // Nothing went through skinnylt's own hipBLASLt functions.
    let after = skinnylt_tools::counters();
    assert_eq!(after.forwarded_total(), before.forwarded_total());
    assert_eq!(skinnylt_tools::counters().intercepted, 0);
}
