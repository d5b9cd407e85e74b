//! The kernels compiled into this library: one code object per arch (HSACO for
//! gfx942/gfx950, PTX for sm_90), built by build.rs from `kernels/` and embedded,
//! with the list of entry points each contains.

use crate::gpu::Arch;
use crate::tuning::schema::{DType, KernelConfig};

/// One kernel entry point.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    pub name: &'static str,
    pub dtype: DType,
    pub config: KernelConfig,
}

/// Everything embedded for one arch.
#[derive(Clone, Copy, Debug)]
pub struct ArchKernels {
    pub arch: Arch,
    /// The code object: HSACO (AMD) or NUL-terminated PTX (NVIDIA).
    pub image: &'static [u8],
    pub kernels: &'static [KernelEntry],
}

mod generated {
    use super::*;
    use crate::tuning::schema::Family;
    include!(concat!(env!("OUT_DIR"), "/kernels_gen.rs"));
}

/// Every arch's kernels.
pub fn all() -> &'static [ArchKernels] {
    generated::CATALOG
}

pub fn for_arch(arch: Arch) -> &'static ArchKernels {
    generated::CATALOG.iter().find(|a| a.arch == arch).expect("every arch is built")
}

/// Index of a (dtype, config) kernel in an arch's list.
pub fn index_of(arch: Arch, dtype: DType, config: &KernelConfig) -> Option<usize> {
    for_arch(arch).kernels.iter().position(|k| k.dtype == dtype && k.config == *config)
}

/// The clang that built the code objects (for `skinnylt info` / audit).
pub const BUILT_WITH: &str = generated::BUILT_WITH;
