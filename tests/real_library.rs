//! The real-library search refuses what is not hipBLASLt — a missing path, a
//! directory, an empty or text file, another library, and a copy of skinnylt
//! itself under hipBLASLt's name — and says so whatever the log level, since the
//! user named a library and does not get it.

use std::path::PathBuf;

/// The cdylib next to this test's build directory (target/<profile>/).
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("libskinnylt.so")
}

#[test]
fn unusable_real_libraries_are_refused_and_reported() {
    let dir = std::env::temp_dir().join(format!("skinnylt-real-lib-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.so");
    std::fs::write(&empty, b"").unwrap();
    let text = dir.join("text.so");
    std::fs::write(&text, b"not a library\n").unwrap();
    // A copy of skinnylt where hipBLASLt should be: known by its marker export,
    // not by its address (it loads at a different one).
    let copy = dir.join("libhipblaslt.so.1");
    std::fs::copy(library(), &copy).expect("build the library first");
    let cases: [(PathBuf, &str); 6] = [
        (dir.join("missing.so"), "cannot open"),
        (dir.clone(), "cannot open"),
        (empty, "cannot open"),
        (text, "cannot open"),
        (PathBuf::from("libm.so.6"), "does not define hipblasLtCreate"),
        (copy, "copy of skinnylt"),
    ];
    for (path, why) in cases {
        let path = path.to_str().unwrap();
        assert!(skinnylt::real::find(Some(path)).is_none(), "{path} accepted as the real hipBLASLt");
        let problems = skinnylt::log::problems();
        assert!(
            problems.iter().any(|p| p.contains("SKINNYLT_REAL_LIB") && p.contains(path) && p.contains(why)),
            "{path}: no report saying {why:?} in {problems:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
