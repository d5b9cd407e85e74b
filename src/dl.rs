//! What the dynamic loader knows about this process's objects: which object holds
//! an address (`dladdr`), and every object loaded (`dl_iterate_phdr`). Used to find
//! the real hipBLASLt (never ourselves) and the installed data directory.

use std::ffi::{CStr, c_char, c_void};

/// The object that contains `addr`: its load address and the path it was opened by.
pub fn object_of(addr: *const c_void) -> Option<(*mut c_void, Option<String>)> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads `addr` as a number and fills `info`.
    if unsafe { libc::dladdr(addr, info.as_mut_ptr()) } == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded, so it initialised `info`.
    let info = unsafe { info.assume_init() };
    // SAFETY: when set, dli_fname is a NUL-terminated path owned by the loader.
    let name = (!info.dli_fname.is_null()).then(|| unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned());
    Some((info.dli_fbase, name))
}

/// skinnylt's own object: its load address and path.
pub fn own_object() -> Option<(*mut c_void, Option<String>)> {
    object_of(own_object as *const c_void)
}

/// Paths of every object loaded in this process.
pub fn loaded_objects() -> Vec<String> {
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> i32 {
        // SAFETY: the loader passes a valid dl_phdr_info, and `data` is the
        // Vec<String> handed to dl_iterate_phdr below, borrowed for the call.
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
    // SAFETY: `visit` matches the callback type and only uses `out` while the call runs.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut out as *mut Vec<String> as *mut c_void) };
    out
}
