//! The routing memo through the C API: it must decide exactly as the side table
//! does, after any sequence of changes, across threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use proptest::prelude::*;

use super::matmul::{decide, memo_from};
use super::{Cx, Scalar};
use crate::abi::*;
use crate::ffi::hipblaslt as lt;
use crate::memo;
use crate::route::{self, Pointers, Problem, Reason};
use crate::shadow::{DescState, LayoutState};

const W: u64 = 0x7000_0000;
const X: u64 = 0x7100_0000;
const Y: u64 = 0x7200_0000;
const PTRS: Pointers = Pointers { a: W, b: X, c: Y, d: Y };
const ONE: f32 = 1.0;
const ZERO: f32 = 0.0;

fn cx() -> Cx {
    Cx::get().expect("the mode is decided")
}

/// Routing without the memo: the state half freshly from the side table.
fn decide_uncached(key: memo::Key, ptrs: Pointers, alpha: &f32, beta: &f32) -> Result<Problem, Reason> {
    let cx = cx();
    let m = memo_from(&cx.p.shadow.read(), &key, &cx.p.policy(cx.mode));
    let scalars = if m.host_f32 { route::Scalars::Host(Some(*alpha), Some(*beta)) } else { route::Scalars::Device(alpha as *const f32 as u64, beta as *const f32 as u64) };
    route::finish(&m.template, ptrs, scalars)
}

fn decide_memo(key: memo::Key, ptrs: Pointers, alpha: &f32, beta: &f32) -> Result<Problem, Reason> {
    decide(cx(), key, ptrs, Scalar((alpha as *const f32).cast()), Scalar((beta as *const f32).cast()))
}

/// Both paths, checked equal; and whether the memo answered.
fn decide_checked(key: memo::Key, ptrs: Pointers) -> (Result<Problem, Reason>, bool) {
    let hits = memo::hits();
    let got = decide_memo(key, ptrs, &ONE, &ZERO);
    let hit = memo::hits() > hits;
    assert_eq!(got, decide_uncached(key, ptrs, &ONE, &ZERO), "memo (hit: {hit}) disagrees with the side table");
    (got, hit)
}

/// Routes once (checked), so the memo holds the current state.
fn warm(k: memo::Key) {
    let _ = decide_checked(k, PTRS);
}

// The C API with this file's own arguments: every pointer passed is to a local
// that lives through the call, and the descriptor handles are this process's own
// (or stale ones, which the API must reject, never dereference).

fn desc_set_raw(d: usize, attr: i32, v: u64) -> Status {
    // SAFETY: `v` is 8 readable bytes for the call (see above).
    unsafe { lt::hipblasLtMatmulDescSetAttribute(d as MatmulDesc, attr, (&v as *const u64).cast(), 8) }
}

fn layout_set_raw(l: usize, attr: i32, v: u64) -> Status {
    // SAFETY: `v` is 8 readable bytes for the call (see above).
    unsafe { lt::hipblasLtMatrixLayoutSetAttribute(l as MatrixLayout, attr, (&v as *const u64).cast(), 8) }
}

fn desc_destroy(d: usize) {
    // SAFETY: only the handle, never dereferenced by the caller (see above).
    unsafe { lt::hipblasLtMatmulDescDestroy(d as MatmulDesc) };
}

fn layout_destroy(l: usize) {
    // SAFETY: only the handle, never dereferenced by the caller (see above).
    unsafe { lt::hipblasLtMatrixLayoutDestroy(l as MatrixLayout) };
}

fn set_desc(d: usize, attr: i32, v: u64) {
    assert_eq!(desc_set_raw(d, attr, v), STATUS_SUCCESS, "desc attr {attr}");
}

fn set_layout(l: usize, attr: i32, v: u64) {
    assert_eq!(layout_set_raw(l, attr, v), STATUS_SUCCESS, "layout attr {attr}");
}

fn new_layout(dtype: i32, rows: u64, cols: u64, ld: i64) -> usize {
    let mut l: MatrixLayout = std::ptr::null_mut();
    // SAFETY: `l` is a writable local (see above).
    assert_eq!(unsafe { lt::hipblasLtMatrixLayoutCreate(&mut l, dtype, rows, cols, ld) }, STATUS_SUCCESS);
    l as usize
}

