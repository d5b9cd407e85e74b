//! The inspection API of the C test stub (`ctest/stub/stub.h`), the stand-in real
//! hipBLASLt of the `c_api_stub` target, resolved from the same library skinnylt
//! forwards to.

use std::ffi::{CStr, CString, c_char, c_int, c_void};

/// `struct stub_call` (stub.h): one call the stub received.
#[repr(C)]
pub struct StubCall {
    pub name: *const c_char,
    pub nargs: c_int,
    pub args: [u64; 16],
    pub out: u64,
    pub status: c_int,
    pub payload: u64,
}

/// The stub's functions. It is single-threaded and so is every fuzz target.
pub struct Stub {
    call_count: unsafe extern "C" fn() -> c_int,
    call_at: unsafe extern "C" fn(c_int) -> *const StubCall,
    reset: unsafe extern "C" fn(),
    set_status: unsafe extern "C" fn(*const c_char, c_int) -> c_int,
}

/// What one logged call says, copied out of the stub's log.
#[derive(Clone, Debug)]
pub struct Call {
    pub name: String,
    pub args: Vec<u64>,
    pub status: i32,
}

impl Stub {
    /// Opens the stub at `path` (already loaded by skinnylt: the same copy) and
    /// turns its call log into a ring, so that a long run never fills it.
    pub fn open(path: &str) -> Stub {
        let cpath = CString::new(path).unwrap();
        // SAFETY: dlopen of a NUL-terminated path; the stub has no initialisers.
        let lib = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        assert!(!lib.is_null(), "cannot open the stub {path}");
        let sym = |name: &CStr| -> *mut c_void {
            // SAFETY: `lib` is a live handle, never closed; `name` is NUL-terminated.
            let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
            assert!(!p.is_null(), "the stub lacks {name:?}");
            p
        };
        // SAFETY: each symbol is the stub.h function of exactly this signature.
        let stub = unsafe {
            Stub {
                call_count: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(sym(c"stub_call_count")),
                call_at: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int) -> *const StubCall>(sym(c"stub_call_at")),
                reset: std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(sym(c"stub_reset")),
                set_status: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_char, c_int) -> c_int>(sym(c"stub_set_status")),
            }
        };
        // SAFETY: as above.
        let set_ring = unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn(c_int)>(sym(c"stub_set_ring")) };
        // SAFETY: a plain call of the stub's own API.
        unsafe { set_ring(1) };
        stub
    }

    /// Calls logged since the last reset.
    pub fn call_count(&self) -> usize {
        // SAFETY: a plain call of the stub's own API.
        unsafe { (self.call_count)() as usize }
    }

    /// The `i`-th call since the last reset.
    pub fn call_at(&self, i: usize) -> Option<Call> {
        // SAFETY: a plain call of the stub's own API.
        let c = unsafe { (self.call_at)(i as c_int) };
        // SAFETY: null or an entry of the stub's static log, valid until the next
        // call into the stub (it is copied out here).
        let c = unsafe { c.as_ref() }?;
        // SAFETY: `name` points to one of the stub's static name strings.
        let name = unsafe { CStr::from_ptr(c.name) }.to_string_lossy().into_owned();
        let n = (c.nargs.max(0) as usize).min(c.args.len());
        Some(Call { name, args: c.args[..n].to_vec(), status: c.status })
    }

    /// Forgets the log and programs every function to return success.
    pub fn reset(&self) {
        // SAFETY: a plain call of the stub's own API.
        unsafe { (self.reset)() }
    }

    /// Makes `name` return `status` from now on.
    pub fn set_status(&self, name: &str, status: i32) {
        let cname = CString::new(name).unwrap();
        // SAFETY: a NUL-terminated name, read during the call only.
        let r = unsafe { (self.set_status)(cname.as_ptr(), status) };
        assert_eq!(r, 0, "the stub does not know {name}");
    }
}
