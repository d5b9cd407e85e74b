//! C API programs against skinnylt alone (standalone mode, no GPU): see
//! `src/program.rs` for what is called and checked.
#![no_main]

use libfuzzer_sys::fuzz_target;
use skinnylt_fuzz::program::{Driver, Mode};

fuzz_target!(
    init: {
        skinnylt_fuzz::init_env(&[("SKINNYLT_STANDALONE", "1")]);
        skinnylt_fuzz::assert_no_gpu();
        assert_eq!(skinnylt::ffi::skinnylt::skinnylt_has_real_library(), 0, "not in standalone mode");
    },
    |data: &[u8]| {
        let mut u = arbitrary::Unstructured::new(data);
        Driver::new(Mode::Standalone).run(&mut u);
    }
);
