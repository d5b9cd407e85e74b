//! The hardware-aware fallback for shapes no tuning entry covers: enough CTAs to
//! fill the machine, within LDS and register limits (the limits are already
//! enforced on the candidate set at build time).
//!
//! Rules, in order:
//! 1. tokens: the smallest candidate tile_m that covers M (or the largest one, with
//!    several M tiles), so no more than one partly empty token tile;
//! 2. among those, the weight tile and split-K that bring the grid closest to
//!    `CTAS_PER_UNIT` CTAs per compute unit — decode GEMMs are bound by streaming
//!    the weights, which takes many CTAs in flight — keeping at least `MIN_BLOCKS`
//!    K blocks per split so the LDS ring has something to overlap;
//! 3. ties: fewer splits (less combine traffic), then the family whose atom needs no
//!    token padding (VDMFMA where the dense atom has 16 tokens: gfx942, gfx950; the
//!    dense family on sm_90, whose dense atom already has 8 tokens and runs at a
//!    higher issue rate: 153 G instructions/s against 115 for mma.sp, measured on H100), then larger tile_n.
//!
//! VDMFMA configs (tiles of 8 tokens) are candidates only for M <= 8.

use super::Choice;
use super::schema::{DType, FallbackFile, Family, KernelConfig};
use crate::gpu::Arch;
use crate::kernels;
use crate::route::Problem;

pub const CTAS_PER_UNIT: f64 = 2.0;
pub const MIN_BLOCKS: u32 = 2;
pub const MAX_SPLIT: u32 = 64;
/// Largest M the VDMFMA family (tiles of 8 tokens) is considered for.
pub const VDMFMA_MAX_M: u32 = 8;

/// An arch's fallback candidates, resolved once (the hot path only iterates).
#[derive(Clone, Debug)]
pub struct Fallback {
    arch: Arch,
    /// (config, its catalog index per dtype, `DType as usize`).
    candidates: Vec<(KernelConfig, [Option<usize>; DType::EVERY.len()])>,
}

impl Fallback {
    pub fn for_arch(arch: Arch) -> Fallback {
        let file: FallbackFile = serde_json::from_str(super::embedded_fallback()).expect("fallback.json is checked at build time");
        let candidates = file
            .sets
            .iter()
            .filter(|s| s.arch == arch.name())
            .flat_map(|s| s.configs.iter())
            .map(|c| (*c, DType::EVERY.map(|d| kernels::index_of(arch, d, c))))
            .collect();
        Fallback { arch, candidates }
    }

