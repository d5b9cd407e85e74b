//! The stress mix through the C API on a machine without a GPU (standalone): every
//! problem the design forwards is refused with NOT_SUPPORTED under its reason, and
//! every decode problem gets as far as the engine (`no-gpu`), so the routes the
//! GPU run relies on are those of `route.rs`. Descriptors read back what was set.
//! One test in its own binary: it fixes the library's mode through the
//! environment before the library first reads it.

use skinnylt::abi;
use skinnylt_tools::stress::{self, Counters, Descs, Operands, Route};

#[test]
fn designed_forwards_take_their_reason_and_decode_problems_reach_the_engine() {
    if skinnylt::gpu::runtime().is_some() {
        eprintln!("skipped: a GPU is present");
        return;
    }
    // SAFETY: the only test of this binary, before it makes any thread and before
    // the library has read its configuration.
    unsafe { std::env::set_var("SKINNYLT_STANDALONE", "1") };
    let h = stress::create_handle().unwrap();
    // Aligned stand-in addresses: routing reads only their values, and without a
    // GPU nothing is launched.
    let o = Operands { w: 0x10_0000, x: 0x20_0000, c: 0x30_0000, y: 0x30_0000 };
    for s in stress::catalog() {
        let d = Descs::new(&s, 0x40_0000).unwrap();
        d.check_readback(&s).unwrap();
        let o = if s.beta != 0.0 { Operands { c: 0x50_0000, ..o } } else { o };
        let before = Counters::read();
        let st = d.matmul(&s, h, o, None, None, 0);
        let route = Counters::read().route_of_one_call(&before);
        let want = Route::Forwarded(s.expect.unwrap_or("no-gpu").to_owned());
        assert_eq!(route, Some(want), "{}", s.name());
        assert_eq!(st, abi::STATUS_NOT_SUPPORTED, "{}", s.name());
        // The heuristic has nothing for a problem that cannot run here.
        assert!(d.heuristic(h).is_none(), "{}", s.name());
    }
    stress::destroy_handle(h).unwrap();
}
