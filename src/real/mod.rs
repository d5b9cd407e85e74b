//! The real hipBLASLt: found lazily on first need, once per process, never ourselves.
//!
//! Search order (research: hipblaslt_api.md §7.1, nvidia_side.md §3.3):
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

use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::OnceLock;

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
            /// Resolves every function from `lib` (a `dlopen` handle).
            unsafe fn resolve(lib: *mut c_void) -> RealFns {
                RealFns {
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

static REAL: OnceLock<Option<RealLib>> = OnceLock::new();

/// The real hipBLASLt, resolved on first call; `None` means standalone mode.
pub fn get() -> Option<&'static RealLib> {
    REAL.get_or_init(|| {
        if crate::config::get().standalone {
            return None;
        }
        let found = unsafe { find() };
        match &found {
            Some(r) => crate::log_info!("real hipBLASLt: {} ({})", r.path, r.found_by),
            None => crate::log_info!("no real hipBLASLt found: standalone mode"),
        }
        found
    })
    .as_ref()
}

/// Base address of the object that contains `addr` (dladdr), or null.
fn object_base(addr: *const c_void) -> (*mut c_void, Option<String>) {
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr, &mut info) == 0 {
            return (std::ptr::null_mut(), None);
        }
        let name = (!info.dli_fname.is_null())
            .then(|| CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned());
        (info.dli_fbase, name)
    }
}

/// Base address of skinnylt's own object.
fn own_base() -> *mut c_void {
    object_base(own_base as *const c_void).0
}

unsafe fn find() -> Option<RealLib> {
    unsafe {
        let me = own_base();
        // 1. RTLD_NEXT.
        let next = libc::dlsym(libc::RTLD_NEXT, c"hipblasLtCreate".as_ptr());
        if !next.is_null() {
            let (base, path) = object_base(next);
            if base != me
                && let Some(path) = path
                && let Some(lib) = accept(&path, libc::RTLD_NOLOAD | libc::RTLD_LAZY, me)
            {
                return Some(RealLib { path, found_by: "RTLD_NEXT", fns: RealFns::resolve(lib) });
            }
        }
        // 2. An already-loaded copy (e.g. brought in RTLD_LOCAL by a Python extension).
        for path in loaded_objects() {
            let file = path.rsplit('/').next().unwrap_or(&path);
            if file.starts_with("libhipblaslt.so")
                && let Some(lib) = accept(&path, libc::RTLD_NOLOAD | libc::RTLD_LAZY, me)
            {
                return Some(RealLib { path, found_by: "already loaded", fns: RealFns::resolve(lib) });
            }
        }
        // 3. Explicit path, then the sonames of ROCm 7.x and 6.x.
        let mut candidates = Vec::new();
        if let Some(p) = &crate::config::get().real_lib {
            candidates.push(p.clone());
        }
        candidates.push("libhipblaslt.so.1".to_owned());
        candidates.push("libhipblaslt.so.0".to_owned());
        for c in candidates {
            if let Some(lib) = accept(&c, libc::RTLD_LAZY | libc::RTLD_LOCAL, me) {
                let path = lib_path(lib).unwrap_or(c);
                return Some(RealLib { path, found_by: "dlopen", fns: RealFns::resolve(lib) });
            }
        }
        None
    }
}

/// Opens `path` with `flags` and keeps it only if it defines `hipblasLtCreate` and
/// is not skinnylt itself.
unsafe fn accept(path: &str, flags: i32, me: *mut c_void) -> Option<*mut c_void> {
    let cpath = CString::new(path).ok()?;
    unsafe {
        let lib = libc::dlopen(cpath.as_ptr(), flags);
        if lib.is_null() {
            return None;
        }
        let create = libc::dlsym(lib, c"hipblasLtCreate".as_ptr());
        if create.is_null() || object_base(create).0 == me {
            libc::dlclose(lib);
            return None;
        }
        Some(lib)
    }
}

/// The file behind a `dlopen` handle, via one of its symbols.
unsafe fn lib_path(lib: *mut c_void) -> Option<String> {
    unsafe {
        let sym = libc::dlsym(lib, c"hipblasLtCreate".as_ptr());
        object_base(sym).1
    }
}

/// Paths of every object loaded in this process (dl_iterate_phdr).
pub fn loaded_objects() -> Vec<String> {
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> i32 {
        unsafe {
            let out = &mut *(data as *mut Vec<String>);
            let name = (*info).dlpi_name;
            if !name.is_null() {
                let s = CStr::from_ptr(name as *const c_char).to_string_lossy();
                if !s.is_empty() {
                    out.push(s.into_owned());
                }
            }
        }
        0
    }
    let mut out: Vec<String> = Vec::new();
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut out as *mut Vec<String> as *mut c_void) };
    out
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
