//! Builds what the fuzz targets need besides the library:
//! * the C test stub (`ctest/stub/stub.c`) as a shared object
//!   `$OUT_DIR/stub/libhipblaslt.so.1`, the stand-in real hipBLASLt that the
//!   `c_api_stub` target points `SKINNYLT_REAL_LIB` at (its path is passed to the
//!   target as `SKINNYLT_FUZZ_STUB`);
//! * the list of `SKINNYLT_*` variables `src/config.rs` names, for `env_parse`
//!   (`$OUT_DIR/env_names.rs`), so a variable added there is fuzzed without an
//!   edit here.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().expect("fuzz/ lives in the repository").to_path_buf();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());

    // The stub: a plain shared library, not instrumented (it is a fixture, not what
    // is fuzzed). cc only builds static archives itself, so take its compiler (the
    // one cargo would use for C, honouring CC/CFLAGS) and link a shared object.
    let ctest = root.join("ctest");
    let src = ctest.join("stub/stub.c");
    println!("cargo:rerun-if-changed=build.rs");
    for f in [&src, &ctest.join("stub/stub.h"), &ctest.join("hipblaslt_abi.h")] {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let dir = out.join("stub");
    std::fs::create_dir_all(&dir).unwrap();
    let so = dir.join("libhipblaslt.so.1");
    // The stub is built without sanitizers (cc adds them from the target's cfg
    // under `cargo fuzz`): an ASan-linked stub cannot be dlopen-ed by the
    // statically ASan-linked fuzz binary.
    let compiler = cc::Build::new().opt_level(1).pic(true).inherit_rustflags(false).get_compiler();
    let mut cmd = Command::new(compiler.path());
    cmd.args(compiler.args().iter().filter(|a| !a.to_string_lossy().starts_with("-fsanitize")));
    cmd.envs(compiler.get_envs());
    cmd.arg("-shared")
        .arg("-fvisibility=hidden")
        .arg("-Wl,-soname,libhipblaslt.so.1")
        .arg("-I")
        .arg(&ctest)
        .arg(&src)
        .arg("-o")
        .arg(&so)
        .arg("-ldl");
    let status = cmd.status().unwrap_or_else(|e| panic!("running the C compiler for {}: {e}", src.display()));
    assert!(status.success(), "building {} failed: {cmd:?}", so.display());
    println!("cargo:rustc-env=SKINNYLT_FUZZ_STUB={}", so.display());

    // Every "SKINNYLT_..." string literal of the configuration parser.
    let config = root.join("src/config.rs");
    println!("cargo:rerun-if-changed={}", config.display());
    let text = std::fs::read_to_string(&config).unwrap();
    let mut names: Vec<String> = text
        .match_indices("\"SKINNYLT_")
        .filter_map(|(i, _)| {
            let rest = &text[i + 1..];
            let name = &rest[..rest.find('"')?];
            name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_').then(|| name.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    assert!(names.len() >= 10, "found only {names:?} in {}", config.display());
    std::fs::write(out.join("env_names.rs"), format!("pub const ENV_NAMES: &[&str] = &{names:?};\n")).unwrap();
}
