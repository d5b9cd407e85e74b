//! The kernel ABI on the Rust side: the arguments every kernel takes
//! (`GemmParams`, and `TmaMaps` for the TMA-fed ones) and the bits of
//! `GemmParams::pdl_flags` and `GemmParams::flags`. The C side is `kernels/gemm_params.h`, shared by the
//! device code, the emulator and C++ tools.
//!
//! These definitions are the numbers the build checks against: build.rs includes
//! this file and writes, into every target's generated instance file, static_asserts
//! of each struct's size and alignment, every field's offset and size (`FIELDS`), the
//! field count and the flag values. Depends on `core` only (build.rs compiles it).

/// Defines an ABI struct and `FIELDS`: every field's (name, offset, size), in
/// declaration order, so that the build's check covers exactly the fields declared.
macro_rules! abi_struct {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident: $ty:ty,)* }) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }
        impl $name {
            /// Every field: (name, byte offset, byte size), in declaration order.
            pub const FIELDS: &'static [(&'static str, usize, usize)] =
                &[$((stringify!($field), core::mem::offset_of!($name, $field), core::mem::size_of::<$ty>()),)*];
        }
    };
}

abi_struct! {
    /// Kernel arguments, passed by value (`GemmParams` in kernels/gemm_params.h).
    /// Device pointers are carried as `u64`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct GemmParams {
        /// W(n, k) at w[n * ldw + k].
        pub w: u64,
        /// X(t, k) at x[t * ldx + k].
        pub x: u64,
        /// Y(t, n) at y[t * ldy + n].
        pub y: u64,
        /// bias[n] in the output type, or in fp32 with `EPI_BIAS_F32`; or 0.
        pub bias: u64,
        /// C(t, n) at c[t * ldc + n], in the output type, added times beta; 0 when
        /// beta is 0 (C is then never read). May equal `y`.
        pub c: u64,
        /// Device fp32 alpha and beta (hipBLASLt's pointer mode DEVICE), read by
        /// the epilogue in place of `alpha` / `beta`; 0 for the host values.
        pub alpha_ptr: u64,
        pub beta_ptr: u64,
        /// fp8 operand scales: device fp32, one value, or one per output feature
        /// (`SCALE_A_VEC`, A = W) / per token (`SCALE_B_VEC`, B = X); 0 for none.
        pub a_scale: u64,
        pub b_scale: u64,
        /// Split-K slots: [tiles][split_k][tile_m * tile_n] fp32.
        pub partials: u64,
        /// Arrivals per tile; 0 between launches.
        pub counters: u64,
        /// At least 16 zero bytes (the source of masked copies on AMD).
        pub zeros: u64,
        /// W and X strides and `k` count 16-bit units: elements of bf16/f16, pairs
        /// of fp8 (`DType::per_unit`).
        pub ldw: i64,
        pub ldx: i64,
        pub ldy: i64,
        pub ldc: i64,
        pub m: i32,
        pub n: i32,
        pub k: i32,
        pub alpha: f32,
        pub beta: f32,
        pub split_k: i32,
        /// Programmatic dependent launch (sm_90): bytes per row of W each CTA
        /// prefetches into L2 before waiting on the previous kernel (0: none); with
        /// `PDL_PREFETCH_X` as much of each X row too (with `PDL_PREFETCH_X_SHARED`,
        /// pieces of this size shared by a tile row's CTAs).
        pub prefetch_row_bytes: i32,
        /// `PDL_*` flags.
        pub pdl_flags: i32,
        /// `EPI_*` flags (the activation and the bias type), `SPLIT_IN_ORDER`,
        /// `SCALE_*_VEC` and `OUT_F16`.
        pub flags: i32,
        /// The unit, in K blocks, in which K is split between the CTAs of a tile:
        /// split s takes units [s·U/S, (s+1)·U/S) of the U = ceil(blocks / unit).
        /// 1 = a K block; batch-invariant plans use `INVARIANT_K_UNIT` k whatever
        /// the kernel's K block, so every kernel splits K at the same k.
        pub split_unit: i32,
    }
}

