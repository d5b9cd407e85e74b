//! Builds the device code: every kernel the tuning files and the fallback set name,
//! for gfx942 and gfx950 (HIP mode, code objects) and sm_90 (CUDA mode, PTX), with
//! clang >= 19 and no ROCm or CUDA installation; embeds them in the library.
//! Also gives the cdylib its soname.
//!
//! Each target's generated instance file also checks, at compile time, that the
//! device code and the Rust definitions agree: the kernel ABI (src/kernels/params.rs
//! against kernels/gemm_params.h), the target facts (schema.rs TARGETS and
//! MAX_CLUSTER_SPLIT against the prelude), and every kernel's LDS bytes and threads
//! (KernelConfig::lds_bytes / threads against its class).

#[path = "src/tuning/schema.rs"]
#[allow(dead_code)]
mod schema;

#[path = "src/kernels/params.rs"]
#[allow(dead_code)]
mod params;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use schema::{FallbackFile, Family, TargetFacts, TuningFile, compiled_set, target};

const ARCHES: [&str; 3] = ["gfx942", "gfx950", "sm90"];
const MIN_CLANG: u32 = 19;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libskinnylt.so.0");
    for p in ["build.rs", "src/tuning/schema.rs", "src/kernels/params.rs", "kernels", "tuning"] {
        println!("cargo:rerun-if-changed={p}");
    }
    for f in walk(Path::new("kernels")) {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    for v in ["SKINNYLT_CLANG", "ROCM_PATH", "PATH", "SKINNYLT_GFX950_SMFMAC_B_MAP"] {
        println!("cargo:rerun-if-env-changed={v}");
    }

    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let (clang, version) = find_clang().unwrap_or_else(|| {
        panic!(
            "\n\nskinnylt needs clang >= {MIN_CLANG} (with lld) to build its GPU kernels for gfx942, gfx950 and sm_90.\n\
             Install one, e.g. on Debian/Ubuntu:\n    sudo apt-get install clang-22 lld-22\n\
             or point SKINNYLT_CLANG at a clang binary (ROCm's is found through $ROCM_PATH/llvm/bin/clang).\n\n"
        )
    });

    let fallback: FallbackFile = serde_json::from_str(&read("tuning/fallback.json")).expect("tuning/fallback.json");
    let jobs: Vec<_> = ARCHES
        .iter()
        .map(|arch| {
            let tuning: TuningFile =
                serde_json::from_str(&read(&format!("tuning/{arch}.json"))).unwrap_or_else(|e| panic!("tuning/{arch}.json: {e}"));
            assert_eq!(tuning.arch, *arch, "tuning/{arch}.json names arch {}", tuning.arch);
            let facts = target(arch).unwrap();
            // The arch's other tables (without PDL, device variants: tuning/{arch}-*.json)
            // name kernels too.
            let mut tuning = tuning;
            // The top level only: what the library embeds (a test checks the two agree).
            let mut others: Vec<PathBuf> = std::fs::read_dir("tuning").unwrap().filter_map(|e| Some(e.ok()?.path())).collect();
            others.sort();
            for path in others {
                let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
                if !(file.starts_with(&format!("{arch}-")) && file.ends_with(".json")) {
                    continue;
                }
                let name = path.display().to_string();
                let other = serde_json::from_str(&read(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
                tuning.append(other).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            let set = compiled_set(arch, &tuning, &fallback);
            for (_, c) in &set {
                if let Err(e) = c.check(&facts) {
                    panic!("tuning/{arch}*.json or fallback.json lists an invalid {arch} kernel: {e}");
                }
            }
            (arch.to_string(), set)
        })
        .collect();

    // One thread per target: three independent clang runs.
    let handles: Vec<_> = jobs
        .iter()
        .cloned()
        .map(|(arch, set)| {
            let (clang, out) = (clang.clone(), out.clone());
            std::thread::spawn(move || compile(&clang, &out, &arch, &set))
        })
        .collect();
    // Every target's outcome before failing, so that a mismatch shows on each.
    let results: Vec<Result<PathBuf, String>> = handles.into_iter().map(|h| h.join().expect("compile thread")).collect();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    if !failures.is_empty() {
        panic!("{}", failures.iter().map(|f| f.as_str()).collect::<Vec<_>>().join("\n"));
    }
    let images: Vec<PathBuf> = results.into_iter().map(Result::unwrap).collect();

    let mut generated = String::new();
    generated.push_str(&format!("pub const BUILT_WITH: &str = {:?};\n", version));
    generated.push_str(&format!("pub const CLANG: &str = {:?};\n", clang.display().to_string()));
    generated.push_str("pub static CATALOG: &[ArchKernels] = &[\n");
    for ((arch, set), image) in jobs.iter().zip(&images) {
        let arch_variant = match arch.as_str() {
            "gfx942" => "Gfx942",
            "gfx950" => "Gfx950",
            _ => "Sm90",
        };
        generated.push_str(&format!(
            "  ArchKernels {{ arch: Arch::{arch_variant}, image: include_bytes!({:?}), kernels: &[\n",
            image.display().to_string()
        ));
        for (d, c) in set {
            generated.push_str(&format!(
                "    KernelEntry {{ name: {:?}, dtype: DType::{:?}, config: KernelConfig {{ family: Family::{:?}, tile_m: {}, tile_n: {}, tile_k: {}, stages: {}, warps: {:?}, b_to_lds: {}, cluster: {}, tma: {} }} }},\n",
                c.name(*d), d, c.family, c.tile_m, c.tile_n, c.tile_k, c.stages, c.warps, c.b_to_lds, c.cluster, c.tma
            ));
        }
        generated.push_str("  ] },\n");
    }
    generated.push_str("];\n");
    std::fs::write(out.join("kernels_gen.rs"), generated).unwrap();
}

fn read(p: &str) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() { v.extend(walk(&p)) } else { v.push(p) }
        }
    }
    v.sort();
    v
}

