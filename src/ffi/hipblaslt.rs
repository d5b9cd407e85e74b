//! Every C function of hipBLASLt, exported under its own name with its exact
//! signature (generated from the one list in `real/functions.rs`).
//!
//! `api` functions go to `crate::api`; the others are forwarded to the real library
//! when it has them, and return `HIPBLAS_STATUS_NOT_SUPPORTED` otherwise.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_char, c_void};

use super::guard;
use crate::abi::*;
use crate::api::real_call;

macro_rules! define_exports {
    ($($kind:ident $name:ident($($arg:ident: $ty:ty),*) $(=> $imp:ident)?;)*) => {
        $(define_exports!(@one $kind $name($($arg: $ty),*) $(=> $imp)?);)*
    };
    (@one api $name:ident($($arg:ident: $ty:ty),*) => $imp:ident) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> Status {
            guard(move || unsafe { crate::api::$imp($($arg),*) })
        }
    };
    (@one $kind:ident $name:ident($($arg:ident: $ty:ty),*)) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> Status {
            guard(move || match crate::real::get() {
                Some(lib) => real_call!(lib, $name($($arg),*)),
                None => crate::api::not_supported(),
            })
        }
    };
}
crate::hipblaslt_functions!(define_exports);