/// A matmul descriptor with hipBLASLt's defaults (opA = N).
fn plain_desc() -> usize {
    let mut d: MatmulDesc = std::ptr::null_mut();
    // SAFETY: `d` is a writable local (see above).
    assert_eq!(unsafe { lt::hipblasLtMatmulDescCreate(&mut d, COMPUTE_32F, R_32F) }, STATUS_SUCCESS);
    d as usize
}

/// The `F.linear` descriptor: opA = T, opB = N.
fn new_desc() -> usize {
    let d = plain_desc();
    set_desc(d, desc_attr::TRANSA, OP_T as u64);
    set_desc(d, desc_attr::TRANSB, OP_N as u64);
    d
}

/// PyTorch's `F.linear` descriptors through the C API: W[n,k], X[m,k], Y[m,n].
fn linear_set(m: u64, n: u64, k: u64, dtype: i32) -> memo::Key {
    let desc = new_desc();
    let (a, b, d) = (new_layout(dtype, k, n, k as i64), new_layout(dtype, k, m, k as i64), new_layout(dtype, n, m, n as i64));
    memo::Key { desc, a, b, c: d, d }
}

fn destroy_set(k: memo::Key) {
    desc_destroy(k.desc);
    for l in [k.a, k.b, k.d] {
        layout_destroy(l);
    }
}

#[test]
fn repeated_calls_hit_and_agree() {
    let bf16 = linear_set(4, 2880, 4096, R_16BF);
    let fp32 = linear_set(4, 2880, 4096, R_32F);
    for _ in 0..2 {
        warm(bf16);
        warm(fp32);
    }
    let (p, hit) = decide_checked(bf16, PTRS);
    let p = p.expect("a Linear problem is ours");
    assert_eq!((p.m, p.n, p.k, p.w, p.x, p.y), (4, 2880, 4096, W, X, Y));
    // Another test's write anywhere bumps the generation: a miss is allowed, a
    // wrong answer is not (checked each time). Some call must hit once the
    // other tests pause.
    let start = std::time::Instant::now();
    let mut hit = hit;
    while !hit && start.elapsed().as_secs() < 20 {
        hit = decide_checked(fp32, PTRS).1;
    }
    assert!(hit, "the memo never answered");
    assert_eq!(decide_checked(fp32, PTRS).0, Err(Reason::DataType));
    // Per-call values still come from the call, not the memo.
    let moved = Pointers { a: W + 0x100, b: X + 0x40, c: Y + 2, d: Y + 2 };
    let p = decide_checked(bf16, moved).0.unwrap();
    assert_eq!((p.w, p.x, p.y), (W + 0x100, X + 0x40, Y + 2));
    assert_eq!(decide_checked(bf16, Pointers { a: W + 8, ..PTRS }).0, Err(Reason::Alignment));
    assert_eq!(decide_checked(bf16, Pointers { d: 0, ..PTRS }).0, Err(Reason::NullArgument));
    assert_eq!(decide_memo(bf16, PTRS, &2.5, &ZERO).unwrap().alpha, 2.5);
    let p = decide_memo(bf16, PTRS, &ONE, &ONE).unwrap();
    assert_eq!((p.c, p.beta), (Y, 1.0));
    assert_eq!(decide_memo(bf16, Pointers { c: Y + 2, ..PTRS }, &ONE, &ONE), Err(Reason::Overlap));
    // The fp32 set fails on its type before the pointers are looked at, as before.
    assert_eq!(decide_checked(fp32, Pointers { d: 0, ..PTRS }).0, Err(Reason::NullArgument));
    destroy_set(bf16);
    destroy_set(fp32);
}

