//! `skinnylt stress` without a GPU: its arguments, the problem mix, the exact
//! counter bookkeeping, the handle and replay plans, the output check, and the
//! command's refusal on a machine without a GPU.

use std::collections::BTreeMap;

use clap::Parser;
use skinnylt::route::DType;
use skinnylt_tools::reference;
use skinnylt_tools::stress::{self, Burst, Counters, HandlePlan, LANES, MAX_BURST, Route, Spec, Tally};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    a: stress::Args,
}

fn parse(args: &[&str]) -> Result<stress::Args, clap::Error> {
    Cli::try_parse_from(std::iter::once("stress").chain(args.iter().copied())).map(|c| c.a)
}

#[test]
fn arguments_default_to_the_issue_s_run_and_refuse_nonsense() {
    let a = parse(&[]).unwrap();
    assert_eq!((a.seconds, a.threads, a.streams, a.replays), (600.0, 16, 4, 10_000));
    assert!(a.real_lib.is_none() && a.out.is_none() && a.seed.is_none());
    assert_eq!(a.tuning, "shipped");
    assert_eq!(parse(&["--tuning", "fallback"]).unwrap().tuning, "fallback");
    let a = parse(&["--seconds", "45", "--threads", "3", "--streams", "9", "--replays", "0", "--real-lib", "/x/libhipblaslt.so.1", "--seed", "7", "--churn", "5"]).unwrap();
    assert_eq!((a.seconds, a.threads, a.streams, a.replays, a.seed, a.churn), (45.0, 3, 9, 0, Some(7), 5));
    assert_eq!(a.real_lib.as_deref(), Some("/x/libhipblaslt.so.1"));
    for bad in [&["--threads", "0"][..], &["--streams", "0"], &["--churn", "0"], &["--seconds", "soon"], &["--threads", "-1"], &["--tuning", "none"]] {
        assert!(parse(bad).is_err(), "{bad:?} accepted");
    }
}

fn counters(intercepted: u64, reasons: &[(&str, u64)]) -> Counters {
    let by_reason: BTreeMap<String, u64> = reasons.iter().map(|(r, n)| (r.to_string(), *n)).collect();
    Counters { intercepted, forwarded: by_reason.values().sum(), by_reason }
}

#[test]
fn the_tally_must_equal_the_counter_deltas_exactly() {
    let before = counters(1000, &[("epilogue", 5), ("no-gpu", 2)]);
    let after = counters(1100, &[("epilogue", 12), ("no-gpu", 2), ("too-many-tokens", 3)]);
    let delta = after.since(&before);
    assert_eq!(delta, counters(100, &[("epilogue", 7), ("too-many-tokens", 3)]));

    let mut t = Tally::default();
    t.add(&Route::Ours, 60);
    t.add(&Route::Forwarded("epilogue".into()), 7);
    let mut u = Tally::default();
    u.add(&Route::Ours, 40);
    u.add(&Route::Forwarded("too-many-tokens".into()), 3);
    t.merge(&u);
    assert_eq!((t.calls(), t.forwarded_total()), (110, 10));
    assert!(t.compare(&delta).is_empty(), "{:?}", t.compare(&delta));

    // One call too few or too many anywhere is reported, by total and by reason.
    let mut short = t.clone();
    short.add(&Route::Ours, 1);
    assert_eq!(short.compare(&delta), vec!["intercepted: counters 100 != calls 101".to_owned()]);
    let mut moved = Tally::default();
    moved.add(&Route::Ours, 100);
    moved.add(&Route::Forwarded("epilogue".into()), 8);
    moved.add(&Route::Forwarded("too-many-tokens".into()), 2);
    let e = moved.compare(&delta);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e.iter().any(|x| x.contains("epilogue")) && e.iter().any(|x| x.contains("too-many-tokens")));
    // A reason only the counters saw.
    let extra = counters(100, &[("epilogue", 7), ("too-many-tokens", 3), ("launch-failed", 1)]);
    let e = t.compare(&extra);
    assert!(e.iter().any(|x| x.contains("launch-failed")) && e.iter().any(|x| x.starts_with("forwarded:")), "{e:?}");
}

#[test]
fn one_call_s_route_is_read_off_the_counters() {
    let before = counters(10, &[("epilogue", 1)]);
    assert_eq!(counters(11, &[("epilogue", 1)]).route_of_one_call(&before), Some(Route::Ours));
    assert_eq!(counters(10, &[("epilogue", 2)]).route_of_one_call(&before), Some(Route::Forwarded("epilogue".into())));
    assert_eq!(counters(10, &[("epilogue", 1), ("alignment", 1)]).route_of_one_call(&before), Some(Route::Forwarded("alignment".into())));
    // Nothing, or more than one call, is no route.
    assert_eq!(before.route_of_one_call(&before), None);
    assert_eq!(counters(12, &[("epilogue", 1)]).route_of_one_call(&before), None);
    assert_eq!(counters(11, &[("epilogue", 2)]).route_of_one_call(&before), None);
}

