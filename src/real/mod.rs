//! The real hipBLASLt: found once per process, when the process state first needs
//! its mode (`crate::process`), and never ourselves.
//!
//! Search order:
//! 1. `dlsym(RTLD_NEXT)`: the library that follows us in the global scope (the
//!    usual case under `LD_PRELOAD` when the application links hipBLASLt);
//! 2. an already-loaded `libhipblaslt.so*` found by walking the loaded objects and
//!    reopened with `RTLD_NOLOAD` (Python loads extension modules `RTLD_LOCAL`, so
//!    step 1 misses the copy PyTorch brought in);
//! 3. `dlopen` of `$SKINNYLT_REAL_LIB`, `libhipblaslt.so.1`, `libhipblaslt.so.0`.
//!
//! Every candidate is checked not to be skinnylt itself (it may be installed under
//! hipBLASLt's soname). The library handle is never closed, so the function
//! pointers stay valid for the life of the process.

#[macro_use]
mod functions;

use std::ffi::{CString, c_char, c_void};

use crate::abi::*;

macro_rules! define_table {
    ($($kind:ident $name:ident($($arg:ident: $ty:ty),*) $(=> $imp:ident)?;)*) => {
        /// Function pointers into the real hipBLASLt; `None` where this version of
        /// the library lacks the function.
        #[allow(non_snake_case)]
        pub struct RealFns {
            $(pub $name: Option<unsafe extern "C" fn($($ty),*) -> Status>,)*
        }

        impl RealFns {
            /// Resolves every function from `lib`, a live `dlopen` handle that is
            /// never closed (`accept`).
            fn resolve(lib: *mut c_void) -> RealFns {
                RealFns {
                    // SAFETY: `lib` is a live handle; each symbol has the C signature
                    // of hipblaslt.h declared in the list.
                    $($name: unsafe {
                        let p = libc::dlsym(lib, concat!(stringify!($name), "\0").as_ptr().cast());
                        if p.is_null() { None } else { Some(std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> Status>(p)) }
                    },)*
                }
            }

            /// Names of the functions this library lacks, with their kind ("api" and
            /// "fwd" are the 24 of every version; "newer", "extop").
            pub fn missing(&self) -> Vec<(&'static str, &'static str)> {
                let mut out = Vec::new();
                $(if self.$name.is_none() { out.push((stringify!($kind), stringify!($name))); })*
                out
            }
        }

        /// Every exported name with its kind, in header order.
        pub const EXPORTED: &[(&str, &str)] = &[$((stringify!($kind), stringify!($name)),)*];
    };
}
hipblaslt_functions!(define_table);

/// The real library, once found.
pub struct RealLib {
    pub path: String,
    /// How it was found (for `skinnylt info` and logs).
    pub found_by: &'static str,
    pub fns: RealFns,
}

/// Finds the real hipBLASLt (see the module comment); `None` means standalone mode.
/// Called once per process, when the process state first needs its mode. A
/// `SKINNYLT_REAL_LIB` that cannot be used, or a copy of skinnylt where hipBLASLt
/// should be, is reported (`crate::log::config_error`).
pub fn find(explicit: Option<&str>) -> Option<RealLib> {
    let me = crate::dl::own_object().map_or(std::ptr::null_mut(), |o| o.0);
    let found = find_rtld_next(me).or_else(|| find_loaded(me)).or_else(|| find_by_name(explicit, me));
    match &found {
        Some(r) => crate::log_info!("real hipBLASLt: {} ({})", r.path, r.found_by),
        None => crate::log_info!("no real hipBLASLt found: standalone mode"),
    }
    found
}

/// 1. The library that follows us in the global scope.
fn find_rtld_next(me: *mut c_void) -> Option<RealLib> {
    // SAFETY: RTLD_NEXT lookup of a NUL-terminated name; only the address is used.
    let next = unsafe { libc::dlsym(libc::RTLD_NEXT, c"hipblasLtCreate".as_ptr()) };
    let (base, path) = crate::dl::object_of(next).filter(|_| !next.is_null())?;
    let path = path.filter(|_| base != me)?;
    let lib = accept(&path, libc::RTLD_NOLOAD | libc::RTLD_LAZY, me).map_err(|e| report_copy(&path, &e)).ok()?;
    Some(RealLib { path, found_by: "RTLD_NEXT", fns: RealFns::resolve(lib) })
}

/// 2. An already-loaded copy (e.g. brought in RTLD_LOCAL by a Python extension).
fn find_loaded(me: *mut c_void) -> Option<RealLib> {
    crate::dl::loaded_objects().into_iter().find_map(|path| {
        let file = path.rsplit('/').next().unwrap_or(&path);
        if !file.starts_with("libhipblaslt.so") {
            return None;
        }
        let lib = accept(&path, libc::RTLD_NOLOAD | libc::RTLD_LAZY, me).map_err(|e| report_copy(&path, &e)).ok()?;
        Some(RealLib { path, found_by: "already loaded", fns: RealFns::resolve(lib) })
    })
}

