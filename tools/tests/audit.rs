//! The static audit of the embedded device code, as a test (needs LLVM's
//! llvm-readelf and llvm-objdump of the installation whose clang built the kernels,
//! which CI installs with llvm-22).

#[test]
fn every_embedded_kernel_passes_the_audit() {
    let (rows, skipped) = skinnylt_tools::audit::audit_all(true).expect("audit");
    assert!(skipped.is_empty());
    for arch in ["gfx942", "gfx950", "sm90"] {
        let n = rows.iter().filter(|r| r.arch == arch).count();
        assert_eq!(n, skinnylt::kernels::all().iter().find(|a| a.arch.name() == arch).unwrap().kernels.len(), "{arch}");
    }
    let bad: Vec<_> = rows.iter().filter(|r| !r.problems.is_empty()).map(|r| format!("{} {}: {:?}", r.arch, r.name, r.problems)).collect();
    assert!(bad.is_empty(), "audit problems:\n{}", bad.join("\n"));
    // Split-K kernels of both AMD arches use the agent-scope handshake and their
    // own matrix instructions; the fields read are real numbers, not defaults.
    assert!(rows.iter().filter(|r| r.arch != "sm90").all(|r| r.vgprs > 0 && r.lds > 0 && r.matrix_ops > 0));
}

/// KernelConfig::lds_bytes (used to size NVIDIA launches) is static_asserted equal
/// to every kernel class's LDS_BYTES by build.rs, on every arch; here it is also
/// compared with what the compiler put in every AMD code object's metadata.
#[test]
fn lds_size_formula_matches_the_code_objects() {
    let (rows, _) = skinnylt_tools::audit::audit_all(true).expect("audit");
    for ak in skinnylt::kernels::all().iter().filter(|a| a.arch.name() != "sm90") {
        let t = skinnylt::tuning::schema::target(ak.arch.name()).unwrap();
        for k in ak.kernels {
            let r = rows.iter().find(|r| r.name == k.name).unwrap();
            assert_eq!(r.lds, k.config.lds_bytes(&t), "{}", k.name);
        }
    }
}

/// The audit reads the code objects with the LLVM tools of the installation whose
/// clang built them (build.rs's finder is the only one).
#[test]
fn the_llvm_tools_come_from_the_building_clang() {
    let clang = std::path::Path::new(skinnylt::kernels::CLANG);
    assert!(clang.is_absolute() && clang.is_file(), "{}", clang.display());
    let dirs = [clang.parent().map(ToOwned::to_owned), std::fs::canonicalize(clang).ok().and_then(|c| c.parent().map(ToOwned::to_owned))];
    for tool in ["llvm-readelf", "llvm-objdump"] {
        let path = skinnylt_tools::audit::find_llvm_tool(tool).expect(tool);
        let dir = std::path::Path::new(&path).parent().map(ToOwned::to_owned);
        assert!(dirs.contains(&dir), "{path} is not beside {}", clang.display());
    }
}
