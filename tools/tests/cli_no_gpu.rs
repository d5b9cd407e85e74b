//! `skinnylt bench` and `skinnylt tune` on a machine without a GPU: a clear
//! message and exit status 2, nothing written. (Skipped where a GPU is present:
//! the commands would then measure.)

use std::process::Command;

/// Runs the CLI with `args`; `None` when this machine has a GPU.
fn run_without_gpu(args: &[&str]) -> Option<std::process::Output> {
    if skinnylt::gpu::runtime().is_some() {
        eprintln!("skipped: a GPU is present");
        return None;
    }
    Some(Command::new(env!("CARGO_BIN_EXE_skinnylt")).args(args).output().expect("run skinnylt"))
}

fn assert_no_gpu(out: &std::process::Output, cmd: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
    assert!(err.contains(&format!("skinnylt {cmd} needs a GPU: none found")), "{cmd}: {err}");
    assert!(out.stdout.is_empty(), "{cmd} printed {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn bench_without_gpu_exits_2() {
    if let Some(out) = run_without_gpu(&["bench", "--groups", "none", "--shape", "4,1024,4096"]) {
        assert_no_gpu(&out, "bench");
    }
}

#[test]
fn tune_without_gpu_exits_2_and_writes_nothing() {
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tune-no-gpu.json");
    let _ = std::fs::remove_file(&path);
    if let Some(out) = run_without_gpu(&["tune", "--groups", "none", "--shape", "4,1024,4096", "--out", path.to_str().unwrap()]) {
        assert_no_gpu(&out, "tune");
        assert!(!path.exists());
    }
}