#[test]
fn every_kind_of_change_after_a_call_changes_the_decision() {
    let k = linear_set(8, 1024, 7168, R_16BF);
    let mut last = decide_checked(k, PTRS).0;
    assert!(last.is_ok());
    type Step<'a> = (Box<dyn Fn() + 'a>, Result<(), Reason>);
    let steps: Vec<Step<'_>> = vec![
        (Box::new(|| set_desc(k.desc, desc_attr::EPILOGUE, EPILOGUE_BIAS as u64)), Err(Reason::NullArgument)),
        (Box::new(|| set_desc(k.desc, desc_attr::BIAS_POINTER, 0x7300_0000)), Ok(())),
        (Box::new(|| set_desc(k.desc, desc_attr::EPILOGUE, 160)), Err(Reason::Epilogue)),
        (Box::new(|| set_desc(k.desc, desc_attr::EPILOGUE, EPILOGUE_GELU_BIAS as u64)), Ok(())),
        (Box::new(|| set_desc(k.desc, desc_attr::EPILOGUE, EPILOGUE_DEFAULT as u64)), Ok(())),
        (Box::new(|| set_desc(k.desc, desc_attr::TRANSA, OP_N as u64)), Err(Reason::Transpose)),
        (Box::new(|| set_desc(k.desc, desc_attr::TRANSA, OP_T as u64)), Ok(())),
        (Box::new(|| set_desc(k.desc, desc_attr::POINTER_MODE, 4)), Err(Reason::PointerMode)),
        (Box::new(|| set_desc(k.desc, desc_attr::POINTER_MODE, POINTER_MODE_DEVICE as u64)), Ok(())),
        (Box::new(|| set_desc(k.desc, desc_attr::POINTER_MODE, 0)), Ok(())),
        (Box::new(|| set_layout(k.a, layout_attr::LD, 7172)), Err(Reason::Alignment)),
        (Box::new(|| set_layout(k.a, layout_attr::LD, 7168)), Ok(())),
        (Box::new(|| set_layout(k.a, layout_attr::LD, 100)), Err(Reason::Dimensions)),
        (Box::new(|| set_layout(k.a, layout_attr::LD, 7168)), Ok(())),
        (Box::new(|| set_layout(k.b, layout_attr::TYPE, R_16F as u64)), Err(Reason::DataType)),
        (Box::new(|| set_layout(k.b, layout_attr::TYPE, R_16BF as u64)), Ok(())),
        (Box::new(|| set_layout(k.d, layout_attr::BATCH_COUNT, 2)), Err(Reason::Batch)),
        (Box::new(|| set_layout(k.d, layout_attr::BATCH_COUNT, 1)), Ok(())),
        (Box::new(|| set_layout(k.b, layout_attr::COLS, 200)), Err(Reason::Dimensions)),
        (Box::new(|| set_layout(k.d, layout_attr::COLS, 200)), Err(Reason::TooManyTokens)),
        (Box::new(|| set_layout(k.d, layout_attr::COLS, 8)), Err(Reason::Dimensions)),
        (Box::new(|| set_layout(k.b, layout_attr::COLS, 8)), Ok(())),
    ];
    for (i, (change, want)) in steps.iter().enumerate() {
        // Warm the memo with the current state, then change it.
        warm(k);
        change();
        let now = decide_checked(k, PTRS).0;
        assert_eq!(now.map(|_| ()), *want, "step {i}");
        assert_ne!(now, last, "step {i} left the decision unchanged");
        last = now;
    }
    destroy_set(k);
}

#[test]
fn an_address_reused_after_destroy_starts_fresh() {
    // The real library reuses addresses at once: simulate it exactly by
    // shadowing a new object at the destroyed one's address.
    let k = linear_set(4, 2048, 4096, R_16BF);
    assert!(decide_checked(k, PTRS).0.is_ok());
    warm(k);
    let (owner, _) = cx().p.shadow.write(|t| t.descs.remove(&k.desc)).expect("shadowed");
    assert_eq!(decide_checked(k, PTRS).0, Err(Reason::UnknownDescriptor));
    // Re-created at the same address with defaults (opA = N): not the Linear form.
    cx().p.shadow.write(|t| t.descs.insert(k.desc, (owner, DescState::new(COMPUTE_32F, R_32F))));
    assert_eq!(decide_checked(k, PTRS).0, Err(Reason::Transpose));
    // The same for a layout, re-created with another type.
    set_desc(k.desc, desc_attr::TRANSA, OP_T as u64);
    assert!(decide_checked(k, PTRS).0.is_ok());
    cx().p.shadow.write(|t| {
        let (owner, _) = t.layouts.remove(&k.a).expect("shadowed");
        t.layouts.insert(k.a, (owner, LayoutState::new(R_32F, 4096, 2048, 4096)));
    });
    assert_eq!(decide_checked(k, PTRS).0, Err(Reason::DataType));
    destroy_set(k);

    // Through the C API: destroy and create until the allocator hands the
    // same address back (it usually does at once), then route the new one.
    let k = linear_set(4, 2048, 4096, R_16BF);
    assert!(decide_checked(k, PTRS).0.is_ok());
    desc_destroy(k.desc);
    let k2 = memo::Key { desc: plain_desc(), ..k };
    assert_eq!(decide_checked(k2, PTRS).0, Err(Reason::Transpose));
    destroy_set(k2);
}

