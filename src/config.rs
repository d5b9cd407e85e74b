//! The process's configuration, read once from the environment when the process
//! state is made (`crate::process`); nothing changes it afterwards.
//!
//! | variable | meaning |
//! |---|---|
//! | `SKINNYLT_DISABLE=1` | forward every call to the real hipBLASLt |
//! | `SKINNYLT_LOG=level[:file]` | `off`, `error`, `warn`, `info`, `debug`, `trace` (or 0–5); `%i` in the file name becomes the pid |
//! | `SKINNYLT_MAX_M=n` | largest token count (BLAS n) skinnylt runs itself (default 128) |
//! | `SKINNYLT_TUNING_FILE=path` | a tuning JSON that replaces the shipped one for the device's arch |
//! | `SKINNYLT_TUNING_DIR=dir` | where to look for `<arch>.json` (or the device's variant file) before the embedded copies |
//! | `SKINNYLT_REAL_LIB=path` | the real hipBLASLt to forward to |
//! | `SKINNYLT_STANDALONE=1` | never look for a real hipBLASLt |
//! | `SKINNYLT_RECORD=path` | write each distinct GEMM the application calls, once, as a JSON line (`%i` = pid) |
//! | `SKINNYLT_WORKSPACE_MB=n` | size of each handle's own split-K partials buffer (default 32) |
//! | `SKINNYLT_PDL=0` | NVIDIA: launch without programmatic dependent launch (default on), routed by `tuning/sm90[-<variant>]-nopdl.json` |
//! | `SKINNYLT_PDL_TRIGGER`, `SKINNYLT_PDL_LEAD`, `SKINNYLT_PDL_PREFETCH`, `SKINNYLT_PDL_PREFETCH_X` | PDL knobs, measured defaults (docs/design.md) |

use crate::kernels::params::{PDL_LEAD_SHIFT, PDL_PREFETCH_X, PDL_TRIGGER};
use crate::log::Level;

#[derive(Clone, Debug)]
pub struct Config {
    pub disabled: bool,
    pub log_level: Level,
    pub log_file: Option<String>,
    pub max_m: u64,
    pub tuning_file: Option<String>,
    pub tuning_dir: Option<String>,
    pub real_lib: Option<String>,
    pub standalone: bool,
    pub workspace_bytes: usize,
    /// Programmatic dependent launch (sm_90): our kernels may start while the
    /// previous kernel on the stream finishes; they only prefetch weights into L2
    /// before `griddepcontrol.wait`, so results never depend on it.
    pub pdl: bool,
    /// With PDL: bytes per row a CTA prefetches into L2 before it waits
    /// (`SKINNYLT_PDL_PREFETCH`), and the kernels' PDL flags: when to let the next
    /// kernel launch (`SKINNYLT_PDL_TRIGGER=early|late`), whether to prefetch the
    /// activations too (`SKINNYLT_PDL_PREFETCH_X=0|1`). Measured knobs: docs/design.md.
    pub pdl_prefetch_row_bytes: i32,
    pub pdl_flags: i32,
    /// `SKINNYLT_RECORD`: where to write each distinct call (`crate::record`).
    pub record: Option<String>,
}

pub const DEFAULT_PDL_PREFETCH_ROW_BYTES: i32 = 1024;
/// How many K blocks before the end of its main loop a kernel lets the next one
/// launch (`SKINNYLT_PDL_LEAD`; 0 = after the loop). Measured on H100
/// (docs/design.md): 8 blocks before the end.
pub const DEFAULT_PDL_LEAD: i32 = 8;

pub const DEFAULT_MAX_M: u64 = 128;
pub const DEFAULT_WORKSPACE_MB: usize = 32;

impl Config {
    /// The configuration of this process's environment.
    pub fn from_env() -> Config {
        Config::from_lookup(|k| std::env::var(k).ok())
    }

