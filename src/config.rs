//! The process's configuration, read once from the environment when the process
//! state is made (`crate::process`); nothing changes it afterwards.
//!
//! | variable | meaning |
//! |---|---|
//! | `SKINNYLT_DISABLE=1` | forward every call to the real hipBLASLt (switches take 1/true/yes/on, 0/false/no/off, in any case) |
//! | `SKINNYLT_LOG=level[:file]` | `off`, `error`, `warn`, `info`, `debug`, `trace` (or 0–5), or a file alone (info); `%i` in the file name becomes the pid |
//! | `SKINNYLT_MAX_M=n` | largest token count (BLAS n) skinnylt runs itself (default 128, at most 2^20) |
//! | `SKINNYLT_TUNING_FILE=path` | a tuning JSON that replaces the shipped one for the device's arch |
//! | `SKINNYLT_TUNING_DIR=dir` | where to look for `<arch>.json` (or the device's variant file) before the embedded copies |
//! | `SKINNYLT_REAL_LIB=path` | the real hipBLASLt to forward to |
//! | `SKINNYLT_STANDALONE=1` | never look for a real hipBLASLt |
//! | `SKINNYLT_RECORD=path` | write each distinct GEMM the application calls, once, as a JSON line (`%i` = pid) |
//! | `SKINNYLT_WORKSPACE_MB=n` | size of each handle's own split-K partials buffer (default 32, 1 to 65536) |
//! | `SKINNYLT_BATCH_INVARIANT=1` | every output row bitwise independent of the batch it is in (as hipBLASLt's `UNIFORM_SUMMATION_ORDER_EXT` asks per descriptor) |
//!
//! A value that cannot be used is reported on stderr (once, whatever the log level)
//! and in `skinnylt info`, with what was used instead; nothing fails.
//! | `SKINNYLT_ALGO=any` | run what skinnylt can even when the caller passes a real library's algo (default `own`: such a call is forwarded untouched) |
//! | `SKINNYLT_PDL=0` | NVIDIA: launch without programmatic dependent launch (default on), routed by `tuning/sm90[-<variant>]-nopdl.json` |
//! | `SKINNYLT_PDL_TRIGGER`, `SKINNYLT_PDL_LEAD`, `SKINNYLT_PDL_PREFETCH`, `SKINNYLT_PDL_PREFETCH_X=shared\|each\|0` | PDL knobs, measured defaults (docs/design.md) |