#[test]
fn concurrent_changes_are_seen_in_order() {
    // One writer moves the bias pointer forward; readers on the same
    // descriptors must never see a value older than one already published.
    // Other threads churn their own descriptors (bumping the generation) and
    // flip their own epilogue.
    let k = linear_set(4, 1024, 4096, R_16BF);
    set_desc(k.desc, desc_attr::EPILOGUE, EPILOGUE_BIAS as u64);
    set_desc(k.desc, desc_attr::BIAS_POINTER, 0x10_0000);
    let published = Arc::new(AtomicU64::new(1));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for _ in 0..3 {
        let (published, stop) = (published.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let mut calls = 0u64;
            while !stop.load(Ordering::Acquire) || calls < 1000 {
                let floor = published.load(Ordering::Acquire);
                let p = decide_memo(k, PTRS, &ONE, &ZERO).expect("ours");
                assert!(p.bias / 0x10_0000 >= floor, "saw bias {:#x} after {floor} was published", p.bias);
                calls += 1;
            }
        }));
    }
    for _ in 0..2 {
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            let own = linear_set(2, 512, 1024, R_16BF);
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) || i < 200 {
                let bias = i % 2 == 1;
                set_desc(own.desc, desc_attr::EPILOGUE, if bias { 160 } else { EPILOGUE_DEFAULT as u64 });
                let want = if bias { Err(Reason::Epilogue) } else { Ok(()) };
                assert_eq!(decide_memo(own, PTRS, &ONE, &ZERO).map(|_| ()), want);
                assert_eq!(decide_memo(own, PTRS, &ONE, &ZERO).map(|_| ()), want);
                let junk = linear_set(1, 8, 8, R_16F);
                destroy_set(junk);
                i += 1;
            }
            destroy_set(own);
        }));
    }
    for i in 2..4000u64 {
        set_desc(k.desc, desc_attr::BIAS_POINTER, i * 0x10_0000);
        published.store(i, Ordering::Release);
        if i % 64 == 0 {
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Release);
    for t in threads {
        t.join().expect("no thread failed");
    }
    assert_eq!(decide_checked(k, PTRS).0.unwrap().bias, 3999 * 0x10_0000);
    destroy_set(k);
}

/// One mutation of a descriptor set through the C API.
#[derive(Clone, Debug)]
enum Op {
    Desc(i32, u64),
    Layout(usize, i32, u64),
    Recreate(usize),
    Call(Pointers),
}