/// 3. An explicit path, then the sonames of ROCm 7.x and 6.x.
fn find_by_name(explicit: Option<&str>, me: *mut c_void) -> Option<RealLib> {
    let open = |c: &str| -> Result<RealLib, Refusal> {
        let lib = accept(c, libc::RTLD_LAZY | libc::RTLD_LOCAL, me)?;
        // SAFETY: `lib` is a live handle that defines hipblasLtCreate (accept checked).
        let create = unsafe { libc::dlsym(lib, c"hipblasLtCreate".as_ptr()) };
        let path = crate::dl::object_of(create).and_then(|o| o.1).unwrap_or_else(|| c.to_owned());
        Ok(RealLib { path, found_by: "dlopen", fns: RealFns::resolve(lib) })
    };
    if let Some(path) = explicit {
        match open(path) {
            Ok(lib) => return Some(lib),
            // The user named a library and does not get it: say so, whatever the log level.
            Err(e) => crate::log::config_error(format_args!("SKINNYLT_REAL_LIB={path:?} is not usable ({e}); looking for libhipblaslt.so.1")),
        }
    }
    ["libhipblaslt.so.1", "libhipblaslt.so.0"].into_iter().find_map(|c| open(c).map_err(|e| report_copy(c, &e)).ok())
}

/// Why a candidate is not the real hipBLASLt.
#[derive(Debug)]
enum Refusal {
    /// dlopen failed (missing, not a shared object, a directory...), with dlerror.
    Open(String),
    NotHipblaslt,
    /// Another copy of skinnylt (it exports `skinnylt_version`), or this one.
    Skinnylt,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Open(e) => write!(f, "cannot open it: {e}"),
            Refusal::NotHipblaslt => f.write_str("it does not define hipblasLtCreate"),
            Refusal::Skinnylt => f.write_str("it is a copy of skinnylt, not hipBLASLt"),
        }
    }
}

/// A skinnylt copy installed where hipBLASLt should be is a setup mistake the
/// user must hear about: every call it would have served now runs standalone.
fn report_copy(path: &str, e: &Refusal) {
    if matches!(e, Refusal::Skinnylt) {
        crate::log::config_error(format_args!("{path} is a copy of skinnylt, not hipBLASLt; it is not used as the real library"));
    }
}

/// Opens `path` with `flags` and keeps it only if it defines `hipblasLtCreate` and
/// is not skinnylt, this copy or another: a copy is known by its marker export
/// `skinnylt_version`, whatever its address. The handle is never closed.
fn accept(path: &str, flags: i32, me: *mut c_void) -> Result<*mut c_void, Refusal> {
    let cpath = CString::new(path).map_err(|_| Refusal::Open("the path holds a NUL byte".into()))?;
    // SAFETY: dlopen of a NUL-terminated path; loading a library runs its
    // initialisers, which the application would run by linking it.
    let lib = unsafe { libc::dlopen(cpath.as_ptr(), flags) };
    if lib.is_null() {
        // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the
        // next dl call on this thread; it is copied at once.
        let msg = unsafe {
            let err = libc::dlerror();
            if err.is_null() { "unknown error".into() } else { std::ffi::CStr::from_ptr(err).to_string_lossy().into_owned() }
        };
        return Err(Refusal::Open(msg));
    }
    // SAFETY: `lib` is the live handle just opened; lookups of NUL-terminated names.
    let (create, marker) = unsafe { (libc::dlsym(lib, c"hipblasLtCreate".as_ptr()), libc::dlsym(lib, c"skinnylt_version".as_ptr())) };
    let refusal = if create.is_null() {
        Some(Refusal::NotHipblaslt)
    } else if !marker.is_null() || crate::dl::object_of(create).map(|o| o.0) == Some(me) {
        Some(Refusal::Skinnylt)
    } else {
        None
    };
    match refusal {
        None => Ok(lib),
        Some(r) => {
            // SAFETY: closes the handle opened above, which nothing else holds.
            unsafe { libc::dlclose(lib) };
            Err(r)
        }
    }
}

thread_local! {
    /// Set while this thread is inside the real library, so calls it makes back
    /// into hipBLASLt's exported names (bound to ours) pass straight through.
    static IN_REAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True when the current call came from inside the real library.
pub fn reentered() -> bool {
    IN_REAL.with(|f| f.get())
}

/// Runs `f` (a call into the real library) with the re-entrancy flag set.
pub fn call<R>(f: impl FnOnce() -> R) -> R {
    let was = IN_REAL.with(|flag| flag.replace(true));
    let r = f();
    IN_REAL.with(|flag| flag.set(was));
    r
}
