//! Static audit of the embedded device code (`skinnylt audit`, and a CI test).
//!
//! AMD code objects are read with LLVM's tools, from the installation of the clang
//! that built them (`crate::kernels::tool`):
//! every kernel must contain the matrix instructions of its family (dense MFMA for
//! split-K, v_smfmac for VDMFMA), use no scratch (private segment 0), keep LDS
//! within the arch limit, and leave room for at least two waves per SIMD (arch VGPRs
//! plus AGPRs <= 256 of the 512 per lane). PTX must name every catalog entry point and
//! contain `mma.sync` (split-K) or `mma.sp` (VDMFMA).

use std::path::PathBuf;
use std::process::Command;

use skinnylt::gpu::Arch;
use skinnylt::kernels::{self, ArchKernels};
use skinnylt::tuning::schema::{self, Family};

/// One kernel's audit result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelAudit {
    pub arch: &'static str,
    pub name: String,
    pub vgprs: u32,
    pub agprs: u32,
    pub sgprs: u32,
    pub scratch: u32,
    pub lds: u32,
    pub matrix_ops: u32,
    pub waves_per_simd: u32,
    pub problems: Vec<String>,
}

/// An LLVM tool of the installation whose clang built the code objects, if it runs.
pub fn find_llvm_tool(base: &str) -> Option<String> {
    let path = crate::kernels::tool(base)?;
    let runs = Command::new(&path).arg("--version").output().is_ok_and(|o| o.status.success());
    runs.then(|| path.display().to_string())
}

fn llvm_tool(base: &str) -> Result<String, String> {
    find_llvm_tool(base).ok_or_else(|| format!("{base} not found beside {}, the clang that built the kernels (install its LLVM tools, e.g. llvm-22)", kernels::CLANG))
}

fn write_temp(name: &str, bytes: &[u8]) -> Result<PathBuf, String> {
    // Unique per call: audits may run concurrently in one process (tests).
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("skinnylt-audit-{}-{n}-{name}", std::process::id()));
    std::fs::write(&p, bytes).map_err(|e| e.to_string())?;
    Ok(p)
}