fn arb_op() -> impl Strategy<Value = Op> {
    let value = prop_oneof![
        Just(0u64), Just(1), Just(2), Just(14), Just(15), Just(111), Just(112), Just(8), Just(4096), Just(4100), Just(0x7300_0000),
    ];
    let ptr = prop_oneof![4 => Just(W), 1 => Just(0), 1 => Just(W + 8)];
    prop_oneof![
        3 => (prop_oneof![0i32..6, Just(desc_attr::POINTER_MODE), Just(desc_attr::A_SCALE_MODE)], value.clone()).prop_map(|(a, v)| Op::Desc(a, v)),
        3 => (0usize..3, 0i32..9, value).prop_map(|(l, a, v)| Op::Layout(l, a, v)),
        1 => (0usize..4).prop_map(Op::Recreate),
        3 => (ptr.clone(), ptr).prop_map(|(w, x)| Op::Call(Pointers { a: w, b: if x == W { X } else { x }, c: Y, d: Y })),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// After any sequence of Set/Destroy/Create through the C API, the memo
    /// decides as the side table does, call after call.
    #[test]
    fn memo_tracks_any_sequence_of_changes(ops in proptest::collection::vec(arb_op(), 1..40)) {
        let mut k = linear_set(4, 1024, 4096, R_16BF);
        let mut ptrs = PTRS;
        for op in ops {
            match op {
                Op::Desc(a, v) => {
                    let _ = desc_set_raw(k.desc, a, v);
                }
                Op::Layout(l, a, v) => {
                    let l = [k.a, k.b, k.d][l];
                    let _ = layout_set_raw(l, a, v);
                }
                Op::Recreate(0) => {
                    desc_destroy(k.desc);
                    k.desc = new_desc();
                }
                Op::Recreate(i) => {
                    let slot = match i {
                        1 => &mut k.a,
                        2 => &mut k.b,
                        _ => &mut k.d,
                    };
                    layout_destroy(*slot);
                    *slot = new_layout(R_16BF, 4096, 1024, 4096);
                    k.c = k.d;
                }
                Op::Call(p) => ptrs = p,
            }
            // Twice: the second can come from the memo.
            let first = decide_checked(k, ptrs).0;
            prop_assert_eq!(decide_checked(k, ptrs).0, first);
        }
        destroy_set(k);
    }
}

/// Standalone, every entry point answers a destroyed or made-up handle, and a
/// problem with missing layouts, with the status Matmul gives: the heuristic no
/// longer says NOT_SUPPORTED where Matmul says INVALID_VALUE, and GetVersion no
/// longer succeeds on a dead handle.
#[test]
fn standalone_statuses_agree_across_entry_points() {
    if cx().real().is_some() {
        return; // a real hipBLASLt answers these calls
    }
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: out-pointers to locals; the objects are destroyed below.
    unsafe { assert_eq!(lt::hipblasLtCreate(&mut h), STATUS_SUCCESS) };
    let d = new_desc() as MatmulDesc;
    let mut pref: MatmulPreference = std::ptr::null_mut();
    // SAFETY: as above.
    unsafe { assert_eq!(lt::hipblasLtMatmulPreferenceCreate(&mut pref), STATUS_SUCCESS) };
    let null = std::ptr::null_mut();
    let mut results = [HeuristicResult::default(); 2];
    let mut returned = -1;
    let heuristic = |h: Handle, layout: MatrixLayout, results: &mut [HeuristicResult], returned: &mut i32| {
        // SAFETY: `results` holds the 2 results requested; the objects are live or
        // deliberately dead/garbage, which the API must answer with a status.
        unsafe { lt::hipblasLtMatmulAlgoGetHeuristic(h, d, layout, layout, layout, layout, pref, 2, results.as_mut_ptr(), returned) }
    };
    let matmul = |h: Handle, layout: MatrixLayout| {
        let x = 0x7000_0000usize as *mut std::ffi::c_void;
        // SAFETY: standalone routing refuses before any pointer is used.
        unsafe { lt::hipblasLtMatmul(h, d, (&ONE as *const f32).cast(), x, layout, x, layout, (&ZERO as *const f32).cast(), x, layout, x, layout, std::ptr::null(), null, 0, null) }
    };
    assert_eq!(heuristic(h, null, &mut results, &mut returned), STATUS_INVALID_VALUE);
    assert_eq!(matmul(h, null), STATUS_INVALID_VALUE);
    let garbage = 0x5eed_0000usize as Handle;
    let mut v = 0;
    // SAFETY: a made-up handle is only compared, never dereferenced.
    unsafe { assert_eq!(lt::hipblasLtGetVersion(garbage, &mut v), STATUS_INVALID_VALUE) };
    // SAFETY: as above; then `h` is destroyed and so made-up too.
    unsafe {
        assert_eq!(lt::hipblasLtGetVersion(h, &mut v), STATUS_SUCCESS);
        assert_eq!(lt::hipblasLtMatmulPreferenceDestroy(pref), STATUS_SUCCESS);
        assert_eq!(lt::hipblasLtDestroy(h), STATUS_SUCCESS);
        assert_eq!(lt::hipblasLtGetVersion(h, &mut v), STATUS_INVALID_VALUE);
    }
    desc_destroy(d as usize);
}

/// hipBLASLt reads an attribute's own size, so a caller may pass a larger size
/// than its buffer, up to `SIZE_MAX`: only the field is read or written (debug
/// builds check the slices the C face makes).
#[test]
fn oversized_attribute_sizes_touch_only_the_field() {
    let d = plain_desc();
    let op: i32 = OP_T;
    // SAFETY: `op` is a live 4-byte value; the API reads only the 4-byte field.
    let st = unsafe { lt::hipblasLtMatmulDescSetAttribute(d as MatmulDesc, desc_attr::TRANSA, (&op as *const i32).cast(), usize::MAX) };
    if cx().real().is_none() {
        assert_eq!(st, STATUS_SUCCESS);
        let mut back = [0xEEu8; 8];
        let mut written = 0;
        // SAFETY: `back` holds 8 bytes; the API writes only the 4-byte field.
        let st = unsafe { lt::hipblasLtMatmulDescGetAttribute(d as MatmulDesc, desc_attr::TRANSA, back.as_mut_ptr().cast(), usize::MAX, &mut written) };
        assert_eq!((st, written), (STATUS_SUCCESS, 4));
        assert_eq!(back, [OP_T as u8, 0, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE]);
    }
    desc_destroy(d);
}
