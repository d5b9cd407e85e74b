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

/// 255 = not yet configured. The level, the sink and the problems reported are
/// the one piece of state outside `crate::process`: logging must work while the
/// process state is made.
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
            open_log(&path)
                .map_err(|e| {
                    // The sink is being made: this one line goes to stderr directly.
                    let msg = format!("SKINNYLT_LOG: cannot write to {path}: {e}; logging to stderr");
                    if remember(msg.clone()) {
                        line(&mut std::io::stderr(), Level::Warn, format_args!("{msg}"));
                    }
                })
                .ok()
        });
        Mutex::new(match file {
            Some(f) => Box::new(f),
            None => Box::new(std::io::stderr()),
        })
    })
}

/// Opens the log for appending without ever blocking: a FIFO nobody reads is
/// refused (ENXIO) instead of stopping the process at its first log line.
fn open_log(path: &str) -> std::io::Result<std::fs::File> {
    open_nonblocking(path, true)
}

/// Opens `path` for writing (appending, or truncating it), created if missing,
/// without blocking on a FIFO that has no reader; writes block again once open,
/// so a reader that is there keeps every line.
pub fn open_nonblocking(path: &str, append: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.create(true).custom_flags(libc::O_NONBLOCK);
    if append {
        o.append(true);
    } else {
        o.write(true).truncate(true);
    }
    let f = o.open(path)?;
    // SAFETY: F_GETFL/F_SETFL on a descriptor this function owns.
    unsafe {
        use std::os::fd::AsRawFd;
        let fd = f.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(f)
}

/// Configuration problems reported so far, each once.
static PROBLEMS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records a problem; false when it was already reported.
fn remember(msg: String) -> bool {
    let mut seen = PROBLEMS.lock().unwrap_or_else(|e| e.into_inner());
    let new = !seen.contains(&msg);
    if new {
        seen.push(msg);
    }
    new
}

/// Every configuration problem reported in this process (`skinnylt info`).
pub fn problems() -> Vec<String> {
    PROBLEMS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A problem with what the user configured: written once, at warn level, whether
/// or not logging is on, since a setting the user asked for did not take effect.
#[cold]
pub fn config_error(args: std::fmt::Arguments<'_>) {
    let msg = args.to_string();
    if remember(msg.clone()) {
        write(Level::Warn, format_args!("{msg}"));
    }
}

#[cold]
pub fn write(level: Level, args: std::fmt::Arguments<'_>) {
    if let Ok(mut w) = sink().lock() {
        line(&mut *w, level, args);
    }
}

fn line(w: &mut dyn Write, level: Level, args: std::fmt::Arguments<'_>) {
    let _ = writeln!(w, "skinnylt[{}] {:?}: {}", std::process::id(), level, args);
    let _ = w.flush();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A log FIFO nobody reads is refused at once instead of blocking the process
    /// at its first log line; a regular file opens for appending.
    #[test]
    fn a_fifo_without_reader_is_refused_without_blocking() {
        let dir = std::env::temp_dir().join(format!("skinnylt-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo of a NUL-terminated path in a directory this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_log(fifo.to_str().unwrap()).expect_err("a FIFO without reader opened");
        assert_eq!(e.raw_os_error(), Some(libc::ENXIO));
        let file = dir.join("log");
        writeln!(open_log(file.to_str().unwrap()).unwrap(), "one").unwrap();
        writeln!(open_log(file.to_str().unwrap()).unwrap(), "two").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A configuration problem is kept once, however often it is reported.
    #[test]
    fn problems_are_kept_once() {
        config_error(format_args!("test problem {}", 7));
        config_error(format_args!("test problem {}", 7));
        assert_eq!(problems().iter().filter(|p| *p == "test problem 7").count(), 1);
    }
}
