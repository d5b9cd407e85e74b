//! The static audit of the embedded device code, as a test (needs LLVM's
//! llvm-readelf and llvm-objdump, which CI installs with llvm-22).

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

/// The Rust mirror of SplitK::LDS_BYTES (used to size NVIDIA launches) agrees with
/// what the compiler put in every AMD code object's metadata.
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
