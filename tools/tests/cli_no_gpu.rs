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

/// The record / tune-from round trip without a GPU: the demo's call goes through
/// the C API with `SKINNYLT_RECORD` set and is written once (with how it was
/// routed); `tune --from` on that file (and a shape list) with the hardware model
/// writes entries for exactly those shapes.
#[test]
fn recorded_calls_are_what_tune_from_measures() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("record-roundtrip");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (rec, list, out) = (dir.join("calls.jsonl"), dir.join("more.txt"), dir.join("table.json"));
    for _ in 0..2 {
        let st = Command::new(env!("CARGO_BIN_EXE_skinnylt"))
            .args(["demo", "--m", "12", "--n", "2880", "--k", "4096"])
            .env("SKINNYLT_RECORD", &rec)
            .env("SKINNYLT_STANDALONE", "1")
            .output()
            .expect("run skinnylt demo");
        assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    }
    let text = std::fs::read_to_string(&rec).expect("a record file");
    // Two processes append: one line each (each process writes a call once).
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!records.is_empty() && records.iter().all(|r| (r["m"].as_u64(), r["n"].as_u64(), r["k"].as_u64()) == (Some(12), Some(2880), Some(4096))), "{text}");
    assert!(records.iter().all(|r| r["form"] == "linear" && r["dtype"] == "bf16" && r["routed"].as_str().is_some_and(|s| !s.is_empty())), "{text}");
    std::fs::write(&list, "# decode GEMMs\n4,1024,7168\n100,5120,2880,bias\n").unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_skinnylt"))
        .args(["tune", "--model", "sm90", "--from"])
        .arg(&rec)
        .arg("--from")
        .arg(&list)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run skinnylt tune");
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let table: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut got: Vec<(u64, u64, u64, bool)> = table["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["dtype"] == "bf16")
        .map(|e| (e["m_min"].as_u64().unwrap(), e["n"].as_u64().unwrap(), e["k"].as_u64().unwrap(), e["bias"].as_bool().unwrap()))
        .collect();
    got.sort();
    assert_eq!(got, vec![(4, 1024, 7168, false), (12, 2880, 4096, true), (100, 5120, 2880, true)]);
}

/// Configuration the library cannot use is written to stderr once, whatever the
/// log level, and `skinnylt info` lists it with what was used instead.
#[test]
fn info_reports_configuration_problems() {
    let out = Command::new(env!("CARGO_BIN_EXE_skinnylt"))
        .arg("info")
        .env_remove("SKINNYLT_LOG")
        .env("SKINNYLT_WORKSPACE_MB", "17592186044416")
        .env("SKINNYLT_MAX_M", "1e9")
        .env("SKINNYLT_DISABLE", "TRUE")
        .env("SKINNYLT_STANDALONE", "")
        .env("SKINNYLT_REAL_LIB", "/nonexistent/libhipblaslt.so.1")
        .env("SKINNYLT_TUNING_FILE", "/dev/zero")
        .env("SKINNYLT_BATCH_INVARIANT", "on")
        .output()
        .expect("run skinnylt info");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("enabled: false"), "SKINNYLT_DISABLE=TRUE ignored: {stdout}");
    assert!(stdout.contains("batch-invariant: every call"), "SKINNYLT_BATCH_INVARIANT=on ignored: {stdout}");
    for var in ["SKINNYLT_WORKSPACE_MB", "SKINNYLT_MAX_M", "SKINNYLT_REAL_LIB"] {
        assert_eq!(stderr.matches(var).count(), 1, "{var} not reported once on stderr: {stderr}");
        assert!(stdout.lines().skip_while(|l| !l.starts_with("configuration problems")).any(|l| l.contains(var)), "{var} not in info: {stdout}");
    }
    // The tuning file is read when a device loads: only where there is one.
    if skinnylt::gpu::runtime().is_some() {
        assert!(stderr.contains("SKINNYLT_TUNING_FILE"), "{stderr}");
    }
}