/// `SKINNYLT_CLANG`, then `$ROCM_PATH/llvm/bin/clang`, then versioned clangs on PATH,
/// newest first, then plain `clang`; the first that reports a version >= 19, as an
/// absolute path (the library records it: the tools take the LLVM tools and the
/// emulator its clang++ from the same installation), with its version line.
fn find_clang() -> Option<(PathBuf, String)> {
    let mut c: Vec<String> = Vec::new();
    if let Ok(p) = std::env::var("SKINNYLT_CLANG") {
        c.push(p);
    }
    if let Ok(r) = std::env::var("ROCM_PATH") {
        c.push(format!("{r}/llvm/bin/clang"));
    }
    for v in (MIN_CLANG..=30).rev() {
        c.push(format!("clang-{v}"));
    }
    c.push("clang".into());
    c.into_iter().find_map(|bin| {
        let out = Command::new(&bin).arg("--version").output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let first = text.lines().next()?.to_owned();
        let ver: u32 = first.split("version ").nth(1)?.split('.').next()?.trim().parse().ok()?;
        (ver >= MIN_CLANG).then(|| (absolute(&bin), first))
    })
}

/// `bin` as an absolute path: a bare name is looked up on PATH, as Command does.
/// Symbolic links are kept (`/usr/bin/clang-22` keeps its version suffix).
fn absolute(bin: &str) -> PathBuf {
    if !bin.contains('/') {
        let on_path = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path).map(|dir| dir.join(bin)).find(|p| p.is_file())
        });
        if let Some(p) = on_path {
            return std::path::absolute(&p).unwrap_or(p);
        }
    }
    std::path::absolute(bin).unwrap_or_else(|_| PathBuf::from(bin))
}