    /// Chooses a kernel and split-K factor for `p` on a device with `units` CUs/SMs.
    pub fn choose(&self, units: u32, p: &Problem) -> Option<Choice> {
        let facts = super::schema::target(self.arch.name())?;
        // The warpgroup-MMA family runs only where a measured tuning entry (or its
        // neighbour) names it: its split-K partials are 4-16x larger than the
        // mma.sync tiles', which the CTA-count rule below does not weigh.
        let usable = |c: &KernelConfig| match c.family {
            Family::Splitk => true,
            Family::Vdmfma => p.m <= VDMFMA_MAX_M && facts.planned(p.dtype, c),
            Family::Wgmma => false,
        };
        // Token tiles of the kernels compiled in p's dtype.
        let d = p.dtype as usize;
        let compiled = || self.candidates.iter().filter(|(c, idx)| usable(c) && idx[d].is_some());
        let tm = compiled().map(|(c, _)| c.tile_m).filter(|&tm| tm >= p.m).min().or_else(|| compiled().map(|(c, _)| c.tile_m).max())?;
        let target = CTAS_PER_UNIT * units as f64;
        let prefer_vdmfma = facts.atom_toks > VDMFMA_MAX_M;
        let mut best: Option<((f64, u32, u8, i64), Choice)> = None;
        for (c, idx) in compiled().filter(|(c, _)| c.tile_m == tm) {
            let Some(kernel) = idx[d] else { continue };
            let tiles = p.n.div_ceil(c.tile_n) as u64 * p.m.div_ceil(c.tile_m) as u64;
            let nkb = p.k.div_ceil(c.tile_k);
            let cap = if c.cluster { super::schema::PORTABLE_CLUSTER_SPLIT } else { MAX_SPLIT };
            let max_split = (nkb / MIN_BLOCKS).clamp(1, cap);
            for s in 1..=max_split {
                let ctas = (tiles * s as u64) as f64;
                let miss = (ctas / target).ln().abs();
                let rank = u8::from((c.family == Family::Vdmfma) != prefer_vdmfma);
                let key = (miss, s, rank, -(c.tile_n as i64));
                if best.as_ref().is_none_or(|(k, _)| key.partial_cmp(k) == Some(std::cmp::Ordering::Less)) {
                    best = Some((key, Choice::Run { kernel, split_k: s }));
                }
            }
        }
        best.map(|(_, c)| c)
    }

}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Problem;
    use proptest::prelude::*;

    fn problem(m: u32, n: u32, k: u32, dtype: DType) -> Problem {
        Problem::packed(dtype, m, n, k, false)
    }

    #[test]
    fn small_grids_get_split_k_large_grids_do_not() {
        for arch in Arch::ALL {
            let units = arch.default_units();
            let Some(Choice::Run { split_k, kernel }) = Fallback::for_arch(arch).choose(units, &problem(1, 512, 7168, DType::Bf16)) else { panic!() };
            assert!(split_k > 1, "{arch:?}: N=512 needs split-K");
            assert_eq!(kernels::for_arch(arch).kernels[kernel].dtype, DType::Bf16);
            let Some(Choice::Run { split_k: small, .. }) = Fallback::for_arch(arch).choose(units, &problem(1, 512, 7168, DType::F16)) else { panic!() };
            let Some(Choice::Run { split_k: large, .. }) = Fallback::for_arch(arch).choose(units, &problem(1, 16384, 16384, DType::F16)) else { panic!() };
            assert!(large * 2 <= small, "{arch:?}: a large N needs fewer splits ({large} vs {small})");
        }
    }

    /// The sparse fp8 form is never the fallback's on sm_90, even where it is the
    /// only candidate (`TargetFacts::vd_fp8_planned`); in 16 bits, and on AMD in
    /// fp8, it is.
    #[test]
    fn the_sparse_fp8_form_is_not_a_fallback_on_sm90() {
        for arch in Arch::ALL {
            let mut fb = Fallback::for_arch(arch);
            fb.candidates.retain(|(c, _)| c.family == Family::Vdmfma);
            let t = crate::tuning::schema::target(arch.name()).unwrap();
            let fp8 = t.fp8.unwrap();
            let pick = |dtype| fb.choose(arch.default_units(), &problem(4, 4096, 4096, dtype).unit_view());
            assert!(pick(DType::Bf16).is_some(), "{arch:?}");
            assert_eq!(pick(fp8).is_some(), t.vd_fp8_planned, "{arch:?}");
        }
    }

    /// VDMFMA kernels run M <= 8 only; on gfx942/gfx950 (dense atom of 16 tokens)
    /// they are the choice for M <= 8, in 16 bits and in the arch's fp8; on sm_90
    /// the dense family wins the ties, and the sparse fp8 form is never chosen
    /// (`TargetFacts::vd_fp8_planned`).
    #[test]
    fn vdmfma_only_for_m_up_to_8_and_preferred_on_amd() {
        for arch in Arch::ALL {
            let fb = Fallback::for_arch(arch);
            assert!(fb.candidates.iter().any(|(c, _)| c.family == Family::Vdmfma), "{arch:?}: no VDMFMA fallback config");
            let t = crate::tuning::schema::target(arch.name()).unwrap();
            for dtype in [DType::Bf16, t.fp8.unwrap()] {
                for m in 1..=40 {
                    for (n, k) in [(512, 7168), (2880, 2880), (16384, 16384), (100, 64)] {
                        let p = problem(m, n, k, dtype).unit_view();
                        let Some(Choice::Run { kernel, .. }) = fb.choose(arch.default_units(), &p) else { panic!() };
                        let fam = kernels::for_arch(arch).kernels[kernel].config.family;
                        if m > VDMFMA_MAX_M {
                            assert_eq!(fam, Family::Splitk, "{arch:?} {dtype:?} M={m}");
                        } else if t.amd {
                            assert_eq!(fam, Family::Vdmfma, "{arch:?} {dtype:?} M={m} N={n} K={k}");
                        } else if dtype.is_fp8() {
                            assert_eq!(fam, Family::Splitk, "{arch:?} {dtype:?} M={m} N={n} K={k}: the sparse fp8 form is not planned");
                        }
                    }
                }
            }
        }
    }

    proptest! {
        /// Every problem gets a compiled kernel of its dtype (16-bit, or the arch's
        /// fp8 in 16-bit units) whose token tile covers M (or is the largest), with
        /// a split that leaves >= MIN_BLOCKS K blocks.
        #[test]
        fn choice_is_always_runnable(m in 1u32..=128, n in 1u32..40000, k8 in 1u32..4000, d in 0usize..3, a in 0usize..3) {
            let arch = Arch::ALL[a];
            let fp8 = crate::tuning::schema::target(arch.name()).and_then(|t| t.fp8).expect("every arch builds fp8 kernels");
            let dtype = [DType::Bf16, DType::F16, fp8][d];
            let p = problem(m, n, k8 * 8, dtype).unit_view();
            let Some(Choice::Run { kernel, split_k }) = Fallback::for_arch(arch).choose(arch.default_units(), &p) else { panic!("no choice") };
            let e = kernels::for_arch(arch).kernels[kernel];
            prop_assert_eq!(e.dtype, dtype);
            prop_assert!((1..=MAX_SPLIT).contains(&split_k));
            let nkb = p.k.div_ceil(e.config.tile_k);
            prop_assert!(split_k == 1 || nkb / split_k >= MIN_BLOCKS);
            prop_assert!(e.config.family != Family::Vdmfma || m <= VDMFMA_MAX_M);
        }
    }
}
