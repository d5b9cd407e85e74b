//! Builds the device code: every kernel the tuning files and the fallback set name,
//! for gfx942 and gfx950 (HIP mode, code objects) and sm_90 (CUDA mode, PTX), with
//! clang >= 19 and no ROCm or CUDA installation; embeds them in the library.
//! Also gives the cdylib its soname.

#[path = "src/tuning/schema.rs"]
#[allow(dead_code)]
mod schema;

use std::path::{Path, PathBuf};
use std::process::Command;

use schema::{FallbackFile, TuningFile, compiled_set, target};

const ARCHES: [&str; 3] = ["gfx942", "gfx950", "sm90"];
const MIN_CLANG: u32 = 19;

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libskinnylt.so.0");
    for p in ["build.rs", "src/tuning/schema.rs", "kernels", "tuning"] {
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
    let images: Vec<PathBuf> = handles.into_iter().map(|h| h.join().expect("compile thread")).collect();

    let mut generated = String::new();
    generated.push_str(&format!("pub const BUILT_WITH: &str = {:?};\n", version));
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
/// newest first, then plain `clang`; the first that reports a version >= 19.
fn find_clang() -> Option<(String, String)> {
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
        (ver >= MIN_CLANG).then_some((bin, first))
    })
}

/// Writes the instances of one target and compiles them; returns the image path.
fn compile(clang: &str, out: &Path, arch: &str, set: &[(schema::DType, schema::KernelConfig)]) -> PathBuf {
    let mut src = String::from(
        "// Generated by build.rs: the kernels of tuning/{arch}.json and fallback.json.\n#include \"splitk_gemm.h\"\n#include \"vdmfma_gemm.h\"\n#include \"wgmma_gemm.h\"\n",
    );
    for (d, c) in set {
        let [wm, wn, wk] = c.warps;
        src.push_str(&format!(
            "{}({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})\n",
            c.family.instance_macro(c.tma),
            c.name(*d),
            d.device_type(),
            c.tile_m,
            c.tile_n,
            c.tile_k,
            c.stages,
            wm,
            wn,
            wk,
            c.b_to_lds,
            c.cluster
        ));
    }
    let cpp = out.join(format!("instances_{arch}.cpp"));
    std::fs::write(&cpp, src).unwrap();
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
        // (kernels/prelude/target_amdgcn.h, SK_GFX950_SMFMAC_B_MAP): 0 (default) or 1.
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
    let res = cmd.output().unwrap_or_else(|e| panic!("running {clang}: {e}"));
    if !res.status.success() {
        panic!(
            "compiling the {arch} kernels failed ({:?}):\n{}\n(if the error is about ld.lld, install lld, e.g. `apt-get install lld-22`)",
            cmd,
            String::from_utf8_lossy(&res.stderr)
        );
    }
    if arch == "sm90" {
        // The CUDA driver takes PTX as a NUL-terminated string.
        let mut text = std::fs::read(&image).unwrap();
        text.push(0);
        let z = out.join("sm90.ptx0");
        std::fs::write(&z, text).unwrap();
        return z;
    }
    image
}