/// The instance file of one target: the kernel ABI and target-fact checks, then
/// every kernel of `set` with the checks of its LDS bytes and threads.
fn instances_source(arch: &str, set: &[(schema::DType, schema::KernelConfig)]) -> String {
    let facts = target(arch).unwrap();
    let mut src = format!(
        "// Generated by build.rs: the kernels of tuning/{arch}*.json and fallback.json.\n#include \"splitk_gemm.h\"\n#include \"vdmfma_gemm.h\"\n#include \"wgmma_gemm.h\"\n\n"
    );
    src += &abi_checks();
    src += &target_checks(&facts);
    src.push('\n');
    for (d, c) in set {
        let [wm, wn, wk] = c.warps;
        let name = c.name(*d);
        let _ = writeln!(
            src,
            "{}({name}, {}, {}, {}, {}, {}, {wm}, {wn}, {wk}, {}, {})",
            c.family.instance_macro(c.tma),
            d.device_type(),
            c.tile_m,
            c.tile_n,
            c.tile_k,
            c.stages,
            c.b_to_lds,
            c.cluster
        );
        let (lds, threads) = (c.lds_bytes(&facts), c.threads(&facts));
        let _ = writeln!(
            src,
            "static_assert({name}_class::LDS_BYTES == {lds}, \"{name}: LDS_BYTES is not KernelConfig::lds_bytes ({lds}, src/tuning/schema.rs)\");"
        );
        let _ = writeln!(
            src,
            "static_assert({name}_class::THREADS == {threads}, \"{name}: THREADS is not KernelConfig::threads ({threads}, src/tuning/schema.rs)\");"
        );
    }
    src
}

/// static_asserts that kernels/gemm_params.h lays out the kernel arguments as
/// src/kernels/params.rs does: sizes, alignments, every field's offset and size, no
/// field the Rust side lacks, and the PDL flags.
fn abi_checks() -> String {
    use params::{GemmParams, TensorMap, TmaMaps};
    let mut s = String::from(
        "// The kernel ABI: kernels/gemm_params.h as src/kernels/params.rs lays it out.\n\
         namespace sk_abi_check {\n\
         struct Any { template <typename T> constexpr operator T() const; };\n\
         // Whether T can be brace-initialised from the given number of values: an\n\
         // aggregate with no more fields than that.\n\
         template <typename T, typename... A> constexpr auto fits(int) -> decltype(T{A{}...}, true) { return true; }\n\
         template <typename T, typename... A> constexpr bool fits(long) { return false; }\n\
         }  // namespace sk_abi_check\n",
    );
    let mut layout = |c: &str, size: usize, align: usize, fields: &[(&str, usize, usize)]| {
        let why = "differs from src/kernels/params.rs";
        let _ = writeln!(s, "static_assert(sizeof({c}) == {size} && alignof({c}) == {align}, \"{c}: size or alignment {why}\");");
        for (f, offset, bytes) in fields {
            let _ = writeln!(
                s,
                "static_assert(__builtin_offsetof({c}, {f}) == {offset} && sizeof({c}::{f}) == {bytes}, \"{c}::{f}: offset or size {why}\");"
            );
        }
        if !fields.is_empty() {
            let any = |n: usize| vec!["sk_abi_check::Any"; n].join(", ");
            let _ = writeln!(
                s,
                "static_assert(!sk_abi_check::fits<{c}, {}>(0), \"{c} has a field src/kernels/params.rs lacks\");",
                any(fields.len() + 1)
            );
        }
    };
    layout("GemmParams", size_of::<GemmParams>(), align_of::<GemmParams>(), GemmParams::FIELDS);
    layout("TensorMap", size_of::<TensorMap>(), align_of::<TensorMap>(), &[]);
    layout("TmaMaps", size_of::<TmaMaps>(), align_of::<TmaMaps>(), TmaMaps::FIELDS);
    for (c, v) in params::FLAGS {
        let _ = writeln!(s, "static_assert({c} == {v}, \"{c} differs from src/kernels/params.rs\");");
    }
    s
}