#[test]
fn group_handles_fit_their_streams_in_the_lanes() {
    // The issue's run: 16 threads x 4 streams, 8 lanes: pairs of threads.
    let p = HandlePlan::new(16, 4);
    assert_eq!(LANES, 8);
    assert_eq!(p.groups(), 8);
    assert_eq!(p.group_of, (0..16).map(|t| t / 2).collect::<Vec<_>>());
    assert!((0..8).all(|g| p.group_streams[g] == 8 && p.group_lane_safe(g)));
    assert_eq!(p.global_streams, 64);
    assert!(!p.global_lane_safe());
    // An uneven split: the last group is smaller.
    let p = HandlePlan::new(3, 3);
    assert_eq!((p.group_of.clone(), p.group_streams.clone()), (vec![0, 0, 1], vec![6, 3]));
    // More streams per thread than lanes: one thread per group, still oversubscribed.
    let p = HandlePlan::new(2, 9);
    assert_eq!((p.group_of.clone(), p.group_streams.clone()), (vec![0, 1], vec![9, 9]));
    assert!(!p.group_lane_safe(0));
    // Few streams in all: everything fits.
    let p = HandlePlan::new(2, 2);
    assert!(p.global_lane_safe() && p.groups() == 1 && p.group_lane_safe(0));
}

#[test]
fn replays_are_split_over_shapes_and_read_back_at_least_every_100() {
    assert_eq!(stress::split_replays(10_000, 3), vec![3334, 3333, 3333]);
    assert_eq!(stress::split_replays(10_000, 4).iter().sum::<u64>(), 10_000);
    assert!(stress::split_replays(5, 0).is_empty());
    for total in [0, 1, 99, 100, 101, 2500, 3334] {
        let b = stress::bursts(total);
        assert_eq!(b.iter().map(|x| x.replays).sum::<u64>(), total);
        assert!(b.iter().all(|x| x.replays >= 1 && x.replays <= MAX_BURST));
        // The two kinds alternate, the per-replay kind first.
        assert!(b.iter().enumerate().all(|(i, x)| x.each == (i % 2 == 0)));
    }
    assert_eq!(stress::bursts(250), vec![Burst { replays: 100, each: true }, Burst { replays: 100, each: false }, Burst { replays: 50, each: true }]);
}

#[test]
fn the_mix_has_decode_shapes_and_every_designed_forward() {
    let c = stress::catalog();
    let names: std::collections::HashSet<String> = c.iter().map(Spec::name).collect();
    assert_eq!(names.len(), c.len(), "two problems with one name");
    for s in &c {
        assert!(s.ldw >= s.k && s.ldy >= s.n && s.m >= 1, "{}", s.name());
        assert!(!s.gemv || (s.m == 1 && !s.bias && s.ldy == s.n), "{}", s.name());
    }
    assert!(c.iter().any(|s| s.expect.is_none() && s.beta != 0.0), "beta != 0 run by skinnylt");
    for m in [1, 3, 8, 16, 32, 64, 100] {
        for d in DType::ALL {
            assert!(c.iter().any(|s| s.expect.is_none() && s.m == m) && c.iter().any(|s| s.expect.is_none() && s.dtype == d), "M={m} {d:?}");
        }
    }
    for (n, k) in [(4096, 4096), (14336, 4096), (4096, 14336), (1024, 7168), (2880, 2880)] {
        assert!(c.iter().any(|s| s.expect.is_none() && (s.n, s.k) == (n, k)), "({n}, {k})");
    }
    assert!(c.iter().any(|s| s.gemv) && c.iter().any(|s| s.bias && s.n == 2880));
    for r in ["too-many-tokens", "alignment"] {
        assert!(c.iter().any(|s| s.expect == Some(r)), "{r}");
    }
    assert!(c.iter().any(|s| s.m == 256) && c.iter().any(|s| s.m == 512));
}

#[test]
fn outputs_are_checked_over_poison_and_padding() {
    let s = Spec { dtype: DType::Bf16, gemv: false, m: 2, n: 3, k: 8, ldw: 8, ldy: 4, bias: false, alpha: 1.0, beta: 0.0, expect: None };
    let want = [1.0, -2.0, 0.5, 4.0, 0.25, -1.0];
    let enc = |v: f64| reference::to_bits(DType::Bf16, v as f32);
    let good: Vec<u16> = vec![enc(1.0), enc(-2.0), enc(0.5), 0xffff, enc(4.0), enc(0.25), enc(-1.0), 0xffff];
    assert!(stress::check_output(&s, &good, &want).is_ok_and(|e| e < 1e-6));
    let mut padding = good.clone();
    padding[3] = 0;
    assert!(stress::check_output(&s, &padding, &want).unwrap_err().contains("outside"));
    let mut unwritten = good.clone();
    unwritten[5] = 0xffff;
    assert!(stress::check_output(&s, &unwritten, &want).unwrap_err().contains("not fully written"));
    let mut wrong = good;
    wrong[4] = enc(5.0);
    assert!(stress::check_output(&s, &wrong, &want).unwrap_err().contains("relative error"));
}

/// Without a GPU the command says so and exits 2, as `bench` and `tune` do.
#[test]
fn stress_without_gpu_exits_2() {
    if skinnylt::gpu::runtime().is_some() {
        eprintln!("skipped: a GPU is present");
        return;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_skinnylt")).args(["stress", "--seconds", "1"]).output().expect("run skinnylt");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("skinnylt stress needs a GPU: none found"), "{err}");
}
