//! `skinnylt kernels`: the kernels compiled into this library (the embedded catalog:
//! every template parameter, the LDS bytes and threads each launch uses), and with
//! `--toolchain` the compiler that built them and the tools of its installation.
//!
//! The catalog is what build.rs compiled, so tools that rebuild the kernels take
//! their list from here: emu/run.sh writes `--format tsv` to a file the emulator's
//! CMake reads, and takes its clang++ from `--toolchain`.

use std::path::{Path, PathBuf};

use skinnylt::gpu::Arch;
use skinnylt::kernels::{self, KernelEntry};
use skinnylt::tuning::schema;

#[derive(clap::Args)]
pub struct Args {
    /// Only this arch: gfx942, gfx950 or sm90.
    #[arg(long)]
    pub arch: Option<String>,
    /// text: aligned columns; tsv: a header line, then one tab-separated row each.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// List the toolchain instead: the clang that built the kernels, and the clang++
    /// and LLVM tools of the same installation.
    #[arg(long)]
    pub toolchain: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Tsv,
}

/// The catalog's columns, in order (the tsv header).
pub const COLUMNS: [&str; 16] = [
    "arch", "name", "dtype", "family", "tile_m", "tile_n", "tile_k", "stages", "warps_m", "warps_n", "warps_k", "b_to_lds",
    "cluster", "tma", "lds_bytes", "threads",
];

/// One catalog row, as the `COLUMNS` say.
pub fn row(arch: Arch, k: &KernelEntry) -> [String; 16] {
    let t = schema::target(arch.name()).expect("every arch has target facts");
    let c = &k.config;
    let [wm, wn, wk] = c.warps;
    [
        arch.name().to_owned(),
        k.name.to_owned(),
        k.dtype.name().to_owned(),
        c.family.name().to_owned(),
        c.tile_m.to_string(),
        c.tile_n.to_string(),
        c.tile_k.to_string(),
        c.stages.to_string(),
        wm.to_string(),
        wn.to_string(),
        wk.to_string(),
        c.b_to_lds.to_string(),
        c.cluster.to_string(),
        c.tma.to_string(),
        c.lds_bytes(&t).to_string(),
        c.threads(&t).to_string(),
    ]
}

/// The tools `--toolchain` lists, after clang itself.
const TOOLS: [&str; 3] = ["clang++", "llvm-readelf", "llvm-objdump"];

/// `tool` (clang++, llvm-readelf, ...) from the installation of the clang that built
/// the kernels (`kernels::CLANG`): beside it with the same version suffix
/// (/usr/bin/clang-22: /usr/bin/llvm-readelf-22), else beside the file it links to,
/// with and without the suffix (/usr/lib/llvm-22/bin/llvm-readelf).
pub fn tool(name: &str) -> Option<PathBuf> {
    sibling(Path::new(kernels::CLANG), name)
}

fn sibling(clang: &Path, name: &str) -> Option<PathBuf> {
    let file = clang.file_name()?.to_str()?;
    // clang-22 -> "-22"; clang -> "".
    let suffix = file.strip_prefix("clang++").or_else(|| file.strip_prefix("clang")).unwrap_or("");
    let mut candidates = vec![clang.with_file_name(format!("{name}{suffix}"))];
    if let Ok(real) = std::fs::canonicalize(clang) {
        candidates.push(real.with_file_name(format!("{name}{suffix}")));
        candidates.push(real.with_file_name(name));
    }
    candidates.into_iter().find(|p| p.is_file())
}

pub fn run(a: &Args) -> i32 {
    if a.toolchain {
        return toolchain(a.format);
    }
    let arches: Vec<Arch> = match &a.arch {
        None => Arch::ALL.to_vec(),
        Some(name) => match Arch::from_name(name) {
            Some(arch) => vec![arch],
            None => {
                eprintln!("unknown arch {name:?} (gfx942, gfx950 or sm90)");
                return 2;
            }
        },
    };
    print!("{}", catalog(&arches, a.format));
    0
}

/// The catalog of `arches` as `format` says.
pub fn catalog(arches: &[Arch], format: Format) -> String {
    let header = COLUMNS.map(str::to_owned);
    let rows: Vec<[String; 16]> =
        arches.iter().flat_map(|&arch| kernels::for_arch(arch).kernels.iter().map(move |k| row(arch, k))).collect();
    let lines = std::iter::once(&header).chain(&rows);
    match format {
        Format::Tsv => lines.map(|r| r.join("\t") + "\n").collect(),
        Format::Text => aligned(lines) + &format!("{} kernels\n", rows.len()),
    }
}

/// Columns padded to their widest cell; numbers right-aligned.
fn aligned<'a>(rows: impl Iterator<Item = &'a [String; 16]> + Clone) -> String {
    let mut widths = [0; 16];
    for r in rows.clone() {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| if cell.parse::<u64>().is_ok() { format!("{cell:>w$}") } else { format!("{cell:<w$}") })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out
}

fn toolchain(format: Format) -> i32 {
    let mut rows = vec![("clang".to_owned(), kernels::CLANG.to_owned())];
    for name in TOOLS {
        rows.push((name.to_owned(), tool(name).map_or(String::new(), |p| p.display().to_string())));
    }
    match format {
        Format::Tsv => {
            println!("tool\tpath");
            for (name, path) in &rows {
                println!("{name}\t{path}");
            }
        }
        Format::Text => {
            println!("kernels built with: {}", kernels::BUILT_WITH);
            for (name, path) in &rows {
                println!("{name:<13} {}", if path.is_empty() { "(not found beside the clang)" } else { path });
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_keep_the_installation_and_the_version_suffix() {
        let dir = std::env::temp_dir().join(format!("skinnylt-sibling-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["clang-22", "clang++-22", "llvm-readelf-22", "clang", "llvm-objdump"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let versioned = dir.join("clang-22");
        assert_eq!(sibling(&versioned, "clang++"), Some(dir.join("clang++-22")));
        assert_eq!(sibling(&versioned, "llvm-readelf"), Some(dir.join("llvm-readelf-22")));
        assert_eq!(sibling(&dir.join("clang"), "llvm-objdump"), Some(dir.join("llvm-objdump")));
        assert_eq!(sibling(&dir.join("clang"), "llvm-readelf"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The tsv is what emu/run.sh hands the emulator's CMake: the header, then
    /// every kernel of the arches asked for, one row each.
    #[test]
    fn the_tsv_lists_the_catalog() {
        let text = catalog(&[Arch::Gfx942, Arch::Gfx950], Format::Tsv);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(COLUMNS.join("\t").as_str()));
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
        let amd: Vec<&KernelEntry> = [Arch::Gfx942, Arch::Gfx950].iter().flat_map(|&a| kernels::for_arch(a).kernels).collect();
        assert_eq!(rows.len(), amd.len());
        for (r, k) in rows.iter().zip(amd) {
            assert_eq!((r.len(), r[1]), (COLUMNS.len(), k.name));
        }
        assert!(catalog(&[Arch::Sm90], Format::Text).ends_with(&format!("{} kernels\n", kernels::for_arch(Arch::Sm90).kernels.len())));
    }

    #[test]
    fn rows_follow_the_columns() {
        for ak in kernels::all() {
            for k in ak.kernels {
                let r = row(ak.arch, k);
                assert_eq!((r[0].as_str(), r[1].as_str()), (ak.arch.name(), k.name));
                assert_eq!(r[COLUMNS.iter().position(|c| *c == "dtype").unwrap()], k.dtype.name());
            }
        }
    }
}
