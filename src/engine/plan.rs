//! Planning: which kernel and split-K run a problem, and the launch geometry that
//! follows. Pure functions of the device's facts, its tables and the problem, so
//! the tools (`skinnylt demo`, `tune`) plan exactly as the hot path does.

use super::Error;
use crate::gpu::{Arch, Backend};
use crate::kernels;
use crate::route::Problem;
use crate::tuning::fallback::{Fallback, MAX_SPLIT};
use crate::tuning::schema::{self, MAX_CLUSTER_SPLIT};
use crate::tuning::{Choice, Tuning};

/// Output tiles per launch that split-K arrival counters cover.
pub const MAX_TILES: usize = 32768;

/// What planning needs to know about the device.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub arch: Arch,
    pub backend: Backend,
    /// Compute units (AMD) or SMs (NVIDIA).
    pub units: u32,
    /// Bytes of one stream lane of the handle's own split-K partials buffer: the
    /// split is capped so its partials fit, so the split, and so the result bits,
    /// never depend on how much workspace a caller happens to pass.
    pub partial_capacity: usize,
}

/// A planned launch: kernel, split and geometry (the stream's lane and buffers are
/// added per call, `Engine::prepare`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Index in the arch's kernel catalog.
    pub kernel: usize,
    pub split_k: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory (NVIDIA; AMD kernels size their LDS statically).
    pub shared: u32,
    /// Bytes of fp32 partials in global memory (0 without split-K or with clusters).
    pub partial_bytes: usize,
    /// Split-K inside a thread-block cluster of `split_k` CTAs (sm_90).
    pub cluster: bool,
}

/// What runs `p`: the table's entry, else the fallback. A tuned "forward" forwards
/// only when there is a library to forward to (`can_forward`); standalone, the
/// fallback runs the shape instead.
pub fn choose(table: &Tuning, fallback: &Fallback, units: u32, p: &Problem, can_forward: bool) -> Result<Choice, Error> {
    let tuned = match table.lookup(p) {
        Some(Choice::Forward) if !can_forward => None,
        c => c,
    };
    match tuned.or_else(|| fallback.choose(units, p)) {
        None => Err(Error::NoKernel),
        Some(Choice::Forward) => Err(Error::TunedForward),
        Some(c) => Ok(c),
    }
}

/// The geometry of running `choice` for `p` on `t`.
pub fn plan(t: &Target, choice: Choice, p: &Problem) -> Result<Plan, Error> {
    let Choice::Run { kernel, split_k } = choice else { return Err(Error::TunedForward) };
    let c = kernels::for_arch(t.arch).kernels.get(kernel).ok_or(Error::NoKernel)?.config;
    let facts = schema::target(t.arch.name()).expect("every arch has target facts");
    let tiles = p.n.div_ceil(c.tile_n) as usize * p.m.div_ceil(c.tile_m) as usize;
    if tiles > u32::MAX as usize / 2 {
        return Err(Error::TooLarge);
    }
    let per_split = tiles * (c.tile_m * c.tile_n) as usize * 4;
    let mut split_k = split_k.clamp(1, MAX_SPLIT);
    if c.cluster {
        split_k = split_k.min(MAX_CLUSTER_SPLIT);
    } else if split_k > 1 {
        let fits = (t.partial_capacity / per_split.max(1)) as u32;
        split_k = if fits >= 2 { split_k.min(fits) } else { 1 };
        if tiles > MAX_TILES {
            split_k = 1; // more tiles than counters: no split-K (still correct)
        }
    }
    Ok(Plan {
        kernel,
        split_k,
        grid: [tiles as u32, split_k, 1],
        block: [c.threads(&facts), 1, 1],
        shared: if t.backend == Backend::Cuda { c.lds_bytes(&facts) } else { 0 },
        partial_bytes: if split_k > 1 && !c.cluster { per_split * split_k as usize } else { 0 },
        cluster: c.cluster && split_k > 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::DType;

    fn h100() -> Target {
        Target { arch: Arch::Sm90, backend: Backend::Cuda, units: 132, partial_capacity: 4 << 20 }
    }

    /// A tuned "forward" with no real hipBLASLt to forward to runs the fallback.
    #[test]
    fn a_forward_without_a_library_to_forward_to_runs_the_fallback() {
        let p = Problem::packed(DType::Bf16, 4, 2880, 4096, false);
        let t = Tuning::single(&p, Choice::Forward);
        let fb = Fallback::for_arch(Arch::Sm90);
        assert_eq!(choose(&t, &fb, 132, &p, true), Err(Error::TunedForward));
        let c = choose(&t, &fb, 132, &p, false).expect("the fallback runs it");
        assert_eq!(Some(c), fb.choose(132, &p));
    }

    /// The split never exceeds what the partials capacity holds, nor the cluster
    /// limit, nor the counters; a split of one needs no partials.
    #[test]
    fn the_split_respects_every_cap() {
        let cat = kernels::for_arch(Arch::Sm90).kernels;
        let p = Problem::packed(DType::Bf16, 8, 7168, 8192, false);
        for (i, k) in cat.iter().enumerate().filter(|(_, k)| k.dtype == DType::Bf16) {
            for asked in [1, 2, 7, 16, 64, 1000] {
                for capacity in [0usize, 1 << 16, 4 << 20] {
                    let t = Target { partial_capacity: capacity, ..h100() };
                    let plan = plan(&t, Choice::Run { kernel: i, split_k: asked }, &p).unwrap();
                    assert!(plan.split_k >= 1 && plan.split_k <= asked.clamp(1, MAX_SPLIT), "{}", k.name);
                    assert_eq!(plan.grid[1], plan.split_k);
                    if k.config.cluster {
                        assert!(plan.split_k <= MAX_CLUSTER_SPLIT);
                        assert_eq!(plan.partial_bytes, 0);
                    } else {
                        assert!(plan.partial_bytes <= capacity, "{} split {} capacity {capacity}", k.name, plan.split_k);
                    }
                    assert_eq!(plan.cluster, k.config.cluster && plan.split_k > 1);
                }
            }
        }
    }
}
