//! The kernels compiled into this library: one code object per arch (HSACO for
//! gfx942/gfx950, PTX for sm_90), built by build.rs from `kernels/` and embedded,
//! with the list of entry points each contains, and the arguments they take
//! (`params`, the kernel ABI).

pub mod params;

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

/// The clang that built the code objects: its `--version` line (for `skinnylt info`).
pub const BUILT_WITH: &str = generated::BUILT_WITH;
/// The same clang's path, as build.rs found it (`SKINNYLT_CLANG`, `$ROCM_PATH`, or the
/// newest on PATH), made absolute: the tools that read or rebuild the device code
/// (the audit's LLVM tools, the emulator's clang++) come from its installation.
pub const CLANG: &str = generated::CLANG;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::schema;

    #[test]
    fn every_arch_is_built() {
        assert_eq!(all().len(), Arch::ALL.len());
    }

    /// Every catalog entry's name is its config's, and its config passes the
    /// target's rules (as build.rs required before compiling it).
    #[test]
    fn the_catalog_is_consistent() {
        for ak in all() {
            let t = schema::target(ak.arch.name()).unwrap();
            for k in ak.kernels {
                assert_eq!(k.name, k.config.name(k.dtype));
                assert_eq!(k.config.check(&t), Ok(()));
                // Batch-invariant plans split K in whole K blocks of every kernel.
                assert_eq!(params::INVARIANT_K_UNIT % k.config.tile_k, 0, "{}", k.name);
            }
        }
    }

    /// Above 64 tokens a wgmma tile's time follows its token rows, padding included
    /// (docs/design.md, section 8.3), so every token count there has a TMA-fed tile
    /// of 64 weight rows at most 7 rows larger, in every dtype the family has.
    #[test]
    fn wide_token_tiles_follow_m_in_steps_of_eight() {
        use crate::tuning::schema::Family;
        let sm90 = for_arch(Arch::Sm90).kernels;
        for dtype in [DType::Bf16, DType::F16, DType::E4m3] {
            let tiles: Vec<u32> = sm90
                .iter()
                .filter(|k| k.dtype == dtype && k.config.family == Family::Wgmma && k.config.tma && k.config.tile_n == 64)
                .map(|k| k.config.tile_m)
                .collect();
            for m in 65..=128u32 {
                assert!(tiles.iter().any(|&t| t >= m && t - m < 8), "{dtype:?}: no TMA wgmma tile of {m}..{} tokens", m + 7);
            }
        }
    }

    /// Two consumer warpgroups taking alternate K blocks of one tile (warps [1, 4, 2])
    /// run the TMA-fed 64-row tiles of 16-112 tokens 2-4 % faster than one
    /// (docs/design.md, section 8.3), so each of those has its twin with the same tile
    /// and ring, in every dtype. The twin sums in its own order (two partial sums,
    /// added at the end): its own summation class, so batch-invariant plans never
    /// mix the two. K groups need the TMA feed, and there are at most two.
    #[test]
    fn deep_ring_tma_tiles_have_a_two_k_group_twin() {
        use crate::tuning::planner::summation_class;
        use crate::tuning::schema::Family;
        let sm90 = for_arch(Arch::Sm90).kernels;
        let t = schema::target("sm90").unwrap();
        for dtype in [DType::Bf16, DType::F16, DType::E4m3] {
            let one = |k: &&KernelEntry| k.dtype == dtype && k.config.family == Family::Wgmma && k.config.tma && k.config.tile_n == 64 && k.config.tile_k == 64;
            let mut twins = 0;
            for k in sm90.iter().filter(one).filter(|k| k.config.warps == [1, 4, 1] && k.config.stages >= 8 && k.config.tile_m <= 112) {
                let twin = KernelConfig { warps: [1, 4, 2], ..k.config };
                assert!(index_of(Arch::Sm90, dtype, &twin).is_some(), "{}: no two-K-group twin", k.name);
                assert_ne!(summation_class(&twin), summation_class(&k.config));
                assert!(KernelConfig { tma: false, ..twin }.check(&t).is_err(), "K groups without the TMA feed");
                assert!(KernelConfig { warps: [1, 4, 4], ..twin }.check(&t).is_err(), "four K groups");
                twins += 1;
            }
            assert_eq!(twins, 11, "{dtype:?}: the 16- to 112-token tiles");
        }
    }
}
