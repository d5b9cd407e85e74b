//! Logging in the spirit of `HIPBLASLT_LOG_LEVEL/FILE`: off unless `SKINNYLT_LOG`
//! asks for it; a line per call at trace level. Nothing is formatted when the level
//! is off, so the hot path pays one relaxed load.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::config::Config;

/// Levels in increasing verbosity; the discriminants (0 = off .. 5 = trace) are
/// also the numeric spellings `SKINNYLT_LOG` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "off" | "0" | "none" => Level::Off,
            "error" | "1" => Level::Error,
            "warn" | "warning" | "2" => Level::Warn,
            "info" | "3" => Level::Info,
            "debug" | "4" => Level::Debug,
            "trace" | "5" => Level::Trace,
            _ => return None,
        })
    }
}

/// 255 = not yet configured. The level and the sink are the one piece of state
/// outside `crate::process`: logging must work while the process state is made.
static LEVEL: AtomicU8 = AtomicU8::new(255);
static FILE: OnceLock<Option<String>> = OnceLock::new();
static SINK: OnceLock<Mutex<Box<dyn Write + Send>>> = OnceLock::new();

#[inline]
pub fn enabled(level: Level) -> bool {
    let mut l = LEVEL.load(Ordering::Relaxed);
    if l == 255 {
        // Making the process state configures logging (`configure`).
        crate::process::get();
        l = LEVEL.load(Ordering::Relaxed);
    }
    level as u8 <= l
}

/// Sets the level and the log file from the configuration (once, when the process
/// state is made; nothing may log before this returns).
pub fn configure(cfg: &Config) {
    let _ = FILE.set(cfg.log_file.clone());
    let l = cfg.log_level as u8;
    LEVEL.store(l, Ordering::Relaxed);
    if l > 0 {
        crate::stats::print_at_exit();
    }
}

fn sink() -> &'static Mutex<Box<dyn Write + Send>> {
    SINK.get_or_init(|| {
        let file = FILE.get().and_then(|f| f.as_ref()).and_then(|f| {
            let path = f.replace("%i", &std::process::id().to_string());
            std::fs::OpenOptions::new().create(true).append(true).open(path).ok()
        });
        Mutex::new(match file {
            Some(f) => Box::new(f),
            None => Box::new(std::io::stderr()),
        })
    })
}

/// A problem with what the user configured: written at warn level whether or not
/// logging is on, since a setting the user asked for did not take effect.
#[cold]
pub fn config_error(args: std::fmt::Arguments<'_>) {
    write(Level::Warn, args);
}

#[cold]
pub fn write(level: Level, args: std::fmt::Arguments<'_>) {
    if let Ok(mut w) = sink().lock() {
        let _ = writeln!(w, "skinnylt[{}] {:?}: {}", std::process::id(), level, args);
        let _ = w.flush();
    }
}

#[macro_export]
macro_rules! log_at {
    ($lvl:expr, $($t:tt)*) => {
        if $crate::log::enabled($lvl) { $crate::log::write($lvl, format_args!($($t)*)); }
    };
}
#[macro_export]
macro_rules! log_error { ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Error, $($t)*) }; }
#[macro_export]
macro_rules! log_warn { ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Warn, $($t)*) }; }
#[macro_export]
macro_rules! log_info { ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Info, $($t)*) }; }
#[macro_export]
macro_rules! log_debug { ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Debug, $($t)*) }; }
#[macro_export]
macro_rules! log_trace { ($($t:tt)*) => { $crate::log_at!($crate::log::Level::Trace, $($t)*) }; }