/// static_asserts that the prelude of `t` defines what schema.rs's TARGETS and
/// MAX_CLUSTER_SPLIT say, and that the families' atoms are Family::atom.
fn target_checks(t: &TargetFacts) -> String {
    let clusters = !t.amd;
    let max_cluster = if clusters { schema::MAX_CLUSTER_SPLIT } else { 1 };
    let (dense, vd) = (Family::Splitk.atom(t), Family::Vdmfma.atom(t));
    let facts = [
        ("WAVE", t.wave.to_string()),
        ("ATOM_TOKS", t.atom_toks.to_string()),
        ("COPY_BYTES", t.copy_bytes.to_string()),
        ("COPY_BY_WAVE", t.amd.to_string()),
        ("VD_ROWS", t.vd_rows.to_string()),
        ("VD_K", t.vd_k.to_string()),
        ("HAS_CLUSTERS", clusters.to_string()),
        ("MAX_CLUSTER", max_cluster.to_string()),
        ("SM_LDS_BYTES", t.sm_lds.to_string()),
        ("LDS_RESERVED_PER_CTA", t.lds_reserved.to_string()),
        ("DenseAtom::ROWS", dense.0.to_string()),
        ("DenseAtom::TOKS", dense.1.to_string()),
        ("DenseAtom::K", dense.2.to_string()),
        ("VdAtom<false>::ROWS", vd.0.to_string()),
        ("VdAtom<false>::TOKS", vd.1.to_string()),
        ("VdAtom<false>::K", vd.2.to_string()),
        ("VD_HAS_FP8", t.vd_fp8.to_string()),
    ];
    let mut s = format!("// The target facts: the prelude as src/tuning/schema.rs describes {}.\n", t.name);
    for (c, v) in facts {
        let _ = writeln!(s, "static_assert({c} == {v}, \"{c} is not {v} (src/tuning/schema.rs, {})\");", t.name);
    }
    s
}

/// Writes the instances of one target and compiles them; returns the image path, or
/// the compiler's complaint.
fn compile(clang: &Path, out: &Path, arch: &str, set: &[(schema::DType, schema::KernelConfig)]) -> Result<PathBuf, String> {
    let cpp = out.join(format!("instances_{arch}.cpp"));
    std::fs::write(&cpp, instances_source(arch, set)).unwrap();
    let kernels = std::fs::canonicalize("kernels").unwrap();
    let mut cmd = Command::new(clang);
    cmd.args(["-std=c++17", "-O3", "-Wall", "-Werror", "-Wno-unused-function"]).arg("-I").arg(&kernels);
    let image = if arch == "sm90" {
        let ptx = out.join("sm90.ptx");
        // sm_90a: the warpgroup MMA family needs the arch-specific feature set. The
        // driver JIT-compiles such PTX on CC 9.0 (H100/H200) only, which is all the
        // Sm90 arch covers.
        cmd.args(["-x", "cuda", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=sm_90a", "--cuda-device-only"])
            .args(["--cuda-feature=+ptx85", "-S", "-o"])
            .arg(&ptx);
        ptx
    } else {
        let hsaco = out.join(format!("{arch}.hsaco"));
        // The gfx950 v_smfmac B operand's k mapping, which published evidence disputes
        // (kernels/prelude/amd_layouts.h, SK_GFX950_SMFMAC_B_MAP): 0 (default) or 1.
        if let Ok(map) = std::env::var("SKINNYLT_GFX950_SMFMAC_B_MAP") {
            assert!(map == "0" || map == "1", "SKINNYLT_GFX950_SMFMAC_B_MAP must be 0 or 1, not {map:?}");
            cmd.arg(format!("-DSK_GFX950_SMFMAC_B_MAP={map}"));
        }
        cmd.args(["-x", "hip", "-nogpulib", "-nogpuinc", "--cuda-device-only", "--no-gpu-bundle-output"])
            .arg(format!("--offload-arch={arch}"))
            .arg("-o")
            .arg(&hsaco);
        hsaco
    };
    cmd.arg(&cpp);
    let res = cmd.output().map_err(|e| format!("running {}: {e}", clang.display()))?;
    if !res.status.success() {
        let stderr = String::from_utf8_lossy(&res.stderr);
        let hint = if stderr.contains("lld") { "\n(install lld, e.g. `apt-get install lld-22`)" } else { "" };
        return Err(format!("compiling the {arch} kernels failed ({cmd:?}):\n{stderr}{hint}"));
    }
    if arch == "sm90" {
        // The CUDA driver takes PTX as a NUL-terminated string.
        let mut text = std::fs::read(&image).unwrap();
        text.push(0);
        let z = out.join("sm90.ptx0");
        std::fs::write(&z, text).unwrap();
        return Ok(z);
    }
    Ok(image)
}
