//! `libskinnylt.so` exports exactly the C API: every hipBLASLt function of the one
//! list (`real/functions.rs`) and skinnylt's own functions (`include/skinnylt.h`),
//! and nothing else — no Rust symbol, nothing of the tools. (Needs binutils' nm.)

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// The cdylib next to this test's build directory (target/<profile>/).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>");
    dir.join("libskinnylt.so")
}

#[test]
fn the_library_exports_only_the_c_api() {
    let lib = library();
    assert!(lib.exists(), "{} missing: build the library first", lib.display());
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(&lib).output().expect("run nm");
    assert!(out.status.success(), "nm failed: {}", String::from_utf8_lossy(&out.stderr));
    let exported: BTreeSet<String> = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().nth(2)).map(str::to_owned).collect();

    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/skinnylt.h")).unwrap();
    let own = header.lines().filter_map(|l| {
        let name = l.split('(').next()?.split_whitespace().last()?.trim_start_matches('*');
        (name.starts_with("skinnylt_") && l.contains('(')).then(|| name.to_owned())
    });
    let expected: BTreeSet<String> = skinnylt::real::EXPORTED.iter().map(|(_, n)| (*n).to_owned()).chain(own).collect();
    assert!(expected.len() > skinnylt::real::EXPORTED.len(), "no skinnylt_ functions read from the header");

    let extra: Vec<_> = exported.difference(&expected).collect();
    let missing: Vec<_> = expected.difference(&exported).collect();
    assert!(extra.is_empty() && missing.is_empty(), "exported but not the C API: {extra:?}; C API not exported: {missing:?}");
}