/// Bits of `GemmParams::pdl_flags`: let the PDL successor launch
/// `pdl_flags >> PDL_LEAD_SHIFT` K blocks before the end of the main loop (0 = after
/// it) instead of only as the CTAs exit.
pub const PDL_TRIGGER: i32 = 1;
/// Prefetch the activations into L2 too, not only the weights.
pub const PDL_PREFETCH_X: i32 = 2;
/// With `PDL_PREFETCH_X`: the CTAs of a tile row share the activation prefetch,
/// each piece by one of them, instead of each CTA prefetching its rows itself.
pub const PDL_PREFETCH_X_SHARED: i32 = 4;
/// Where the trigger's lead (0..=255 K blocks) sits in `pdl_flags`.
pub const PDL_LEAD_SHIFT: i32 = 8;

/// Bits of `GemmParams::flags`. The epilogue computes, after the split-K
/// combine, `act(alpha * scaleA * scaleB * acc + beta * C + bias)` (hipBLASLt's
/// order): ReLU ...
pub const EPI_RELU: i32 = 1;
/// ... or GELU in hipBLASLt's tanh form, `0.5 x (1 + tanh(0.7978845608 x (1 +
/// 0.044715 x^2)))` (its client reference, `_gelu` in clients/include/testing_matmul.hpp);
pub const EPI_GELU: i32 = 2;
/// the bias is fp32 (`BIAS_DATA_TYPE` = R_32F) rather than the output type.
pub const EPI_BIAS_F32: i32 = 4;
/// The global split-K combine adds the partials strictly in split order, one
/// thread per value, whatever the kernel's tile and thread count: with one
/// instruction family, K block and K slicing, a row's bits then depend only on the
/// split (batch-invariant mode), not on the kernel that runs its batch.
pub const SPLIT_IN_ORDER: i32 = 8;
/// `a_scale` holds one scale per output feature (hipBLASLt's `OUTER_VEC_32F` for A).
pub const SCALE_A_VEC: i32 = 16;
/// `b_scale` holds one scale per token (`OUTER_VEC_32F` for B).
pub const SCALE_B_VEC: i32 = 32;
/// An fp8 kernel writes (and reads C and a 16-bit bias in) f16, not bf16.
pub const OUT_F16: i32 = 64;

/// The k of one split unit in batch-invariant plans: a multiple of every kernel's
/// K block (checked over every catalog).
pub const INVARIANT_K_UNIT: u32 = 256;

/// Every flag constant with its C name, for the build's check.
pub const FLAGS: [(&str, i32); 11] = [
    ("PDL_TRIGGER", PDL_TRIGGER),
    ("PDL_PREFETCH_X", PDL_PREFETCH_X),
    ("PDL_PREFETCH_X_SHARED", PDL_PREFETCH_X_SHARED),
    ("PDL_LEAD_SHIFT", PDL_LEAD_SHIFT),
    ("EPI_RELU", EPI_RELU),
    ("EPI_GELU", EPI_GELU),
    ("EPI_BIAS_F32", EPI_BIAS_F32),
    ("SPLIT_IN_ORDER", SPLIT_IN_ORDER),
    ("SCALE_A_VEC", SCALE_A_VEC),
    ("SCALE_B_VEC", SCALE_B_VEC),
    ("OUT_F16", OUT_F16),
];

/// A tensor map for the tensor memory accelerator (`CUtensorMap`, sm_90): 128 opaque
/// bytes the driver encodes, passed by value as a kernel parameter (`TensorMap` in
/// kernels/gemm_params.h).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct TensorMap(pub [u64; 16]);

abi_struct! {
    /// The second kernel argument of TMA-fed kernels (`TmaMaps` in
    /// kernels/gemm_params.h): W as N rows of K, X as M rows of K.
    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct TmaMaps {
        pub w: TensorMap,
        pub x: TensorMap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `FIELDS` lists every field once, contiguously up to padding, in the
    /// declared order: what build.rs turns into the device-side checks.
    #[test]
    fn fields_tile_the_structs() {
        for (fields, size, align) in [
            (GemmParams::FIELDS, size_of::<GemmParams>(), align_of::<GemmParams>()),
            (TmaMaps::FIELDS, size_of::<TmaMaps>(), align_of::<TmaMaps>()),
        ] {
            let mut end = 0;
            for &(name, offset, bytes) in fields {
                assert!(offset >= end && offset - end < align, "{name} at {offset}");
                end = offset + bytes;
            }
            assert!(size >= end && size - end < align);
        }
        assert_eq!((size_of::<GemmParams>(), GemmParams::FIELDS.len()), (168, 26));
        assert_eq!((size_of::<TmaMaps>(), align_of::<TmaMaps>()), (256, 64));
    }
}