use crate::kernels::params::{PDL_LEAD_SHIFT, PDL_PREFETCH_X, PDL_PREFETCH_X_SHARED, PDL_TRIGGER};
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
    /// activations too, shared by a tile row's CTAs or each CTA its own rows
    /// (`SKINNYLT_PDL_PREFETCH_X=shared|each|0`). Measured knobs: docs/design.md.
    pub pdl_prefetch_row_bytes: i32,
    pub pdl_flags: i32,
    /// `SKINNYLT_RECORD`: where to write each distinct call (`crate::record`).
    pub record: Option<String>,
    /// `SKINNYLT_BATCH_INVARIANT`: plan every call as a descriptor with
    /// `UNIFORM_SUMMATION_ORDER_EXT` set (see `route::Problem::batch_invariant`).
    pub batch_invariant: bool,
    /// `SKINNYLT_ALGO=any`: run what skinnylt can whatever algo the caller passes;
    /// by default a real library's algo is forwarded with the call, untouched.
    pub any_algo: bool,
    /// hipBLASLt's bench log (`HIPBLASLT_LOG_MASK` bit 32), for the calls skinnylt
    /// runs (`crate::benchlog`).
    pub bench_log: Option<crate::benchlog::Sink>,
    /// Values that could not be used, each with what was used instead: reported
    /// once at warn level when the process state is made (`crate::process`).
    pub problems: Vec<String>,
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

    /// Builds the configuration from a variable lookup (pure, for tests). A value
    /// that cannot be used is named in `problems` with what was used instead; an
    /// empty value counts as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Config {
        let mut env = Env { get: &get, problems: Vec::new() };
        let (log_level, log_file) = env.log();
        let mut c = Config {
            disabled: env.flag("SKINNYLT_DISABLE", false),
            log_level,
            log_file,
            max_m: env.number("SKINNYLT_MAX_M", 0..=MAX_M_LIMIT, DEFAULT_MAX_M),
            tuning_file: env.value("SKINNYLT_TUNING_FILE"),
            tuning_dir: env.value("SKINNYLT_TUNING_DIR"),
            real_lib: env.value("SKINNYLT_REAL_LIB"),
            standalone: env.flag("SKINNYLT_STANDALONE", false),
            workspace_bytes: (env.number("SKINNYLT_WORKSPACE_MB", 1..=MAX_WORKSPACE_MB, DEFAULT_WORKSPACE_MB as u64) as usize) << 20,
            pdl: env.flag("SKINNYLT_PDL", true),
            pdl_prefetch_row_bytes: env.number("SKINNYLT_PDL_PREFETCH", 0..=1 << 20, DEFAULT_PDL_PREFETCH_ROW_BYTES as u64) as i32,
            record: env.value("SKINNYLT_RECORD"),
            any_algo: env.algo(),
            batch_invariant: env.flag("SKINNYLT_BATCH_INVARIANT", false),
            bench_log: crate::benchlog::sink_from(&get),
            pdl_flags: 0,
            problems: Vec::new(),
        };
        // `early`: a lead past any kernel's start, i.e. trigger before streaming.
        let early = match env.value("SKINNYLT_PDL_TRIGGER").map(|v| v.to_ascii_lowercase()) {
            None => false,
            Some(v) if v == "early" || v == "late" => v == "early",
            Some(v) => {
                env.problem(format_args!("SKINNYLT_PDL_TRIGGER={v:?} is not early or late; using late"));
                false
            }
        };
        let lead = env.number("SKINNYLT_PDL_LEAD", 0..=255, DEFAULT_PDL_LEAD as u64);
        let lead = if early { 255 } else { lead };
        c.pdl_flags = PDL_TRIGGER | env.prefetch_x() | (lead as i32) << PDL_LEAD_SHIFT;
        c.problems = env.problems;
        c
    }
}

/// Largest `SKINNYLT_MAX_M`: far beyond decode, and within the kernels' 32-bit
/// token arithmetic.
pub const MAX_M_LIMIT: u64 = 1 << 20;
/// Largest `SKINNYLT_WORKSPACE_MB` (64 GiB), so the byte count cannot overflow.
pub const MAX_WORKSPACE_MB: u64 = 1 << 16;

/// The environment as the parser reads it, and what it could not use.
struct Env<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
    problems: Vec<String>,
}