fn run(tool: &str, args: &[&str]) -> Result<String, String> {
    let o = Command::new(tool).args(args).output().map_err(|e| format!("{tool}: {e}"))?;
    if !o.status.success() {
        return Err(format!("{tool} {args:?}: {}", String::from_utf8_lossy(&o.stderr)));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// A kernel's family, and whether its operands are fp8 (its matrix instructions differ).
type Kind = (Family, bool);

/// Matrix instructions a kernel of `kind` on `arch` must contain.
fn matrix_mnemonics(arch: Arch, kind: Kind) -> &'static [&'static str] {
    match (arch, kind) {
        (Arch::Gfx942, (Family::Splitk, false)) => &["v_mfma_f32_16x16x16_bf16", "v_mfma_f32_16x16x16_f16", "v_mfma_f32_16x16x16bf16_1k"],
        (Arch::Gfx950, (Family::Splitk, false)) => &["v_mfma_f32_16x16x32_bf16", "v_mfma_f32_16x16x32_f16"],
        (Arch::Gfx942 | Arch::Gfx950, (Family::Splitk, true)) => &["v_mfma_f32_16x16x32_fp8_fp8"],
        (Arch::Sm90, (Family::Splitk, false)) => &["mma.sync.aligned.m16n8k16"],
        (Arch::Sm90, (Family::Splitk, true)) => &["mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3"],
        (Arch::Gfx942, (Family::Vdmfma, false)) => &["v_smfmac_f32_16x16x32_bf16", "v_smfmac_f32_16x16x32_f16"],
        (Arch::Gfx950, (Family::Vdmfma, false)) => &["v_smfmac_f32_16x16x64_bf16", "v_smfmac_f32_16x16x64_f16"],
        (Arch::Gfx942, (Family::Vdmfma, true)) => &["v_smfmac_f32_16x16x64_fp8_fp8"],
        (Arch::Gfx950, (Family::Vdmfma, true)) => &["v_smfmac_f32_16x16x128_fp8_fp8"],
        (Arch::Sm90, (Family::Vdmfma, false)) => &["mma.sp::ordered_metadata.sync.aligned.m16n8k32"],
        (Arch::Sm90, (Family::Vdmfma, true)) => &["mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3"],
        (Arch::Sm90, (Family::Wgmma, false)) => &["wgmma.mma_async.sync.aligned.m64n"],
        (Arch::Sm90, (Family::Wgmma, true)) => &["k32.f32.e4m3.e4m3"],
        (Arch::Gfx942 | Arch::Gfx950, (Family::Wgmma, _)) => &["(none: sm_90a only)"],
    }
}

/// The kind of a catalog entry point (`None`: not in the catalog).
fn family_of(ak: &ArchKernels, name: &str) -> Option<Kind> {
    ak.kernels.iter().find(|k| k.name == name).map(|k| (k.config.family, k.dtype.is_fp8()))
}

fn count_matrix_ops(arch: Arch, family: Option<Kind>, line: &str) -> bool {
    family.is_some_and(|f| matrix_mnemonics(arch, f).iter().any(|m| line.contains(m)))
}

/// Audits an AMD code object.
fn audit_amd(ak: &ArchKernels) -> Result<Vec<KernelAudit>, String> {
    let (readelf, objdump) = (llvm_tool("llvm-readelf")?, llvm_tool("llvm-objdump")?);
    let path = write_temp(ak.arch.name(), ak.image)?;
    let p = path.to_string_lossy().into_owned();
    let notes = run(&readelf, &["--notes", &p])?;
    let disasm = run(&objdump, &["-d", &p])?;
    let _ = std::fs::remove_file(&path);

    // Kernel metadata: YAML-ish blocks of ".name:" and fields in the note.
    let mut metas: Vec<KernelAudit> = Vec::new();
    let mut cur = KernelAudit { arch: ak.arch.name(), ..Default::default() };
    let field = |line: &str| line.split(':').nth(1).map(|v| v.trim().trim_matches('\'').to_owned());
    for line in notes.lines() {
        let l = line.trim().trim_start_matches("- ");
        let num = || field(l).and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
        if l.starts_with(".agpr_count:") {
            // Each kernel's block starts with .agpr_count (fields are sorted).
            if !cur.name.is_empty() {
                metas.push(cur.clone());
            }
            cur = KernelAudit { arch: ak.arch.name(), agprs: num(), ..Default::default() };
        } else if l.starts_with(".name:") && !l.contains(".kd") {
            cur.name = field(l).unwrap_or_default();
        } else if l.starts_with(".vgpr_count:") {
            cur.vgprs = num();
        } else if l.starts_with(".sgpr_count:") {
            cur.sgprs = num();
        } else if l.starts_with(".private_segment_fixed_size:") {
            cur.scratch = num();
        } else if l.starts_with(".group_segment_fixed_size:") {
            cur.lds = num();
        }
    }
    if !cur.name.is_empty() {
        metas.push(cur);
    }
    // The family's matrix instructions per function in the disassembly ("<name>:" headers).
    let mut counts: std::collections::HashMap<String, u32> = Default::default();
    let mut func = String::new();
    let mut family = None;
    for line in disasm.lines() {
        if let Some(rest) = line.strip_suffix(">:") {
            func = rest.rsplit('<').next().unwrap_or("").to_owned();
            family = family_of(ak, &func);
        } else if count_matrix_ops(ak.arch, family, line) {
            *counts.entry(func.clone()).or_default() += 1;
        }
    }
    let lds_limit = schema::target(ak.arch.name()).ok_or("no target facts")?.lds_limit;
    for m in &mut metas {
        m.matrix_ops = counts.get(&m.name).copied().unwrap_or(0);
        // Unified 512-entry register file per lane; allocation granule 8.
        let regs = (m.vgprs.div_ceil(8) * 8) + (m.agprs.div_ceil(8) * 8);
        m.waves_per_simd = 512u32.checked_div(regs).map_or(8, |w| w.min(8));
        if m.matrix_ops == 0 {
            m.problems.push(match family_of(ak, &m.name) {
                Some(f) => format!("no {} matrix instruction ({})", f.0.name(), matrix_mnemonics(ak.arch, f).join(", ")),
                None => "not in the catalog".into(),
            });
        }
        if m.scratch != 0 {
            m.problems.push(format!("uses {} B of scratch", m.scratch));
        }
        if m.lds > lds_limit {
            m.problems.push(format!("LDS {} > {}", m.lds, lds_limit));
        }
        if m.waves_per_simd < 2 {
            m.problems.push(format!("{} VGPR+AGPR: fewer than 2 waves per SIMD", regs));
        }
    }
    check_names(ak, &metas.iter().map(|m| m.name.clone()).collect::<Vec<_>>())?;
    Ok(metas)
}

/// Audits the PTX: entry points, matrix instructions, and that it parses (ptxas,
/// when present: the device machine has it, CI does not).
fn audit_ptx(ak: &ArchKernels) -> Result<Vec<KernelAudit>, String> {
    let text = std::str::from_utf8(ak.image.strip_suffix(&[0]).unwrap_or(ak.image)).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut cur: Option<KernelAudit> = None;
    let mut family = None;
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix(".visible .entry ").or_else(|| line.trim().strip_prefix(".entry ")) {
            if let Some(k) = cur.take() {
                out.push(k);
            }
            let name = rest.split('(').next().unwrap_or("").trim().to_owned();
            family = family_of(ak, &name);
            cur = Some(KernelAudit { arch: ak.arch.name(), name, waves_per_simd: 0, ..Default::default() });
        } else if let Some(k) = cur.as_mut() {
            if count_matrix_ops(Arch::Sm90, family, line) {
                k.matrix_ops += 1;
            }
            if line.contains(".local") {
                k.scratch = 1;
            }
        }
    }
    out.extend(cur);
    for k in &mut out {
        if k.matrix_ops == 0 {
            k.problems.push(match family_of(ak, &k.name) {
                Some(f) => format!("no {}", matrix_mnemonics(Arch::Sm90, f).join(", ")),
                None => "not in the catalog".into(),
            });
        }
        if k.scratch != 0 {
            k.problems.push("uses local memory".into());
        }
    }
    check_names(ak, &out.iter().map(|m| m.name.clone()).collect::<Vec<_>>())?;
    if let Ok(ptxas) = which_ptxas() {
        let path = write_temp("sm90.ptx", text.as_bytes())?;
        let cubin = path.with_extension("cubin");
        let r = Command::new(&ptxas).args(["-arch=sm_90a", path.to_str().unwrap(), "-o", cubin.to_str().unwrap()]).output();
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&cubin);
        let o = r.map_err(|e| format!("{ptxas}: {e}"))?;
        let stderr = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() {
            return Err(format!("ptxas rejected the PTX: {stderr}"));
        }
        // Warnings include wgmma serialisation (C7514: operand registers touched
        // between MMAs; C7517: an injected wait), which would silently cost speed.
        if stderr.contains("warning") {
            return Err(format!("ptxas warned about the PTX: {stderr}"));
        }
    }
    Ok(out)
}

