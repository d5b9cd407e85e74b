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

/// `fit --score` judges the planner a table holds against `tune --dump` lines and
/// writes nothing. The planner decides by its own vendor model, the score by the
/// measured times: with the vendor measured 30x slower than the candidates what it
/// runs wins, with the vendor 30x faster the same choices lose.
#[test]
fn fit_score_judges_the_shipped_planner_and_writes_nothing() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fit-score");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let table = dir.join("sm90.json");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/../tuning/sm90.json"), &table).unwrap();
    let before = std::fs::read(&table).unwrap();
    let kernel = r#"{"family":"splitk","tile_m":8,"tile_n":16,"tile_k":128,"stages":8,"warps":[1,1,4],"b_to_lds":true,"cluster":true}"#;
    let deployed = |vendor_factor: f64| -> String {
        let mut lines = String::new();
        for n in [1024, 2048, 4096, 7168] {
            let shape = format!(r#""device":"test","dtype":"bf16","m":1,"n":{n},"k":4096,"bias":false"#);
            let mut best = f64::MAX;
            for split in [1, 2, 4, 8] {
                let us = 2.0 + n as f64 / 1024.0 + split as f64 * 0.1;
                best = best.min(us);
                lines += &format!("{{{shape},\"kernel\":{kernel},\"split\":{split},\"us\":{us}}}\n");
            }
            lines += &format!("{{{shape},\"vendor_us\":{v},\"vendor_top1_us\":{v}}}\n", v = best * vendor_factor);
        }
        let dump = dir.join(format!("dump-{vendor_factor}.jsonl"));
        std::fs::write(&dump, lines).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_skinnylt")).args(["fit", "--arch", "sm90", "--score", "--from"]).arg(&dump).arg("--out").arg(&table).output().expect("run skinnylt fit");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
        let line = stdout.lines().find(|l| l.starts_with("calibrated:")).unwrap_or_else(|| panic!("no score: {stdout}"));
        line.split("deployed").nth(1).and_then(|d| d.split("): ").nth(1)).and_then(|d| d.split(' ').next()).unwrap_or_else(|| panic!("{line}")).to_owned()
    };
    let win: f64 = deployed(30.0).parse().unwrap();
    assert!(win > 2.0, "{win}");
    let loss: f64 = deployed(1.0 / 30.0).parse().unwrap();
    assert!(loss < 0.5, "{loss}");
    assert_eq!(std::fs::read(&table).unwrap(), before, "--score wrote the table");
}

/// `fit --keep-anchors` refits the planner and leaves the table's anchors (and
/// entries) exactly as they were; without it the measurements' winners become
/// anchors.
#[test]
fn fit_keep_anchors_refits_the_planner_alone() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fit-keep-anchors");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let kernels = [
        r#"{"family":"splitk","tile_m":8,"tile_n":16,"tile_k":128,"stages":8,"warps":[1,1,4],"b_to_lds":true,"cluster":true}"#,
        r#"{"family":"splitk","tile_m":8,"tile_n":64,"tile_k":128,"stages":4,"warps":[1,4,1],"b_to_lds":true}"#,
    ];
    let mut lines = String::new();
    for (i, n) in [1024u32, 1536, 2048, 3072, 4096, 5120, 6144, 7168].into_iter().enumerate() {
        for m in [1u32, 5] {
            let shape = format!(r#""device":"test","dtype":"bf16","m":{m},"n":{n},"k":4096,"bias":false"#);
            let mut best = f64::MAX;
            for (j, kernel) in kernels.iter().enumerate() {
                for split in [1, 2, 4] {
                    let us = 2.0 + n as f64 / 1024.0 * (1.0 + 0.1 * j as f64) + split as f64 * 0.1 + 0.01 * i as f64;
                    best = best.min(us);
                    lines += &format!("{{{shape},\"kernel\":{kernel},\"split\":{split},\"us\":{us}}}\n");
                }
            }
            lines += &format!("{{{shape},\"vendor_us\":{v},\"vendor_top1_us\":{v}}}\n", v = best * 1.3);
        }
    }
    let dump = dir.join("dump.jsonl");
    std::fs::write(&dump, lines).unwrap();
    let parse = |path: &std::path::Path| -> serde_json::Value { serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap() };
    for keep in [true, false] {
        let table = dir.join(format!("sm90-{keep}.json"));
        std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/../tuning/sm90.json"), &table).unwrap();
        let before = parse(&table);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_skinnylt"));
        cmd.args(["fit", "--arch", "sm90", "--from"]).arg(&dump).arg("--out").arg(&table);
        if keep {
            cmd.arg("--keep-anchors");
        }
        let out = cmd.output().expect("run skinnylt fit");
        assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let after = parse(&table);
        assert_eq!(after["entries"], before["entries"], "keep {keep}");
        assert_ne!(after["planner"], before["planner"], "keep {keep}: the planner was not refitted");
        assert_eq!(after["anchors"] == before["anchors"], keep, "keep {keep}");
    }
}