/// A switch's value, in any case: 1/true/yes/on or 0/false/no/off; `None` otherwise.
fn switch(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

impl Env<'_> {
    /// The trimmed value, `None` when unset or empty.
    fn value(&self, name: &str) -> Option<String> {
        (self.get)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    fn problem(&mut self, args: std::fmt::Arguments<'_>) {
        self.problems.push(args.to_string());
    }

    /// A switch, in any case: 1/true/yes/on or 0/false/no/off. Anything else is a
    /// problem and counts as set: whoever set a kill switch wants it on.
    fn flag(&mut self, name: &str, default: bool) -> bool {
        let Some(v) = self.value(name) else { return default };
        match switch(&v) {
            Some(on) => on,
            None => {
                let on = !default;
                self.problem(format_args!("{name}={v:?} is not 1/true/yes/on or 0/false/no/off; taken as {}", if on { "on" } else { "off" }));
                on
            }
        }
    }

    /// A whole number in `range`, else `default` (and a problem).
    fn number(&mut self, name: &str, range: std::ops::RangeInclusive<u64>, default: u64) -> u64 {
        let Some(v) = self.value(name) else { return default };
        match v.parse::<u64>() {
            Ok(n) if range.contains(&n) => n,
            _ => {
                self.problem(format_args!("{name}={v:?} is not a whole number from {} to {}; using {default}", range.start(), range.end()));
                default
            }
        }
    }

    /// `SKINNYLT_PDL_PREFETCH_X`: `shared` (the default, also any "on" switch
    /// value: the CTAs of a tile row share the activation prefetch), `each` (each
    /// CTA prefetches its own activation rows) or an "off" switch value (none);
    /// the `PDL_PREFETCH_X*` flags.
    fn prefetch_x(&mut self) -> i32 {
        const SHARED: i32 = PDL_PREFETCH_X | PDL_PREFETCH_X_SHARED;
        let Some(v) = self.value("SKINNYLT_PDL_PREFETCH_X") else { return SHARED };
        match (v.to_ascii_lowercase().as_str(), switch(&v)) {
            ("shared", _) | (_, Some(true)) => SHARED,
            ("each", _) => PDL_PREFETCH_X,
            (_, Some(false)) => 0,
            (_, None) => {
                self.problem(format_args!("SKINNYLT_PDL_PREFETCH_X={v:?} is not shared, each, 1/true/yes/on or 0/false/no/off; using shared"));
                SHARED
            }
        }
    }

    /// `SKINNYLT_ALGO=own|any`: true for `any`.
    fn algo(&mut self) -> bool {
        match self.value("SKINNYLT_ALGO").map(|v| v.to_ascii_lowercase()) {
            None => false,
            Some(v) if v == "own" || v == "any" => v == "any",
            Some(v) => {
                self.problem(format_args!("SKINNYLT_ALGO={v:?} is not own or any; using own"));
                false
            }
        }
    }

    /// `SKINNYLT_LOG=level[:file]`, or a file alone (level info).
    fn log(&mut self) -> (Level, Option<String>) {
        let Some(v) = self.value("SKINNYLT_LOG") else { return (Level::Off, None) };
        let (level, file) = match v.split_once(':') {
            // A colon inside a path is part of the file name.
            Some((l, f)) if !l.contains('/') => (l, Some(f.trim()).filter(|f| !f.is_empty())),
            _ if Level::parse(&v).is_some() => (v.as_str(), None),
            // Not a level: something that looks like a file name is the file.
            _ if v.contains('/') || v.contains('.') => ("info", Some(v.as_str())),
            _ => (v.as_str(), None),
        };
        let level = Level::parse(level).unwrap_or_else(|| {
            self.problem(format_args!("SKINNYLT_LOG={v:?}: {level:?} is not a level (off, error, warn, info, debug, trace or 0-5); logging at info"));
            Level::Info
        });
        (level, file.map(str::to_owned))
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
        assert_eq!(c.pdl_flags, PDL_TRIGGER | PDL_PREFETCH_X | PDL_PREFETCH_X_SHARED | DEFAULT_PDL_LEAD << PDL_LEAD_SHIFT);
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

    /// A switch is read in any case; an unknown value counts as set, and is reported.
    #[test]
    fn switches_ignore_case_and_report_unknown_values() {
        for v in ["1", "TRUE", "Yes", "ON", "true", " on "] {
            let c = cfg(&[("SKINNYLT_DISABLE", v), ("SKINNYLT_STANDALONE", v)]);
            assert!(c.disabled && c.standalone && c.problems.is_empty(), "{v:?}");
        }
        for v in ["0", "FALSE", "No", "OFF", ""] {
            let c = cfg(&[("SKINNYLT_DISABLE", v)]);
            assert!(!c.disabled && c.problems.is_empty(), "{v:?}");
        }
        let c = cfg(&[("SKINNYLT_DISABLE", "2")]);
        assert!(c.disabled);
        assert!(c.problems.len() == 1 && c.problems[0].contains("SKINNYLT_DISABLE"), "{:?}", c.problems);
        let c = cfg(&[("SKINNYLT_PDL", "maybe")]);
        assert!(!c.pdl && c.problems[0].contains("SKINNYLT_PDL"));
        assert!(!cfg(&[("SKINNYLT_PDL", "Off")]).pdl);
    }

    /// Numbers out of range or malformed fall back to the default, and say so; the
    /// workspace size can no longer overflow.
    #[test]
    fn bad_numbers_are_reported_and_replaced_by_defaults() {
        for v in ["-1", "abc", "1e9", "18446744073709551616", "1048577"] {
            let c = cfg(&[("SKINNYLT_MAX_M", v)]);
            assert_eq!(c.max_m, DEFAULT_MAX_M, "{v}");
            assert!(c.problems.len() == 1 && c.problems[0].contains("SKINNYLT_MAX_M"), "{v}: {:?}", c.problems);
        }
        assert_eq!(cfg(&[("SKINNYLT_MAX_M", "0")]).max_m, 0);
        for v in ["17592186044416", "8796093022208", "0", "65537", "-5"] {
            let c = cfg(&[("SKINNYLT_WORKSPACE_MB", v)]);
            assert_eq!(c.workspace_bytes, DEFAULT_WORKSPACE_MB << 20, "{v}");
            assert!(c.problems[0].contains("SKINNYLT_WORKSPACE_MB"), "{v}");
        }
        assert_eq!(cfg(&[("SKINNYLT_WORKSPACE_MB", "65536")]).workspace_bytes, 65536 << 20);
        let c = cfg(&[("SKINNYLT_PDL_LEAD", "300")]);
        assert_eq!(c.pdl_flags >> PDL_LEAD_SHIFT, DEFAULT_PDL_LEAD);
        assert!(c.problems[0].contains("SKINNYLT_PDL_LEAD"));
        assert_eq!(cfg(&[("SKINNYLT_PDL_TRIGGER", "late"), ("SKINNYLT_PDL_LEAD", "3")]).pdl_flags >> PDL_LEAD_SHIFT, 3);
        assert!(cfg(&[("SKINNYLT_PDL_TRIGGER", "soon")]).problems[0].contains("SKINNYLT_PDL_TRIGGER"));
        let x_flags = |v: &str| {
            let c = cfg(&[("SKINNYLT_PDL_PREFETCH_X", v)]);
            (c.pdl_flags & (PDL_PREFETCH_X | PDL_PREFETCH_X_SHARED), c.problems.len())
        };
        let shared = PDL_PREFETCH_X | PDL_PREFETCH_X_SHARED;
        assert_eq!(x_flags("1"), (shared, 0));
        assert_eq!(x_flags("Shared"), (shared, 0));
        assert_eq!(x_flags("EACH"), (PDL_PREFETCH_X, 0));
        assert_eq!(x_flags("off"), (0, 0));
        assert_eq!(x_flags("halfway"), (shared, 1));
    }

    /// `SKINNYLT_LOG`: a level, a level and a file, or a file alone.
    #[test]
    fn log_takes_a_level_a_file_or_both() {
        let log = |v: &str| {
            let c = cfg(&[("SKINNYLT_LOG", v)]);
            (c.log_level, c.log_file, c.problems.len())
        };
        assert_eq!(log("/tmp/x.log"), (Level::Info, Some("/tmp/x.log".into()), 0));
        assert_eq!(log("skinnylt.log"), (Level::Info, Some("skinnylt.log".into()), 0));
        assert_eq!(log("/tmp/a:b.log"), (Level::Info, Some("/tmp/a:b.log".into()), 0));
        assert_eq!(log("WARN:/tmp/x"), (Level::Warn, Some("/tmp/x".into()), 0));
        assert_eq!(log("debug:"), (Level::Debug, None, 0));
        assert_eq!(log("verbose"), (Level::Info, None, 1));
        assert_eq!(log("bogus:/tmp/x"), (Level::Info, Some("/tmp/x".into()), 1));
    }

    proptest::proptest! {
        /// Whatever the environment holds, parsing never panics and every number
        /// it keeps is within its documented range.
        #[test]
        fn any_environment_parses_within_bounds(values in proptest::collection::vec(proptest::option::of(".{0,24}"), 14)) {
            const NAMES: [&str; 14] = ["SKINNYLT_ALGO", "SKINNYLT_BATCH_INVARIANT", "SKINNYLT_DISABLE", "SKINNYLT_LOG", "SKINNYLT_MAX_M", "SKINNYLT_TUNING_FILE", "SKINNYLT_REAL_LIB", "SKINNYLT_STANDALONE", "SKINNYLT_WORKSPACE_MB", "SKINNYLT_PDL", "SKINNYLT_PDL_PREFETCH", "SKINNYLT_PDL_TRIGGER", "SKINNYLT_PDL_LEAD", "SKINNYLT_PDL_PREFETCH_X"];
            let c = Config::from_lookup(|k| NAMES.iter().position(|n| *n == k).and_then(|i| values[i].clone()));
            proptest::prop_assert!(c.max_m <= MAX_M_LIMIT);
            proptest::prop_assert!(c.workspace_bytes >= 1 << 20 && c.workspace_bytes as u64 <= MAX_WORKSPACE_MB << 20);
            proptest::prop_assert!((0..=1 << 20).contains(&c.pdl_prefetch_row_bytes));
        }
    }
}