fn which_ptxas() -> Result<String, ()> {
    ["ptxas", "/usr/local/cuda/bin/ptxas"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .map(str::to_owned)
        .ok_or(())
}

fn check_names(ak: &ArchKernels, found: &[String]) -> Result<(), String> {
    for k in ak.kernels {
        if !found.iter().any(|f| f == k.name) {
            return Err(format!("{}: entry point {} missing from the code object", ak.arch.name(), k.name));
        }
    }
    Ok(())
}

/// Audits every embedded code object. With `require_llvm` false, AMD objects are
/// skipped (listed in the second value) when LLVM's tools are missing (e.g. on an
/// NVIDIA machine); CI requires them.
pub fn audit_all(require_llvm: bool) -> Result<(Vec<KernelAudit>, Vec<&'static str>), String> {
    let mut all = Vec::new();
    let mut skipped = Vec::new();
    let have_llvm = find_llvm_tool("llvm-readelf").is_some() && find_llvm_tool("llvm-objdump").is_some();
    for ak in kernels::all() {
        let r = match ak.arch {
            Arch::Gfx942 | Arch::Gfx950 if !have_llvm && !require_llvm => {
                skipped.push(ak.arch.name());
                continue;
            }
            Arch::Gfx942 | Arch::Gfx950 => audit_amd(ak)?,
            Arch::Sm90 => audit_ptx(ak)?,
        };
        all.extend(r);
    }
    Ok((all, skipped))
}