    /// Builds the configuration from a variable lookup (pure, for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Config {
        let flag = |name: &str| get(name).is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes" | "on"));
        let (log_level, log_file) = match get("SKINNYLT_LOG") {
            Some(v) => {
                let (lvl, file) = match v.split_once(':') {
                    Some((l, f)) => (l, Some(f.to_owned())),
                    None => (v.as_str(), None),
                };
                (Level::parse(lvl).unwrap_or(Level::Info), file.filter(|f| !f.is_empty()))
            }
            None => (Level::Off, None),
        };
        Config {
            disabled: flag("SKINNYLT_DISABLE"),
            log_level,
            log_file,
            max_m: get("SKINNYLT_MAX_M").and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_MAX_M),
            tuning_file: get("SKINNYLT_TUNING_FILE").filter(|v| !v.is_empty()),
            tuning_dir: get("SKINNYLT_TUNING_DIR").filter(|v| !v.is_empty()),
            real_lib: get("SKINNYLT_REAL_LIB").filter(|v| !v.is_empty()),
            standalone: flag("SKINNYLT_STANDALONE"),
            workspace_bytes: get("SKINNYLT_WORKSPACE_MB")
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(DEFAULT_WORKSPACE_MB)
                << 20,
            pdl: !get("SKINNYLT_PDL").is_some_and(|v| matches!(v.trim(), "0" | "false" | "no" | "off")),
            pdl_prefetch_row_bytes: get("SKINNYLT_PDL_PREFETCH")
                .and_then(|v| v.trim().parse::<i32>().ok())
                .map_or(DEFAULT_PDL_PREFETCH_ROW_BYTES, |b| b.clamp(0, 1 << 20)),
            record: get("SKINNYLT_RECORD").filter(|v| !v.is_empty()),
            // `early`: a lead past any kernel's start, i.e. trigger before streaming.
            pdl_flags: PDL_TRIGGER
                | if get("SKINNYLT_PDL_PREFETCH_X").is_some_and(|v| v.trim() == "0") { 0 } else { PDL_PREFETCH_X }
                | if get("SKINNYLT_PDL_TRIGGER").is_some_and(|v| v.trim() == "early") {
                    255
                } else {
                    get("SKINNYLT_PDL_LEAD").and_then(|v| v.trim().parse::<i32>().ok()).map_or(DEFAULT_PDL_LEAD, |b| b.clamp(0, 255))
                } << PDL_LEAD_SHIFT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Config {
        Config::from_lookup(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]);
        assert!(!c.disabled && !c.standalone);
        assert_eq!(c.log_level, Level::Off);
        assert_eq!(c.max_m, DEFAULT_MAX_M);
        assert_eq!(c.workspace_bytes, DEFAULT_WORKSPACE_MB << 20);
        assert!(c.pdl);
        assert_eq!(c.pdl_flags, PDL_TRIGGER | PDL_PREFETCH_X | DEFAULT_PDL_LEAD << PDL_LEAD_SHIFT);
        assert_eq!(cfg(&[("SKINNYLT_PDL_TRIGGER", "early")]).pdl_flags >> PDL_LEAD_SHIFT, 255);
        assert_eq!(c.pdl_prefetch_row_bytes, DEFAULT_PDL_PREFETCH_ROW_BYTES);
    }

    #[test]
    fn parses_every_variable() {
        let c = cfg(&[
            ("SKINNYLT_DISABLE", "1"),
            ("SKINNYLT_LOG", "trace:/tmp/x-%i.log"),
            ("SKINNYLT_MAX_M", "16"),
            ("SKINNYLT_TUNING_FILE", "/t.json"),
            ("SKINNYLT_REAL_LIB", "/opt/rocm/lib/libhipblaslt.so.1"),
            ("SKINNYLT_WORKSPACE_MB", "8"),
        ]);
        assert!(c.disabled);
        assert_eq!(c.log_level, Level::Trace);
        assert_eq!(c.log_file.as_deref(), Some("/tmp/x-%i.log"));
        assert_eq!(c.max_m, 16);
        assert_eq!(c.tuning_file.as_deref(), Some("/t.json"));
        assert_eq!(c.real_lib.as_deref(), Some("/opt/rocm/lib/libhipblaslt.so.1"));
        assert_eq!(c.workspace_bytes, 8 << 20);
        assert_eq!(cfg(&[("SKINNYLT_LOG", "2")]).log_level, Level::Warn);
        assert!(!cfg(&[("SKINNYLT_PDL", "0")]).pdl);
        assert!(cfg(&[("SKINNYLT_PDL", "1")]).pdl);
        assert_eq!(cfg(&[("SKINNYLT_MAX_M", "junk")]).max_m, DEFAULT_MAX_M);
    }
}
