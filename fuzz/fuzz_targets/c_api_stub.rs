//! C API programs against skinnylt interposed on the C test stub
//! (`ctest/stub/stub.c`, built by build.rs), so that every forwarding path runs:
//! see `src/program.rs` for what is called and checked.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use skinnylt_fuzz::program::{Driver, Mode};
use skinnylt_fuzz::stub::Stub;

/// The stand-in real hipBLASLt, built next to this binary.
const STUB_PATH: &str = env!("SKINNYLT_FUZZ_STUB");

static STUB: OnceLock<Stub> = OnceLock::new();

fuzz_target!(
    init: {
        skinnylt_fuzz::init_env(&[("SKINNYLT_REAL_LIB", STUB_PATH)]);
        skinnylt_fuzz::assert_no_gpu();
        assert_eq!(skinnylt::ffi::skinnylt::skinnylt_has_real_library(), 1, "skinnylt did not load the stub {STUB_PATH}");
        let _ = STUB.set(Stub::open(STUB_PATH));
    },
    |data: &[u8]| {
        let stub = STUB.get().expect("set by init");
        let mut u = arbitrary::Unstructured::new(data);
        Driver::new(Mode::Stub(stub)).run(&mut u);
    }
);
